"""`run_git`: the answer of `git -C <root> …`, or None for any way it could not answer.

Pairs with `src/svc/layer/_git.py`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from svc.layer import run_git
from tests.conftest import make_checkout

#: The blob id of empty content: what `git hash-object --stdin` answers when its input is closed at once.
EMPTY_BLOB = b"e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\n"


def test_it_answers_the_standard_output_of_git_in_that_directory(tmp_path: Path) -> None:
    root = make_checkout(tmp_path / "repo", layer=False)
    assert run_git(root, "rev-parse", "--is-inside-work-tree", timeout=10) == b"true\n"
    assert run_git(root, "symbolic-ref", "--short", "HEAD", timeout=10) == b"main\n"
    assert run_git(root, "ls-files", "-z", timeout=10) == b""


def test_its_input_is_closed_so_git_never_waits_for_a_person(tmp_path: Path) -> None:
    root = make_checkout(tmp_path / "repo", layer=False)
    assert run_git(root, "hash-object", "--stdin", timeout=10) == EMPTY_BLOB


def test_a_failing_command_is_none(tmp_path: Path) -> None:
    root = make_checkout(tmp_path / "repo", layer=False)
    assert run_git(root, "rev-parse", "--verify", "-q", "refs/heads/absent", timeout=10) is None
    assert run_git(tmp_path, "rev-parse", "HEAD", timeout=10) is None  # not a repository


def test_a_missing_directory_is_none(tmp_path: Path) -> None:
    assert run_git(tmp_path / "absent", "status", timeout=10) is None


def test_no_git_on_the_path_is_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_checkout(tmp_path / "repo", layer=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert run_git(root, "status", timeout=10) is None


@pytest.mark.slow
def test_a_git_that_does_not_answer_in_time_is_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "bin" / "git"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nexec sleep 30\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}/usr/bin{os.pathsep}/bin")
    assert run_git(tmp_path, "status", timeout=0.2) is None
