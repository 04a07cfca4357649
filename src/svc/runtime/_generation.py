"""The repository generation: an answer cached under `generation` is kept until it changes.

Generation = (stamp, write counter). The stamp hashes (path, present, size, mtime_ns, inode) of Git's HEAD,
index and refs and of every file under `.ai/` except `.ai/local/`. A watcher recomputes it every 250 ms in a
worker thread; a request compares one integer. svc bumps the counter itself, before answering, on every
repository write it makes, so the next read sees the write even before the watcher looks.

The watcher outlives any failure of one round: a stamp that cannot be computed or a hook that raises (a
corrupt file, a `MemoryError`) is logged to stderr and the next round runs as usual; a hook is waited for at
most `HOOK_SECONDS` (it goes on in its thread).
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import trio

from svc.layer import Repository, check_repository_dir

__all__ = ["Generation", "repository_stamp"]

_log = logging.getLogger("svc.runtime")
INTERVAL_SECONDS = 0.25
#: How long the watcher waits for one hook before it goes on watching.
HOOK_SECONDS = 30.0
_GIT_FILES = ("HEAD", "index", "ORIG_HEAD", "MERGE_HEAD", "logs/HEAD")


class Generation:
    """A monotonically increasing number that changes whenever the repository does."""

    def __init__(self, repo: Repository, *, stamp: bytes | None = None) -> None:
        self.repo = repo
        self._stamp = repository_stamp(repo) if stamp is None else stamp
        self.value = 0
        #: Run in a worker thread after the watcher saw a change (rebuild resident state off the loop).
        self.hooks: list[Callable[[], object]] = []
        #: Whether a watcher runs (a server); a one-shot command's generation is pinned.
        self.watched = False

    def bump(self) -> int:
        """Record a write svc made; answers cached before it no longer hit."""
        self.value += 1
        return self.value

    def observe(self, stamp: bytes) -> bool:
        """Take a freshly computed stamp; bump and return True when it differs."""
        if stamp == self._stamp:
            return False
        self._stamp = stamp
        self.bump()
        return True

    async def refresh(self) -> bool:
        """Recompute the stamp now (in a worker thread); True when the repository changed."""
        stamp = await trio.to_thread.run_sync(repository_stamp, self.repo)
        changed = self.observe(stamp)
        if changed:
            for hook in self.hooks:
                await _run_hook(hook)
        return changed

    async def watch(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Recompute the stamp every 250 ms until cancelled; a failed round is logged and the next one runs."""
        self.watched = True
        task_status.started()
        while True:
            await trio.sleep(INTERVAL_SECONDS)
            try:
                await self.refresh()
            except Exception:
                _log.exception("svc: the repository watcher could not compute a generation; it goes on")


async def _run_hook(hook: Callable[[], object]) -> None:
    """Run one hook in a worker thread: its failure is logged, and it is waited for at most `HOOK_SECONDS`."""
    with trio.move_on_after(HOOK_SECONDS) as scope:
        try:
            await trio.to_thread.run_sync(hook, abandon_on_cancel=True)
        except Exception:
            _log.exception("svc: a rebuild after a repository change failed; the watcher goes on")
    if scope.cancelled_caught:
        _log.warning(
            "svc: a rebuild after a repository change took over %.0f s; it goes on in the background", HOOK_SECONDS
        )


def repository_stamp(repo: Repository) -> bytes:
    """SHA-256 over the file facts that define a generation of `repo`."""
    digest = hashlib.sha256()
    for rel, path in _watched(repo):
        try:
            st = path.stat()
        except OSError:
            digest.update(f"{rel}\0absent\n".encode())
            continue
        digest.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}\n".encode())
    return digest.digest()


def _watched(repo: Repository) -> Iterator[tuple[str, Path]]:
    if repo.git_dir is not None:
        for name in _GIT_FILES:
            yield f"git/{name}", repo.git_dir / name
        yield from _walk("git/rebase-merge", repo.git_dir / "rebase-merge")
    if repo.common_dir is not None:
        yield "common/packed-refs", repo.common_dir / "packed-refs"
        yield from _walk("common/refs", repo.common_dir / "refs")
    try:
        check_repository_dir(repo.root, repo.layer)
    except OSError:  # absent, or not a directory of the checkout (a symlink leaving it is never walked)
        return
    yield from _walk(".ai", repo.layer, skip=repo.layer / "local")


def _walk(label: str, root: Path, *, skip: Path | None = None) -> Iterator[tuple[str, Path]]:
    entries: list[tuple[str, Path]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        if skip is not None and here == skip.parent:
            dirnames[:] = [d for d in dirnames if here / d != skip]
        dirnames.sort()
        for name in filenames:
            path = here / name
            entries.append((f"{label}/{path.relative_to(root).as_posix()}", path))
    entries.sort()
    yield from entries
