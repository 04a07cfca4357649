"""`/events`: the live channel of executions, a WebSocket on the same server.

The subscription is the URL: `execution=<id>` (repeatable) and `after=<seq>` (with exactly one execution).
Refusals come before the handshake, as ErrorBody responses. The server never reads client data frames; it
only watches for the disconnect. Each connection has its own bounded queue in the store, so a slow client
never slows the others: it is told `stream.lagged` instead.
"""

from __future__ import annotations

from urllib.parse import parse_qsl

import msgspec
import trio

from svc._errors import InvalidInput, MethodNotAllowed, NotFound, SvcError, Unavailable
from svc.api._http import Receive, Scope, Send, error_response, send_error
from svc.nursery import PROTOCOL_VERSION, Engine, check_execution_id

__all__ = ["EventsChannel"]

_encoder = msgspec.json.Encoder()
_KEYS = frozenset({"execution", "after"})


class _Subscription(msgspec.Struct, frozen=True):
    executions: frozenset[str] | None
    after: int


class EventsChannel:
    """The ASGI application of `/events`."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["path"] != "/events":
            await self._refuse(scope, send, NotFound(f"no route {scope['path']}; see / and /api/v1"))
            return
        if scope["type"] == "http":
            await self._http(scope, send)
            return
        try:
            subscription = self._parse(scope)
            if self.engine.live_channels >= self.engine.limits.max_connections:
                raise Unavailable(f"{self.engine.limits.max_connections} live channels are open; try again later")
            if self.engine.stopping:
                raise Unavailable("the server is stopping")
        except SvcError as exc:
            await self._refuse(scope, send, exc)
            return
        message = await receive()
        if message["type"] != "websocket.connect":
            return
        await send({"type": "websocket.accept"})
        await self._serve(subscription, receive, send)

    async def _http(self, scope: Scope, send: Send) -> None:
        if scope["method"] != "GET":
            await send_error(send, MethodNotAllowed(f"/events answers GET, not {scope['method']}", allow=("GET",)))
            return
        body = _encoder.encode(
            {
                "error": {
                    "code": "upgrade_required",
                    "message": "/events is a WebSocket; open it with an upgrade, or page history with "
                    "GET /api/v1/executions/events",
                }
            }
        )
        headers = [(b"content-type", b"application/json"), (b"upgrade", b"websocket"), (b"connection", b"Upgrade")]
        await send({"type": "http.response.start", "status": 426, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def _refuse(self, scope: Scope, send: Send, exc: SvcError) -> None:
        if scope["type"] == "http":
            await send_error(send, exc)
            return
        status, headers, body = error_response(exc)
        await send({"type": "websocket.http.response.start", "status": status, "headers": headers})
        await send({"type": "websocket.http.response.body", "body": body})

    def _parse(self, scope: Scope) -> _Subscription:
        raw: bytes = scope.get("query_string", b"")
        try:
            items = parse_qsl(raw.decode("utf-8"), keep_blank_values=True, strict_parsing=bool(raw))
        except (UnicodeDecodeError, ValueError):
            raise InvalidInput("the query string cannot be read") from None
        executions: list[str] = []
        after: int | None = None
        for key, value in items:
            if key not in _KEYS:
                raise InvalidInput(f"unknown parameter '{key}' (parameters of /events: after, execution)")
            if key == "execution":
                executions.append(check_execution_id(value))
            elif after is not None:
                raise InvalidInput("parameter 'after' is given more than once")
            elif not value.isdigit():
                raise InvalidInput(f"Expected `int` >= 0 - at `$.after`, got {value!r}")
            else:
                after = int(value)
        if after is not None and len(set(executions)) != 1:
            raise InvalidInput("'after' needs exactly one 'execution'")
        for execution_id in executions:
            if self.engine.store.find(execution_id) is None:
                raise NotFound(f"no execution {execution_id}")
        return _Subscription(executions=frozenset(executions) or None, after=after or 0)

    async def _serve(self, subscription: _Subscription, receive: Receive, send: Send) -> None:
        engine = self.engine
        subscriber, replay, truncated = engine.store.subscribe(subscription.executions, subscription.after)
        engine.live_channels += 1
        try:
            ready: dict[str, object] = {
                "protocol_version": PROTOCOL_VERSION,
                "scope": "all" if subscription.executions is None else "executions",
                "replayed": len(replay),
                "truncated": truncated,
                "heartbeat_seconds": engine.limits.heartbeat_seconds,
            }
            if subscription.executions:
                ready["executions"] = sorted(subscription.executions)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._watch_disconnect, receive, nursery.cancel_scope)
                await send(
                    {
                        "type": "websocket.send",
                        "text": _encoder.encode({"type": "stream.ready", "data": ready}).decode(),
                    }
                )
                for frame in replay:
                    if len(frame) <= engine.limits.max_frame_bytes:
                        await send({"type": "websocket.send", "text": frame})
                while True:
                    for frame in await subscriber.next_frames():
                        await send({"type": "websocket.send", "text": frame})
                    if subscriber.closing is not None:
                        closing = {"type": "stream.closing", "data": {"reason": subscriber.closing}}
                        await send({"type": "websocket.send", "text": _encoder.encode(closing).decode()})
                        await send({"type": "websocket.close", "code": 1001})
                        nursery.cancel_scope.cancel()
                        return
        finally:
            engine.store.unsubscribe(subscriber)
            engine.live_channels -= 1

    @staticmethod
    async def _watch_disconnect(receive: Receive, scope: trio.CancelScope) -> None:
        while True:
            message = await receive()
            if message["type"] == "websocket.disconnect":
                scope.cancel()
                return
