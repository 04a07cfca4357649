"""Journal writers for the crash test: `python -m tests.mesh_udp._journal_writer` (run from the repository root).

Imports once, then forks one writer per command read on stdin, so a test can start and kill a hundred writers
in a few seconds:

- `run <trial> <directory>`: forks a writer that opens the journal in <directory> (key `identity(7)`, stream
  `<node>-cccccccccccccccc-<trial as 16 hex>`) and appends events for ever through `Journal.prepare`,
  `JournalStore.append` and `Journal.commit`, printing `synced <trial> <seq>` once each append returned;
  this process prints `pid <trial> <pid>`.
- `reap <pid>`: waits for that writer to end and prints `reaped <pid> <signal that ended it, or 0>`.

End of input ends the process. Every line is written with one `write` to the shared stdout (a pipe), so lines
of different processes never interleave.
"""

from __future__ import annotations

import os
import random
import sys
import time
import traceback
from pathlib import Path

from svc.mesh_udp._events import sign_beat
from svc.mesh_udp._journal import Journal, JournalStore
from tests.mesh_udp._helpers import identity

WRITER = identity(7)
REPO = "0" * 32


def writer_stream(trial: int) -> str:
    """The stream the writer of `trial` writes."""
    return f"{WRITER.node_id}-{'c' * 16}-{trial:016x}"


def _say(text: str) -> None:
    os.write(1, f"{text}\n".encode())


def _write_forever(trial: int, directory: Path) -> None:
    store = JournalStore(directory)
    journal = Journal.open(
        key=WRITER.key,
        public_key=WRITER.public_key,
        stream=writer_stream(trial),
        repo=REPO,
        trusted=lambda pk: True,
        expiry_seconds=30.0,
        store=store,
    )
    rng = random.Random(trial)
    while True:
        intent = "x" * rng.randrange(0, 513)
        body = {"kind": "session_opened", "info": {"session": f"s{trial}", "client": "crash", "intent": intent}}
        raw = journal.prepare(body, wall=time.time())
        store.append([raw])
        journal.commit(raw)
        _say(f"synced {trial} {raw['seq']}")
        for _ in range(rng.randrange(0, 8)):  # a varying pause, so the kill lands in every phase of an append
            sign_beat(WRITER.key, journal.stream, 0)


def main() -> int:
    """Serve commands until the end of input."""
    for line in sys.stdin.buffer:
        command = line.decode().split()
        if command[:1] == ["run"]:
            trial, directory = int(command[1]), Path(command[2])
            pid = os.fork()
            if pid == 0:
                try:
                    _write_forever(trial, directory)
                except BaseException:
                    traceback.print_exc()
                finally:
                    os._exit(1)
            _say(f"pid {trial} {pid}")
        elif command[:1] == ["reap"]:
            pid = int(command[1])
            _, status = os.waitpid(pid, 0)
            _say(f"reaped {pid} {os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
