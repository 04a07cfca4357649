"""Server subprocesses: start one, read the URL it logs to stderr, and always stop it (SIGTERM, then wait).

A server's stderr goes to a file rather than a pipe, so a chatty server can never block on a full pipe and
its log is there to show when it fails to start.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bench_wire import Origin

__all__ = [
    "ServerProcess",
    "StartError",
    "cpu_seconds",
    "floor_command",
    "running_server",
    "stop_process",
    "svc_command",
]

BENCH_DIR = Path(__file__).resolve().parent
#: The line both svc and the floor log once bound; only loopback URLs are ever accepted.
SERVING = re.compile(rb"serving (http://127\.0\.0\.1:\d+)")
START_TIMEOUT = 30.0
STOP_TIMEOUT = 5.0
_POLL_SECONDS = 0.05
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class StartError(RuntimeError):
    """A server exited, or did not log its URL in time; the message carries its stderr."""


@dataclass(frozen=True, slots=True)
class ServerProcess:
    """A running server: its name, process, origin and stderr log."""

    name: str
    process: subprocess.Popen[bytes]
    origin: Origin
    log: Path

    @property
    def pid(self) -> int:
        """The server's process id."""
        return self.process.pid


def cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system, every thread) the process has used so far; None off Linux."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rpartition(")")[2].split()
    except OSError:
        return None
    # After "pid (comm)": field 3 is fields[0], so utime (14) and stime (15) are fields[11] and fields[12].
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


def svc_command(repo: Path) -> list[str]:
    """`svc --repo REPO serve --port 0`, with the `svc` script of this interpreter's environment."""
    script = Path(sys.executable).parent / "svc"
    launcher = [str(script)] if script.exists() else [sys.executable, "-m", "svc"]
    return [*launcher, "--repo", str(repo), "serve", "--port", "0"]


def floor_command(responses: Path) -> list[str]:
    """The floor server over the recordings in `responses`, on a free port."""
    return [sys.executable, str(BENCH_DIR / "bench_floor.py"), "--responses", str(responses), "--port", "0"]


@contextmanager
def running_server(
    name: str, argv: Sequence[str], *, log_dir: Path, start_timeout: float = START_TIMEOUT
) -> Iterator[ServerProcess]:
    """Start `argv`, yield it once it logs its URL, and stop it on the way out, whatever happens.

    Raises:
        StartError: the server exited or logged no URL within `start_timeout` seconds.
    """
    log = log_dir / f"{name}.stderr.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=sink)
    try:
        origin = _await_url(name, process, log, start_timeout)
        yield ServerProcess(name=name, process=process, origin=origin, log=log)
    except Exception:
        print(f"bench: {name} stderr (last lines):\n{_tail(log)}", file=sys.stderr)
        raise
    finally:
        stop_process(process)


def _await_url(name: str, process: subprocess.Popen[bytes], log: Path, timeout: float) -> Origin:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        match = SERVING.search(log.read_bytes())
        if match is not None:
            return Origin.parse(match.group(1).decode("ascii"))
        if process.poll() is not None:
            raise StartError(f"{name} exited with {process.returncode} before serving:\n{_tail(log)}")
        time.sleep(_POLL_SECONDS)
    raise StartError(f"{name} logged no URL within {timeout:.0f} s:\n{_tail(log)}")


def _tail(log: Path, lines: int = 30) -> str:
    return "\n".join(log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])


def stop_process(process: subprocess.Popen[bytes], *, timeout: float = STOP_TIMEOUT) -> None:
    """SIGTERM the process and wait for it; SIGKILL it if it is still there after `timeout` seconds."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
