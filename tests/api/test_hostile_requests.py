"""Hostile requests: every refusal is an ErrorBody, and no client keeps a connection past its answer or its time.

Real sockets to a real server on 127.0.0.1 port 0 (the builtin registry over `docs_checkout`, with short
limits), bytes written exactly as a hostile client would: heads h11 cannot parse, heads over 16 KiB,
bodies too large or too slow, JSON nested past any depth, HTTP/1.0 and `Connection: close`, idle keep-alive
connections. Then what no socket can reach: an app behind `SvcApp` that raises.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, MutableMapping
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
import trio

from svc.api import MAX_BODY, HttpLimits, SvcApp, serve_http
from svc.capabilities import builtin_registry
from svc.registry import MAX_DEPTH
from svc.runtime import Executor
from svc.surfaces import render_openapi
from tests.api._wire import Chunks, RawResponse, assert_error
from tests.api.conftest import open_executor

pytestmark = pytest.mark.slow

LIMITS = HttpLimits(body_timeout=0.5, keep_alive_timeout=1.0)
#: Routes of every kind: a capability, the pages, the document, the index, Swagger UI, `/mcp`.
ROUTES = ["/api/v1/live", "/", "/docs/", "/openapi.json", "/api/v1", "/swagger", "/mcp"]
#: A capability route with a body and a free-form (`dict[str, Any]`) field, which writes nothing.
POST_ROUTE = "/api/v1/mesh/register"
MCP_HEADERS = b"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"


@pytest.fixture
async def port(docs_checkout: Path, nursery: trio.Nursery) -> AsyncIterator[int]:
    """The port of a real server over `docs_checkout`, bounded by `LIMITS`."""
    async with open_executor(builtin_registry(), docs_checkout) as executor:
        shutdown = trio.Event()
        serve = functools.partial(serve_http, executor, port=0, shutdown=shutdown, limits=LIMITS)
        url: str = await nursery.start(serve)
        try:
            yield int(url.rsplit(":", 1)[1])
        finally:
            shutdown.set()


async def exchange(port: int, data: bytes) -> tuple[RawResponse, float]:
    """Send `data` as it is; the first response, and the seconds until the server closed the connection."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        began = trio.current_time()
        await stream.send_all(data)
        answer = await read_until_closed(stream)
        return parse(answer), trio.current_time() - began


async def read_until_closed(stream: trio.SocketStream) -> bytes:
    """Everything the server sends until it closes the connection (the test's bound is the limit)."""
    answer = b""
    while chunk := await stream.receive_some(1 << 16):
        answer += chunk
    return answer


def parse(answer: bytes) -> RawResponse:
    """The first response of `answer` (framed by Content-Length); header names are lower-case."""
    head, sep, rest = answer.partition(b"\r\n\r\n")
    assert sep, answer[:300]
    lines = head.decode("latin-1").split("\r\n")
    headers = {name.strip().lower(): value.strip() for name, value in (line.split(":", 1) for line in lines[1:])}
    return RawResponse(int(lines[0].split()[1]), headers, rest[: int(headers["content-length"])])


def host(port: int) -> bytes:
    return f"Host: 127.0.0.1:{port}\r\n".encode()


# What h11 cannot parse: answered by the protocol, not by a route, on the first request or a later one.


@pytest.mark.parametrize(
    ("head", "reason"),
    [
        (b"GET /api/v1/live HTTP/1.1\r\n\r\n", "Missing mandatory Host"),
        (b"GET /api/v1/live HTTP/1.1\r\n{host}{host}\r\n", "multiple Host"),
        (b"GET /api/v1/live HTTP/1.1\r\n{host}X-Note: a\x00b\r\n\r\n", "illegal header line"),
        (b"GET /api/v1/live HTTP/1.1\r\n{host}X-\xffNote: a\r\n\r\n", "illegal header line"),
        (b"\xff\xfe /api/v1/live HTTP/1.1\r\n{host}\r\n", "illegal request line"),
        (b"GET /\r\n\r\n", "illegal request line"),
    ],
    ids=["no-host", "two-hosts", "nul-in-header", "0xff-in-header-name", "0xff-in-request-line", "http-0.9"],
)
async def test_a_head_h11_refuses_is_400_error_body_with_its_reason(port: int, head: bytes, reason: str) -> None:
    response, _ = await exchange(port, head.replace(b"{host}", host(port)))
    assert_error(response, 400, "invalid_input", "not valid HTTP/1.1", reason)
    assert response.headers["connection"] == "close"


