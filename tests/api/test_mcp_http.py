"""`/mcp` on a real server (127.0.0.1, port 0) with the SDK's Streamable HTTP client, in both eras."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Literal

import httpx
import httpx2
import mcp_types as types
import msgspec
import pytest
import trio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from svc.api import BRIDGE_HEADER, SECURITY
from svc.host._service import open_service
from svc.layer import Repository
from svc.runtime import Executor

Mode = Literal["legacy", "2026-07-28"]
MODES: list[Mode] = ["legacy", "2026-07-28"]
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> Mode:
    mode: Mode = request.param
    return mode


@pytest.fixture
async def layered(checkout: Path) -> AsyncIterator[Executor]:
    async with open_service(Repository.discover(checkout), surface="http", watch=False) as ex:
        yield ex


@pytest.fixture
async def url(layered: Executor, nursery: trio.Nursery) -> AsyncIterator[str]:
    from svc.api import serve_http

    shutdown = trio.Event()
    served: str = await nursery.start(
        lambda task_status: serve_http(layered, port=0, shutdown=shutdown, task_status=task_status)
    )
    yield served
    shutdown.set()


async def attached(http: httpx.AsyncClient, url: str) -> dict[str, int]:
    answer = (await http.get(url + "/api/v1/mcp")).json()
    return {t["id"]: t["attached"] for t in answer["transports"]}


async def test_the_transport_security_is_explicit_loopback_only() -> None:
    assert SECURITY.enable_dns_rebinding_protection is True
    assert SECURITY.allowed_hosts == ["127.0.0.1:*", "localhost:*"]
    assert SECURITY.allowed_origins == ["http://127.0.0.1:*", "http://localhost:*"]


@pytest.mark.parametrize(
    ("tool", "path", "arguments"),
    [
        ("svc_capability", "/api/v1/capability", {"id": "mcp.projection"}),
        ("svc_projections", "/api/v1/capabilities/projections", {"module": "mcp"}),
        ("svc_health", "/api/v1/health", {}),
        ("svc_execution_protocol", "/api/v1/executions/protocol", {}),
    ],
)
async def test_a_call_over_mcp_answers_what_the_http_route_answers(
    url: str, mode: Mode, tool: str, path: str, arguments: dict[str, Any]
) -> None:
    async with Client(url + "/mcp", mode=mode) as client:
        await client.list_tools()
        result = await client.call_tool(tool, arguments)
    async with httpx.AsyncClient() as http:
        route = await http.get(url + path, params=arguments)
    assert route.status_code == 200
    assert result.is_error is False
    text = result.content[0]
    assert isinstance(text, types.TextContent)
    assert text.text.encode() == route.content
    assert result.structured_content == msgspec.json.decode(route.content)


async def test_both_eras_list_and_read_and_refuse_what_is_not_served(url: str, mode: Mode) -> None:
    async with Client(url + "/mcp", mode=mode) as client:
        expected = "2025-11-25" if mode == "legacy" else "2026-07-28"
        assert client.protocol_version == expected
        tools = (await client.list_tools()).tools
        assert "svc_mcp" in {t.name for t in tools}
        resources = (await client.list_resources()).resources
        assert {"svc://mcp", "svc://issue/I0001"} <= {r.uri for r in resources}
        read = await client.read_resource("svc://milestone/mcp")
        content = read.contents[0]
        assert isinstance(content, types.TextResourceContents)
        assert content.text.startswith("id: mcp\n")
        with pytest.raises(MCPError) as caught:
            await client.session.send_request(types.ListPromptsRequest(), types.ListPromptsResult)
        assert caught.value.code == types.METHOD_NOT_FOUND
        bad = await client.call_tool("svc_executions", {"limit": 0})
        assert bad.is_error is True
        text = bad.content[0]
        assert isinstance(text, types.TextContent)
        assert text.text.startswith("invalid_input: ")
        assert "$.limit" in text.text


async def test_the_auto_mode_discovers_the_2026_era(url: str) -> None:
    async with Client(url + "/mcp") as client:
        assert client.protocol_version == "2026-07-28"
        info = client.server_info
        assert info is not None
        assert info.name == "svc"
        assert "/mcp" in (client.instructions or "")


async def test_a_handshake_session_is_attached_until_deleted_and_bridges_count_as_stdio(url: str) -> None:
    async with httpx.AsyncClient() as http:
        assert await attached(http, url) == {"stdio": 0, "http": 0}
        async with Client(url + "/mcp", mode="legacy") as plain:
            assert await attached(http, url) == {"stdio": 0, "http": 1}
            instructions = plain.instructions or ""
            assert "Your peer id: http-" in instructions
            async with (
                httpx2.AsyncClient(headers={BRIDGE_HEADER: "stdio-feedface"}) as bridge_http,
                Client(streamable_http_client(url + "/mcp", http_client=bridge_http), mode="legacy") as bridge,
            ):
                assert await attached(http, url) == {"stdio": 1, "http": 1}
                assert "Your peer id: stdio-feedface." in (bridge.instructions or "")
            assert await attached(http, url) == {"stdio": 0, "http": 1}
            async with Client(url + "/mcp", mode="2026-07-28") as modern:
                await modern.list_tools()
                assert await attached(http, url) == {"stdio": 0, "http": 1}
        assert await attached(http, url) == {"stdio": 0, "http": 0}


async def test_a_writer_is_refused_on_mcp_over_http(url: str, mode: Mode) -> None:
    async with Client(url + "/mcp", mode=mode) as client:
        result = await client.call_tool("svc_plan_transition", {"issue": "I0001", "transition": "start"})
        started = await client.call_tool(
            "svc_execution_start",
            {"capability": "plan.transition", "input": {"issue": "I0001", "transition": "start"}},
        )
    assert started.is_error is True
    assert started.meta is not None
    assert started.meta["svc"] == {"error": {"code": "forbidden"}}
    assert result.is_error is True
    assert result.meta is not None
    assert result.meta["svc"] == {"error": {"code": "forbidden"}}


async def test_a_foreign_host_or_origin_never_reaches_the_session_manager(url: str) -> None:
    port = url.rsplit(":", 1)[1]
    async with httpx.AsyncClient() as http:
        rebound = await http.post(url + "/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Host": "evil.example"})
        assert rebound.status_code == 403
        assert rebound.json()["error"]["code"] == "forbidden"
        foreign = await http.post(
            url + "/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Origin": "http://evil.example"}
        )
        assert foreign.status_code == 403
        # A loopback name without a port passes the app's check; the SDK's own check wants host:port.
        portless = await http.post(url + "/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Host": "localhost"})
        assert portless.status_code == 421
        same_origin = await http.post(
            url + "/mcp",
            json=INITIALIZE,
            headers={**MCP_HEADERS, "Host": f"localhost:{port}", "Origin": f"http://localhost:{port}"},
        )
        assert same_origin.status_code == 200
        assert same_origin.json()["result"]["serverInfo"]["name"] == "svc"


async def test_the_home_page_lists_mcp_as_served(url: str) -> None:
    async with httpx.AsyncClient() as http:
        home = (await http.get(url + "/", headers={"Accept": "application/json"})).json()
    mcp = next(s for s in home["surfaces"] if s["id"] == "mcp")
    assert (mcp["path"], mcp["ready"]) == ("/mcp", True)
