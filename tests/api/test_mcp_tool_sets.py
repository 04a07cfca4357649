"""MCP tool sets (`svc mcp --tools SET`) in process: the set's resolution, its token estimate, a session served
through a set in both protocol eras, `mcp.projection`'s figures on every surface and the client entries naming a set.

The same over real `svc mcp` processes (standalone and bridged) is in `tests/cli/test_mcp_tool_sets.py`.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import mcp_types as types
import msgspec
import pytest
from mcp.shared.exceptions import MCPError

from svc import NotFound, __version__
from svc.api import LocalBackend, build_server
from svc.capabilities import builtin_registry
from svc.capabilities._mcp import CLIENTS, LAUNCHER, LAUNCHER_PATH, client_entry
from svc.host._service import open_service
from svc.layer import Repository
from svc.runtime import Actor, Executor
from svc.surfaces import mcp_catalog
from svc.surfaces._mcp_catalog import (
    CORE_MODULES,
    CORE_TOOLS,
    SERVED_TOOL_SET,
    McpCatalog,
    UnknownToolSet,
    tool_listing,
    tool_set,
)
from tests.api.test_mcp import MODES, Mode

ACTOR = Actor(kind="internal")


@pytest.fixture
def catalog() -> McpCatalog:
    return mcp_catalog(builtin_registry())


@pytest.fixture
async def executor(checkout: Path) -> AsyncIterator[Executor]:
    async with open_service(Repository.discover(checkout), surface="mcp", watch=False) as ex:
        yield ex


async def projection(executor: Executor, **params: Any) -> Any:
    cap = executor.runtime.registry.by_id["mcp.projection"]
    return msgspec.json.decode(await executor.call(cap, executor.decode_value(cap, params), actor=ACTOR))


def listed_bytes(tools: list[types.Tool]) -> int:
    """The UTF-8 bytes of the compact JSON array of these tools as the SDK lists them."""
    dumped = [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools]
    return len(json.dumps(dumped, separators=(",", ":"), ensure_ascii=False).encode())


# -- the set ------------------------------------------------------------------------------------------------------


def test_core_is_the_plan_mesh_claim_and_release_health_and_capabilities(catalog: McpCatalog) -> None:
    core = tool_set(catalog, "core")
    expected = [t.name for t in catalog.tools if t.module in {"plan", "health", "capabilities"} or t.name in CORE_TOOLS]
    assert list(core.tools) == expected
    assert {"svc_plan_next", "svc_plan_transition", "svc_health", "svc_capabilities"} <= core.names
    assert {"svc_mesh_claim", "svc_mesh_release"} <= core.names
    assert "svc_mesh_peers" not in core.names
    assert "svc_mcp" not in core.names
    assert set(CORE_MODULES) == {"plan", "health", "capabilities"}
    assert core.set == "core"
    # A core tool the registry does not hold (yet) is passed over; it joins `core` by its name once declared.
    assert "svc_plan_take" in CORE_TOOLS
    assert ("svc_plan_take" in core.names) == ("svc_plan_take" in catalog.tool_by_name)


def test_all_is_every_tool_in_registry_order(catalog: McpCatalog) -> None:
    everything = tool_set(catalog, "all")
    assert everything.set == "all"
    assert everything.tools == tuple(t.name for t in catalog.tools)


def test_a_comma_list_names_modules_and_tools(catalog: McpCatalog) -> None:
    chosen = tool_set(catalog, " mcp , svc_plan_next,mcp,health ")
    assert chosen.set == "mcp,svc_plan_next,health"
    assert list(chosen.tools) == [t.name for t in catalog.tools if t.name in {"svc_mcp", "svc_plan_next", "svc_health"}]
    widened = tool_set(catalog, "core,executions")
    assert tool_set(catalog, "core").names < widened.names
    assert {t.name for t in catalog.tools if t.module == "executions"} <= widened.names


@pytest.mark.parametrize("spec", ["nope", "plan,nope,svc_nothing", "svc_mcp,Plan"])
def test_an_unknown_member_is_named_with_the_module_ids(catalog: McpCatalog, spec: str) -> None:
    with pytest.raises(UnknownToolSet) as caught:
        tool_set(catalog, spec)
    message = str(caught.value)
    for member in caught.value.unknown:
        assert repr(member) in message
    assert caught.value.unknown == tuple(m for m in spec.split(",") if m in {"nope", "svc_nothing", "Plan"})
    assert f"the module ids are {', '.join(catalog.modules)}" in message
    assert "plan" in catalog.modules
    assert "mesh" in catalog.modules


@pytest.mark.parametrize("spec", ["", " ", ",,"])
def test_a_set_naming_nothing_is_refused(catalog: McpCatalog, spec: str) -> None:
    with pytest.raises(UnknownToolSet, match="names nothing"):
        tool_set(catalog, spec)


# -- the estimate -------------------------------------------------------------------------------------------------


async def test_each_tool_is_measured_as_tools_list_lists_it(executor: Executor, catalog: McpCatalog) -> None:
    listed = (await LocalBackend(executor).list_tools()).tools
    assert [tool_listing(t) for t in catalog.tools] == [
        t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in listed
    ]
    for name in ("all", "core", "plan,svc_mcp"):
        chosen = tool_set(catalog, name)
        kept = [t for t in listed if t.name in chosen.names]
        assert chosen.tokens == -(-listed_bytes(kept) // 4), name
    assert catalog.tokens([]) == 1  # "[]"
    assert tool_set(catalog, "core").tokens < tool_set(catalog, "all").tokens


# -- a session through a set --------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_a_session_lists_and_calls_only_its_set(executor: Executor, catalog: McpCatalog, mode: Mode) -> None:
    from mcp import Client

    core = tool_set(catalog, "core")
    server = build_server(
        LocalBackend(executor), transport="stdio", peer="stdio-0123abcd", version=__version__, tools=core
    )
    async with Client(server, mode=mode) as client:
        listed = (await client.list_tools()).tools
        assert [t.name for t in listed] == list(core.tools)
        assert -(-listed_bytes(listed) // 4) == core.tokens
        health = await client.call_tool("svc_health", {})
        assert health.is_error is not True
        for outside in ("svc_mcp", "svc_mesh_peers", "svc_no_such_tool"):
            with pytest.raises(MCPError) as caught:
                await client.call_tool(outside, {})
            assert caught.value.code == types.INVALID_PARAMS
            assert repr(outside) in caught.value.message
            assert "'core'" in caught.value.message
        resources = {r.uri for r in (await client.list_resources()).resources}
        assert {"svc://mcp", "svc://health", "svc://issue/I0001"} <= resources
        read = await client.read_resource("svc://mcp")
        assert isinstance(read.contents[0], types.TextResourceContents)
        line = (
            f"This session serves the tool set 'core' (svc mcp --tools core): {len(core.tools)} tools, "
            f"about {core.tokens} tokens of tool listing; every resource is served."
        )
        if mode == "legacy":  # the handshake carries the instructions
            assert client.instructions is not None
            assert client.instructions.startswith("svc serves the capability registry")
            assert client.instructions.endswith("\nYour peer id: stdio-0123abcd.\n" + line)


@pytest.mark.parametrize("mode", MODES)
async def test_all_serves_exactly_what_no_set_serves(executor: Executor, catalog: McpCatalog, mode: Mode) -> None:
    from mcp import Client

    answers: list[tuple[Any, ...]] = []
    for tools in (None, tool_set(catalog, "all")):
        server = build_server(
            LocalBackend(executor), transport="stdio", peer="stdio-0123abcd", version=__version__, tools=tools
        )
        async with Client(server, mode=mode) as client:
            listed = await client.list_tools()
            answers.append((listed.model_dump(mode="json"), client.instructions))
    assert answers[0] == answers[1]
    assert "tool set" not in (answers[0][1] or "")


# -- mcp.projection -----------------------------------------------------------------------------------------------


async def test_the_projection_reports_the_served_set_and_the_sizes(executor: Executor, catalog: McpCatalog) -> None:
    everything, core = tool_set(catalog, "all"), tool_set(catalog, "core")
    answer = await projection(executor)
    assert answer["tool_set"] == {
        "set": "all",
        "tools": list(everything.tools),
        "tool_count": len(catalog.tools),
        "tokens": everything.tokens,
    }
    assert answer["tool_sets"] == [
        {"set": "all", "tool_count": len(everything.tools), "tokens": everything.tokens},
        {"set": "core", "tool_count": len(core.tools), "tokens": core.tokens},
    ]
    asked = await projection(executor, tools="mcp, health")
    chosen = tool_set(catalog, "mcp,health")
    assert asked["tool_sets"][2] == {"set": "mcp,health", "tool_count": 2, "tokens": chosen.tokens}
    assert (await projection(executor, tools="core"))["tool_sets"] == answer["tool_sets"]
    # The set this process's stdio session serves (what `svc mcp --tools` publishes to the process).
    served = SERVED_TOOL_SET.set(core)
    try:
        mine = await projection(executor)
    finally:
        SERVED_TOOL_SET.reset(served)
    assert mine["tool_set"] == {"set": "core", "tools": list(core.tools), "tool_count": 16, "tokens": core.tokens}
    assert mine["tool_count"] == answer["tool_count"]
    assert mine["tools"] == answer["tools"]
    with pytest.raises(NotFound, match=r"unknown module or tool 'nope'.*the module ids are artifacts"):
        await projection(executor, tools="plan,nope")


async def test_every_surface_gets_the_same_figures(
    layer_server: str, layer_executor: Executor, layer_root: Path
) -> None:
    from mcp import Client

    async with httpx.AsyncClient(base_url=layer_server) as http:
        got = await http.get("/api/v1/mcp", params={"tools": "core,mcp"})
        assert got.status_code == 200
        bad = await http.get("/api/v1/mcp", params={"tools": "core,zzz"})
        garbled = await http.get("/api/v1/mcp", params={"tools": "core;\x1a"})
    assert garbled.status_code == 400
    assert garbled.json()["error"]["code"] == "invalid_input"
    assert bad.status_code == 404
    assert bad.json()["error"]["code"] == "not_found"
    assert "'zzz'" in bad.json()["error"]["message"]
    assert "the module ids are" in bad.json()["error"]["message"]
    answer = got.json()
    assert [s["set"] for s in answer["tool_sets"]] == ["all", "core", "core,mcp"]
    assert answer["tool_sets"][2]["tool_count"] == answer["tool_sets"][1]["tool_count"] + 1
    assert str(layer_root) not in got.text
    assert str(layer_root) not in bad.text
    server = build_server(LocalBackend(layer_executor), transport="stdio", version=__version__)
    async with Client(server, mode="legacy") as client:
        called = await client.call_tool("svc_mcp", {"tools": "core,mcp"})
    assert called.structured_content is not None
    for field in ("tool_set", "tool_sets", "findings"):
        assert called.structured_content[field] == answer[field], field


# -- client entries naming a set ----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", CLIENTS, ids=lambda k: k.id)
def test_a_client_entry_passes_the_set_to_the_launcher(kind: Any) -> None:
    plain, core = client_entry(kind), client_entry(kind, "core")
    assert client_entry(kind, "all") == plain
    if kind.format == "toml":
        assert core == plain + 'args = ["--tools", "core"]\n'
        entry = tomllib.loads(core)[kind.servers_key]["svc"]
    else:
        entry = json.loads(core)[kind.servers_key]["svc"]
        assert json.loads(plain)[kind.servers_key]["svc"] == {k: v for k, v in entry.items() if k != "args"}
    assert entry["command"] == LAUNCHER_PATH
    assert entry["args"] == ["--tools", "core"]


async def test_the_findings_write_the_set_asked_for_and_the_entry_reads_as_wired(checkout: Path) -> None:
    async with open_service(Repository.discover(checkout), surface="cli", watch=False) as executor:
        plain = await projection(executor)
        asked = await projection(executor, tools="plan, svc_health")
    remedies = {f["code"]: f["remedy"] for f in asked["findings"]}
    assert '"args": [\n        "--tools",\n        "plan,svc_health"\n      ]' in remedies["mcp_no_client_configured"]
    assert 'args = ["--tools", "plan,svc_health"]' in remedies["mcp_no_client_configured"]
    assert '"args"' not in {f["code"]: f["remedy"] for f in plain["findings"]}["mcp_no_client_configured"]
    (checkout / "bin").mkdir()
    (checkout / LAUNCHER_PATH).write_text(LAUNCHER, encoding="utf-8")
    for kind in CLIENTS:
        (checkout / kind.config).parent.mkdir(exist_ok=True)
        (checkout / kind.config).write_text(client_entry(kind, "core"), encoding="utf-8")
    async with open_service(Repository.discover(checkout), surface="cli", watch=False) as executor:
        wired = await projection(executor, tools="core")
    assert {c["standing"] for c in wired["clients"]} == {"wired"}
    assert wired["findings"] == []
