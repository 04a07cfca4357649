"""The HTTP projection: request security, the capability routes, and the one error mapping of HTTP.

`SvcApp` is the ASGI application hypercorn serves. Every request first passes the loopback checks (Host,
Origin, body size). Capability routes under `/api/v1/` are answered here directly: decode by the binding
rules, call the executor, send the encoded bytes. Everything else (pages, documents, the live channel)
goes to the Quart app behind it, and unknown paths answer 404 here.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl

import msgspec

from svc._errors import (
    Forbidden,
    InvalidInput,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    SvcError,
)
from svc.registry import Capability, ErrorBody, ErrorDetail
from svc.runtime import Actor, Executor
from svc.surfaces import SERVER_ROUTES

__all__ = ["MAX_BODY", "PAGE_PREFIXES", "SvcApp", "check_request", "error_response", "loopback_host"]

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


def check_request(scope: Scope) -> None:
    """Refuse what a loopback server must not answer: foreign Host (DNS rebinding), foreign Origin.

    Raises:
        Forbidden: the Host is not loopback, or a non-GET request or WebSocket upgrade carries an Origin
            other than `http://<Host>`.
    """
    host = _header(scope, b"host")
    if not loopback_host(host):
        raise Forbidden(f"Host {host!r} is not a loopback name; this server answers 127.0.0.1 and localhost only")
    if scope["type"] == "websocket" or scope.get("method") != "GET":
        origin = _header(scope, b"origin")
        if origin is not None and origin != f"http://{host}":
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
            "headers": [*headers, (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def read_body(scope: Scope, receive: Receive) -> bytes:
    """The request body, refused past `MAX_BODY` (from Content-Length or while streaming).

    Raises:
        PayloadTooLarge: over 1 MiB.
    """
    length = _header(scope, b"content-length")
    if length is not None and length.isdigit() and int(length) > MAX_BODY:
        raise PayloadTooLarge(f"the request body is {length} bytes; the limit is {MAX_BODY} (1 MiB)")
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:
            raise PayloadTooLarge(f"the request body exceeds the limit of {MAX_BODY} bytes (1 MiB)")
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


class SvcApp:
    """The ASGI application: security checks, capability routes, and the page app behind them."""

    def __init__(self, executor: Executor, pages: ASGIApp, *, mounts: dict[str, ASGIApp] | None = None) -> None:
        self.executor = executor
        self.registry = executor.runtime.registry
        self.pages = pages
        self.mounts = dict(mounts or {})
        self._actor = Actor(kind="http")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self.pages(scope, receive, send)
            return
        path: str = scope["path"]
        try:
            check_request(scope)
        except Forbidden as exc:
            if kind == "websocket":
                await _refuse_websocket(send, exc)
            else:
                await send_error(send, exc)
            return
        for prefix, app in self.mounts.items():
            if path == prefix or path.startswith(prefix + "/"):
                await app(scope, receive, send)
                return
        if kind == "http" and path.startswith(API_PREFIX):
            await self._capability(scope, receive, send, path)
        elif path in PAGE_PATHS or path.startswith(PAGE_PREFIXES):
            await self.pages(scope, receive, send)
        elif kind == "websocket":
            await _refuse_websocket(send, NotFound(f"no WebSocket at {path}"))
        else:
            await send_error(send, NotFound(f"no route {path}; see / and /api/v1"))

    async def _capability(self, scope: Scope, receive: Receive, send: Send, path: str) -> None:
        method: str = scope["method"]
        try:
            cap = self._route(method, path)
            self.executor.admit(cap, self._actor)
            if method == "GET":
                params = self.executor.decode_text(cap, _query_items(scope))
            else:
                params = self.executor.decode_json(cap, await read_body(scope, receive))
            body = await self.executor.call(cap, params, actor=self._actor)
        except SvcError as exc:
            await send_error(send, exc)
            return
        await send_bytes(send, 200, _JSON_HEADERS, body)

    def _route(self, method: str, path: str) -> Capability:
        cap = self.registry.by_route.get((method, path))
        if cap is not None:
            return cap
        allowed = self.registry.methods_by_path.get(path)
        if allowed is None:
            raise NotFound(f"no route {path}; see / and /api/v1")
        raise MethodNotAllowed(f"{path} answers {', '.join(allowed)}, not {method}", allow=allowed)


def _query_items(scope: Scope) -> list[tuple[str, str]]:
    raw: bytes = scope.get("query_string", b"")
    if not raw:
        return []
    try:
        text = raw.decode("utf-8")
        return parse_qsl(text, keep_blank_values=True, strict_parsing=True, errors="strict")
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidInput(f"the query string cannot be read: {exc}") from None


async def _refuse_websocket(send: Send, exc: SvcError) -> None:
    status, headers, body = error_response(exc)
    await send({"type": "websocket.http.response.start", "status": status, "headers": headers})
    await send({"type": "websocket.http.response.body", "body": body})
