"""`svc mcp --tools SET` as a real process: standalone, serving, bridged, and an unknown name.

Real subprocesses on 127.0.0.1 (port 0) with wall-clock bounds, hence `slow`.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx
import mcp_types as types
import pytest
import trio
from mcp import Client
from mcp.shared.exceptions import MCPError

from svc.capabilities import builtin_registry
from svc.surfaces import mcp_catalog
from svc.surfaces._mcp_catalog import ToolSet, tool_set
from tests.cli._mcp_procs import BRIDGING, START_SECONDS, lease_file, mcp_args, mcp_session

pytestmark = [pytest.mark.slow, pytest.mark.bound(120)]


def resolved(spec: str) -> ToolSet:
    return tool_set(mcp_catalog(builtin_registry()), spec)


async def names(client: Client) -> list[str]:
    return [t.name for t in (await client.list_tools()).tools]


async def refused(client: Client, name: str) -> MCPError:
    with pytest.raises(MCPError) as caught:
        await client.call_tool(name, {})
    return caught.value


async def test_a_standalone_session_serves_only_its_set(checkout: Path, tmp_path: Path) -> None:
    chosen = resolved("core,mcp")
    async with mcp_session(checkout, tmp_path / "a.log", "--standalone", "--tools", "core, mcp") as session:
        client = session.client
        assert await names(client) == list(chosen.tools)
        error = await refused(client, "svc_mesh_peers")
        assert error.code == types.INVALID_PARAMS
        assert "'svc_mesh_peers'" in error.message
        assert "'core,mcp'" in error.message
        health = await client.call_tool("svc_health", {})
        assert health.is_error is not True
        answer = (await client.call_tool("svc_mcp", {})).structured_content
        assert answer is not None
        assert answer["tool_set"] == {
            "set": "core,mcp",
            "tools": list(chosen.tools),
            "tool_count": len(chosen.tools),
            "tokens": chosen.tokens,
        }
        assert answer["tool_count"] == len(mcp_catalog(builtin_registry()).tools)
        assert {"svc://mcp", "svc://issue/I0001"} <= {r.uri for r in (await client.list_resources()).resources}
        assert "svc: this stdio session serves the tool set core,mcp: " in session.log()
        assert str(checkout) not in str(answer)


async def test_a_serving_process_reports_its_set_on_http_and_serves_every_tool_on_mcp(
    checkout: Path, tmp_path: Path
) -> None:
    core = resolved("core")
    everything = resolved("all")
    async with mcp_session(checkout, tmp_path / "first.log", "--tools", "core") as first:
        assert await names(first.client) == list(core.tools)
        url = first.url()
        assert url is not None, first.log()
        async with httpx.AsyncClient(base_url=url) as http:
            answer = (await http.get("/api/v1/mcp")).json()
        assert answer["tool_set"]["set"] == "core"
        assert answer["tool_set"]["tokens"] == core.tokens
        # A bridge without --tools gets every tool through the core-serving process's /mcp.
        async with mcp_session(checkout, tmp_path / "second.log", mode="auto") as second:
            assert BRIDGING.search(second.log()) is not None, second.log()
            assert await names(second.client) == list(everything.tools)
            # The projection is answered by the serving process: its set.
            projected = (await second.client.call_tool("svc_mcp", {})).structured_content
            assert projected is not None
            assert projected["tool_set"]["set"] == "core"


async def test_a_bridged_session_serves_only_its_set(checkout: Path, tmp_path: Path) -> None:
    core = resolved("core")
    async with mcp_session(checkout, tmp_path / "first.log") as first:
        assert len(await names(first.client)) == len(resolved("all").tools)
        async with mcp_session(checkout, tmp_path / "second.log", "--tools", "core", mode="auto") as second:
            assert BRIDGING.search(second.log()) is not None, second.log()
            client = second.client
            assert await names(client) == list(core.tools)
            error = await refused(client, "svc_mcp")
            assert error.code == types.INVALID_PARAMS
            assert "'core'" in error.message
            health = await client.call_tool("svc_health", {})
            assert health.is_error is not True
            # A repository writer of the set still runs in the bridging process.
            moved = await client.call_tool("svc_plan_transition", {"issue": "I9999", "transition": "start"})
            assert isinstance(moved.content[0], types.TextContent)
            assert moved.content[0].text.startswith("not_found: ")
            issue = await client.read_resource("svc://issue/I0002")
            assert isinstance(issue.contents[0], types.TextResourceContents)
        # The serving session's own listing is untouched by the bridge's set.
        assert len(await names(first.client)) == len(resolved("all").tools)
        assert (await first.client.call_tool("svc_mcp", {})).structured_content["tool_set"]["set"] == "all"


@pytest.mark.parametrize("spec", ["nope", "plan,svc_no_such_tool", ""])
async def test_an_unknown_name_is_a_usage_error(checkout: Path, spec: str) -> None:
    with trio.fail_after(START_SECONDS):
        done = await trio.run_process(
            mcp_args(checkout, "--tools", spec),
            stdin=subprocess.DEVNULL,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    err = done.stderr.decode()
    assert done.returncode == 2, err
    assert done.stdout == b""
    assert "Invalid value for '--tools'" in err
    for member in ("nope", "svc_no_such_tool"):
        if member in spec:
            assert repr(member) in err
    if not spec:
        assert "names nothing" in err
    assert "the module ids are artifacts, capabilities," in err
    assert "mesh" in err
    assert "plan" in err
    assert not lease_file(checkout).exists()
