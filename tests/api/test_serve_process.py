"""`svc serve` as a process: the URL on stderr, nothing on stdout, port fallback, clean stop on signals.

Real subprocesses on 127.0.0.1 with wall-clock bounds, hence `slow`.
"""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
import trio

pytestmark = pytest.mark.slow

SVC = Path(sys.executable).parent / "svc"
SERVING = re.compile(rb"serving (http://127\.0\.0\.1:([0-9]+))")
#: How long the process may take to bind and log its URL.
START_SECONDS = 20
#: How long a signalled server may take to exit.
STOP_SECONDS = 2


@dataclass
class Served:
    """A running `svc serve`: its process, the URL it logged, and what it wrote so far."""

    process: trio.Process
    url: str
    port: int
    stderr: bytearray = field(default_factory=bytearray)
    stdout: bytearray = field(default_factory=bytearray)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def held_port() -> Iterator[int]:
    """A port on 127.0.0.1 another program listens on for the test."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        yield holder.getsockname()[1]


async def _drain(stream: trio.abc.ReceiveStream | None, into: bytearray) -> None:
    assert stream is not None
    while chunk := await stream.receive_some(65536):
        into += chunk


@asynccontextmanager
async def svc_serve(repo: Path, port: int) -> AsyncIterator[Served]:
    """Start `svc --repo REPO serve --port PORT` and wait for the URL it logs; kill it if still running."""
    process = await trio.lowlevel.open_process(
        [str(SVC), "--repo", str(repo), "serve", "--port", str(port)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stderr is not None
    stderr = bytearray()
    try:
        with trio.fail_after(START_SECONDS):
            while (match := SERVING.search(stderr)) is None:
                chunk = await process.stderr.receive_some(65536)
                assert chunk, f"svc serve exited before serving: {bytes(stderr)!r}"
                stderr += chunk
        yield Served(process, match[1].decode(), int(match[2]), stderr)
    finally:
        if process.returncode is None:
            process.kill()
        with trio.CancelScope(shield=True):
            await process.wait()
            for stream in (process.stdout, process.stderr):
                assert stream is not None
                await stream.aclose()


async def stop(served: Served, signum: signal.Signals) -> tuple[int, float]:
    """Signal the server; its exit code and the seconds it took (at most STOP_SECONDS), output drained."""
    started = trio.current_time()
    served.process.send_signal(signum)
    with trio.fail_after(STOP_SECONDS):
        code = await served.process.wait()
    elapsed = trio.current_time() - started
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_drain, served.process.stdout, served.stdout)
        nursery.start_soon(_drain, served.process.stderr, served.stderr)
    return code, elapsed


async def test_serve_binds_the_port_asked_for_and_logs_the_url_on_stderr_only(checkout: Path) -> None:
    port = free_port()
    async with svc_serve(checkout, port) as served:
        assert served.url == f"http://127.0.0.1:{port}"
        async with httpx.AsyncClient(base_url=served.url) as http:
            r = await http.get("/api/v1/live")
            assert r.status_code == 200
            assert r.json()["alive"] is True
        code, _ = await stop(served, signal.SIGTERM)
    assert code == 0, bytes(served.stderr)
    assert bytes(served.stdout) == b""
    assert f"serving http://127.0.0.1:{port}".encode() in served.stderr


async def test_a_taken_port_makes_serve_bind_the_next_free_one_and_log_it(checkout: Path, held_port: int) -> None:
    async with svc_serve(checkout, held_port) as served:
        assert held_port < served.port < held_port + 64
        async with httpx.AsyncClient(base_url=served.url) as http:
            assert (await http.get("/api/v1/live")).status_code == 200
        code, _ = await stop(served, signal.SIGTERM)
    assert code == 0, bytes(served.stderr)
    assert bytes(served.stdout) == b""
    assert f"serving http://127.0.0.1:{served.port}".encode() in served.stderr


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
async def test_a_signal_stops_an_idle_server_with_exit_0(checkout: Path, signum: signal.Signals) -> None:
    async with svc_serve(checkout, free_port()) as served:
        code, elapsed = await stop(served, signum)
    assert code == 0, bytes(served.stderr)
    assert elapsed < STOP_SECONDS
    assert bytes(served.stdout) == b""
    assert b"Traceback" not in served.stderr


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
async def test_a_signal_stops_the_server_despite_an_open_keep_alive_connection(
    checkout: Path, signum: signal.Signals
) -> None:
    async with svc_serve(checkout, free_port()) as served, httpx.AsyncClient(base_url=served.url) as http:
        assert (await http.get("/api/v1/live")).status_code == 200
        # The client keeps its connection open while the server drains.
        code, elapsed = await stop(served, signum)
    assert code == 0, bytes(served.stderr)
    assert elapsed < STOP_SECONDS
    assert bytes(served.stdout) == b""
    assert b"Traceback" not in served.stderr
