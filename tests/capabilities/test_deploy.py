"""`deploy.list`, `deploy.get` and `deploy.check` over real loopback HTTP, the MCP tools and `svc://deployments`.

The answers over the deployment fixture (`tests/layer/_deploy_layer.py`) are the golden files of
`tests/layer/golden/` (written by `tests/layer/test_deployments.py`), decided here against svc's registry.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import mcp_types as types
import msgspec
import pytest
import trio

from svc.api import LocalBackend, serve_http
from svc.capabilities import builtin_registry
from svc.capabilities._deploy import served_paths
from svc.host._service import open_service
from svc.layer import Repository, deployment_check, deployment_list
from svc.runtime import Actor, Executor
from tests.api._wire import assert_error
from tests.api.test_mcp import connect
from tests.layer._deploy_layer import READ_IDS, write_deploy_layer

ACTOR = Actor(kind="internal")
GOLDEN = Path(__file__).parents[1] / "layer" / "golden"


def _golden(name: str) -> Any:
    return json.loads((GOLDEN / f"deployments-{name}.json").read_text())


@pytest.fixture
def deploy_root(tmp_path: Path) -> Path:
    """A checkout carrying the deployment fixture."""
    return write_deploy_layer(tmp_path / "checkout").resolve()


@pytest.fixture
async def deploy_executor(deploy_root: Path) -> AsyncIterator[Executor]:
    """The service over the deployment fixture, generation pinned."""
    async with open_service(Repository.discover(deploy_root), surface="http", watch=False) as ex:
        yield ex


@pytest.fixture
async def deploy_server(deploy_executor: Executor, nursery: trio.Nursery) -> AsyncIterator[str]:
    """A real server over the deployment fixture on 127.0.0.1, port 0; yields its URL."""
    shutdown = trio.Event()
    url: str = await nursery.start(functools.partial(serve_http, deploy_executor, port=0, shutdown=shutdown))
    yield url
    shutdown.set()


def test_the_health_paths_of_svc_are_among_the_paths_it_serves() -> None:
    registry = builtin_registry()
    paths = served_paths(registry)
    assert {"/api/v1/live", "/api/v1/ready", "/api/v1/deployments", "/openapi.json", "/docs/", "/docs"} <= paths
    assert "/healthz" not in paths
    # A path served only on POST is no path a platform polls.
    routes = [c.exposure.http for c in registry.capabilities if c.exposure.http is not None]
    post_only = {r.path for r in routes if r.method == "POST"} - {r.path for r in routes if r.method == "GET"}
    assert post_only
    assert not post_only & paths


async def test_every_operation_answers_over_http_as_its_golden_without_an_absolute_path(
    deploy_root: Path, deploy_executor: Executor, deploy_server: str
) -> None:
    index = await deploy_executor.runtime.objects_async()
    async with httpx.AsyncClient(base_url=deploy_server) as http:
        listed = await http.get("/api/v1/deployments")
        one = await http.get("/api/v1/deployment", params={"id": "web"})
        checked = await http.get("/api/v1/deployments/check")
        again = await http.get("/api/v1/deployments/check")
    for answer in (listed, one, checked, again):
        assert answer.status_code == 200, answer.text
        assert answer.headers["content-type"] == "application/json"
        assert str(deploy_root) not in answer.text
    assert listed.json() == _golden("list")
    assert listed.content == msgspec.json.encode(deployment_list(index))
    assert [d["id"] for d in listed.json()["deployments"]] == READ_IDS
    assert one.json() == _golden("web")
    assert checked.json() == _golden("check")
    routes = served_paths(deploy_executor.runtime.registry)
    assert checked.content == msgspec.json.encode(deployment_check(index, deploy_root, routes))
    assert again.content == checked.content
    assert checked.json()["ok"] is False


async def test_bad_inputs_answer_their_status_over_http(deploy_root: Path, deploy_server: str) -> None:
    async with httpx.AsyncClient(base_url=deploy_server) as http:
        message = assert_error(
            await http.get("/api/v1/deployment", params={"id": "nowhere"}), 404, "not_found", "nowhere", "web-10"
        )
        assert "climbing, health-404" in message
        # A file that is no deployment has no id to be found by.
        assert_error(await http.get("/api/v1/deployment", params={"id": "port-80"}), 404, "not_found", "port-80")
        assert_error(await http.get("/api/v1/deployment"), 400, "invalid_input", "id")
        assert_error(await http.get("/api/v1/deployment", params={"id": "web", "x": "1"}), 400, "invalid_input", "x")
        assert_error(await http.get("/api/v1/deployments", params={"kind": "x"}), 400, "invalid_input", "kind")
        assert_error(await http.get("/api/v1/deployments/check", params={"id": "web"}), 400, "invalid_input", "id")
        assert_error(await http.post("/api/v1/deployments/check"), 405, "method_not_allowed")


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_the_tools_and_the_resource_answer_over_mcp(
    deploy_root: Path, deploy_executor: Executor, mode: Any
) -> None:
    async with connect(LocalBackend(deploy_executor), mode) as client:
        listed = await client.call_tool("svc_deployments", {})
        one = await client.call_tool("svc_deployment", {"id": "web-2"})
        checked = await client.call_tool("svc_deploy_check", {})
        resource = await client.read_resource("svc://deployments")
        unknown = await client.call_tool("svc_deployment", {"id": "nowhere"})
        missing = await client.call_tool("svc_deployment", {})
    answers = []
    for result in (listed, one, checked):
        assert result.is_error is False
        text = result.content[0]
        assert isinstance(text, types.TextContent)
        assert str(deploy_root) not in text.text
        answers.append(json.loads(text.text))
    assert answers[0] == _golden("list")
    assert answers[1]["id"] == "web-2"
    assert answers[1]["build"]["package"] == "tool"
    assert answers[2] == _golden("check")
    (content,) = resource.contents
    assert isinstance(content, types.TextResourceContents)
    assert content.mime_type == "application/json"
    assert json.loads(content.text) == _golden("list")
    for result, code in ((unknown, "not_found"), (missing, "invalid_input")):
        assert result.is_error is True
        error = result.content[0]
        assert isinstance(error, types.TextContent)
        assert error.text.startswith(f"{code}: ")
        assert str(deploy_root) not in error.text


async def test_svc_own_repository_declares_no_deployment(client: httpx.AsyncClient) -> None:
    listed = await client.get("/api/v1/deployments")
    assert listed.status_code == 200
    assert listed.json() == {"count": 0, "deployments": []}
    assert (await client.get("/api/v1/deployments/check")).json() == {"ok": True, "decided": 0, "refusals": []}
    assert_error(
        await client.get("/api/v1/deployment", params={"id": "absent"}),
        404,
        "not_found",
        "the layer declares no deployment",
    )


def test_the_operations_are_reads_without_command_line_words() -> None:
    registry = builtin_registry()
    caps = [registry.by_id[f"deploy.{name}"] for name in ("list", "get", "check")]
    assert [c.kind for c in caps] == ["query"] * 3
    assert [c.exposure.cli for c in caps] == [()] * 3
    assert [c.cache.policy for c in caps] == ["disabled", "disabled", "process"]
    assert (caps[2].cache.max_entries, caps[2].cache.ttl_seconds) == (2, 5)
