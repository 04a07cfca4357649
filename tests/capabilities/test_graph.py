"""`graph.list` and `graph.get` over real loopback HTTP and over MCP (tools and the `svc://graphs` resource)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import mcp_types as types
import msgspec
import pytest

from svc.api import LocalBackend
from svc.capabilities._graph import registry_facts
from svc.layer import GRAPH_IDS, derive_graph
from svc.runtime import Actor, Executor
from tests.api._wire import assert_error
from tests.api.test_mcp import connect

ACTOR = Actor(kind="internal")


async def _call(ex: Executor, cap_id: str, **params: Any) -> bytes:
    cap = ex.runtime.registry.by_id[cap_id]
    return await ex.call(cap, ex.decode_value(cap, params), actor=ACTOR)


async def test_every_graph_answers_over_http_as_derived_and_serves_no_absolute_path(
    layer_root: Path, layer_executor: Executor, layer_server: str
) -> None:
    index = await layer_executor.runtime.objects_async()
    facts = registry_facts(layer_executor.runtime.registry)
    async with httpx.AsyncClient(base_url=layer_server) as http:
        listed = await http.get("/api/v1/graphs")
        assert listed.status_code == 200
        assert [g["id"] for g in listed.json()["graphs"]] == list(GRAPH_IDS)
        assert str(layer_root) not in listed.text
        for graph_id in GRAPH_IDS:
            answer = await http.get("/api/v1/graph", params={"id": graph_id})
            assert answer.status_code == 200, answer.text
            assert answer.content == msgspec.json.encode(derive_graph(graph_id, facts, index))
            assert str(layer_root) not in answer.text
        composed = (await http.get("/api/v1/graph", params={"id": "composed"})).json()
    edges = {(e["source"], e["target"], e["kind"]) for e in composed["edges"]}
    assert ("svc://issue/I1", "svc://milestone/M1", "belongs_to") in edges
    assert ("svc://issue/I2", "svc://issue/I1", "depends_on") in edges
    assert {u["reference"] for u in composed["unresolved_relations"]} >= {"M9", "I404", "project.gone@1"}
    registry = next(g for g in listed.json()["graphs"] if g["id"] == "registry")
    assert registry["title"] == "Capability registry"


async def test_bad_inputs_answer_their_status_over_http(layer_server: str) -> None:
    async with httpx.AsyncClient(base_url=layer_server) as http:
        message = assert_error(await http.get("/api/v1/graph", params={"id": "nope"}), 404, "not_found", "'nope'")
        for graph_id in GRAPH_IDS:
            assert graph_id in message
        assert_error(await http.get("/api/v1/graph"), 400, "invalid_input", "id")
        assert_error(await http.get("/api/v1/graph", params={"id": "rules", "x": "1"}), 400, "invalid_input", "x")
        assert_error(await http.get("/api/v1/graphs", params={"id": "rules"}), 400, "invalid_input", "id")
        assert (await http.post("/api/v1/graph", json={"id": "rules"})).status_code == 405


async def test_graph_get_is_cached_per_generation(layer_executor: Executor) -> None:
    first = await _call(layer_executor, "graph.get", id="rules")
    cache = layer_executor.cache("graph.get")
    assert cache is not None
    hits = cache.hits
    assert await _call(layer_executor, "graph.get", id="rules") == first
    assert cache.hits == hits + 1
    layer_executor.runtime.generation.bump()
    assert await _call(layer_executor, "graph.get", id="rules") == first
    assert cache.hits == hits + 1


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_the_tools_and_the_resource_answer_over_mcp(
    layer_root: Path, layer_executor: Executor, mode: Any
) -> None:
    expected = await _call(layer_executor, "graph.get", id="composed")
    listed = await _call(layer_executor, "graph.list")
    async with connect(LocalBackend(layer_executor), mode) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert {"svc_graph", "svc_graphs"} <= tools
        composed = await client.call_tool("svc_graph", {"id": "composed"})
        graphs = await client.call_tool("svc_graphs", {})
        resource = await client.read_resource("svc://graphs")
        unknown = await client.call_tool("svc_graph", {"id": "nope"})
        missing = await client.call_tool("svc_graph", {})
        extra = await client.call_tool("svc_graphs", {"id": "x"})
    assert composed.is_error is False
    text = composed.content[0]
    assert isinstance(text, types.TextContent)
    assert text.text.encode() == expected
    assert str(layer_root) not in text.text
    graphs_text = graphs.content[0]
    assert isinstance(graphs_text, types.TextContent)
    assert graphs_text.text.encode() == listed
    (content,) = resource.contents
    assert isinstance(content, types.TextResourceContents)
    assert (content.mime_type, content.text.encode()) == ("application/json", listed)
    for result, code in ((unknown, "not_found"), (missing, "invalid_input"), (extra, "invalid_input")):
        assert result.is_error is True
        error = result.content[0]
        assert isinstance(error, types.TextContent)
        assert error.text.startswith(f"{code}: ")
