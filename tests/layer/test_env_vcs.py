"""The porcelain v2 parser on crafted reports, and one real `git status` inside and outside a work tree."""

from __future__ import annotations

import subprocess
from pathlib import Path

import msgspec

from svc.layer import Repository
from svc.layer._env_model import VcsGit, VcsUnavailable
from svc.layer._env_vcs import parse_porcelain, read_vcs
from tests.conftest import make_checkout

OID = "1" * 40


def report(*records: str) -> bytes:
    return "".join(f"{r}\0" for r in records).encode()


def test_a_clean_branch_without_upstream_has_no_ahead_or_behind() -> None:
    tree = parse_porcelain(report(f"# branch.oid {OID}", "# branch.head main"))
    assert msgspec.to_builtins(tree) == {
        "state": "git",
        "head": OID,
        "branch": "main",
        "detached": False,
        "staged": 0,
        "modified": 0,
        "untracked": 0,
        "conflicted": 0,
        "clean": True,
    }


def test_headers_entries_renames_conflicts_and_untracked_are_counted() -> None:
    tree = parse_porcelain(
        report(
            f"# branch.oid {OID}",
            "# branch.head feature/x",
            "# branch.upstream origin/feature/x",
            "# branch.ab +3 -1",
            "# stash 2",
            "1 .M N... 100644 100644 100644 aaa bbb src/a b.py",
            "1 M. N... 100644 100644 100644 ccc ddd src/b.py",
            "1 MM N... 100644 100644 100644 eee fff src/c.py",
            "2 R. N... 100644 100644 100644 ggg hhh R100 new name.py",
            "1 this record is the original path of the rename and must be consumed",
            "2 RM N... 100644 100644 100644 iii jjj C75 copied.py",
            "copied-from.py",
            "u UU N... 100644 100644 100644 100644 k1 k2 k3 conflicted file.txt",
            "? notes.txt",
            "? build/",
        )
    )
    assert tree == VcsGit(
        head=OID,
        branch="feature/x",
        detached=False,
        upstream="origin/feature/x",
        ahead=3,
        behind=1,
        staged=4,
        modified=3,
        untracked=2,
        conflicted=1,
        clean=False,
        changed_paths=(
            "build/",
            "conflicted file.txt",
            "copied.py",
            "new name.py",
            "notes.txt",
            "src/a b.py",
            "src/b.py",
            "src/c.py",
        ),
    )


def test_a_detached_head_and_an_initial_branch() -> None:
    detached = parse_porcelain(report(f"# branch.oid {OID}", "# branch.head (detached)"))
    assert detached is not None
    assert (detached.head, detached.branch, detached.detached) == (OID, None, True)
    initial = parse_porcelain(report("# branch.oid (initial)", "# branch.head main", "? a.txt"))
    assert initial is not None
    assert (initial.head, initial.branch, initial.untracked, initial.clean) == (None, "main", 1, False)


def test_an_upstream_gone_or_unparseable_ab_leaves_the_counts_out() -> None:
    tree = parse_porcelain(report(f"# branch.oid {OID}", "# branch.head main", "# branch.ab +x -1"))
    assert tree is not None
    assert (tree.upstream, tree.ahead, tree.behind) == (None, None, None)


def test_no_branch_header_is_no_work_tree_and_garbage_is_skipped() -> None:
    assert parse_porcelain(b"") is None
    assert parse_porcelain(report("? a.txt")) is None
    tree = parse_porcelain(report("# branch.head main", "1 broken", "2 also", "\xff junk"))
    assert tree is not None
    assert (tree.staged, tree.modified, tree.changed_paths) == (0, 0, ())


def test_a_real_status_inside_and_outside_git(tmp_path: Path) -> None:
    root = make_checkout(tmp_path / "inside", layer=False)
    (root / "tracked.txt").write_text("1\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "add", "tracked.txt"], cwd=root, check=True, capture_output=True)
    subprocess.run([*git, "commit", "-qm", "t"], cwd=root, check=True, capture_output=True)
    (root / "tracked.txt").write_text("2\n")
    (root / "old.txt").write_text("x\n")
    subprocess.run([*git, "add", "old.txt"], cwd=root, check=True, capture_output=True)
    subprocess.run([*git, "commit", "-qm", "t"], cwd=root, check=True, capture_output=True)
    subprocess.run([*git, "mv", "old.txt", "renamed.txt"], cwd=root, check=True, capture_output=True)
    (root / "new.txt").write_text("x\n")
    state = read_vcs(Repository.discover(root))
    assert isinstance(state, VcsGit)
    assert (state.branch, state.staged, state.modified, state.untracked) == ("main", 1, 1, 1)
    assert state.changed_paths == ("new.txt", "renamed.txt", "tracked.txt")
    outside = tmp_path / "outside"
    outside.mkdir()
    assert read_vcs(Repository.discover(outside)) == VcsUnavailable(reason="the checkout is not a Git work tree")
