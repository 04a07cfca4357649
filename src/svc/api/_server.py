"""Serving the HTTP app with hypercorn's trio worker on 127.0.0.1 (8741 first, else the next free port)."""

from __future__ import annotations

import errno
import logging
import socket
from functools import partial

import trio
from hypercorn.config import Config

from svc.api._deferred import DeferredMcp, DeferredPages
from svc.api._events import EventsChannel
from svc.api._http import ASGIApp, HttpLimits, SvcApp
from svc.api._listen import UpgradeHandler, serve_connections
from svc.nursery import Engine
from svc.runtime import Executor

__all__ = ["DEFAULT_PORT", "bind_loopback", "serve_http"]

DEFAULT_PORT = 8741
PORT_ATTEMPTS = 64
GRACE_SECONDS = 1.0
SERVED = frozenset({"api", "openapi", "swagger", "docs", "mcp", "cockpit"})

_log = logging.getLogger("svc.server")


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
    by the first request under `/mcp` (`DeferredMcp`); the pages are built by the first request for one
    (`DeferredPages`, run by the server's lifespan).
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
    app = SvcApp(executor, DeferredPages(executor, served), mounts=mounts, limits=limits)
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
