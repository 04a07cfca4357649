"""Handover records as the mesh reads them (`read_handover`) and writes them (`materialize_handover`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from svc._errors import InvalidInput, NotFound, Refused
from svc.layer import Repository, load_yaml
from svc.mesh_udp import materialize_handover, read_handover
from svc.mesh_udp._events import check_body, handover_id
from svc.mesh_udp._handovers import HANDOVERS, RETENTION
from tests.conftest import make_checkout

BODY = "# Objective\n\nShip it.\n\n# Current State\n\nClose.\n\n# Next Action\n\nMerge.\n"


def record(created_at: str, *, branch: str = "main", body: str = BODY, extra: str = "") -> str:
    return (
        f"---\nschema_version: 1\ncreated_at: {created_at}\ntask_id: T-1\nbranch: {branch}\n"
        f"head: 89abcdef0123\nbound_issue: I9\n{extra}---\n\n{body}"
    )


@pytest.fixture
def repo(tmp_path: Path) -> Repository:
    return Repository.discover(make_checkout(tmp_path / "checkout"))


def records(repo: Repository) -> Path:
    directory = repo.root / HANDOVERS
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def test_the_newest_record_by_creation_time_travels_without_a_path(repo: Repository) -> None:
    directory = records(repo)
    (directory / "z-older.md").write_text(record("2026-01-01T00:00:00Z", body="old\n"))
    (directory / "a-newer.md").write_text(record("2026-06-01T00:00:00Z"))
    (directory / "notes.txt").write_text(record("2027-01-01T00:00:00Z"))
    handover = read_handover(repo, None, milestone="M1")
    assert handover == {
        "id": handover_id(BODY),
        "task": "T-1",
        "issue": "I9",
        "milestone": "M1",
        "branch": "main",
        "head": "89abcdef0123",
        "created_at": "2026-06-01T00:00:00Z",
        "name": "a-newer.md",
        "body": BODY,
    }
    assert check_body({"kind": "handover_published", "handover": handover}) == "known"
    assert read_handover(repo, "z-older.md", issue="I1")["body"] == "old\n"
    assert read_handover(repo, "z-older.md", issue="I1")["issue"] == "I1"


def test_a_record_without_front_matter_is_all_body_and_odd_fields_stay_home(repo: Repository) -> None:
    directory = records(repo)
    (directory / "plain.md").write_text("# Next Action\n\nGo.\n")
    assert read_handover(repo, "plain.md") == {
        "id": handover_id("# Next Action\n\nGo.\n"),
        "name": "plain.md",
        "body": "# Next Action\n\nGo.\n",
    }
    (directory / "odd.md").write_text(
        record("2026-01-01T00:00:00Z", branch="|\n  two\n  lines", extra="task_id: none\n")
    )
    odd = read_handover(repo, "odd.md")
    assert "branch" not in odd
    assert "task" not in odd
    (directory / "broken.md").write_text("---\n: [unclosed\n---\nbody\n")
    assert read_handover(repo, "broken.md")["body"] == "body\n"


def test_names_absence_and_size_are_refused_with_what_is_wrong(repo: Repository, tmp_path: Path) -> None:
    with pytest.raises(NotFound, match=r"no handover record under \.ai/local/state/handovers/"):
        read_handover(repo, None)
    directory = records(repo)
    with pytest.raises(NotFound, match="no handover record under"):
        read_handover(repo, None)
    for bad in ("..", ".", "a\x00b"):
        with pytest.raises(InvalidInput, match="no path"):
            read_handover(repo, bad)
    with pytest.raises(NotFound, match=r"no handover record absent\.md"):
        read_handover(repo, "absent.md")
    (directory / "big.md").write_text(record("2026-01-01T00:00:00Z", body="x" * (32 * 1024 + 1)))
    with pytest.raises(Refused, match="has a body of 32769 bytes; at most 32768 bytes travel"):
        read_handover(repo, None)
    (directory / "big.md").write_text(record("2026-01-01T00:00:00Z", body="\x01" * (16 * 1024)))
    with pytest.raises(Refused, match="more than one journal event carries"):
        read_handover(repo, "big.md")
    (directory / "big.md").write_bytes(b"\xff\xfe not utf-8")
    with pytest.raises(Refused, match="not UTF-8"):
        read_handover(repo, "big.md")


def test_nothing_outside_the_directory_is_read(repo: Repository, tmp_path: Path) -> None:
    directory = records(repo)
    secret = repo.root / "secret.md"
    secret.write_text(record("2030-01-01T00:00:00Z", body="secret\n"))
    os.symlink(secret, directory / "leak.md")
    os.symlink(tmp_path / "elsewhere.md", directory / "dangling.md")
    (directory / "real.md").write_text(record("2026-01-01T00:00:00Z"))
    os.symlink(directory / "real.md", directory / "alias.md")
    with pytest.raises(Refused, match="leads out of"):
        read_handover(repo, "leak.md")
    newest = read_handover(repo, None)
    assert newest["body"] == BODY
    assert newest["name"] in ("real.md", "alias.md")
    assert read_handover(repo, "alias.md")["body"] == BODY


def test_a_materialized_record_is_written_once_atomically_with_computed_front_matter(repo: Repository) -> None:
    handover = {
        "id": handover_id(BODY),
        "task": "T-1",
        "issue": "I9",
        "branch": "feature/x y",
        "head": "0123456789abcdef0123456789abcdef01234567",
        "body": BODY,
    }
    path, wrote = materialize_handover(repo, handover, publisher="p" * 49, wall=1_795_000_000.0)
    assert wrote is True
    assert path == f"{HANDOVERS}/20261118T110640Z--feature-x-y--0123456--{handover['id'][:16]}.md"
    written = repo.root / path
    assert written.stat().st_mode & 0o777 == 0o600
    text = written.read_text()
    assert text.endswith("---\n\n" + BODY)
    front = load_yaml(text.split("---\n")[1])
    assert front == {
        "schema_version": 1,
        "created_at": "2026-11-18T11:06:40Z",
        "task_id": "T-1",
        "profile": "none",
        "owner": "mesh:" + "p" * 49,
        "repository_id": front["repository_id"],
        "worktree": str(repo.root),
        "branch": "feature/x y",
        "head": handover["head"],
        "bound_issue": "I9",
        "handover_id": handover["id"],
    }
    assert len(front["repository_id"]) == 64
    assert [p.name for p in written.parent.iterdir()] == [written.name]
    again = materialize_handover(repo, handover, publisher="q" * 49, wall=1_796_000_000.0)
    assert again == (path, False)
    assert written.read_text() == text
    assert read_handover(repo, None)["body"] == BODY


def test_a_handover_without_branch_or_head_takes_this_checkouts_and_the_oldest_records_go(repo: Repository) -> None:
    directory = records(repo)
    for i in range(RETENTION):
        (directory / f"2025010{1 + i % 9}T0000{i % 60:02d}Z--main--aaaaaaa--{i:016x}.md").write_text("x\n")
    (directory / "kept-by-name.md").write_text("not a record name\n")
    git = repo.git()
    assert git.branch == "main"
    assert git.head is not None
    handover = {"id": handover_id("b\n"), "body": "b\n"}
    path, wrote = materialize_handover(repo, handover, publisher="p" * 49, wall=1_795_000_000.0)
    assert wrote is True
    assert f"--main--{git.head[:7]}--" in path
    names = sorted(p.name for p in directory.iterdir())
    assert len(names) == RETENTION + 1
    assert Path(path).name in names
    assert "kept-by-name.md" in names
    assert "20250101T000000Z--main--aaaaaaa--0000000000000000.md" not in names
