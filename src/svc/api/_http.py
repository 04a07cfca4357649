"""The HTTP projection: request security, the capability routes, and the one error mapping of HTTP.

`SvcApp` is the ASGI application hypercorn serves. Every request first passes the loopback checks (Host,
Origin), and every app behind it reads the request through an `Exchange`: its body bounded in size
(`MAX_BODY`) and time (`HttpLimits.body_timeout`), its sends completed, and whatever an app raises before
answering (a refusal of the exchange, a crash) answered as an ErrorBody here. Capability routes under
`/api/v1/` are answered here directly: decode by the binding rules, call the executor, send the encoded
bytes. Everything else goes to the app mounted at its prefix (`/mcp`, the live channel) or to the page app
behind it (pages, documents; built by the first request for one), and unknown paths answer 404 here.
"""

from __future__ import annotations

import functools
import logging
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl

import msgspec
import trio

from svc._errors import (
    Forbidden,
    Internal,
    InvalidInput,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    RequestTimeout,
    SvcError,
)
from svc.registry import Capability, ErrorBody, ErrorDetail
from svc.runtime import Actor, Executor
from svc.surfaces import SERVER_ROUTES

__all__ = [
    "MAX_BODY",
    "PAGE_PREFIXES",
    "Exchange",
    "HttpLimits",
    "SvcApp",
    "check_request",
    "error_response",
    "loopback_host",
    "refuse_websocket",
    "send_error",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_log = logging.getLogger("svc.http")

MAX_BODY = 1024 * 1024
API_PREFIX = "/api/v1/"
#: Paths the page app serves: every server route but `/mcp` (mounted beside it), exactly (`/docs/` also as
#: `/docs`, which redirects), and the paths below those that have a subtree.
PAGE_PATHS: frozenset[str] = frozenset(r.path.rstrip("/") or "/" for r in SERVER_ROUTES if r.category != "mcp")
PAGE_PREFIXES: tuple[str, ...] = tuple(
    r.path.rstrip("/") + "/" for r in SERVER_ROUTES if r.subtree and r.category != "mcp"
)
_LOOPBACK_NAMES = ("127.0.0.1", "localhost")
_JSON_HEADERS = [(b"content-type", b"application/json"), (b"cache-control", b"no-store")]
_error_encoder = msgspec.json.Encoder()
#: How many distinct Host values `check_request` remembers the verdict of (a client sends the same one).
_HOST_VERDICTS = 64


class HttpLimits(msgspec.Struct, frozen=True, kw_only=True):
    """The time bounds of the HTTP server, in one place: `serve_http` applies them to every connection.

    The sizes are fixed: `MAX_BODY` for a request body, 16 KiB (hypercorn's `h11_max_incomplete_size`) for
    a request line and its headers.
    """

    #: A request's body must be complete this many seconds after its head arrived (else 408).
    body_timeout: float = 10.0
    #: A connection with no request under way is closed after this many seconds: before its first request,
    #: between keep-alive requests, and while a request head is still arriving.
    keep_alive_timeout: float = 5.0


def error_response(exc: SvcError) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """The one translation of an error to HTTP: status, headers, ErrorBody bytes."""
    body = _error_encoder.encode(ErrorBody(error=ErrorDetail(code=exc.code, message=exc.message)))
    headers = list(_JSON_HEADERS)
    if isinstance(exc, MethodNotAllowed) and exc.allow:
        headers.append((b"allow", ", ".join(exc.allow).encode()))
    return exc.status, headers, body


def loopback_host(host: str | None) -> bool:
    """Whether a Host header names loopback: `127.0.0.1[:port]` or `localhost[:port]`."""
    if not host:
        return False
    name, sep, port = host.rpartition(":") if not host.endswith("]") else (host, "", "")
    if not sep:
        name = host
    elif not port.isdigit():
        return False
    return name.lower() in _LOOPBACK_NAMES


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


@functools.lru_cache(maxsize=_HOST_VERDICTS)
def _loopback_host_value(value: bytes) -> bool:
    """`loopback_host` of a raw Host header value, remembered: every request of a client repeats it."""
    return loopback_host(value.decode("latin-1"))


def check_request(scope: Scope) -> None:
    """Refuse what a loopback server must not answer: foreign Host (DNS rebinding), foreign Origin.

    Raises:
        Forbidden: the Host is not loopback, or a non-GET request or WebSocket upgrade carries an Origin
            other than `http://<Host>`.
    """
    raw_host: bytes | None = None
    raw_origin: bytes | None = None
    for key, value in scope.get("headers", ()):
        if key == b"host":
            if raw_host is None:
                raw_host = bytes(value)
        elif key == b"origin" and raw_origin is None:
            raw_origin = bytes(value)
    if raw_host is None or not _loopback_host_value(raw_host):
        host = None if raw_host is None else raw_host.decode("latin-1")
        raise Forbidden(f"Host {host!r} is not a loopback name; this server answers 127.0.0.1 and localhost only")
    if raw_origin is not None and (scope["type"] == "websocket" or scope.get("method") != "GET"):
        host = raw_host.decode("latin-1")
        origin = raw_origin.decode("latin-1")
        if origin != f"http://{host}":
            raise Forbidden(f"Origin {origin!r} is not this server (http://{host})")


async def send_error(send: Send, exc: SvcError) -> None:
    """Answer an HTTP request with the ErrorBody of `exc`."""
    status, headers, body = error_response(exc)
    await send_bytes(send, status, headers, body)


async def send_bytes(send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    """Send a complete HTTP response."""
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [*headers, (b"content-length", b"%d" % len(body))],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def read_body(receive: Receive) -> bytes:
    """The request body, read through the request's `Exchange` (which bounds its size and time).

    Raises:
        PayloadTooLarge: over 1 MiB.
        RequestTimeout: not complete within the body timeout.
    """
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


class Exchange:
    """One HTTP request as every app behind `SvcApp` sees it: its body bounded, its sends completed.

    `receive` refuses a body over `MAX_BODY` (declared by Content-Length, or counted) with `PayloadTooLarge`,
    and a body not complete `body_timeout` after the request arrived with `RequestTimeout`; once the body
    is complete it passes messages through unbounded (the disconnect an app may wait for).

    `send` runs shielded from the app's cancellation. hypercorn finishes a response inside the send of its
    last body: it closes the connection there (`Connection: close`, HTTP/1.0) or recycles it and restarts
    its keep-alive timer, and it tells the app the client is done, on which quart-trio cancels the very task
    that is sending. Unshielded, that cancellation skipped the close and the timer, and the page routes held
    their connections open forever. The send itself is no longer than before: hypercorn already writes to
    the socket shielded.

    `answer` sends a whole response without the shield, for the capability routes `SvcApp` answers itself:
    nothing cancels their task while it sends (a cancellable capability's disconnect watch has ended by
    then), and a shield scope per message is a measurable part of what such a request costs.
    """

    def __init__(self, scope: Scope, receive: Receive, send: Send, limits: HttpLimits) -> None:
        self._receive = receive
        self._send = send
        self._limits = limits
        self._deadline = trio.current_time() + limits.body_timeout
        self._declared = _header(scope, b"content-length")
        self._size = 0
        self._body_done = False
        self.started = False

    async def receive(self) -> Message:
        """The next ASGI message of the request.

        Raises:
            PayloadTooLarge: the body is declared or counted over `MAX_BODY`.
            RequestTimeout: the body is not complete by its deadline.
        """
        if self._body_done:
            return await self._receive()
        if self._declared is not None and self._declared.isdigit() and int(self._declared) > MAX_BODY:
            raise PayloadTooLarge(f"the request body is {self._declared} bytes; the limit is {MAX_BODY} (1 MiB)")
        with trio.move_on_at(self._deadline):
            message = await self._receive()
            if message["type"] != "http.request":
                self._body_done = True
                return message
            self._size += len(message.get("body", b""))
            if self._size > MAX_BODY:
                raise PayloadTooLarge(f"the request body exceeds the limit of {MAX_BODY} bytes (1 MiB)")
            self._body_done = not message.get("more_body", False)
            return message
        raise RequestTimeout(
            f"the request body did not arrive within {self._limits.body_timeout:g} s of the request "
            f"({self._size} bytes received)"
        )

    async def send(self, message: Message) -> None:
        """Send an ASGI message, shielded (see the class)."""
        if message["type"] == "http.response.start":
            self.started = True
        with trio.CancelScope(shield=True):
            await self._send(message)

    async def answer(self, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
        """Send a whole response unshielded: for the capability routes no framework cancels (see the class)."""
        self.started = True
        await self._send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [*headers, (b"content-length", b"%d" % len(body))],
            }
        )
        await self._send({"type": "http.response.body", "body": body})

    async def refuse(self, exc: SvcError) -> None:
        """Answer `exc` as an ErrorBody, unless a response has begun (the connection then closes unfinished)."""
        if self.started:
            _log.warning("a request failed after its response began: %s", exc.message)
            return
        await send_error(self.send, exc)


class SvcApp:
    """The ASGI application: security checks, capability routes, and the page app behind them."""

    def __init__(
        self,
        executor: Executor,
        pages: ASGIApp,
        *,
        mounts: dict[str, ASGIApp] | None = None,
        limits: HttpLimits | None = None,
    ) -> None:
        self.executor = executor
        self.registry = executor.runtime.registry
        self.pages = pages
        self.mounts = dict(mounts or {})
        if any(prefix.startswith(API_PREFIX.rstrip("/")) for prefix in self.mounts):
            raise ValueError(f"a mount under {API_PREFIX} would never be reached: the capability routes answer there")
        self.limits = limits or HttpLimits()
        self._actor = Actor(kind="http")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._dispatch(scope, receive, send)
            return
        exchange = Exchange(scope, receive, send, self.limits)
        try:
            if scope["path"].startswith(API_PREFIX):
                await self._capability(scope, exchange)
            else:
                await self._dispatch(scope, exchange.receive, exchange.send)
        except* SvcError as group:
            await exchange.refuse(_first(group))
        except* Exception as group:
            # Whatever escapes an app before it answered (hypercorn would send an empty 500).
            correlation = "c-" + secrets.token_hex(4)
            _log.error("%s %s failed (correlation id %s)", scope["method"], scope["path"], correlation, exc_info=group)
            await exchange.refuse(Internal(f"internal error (correlation id {correlation})"))

    async def _dispatch(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check a request that is no HTTP request under `/api/v1/`, and route it."""
        kind = scope["type"]
        if kind == "lifespan":
            await self.pages(scope, receive, send)
            return
        path: str = scope["path"]
        try:
            check_request(scope)
        except Forbidden as exc:
            if kind == "websocket":
                await refuse_websocket(send, exc)
            else:
                await send_error(send, exc)
            return
        for prefix, app in self.mounts.items():
            if path == prefix or path.startswith(prefix + "/"):
                await app(scope, receive, send)
                return
        if path in PAGE_PATHS or path.startswith(PAGE_PREFIXES):
            await self.pages(scope, receive, send)
        elif kind == "websocket":
            await refuse_websocket(send, NotFound(f"no WebSocket at {path}"))
        else:
            await send_error(send, NotFound(f"no route {path}; see / and /api/v1"))

    async def _capability(self, scope: Scope, exchange: Exchange) -> None:
        """Answer an HTTP request under `/api/v1/`: check it, decode it, call the executor, send the answer.

        One frame between the server and the executor, and the answer sent in one call: every level a
        request's task passes through is passed again at each of its suspensions.
        """
        method: str = scope["method"]
        receive = exchange.receive
        try:
            check_request(scope)
            cap = self._route(method, scope["path"])
            self.executor.admit(cap, self._actor)
            if method == "GET":
                params = self.executor.decode_text(cap, _query_items(scope))
            else:
                params = self.executor.decode_json(cap, await read_body(receive))
            # Unscoped: the server ends its requests before the service ends (`Supervisor.run`).
            executor, actor = self.executor, self._actor
            if cap.cancellable:
                # A cancellable capability may run long: it ends with its client (hypercorn does not cancel
                # a request whose client left). Others answer at once and skip the watch's task.
                body = await _while_connected(receive, lambda: executor.call(cap, params, actor=actor, scoped=False))
            else:
                body = await executor.call(cap, params, actor=actor, scoped=False)
        except SvcError as exc:
            await exchange.answer(*error_response(exc))
            return
        if body is not None:
            await exchange.answer(200, _JSON_HEADERS, body)

    def _route(self, method: str, path: str) -> Capability:
        cap = self.registry.by_route.get((method, path))
        if cap is not None:
            return cap
        allowed = self.registry.methods_by_path.get(path)
        if allowed is None:
            raise NotFound(f"no route {path}; see / and /api/v1")
        raise MethodNotAllowed(f"{path} answers {', '.join(allowed)}, not {method}", allow=allowed)


async def _while_connected(receive: Receive, call: Callable[[], Awaitable[bytes]]) -> bytes | None:
    """`call()`, cancelled when the client disconnects first (None then: nobody is left to answer).

    The request body is read by then, so the next message is the disconnect; a long query (a direct
    `executions.demonstrate` of many steps) ends with its client instead of running on unseen. A GET's body
    is not read before: what `receive` refuses of it (413, 408) ends the call as that refusal.

    Raises:
        SvcError: what `call` raised.
    """
    answer: list[bytes] = []
    failure: list[SvcError] = []
    async with trio.open_nursery() as nursery:

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            nursery.cancel_scope.cancel()

        nursery.start_soon(watch)
        try:
            answer.append(await call())
        except SvcError as exc:
            failure.append(exc)
        nursery.cancel_scope.cancel()
    if failure:
        raise failure[0]
    return answer[0] if answer else None


def _first(group: BaseExceptionGroup[SvcError]) -> SvcError:
    """The first SvcError of a (possibly nested) group."""
    found: SvcError | BaseExceptionGroup[SvcError] = group.exceptions[0]
    while isinstance(found, BaseExceptionGroup):
        found = found.exceptions[0]
    return found


def _query_items(scope: Scope) -> list[tuple[str, str]]:
    raw: bytes = scope.get("query_string", b"")
    if not raw:
        return []
    try:
        text = raw.decode("utf-8")
        return parse_qsl(text, keep_blank_values=True, strict_parsing=True, errors="strict")
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidInput(f"the query string cannot be read: {exc}") from None


async def refuse_websocket(send: Send, exc: SvcError) -> None:
    """Refuse a WebSocket handshake with the ErrorBody of `exc` (the denial response extension)."""
    status, headers, body = error_response(exc)
    await send({"type": "websocket.http.response.start", "status": status, "headers": headers})
    await send({"type": "websocket.http.response.body", "body": body})
