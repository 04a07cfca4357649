"""Throughput: several concurrent keep-alive connections for a fixed time, counting completed requests.

Two load clients, each in its own process so it never shares an interpreter with a server or the harness:

- `wrk` when it is installed (``apt-get install wrk``): one thread, C connections, a tiny Lua `done` hook
  that prints its summary as JSON;
- otherwise this module run as a script: one process, non-blocking raw sockets and a selector, each
  connection sending its next request as soon as the previous response is complete (no pipelining).
"""

from __future__ import annotations

import argparse
import json
import re
import selectors
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from bench_wire import Origin, WireError, build_request, closes, parse_head

__all__ = ["LoadClient", "LoadResult", "choose_client", "main", "run_load", "run_python_load"]

ClientName = Literal["wrk", "python"]
_HEAD_END = b"\r\n\r\n"
_WRK_MARK = "WRK_JSON "
_WRK_DONE = """
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"requests":%d,"duration_us":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}\\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout))
end
"""


@dataclass(frozen=True, slots=True)
class LoadResult:
    """One timed run: requests completed, for how long, and how many failed."""

    requests: int
    seconds: float
    errors: int

    @property
    def rps(self) -> float:
        """Completed requests per second."""
        return self.requests / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True, slots=True)
class LoadClient:
    """Which load client runs, and its settings."""

    name: ClientName
    version: str
    connections: int
    executable: str | None = None

    def describe(self) -> str:
        """A one-line description for the report."""
        return f"{self.version}, {self.connections} connections" + (", 1 thread" if self.name == "wrk" else "")


def choose_client(preference: Literal["auto", "wrk", "python"], connections: int) -> LoadClient:
    """`wrk` when preferred or available, else the Python client.

    Raises:
        FileNotFoundError: `wrk` was asked for and is not on PATH.
    """
    wrk = shutil.which("wrk")
    if preference == "wrk" and wrk is None:
        raise FileNotFoundError("wrk is not installed (apt-get install wrk), use --client python")
    if wrk is not None and preference != "python":
        return LoadClient(name="wrk", version=_wrk_version(wrk), connections=connections, executable=wrk)
    version = f"python-socket (CPython {sys.version.split()[0]}, 1 process)"
    return LoadClient(name="python", version=version, connections=connections)


def _wrk_version(wrk: str) -> str:
    out = subprocess.run([wrk, "-v"], capture_output=True, text=True, check=False)
    match = re.search(r"wrk\s+(\S+)", out.stdout + out.stderr)
    return f"wrk {match.group(1)}" if match else "wrk"


def run_load(client: LoadClient, origin: Origin, target: str, *, duration: int, script_dir: Path) -> LoadResult:
    """Run `client` against `origin` + `target` for `duration` seconds, in its own process."""
    if client.name == "wrk":
        assert client.executable is not None
        return _run_wrk(client, origin, target, duration=duration, script_dir=script_dir)
    argv = [sys.executable, __file__, "--url", origin.url, "--target", target]
    argv += ["--connections", str(client.connections), "--duration", str(duration)]
    out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=duration + 30)
    return LoadResult(**json.loads(out.stdout))


def _run_wrk(client: LoadClient, origin: Origin, target: str, *, duration: int, script_dir: Path) -> LoadResult:
    script = script_dir / "wrk_done.lua"
    if not script.exists():
        script.write_text(_WRK_DONE, encoding="utf-8")
    argv = [str(client.executable), "-t1", f"-c{client.connections}", f"-d{duration}s", "--timeout", "5s"]
    argv += ["-s", str(script), origin.url + target]
    out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=duration + 30)
    line = next((ln for ln in out.stdout.splitlines() if ln.startswith(_WRK_MARK)), None)
    if line is None:
        raise RuntimeError(f"wrk printed no summary:\n{out.stdout}\n{out.stderr}")
    summary = json.loads(line.removeprefix(_WRK_MARK))
    errors = sum(summary[k] for k in ("connect", "read", "write", "status", "timeout"))
    return LoadResult(requests=summary["requests"], seconds=summary["duration_us"] / 1e6, errors=errors)


class _LoadConnection:
    """One non-blocking keep-alive connection of the Python load client, registered in a selector.

    It reconnects when a response says `Connection: close` (hypercorn's `keep_alive_max_requests`).
    """

    def __init__(self, origin: Origin, request: bytes, selector: selectors.BaseSelector) -> None:
        self.origin = origin
        self.request = request
        self.selector = selector
        self.reconnects = 0
        self.sock = self._open()
        self.buffer = b""

    def _open(self) -> socket.socket:
        sock = socket.create_connection((self.origin.host, self.origin.port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        self.selector.register(sock, selectors.EVENT_READ, self)
        return sock

    def close(self) -> None:
        self.selector.unregister(self.sock)
        self.sock.close()

    def send(self) -> None:
        if self.sock.send(self.request) != len(self.request):
            raise WireError("short send of a request (the socket buffer is full)")

    def on_readable(self) -> tuple[int, int]:
        """Read what arrived; return (responses completed, of which not 2xx) and send the next request."""
        chunk = self.sock.recv(65536)
        if not chunk:
            raise WireError("the server closed a load connection")
        self.buffer += chunk
        end = self.buffer.find(_HEAD_END)
        if end < 0:
            return 0, 0
        status, headers, length = parse_head(self.buffer[:end])
        stop = end + len(_HEAD_END) + length
        if len(self.buffer) < stop:
            return 0, 0
        self.buffer = self.buffer[stop:]
        if closes(headers):
            self.close()
            self.sock, self.buffer = self._open(), b""
            self.reconnects += 1
        self.send()
        return 1, int(not 200 <= status < 300)


def run_python_load(origin: Origin, target: str, *, connections: int, duration: float) -> LoadResult:
    """The Python load client, in this process: `connections` keep-alive loops for `duration` seconds."""
    request = build_request(origin, "GET", target)
    completed = failed = 0
    with selectors.DefaultSelector() as selector:
        conns = [_LoadConnection(origin, request, selector) for _ in range(connections)]
        start = time.perf_counter()
        deadline = start + duration
        for conn in conns:
            conn.send()
        while (now := time.perf_counter()) < deadline:
            for key, _ in selector.select(timeout=deadline - now):
                done, bad = key.data.on_readable()
                completed += done
                failed += bad
        elapsed = time.perf_counter() - start
        for conn in conns:
            conn.close()
    return LoadResult(requests=completed, seconds=elapsed, errors=failed)


def main(argv: list[str] | None = None) -> None:
    """Run the Python load client and print its `LoadResult` as JSON."""
    parser = argparse.ArgumentParser(description="Python keep-alive load client (loopback only).")
    parser.add_argument("--url", required=True, help="http://127.0.0.1:<port>")
    parser.add_argument("--target", required=True, help="path and query, e.g. /api/v1/live")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--duration", type=float, default=5.0)
    args = parser.parse_args(argv)
    origin = Origin.parse(args.url)
    result = run_python_load(origin, args.target, connections=args.connections, duration=args.duration)
    print(json.dumps(asdict(result)))


if __name__ == "__main__":
    main()
