"""`directories.list` over real loopback HTTP and over MCP (the tool and the `svc://directories` resource)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import mcp_types as types
import msgspec
import pytest

from svc.api import LocalBackend
from svc.layer import directory_report
from svc.runtime import Actor, Executor
from tests.api._wire import assert_error
from tests.api.test_mcp import connect

ACTOR = Actor(kind="internal")


async def test_every_example_answers_over_http_as_derived_and_serves_no_absolute_path(
    layer_root: Path, layer_executor: Executor, layer_server: str
) -> None:
    index = await layer_executor.runtime.objects_async()
    cap = layer_executor.runtime.registry.by_id["directories.list"]
    async with httpx.AsyncClient(base_url=layer_server) as http:
        for example in cap.examples:
            params = {k: str(v).lower() if isinstance(v, bool) else v for k, v in example.input.items()}
            answer = await http.get("/api/v1/directories", params=params)
            assert answer.status_code == 200, (example.name, answer.text)
            assert answer.content == msgspec.json.encode(directory_report(index, **example.input)), example.name
            assert str(layer_root) not in answer.text
        issues = (await http.get("/api/v1/directories", params={"path": "./.ai/repo/project/issues/"})).json()
    (node,) = issues["directories"]
    assert node["path"] == ".ai/repo/project/issues"
    assert [e["id"] for e in node["effective"]] == ["ai", "ai.repo", "ai.repo.knowledge"]
    assert issues["tallies"] == {"directories": 10, "documented": 4, "exempt": 2, "owed": 4}


async def test_bad_inputs_answer_their_status_over_http(layer_root: Path, layer_server: str) -> None:
    async with httpx.AsyncClient(base_url=layer_server) as http:
        for path in (str(layer_root / ".ai"), "/etc", ".ai/../x", "../.ai", "docs", "."):
            message = assert_error(await http.get("/api/v1/directories", params={"path": path}), 400, "invalid_input")
            assert str(layer_root) not in message
        assert_error(
            await http.get("/api/v1/directories", params={"path": ".ai/repo/nowhere"}), 404, "not_found", "nowhere"
        )
        assert_error(await http.get("/api/v1/directories", params={"state": "lost"}), 400, "invalid_input", "state")
        assert_error(
            await http.get("/api/v1/directories", params={"effective": "maybe"}), 400, "invalid_input", "effective"
        )
        assert_error(await http.get("/api/v1/directories", params={"depth": "1"}), 400, "invalid_input", "depth")


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_the_tool_and_the_resource_answer_over_mcp(layer_root: Path, layer_executor: Executor, mode: Any) -> None:
    cap = layer_executor.runtime.registry.by_id["directories.list"]
    whole = await layer_executor.call(cap, layer_executor.decode_value(cap, {}), actor=ACTOR)
    one = await layer_executor.call(cap, layer_executor.decode_value(cap, {"path": ".ai/repo/rules"}), actor=ACTOR)
    async with connect(LocalBackend(layer_executor), mode) as client:
        called = await client.call_tool("svc_directories", {"path": ".ai/repo/rules"})
        resource = await client.read_resource("svc://directories")
        outside = await client.call_tool("svc_directories", {"path": str(layer_root)})
        unknown = await client.call_tool("svc_directories", {"path": ".ai/repo/nowhere"})
        bad_state = await client.call_tool("svc_directories", {"state": "lost"})
    text = called.content[0]
    assert isinstance(text, types.TextContent)
    assert (called.is_error, text.text.encode()) == (False, one)
    (content,) = resource.contents
    assert isinstance(content, types.TextResourceContents)
    assert (content.mime_type, content.text.encode()) == ("application/json", whole)
    for result, code in ((outside, "invalid_input"), (unknown, "not_found"), (bad_state, "invalid_input")):
        assert result.is_error is True
        error = result.content[0]
        assert isinstance(error, types.TextContent)
        assert error.text.startswith(f"{code}: ")
        assert str(layer_root) not in error.text
