"""The one reading rule for every file svc reads from a checkout (layer, plan, docs, policy, changelog, ...).

A cloned repository is input svc does not control: Git can commit a symlink to `/dev/zero` or to
`/etc/passwd`, a hand-made tree can hold a FIFO or a symlink loop. So a file of the checkout is read only
when it is a regular file whose real path stays inside the checkout, and only up to a size limit:

1. `lstat` the path: a FIFO, socket, device or directory is refused before anything opens it;
2. resolve it (every symlink on the way): a loop, a dangling link or a target outside the checkout is refused;
3. open the resolved path with `O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC` (never blocks, never follows
   a link swapped in since), `fstat` the descriptor: regular files only, at most `limit` bytes;
4. read at most `limit + 1` bytes (a file that grew past the limit meanwhile is refused too).

A refusal is `Unreadable` (an `OSError`), naming the file and a short reason; an absent file is the usual
`FileNotFoundError`. `clip` bounds any text svc puts in a finding or a message.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

__all__ = [
    "MAX_FILE_BYTES",
    "MESSAGE_LIMIT",
    "ScannedFile",
    "Unreadable",
    "check_repository_dir",
    "check_repository_file",
    "clip",
    "read_repository_dir",
    "read_repository_file",
    "scan_repository_dir",
]

#: The largest file svc reads from a checkout.
MAX_FILE_BYTES = 4 * 1024 * 1024
#: The longest text svc puts in one finding or message (longer is cut, with an ellipsis).
MESSAGE_LIMIT = 400
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)
_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CHUNK = 1024 * 1024


class Unreadable(OSError):
    """A file of the checkout that svc does not read; `path` names it, `reason` says why in a few words.

    `too_large` tells a file over the size limit (a bound svc keeps) from one that is no file of the checkout.
    """

    def __init__(self, path: str, reason: str, *, too_large: bool = False) -> None:
        super().__init__(reason)
        self.path = path
        self.reason = reason
        self.too_large = too_large
        self.strerror = reason
        self.filename = path

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


def clip(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """`text` cut to at most `limit` characters, the cut marked with an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n} bytes"


def _limit(n: int) -> str:
    return f"{n // 2**20} MiB" if n % 2**20 == 0 else f"{n} bytes"


