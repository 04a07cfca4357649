"""The primer: `python -m svc.plan._primer ROOT GIT_DIR COMMON_DIR` reads the plan of that checkout once, alone.

A serving process starts it (`svc.plan._prime`) so that the parse cache and the derivation are stored by the
time its first read of a large plan comes; that read then reuses them.
"""

from __future__ import annotations

import sys
from pathlib import Path

from svc.layer import Repository
from svc.plan._store import read_snapshot

__all__ = ["main"]


def main(argv: list[str]) -> int:
    """Read the plan of the checkout whose root, Git and common directories `argv` names (no parsing helper)."""
    root, git_dir, common_dir = argv
    repo = Repository(
        root=Path(root), git_dir=Path(git_dir) if git_dir else None, common_dir=Path(common_dir) if common_dir else None
    )
    read_snapshot(repo, helper=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
