"""svc's own state under `.ai/local/` never shows in the checkout's `git status`."""

from __future__ import annotations

import subprocess
from pathlib import Path

from svc.layer import Repository, acquire_lease, ensure_local_state, release_lease
from svc.layer._files import LOCAL_GITIGNORE


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, check=True, timeout=30)
    return done.stdout.decode()


def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "foreign"
    (root / ".ai" / "repo").mkdir(parents=True)
    (root / ".ai" / "repo" / "README.md").write_text("a layer\n")
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "layer")
    return root


def test_the_state_folder_ignores_itself(tmp_path: Path) -> None:
    root = checkout(tmp_path)
    state = ensure_local_state(root / ".ai" / "local")
    (state / "ledger.jsonl").write_text("{}\n")
    assert (state.stat().st_mode & 0o777) == 0o700
    assert (root / ".ai" / "local" / ".gitignore").read_bytes() == LOCAL_GITIGNORE
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""


def test_an_existing_ignore_file_is_kept(tmp_path: Path) -> None:
    root = checkout(tmp_path)
    (root / ".ai" / "local").mkdir()
    (root / ".ai" / "local" / ".gitignore").write_text("state/\n")
    ensure_local_state(root / ".ai" / "local")
    assert (root / ".ai" / "local" / ".gitignore").read_text() == "state/\n"


def test_serving_a_foreign_checkout_leaves_its_git_status_clean(tmp_path: Path) -> None:
    root = checkout(tmp_path)
    repo = Repository.discover(root)
    lease = acquire_lease(repo, version="0", executable=None, started_at="2026-11-25T00:00:00Z")
    try:
        assert (repo.local_state / "mcp" / "server.json").is_file()
        assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    finally:
        release_lease(repo, lease)