def _name(root: Path, path: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return clip(str(path), 200)


def _reason(exc: OSError) -> str:
    """A few words for an OS error (a loop of symlinks named as such)."""
    if exc.errno == errno.ELOOP:
        return "a symlink loop"
    return exc.strerror or type(exc).__name__


def _kind(mode: int) -> str | None:
    """What a non-regular file is ("a FIFO", ...), None for a regular file or a symlink."""
    if stat.S_ISREG(mode) or stat.S_ISLNK(mode):
        return None
    return next((word for test, word in _KINDS if test(mode)), "not a regular file")


def _resolve(root: Path, path: Path, name: str) -> tuple[Path, os.stat_result]:
    """The real path of `path` (inside the real `root`) and its `stat`, or `Unreadable`/`FileNotFoundError`."""
    first = os.lstat(path)
    kind = _kind(first.st_mode)
    if kind is not None and not stat.S_ISDIR(first.st_mode):
        raise Unreadable(name, f"not a regular file ({kind})")
    try:
        real = Path(os.path.realpath(path, strict=True))
    except FileNotFoundError:
        if not stat.S_ISLNK(first.st_mode):
            raise
        raise Unreadable(name, "a dangling symlink") from None
    top = Path(os.path.realpath(root))
    if real != top and not real.is_relative_to(top):
        raise Unreadable(name, "a symlink leaving the repository")
    return real, os.lstat(real)


def _locate(root: Path, path: Path) -> tuple[str, Path, os.stat_result]:
    """The shown name, the real path and the `stat` of `path` (relative to `root` when not absolute).

    Raises:
        FileNotFoundError: nothing is at `path`.
        Unreadable: it resolves outside `root`, or cannot be examined.
    """
    path = path if path.is_absolute() else root / path
    name = _name(root, path)
    try:
        real, st = _resolve(root, path, name)
    except (FileNotFoundError, Unreadable):
        raise
    except OSError as exc:
        raise Unreadable(name, _reason(exc)) from None
    return name, real, st


def check_repository_file(root: Path, path: Path, *, limit: int = MAX_FILE_BYTES) -> Path:
    """The real path of `path` when `read_repository_file` would read it (judged by `stat`, nothing opened).

    Raises:
        FileNotFoundError: nothing is at `path`.
        Unreadable: it is not a regular file, resolves outside `root`, or is over `limit` bytes.
    """
    name, real, st = _locate(root, path)
    kind = _kind(st.st_mode)
    if kind is not None:
        raise Unreadable(name, f"not a regular file ({kind})")
    if st.st_size > limit:
        raise Unreadable(name, f"{_size(st.st_size)}, over the {_limit(limit)} limit", too_large=True)
    return real


def check_repository_dir(root: Path, path: Path) -> Path:
    """The real path of the directory `path`, when it is one and resolves inside `root`.

    Raises:
        FileNotFoundError: nothing is at `path`.
        Unreadable: it is not a directory, or resolves outside `root`.
    """
    name, real, st = _locate(root, path)
    if not stat.S_ISDIR(st.st_mode):
        raise Unreadable(name, f"not a directory ({_kind(st.st_mode) or 'a regular file'})")
    return real


def _read_fd(fd: int, name: str, limit: int) -> bytes:
    """Read an open descriptor under the rule (regular, at most `limit` bytes); the caller closes it."""
    return _read_fd_stat(fd, name, limit)[1]


def _read_fd_stat(fd: int, name: str, limit: int) -> tuple[os.stat_result, bytes]:
    """`_read_fd`, with the descriptor's `fstat` taken before its bytes were read."""
    try:
        st = os.fstat(fd)
        kind = _kind(st.st_mode)
        if kind is not None:
            raise Unreadable(name, f"not a regular file ({kind})")
        if st.st_size > limit:
            raise Unreadable(name, f"{_size(st.st_size)}, over the {_limit(limit)} limit", too_large=True)
        chunks: list[bytes] = []
        total = 0
        while total <= limit:
            chunk = os.read(fd, min(_CHUNK, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except Unreadable:
        raise
    except OSError as exc:
        raise Unreadable(name, _reason(exc)) from None
    if total > limit:
        raise Unreadable(name, f"grew over the {_limit(limit)} limit while read", too_large=True)
    return st, b"".join(chunks)


def _open_error(name: str, exc: OSError) -> Unreadable:
    reason = "a symlink swapped in while reading" if exc.errno == errno.ELOOP else exc.strerror
    return Unreadable(name, reason or type(exc).__name__)


def read_repository_file(root: Path, path: Path, *, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the file `path` of the checkout at `root` (relative paths are taken from `root`).

    Blocking but bounded: it never waits on a FIFO or a device and never reads more than `limit + 1` bytes.

    Raises:
        FileNotFoundError: nothing is at `path`.
        Unreadable: a FIFO, socket, device or directory; a symlink loop, a dangling symlink or one leaving the
            repository; more than `limit` bytes; or the file cannot be opened or read (permissions, I/O).
    """
    path = path if path.is_absolute() else root / path
    name = _name(root, path)
    real = check_repository_file(root, path, limit=limit)
    try:
        fd = os.open(real, _FLAGS)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise _open_error(name, exc) from None
    try:
        return _read_fd(fd, name, limit)
    finally:
        os.close(fd)


def read_repository_dir(
    root: Path, directory: Path, select: Callable[[str], bool], *, limit: int = MAX_FILE_BYTES
) -> Iterator[tuple[str, bytes | Unreadable]]:
    """Each file directly in `directory` whose name `select` keeps: `(name, bytes)`, or `(name, Unreadable)`.

    The directory is checked once (`check_repository_dir`); its plain files are then opened relative to it,
    so a large directory costs one `open` and one `fstat` per file. An entry that is a symlink is judged by
    `read_repository_file`; one that is not a regular file is refused without being opened. Entries come in
    directory order, one at a time (a caller that keeps only a digest holds one file at most). An entry
    removed meanwhile is skipped.

    Raises:
        FileNotFoundError: the directory is absent (on the first iteration).
        Unreadable: the directory itself is refused (not a directory, outside the checkout, cannot be listed).
    """
    directory = directory if directory.is_absolute() else root / directory
    with _listing(root, directory, select) as (dir_fd, prefix, entries):
        for entry in entries:
            try:
                data = _read_entry(root, directory, dir_fd, entry, f"{prefix}/{entry.name}", limit)
            except FileNotFoundError:
                continue
            except Unreadable as exc:
                yield entry.name, exc
                continue
            yield entry.name, data


@contextlib.contextmanager
def _listing(
    root: Path, directory: Path, select: Callable[[str], bool]
) -> Iterator[tuple[int, str, list[os.DirEntry[str]]]]:
    """The checked `directory` opened as a descriptor, its name as shown, and its entries `select` keeps.

    Raises:
        FileNotFoundError: the directory is absent.
        Unreadable: the directory is refused (not a directory, outside the checkout, cannot be listed).
    """
    real = check_repository_dir(root, directory)
    prefix = _name(root, directory)
    try:
        dir_fd = os.open(real, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise Unreadable(prefix, _reason(exc)) from None
    try:
        try:
            with os.scandir(dir_fd) as listing:
                entries = [entry for entry in listing if select(entry.name)]
        except OSError as exc:
            raise Unreadable(prefix, _reason(exc)) from None
        yield dir_fd, prefix, entries
    finally:
        os.close(dir_fd)


def _read_entry(root: Path, directory: Path, dir_fd: int, entry: os.DirEntry[str], name: str, limit: int) -> bytes:
    try:
        if entry.is_symlink():
            return read_repository_file(root, directory / entry.name, limit=limit)
        if not entry.is_file(follow_symlinks=False):
            kind = _kind(entry.stat(follow_symlinks=False).st_mode) or "not a regular file"
            raise Unreadable(name, f"not a regular file ({kind})")
        fd = os.open(entry.name, _FLAGS, dir_fd=dir_fd)
    except (FileNotFoundError, Unreadable):
        raise
    except OSError as exc:
        raise _open_error(name, exc) from None
    try:
        return _read_fd(fd, name, limit)
    finally:
        os.close(fd)


class ScannedFile(NamedTuple):
    """One entry of `scan_repository_dir`.

    `data` is None when the caller's `reuse` kept the file (not opened; `stat` is its `lstat`), the bytes when
    the file was read (`stat` is the open descriptor's `fstat`, taken before the bytes were read, so they are
    at least as new as it; None for an entry that is a symlink, read by its path), or the `Unreadable` refusal
    (`stat` None).
    """

    name: str
    stat: os.stat_result | None
    data: bytes | Unreadable | None


def scan_repository_dir(
    root: Path,
    directory: Path,
    select: Callable[[str], bool],
    reuse: Callable[[str, os.stat_result], bool],
    *,
    limit: int = MAX_FILE_BYTES,
) -> Iterator[ScannedFile]:
    """`read_repository_dir`, asking `reuse(name, lstat)` before opening each regular file.

    The directory is checked and listed as `read_repository_dir` does. Each selected entry that is a regular
    file within `limit` is `lstat`ed relative to the directory's descriptor; when `reuse` answers true, it is
    not opened. Every other entry is read or refused exactly as `read_repository_dir` would: a symlink by
    `read_repository_file`, anything but a regular file refused unopened; `reuse` is never asked about those.
    Entries come in directory order; an entry removed meanwhile is skipped.

    Raises:
        FileNotFoundError: the directory is absent (on the first iteration).
        Unreadable: the directory itself is refused (not a directory, outside the checkout, cannot be listed).
    """
    directory = directory if directory.is_absolute() else root / directory
    with _listing(root, directory, select) as (dir_fd, prefix, entries):
        for entry in entries:
            try:
                scanned = _scan_entry(root, directory, dir_fd, entry, f"{prefix}/{entry.name}", reuse, limit)
            except FileNotFoundError:
                continue
            except Unreadable as exc:
                scanned = ScannedFile(entry.name, None, exc)
            yield scanned


def _scan_entry(
    root: Path,
    directory: Path,
    dir_fd: int,
    entry: os.DirEntry[str],
    name: str,
    reuse: Callable[[str, os.stat_result], bool],
    limit: int,
) -> ScannedFile:
    try:
        st = None if entry.is_symlink() else entry.stat(follow_symlinks=False)
        if st is None or stat.S_ISLNK(st.st_mode):
            return ScannedFile(entry.name, None, read_repository_file(root, directory / entry.name, limit=limit))
        if not stat.S_ISREG(st.st_mode):
            raise Unreadable(name, f"not a regular file ({_kind(st.st_mode) or 'not a regular file'})")
        if st.st_size > limit:
            raise Unreadable(name, f"{_size(st.st_size)}, over the {_limit(limit)} limit", too_large=True)
        if reuse(entry.name, st):
            return ScannedFile(entry.name, st, None)
        fd = os.open(entry.name, _FLAGS, dir_fd=dir_fd)
    except (FileNotFoundError, Unreadable):
        raise
    except OSError as exc:
        raise _open_error(name, exc) from None
    try:
        opened, data = _read_fd_stat(fd, name, limit)
    finally:
        os.close(fd)
    return ScannedFile(entry.name, opened, data)
