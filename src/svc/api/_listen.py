"""Accepting connections on the loopback socket: hypercorn for HTTP, the live channel's upgrades on their own.

The first bytes of each connection are looked at before anyone answers it. A WebSocket upgrade of
`/events` (as the first request of its connection, which is how browsers and WebSocket clients open one)
goes to the live channel, which writes every frame its subscriber has queued in one `send_all`. Every other
connection is handed to hypercorn's own connection server (`TCPServer`), exactly as `hypercorn.trio.serve`
would: the lifespan, the worker context, the graceful timeout and the shutdown trigger are the same.
Clients send a request head in one segment, so the first bytes are peeked at (`MSG_PEEK`) and, when they
are no upgrade, hypercorn reads the socket itself; a head that arrives in pieces, and an upgrade, are read
from the socket, and hypercorn then receives the bytes already read first (`PrefixedStream`). An upgrade
that arrives later on a keep-alive connection reaches `/events` through ASGI instead; both paths share one
channel.

hypercorn speaks HTTP/1.1 here through `ErrorBodyH11`, its own protocol with one change: what h11 refuses
to parse (no Host, two Hosts, a NUL or a bad byte in the head, HTTP/0.9, a head over 16 KiB), which
hypercorn answers with an empty 400 or 431, is answered with an ErrorBody naming h11's reason. It is the one
place that sees every request head of a connection, the first and every keep-alive one after it.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Awaitable, Callable
from functools import partial
from itertools import chain
from typing import Any

import h11
import trio
from hypercorn.config import Config
from hypercorn.protocol import ProtocolWrapper
from hypercorn.protocol.h11 import H11Protocol
from hypercorn.trio.lifespan import Lifespan
from hypercorn.trio.tcp_server import TCPServer
from hypercorn.trio.worker_context import WorkerContext
from hypercorn.typing import ConnectionState
from hypercorn.utils import wrap_app

from svc._errors import HeadersTooLarge, InvalidInput, SvcError
from svc.api._http import error_response

__all__ = ["ErrorBodyH11", "PrefixedStream", "UpgradeHandler", "serve_connections", "wants_upgrade"]

_log = logging.getLogger("svc.server")

#: `(stream, head)`: serve a connection whose first bytes (`head`, the whole request head) were read.
UpgradeHandler = Callable[[trio.SocketStream, bytes], Awaitable[None]]
MAX_RECV = 2**16
#: How much of h11's reason an ErrorBody message quotes (the reason may quote the offending line).
REASON_CHARS = 200


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


class _RecordingConnection(h11.Connection):
    """h11's server connection, keeping the last protocol error it raised (hypercorn passes on its status only).

    It also holds a complete request head to `max_head` bytes: h11 bounds only a head still incomplete, so
    one that arrives whole in a single read could otherwise be as long as that read.
    """

    error: h11.RemoteProtocolError | None = None

    def __init__(self, max_head: int) -> None:
        super().__init__(h11.SERVER, max_incomplete_event_size=max_head)
        self.max_head = max_head

    def next_event(self) -> h11.Event | type[h11.NEED_DATA] | type[h11.PAUSED]:
        try:
            event = super().next_event()
            if isinstance(event, h11.Request) and _head_size(event) > self.max_head:
                raise h11.RemoteProtocolError("request head too long", error_status_hint=HeadersTooLarge.status)
        except h11.RemoteProtocolError as exc:
            self.error = exc
            raise
        return event


def _head_size(request: h11.Request) -> int:
    """The bytes of a request line and its headers, as sent (give or take optional whitespace)."""
    line = len(request.method) + len(request.target) + len(request.http_version) + 8
    return line + sum(len(name) + len(value) + 4 for name, value in request.headers.raw_items())


class ErrorBodyH11(H11Protocol):
    """hypercorn's HTTP/1.1 protocol, answering what h11 cannot parse with an ErrorBody (then closing)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.connection = _RecordingConnection(self.config.h11_max_incomplete_size)

    async def _send_error_response(self, status_code: int) -> None:
        connection = self.connection
        error = connection.error if isinstance(connection, _RecordingConnection) else None
        status, headers, body = error_response(_refusal(status_code, error, self.config.h11_max_incomplete_size))
        framing = [(b"content-length", str(len(body)).encode()), (b"connection", b"close")]
        response_headers = list(chain(headers, framing, self.config.response_headers("h11")))
        await self._send_h11_event(h11.Response(status_code=status, headers=response_headers))
        await self._send_h11_event(h11.Data(data=body))
        await self._send_h11_event(h11.EndOfMessage())


