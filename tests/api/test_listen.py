"""The listener: which connections go to an upgrade handler, which to hypercorn, and the bytes already read.

`serve_connections` runs for real on 127.0.0.1 port 0 with a tiny ASGI app and a handler that records the
head it was given.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, MutableMapping
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing
from hypercorn.config import Config
from hypercorn.trio.worker_context import WorkerContext

from svc.api._listen import PrefixedStream, _connection, serve_connections, wants_upgrade

UPGRADE = b"Upgrade: websocket\r\nConnection: Upgrade\r\n"


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (b"", None),
        (b"G", None),
        (b"GET /ev", None),
        (b"GET /events", None),
        (b"GET /events HTTP/1.1\r\nHost: x\r\n", None),
        (b"GET /events HTTP/1.1\r\nHost: x\r\n" + UPGRADE + b"\r\n", True),
        (b"GET /events?execution=x HTTP/1.1\r\n" + UPGRADE + b"\r\n", True),
        (b"GET /events HTTP/1.1\r\nupgrade: WebSocket\r\n\r\n", True),
        (b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n", False),
        (b"GET /events HTTP/1.1\r\nX-Note: upgrade websocket\r\n\r\n", False),
        (b"GET /eventsx HTTP/1.1\r\n" + UPGRADE + b"\r\n", False),
        (b"GET /events/x HTTP/1.1\r\n" + UPGRADE + b"\r\n", False),
        (b"POST /events HTTP/1.1\r\n" + UPGRADE + b"\r\n", False),
        (b"GET /api/v1/live HTTP/1.1\r\n", False),
        (b"PUT", False),
    ],
)
def test_wants_upgrade_decides_as_soon_as_the_bytes_allow(head: bytes, expected: bool | None) -> None:
    assert wants_upgrade(head, b"/events") is expected


async def test_a_prefixed_stream_receives_the_prefix_first_then_the_stream() -> None:
    left, right = trio.testing.memory_stream_pair()
    stream = PrefixedStream(right, b"head")  # type: ignore[arg-type]
    await left.send_all(b"rest")
    assert await stream.receive_some() == b"head"
    assert await stream.receive_some() == b"rest"
    await stream.send_all(b"answer")
    assert await left.receive_some() == b"answer"
    await stream.aclose()


async def asgi(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
    """Answers every HTTP request with its own path; completes the lifespan."""
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    await receive()
    body = scope["path"].encode()
    headers = [(b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@asynccontextmanager
async def listening(heads: list[bytes], *, keep_alive: float = 5.0) -> AsyncIterator[int]:
    """`serve_connections` of `asgi` on 127.0.0.1 port 0, `/events` upgrades recorded in `heads`."""
    config = Config()
    config.keep_alive_timeout = keep_alive
    config.graceful_timeout = 0.5

    async def upgrade(stream: trio.SocketStream, head: bytes) -> None:
        heads.append(head)
        await stream.send_all(b"upgraded")
        await stream.aclose()

    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        await nursery.start(
            functools.partial(
                serve_connections,
                asgi,
                config,
                listeners[0],
                upgrades={b"/events": upgrade},
                shutdown_trigger=stop.wait,
            )
        )
        try:
            yield port
        finally:
            stop.set()


async def exchange(port: int, request: bytes) -> bytes:
    """Send `request`; everything the server sent until it closed (or the end of the first response)."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(request)
        answer = b""
        while data := await stream.receive_some(1 << 16):
            answer += data
            if b"\r\n\r\n" in answer and answer.endswith(request.split(b" ")[1]):
                break
        return answer


@pytest.mark.slow
async def test_an_upgrade_over_a_socket_reaches_its_handler() -> None:
    heads: list[bytes] = []
    request = b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n" + UPGRADE + b"\r\n"
    async with listening(heads) as port:
        assert await exchange(port, request) == b"upgraded"
    assert heads == [request]


