"""Serving the HTTP app with hypercorn's trio worker on 127.0.0.1 (8741 first, else the next free port)."""

from __future__ import annotations

import errno
import importlib
import logging
import socket
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, cast

import trio
from hypercorn.config import Config

from svc._errors import Internal, Unavailable
from svc.api._events import EventsChannel
from svc.api._http import ASGIApp, HttpLimits, Receive, Scope, Send, SvcApp, send_error
from svc.api._listen import UpgradeHandler, serve_connections
from svc.api._pages import build_pages
from svc.nursery import Engine
from svc.runtime import Executor

if TYPE_CHECKING:
    from svc.api._mcp_http import McpEndpoint

__all__ = ["DEFAULT_PORT", "bind_loopback", "serve_http"]

DEFAULT_PORT = 8741
PORT_ATTEMPTS = 64
GRACE_SECONDS = 1.0
SERVED = frozenset({"api", "openapi", "swagger", "docs", "mcp", "cockpit"})

_log = logging.getLogger("svc.server")


def _mcp_endpoint(executor: Executor) -> McpEndpoint:
    """`/mcp`'s endpoint, its module (and with it the MCP SDK) imported now."""
    module = importlib.import_module("svc.api._mcp_http")
    endpoint: McpEndpoint = module.McpEndpoint(executor)
    return endpoint


class DeferredMcp:
    """`/mcp` whose endpoint is built when the first request asks for it.

    The MCP SDK takes about a second to import: built at the start, it would hold back every route (or, on a
    worker thread beside them, slow the first answers as much). The first request under `/mcp` has `serve` build
    the endpoint on a worker thread and run its session manager until `stop()`; requests wait for it meanwhile,
    and one that arrives after `stop()` is answered 503. A WebSocket upgrade is refused at once (403), as the
    endpoint refuses it. An endpoint that cannot be built (the SDK fails to import) is logged once and `/mcp`
    answers 500 from then on; the rest of the server goes on serving.
    """

    def __init__(self, executor: Executor, build: Callable[[Executor], McpEndpoint] = _mcp_endpoint) -> None:
        self._executor = executor
        self._build = build
        self._endpoint: McpEndpoint | None = None
        self._wanted = trio.Event()
        self._settled = trio.Event()
        self._stopped = False
        self._failure: str | None = None

    async def serve(self) -> None:
        """Once a request asks for it, build the endpoint on a worker thread and run it until `stop()`."""
        try:
            await self._wanted.wait()
            if self._stopped:
                return
            try:
                endpoint = await trio.to_thread.run_sync(self._build, self._executor, abandon_on_cancel=True)
            except Exception as exc:
                self._failure = f"the MCP endpoint could not be built: {type(exc).__name__}: {exc}"
                _log.exception("svc: %s", self._failure)
                return
            if self._stopped:
                return
            self._endpoint = endpoint
            async with trio.open_nursery() as nursery:
                await nursery.start(endpoint.serve)
                self._settled.set()
        finally:
            self._settled.set()

    def stop(self) -> None:
        """End every session and refuse further requests (503); an endpoint not yet built is never built."""
        self._stopped = True
        if self._endpoint is not None:
            self._endpoint.stop()
        self._wanted.set()
        self._settled.set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            # /mcp is Streamable HTTP (POST, GET, DELETE): a WebSocket upgrade is refused (403).
            await send({"type": "websocket.close", "code": 1008})
            return
        self._wanted.set()
        await self._settled.wait()
        if self._endpoint is None:
            failed = self._failure
            await send_error(send, Unavailable("the MCP endpoint is stopping") if failed is None else Internal(failed))
            return
        await self._endpoint(scope, receive, send)


def bind_loopback(port: int = DEFAULT_PORT) -> socket.socket:
    """A listening-ready TCP socket on 127.0.0.1: `port`, else the next free one (0 = any).

    Raises:
        OSError: no port of the range could be bound.
    """
    last: OSError | None = None
    candidates = [0] if port == 0 else range(port, min(port + PORT_ATTEMPTS, 65536))
    for candidate in candidates:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            sock.bind(("127.0.0.1", candidate))
        except OSError as exc:
            sock.close()
            if exc.errno not in (errno.EADDRINUSE, errno.EACCES):
                raise
            last = exc
            continue
        sock.listen(128)
        return sock
    raise OSError(errno.EADDRINUSE, f"no free port in {port}..{port + PORT_ATTEMPTS - 1} on 127.0.0.1") from last


async def serve_http(
    executor: Executor,
    *,
    port: int = DEFAULT_PORT,
    shutdown: trio.Event,
    limits: HttpLimits | None = None,
    announce: bool = True,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve until `shutdown` is set; `task_status.started(url)` once bound (and logged, with `announce`).

    `/mcp` (MCP over Streamable HTTP) is mounted beside the app, its session manager a task of its own, built
    by the first request under `/mcp` (`DeferredMcp`).
    Shutdown ends the MCP sessions first, then closes the live channels (`stream.closing`), stops the
    executions (grace 1 s), and drains open requests for at most one second, the two at once. `limits`
    bound every connection's time (the defaults of `HttpLimits` unless given).
    """
    limits = limits or HttpLimits()
    sock = bind_loopback(port)
    bound = sock.getsockname()[1]
    url = f"http://127.0.0.1:{bound}"
    listener = trio.SocketListener(trio.socket.from_stdlib_socket(sock))
    config = Config()
    config.graceful_timeout = GRACE_SECONDS
    config.keep_alive_timeout = limits.keep_alive_timeout
    config.accesslog = None
    errorlog = logging.getLogger("svc.hypercorn")
    errorlog.setLevel(logging.WARNING)
    config.errorlog = errorlog
    config.include_server_header = False
    engine = executor.components.find(Engine)
    mcp = DeferredMcp(executor)
    mounts: dict[str, ASGIApp] = {"/mcp": mcp}
    upgrades: dict[bytes, UpgradeHandler] = {}
    served = SERVED
    if engine is not None:
        config.websocket_ping_interval = engine.limits.heartbeat_seconds
        channel = EventsChannel(engine)
        mounts["/events"] = channel
        upgrades[b"/events"] = channel.serve_stream
        served = served | {"events"}
    app = SvcApp(executor, cast(ASGIApp, build_pages(executor, served)), mounts=mounts, limits=limits)
    executor.runtime.server.url = url
    drained = trio.Event()

    async def stop() -> None:
        await shutdown.wait()
        mcp.stop()
        if engine is not None:
            engine.close_channels("server shutdown")
            nursery.start_soon(engine.shutdown)
        drained.set()

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(stop)
            await nursery.start(
                partial(serve_connections, app, config, listener, upgrades=upgrades, shutdown_trigger=drained.wait)
            )
            nursery.start_soon(mcp.serve)
            if announce:
                _log.info("svc: serving %s", url)
            task_status.started(url)
    finally:
        executor.runtime.server.url = None
