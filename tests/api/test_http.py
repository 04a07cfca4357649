"""The HTTP projection against a real server on 127.0.0.1: binding rules, error mapping, request security.

Pairs with `src/svc/api/_http.py`. The tests speak to the demo registry of `conftest.py`, whose inputs cover
every scalar kind; the builtin operations are in `test_builtin_routes.py`.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
import trio_websocket

from svc.api import MAX_BODY
from tests.api._wire import Chunks, assert_error, raw_request, websocket_upgrade
from tests.api.conftest import RAISED, SECRET, HandlerRuns, Probe

PROBE = "/api/v1/demo/probe"
ECHO = "/api/v1/demo/echo"
WRITE = "/api/v1/demo/write"
DEFAULTS = {"count": 0, "ratio": 1.0, "flag": False, "mode": "fast", "note": None}


def port_of(url: str) -> int:
    port = urlsplit(url).port
    assert port is not None
    return port


def json_body(size: int) -> bytes:
    """A JSON object for `demo.echo` that is exactly `size` bytes long."""
    shell = b'{"text": ""}'
    body = b'{"text": "' + b"a" * (size - len(shell)) + b'"}'
    assert len(body) == size
    return body


async def send_streamed(
    client: httpx.AsyncClient, url: str, body: bytes, *, framing: tuple[str, str] = ("Transfer-Encoding", "chunked")
) -> httpx.Response:
    """POST `body` in 64 KiB chunks, framed chunked (no Content-Length) unless told otherwise."""
    host = urlsplit(url).netloc
    request = httpx.Request("POST", url, headers=[("Host", host), framing], stream=Chunks(body))
    response = await client.send(request)
    sent = {name.lower() for name in response.request.headers}
    assert ({"content-length", "transfer-encoding"} & sent) == {framing[0].lower()}
    return response


# Rule 1: GET query parameters are coerced by the schema type of the property.


async def test_query_parameters_are_parsed_by_schema_type(
    demo_client: httpx.AsyncClient, handler_runs: HandlerRuns
) -> None:
    r = await demo_client.get(PROBE, params={"count": "42", "ratio": "2.5", "flag": "true", "mode": "slow"})
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json"
    assert r.json() == {"count": 42, "ratio": 2.5, "flag": True, "mode": "slow", "note": None}
    assert handler_runs.calls == [("demo.probe", Probe(count=42, ratio=2.5, flag=True, mode="slow"))]


async def test_absent_query_parameters_take_their_defaults(demo_client: httpx.AsyncClient) -> None:
    r = await demo_client.get(PROBE)
    assert r.status_code == 200
    assert r.json() == DEFAULTS


@pytest.mark.parametrize(
    ("name", "text", "value"),
    [
        ("count", "-7", -7),
        ("count", "+3", 3),
        ("count", "0", 0),
        ("ratio", "3", 3.0),
        ("ratio", "-0.25", -0.25),
        ("ratio", "1e-3", 0.001),
        ("flag", "false", False),
        ("flag", "true", True),
        ("note", "42", "42"),
        ("note", "true", "true"),
        ("note", "", ""),
        ("note", "a b&c=d", "a b&c=d"),
    ],
)
async def test_each_scalar_kind_is_read_from_text(
    demo_client: httpx.AsyncClient, name: str, text: str, value: Any
) -> None:
    r = await demo_client.get(PROBE, params={name: text})
    assert r.status_code == 200, r.json()
    answer = r.json()
    assert answer == {**DEFAULTS, name: value}
    assert type(answer[name]) is type(value)


@pytest.mark.parametrize(
    ("name", "text", "fragments"),
    [
        ("count", "abc", ("`int`", "$.count", "'abc'")),
        ("count", "1.5", ("`int`", "$.count", "'1.5'")),
        ("count", "", ("`int`", "$.count")),
        ("count", "0x10", ("`int`", "$.count")),
        ("ratio", "fast", ("`number`", "$.ratio", "'fast'")),
        ("ratio", "", ("`number`", "$.ratio")),
        ("flag", "yes", ("`bool`", "$.flag", "'yes'")),
        ("flag", "1", ("`bool`", "$.flag")),
        ("flag", "True", ("`bool`", "$.flag")),
        ("mode", "medium", ("$.mode", "'medium'")),
    ],
)
async def test_a_query_parameter_of_the_wrong_type_is_invalid_input(
    demo_client: httpx.AsyncClient, handler_runs: HandlerRuns, name: str, text: str, fragments: tuple[str, ...]
) -> None:
    r = await demo_client.get(PROBE, params={name: text})
    assert_error(r, 400, "invalid_input", *fragments)
    assert handler_runs.calls == []


@pytest.mark.parametrize("text", ["nan", "inf", "-Infinity", "1_000"])
async def test_a_number_parameter_accepts_only_json_numbers(
    demo_client: httpx.AsyncClient, handler_runs: HandlerRuns, text: str
) -> None:
    # A JSON Schema `number` has no NaN, no infinities and no digit separators; the POST body (JSON)
    # refuses them, so the query string must too.
    r = await demo_client.get(PROBE, params={"ratio": text})
    assert_error(r, 400, "invalid_input", "$.ratio")
    assert handler_runs.calls == []


@pytest.mark.parametrize(
    ("query", "repeated"),
    [
        ("count=1&count=2", "count"),
        ("count=1&count=1", "count"),
        ("note=a&note=b", "note"),
        ("flag=true&mode=slow&flag=false", "flag"),
    ],
)
async def test_a_repeated_query_parameter_is_invalid_input(
    demo_client: httpx.AsyncClient, handler_runs: HandlerRuns, query: str, repeated: str
) -> None:
    r = await demo_client.get(f"{PROBE}?{query}")
    assert_error(r, 400, "invalid_input", f"'{repeated}'", "more than once")
    assert handler_runs.calls == []


async def test_an_unreadable_query_string_is_invalid_input(demo_client: httpx.AsyncClient) -> None:
    r = await demo_client.get(f"{PROBE}?count")
    assert_error(r, 400, "invalid_input", "query string", "count")


# Rule 2: the POST input is one JSON object; no body means {}.


async def test_a_json_object_body_is_the_input(demo_client: httpx.AsyncClient, handler_runs: HandlerRuns) -> None:
    r = await demo_client.post(ECHO, json={"text": "hello", "tags": ["a", "b"], "size": 3})
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json"
    assert r.json() == {"text": "hello", "tags": ["a", "b"], "size": 3}
    assert handler_runs.ids() == ["demo.echo"]


async def test_no_body_is_the_empty_object(demo_client: httpx.AsyncClient) -> None:
    r = await demo_client.post(ECHO, content=b"")
    assert r.status_code == 200
    assert r.json() == {"text": "", "tags": [], "size": 0}


@pytest.mark.parametrize("body", [b" ", b"\r\n\t "])
async def test_a_whitespace_body_is_not_json(demo_client: httpx.AsyncClient, body: bytes) -> None:
    r = await demo_client.post(ECHO, content=body)
    assert_error(r, 400, "invalid_input", "not valid JSON")


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (b"[]", "must be a JSON object"),
        (b'[{"text": "x"}]', "must be a JSON object"),
        (b'"text"', "must be a JSON object"),
        (b"42", "must be a JSON object"),
        (b"null", "must be a JSON object"),
        (b"true", "must be a JSON object"),
        (b'{"text": ', "not valid JSON"),
        (b"{text: 'x'}", "not valid JSON"),
        (b'{"text": "x"} {}', "not valid JSON"),
        (b'{"text": "\xff"}', "not valid JSON"),
    ],
)
async def test_a_body_that_is_not_one_json_object_is_invalid_input(
    demo_client: httpx.AsyncClient, handler_runs: HandlerRuns, body: bytes, fragment: str
) -> None:
    r = await demo_client.post(ECHO, content=body, headers={"content-type": "application/json"})
    assert_error(r, 400, "invalid_input", fragment)
    assert handler_runs.calls == []


async def test_a_body_field_is_not_coerced_from_text(demo_client: httpx.AsyncClient) -> None:
    r = await demo_client.post(ECHO, json={"size": "3"})
    assert_error(r, 400, "invalid_input", "Expected `int`, got `str`", "$.size")


# Rule 3: an unknown parameter or field is invalid input, never ignored.


@pytest.mark.parametrize(
    ("query", "unknown"),
    [("colour=red", "colour"), ("count=1&colour=red", "colour"), ("Count=1", "Count"), ("count%20=1", "count ")],
)
async def test_an_unknown_query_parameter_is_invalid_input(
    demo_client: httpx.AsyncClient, handler_runs: HandlerRuns, query: str, unknown: str
) -> None:
    r = await demo_client.get(f"{PROBE}?{query}")
    message = assert_error(r, 400, "invalid_input", f"'{unknown}'", "unknown parameter")
    assert "count, flag, mode, note, ratio" in message
    assert handler_runs.calls == []


@pytest.mark.parametrize("body", [{"colour": "red"}, {"text": "x", "colour": "red"}, {"Text": "x"}])
async def test_an_unknown_body_field_is_invalid_input(
    demo_client: httpx.AsyncClient, handler_runs: HandlerRuns, body: dict[str, str]
) -> None:
    unknown = next(name for name in body if name not in ("text", "tags", "size"))
    r = await demo_client.post(ECHO, json=body)
    assert_error(r, 400, "invalid_input", f"`{unknown}`", "unknown field")
    assert handler_runs.calls == []


# Rule 4: a path under another method answers 405 with Allow; an unknown path 404.


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("POST", PROBE, "GET"),
        ("PUT", PROBE, "GET"),
        ("DELETE", PROBE, "GET"),
        ("GET", ECHO, "POST"),
        ("PATCH", ECHO, "POST"),
        ("GET", WRITE, "POST"),
    ],
)
async def test_a_capability_path_under_another_method_is_405_with_allow(
    demo_client: httpx.AsyncClient, handler_runs: HandlerRuns, method: str, path: str, allow: str
) -> None:
    r = await demo_client.request(method, path)
    assert_error(r, 405, "method_not_allowed", path, allow, method)
    assert r.headers["allow"] == allow
    assert handler_runs.calls == []


@pytest.mark.parametrize(
    "path",
    ["/nowhere", "/api/v1/nowhere", "/api/v1/demo", "/api/v1/demo/probe/", "/api/v1/", "/api", "/api/v2/live"],
)
@pytest.mark.parametrize("method", ["GET", "POST"])
async def test_an_unknown_path_is_404_naming_the_home_and_the_reference(
    demo_client: httpx.AsyncClient, method: str, path: str
) -> None:
    r = await demo_client.request(method, path)
    message = assert_error(r, 404, "not_found", path, "/api/v1")
    assert re.search(r"(^|\s)/(\s|,|$)", message), message


@pytest.mark.parametrize("path", ["/", "/api/v1", "/openapi.json", "/swagger", "/swagger/assets/swagger-ui.css"])
@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE"])
async def test_a_page_under_another_method_is_405_error_body(
    demo_client: httpx.AsyncClient, method: str, path: str
) -> None:
    r = await demo_client.request(method, path, content=b"{}")
    assert_error(r, 405, "method_not_allowed", path, method)
    assert "GET" in r.headers["allow"].split(", ")


# 413: a body over 1 MiB, declared or streamed.


async def test_a_body_of_exactly_one_mib_is_read(demo_client: httpx.AsyncClient) -> None:
    r = await demo_client.post(ECHO, content=json_body(MAX_BODY))
    assert r.status_code == 200
    assert len(r.json()["text"]) == MAX_BODY - len(b'{"text": ""}')


async def test_a_body_one_byte_over_one_mib_is_413(
    demo_client: httpx.AsyncClient, demo_server: str, handler_runs: HandlerRuns
) -> None:
    assert MAX_BODY == 1024 * 1024
    body = json_body(MAX_BODY + 1)
    r = await send_streamed(demo_client, demo_server + ECHO, body, framing=("Content-Length", str(len(body))))
    assert_error(r, 413, "payload_too_large", str(MAX_BODY + 1), "1 MiB")
    assert handler_runs.calls == []


async def test_a_declared_length_over_one_mib_is_413_before_the_body_arrives(
    demo_server: str, handler_runs: HandlerRuns
) -> None:
    # Only the headers are sent: the answer must come from Content-Length alone.
    r = await raw_request(demo_server, ECHO, method="POST", headers=[("Content-Length", "5000000")])
    assert_error(r, 413, "payload_too_large", "5000000", "1 MiB")
    assert handler_runs.calls == []


async def test_a_streamed_body_under_the_limit_is_read(demo_client: httpx.AsyncClient, demo_server: str) -> None:
    r = await send_streamed(demo_client, demo_server + ECHO, json_body(200_000))
    assert r.status_code == 200
    assert len(r.json()["text"]) == 200_000 - len(b'{"text": ""}')


async def test_a_streamed_body_over_the_limit_is_413(
    demo_client: httpx.AsyncClient, demo_server: str, handler_runs: HandlerRuns
) -> None:
    r = await send_streamed(demo_client, demo_server + ECHO, json_body(MAX_BODY + 1))
    assert_error(r, 413, "payload_too_large", "1 MiB")
    assert handler_runs.calls == []


# Request security: Host names loopback; non-GET Origin is this server.

SECURED_PATHS = [
    PROBE,
    "/",
    "/api/v1",
    "/openapi.json",
    "/swagger",
    "/swagger/assets/swagger-ui.css",
    "/docs/",
    "/events",
    "/mcp",
    "/nowhere",
]


@pytest.mark.parametrize(
    "host",
    [
        "evil.example",
        "evil.example:80",
        "127.0.0.1.evil.example:80",
        "localhost.evil.example",
        "127.0.0.2",
        "0.0.0.0",
        "127.0.0.1:http",
        "127.0.0.1:",
        "127.0.0.1@evil.example",
    ],
)
@pytest.mark.parametrize("path", SECURED_PATHS)
async def test_a_foreign_host_is_403_on_every_route(
    demo_client: httpx.AsyncClient, handler_runs: HandlerRuns, path: str, host: str
) -> None:
    r = await demo_client.get(path, headers={"Host": host})
    assert_error(r, 403, "forbidden", repr(host), "loopback")
    assert handler_runs.calls == []


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "127.0.0.1", "localhost", "LocalHost:{port}"])
@pytest.mark.parametrize("path", [PROBE, "/", "/api/v1", "/openapi.json", "/swagger"])
async def test_a_loopback_host_is_answered(
    demo_client: httpx.AsyncClient, demo_server: str, path: str, host: str
) -> None:
    r = await demo_client.get(path, headers={"Host": host.format(port=port_of(demo_server))})
    assert r.status_code == 200


@pytest.mark.parametrize(
    "origin",
    [
        "http://evil.example",
        "null",
        "http://127.0.0.1:{port}.evil.example",
        "https://127.0.0.1:{port}",
        "http://127.0.0.1",
        "http://localhost:{port}",
        "http://127.0.0.1:{port}/",
        "",
    ],
)
@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE"])
async def test_a_non_get_request_from_a_foreign_origin_is_403(
    demo_client: httpx.AsyncClient, demo_server: str, handler_runs: HandlerRuns, method: str, origin: str
) -> None:
    origin = origin.format(port=port_of(demo_server))
    r = await demo_client.request(method, ECHO, content=b"{}", headers={"Origin": origin})
    assert_error(r, 403, "forbidden", repr(origin), f"http://127.0.0.1:{port_of(demo_server)}")
    assert handler_runs.calls == []


async def test_a_post_to_mcp_from_a_foreign_origin_is_refused_by_the_app(demo_client: httpx.AsyncClient) -> None:
    # The app's own check answers first (ErrorBody), before the MCP SDK's transport security.
    r = await demo_client.post("/mcp", json={}, headers={"Origin": "http://evil.example"})
    assert_error(r, 403, "forbidden", "'http://evil.example'")


async def test_a_post_to_a_page_from_a_foreign_origin_is_403_not_405(demo_client: httpx.AsyncClient) -> None:
    r = await demo_client.post("/", headers={"Origin": "http://evil.example"})
    assert_error(r, 403, "forbidden", "'http://evil.example'")


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}"])
async def test_a_post_from_this_servers_origin_is_answered(
    demo_client: httpx.AsyncClient, demo_server: str, handler_runs: HandlerRuns, host: str
) -> None:
    host = host.format(port=port_of(demo_server))
    r = await demo_client.post(ECHO, json={"text": "same origin"}, headers={"Host": host, "Origin": f"http://{host}"})
    assert r.status_code == 200
    assert r.json()["text"] == "same origin"
    assert handler_runs.ids() == ["demo.echo"]


async def test_a_post_without_origin_is_answered(demo_client: httpx.AsyncClient) -> None:
    r = await demo_client.post(ECHO, json={"text": "cli"})
    assert "origin" not in r.request.headers
    assert r.status_code == 200


@pytest.mark.parametrize("path", [PROBE, "/", "/api/v1", "/openapi.json"])
@pytest.mark.parametrize("origin", ["http://evil.example", "null"])
async def test_a_get_from_a_foreign_origin_is_answered(demo_client: httpx.AsyncClient, path: str, origin: str) -> None:
    r = await demo_client.get(path, headers={"Origin": origin})
    assert r.status_code == 200


# WebSocket upgrades carry the same Host and Origin checks. Refusals are read with a raw handshake
# (trio-websocket leaves the client socket open when a handshake is rejected).


def ws_url(http_url: str, path: str) -> str:
    return "ws" + http_url.removeprefix("http") + path


@pytest.mark.parametrize("path", ["/events", "/", "/mcp", PROBE, "/nowhere"])
@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://localhost:1"])
async def test_a_websocket_upgrade_from_a_foreign_origin_is_refused_403(
    demo_server: str, path: str, origin: str
) -> None:
    r = await websocket_upgrade(demo_server, path, headers=[("Origin", origin)])
    assert_error(r, 403, "forbidden", repr(origin))


async def test_a_websocket_upgrade_to_mcp_is_refused_403(demo_server: str) -> None:
    r = await websocket_upgrade(demo_server, "/mcp", headers=[("Origin", f"http://127.0.0.1:{port_of(demo_server)}")])
    assert r.status_code == 403


@pytest.mark.parametrize("host", ["evil.example", "127.0.0.1.evil.example:80"])
async def test_a_websocket_upgrade_to_a_foreign_host_is_refused_403(demo_server: str, host: str) -> None:
    r = await websocket_upgrade(demo_server, "/events", headers=[("Host", host)])
    assert_error(r, 403, "forbidden", repr(host), "loopback")


@pytest.mark.parametrize("origin", [None, "http://127.0.0.1:{port}"])
async def test_a_websocket_upgrade_from_this_origin_passes_the_checks(demo_server: str, origin: str | None) -> None:
    # The control of the refusals above: the same upgrade reaches routing (and there is no WebSocket there).
    headers = [] if origin is None else [("Origin", origin.format(port=port_of(demo_server)))]
    r = await websocket_upgrade(demo_server, "/nowhere", headers=headers)
    assert_error(r, 404, "not_found", "/nowhere")


@pytest.mark.parametrize("origin", [None, "http://127.0.0.1:{port}"])
async def test_the_live_channel_accepts_an_upgrade_from_this_origin(server: str, origin: str | None) -> None:
    headers = [] if origin is None else [(b"Origin", origin.format(port=port_of(server)).encode())]
    async with trio_websocket.open_websocket_url(ws_url(server, "/events"), extra_headers=headers) as ws:
        ready = json.loads(await ws.get_message())
    assert ready["type"] == "stream.ready"


@pytest.mark.parametrize("origin", ["http://evil.example", "null"])
async def test_the_live_channel_refuses_a_foreign_origin(server: str, origin: str) -> None:
    r = await websocket_upgrade(server, "/events", headers=[("Origin", origin)])
    assert_error(r, 403, "forbidden", repr(origin))


# HTTP never writes the repository.


@pytest.mark.parametrize("body", [b'{"text": "write me"}', b""])
async def test_a_repository_writer_is_403_over_http_and_never_runs(
    demo_client: httpx.AsyncClient, handler_runs: HandlerRuns, body: bytes
) -> None:
    r = await demo_client.post(WRITE, content=body)
    assert_error(r, 403, "forbidden", "demo.write", "svc_demo_write", "svc demo write")
    assert handler_runs.calls == []
    # The writer still exists for the other surfaces; a reader on the same server answers.
    assert (await demo_client.get(PROBE)).status_code == 200
    assert handler_runs.ids() == ["demo.probe"]


# Error mapping: a crash is `internal` with a correlation id, an SvcError keeps its class.


async def test_a_crashing_handler_is_500_with_a_correlation_id_and_no_exception_text(
    demo_client: httpx.AsyncClient, handler_runs: HandlerRuns, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="svc.executor")
    first = assert_error(await demo_client.get("/api/v1/demo/crash"), 500, "internal", "correlation id")
    second = assert_error(await demo_client.get("/api/v1/demo/crash"), 500, "internal", "correlation id")
    assert handler_runs.ids() == ["demo.crash", "demo.crash"]
    for message in (first, second):
        assert SECRET not in message
        assert "exploded" not in message
        assert "RuntimeError" not in message
        assert "Traceback" not in message
    ids = []
    for message in (first, second):
        found = re.search(r"correlation id ([A-Za-z0-9-]{6,})", message)
        assert found is not None, message
        ids.append(found[1])
    assert ids[0] != ids[1]
    # Each id is in the log, beside the exception it hides.
    logged = [record for record in caplog.records if record.name == "svc.executor"]
    assert len(logged) == 2
    for record, correlation in zip(logged, ids, strict=True):
        assert correlation in record.getMessage()
        assert "demo.crash" in record.getMessage()
        assert record.exc_info is not None
        assert SECRET in str(record.exc_info[1])
    # The server is unharmed.
    assert (await demo_client.get(PROBE)).status_code == 200


@pytest.mark.parametrize("code", sorted(RAISED))
async def test_an_svc_error_of_a_handler_keeps_its_status_code_and_message(
    demo_client: httpx.AsyncClient, code: str
) -> None:
    error = RAISED[code]
    r = await demo_client.get("/api/v1/demo/raise", params={"code": code})
    assert assert_error(r, error.status, code) == error.message
