"""A real `svc serve` process over a disposable checkout, for the browser tests.

The checkout carries svc's own `.ai/` layer, its `docs/` (so `/docs/` serves) and its README, in a Git
repository of one commit. The server's URL is read from its stderr line `svc: serving http://127.0.0.1:PORT`;
a thread drains stderr for the whole life of the process (so a chatty server never blocks on a full pipe) and
keeps it for the failure messages and the final check.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import ROOT, make_checkout

#: The line `svc serve` logs once it listens.
SERVING = re.compile(rb"serving (http://127\.0\.0\.1:[0-9]+)")
#: How long the process may take to bind and log its URL.
START_SECONDS = 30.0
#: How long a signalled server may take to exit before it is killed.
STOP_SECONDS = 5.0


def browser_checkout(path: Path) -> Path:
    """A Git checkout at `path` with svc's `.ai/` layer, `docs/` and README (one commit)."""
    path.mkdir(parents=True)
    shutil.copytree(ROOT / "docs", path / "docs")
    shutil.copy2(ROOT / "README.md", path / "README.md")
    return make_checkout(path)


@dataclass
class Served:
    """A running `svc serve`: its process, the checkout it serves, its URL, and what it wrote on stderr."""

    process: subprocess.Popen[bytes]
    root: Path
    url: str = ""
    stderr: bytearray = field(default_factory=bytearray)
    _listening: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def log(self) -> str:
        """What the server wrote on stderr so far."""
        with self._lock:
            return bytes(self.stderr).decode(errors="replace")

    def _drain(self) -> None:
        stream = self.process.stderr
        assert stream is not None
        while chunk := os.read(stream.fileno(), 65536):
            with self._lock:
                self.stderr += chunk
                found = SERVING.search(self.stderr)
            if found and not self._listening.is_set():
                self.url = found[1].decode()
                self._listening.set()
        self._listening.set()  # EOF: the process ended; `url` stays empty


@contextmanager
def svc_serve(root: Path) -> Iterator[Served]:
    """Run `python -m svc --repo ROOT serve --port 0` for the block; stop it with SIGTERM (killed if it hangs).

    Raises:
        RuntimeError: the server did not log its URL within START_SECONDS, or exited first.
    """
    # A crash of the server shows its Python stacks in the log the final check prints.
    env = {**os.environ, "SVC_NO_COMMIT": "1", "PYTHONFAULTHANDLER": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "svc", "--repo", str(root), "serve", "--port", "0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        cwd=root,
    )
    served = Served(process=process, root=root)
    drain = threading.Thread(target=served._drain, name="svc-serve-stderr", daemon=True)
    drain.start()
    try:
        if not served._listening.wait(START_SECONDS) or not served.url:
            raise RuntimeError(f"svc serve did not log its URL within {START_SECONDS} s:\n{served.log()}")
        yield served
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=STOP_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=STOP_SECONDS)
        drain.join(timeout=STOP_SECONDS)
        assert process.stderr is not None
        process.stderr.close()
