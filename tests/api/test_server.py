"""Serving in process: `bind_loopback` (127.0.0.1 only, port fallback) and `serve_http`'s lifecycle.

Pairs with `src/svc/api/_server.py`. The `svc serve` process itself is in `test_serve_process.py`.
"""

from __future__ import annotations

import functools
import re
import socket
from collections.abc import Iterator
from contextlib import AsyncExitStack
from pathlib import Path

import httpx
import msgspec
import pytest
import trio

from svc.api import bind_loopback, serve_http
from svc.layer import Repository
from svc.registry import Capability, Example, Exposure, HttpExposure, Module, build_registry
from svc.runtime import Context, Executor, Generation, Runtime, Supervisor


@pytest.fixture
def held_port() -> Iterator[int]:
    """A port on 127.0.0.1 some other program is listening on for the test."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        yield holder.getsockname()[1]


def test_port_zero_binds_loopback_only() -> None:
    with bind_loopback(0) as sock:
        host, port = sock.getsockname()
        assert host == "127.0.0.1"
        assert port > 0


def test_the_socket_reuses_addresses_but_never_ports() -> None:
    with bind_loopback(0) as sock:
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR) != 0
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT) == 0


def test_a_taken_port_falls_back_to_a_later_free_one(held_port: int) -> None:
    with bind_loopback(held_port) as sock:
        host, port = sock.getsockname()
        assert host == "127.0.0.1"
        assert held_port < port < held_port + 64


def test_a_free_port_is_bound_as_asked(held_port: int) -> None:
    with bind_loopback(held_port) as first:
        wanted = first.getsockname()[1]
    with bind_loopback(wanted) as sock:
        assert sock.getsockname()[1] == wanted


async def test_serve_http_publishes_its_url_while_it_serves(demo_executor: Executor) -> None:
    shutdown = trio.Event()
    server = demo_executor.runtime.server
    assert server.url is None
    async with trio.open_nursery() as nursery:
        url: str = await nursery.start(functools.partial(serve_http, demo_executor, port=0, shutdown=shutdown))
        assert re.fullmatch(r"http://127\.0\.0\.1:[1-9][0-9]*", url)
        assert server.url == url
        async with httpx.AsyncClient(base_url=url) as http:
            assert (await http.get("/api/v1/demo/probe")).status_code == 200
        shutdown.set()
    assert server.url is None


async def test_serve_http_stops_on_shutdown_with_a_keep_alive_connection_open(demo_executor: Executor) -> None:
    shutdown = trio.Event()
    async with trio.open_nursery() as nursery:
        url: str = await nursery.start(functools.partial(serve_http, demo_executor, port=0, shutdown=shutdown))
        async with httpx.AsyncClient(base_url=url) as http:
            assert (await http.get("/api/v1/demo/probe")).status_code == 200
            shutdown.set()
    # The nursery only closes once serve_http returned, idle connection or not; nothing answers after it.
    async with httpx.AsyncClient(base_url=url) as http:
        with pytest.raises(httpx.ConnectError):
            await http.get("/api/v1/demo/probe")


class Nothing(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """No input."""


async def test_a_request_in_flight_ends_before_serve_http_returns_and_so_before_the_service(tmp_path: Path) -> None:
    """HTTP runs are unscoped (`Supervisor.run`): the server itself must end them before the service closes."""
    cancelled: list[bool] = []
    started = trio.Event()

    async def block(ctx: Context, params: Nothing) -> Nothing:
        started.set()
        try:
            await trio.sleep_forever()
        finally:
            cancelled.append(True)
        return params  # pragma: no cover

    cap = Capability(
        id="slow.block",
        module="slow",
        title="Block",
        description="Waits until cancelled.",
        input=Nothing,
        output=Nothing,
        handler=block,
        examples=(Example(name="plain", input={}),),
        exposure=Exposure(http=HttpExposure(method="GET", path="/api/v1/slow/block")),
    )
    repo = Repository.discover(tmp_path)
    registry = build_registry([Module(id="slow", title="Slow", description="A blocking query.")], [cap])
    runtime = Runtime(registry=registry, repository=repo, generation=Generation(repo, stamp=b""), surface="http")
    shutdown = trio.Event()
    with trio.fail_after(10):
        async with Supervisor.open() as supervisor, AsyncExitStack() as client:
            executor = Executor(runtime, supervisor)
            async with trio.open_nursery() as nursery:
                url: str = await nursery.start(functools.partial(serve_http, executor, port=0, shutdown=shutdown))
                port = int(url.rsplit(":", 1)[1])
                stream = await client.enter_async_context(await trio.open_tcp_stream("127.0.0.1", port))
                await stream.send_all(b"GET /api/v1/slow/block HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                await started.wait()
                assert supervisor.active == 1
                shutdown.set()
            # serve_http has returned: its request was cancelled, and no run is left for the supervisor's close.
            assert cancelled == [True]
            assert supervisor.active == 0