def _refusal(status: int, error: h11.RemoteProtocolError | None, head_limit: int) -> SvcError:
    """What a request h11 refused answers: 431 `headers_too_large`, else 400 `invalid_input` with h11's reason."""
    if status == HeadersTooLarge.status:
        return HeadersTooLarge(f"the request line and headers exceed {head_limit} bytes ({head_limit // 1024} KiB)")
    reason = str(error) if error is not None else "it cannot be parsed"
    if len(reason) > REASON_CHARS:
        reason = reason[:REASON_CHARS] + "…"
    return InvalidInput(f"the request is not valid HTTP/1.1: {reason}")


class _TCPServer(TCPServer):
    """hypercorn's connection server, its HTTP/1.1 protocol an `ErrorBodyH11`.

    `TCPServer.run` builds its `ProtocolWrapper` and assigns it to `protocol` before the first byte is
    handled; the setter swaps the wrapper's plain HTTP/1.1 protocol for `ErrorBodyH11`, built from the same
    arguments (the wrapper keeps them all). HTTP/2 (h2c or prior knowledge) is left as hypercorn has it.
    """

    @property
    def protocol(self) -> ProtocolWrapper:
        return self._wrapper

    @protocol.setter
    def protocol(self, wrapper: ProtocolWrapper) -> None:
        if type(wrapper.protocol) is H11Protocol:
            wrapper.protocol = ErrorBodyH11(
                wrapper.app,
                wrapper.config,
                wrapper.context,
                wrapper.task_group,
                wrapper.state,
                wrapper.ssl,
                wrapper.client,
                wrapper.server,
                wrapper.send,
            )
        self._wrapper = wrapper


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
    deadline = trio.current_time() + config.keep_alive_timeout
    peeked = await _peek_head(stream, deadline)
    if peeked is None:
        await stream.aclose()
        return
    state = ConnectionState(lifespan_state.copy())
    if _upgrade_for(peeked, upgrades) is None:
        # Decided without taking a byte from the socket (a whole head in its first segment, as clients send
        # one): hypercorn reads the socket itself, with no stream in between.
        await _TCPServer(app, config, context, state, stream)  # type: ignore[arg-type]
        return
    head = await _read_head(stream, config, upgrades, deadline)
    if head is None:
        await stream.aclose()
        return
    handler = _upgrade_for(head, upgrades)
    if callable(handler):
        await handler(stream, head)
        return
    await _TCPServer(app, config, context, state, PrefixedStream(stream, head))  # type: ignore[arg-type]


def _upgrade_for(head: bytes, upgrades: dict[bytes, UpgradeHandler]) -> UpgradeHandler | bool | None:
    """The upgrade handler `head` asks for; None: hypercorn's (no upgrade); True: not known from these bytes."""
    undecided = False
    for path, handler in upgrades.items():
        wanted = wants_upgrade(head, path)
        if wanted:
            return handler
        undecided = undecided or wanted is None
    return True if undecided else None


async def _peek_head(stream: trio.SocketStream, deadline: float) -> bytes | None:
    """The first bytes of a connection, left in the socket (`MSG_PEEK`); None when none came by `deadline`."""
    with trio.move_on_at(deadline):
        try:
            return await stream.socket.recv(MAX_RECV, socket.MSG_PEEK) or None
        except OSError:
            return None
    return None


async def _read_head(
    stream: trio.SocketStream, config: Config, upgrades: dict[bytes, UpgradeHandler], deadline: float
) -> bytes | None:
    """The first bytes of a connection, read until they tell an upgrade of `upgrades` from anything else.

    None when the peer sent nothing by `deadline` (the keep-alive timeout after it connected), or closed
    first. A head still undecided at the deadline or past hypercorn's incomplete-request bound is handed on
    as it is.
    """
    head = b""
    with trio.move_on_at(deadline):
        while len(head) <= config.h11_max_incomplete_size:
            try:
                chunk = await stream.receive_some(MAX_RECV)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return None
            if not chunk:
                break
            head += chunk
            if _upgrade_for(head, upgrades) is not True:
                break
    return head or None
