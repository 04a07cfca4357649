"""The checkout svc serves: its top level, its Git directories, and the Git facts read without a subprocess.

Git facts (HEAD, branch) are read from the Git directory's files directly: a loose ref, else `packed-refs`.
Nothing here runs `git`; that is left to the few places that need history (the mesh's repository id).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import msgspec

__all__ = ["GitState", "Repository", "checkout_id"]

_ZERO = "0" * 40


def checkout_id(top_level: Path) -> str:
    """First 32 hex of SHA-256(`svc-checkout/v1` LF + the canonical top-level path)."""
    digest = hashlib.sha256(b"svc-checkout/v1\n" + os.fsencode(os.path.realpath(top_level)))
    return digest.hexdigest()[:32]


class GitState(msgspec.Struct, frozen=True):
    """HEAD as read now: the full commit id (None when unborn) and the branch (None when detached)."""

    head: str | None
    branch: str | None


class Repository(msgspec.Struct, frozen=True):
    """One checkout: `root` is its top level; `git_dir`/`common_dir` are None outside Git."""

    root: Path
    git_dir: Path | None
    common_dir: Path | None

    @classmethod
    def discover(cls, start: Path | None = None) -> Repository:
        """The checkout containing `start` (default: the working directory).

        Outside a Git work tree the directory itself is the root.
        """
        here = (start or Path.cwd()).resolve()
        for candidate in (here, *here.parents):
            dot_git = candidate / ".git"
            git_dir = _git_dir(dot_git)
            if git_dir is not None:
                return cls(root=candidate, git_dir=git_dir, common_dir=_common_dir(git_dir))
        return cls(root=here, git_dir=None, common_dir=None)

    @property
    def name(self) -> str:
        """The directory name of the checkout (never the path)."""
        return self.root.name

    @property
    def id(self) -> str:
        """The checkout id (see `checkout_id`)."""
        return checkout_id(self.root)

    @property
    def layer(self) -> Path:
        """The `.ai/` folder (it may not exist)."""
        return self.root / ".ai"

    @property
    def has_layer(self) -> bool:
        """Whether the checkout carries an `.ai/` folder."""
        return self.layer.is_dir()

    @property
    def local_state(self) -> Path:
        """`.ai/local/state`, svc's own untracked state."""
        return self.layer / "local" / "state"

    def relative(self, path: Path) -> str:
        """`path` relative to the root, with forward slashes."""
        return path.relative_to(self.root).as_posix()

    def git(self) -> GitState:
        """Read HEAD and the branch now; `GitState(None, None)` outside Git."""
        if self.git_dir is None:
            return GitState(head=None, branch=None)
        try:
            text = (self.git_dir / "HEAD").read_text(encoding="utf-8").strip()
        except OSError:
            return GitState(head=None, branch=None)
        if not text.startswith("ref:"):
            return GitState(head=text or None, branch=None)
        ref = text[4:].strip()
        branch = ref.removeprefix("refs/heads/")
        return GitState(head=self._resolve(ref), branch=branch)

    def _resolve(self, ref: str) -> str | None:
        for base in {self.git_dir, self.common_dir} - {None}:
            assert base is not None
            try:
                value = (base / ref).read_text(encoding="utf-8").strip()
            except OSError:
                continue
            if value and value != _ZERO:
                return value
        if self.common_dir is None:
            return None
        try:
            packed = (self.common_dir / "packed-refs").read_text(encoding="utf-8")
        except OSError:
            return None
        for line in packed.splitlines():
            parts = line.split(" ", 1)
            if len(parts) == 2 and parts[1] == ref:
                return parts[0]
        return None


def _git_dir(dot_git: Path) -> Path | None:
    if dot_git.is_dir():
        return dot_git if (dot_git / "HEAD").is_file() else None
    if dot_git.is_file():
        try:
            text = dot_git.read_text(encoding="utf-8").strip()
        except OSError:
            return None
        if text.startswith("gitdir:"):
            target = Path(text[7:].strip())
            target = target if target.is_absolute() else (dot_git.parent / target)
            return target.resolve() if (target / "HEAD").is_file() else None
    return None


def _common_dir(git_dir: Path) -> Path:
    try:
        text = (git_dir / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return git_dir
    target = Path(text)
    return (target if target.is_absolute() else git_dir / target).resolve()