async def test_a_bad_head_after_a_good_request_on_one_connection_is_an_error_body_too(port: int) -> None:
    good = b"GET /api/v1/live HTTP/1.1\r\n" + host(port) + b"\r\n"
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(good + b"GET /api/v1/live HTTP/1.1\r\n\r\n")
        answer = await read_until_closed(stream)
    first = parse(answer)
    assert first.status_code == 200
    second = parse(answer[answer.index(b"HTTP/1.1", 10) :])
    assert_error(second, 400, "invalid_input", "Missing mandatory Host")


async def test_h11s_reason_is_quoted_at_most_two_hundred_characters(port: int) -> None:
    head = b"GET /api/v1/live HTTP/1.1\r\n" + host(port) + b"X-Note: " + b"a" * 4000 + b"\x00\r\n\r\n"
    response, _ = await exchange(port, head)
    message = assert_error(response, 400, "invalid_input", "illegal header line")
    assert len(message) < 300


@pytest.mark.parametrize(
    "head",
    [
        b"GET /api/v1/live?note=" + b"a" * 65536 + b" HTTP/1.1\r\n{host}\r\n",
        b"GET /api/v1/live HTTP/1.1\r\n{host}X-Note: " + b"a" * 65536 + b"\r\n\r\n",
        b"GET /api/v1/live HTTP/1.1\r\n{host}X-Note: " + b"a" * 20000 + b"\r\n\r\n",
    ],
    ids=["64k-url", "64k-header", "20k-header"],
)
async def test_a_head_over_16_kib_is_431_error_body(port: int, head: bytes) -> None:
    response, _ = await exchange(port, head.replace(b"{host}", host(port)))
    assert_error(response, 431, "headers_too_large", "16384 bytes")


# Bodies: too large on /mcp (the SDK's own refusal is plain text), too slow on any route.


async def test_a_declared_oversized_body_to_mcp_is_413_error_body(port: int) -> None:
    head = b"POST /mcp HTTP/1.1\r\n%s%sContent-Length: %d\r\n\r\n" % (host(port), MCP_HEADERS, 2 * MAX_BODY)
    response, _ = await exchange(port, head)
    assert_error(response, 413, "payload_too_large", str(2 * MAX_BODY), "1 MiB")


async def test_a_streamed_oversized_body_to_mcp_is_413_error_body(port: int) -> None:
    url = f"http://127.0.0.1:{port}/mcp"
    headers = [("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream")]
    async with httpx.AsyncClient() as client:
        request = client.build_request("POST", url, headers=headers, content=Chunks(b"x" * (MAX_BODY + 65536)))
        response = await client.send(request)
    assert "content-length" not in response.request.headers
    assert_error(response, 413, "payload_too_large", "1 MiB")


@pytest.mark.parametrize("path", [POST_ROUTE, "/mcp"])
async def test_a_body_sent_a_byte_at_a_time_is_408_error_body_at_the_body_timeout(port: int, path: str) -> None:
    head = b"POST %s HTTP/1.1\r\n%s%sContent-Length: 1000\r\n\r\n" % (path.encode(), host(port), MCP_HEADERS)
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        began = trio.current_time()
        await stream.send_all(head)
        answer = b""
        # One byte each tenth of a second, until the server answers: each byte comes well within any
        # per-read timeout; only a deadline on the whole body ends this.
        while not answer:
            await stream.send_all(b"{")
            with trio.move_on_after(0.1):
                answer = await stream.receive_some(1 << 16)
        elapsed = trio.current_time() - began
        answer += await read_until_closed(stream)
    assert LIMITS.body_timeout <= elapsed < LIMITS.body_timeout + 2
    assert_error(parse(answer), 408, "request_timeout", "0.5 s")


# JSON nested deeper than anything answers 400, not a RecursionError (500, empty).


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 990, 1000, 100_000])
async def test_json_nested_past_the_limit_is_400_error_body(port: int, depth: int) -> None:
    # The envelope is free-form: msgspec decodes it as deep as the stack allows.
    body = b'{"envelope": {"a": ' + b"[" * (depth - 2) + b"]" * (depth - 2) + b"}}"
    head = b"POST %s HTTP/1.1\r\n%sContent-Length: %d\r\nConnection: close\r\n\r\n" % (
        POST_ROUTE.encode(),
        host(port),
        len(body),
    )
    response, _ = await exchange(port, head + body)
    assert_error(response, 400, "invalid_input", f"more than {MAX_DEPTH} levels deep")