@pytest.mark.slow
async def test_every_other_request_reaches_hypercorn_with_nothing_lost() -> None:
    heads: list[bytes] = []
    async with listening(heads) as port:
        answer = await exchange(port, b"GET /api/v1/live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 200")
        assert answer.endswith(b"/api/v1/live")
        plain = await exchange(port, b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        assert plain.startswith(b"HTTP/1.1 200")
        assert plain.endswith(b"/events")
    assert heads == []


async def socket_pair() -> tuple[trio.SocketStream, trio.SocketStream]:
    """Two connected TCP socket streams on 127.0.0.1 (the listener peeks at a real socket)."""
    listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
    async with listener:
        client = await trio.open_tcp_stream("127.0.0.1", listener.socket.getsockname()[1])
        server = await listener.accept()
    return client, server


async def serve_one(stream: trio.SocketStream, heads: list[bytes], served: list[object]) -> None:
    """`_connection` of `stream`; upgrades recorded in `heads`, what hypercorn was handed in `served`."""

    async def upgrade(stream: trio.SocketStream, head: bytes) -> None:
        heads.append(head)
        await stream.aclose()

    class Recording:
        def __init__(self, *args: Any) -> None:
            served.append(args[-1])

        def __await__(self) -> Any:
            return self.run().__await__()

        async def run(self) -> None:
            await trio.lowlevel.checkpoint()

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("svc.api._listen._TCPServer", Recording)
        await _connection(asgi, Config(), WorkerContext(None), {}, {b"/events": upgrade}, stream)


async def test_a_whole_head_in_one_segment_is_peeked_at_and_hypercorn_reads_the_socket_itself() -> None:
    with trio.fail_after(5):
        client, server = await socket_pair()
        heads: list[bytes] = []
        served: list[object] = []
        request = b"GET /api/v1/live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        async with client, server:
            await client.send_all(request)
            await serve_one(server, heads, served)
            assert served == [server]
            # Nothing was taken from the socket: hypercorn receives the whole request.
            assert await server.receive_some(1 << 16) == request
        assert heads == []


async def test_a_head_in_pieces_over_a_socket_is_read_and_handed_on_with_its_bytes() -> None:
    with trio.fail_after(5):
        client, server = await socket_pair()
        heads: list[bytes] = []
        served: list[object] = []
        request = b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        async with client, server, trio.open_nursery() as nursery:
            nursery.start_soon(serve_one, server, heads, served)
            for piece in (request[:5], request[5:20], request[20:]):
                await client.send_all(piece)
                await trio.testing.wait_all_tasks_blocked()
        assert heads == []
        [stream] = served
        assert isinstance(stream, PrefixedStream)
        assert stream.stream is server
        assert await stream.receive_some() == request


async def test_an_upgrade_sent_in_pieces_reaches_its_handler_with_the_whole_head() -> None:
    with trio.fail_after(5):
        client, server = await socket_pair()
        heads: list[bytes] = []
        served: list[object] = []
        request = b"GET /events?execution=x HTTP/1.1\r\nHost: 127.0.0.1\r\n" + UPGRADE + b"\r\n"
        async with client, server, trio.open_nursery() as nursery:
            nursery.start_soon(serve_one, server, heads, served)
            for piece in (request[:3], request[3:9], request[9:40], request[40:]):
                await client.send_all(piece)
                await trio.testing.wait_all_tasks_blocked()
        assert heads == [request]
        assert served == []


async def test_an_upgrade_in_one_segment_is_read_from_the_socket_for_its_handler() -> None:
    with trio.fail_after(5):
        client, server = await socket_pair()
        heads: list[bytes] = []
        served: list[object] = []
        request = b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n" + UPGRADE + b"\r\n"
        async with client, server:
            await client.send_all(request)
            await serve_one(server, heads, served)
        assert heads == [request]
        assert served == []


@pytest.mark.slow
async def test_a_connection_that_sends_nothing_is_closed_after_the_keep_alive_timeout() -> None:
    async with listening([], keep_alive=0.2) as port:
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        async with stream:
            began = trio.current_time()
            assert await stream.receive_some(1 << 16) == b""
            assert 0.15 <= trio.current_time() - began < 2
