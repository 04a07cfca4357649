"""The ledger line a move is about to append, kept until it is in the ledger (docs/plan.md, "Crash consistency").

A move replaces the record, then appends its ledger line; a kill between the two would leave a sealed stamp
whose event the ledger lacks. So, under `plan.lock`, a move first writes the exact line it will append to
`.ai/local/state/ledger.pending` (fsynced), then replaces the record, appends the line and removes the file.
The next holder of the lock settles a line left there (`settle`): it is appended when the record holds the
sealed stamp it proves and the ledger lacks it, and dropped otherwise (the record was never replaced, or the
line made it). Until then a read that finds no move holding the lock reports it (`unlogged`), and derivation
turns it into a `ledger_gap` finding.

Only this checkout's own interrupted moves are gaps: the ledger is local to one checkout, so a sealed stamp
that came with a clone or a pull has no event here and is not one.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from collections.abc import Sequence
from pathlib import Path

import msgspec

from svc._log import LazyLogger
from svc.layer import check_repository_file, read_repository_file, write_all
from svc.plan._ledger import append_line
from svc.plan._load import IssueRecord
from svc.plan._seal import MOVES, Move, seal

__all__ = ["PENDING", "PendingEvent", "clear_pending", "ledger_holds", "read_pending", "settle", "unlogged"]

_log = LazyLogger("svc.plan")

#: The file under `.ai/local/state/` that holds the line of the move in progress.
PENDING = "ledger.pending"
_LIMIT = 64 * 1024
_CHUNK = 1024 * 1024
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_EVENTS: dict[str, Move] = {move.event: move for move in MOVES.values()}


class PendingEvent(msgspec.Struct, frozen=True):
    """The pending ledger line (exact bytes, LF-terminated) and the stamp it records."""

    line: bytes
    move: Move
    issue: str
    stamp: str

    def describe(self) -> str:
        """`plan_start I0001 2026-11-21T10:00:00Z`: the event, the issue and the stamp."""
        return f"{self.move.event} {self.issue} {self.stamp}"


def _parse(data: bytes) -> PendingEvent | None:
    """The pending line, or None when `data` is not one whole line of a move's event (a torn write)."""
    if not data.endswith(b"\n") or b"\n" in data[:-1]:
        return None
    try:
        value = msgspec.json.decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError):
        return None
    if not isinstance(value, dict):
        return None
    event, issue, stamp = value.get("event"), value.get("issue"), value.get("ts")
    move = _EVENTS.get(event) if isinstance(event, str) else None
    if move is None or not isinstance(issue, str) or not isinstance(stamp, str):
        return None
    return PendingEvent(line=data, move=move, issue=issue, stamp=stamp)


def read_pending(root: Path, state: Path) -> PendingEvent | None:
    """The line a move left pending in `state`, or None (absent, torn, or not a file svc reads)."""
    try:
        data = read_repository_file(root, state / PENDING, limit=_LIMIT)
    except FileNotFoundError:
        return None
    except OSError as exc:
        _log.warning("svc: %s is not read: %s", state / PENDING, exc)
        return None
    return _parse(data)


def write_pending(state: Path, line: bytes) -> None:
    """Write `line` as the pending line and make it durable (the file, then its directory).

    Raises:
        OSError: it cannot be written (nothing else was touched).
    """
    fd = os.open(state / PENDING, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        write_all(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)
    dir_fd = os.open(state, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def clear_pending(state: Path) -> None:
    """Remove the pending line (absent is fine).

    Raises:
        OSError: it exists and cannot be removed.
    """
    with contextlib.suppress(FileNotFoundError):
        os.unlink(state / PENDING)


def proves(pending: PendingEvent, records: Sequence[IssueRecord]) -> bool:
    """Whether the issue's record holds the pending stamp with its seal (the move's record was replaced)."""
    record = next((r for r in records if r.id == pending.issue), None)
    if record is None:
        return False
    move = pending.move
    stamp: str = getattr(record, move.field)
    sealed_by: str = getattr(record, move.seal_field)
    return stamp == pending.stamp and sealed_by == seal(move.event, pending.issue, pending.stamp)


def ledger_holds(root: Path, ledger: Path, line: bytes) -> bool:
    """Whether `line` is one of the ledger's lines (read in chunks up to the size it had when opened).

    An absent ledger holds nothing; one svc cannot read (not a regular file, outside the checkout) is taken
    as not holding it, so the gap is reported and appending then fails with the reason.
    """
    needle = b"\n" + line
    try:
        real = check_repository_file(root, ledger, limit=2**62)
        fd = os.open(real, _READ)
    except FileNotFoundError:
        return False
    except OSError as exc:
        _log.warning("svc: the ledger %s is not read: %s", ledger, exc)
        return False
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return False
        left, carry = info.st_size, b"\n"
        while left > 0:
            chunk = os.read(fd, min(_CHUNK, left))
            if not chunk:
                break
            left -= len(chunk)
            data = carry + chunk
            if needle in data:
                return True
            carry = data[-(len(needle) - 1) :]
    except OSError as exc:
        _log.warning("svc: the ledger %s is not read: %s", ledger, exc.strerror)
        return False
    finally:
        os.close(fd)
    return False


def _lock_free(lock: Path) -> bool:
    """Whether no move holds `lock` now (probed with a shared, non-blocking `flock`; never created)."""
    try:
        fd = os.open(lock, _READ)
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        return exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN)
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return True
    finally:
        os.close(fd)


def unlogged(root: Path, state: Path, lock: Path, ledger: Path, records: Sequence[IssueRecord]) -> PendingEvent | None:
    """The pending line a read should report as a ledger gap, or None.

    It is one when no move holds `lock` (a move in progress is not a gap), the record holds the sealed stamp,
    and the ledger lacks the line. Costs one failed `lstat` when nothing is pending.
    """
    pending = read_pending(root, state)
    if pending is None or not _lock_free(lock) or not proves(pending, records):
        return None
    return None if ledger_holds(root, ledger, pending.line) else pending


def settle(root: Path, state: Path, ledger: Path, records: Sequence[IssueRecord]) -> PendingEvent | None:
    """Under the lock: append a pending line the record proves and the ledger lacks, then drop it.

    Returns the line appended, or None. Idempotent: the line is compared byte for byte with the ledger's.

    Raises:
        OSError: the ledger cannot be appended, or the pending file cannot be removed (it is kept, so the
            next holder of the lock tries again).
    """
    pending = read_pending(root, state)
    appended = None
    if pending is not None and proves(pending, records) and not ledger_holds(root, ledger, pending.line):
        append_line(ledger, pending.line)
        appended = pending
    clear_pending(state)
    return appended
