"""Atomic file writes: a temp file in the same directory, fsync, rename, fsync the directory.

A writer killed between creating its temp file and renaming it leaves `.<name>.<8 random>.tmp` behind;
`remove_stale_temps` removes such files for a writer that holds the lock every writer of the directory takes.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from pathlib import Path

__all__ = ["ensure_local_state", "remove_stale_temps", "temp_beside", "write_all", "write_atomic"]

#: The names of the temp files `temp_beside` makes (8 characters of `[0-9a-f]`), and of those `tempfile.mkstemp`
#: made with the same prefix and suffix (8 of `[a-z0-9_]`).
_TEMP_NAME = re.compile(r"^\.(?P<name>[^/]+)\.[a-z0-9_]{8}\.tmp$")
_TEMP_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_TEMP_TRIES = 100


def temp_beside(path: Path) -> tuple[int, str]:
    """A new file beside `path` for its next bytes: its descriptor (open for writing, mode 0600) and its path.

    Named `.<name>.<8 random hex digits>.tmp` and created exclusively, never a file or a link already there (as
    `tempfile.mkstemp` does, whose imports a query's start-up is spared).

    Raises:
        OSError: as `os.open` does; `FileExistsError` when every name tried was taken.
    """
    for _ in range(_TEMP_TRIES):
        tmp = os.path.join(path.parent, f".{path.name}.{os.urandom(4).hex()}.tmp")
        try:
            return os.open(tmp, _TEMP_FLAGS, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, f"no free temp file name beside {path.name}", str(path.parent))


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of `data` to `fd` (one `os.write` may write fewer)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_atomic(path: Path, data: bytes, *, mode: int | None = None, durable: bool = True) -> None:
    """Replace `path` with `data` so that a reader sees the old bytes or the new, never a mix.

    The file keeps its mode when it exists (else `mode`, else 0o644). A failure leaves `path` untouched.
    `durable=False` skips both fsyncs: for a cache, where a file a crash left empty is only a miss.
    """
    directory = path.parent
    directory.mkdir(parents=True, exist_ok=True)
    try:
        keep = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        keep = 0o644 if mode is None else mode
    fd, tmp = temp_beside(path)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.chmod(tmp, keep)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if not durable:
        return
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def remove_stale_temps(directory: Path, *, before_ns: int) -> list[Path]:
    """Remove the temp files interrupted `write_atomic` calls left in `directory`; the paths removed.

    Only names of `write_atomic`'s own pattern (`.<name>.<8 random>.tmp`), only regular files (never through
    a symlink), and only those last modified before `before_ns` (`time.time_ns()` when the caller's write
    began). The caller must hold the lock that every writer of `directory` takes: then such a file belongs
    to a writer that died, never to one still writing. A file that vanishes or cannot be removed is skipped.
    """
    removed: list[Path] = []
    try:
        listing = os.scandir(directory)
    except OSError:
        return removed
    with listing:
        for entry in listing:
            if _TEMP_NAME.match(entry.name) is None:
                continue
            try:
                info = entry.stat(follow_symlinks=False)
                if not stat.S_ISREG(info.st_mode) or info.st_mtime_ns >= before_ns:
                    continue
                os.unlink(entry.path)
            except OSError:
                continue
            removed.append(Path(entry.path))
    return removed


#: Written into `.ai/local/` when svc creates it: the folder is svc's own state, ignored by Git whatever the
#: repository's own ignore rules say (a foreign checkout's `git status` stays clean).
LOCAL_GITIGNORE = b"# svc's own state: never tracked.\n*\n"


def ensure_local_state(local: Path) -> Path:
    """Create `local/state` (mode 0700) and `local/.gitignore` ignoring everything in `local/`; return state.

    `local` is the checkout's `.ai/local`. An existing `.gitignore` is left as it is.
    """
    state = local / "state"
    state.mkdir(parents=True, exist_ok=True, mode=0o700)
    ignore = local / ".gitignore"
    if not os.path.lexists(ignore):
        write_atomic(ignore, LOCAL_GITIGNORE)
    return state
