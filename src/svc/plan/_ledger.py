"""The ledger `.ai/local/state/ledger.jsonl` (docs/layer.md): append-only, one JSON object per line.

A line is built and checked before anything touches the disk (`ledger_line`): its event must be declared in
the packaged vocabulary (`svc/plan/events.yaml`), carry every required payload key and no envelope key.
`append_line` opens with append, takes an exclusive `flock` on the ledger, writes the whole line, fsyncs
and unlocks. `read_ledger` skips (and counts) what does not parse; nothing here ever rewrites the file.
"""

from __future__ import annotations

import fcntl
import functools
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from svc.layer import load_yaml, read_repository_file, write_all

__all__ = [
    "ENVELOPE",
    "EventDeclaration",
    "LedgerError",
    "LedgerReading",
    "append_line",
    "declared_events",
    "ledger_line",
    "read_ledger",
]

#: The largest ledger svc reads (about 300,000 lines).
LEDGER_LIMIT = 64 * 1024 * 1024
#: The envelope keys, in the order every line starts with (`session` only when there is one).
ENVELOPE = ("ts", "event", "head", "branch", "by", "session")
_encoder = msgspec.json.Encoder()


class LedgerError(ValueError):
    """A line the ledger refuses; nothing was written."""


class EventDeclaration(msgspec.Struct, frozen=True):
    """One declared event: its name, required payload keys, and whether other tools may rely on it."""

    id: str
    requires: tuple[str, ...]
    public: bool


#: The packaged event vocabulary, beside this module.
_EVENTS = Path(__file__).with_name("events.yaml")


@functools.cache
def declared_events() -> dict[str, EventDeclaration]:
    """The packaged event vocabulary, by name (read once per process)."""
    text = _EVENTS.read_bytes()
    data = load_yaml(text)
    out: dict[str, EventDeclaration] = {}
    for entry in data["events"]:
        declaration = EventDeclaration(
            id=str(entry["id"]),
            requires=tuple(str(k) for k in entry.get("requires", ())),
            public=bool(entry.get("public", False)),
        )
        out[declaration.id] = declaration
    return out


def ledger_line(
    event: str,
    payload: Mapping[str, Any],
    *,
    ts: str,
    head: str | None,
    branch: str | None,
    by: str,
    session: str | None = None,
) -> bytes:
    """One compact JSON line (LF-terminated) in the key order of docs/layer.md.

    `head` None is written `NONE` (unborn or no Git); `branch` None is `DETACHED` (detached or no Git).

    Raises:
        LedgerError: an undeclared event, a missing required payload key, or a payload key that is an
            envelope key.
    """
    events = declared_events()
    declaration = events.get(event)
    if declaration is None:
        raise LedgerError(f"event {event!r} is not declared (declared: {', '.join(sorted(events))})")
    for key in declaration.requires:
        if key not in payload:
            raise LedgerError(f"event '{event}' is missing the required field '{key}'")
    clash = [key for key in payload if key in ENVELOPE]
    if clash:
        raise LedgerError(f"payload keys {', '.join(clash)} are envelope keys ({', '.join(ENVELOPE)})")
    line: dict[str, Any] = {
        "ts": ts,
        "event": event,
        "head": head or "NONE",
        "branch": branch or "DETACHED",
        "by": by,
    }
    if session:
        line["session"] = session
    line.update(payload)
    try:
        encoded = _encoder.encode(line)
    except (TypeError, msgspec.EncodeError) as exc:
        raise LedgerError(f"the payload is not one JSON object: {exc}") from exc
    return encoded + b"\n"


def append_line(path: Path, line: bytes) -> None:
    """Append one complete line under an exclusive lock on the ledger, then fsync.

    The directory is created (mode 0700) and the file (mode 0600) on the first write. The ledger is never
    opened through a symlink. A last line left without its LF (a writer killed mid-line) is ended first, so
    the new line stays whole.

    Raises:
        LedgerError: `line` is not exactly one LF-terminated line.
        OSError: the ledger cannot be written (or is a symlink).
    """
    if not line.endswith(b"\n") or b"\n" in line[:-1]:
        raise LedgerError("a ledger line is one JSON object on one line")
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                line = b"\n" + line
            write_all(fd, line)
            os.fsync(fd)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


class LedgerReading(msgspec.Struct, frozen=True):
    """The ledger's entries oldest first, and how many lines were skipped as unreadable."""

    entries: list[dict[str, Any]] = msgspec.field(default_factory=list)
    skipped: int = 0


def read_ledger(path: Path) -> LedgerReading:
    """Read every line; a blank line is ignored, one that does not parse or lacks `ts`/`event` is counted.

    A missing file is an empty ledger. The ledger is read under the reading rule within its own directory
    (a regular file, never through a symlink leaving `.ai/local/state/`, at most `LEDGER_LIMIT` bytes).

    Raises:
        Unreadable: the rule refuses the ledger (an `OSError`, like any other failure to read it).
    """
    try:
        data = read_repository_file(path.parent, path, limit=LEDGER_LIMIT)
    except FileNotFoundError:
        return LedgerReading()
    entries: list[dict[str, Any]] = []
    skipped = 0
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            value = msgspec.json.decode(raw)
        except (msgspec.DecodeError, UnicodeDecodeError):
            skipped += 1
            continue
        if not isinstance(value, dict) or "ts" not in value or "event" not in value:
            skipped += 1
            continue
        entries.append(value)
    return LedgerReading(entries=entries, skipped=skipped)
