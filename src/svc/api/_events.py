"""`/events`: the live channel of executions, and of the `plan` and `mesh` topics, a WebSocket on the same server.

The subscription is the URL: `execution=<id>` (repeatable) and `after=<seq>` (with exactly one execution);
`topic=executions|plan|mesh` (repeatable; without it the channel follows executions alone, as it always did) and
`plan_after=<seq>` / `mesh_after=<seq>`, a topic's replay cursor (`svc.api._topics`).
Refusals come before the handshake, as ErrorBody responses. The server never reads client data frames; it
only watches for the close. Each connection has its own bounded queue in the store, so a slow client never
slows the others or the execution: it is told `stream.lagged` instead.

A connection reaches the channel one of two ways, both served by `run_channel`:

- `serve_stream` (the usual way): the upgrade was the first request of its connection, so the channel owns
  the socket (`wsproto` for the protocol) and writes every frame queued since its last write in one
  `send_all`, pinging a connection that was quiet for `heartbeat_seconds`;
- `EventsChannel.__call__` (ASGI): an upgrade that hypercorn parsed, one `websocket.send` per frame.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Literal, Protocol
from urllib.parse import parse_qsl

import msgspec
import trio
from wsproto import ConnectionType, WSConnection
from wsproto.connection import ConnectionState
from wsproto.events import (
    AcceptConnection,
    CloseConnection,
    Ping,
    Pong,
    RejectConnection,
    RejectData,
    Request,
    TextMessage,
)
from wsproto.utilities import RemoteProtocolError

from svc._errors import InvalidInput, MethodNotAllowed, NotFound, SvcError, Unavailable
from svc.api._http import Receive, Scope, Send, check_request, error_response, send_error
from svc.api._topics import Topics
from svc.nursery import (
    PROTOCOL_VERSION,
    ClosingData,
    Engine,
    StreamClosing,
    check_execution_id,
)
from svc.nursery._topics import TOPICS, StreamReadyTopics, TopicReady, TopicsReadyData
from svc.registry import ErrorBody, ErrorDetail

__all__ = ["EventsChannel", "Subscription", "run_channel"]

_log = logging.getLogger("svc.events")
_encoder = msgspec.json.Encoder()
_KEYS = frozenset({"execution", "after", "topic", "plan_after", "mesh_after"})
_CURSORS = {"plan_after": "plan", "mesh_after": "mesh"}
#: How long a closing connection waits for the client's close frame before it drops the socket.
CLOSE_SECONDS = 1.0
MAX_RECV = 2**16


class Subscription(msgspec.Struct, frozen=True):
    """What a connection follows: every execution (None) or those ids, and the replay cursor.

    `topics` are the topics asked for besides executions (`plan`, `mesh`), `cursors` their replay cursors;
    `follows_executions` is false when `topic=` was given without `executions` and without an execution id.
    """

    executions: frozenset[str] | None
    after: int
    topics: frozenset[str] = frozenset()
    cursors: dict[str, int] = {}
    follows_executions: bool = True


class Transport(Protocol):
    """How the channel writes to one connection."""

    async def send(self, frames: list[str]) -> None:
        """Send these frames, in order."""

    async def ping(self) -> None:
        """Send a ping frame (the connection was quiet)."""

    async def close(self, code: int) -> None:
        """Send the close frame."""


async def run_channel(
    engine: Engine, subscription: Subscription, transport: Transport, topics: Topics | None = None
) -> None:
    """Serve one connection: `stream.ready`, the replay, then live frames until closing.

    Subscribing and taking the replay happen in one step (the store's and each topic log's), and every later
    frame comes from the subscriber's own queue: no gap and no duplicate between history and live. A topic's
    view to diff against is in place before that step (`prepare`), so every change after `stream.ready` is sent.
    """
    asked = [t for t in TOPICS if t in subscription.topics and t != "executions"]
    if asked and topics is None:
        raise Unavailable("this channel serves no topic but executions")
    if topics is not None and "plan" in asked:
        await topics.plan.prepare()
    if topics is not None and "mesh" in asked:
        topics.mesh.prepare()
    followed = subscription.executions if subscription.follows_executions else frozenset[str]()
    subscriber, replay, truncated = engine.store.subscribe(followed, subscription.after)
    heartbeat = engine.limits.heartbeat_seconds
    joined = False
    try:
        ready_topics: list[TopicReady] = []
        executions_replayed = len(replay)
        for topic in asked:
            assert topics is not None
            log = topics.log(topic)
            frames, cut = log.subscribe(subscriber, subscription.cursors.get(topic), engine.limits.max_replay)
            active = topic != "mesh" or topics.mesh.cooperation() is not None
            ready_topics.append(
                TopicReady(
                    topic=topic, last_sequence=log.last_sequence, replayed=len(frames), truncated=cut, active=active
                )
            )
            replay += frames
        if topics is not None and "plan" in asked:
            topics.plan.joined()
            joined = True
        if engine.stopping:
            subscriber.close("server shutdown")
        if not subscription.follows_executions:
            scope: Literal["all", "executions", "none"] = "none"
        else:
            scope = "all" if subscription.executions is None else "executions"
        ready = TopicsReadyData(
            protocol_version=PROTOCOL_VERSION,
            scope=scope,
            replayed=executions_replayed,
            truncated=truncated,
            heartbeat_seconds=heartbeat,
            executions=sorted(subscription.executions) if subscription.executions else None,
            topics=ready_topics or None,
        )
        await transport.send([_encoder.encode(StreamReadyTopics(data=ready)).decode(), *replay])
        while True:
            with trio.move_on_after(heartbeat) as quiet:
                await subscriber.wait()
            if quiet.cancelled_caught:
                await transport.ping()
                continue
            frames = subscriber.take()
            if frames:
                await transport.send(frames)
            if subscriber.closing is not None:
                closing = StreamClosing(data=ClosingData(reason=subscriber.closing))
                await transport.send([_encoder.encode(closing).decode()])
                await transport.close(1001)
                return
    finally:
        engine.store.unsubscribe(subscriber)
        if topics is not None:
            for topic in asked:
                topics.log(topic).unsubscribe(subscriber)
            if joined:
                topics.plan.left()


class EventsChannel:
    """The live channel: the ASGI application of `/events`, and the server of upgraded sockets."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.topics = Topics.of(engine)

    def admit(self, target: str) -> Subscription:
        """The subscription of a connection to `target` (path and query), if it may open now.

        The caller holds the connection's place (`held`) from this step on, so that handshakes in flight
        count against `max_connections` too.

        Raises:
            SvcError: 404 unknown path or execution, 400 bad query, 503 stopping or `max_connections` open.
        """
        path, _, query = target.partition("?")
        if path != "/events":
            raise NotFound(f"no WebSocket at {path}; the live channel is /events")
        subscription = self._parse(query)
        if self.engine.stopping:
            raise Unavailable("the server is stopping")
        if self.engine.live_channels >= self.engine.limits.max_connections:
            raise Unavailable(f"{self.engine.limits.max_connections} live channels are open; try again later")
        return subscription

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Count one open connection (`live_channels`) for the duration of the block."""
        self.engine.live_channels += 1
        try:
            yield
        finally:
            self.engine.live_channels -= 1

    # -- ASGI -------------------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["path"] != "/events":
            await _refuse(scope, send, NotFound(f"no route {scope['path']}; see / and /api/v1"))
            return
        if scope["type"] == "http":
            await self._http(scope, send)
            return
        try:
            query = bytes(scope.get("query_string", b"")).decode("latin-1")
            subscription = self.admit("/events" + (f"?{query}" if query else ""))
        except SvcError as exc:
            await _refuse(scope, send, exc)
            return
        with self.held():
            message = await receive()
            if message["type"] != "websocket.connect":
                return
            await send({"type": "websocket.accept"})
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_watch_disconnect, receive, nursery.cancel_scope)
                await run_channel(self.engine, subscription, _AsgiTransport(send), self.topics)
                nursery.cancel_scope.cancel()

    async def _http(self, scope: Scope, send: Send) -> None:
        if scope["method"] != "GET":
            await send_error(send, MethodNotAllowed(f"/events answers GET, not {scope['method']}", allow=("GET",)))
            return
        body = _encoder.encode(
            ErrorBody(
                error=ErrorDetail(
                    code="upgrade_required",
                    message="/events is a WebSocket; open it with an upgrade, or page history with "
                    "GET /api/v1/executions/events",
                )
            )
        )
        headers = [(b"content-type", b"application/json"), (b"upgrade", b"websocket"), (b"connection", b"Upgrade")]
        await send({"type": "http.response.start", "status": 426, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    # -- an upgraded socket -----------------------------------------------------------------------------

    async def serve_stream(self, stream: trio.SocketStream, head: bytes) -> None:
        """Serve a connection whose first request (`head`, already read) is a WebSocket upgrade of `/events`.

        The checks of every request (loopback Host, same Origin) and the channel's own refusals answer
        before the handshake with an ErrorBody, as over ASGI; so does an upgrade `wsproto` finds malformed.
        """
        ws = WSConnection(ConnectionType.SERVER)
        try:
            try:
                ws.receive_data(head)
                request = next(e for e in ws.events() if isinstance(e, Request))
                headers = [(b"host", request.host.encode("latin-1")), *request.extra_headers]
                check_request({"type": "websocket", "headers": [(k.lower(), v) for k, v in headers]})
                subscription = self.admit(request.target)
            except (RemoteProtocolError, StopIteration) as exc:
                await _reject(stream, ws, InvalidInput(f"not a WebSocket upgrade of /events: {exc}"))
                return
            except SvcError as exc:
                await _reject(stream, ws, exc)
                return
            with self.held():
                await self._serve_socket(stream, ws, subscription)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the client went away before the handshake was answered
        finally:
            with trio.move_on_after(CLOSE_SECONDS, shield=True):
                await stream.aclose()

    async def _serve_socket(self, stream: trio.SocketStream, ws: WSConnection, subscription: Subscription) -> None:
        await stream.send_all(ws.send(AcceptConnection()))
        transport = _SocketTransport(stream, ws)
        async with trio.open_nursery() as nursery:
            channel = trio.CancelScope()
            nursery.start_soon(transport.read, channel)
            with channel, contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                await run_channel(self.engine, subscription, transport, self.topics)  # suppressed: the client went away
            with trio.move_on_after(CLOSE_SECONDS):
                await transport.closed.wait()
            nursery.cancel_scope.cancel()

    # -- the subscription -------------------------------------------------------------------------------

    def _parse(self, query: str) -> Subscription:
        try:
            items = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query), errors="strict")
        except (UnicodeDecodeError, ValueError):
            raise InvalidInput("the query string cannot be read") from None
        executions: list[str] = []
        after: int | None = None
        topics: set[str] = set()
        asked_topics = False
        cursors: dict[str, int] = {}
        for key, value in items:
            if key not in _KEYS:
                raise InvalidInput(f"unknown parameter '{key}' (parameters of /events: {', '.join(sorted(_KEYS))})")
            if key == "execution":
                executions.append(check_execution_id(value))
            elif key == "topic":
                if value not in TOPICS:
                    raise InvalidInput(f"unknown topic {value!r} (topics of /events: {', '.join(TOPICS)})")
                asked_topics = True
                topics.add(value)
            elif key in cursors or (key == "after" and after is not None):
                raise InvalidInput(f"parameter '{key}' is given more than once")
            elif not value.isascii() or not value.isdigit():
                raise InvalidInput(f"Expected `int` >= 0 - at `$.{key}`, got {value!r}")
            elif key == "after":
                after = int(value)
            else:
                cursors[key] = int(value)
        if after is not None and len(set(executions)) != 1:
            raise InvalidInput("'after' needs exactly one 'execution'")
        for key in cursors:
            if _CURSORS[key] not in topics:
                raise InvalidInput(f"'{key}' needs 'topic={_CURSORS[key]}'")
        for execution_id in executions:
            if self.engine.store.find(execution_id) is None:
                raise NotFound(f"no execution {execution_id}")
        return Subscription(
            executions=frozenset(executions) or None,
            after=after or 0,
            topics=frozenset(topics - {"executions"}),
            cursors={_CURSORS[key]: value for key, value in cursors.items()},
            follows_executions=not asked_topics or "executions" in topics or bool(executions),
        )


class _AsgiTransport:
    """Frames as ASGI `websocket.send` messages (hypercorn pings on its own)."""

    def __init__(self, send: Send) -> None:
        self._send = send

    async def send(self, frames: list[str]) -> None:
        for frame in frames:
            await self._send({"type": "websocket.send", "text": frame})

    async def ping(self) -> None:
        await trio.lowlevel.checkpoint()

    async def close(self, code: int) -> None:
        await self._send({"type": "websocket.close", "code": code})


class _SocketTransport:
    """Frames written straight to the socket: everything queued goes out in one write.

    Writes are serialised by one lock and only made while the WebSocket is open, so the reader's pong
    and close reply never interleave with a frame, and nothing follows a close.
    """

    def __init__(self, stream: trio.SocketStream, ws: WSConnection) -> None:
        self._stream = stream
        self._ws = ws
        self._lock = trio.StrictFIFOLock()
        self.closed = trio.Event()

    async def _write(self, event: TextMessage | Ping | Pong | CloseConnection | list[TextMessage]) -> None:
        async with self._lock:
            ws = self._ws
            if ws.state is not ConnectionState.OPEN:
                return
            data = b"".join([ws.send(e) for e in event]) if isinstance(event, list) else ws.send(event)
            await self._stream.send_all(data)

    async def send(self, frames: list[str]) -> None:
        await self._write([TextMessage(data=frame) for frame in frames])

    async def ping(self) -> None:
        await self._write(Ping())

    async def close(self, code: int) -> None:
        await self._write(CloseConnection(code=code))

    async def read(self, channel: trio.CancelScope) -> None:
        """Answer pings and the client's close; end the channel when the client closes or goes away."""
        try:
            while True:
                data = await self._stream.receive_some(MAX_RECV)
                self._ws.receive_data(data or None)
                for event in self._ws.events():
                    if isinstance(event, Ping):
                        await self._write(event.response())
                    elif isinstance(event, CloseConnection):
                        async with self._lock:
                            if self._ws.state is ConnectionState.REMOTE_CLOSING:
                                await self._stream.send_all(self._ws.send(event.response()))
                        return
                if not data:
                    return
        except (trio.BrokenResourceError, trio.ClosedResourceError, RemoteProtocolError):
            return
        finally:
            self.closed.set()
            channel.cancel()


async def _reject(stream: trio.SocketStream, ws: WSConnection, exc: SvcError) -> None:
    """Answer the upgrade with the ErrorBody of `exc` instead of the handshake."""
    status, fields, body = error_response(exc)
    fields = [*fields, (b"content-length", str(len(body)).encode())]
    refusal = ws.send(RejectConnection(status_code=status, headers=fields, has_body=True))
    await stream.send_all(refusal + ws.send(RejectData(data=body)))


async def _refuse(scope: Scope, send: Send, exc: SvcError) -> None:
    if scope["type"] == "http":
        await send_error(send, exc)
        return
    status, headers, body = error_response(exc)
    await send({"type": "websocket.http.response.start", "status": status, "headers": headers})
    await send({"type": "websocket.http.response.body", "body": body})


async def _watch_disconnect(receive: Receive, scope: trio.CancelScope) -> None:
    while True:
        message = await receive()
        if message["type"] == "websocket.disconnect":
            scope.cancel()
            return
