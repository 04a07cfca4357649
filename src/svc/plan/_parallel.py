"""Parsing many record files on two processors: this process from the front, a helper from the back.

A first read of a large plan spends most of its time parsing YAML, one record after another, and Python runs
that on one processor. `parse_many` shares the records with a helper process when there are enough of them to
pay for its start (an interpreter and the parser's imports, about a tenth of a second): this process parses
chunks from the front of the list, the helper from the back, each of its chunks sent back as one frame as soon
as it is parsed; after each of its own chunks this process takes the frames that arrived, and the two meet
wherever their speeds put them (nobody waits for the other, and a slow or late helper only leaves more to this
process). When they meet the helper is killed. The answer is the list `parse_record` would give for each file,
in order, whoever parsed it: a helper that cannot start, dies, stalls or sends anything but its frames is
simply no help.

The helper is a fresh `python -m svc.plan._parallel` (never a fork: a server runs threads, and a forked
command line gained nothing, its pages copied on write by both processes), its input the list in an unlinked
temp file, its frames on its standard output: each a 4-byte length, then msgpack `[first index, [parse, ...]]`.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import IO, TYPE_CHECKING, Any

import msgspec

from svc.layer import write_all
from svc.plan._load import IssueRecord, MilestoneRecord, Parsed, ProjectRecord, RecordKind, parse_record
from svc.plan._model import PlanFinding

if TYPE_CHECKING:
    import subprocess

__all__ = ["SPAWN_MIN", "parse_many"]

#: The fewest records shared with a helper, whose interpreter takes a tenth of a second to start.
SPAWN_MIN = 2_500
#: Records per chunk, on either side.
CHUNK = 32
#: The bytes of a frame's length (big-endian).
_LENGTH = 4
_READ = 1 << 20
_RECORDS: dict[RecordKind, type] = {"project": ProjectRecord, "milestone": MilestoneRecord, "issue": IssueRecord}
_ENCODER = msgspec.msgpack.Encoder()
#: The spawned helper's input: the kind, the project directory, and each file's name and bytes.
_Input = tuple[str, str, list[tuple[str, bytes]]]


_FRAMES: dict[RecordKind, msgspec.msgpack.Decoder[Any]] = {}
_FRAMES_LOCK = threading.Lock()


def _frames(kind: RecordKind) -> msgspec.msgpack.Decoder[Any]:
    """The decoder of a frame of `kind`, made once.

    Under a lock: msgspec must not build a type's information in two threads at once.
    """
    with _FRAMES_LOCK:
        if kind not in _FRAMES:
            record = _RECORDS[kind]
            _FRAMES[kind] = msgspec.msgpack.Decoder(
                tuple[int, list[tuple[record | None, tuple[PlanFinding, ...]]]]  # type: ignore[valid-type]
            )
        return _FRAMES[kind]


def parse_many(kind: RecordKind, files: Sequence[tuple[str, bytes]], base: str, *, helper: bool = True) -> list[Parsed]:
    """`parse_record(kind, name, data, base)` of each `(name, data)`, in order.

    On two processors when there are at least `SPAWN_MIN` and `helper` is true.
    """
    if not helper or len(files) < SPAWN_MIN:
        return [parse_record(kind, name, data, base) for name, data in files]
    with _spawned(kind, files, base) as spawned:
        return _shared(kind, files, base, spawned)


class _Helper:
    """The helper's end of the exchange: the descriptor its frames come from (read without waiting)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = bytearray()
        self.open = True

    def frames(self) -> Iterator[bytes]:
        """The whole frames that have arrived, without waiting; none once the helper failed or ended."""
        while self.open:
            try:
                chunk = os.read(self.fd, _READ)
            except BlockingIOError:
                break
            except OSError:
                chunk = b""
            if not chunk:
                self.open = False
                break
            self.buffer += chunk
        while len(self.buffer) >= _LENGTH:
            size = int.from_bytes(self.buffer[:_LENGTH], "big")
            if len(self.buffer) < _LENGTH + size:
                break
            frame = bytes(self.buffer[_LENGTH : _LENGTH + size])
            del self.buffer[: _LENGTH + size]
            yield frame


def _shared(kind: RecordKind, files: Sequence[tuple[str, bytes]], base: str, helper: _Helper) -> list[Parsed]:
    """Parse from the front, taking the helper's frames from the back, until the two meet."""
    decoder = _frames(kind)
    results: list[Parsed | None] = [None] * len(files)
    front, back = 0, len(files)
    while front < back:
        end = min(front + CHUNK, back)
        for i in range(front, end):
            name, data = files[i]
            results[i] = parse_record(kind, name, data, base)
        front = end
        for frame in helper.frames():
            try:
                first, parses = decoder.decode(frame)
            except msgspec.DecodeError:
                helper.open = False
                break
            if first < 0 or first + len(parses) > len(files) or first + len(parses) < back:
                helper.open = False  # not the next chunk from the back: no help from here on
                break
            for offset, parsed in enumerate(parses):
                results[first + offset] = parsed
            back = min(back, first)
    assert all(parsed is not None for parsed in results)
    return results  # type: ignore[return-value]


def _help(kind: RecordKind, files: Sequence[tuple[str, bytes]], base: str, out: Callable[[bytes], None]) -> None:
    """The helper's work: parse from the back, one frame per chunk, until stopped or done."""
    end = len(files)
    while end > 0:
        first = max(0, end - CHUNK)
        parses = [parse_record(kind, name, data, base) for name, data in files[first:end]]
        frame = _ENCODER.encode((first, parses))
        out(len(frame).to_bytes(_LENGTH, "big") + frame)
        end = first


@contextlib.contextmanager
def _spawned(kind: RecordKind, files: Sequence[tuple[str, bytes]], base: str) -> Iterator[_Helper]:
    """A helper in a fresh interpreter, its input in an unlinked temp file; killed and reaped when the block ends.

    No temp file, no interpreter to run, or one that cannot be started: no help.
    """
    process = _start(kind, files, base) if sys.executable else None
    if process is None or process.stdout is None:
        yield _NoHelper()
        return
    stdout: IO[bytes] = process.stdout
    os.set_blocking(stdout.fileno(), False)
    try:
        yield _Helper(stdout.fileno())
    finally:
        process.kill()
        process.wait()
        stdout.close()


def _start(kind: RecordKind, files: Sequence[tuple[str, bytes]], base: str) -> subprocess.Popen[bytes] | None:
    import subprocess
    import tempfile

    try:
        with tempfile.TemporaryFile() as given:
            given.write(_ENCODER.encode((kind, base, list(files))))
            given.seek(0)
            return subprocess.Popen(
                [sys.executable, "-m", "svc.plan._parallel"],
                stdin=given,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                close_fds=True,
            )
    except OSError:
        return None


class _NoHelper(_Helper):
    """No helper could be started: no frames ever arrive."""

    def __init__(self) -> None:
        super().__init__(-1)
        self.open = False


def _main() -> None:
    """`python -m svc.plan._parallel`: the spawned helper (input on stdin, frames on stdout)."""
    import gc

    gc.disable()
    kind, base, files = msgspec.msgpack.decode(sys.stdin.buffer.read(), type=_Input)
    if kind not in _RECORDS:
        raise SystemExit(2)
    out = sys.stdout.buffer.fileno()
    with contextlib.suppress(BrokenPipeError):
        _help(kind, files, base, lambda frame: write_all(out, frame))


if __name__ == "__main__":
    _main()
