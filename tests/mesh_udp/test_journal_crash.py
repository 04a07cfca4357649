"""Journal durability under SIGKILL: what `append` reported synced survives, and no torn line becomes an event.

A writer process (`tests/mesh_udp/_journal_writer.py`) forks one writer per trial; each appends events
through `Journal.prepare`, `JournalStore.append` and `Journal.commit` and prints `synced <trial> <seq>` after
each append returned. The test kills it with SIGKILL after a random number of those lines, then reloads the
journal: every line verifies, the own stream is dense, and every seq reported synced is held.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
import trio

from svc.mesh_udp._events import Event, verify_event
from svc.mesh_udp._journal import Journal, JournalStore
from tests.mesh_udp._journal_writer import REPO, WRITER, writer_stream

ROOT = Path(__file__).resolve().parents[2]
TRIALS = 120
SEED = 20260101


class Lines:
    """Lines read from a byte stream."""

    def __init__(self, stream: trio.abc.ReceiveStream) -> None:
        self.stream = stream
        self.buffer = bytearray()

    async def next(self) -> str:
        while (end := self.buffer.find(b"\n")) < 0:
            chunk = await self.stream.receive_some(65536)
            if not chunk:
                raise EOFError("the writer process ended")
            self.buffer += chunk
        line = bytes(self.buffer[:end])
        del self.buffer[: end + 1]
        return line.decode()


def check_journal(directory: Path, trial: int, synced: list[int]) -> int:
    """Reload the journal of `trial`: every line valid, the stream dense, every synced seq held; its high."""
    store = JournalStore(directory)
    lines = store.load()
    for line in lines:
        event = verify_event(msgspec.json.decode(line), size=len(line), repo=REPO)
        assert isinstance(event, Event), f"trial {trial}: a bad line survived ({event}): {line[:80]!r}"
    if lines:
        assert store.path.read_bytes().endswith(b"\n"), f"trial {trial}: a torn last line"
    stream = writer_stream(trial)
    journal = Journal.open(
        key=WRITER.key,
        public_key=WRITER.public_key,
        stream=stream,
        repo=REPO,
        trusted=lambda pk: True,
        expiry_seconds=30.0,
        store=store,
    )
    tallies = journal.tallies()
    assert (tallies.rejected, tallies.pending) == (0, 0), f"trial {trial}: {journal.rejections()}"
    high = journal.high(stream)
    assert high == len(lines)
    for seq in synced:
        assert journal.find(stream, seq) is not None, f"trial {trial}: seq {seq} was synced and is lost"
    return high


@pytest.mark.slow
async def test_events_reported_synced_survive_sigkill_at_random_moments(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "tests.mesh_udp._journal_writer"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=ROOT,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    lines = Lines(process.stdout)
    writer: int | None = None
    try:
        with trio.fail_after(25):
            for trial in range(TRIALS):
                directory = tmp_path / f"trial-{trial}"
                await process.stdin.send_all(f"run {trial} {directory}\n".encode())
                wanted = rng.randint(0, 8)
                synced: list[int] = []
                while writer is None or len(synced) < wanted:
                    word, number, value = (await lines.next()).split()
                    assert int(number) == trial
                    if word == "pid":
                        writer = int(value)
                    elif word == "synced":
                        synced.append(int(value))
                os.kill(writer, signal.SIGKILL)
                await process.stdin.send_all(f"reap {writer}\n".encode())
                while True:
                    word, pid, value = (await lines.next()).split()
                    if word == "synced":
                        synced.append(int(value))  # written before the kill landed
                        continue
                    assert (word, int(pid), int(value)) == ("reaped", writer, signal.SIGKILL)
                    break
                writer = None
                assert synced == list(range(1, len(synced) + 1))
                assert check_journal(directory, trial, synced) >= len(synced)
            await process.stdin.aclose()
            assert await process.wait() == 0
    finally:
        if writer is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(writer, signal.SIGKILL)
        if process.returncode is None:
            process.kill()
        with trio.CancelScope(shield=True):
            await process.wait()
            await process.stdout.aclose()
