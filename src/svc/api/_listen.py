"""Accepting connections on the loopback socket: hypercorn for HTTP, the live channel's upgrades on their own.

The first bytes of each connection are read before anyone answers it. A WebSocket upgrade of `/events`
(as the first request of its connection, which is how browsers and WebSocket clients open one) goes to the
live channel, which writes every frame its subscriber has queued in one `send_all`. Every other connection
is handed, with the bytes already read, to hypercorn's own connection server (`TCPServer`), exactly as
`hypercorn.trio.serve` would: the lifespan, the worker context, the graceful timeout and the shutdown
trigger are the same. An upgrade that arrives later on a keep-alive connection reaches `/events` through
ASGI instead; both paths share one channel.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import trio
from hypercorn.config import Config
from hypercorn.trio.lifespan import Lifespan
from hypercorn.trio.tcp_server import TCPServer
from hypercorn.trio.worker_context import WorkerContext
from hypercorn.typing import ConnectionState
from hypercorn.utils import wrap_app

__all__ = ["PrefixedStream", "UpgradeHandler", "serve_connections", "wants_upgrade"]

_log = logging.getLogger("svc.server")

#: `(stream, head)`: serve a connection whose first bytes (`head`, the whole request head) were read.
UpgradeHandler = Callable[[trio.SocketStream, bytes], Awaitable[None]]
MAX_RECV = 2**16


class PrefixedStream(trio.abc.HalfCloseableStream):
    """A socket stream whose first bytes were already read: they are received again, then the socket's."""

    def __init__(self, stream: trio.SocketStream, prefix: bytes) -> None:
        self.stream = stream
        self._prefix = prefix

    @property
    def socket(self) -> trio.socket.SocketType:
        """The underlying socket (hypercorn reads the peer and local addresses from it)."""
        return self.stream.socket

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        if self._prefix:
            await trio.lowlevel.checkpoint()
            data, self._prefix = self._prefix, b""
            return data
        return await self.stream.receive_some(max_bytes)

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self.stream.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.stream.wait_send_all_might_not_block()

    async def send_eof(self) -> None:
        await self.stream.send_eof()

    async def aclose(self) -> None:
        await self.stream.aclose()


def wants_upgrade(head: bytes, path: bytes) -> bool | None:
    """Whether `head` (the first bytes of a connection) opens a WebSocket on `path`.

    None: not known yet (the request line or the headers are incomplete).
    """
    for prefix in (b"GET " + path + b" ", b"GET " + path + b"?"):
        if prefix.startswith(head[: len(prefix)]) and len(head) < len(prefix):
            return None
        if head.startswith(prefix):
            end = head.find(b"\r\n\r\n")
            if end < 0:
                return None
            lines = head[:end].lower().split(b"\r\n")[1:]
            return any(line.split(b":", 1)[0].strip() == b"upgrade" and b"websocket" in line for line in lines)
    return False


async def serve_connections(
    app: Any,
    config: Config,
    listener: trio.SocketListener,
    *,
    upgrades: dict[bytes, UpgradeHandler],
    shutdown_trigger: Callable[[], Awaitable[None]],
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve `app` (ASGI) on `listener` until `shutdown_trigger` returns; upgrades of `upgrades` paths aside.

    Shutdown, as hypercorn's: stop accepting, mark the worker terminated (idle keep-alive connections
    close), then give open connections `config.graceful_timeout` before they are cancelled.
    """
    wrapped = wrap_app(app, config.wsgi_max_body_size, "asgi")
    lifespan_state: dict[str, Any] = {}
    lifespan = Lifespan(wrapped, config, lifespan_state)
    context = WorkerContext(None)
    async with trio.open_nursery() as lifespan_nursery:
        await lifespan_nursery.start(lifespan.handle_lifespan)
        await lifespan.wait_for_startup()
        async with trio.open_nursery() as connections:
            connection = partial(_connection, wrapped, config, context, lifespan_state, upgrades)
            async with trio.open_nursery() as accepting:
                accepting.start_soon(partial(trio.serve_listeners, connection, [listener], handler_nursery=connections))
                task_status.started()
                await shutdown_trigger()
                accepting.cancel_scope.cancel()
            await context.terminated.set()
            connections.cancel_scope.deadline = trio.current_time() + config.graceful_timeout
        await lifespan.wait_for_shutdown()
        lifespan_nursery.cancel_scope.cancel()


async def _connection(
    app: Any,
    config: Config,
    context: WorkerContext,
    lifespan_state: dict[str, Any],
    upgrades: dict[bytes, UpgradeHandler],
    stream: trio.SocketStream,
) -> None:
    head = await _read_head(stream, config, upgrades)
    if head is None:
        await stream.aclose()
        return
    for path, handler in upgrades.items():
        if wants_upgrade(head, path):
            await handler(stream, head)
            return
    state = ConnectionState(lifespan_state.copy())
    await TCPServer(app, config, context, state, PrefixedStream(stream, head))  # type: ignore[arg-type]


async def _read_head(stream: trio.SocketStream, config: Config, upgrades: dict[bytes, UpgradeHandler]) -> bytes | None:
    """The first bytes of a connection, enough to tell an upgrade of `upgrades` from anything else.

    None when the peer sent nothing within the keep-alive timeout (or closed first). A head that stays
    undecided past that timeout or past hypercorn's incomplete-request bound is handed on as it is.
    """
    head = b""
    with trio.move_on_after(config.keep_alive_timeout):
        while len(head) <= config.h11_max_incomplete_size:
            try:
                chunk = await stream.receive_some(MAX_RECV)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return None
            if not chunk:
                break
            head += chunk
            if all(wants_upgrade(head, path) is not None for path in upgrades):
                break
    return head or None