async def test_json_nested_to_the_limit_is_read(port: int) -> None:
    body = b'{"envelope": {"a": ' + b"[" * (MAX_DEPTH - 2) + b"]" * (MAX_DEPTH - 2) + b"}}"
    head = b"POST %s HTTP/1.1\r\n%sContent-Length: %d\r\nConnection: close\r\n\r\n" % (
        POST_ROUTE.encode(),
        host(port),
        len(body),
    )
    response, _ = await exchange(port, head + body)
    assert "levels deep" not in response.content.decode(), response.content


# The connection ends when the request says so (HTTP/1.0, `Connection: close`) or when it idles: every route.


@pytest.mark.parametrize(
    "version_and_header", [b"HTTP/1.0\r\n{host}", b"HTTP/1.1\r\n{host}Connection: close\r\n"], ids=["1.0", "close"]
)
async def test_every_route_closes_the_connection_after_its_answer_when_asked(
    port: int, version_and_header: bytes
) -> None:
    for path in ROUTES:
        request = b"GET " + path.encode() + b" " + version_and_header.replace(b"{host}", host(port)) + b"\r\n"
        response, elapsed = await exchange(port, request)
        assert response.status_code < 500, (path, response.status_code)
        # Well before the keep-alive timeout: the answer itself closed it.
        assert elapsed < LIMITS.keep_alive_timeout / 2, (path, elapsed)


async def test_every_route_closes_an_idle_keep_alive_connection_at_the_keep_alive_timeout(port: int) -> None:
    elapsed: dict[str, float] = {}

    async def idle(path: str) -> None:
        response, elapsed[path] = await exchange(
            port, b"GET " + path.encode() + b" HTTP/1.1\r\n" + host(port) + b"\r\n"
        )
        assert response.status_code < 500, (path, response.status_code)

    async with trio.open_nursery() as nursery:
        for path in ROUTES:
            nursery.start_soon(idle, path)
    for path, seconds in elapsed.items():
        assert LIMITS.keep_alive_timeout * 0.9 <= seconds < LIMITS.keep_alive_timeout + 2, (path, seconds)


# The document lists what the server refuses before a capability runs.


def test_every_operation_lists_the_servers_own_refusals_as_error_bodies() -> None:
    document = render_openapi(builtin_registry())
    error_body = {"$ref": "#/components/schemas/ErrorBody"}
    for item in document["paths"].values():
        for method, op in item.items():
            expected = {"403", "431", "503"} | ({"408", "413"} if method == "post" else set())
            assert expected <= set(op["responses"]), (op["operationId"], sorted(op["responses"]))
            for status in expected:
                assert op["responses"][status]["content"]["application/json"]["schema"] == error_body


# What escapes an app behind SvcApp: an ErrorBody if nothing was answered yet, else nothing more.


class Boom(Exception):
    """An app's own failure."""


async def answer_through(executor: Executor, mount: Any) -> list[MutableMapping[str, Any]]:
    """The ASGI messages `SvcApp` sends for a `GET /boom` that `mount` serves."""
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> MutableMapping[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    async def pages(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("not a page")

    app = SvcApp(executor, pages, mounts={"/boom": mount})
    scope = {"type": "http", "method": "GET", "path": "/boom", "headers": [(b"host", b"127.0.0.1")]}
    await app(scope, receive, send)
    return sent


async def test_an_app_that_raises_before_answering_is_500_error_body(demo_executor: Executor) -> None:
    async def mount(scope: Any, receive: Any, send: Any) -> None:
        async with trio.open_nursery():
            raise Boom("secret detail")

    start, body = await answer_through(demo_executor, mount)
    assert start["status"] == 500
    error = msgspec.json.decode(body["body"])["error"]
    assert error["code"] == "internal"
    assert "correlation id c-" in error["message"]
    assert "secret" not in json.dumps(error)


async def test_an_app_that_raises_after_answering_gets_no_second_answer(demo_executor: Executor) -> None:
    async def mount(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        raise Boom("after the start")

    sent = await answer_through(demo_executor, mount)
    assert [m["type"] for m in sent] == ["http.response.start"]
