"""Test helpers for the HTTP surface: the ErrorBody assertion and a raw HTTP/1.1 exchange.

httpx normalises request targets (`/docs/../x` leaves as `/x`) and always sends a proper Host, so requests
that must reach the server exactly as written (traversal targets, foreign Hosts on a WebSocket upgrade, a
Content-Length with no body behind it) go through `raw_request`: h11 over a trio TCP stream to 127.0.0.1.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

import h11
import httpx
import trio

__all__ = ["Chunks", "RawResponse", "assert_error", "raw_request", "websocket_upgrade"]

#: The headers of a WebSocket opening handshake (RFC 6455 §4.1), without Host and Origin.
UPGRADE_HEADERS = (
    ("Upgrade", "websocket"),
    ("Connection", "Upgrade"),
    ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
    ("Sec-WebSocket-Version", "13"),
)


class _Response(Protocol):
    @property
    def status_code(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    @property
    def content(self) -> bytes: ...

    def json(self) -> Any: ...


@dataclass(frozen=True, slots=True)
class RawResponse:
    """A complete response read off the wire; header names are lower-case."""

    status_code: int
    headers: dict[str, str]
    content: bytes

    def json(self) -> Any:
        return json.loads(self.content)


def assert_error(response: _Response, status: int, code: str, *fragments: str) -> str:
    """Assert `response` is exactly one ErrorBody of `status`/`code` whose message holds every fragment.

    Returns the message for further checks.
    """
    assert response.status_code == status, (response.status_code, response.content[:300])
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert isinstance(body, dict)
    assert list(body) == ["error"], body
    assert sorted(body["error"]) == ["code", "message"], body
    assert body["error"]["code"] == code, body
    message = body["error"]["message"]
    assert isinstance(message, str)
    assert message
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    return message


async def raw_request(
    url: str,
    target: str,
    *,
    method: str = "GET",
    headers: Sequence[tuple[str, str]] = (),
    body: bytes | None = None,
) -> RawResponse:
    """Send one request with `target` verbatim to the server at `url` and read its answer.

    A `Host` header is added unless `headers` has one. With `body` None and no Content-Length given, the
    request has no body; a Content-Length in `headers` without a body is sent as a bare promise (the
    server must answer from the header alone). A `101 Switching Protocols` answer is returned as is.
    """
    parts = urlsplit(url)
    assert parts.hostname == "127.0.0.1"
    assert parts.port is not None
    names = {name.lower() for name, _ in headers}
    sent = list(headers)
    if "host" not in names:
        sent.insert(0, ("Host", parts.netloc))
    if body is not None and "content-length" not in names:
        sent.append(("Content-Length", str(len(body))))
    if "connection" not in names:
        sent.append(("Connection", "close"))
    conn = h11.Connection(our_role=h11.CLIENT)
    stream = await trio.open_tcp_stream("127.0.0.1", parts.port)
    async with stream:
        await stream.send_all(conn.send(h11.Request(method=method, target=target, headers=sent)))
        if body is not None:
            await stream.send_all(conn.send(h11.Data(data=body)))
            await stream.send_all(conn.send(h11.EndOfMessage()))
        status = 0
        received: dict[str, str] = {}
        chunks: list[bytes] = []
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await stream.receive_some(65536))
            elif isinstance(event, h11.InformationalResponse) and event.status_code == 101:
                return RawResponse(101, _decode_headers(event.headers), b"")
            elif isinstance(event, h11.Response):
                status = event.status_code
                received = _decode_headers(event.headers)
            elif isinstance(event, h11.Data):
                chunks.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                return RawResponse(status, received, b"".join(chunks))


async def websocket_upgrade(url: str, path: str, *, headers: Sequence[tuple[str, str]] = ()) -> RawResponse:
    """Ask the server at `url` to upgrade `path` to a WebSocket; its answer (101 when accepted)."""
    return await raw_request(url, path, headers=[*headers, *UPGRADE_HEADERS])


class Chunks(httpx.AsyncByteStream):
    """A request body streamed in chunks; give it to `httpx.Request(stream=...)` with its framing header.

    Its iterator is a plain object, not an async generator: when the server answers before reading the
    whole body, nothing is left for the garbage collector to finalise (httpx's own wrappers would be).
    """

    def __init__(self, data: bytes, size: int = 64 * 1024) -> None:
        self._data = data
        self._size = size
        self._offset = 0

    def __aiter__(self) -> Chunks:
        return self

    async def __anext__(self) -> bytes:
        if self._offset >= len(self._data):
            raise StopAsyncIteration
        chunk = self._data[self._offset : self._offset + self._size]
        self._offset += self._size
        return chunk


def _decode_headers(headers: Sequence[tuple[bytes, bytes]]) -> dict[str, str]:
    return {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in headers}
