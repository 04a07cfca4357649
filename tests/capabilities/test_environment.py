"""`environment.status` and `environment.explain` over HTTP, the MCP tool and the resource `svc://environment`."""

from __future__ import annotations

import functools
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import mcp_types as types
import msgspec
import pytest
import trio
from mcp import Client

from svc import __version__
from svc.api import serve_http
from svc.capabilities import builtin_registry
from svc.host._service import open_service
from svc.layer import Repository
from svc.runtime import Actor, Executor
from tests.layer._env_fixture import environment_checkout, lease


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return environment_checkout(tmp_path / "envco")


@pytest.fixture
async def served(root: Path, nursery: trio.Nursery) -> AsyncIterator[tuple[Executor, str]]:
    async with open_service(Repository.discover(root), surface="http", watch=False) as ex:
        shutdown = trio.Event()
        url: str = await nursery.start(functools.partial(serve_http, ex, port=0, shutdown=shutdown))
        lease(root, url)
        yield ex, url
        shutdown.set()


def no_absolute_path(root: Path, body: bytes | str) -> None:
    text = body.decode() if isinstance(body, bytes) else body
    for path in {str(root), os.path.realpath(root), str(root.parent)}:
        assert path not in text, path


@pytest.mark.bound(60)
async def test_http_answers_the_snapshot_and_its_provenance(root: Path, served: tuple[Executor, str]) -> None:
    _, url = served
    async with httpx.AsyncClient(base_url=url) as http:
        first = await http.get("/api/v1/environment")
        assert first.status_code == 200, first.text
        again = await http.get("/api/v1/environment")
        assert again.content == first.content  # the process cache: 4 entries, 3 s
        probed = await http.get("/api/v1/environment", params={"probe_services": "true"})
        assert probed.status_code == 200
        every = await http.get("/api/v1/environment/explain")
        one = await http.get("/api/v1/environment/explain", params={"field": "vcs"})
        missing = await http.get("/api/v1/environment/explain", params={"field": "nothing.here"})
        empty = await http.get("/api/v1/environment/explain", params={"field": ""})
        unknown = await http.get("/api/v1/environment", params={"probe": "true"})
        not_bool = await http.get("/api/v1/environment", params={"probe_services": "maybe"})
    for answer in (first, probed, every, one, missing, empty, unknown, not_bool):
        no_absolute_path(root, answer.content)
    env: dict[str, Any] = first.json()
    assert list(env) == [
        "schema",
        "generated_at",
        "resolution",
        "project",
        "repository",
        "vcs",
        "toolchains",
        "layer",
        "workflows",
        "providers",
        "services",
        "diagnostics",
        "provenance",
    ]
    assert env["project"]["name"] == "svc"
    assert env["project"]["version"] == __version__
    assert env["repository"] == {
        "name": "envco",
        "root": ".",
        "layer_schema": "ai-repository/v1",
        "sections": {"policy": ".ai/repo/policy.yaml", "rules": ".ai/repo/rules"},
        "local_path": ".ai/local",
        "linked_worktree": False,
    }
    assert env["vcs"]["state"] == "git"
    assert env["vcs"]["branch"] == "main"
    assert [t["id"] for t in env["toolchains"]] == ["python", "node", "rust", "go", "just", "elixir", "deno"]
    layer = env["layer"]
    assert layer["state"] == "resolved"
    assert layer["capabilities"] == len(builtin_registry().capabilities)
    assert layer["objects"] == sum(k["count"] for k in layer["kinds"])
    assert env["providers"][0] == {"id": "agents", "target": "AGENTS.md", "state": "unknown", "always_loaded": True}
    services = {s["id"]: s for s in env["services"]}
    assert services["events"] == {
        "id": "events",
        "title": "Live events",
        "path": "/events",
        "url": f"{url}/events",
        "availability": "unknown",
    }
    assert {s["availability"] for s in probed.json()["services"]} == {"available"}
    fields = [f["field"] for f in env["provenance"]]
    assert every.json() == {"resolution": "full", "fields": every.json()["fields"]}
    assert [f["field"] for f in every.json()["fields"]] == fields
    assert [f["field"] for f in one.json()["fields"]] == ["vcs.branch", "vcs.clean", "vcs.ahead_behind"]
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"
    assert "call without `field`" in missing.json()["error"]["message"]
    for bad in (empty, unknown, not_bool):
        assert bad.status_code == 400, bad.text
        assert bad.json()["error"]["code"] == "invalid_input"


@pytest.mark.bound(60)
async def test_mcp_tool_and_resource_answer_what_http_answers(root: Path, served: tuple[Executor, str]) -> None:
    _, url = served
    async with httpx.AsyncClient(base_url=url) as http:
        route = await http.get("/api/v1/environment")
        explained = await http.get("/api/v1/environment/explain", params={"field": "project.version"})
    async with Client(url + "/mcp", mode="legacy") as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert {"svc_environment", "svc_environment_explain"} <= tools
        resources = {r.uri for r in (await client.list_resources()).resources}
        assert "svc://environment" in resources
        tool = await client.call_tool("svc_environment", {})
        read = await client.read_resource("svc://environment")
        one = await client.call_tool("svc_environment_explain", {"field": "project.version"})
        missing = await client.call_tool("svc_environment_explain", {"field": "nothing.here"})
        bad = await client.call_tool("svc_environment", {"probe": True})
    text = tool.content[0]
    assert isinstance(text, types.TextContent)
    assert tool.is_error is False
    assert text.text.encode() == route.content
    content = read.contents[0]
    assert isinstance(content, types.TextResourceContents)
    assert content.text.encode() == route.content
    one_text = one.content[0]
    assert isinstance(one_text, types.TextContent)
    assert msgspec.json.decode(one_text.text) == explained.json()
    assert [f["field"] for f in explained.json()["fields"]] == ["project.version"]
    assert missing.is_error is True
    missing_text = missing.content[0]
    assert isinstance(missing_text, types.TextContent)
    assert missing_text.text.startswith("not_found: ")
    assert bad.is_error is True
    for answer in (text.text, content.text, one_text.text, missing_text.text):
        no_absolute_path(root, answer)


@pytest.mark.bound(60)
async def test_outside_a_git_work_tree_the_snapshot_still_answers(tmp_path: Path) -> None:
    root = environment_checkout(tmp_path / "plain", git=False)
    async with open_service(Repository.discover(root), surface="cli", watch=False) as ex:
        cap = builtin_registry().by_id["environment.status"]
        body = await ex.call(cap, ex.decode_value(cap, {}), actor=Actor(kind="cli"))
    env = msgspec.json.decode(body)
    assert env["vcs"] == {"state": "unavailable", "reason": "the checkout is not a Git work tree"}
    assert env["diagnostics"][0]["code"] == "vcs_unavailable"
    assert {s["availability"] for s in env["services"]} == {"not_running"}
    no_absolute_path(root, body)
