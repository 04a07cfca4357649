"""The one way svc runs `git`: in a directory, no input, output captured, and no exception for a failure."""

from __future__ import annotations

import subprocess
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["run_git"]


def run_git(root: Path, *args: str, timeout: float) -> bytes | None:
    """The standard output of `git -C <root> <args>`, or None when it could not answer.

    None covers every way the answer is missing: no `git` on the PATH, `root` missing or not a repository,
    a non-zero exit, or no answer within `timeout` seconds (the process is then killed). Standard input is
    closed, so git never waits for a person; its standard error is discarded.
    """
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            check=False,
            timeout=timeout,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None
