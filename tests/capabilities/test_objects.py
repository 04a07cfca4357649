"""`objects.list`, `objects.get` and `objects.verify` over HTTP, the MCP tools and resources, and executions."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
import trio

from svc.api import LocalBackend
from svc.capabilities import _objects
from svc.host._service import open_service
from svc.layer import Repository
from svc.nursery import Engine
from svc.runtime import Actor, Executor
from tests.conftest import ROOT, make_checkout

ACTOR = Actor(kind="internal")
MCP = Actor(kind="mcp", transport="stdio")
RULE = "svc://rule/project.http-never-writes-the-repository@1"


async def call(executor: Executor, cid: str, **params: Any) -> Any:
    cap = executor.runtime.registry.by_id[cid]
    return msgspec.json.decode(await executor.call(cap, executor.decode_value(cap, params), actor=ACTOR))


def claims_checkout(tmp_path: Path) -> Path:
    """svc's own layer in a Git checkout, plus a tracked collection file `docs/CLAIMS.yaml` of two claims."""
    root = make_checkout(tmp_path / "checkout")
    docs = root / "docs"
    docs.mkdir()
    (docs / "CLAIMS.yaml").write_text("claims:\n  - id: fast\n  - id: small\n", encoding="utf-8")
    sources = root / ".ai/repo/knowledge/sources.yaml"
    sources.write_text(
        sources.read_text(encoding="utf-8")
        + "\n  - {id: claims, kind: claim, discovery: vcs, pathspec: ':(glob)docs/CLAIMS.yaml'}\n",
        encoding="utf-8",
    )
    subprocess.run(["git", "add", "-A"], cwd=root, check=True, capture_output=True)
    return root


@pytest.fixture
async def layered(tmp_path: Path) -> AsyncIterator[Executor]:
    root = claims_checkout(tmp_path)
    async with open_service(Repository.discover(root), surface="http", watch=False) as ex:
        yield ex


async def test_list_over_http_answers_every_object_in_uri_order_without_absolute_paths(
    client: httpx.AsyncClient, executor: Executor
) -> None:
    answer = (await client.get("/api/v1/objects")).json()
    index = await executor.runtime.objects_async()
    assert answer["count"] == len(index) == len(answer["objects"])
    assert [o["uri"] for o in answer["objects"]] == sorted(o.uri for o in index.objects)
    assert answer["state"] == "ok"
    assert answer["diagnostics"] == []
    rules = (await client.get("/api/v1/objects", params={"kind": "rule"})).json()
    assert {o["kind"] for o in rules["objects"]} == {"rule"}
    assert set(rules["objects"][0]) == {"uri", "id", "kind", "identity", "title", "description", "path"}
    tagged = (await client.get("/api/v1/objects", params={"tag": "security"})).json()
    assert RULE in {o["uri"] for o in tagged["objects"]}
    for path in ("/api/v1/objects", f"/api/v1/object?uri={RULE}", "/api/v1/objects/verify"):
        assert str(ROOT) not in (await client.get(path)).text


async def test_a_kind_the_index_lacks_is_400_naming_the_kinds_held(client: httpx.AsyncClient) -> None:
    for path in ("/api/v1/objects", "/api/v1/objects/verify"):
        response = await client.get(path, params={"kind": "nope"})
        assert response.status_code == 400
        body = response.json()["error"]
        assert body["code"] == "invalid_input"
        assert "'nope'" in body["message"]
        assert "rule" in body["message"]
    assert (await client.get("/api/v1/objects", params={"limit": "3"})).status_code == 400
    assert (await client.get("/api/v1/objects/verify", params={"limit": "-1"})).status_code == 400


async def test_get_answers_an_object_and_404s_an_unknown_uri(client: httpx.AsyncClient) -> None:
    view = (await client.get("/api/v1/object", params={"uri": RULE})).json()
    assert view["source"] == "declarative"
    assert view["metadata"]["id"] == "project.http-never-writes-the-repository"
    assert view["provenance"]["path"] == ".ai/repo/rules/project/http-never-writes-the-repository.v1.md"
    assert view["content"] == (ROOT / view["provenance"]["path"]).read_text(encoding="utf-8")
    missing = await client.get("/api/v1/object", params={"uri": "svc://rule/none@1"})
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"
    assert (await client.get("/api/v1/object")).status_code == 400


async def test_get_of_a_query_resource_is_byte_identical_to_mcp_resources_read(executor: Executor) -> None:
    backend = LocalBackend(executor)
    for uri in ("svc://executions/protocol", RULE):
        view = await call(executor, "objects.get", uri=uri)
        read = await backend.read_resource(uri, actor=MCP)
        assert read.contents[0].text == view["content"]  # type: ignore[union-attr]
        assert read.contents[0].mime_type == view["media_type"]
    view = await call(executor, "objects.get", uri="svc://executions/protocol")
    assert (view["source"], view["id"], view["kind"], view["identity"]) == (
        "builtin",
        "executions.protocol",
        "query",
        "executions protocol",
    )
    assert view["provenance"] == {"source": "builtin", "module": "executions"}
    assert view["answer"] == msgspec.json.decode(view["content"])


async def test_every_object_is_an_mcp_resource_and_the_tools_answer(executor: Executor) -> None:
    backend = LocalBackend(executor)
    listed = {r.uri for r in (await backend.list_resources()).resources}
    index = await executor.runtime.objects_async()
    assert {o.uri for o in index.objects} <= listed
    result = await backend.call_tool("svc_list", {"kind": "rule"}, actor=MCP)
    assert result.structured_content is not None
    assert result.structured_content["count"] == len(index.of_kind("rule"))
    got = await backend.call_tool("svc_get", {"uri": RULE}, actor=MCP)
    assert got.structured_content is not None
    assert got.structured_content["uri"] == RULE
    verified = await backend.call_tool("svc_verify_objects", {"limit": 3}, actor=MCP)
    assert verified.structured_content is not None
    assert verified.structured_content["index_is_current"] is True


async def test_verify_reports_changed_missing_and_unreadable_files(layered: Executor) -> None:
    root = layered.runtime.repository.root
    index = await layered.runtime.objects_async()
    clean = await call(layered, "objects.verify")
    assert clean["index_is_current"] is True
    assert clean["files"] == clean["current"] == len({o.path for o in index.objects})
    assert clean["objects"] == len(index)
    assert clean["compared_by_content"] == clean["files"] - 1
    assert clean["fingerprint"] == index.fingerprint
    (root / ".ai/repo/project/issues/I0001.yaml").write_text("id: I0001\n", encoding="utf-8")
    (root / ".ai/repo/project/issues/I0002.yaml").unlink()
    (root / ".ai/repo/project/issues/I0003.yaml").write_bytes(b"id: \xff\n")
    (root / "docs/CLAIMS.yaml").write_text("claims:\n  - id: fast\n", encoding="utf-8")
    report = await call(layered, "objects.verify")
    assert report["index_is_current"] is False
    assert report["current"] + report["drifted"] == report["files"]
    assert [
        (f["path"], f["standing"], f["comparison"], f["objects"], f["example_uri"]) for f in report["findings"]
    ] == [
        ("docs/CLAIMS.yaml", "changed", "size", 2, "svc://claim/fast"),
        (".ai/repo/project/issues/I0001.yaml", "changed", "content", 1, "svc://issue/I0001"),
        (".ai/repo/project/issues/I0002.yaml", "missing", "content", 1, "svc://issue/I0002"),
        (".ai/repo/project/issues/I0003.yaml", "unreadable", "content", 1, "svc://issue/I0003"),
    ]
    assert str(root) not in msgspec.json.encode(report).decode()
    issues = await call(layered, "objects.verify", kind="issue", limit=2)
    assert (issues["files"], issues["drifted"]) == (2, 2)
    first = await call(layered, "objects.verify", limit=0)
    assert first["files"] == 1


async def test_verify_as_an_execution_reports_progress_diagnostics_and_can_be_cancelled(
    layered: Executor, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = layered.components.get(Engine)
    cap = engine.find_capability("objects.verify")
    root = layered.runtime.repository.root
    await layered.runtime.objects_async()
    (root / ".ai/repo/project/issues/I0001.yaml").unlink()
    done = engine.start(cap, layered.decode_value(cap, {"kind": "issue"}), actor=ACTOR)
    await done.done.wait()
    view = engine.store.view(done)
    assert view.state == "succeeded"
    assert [s.name for s in view.steps] == ["read"]
    assert [d.code for d in view.diagnostics] == ["layer_file_missing"]
    original = _objects._standing
    seen: list[str] = []

    def standing(repo_root: Path, group: list[Any]) -> Any:
        seen.append(group[0].path)
        if len(seen) == 2:
            trio.from_thread.run_sync(lambda: engine.cancel(running.id, by="cli"))
        return original(repo_root, group)

    monkeypatch.setattr(_objects, "_standing", standing)
    running = engine.start(cap, layered.decode_value(cap, {}), actor=ACTOR)
    await running.done.wait()
    assert running.state == "cancelled"
    assert len(seen) == 2
    assert [(s.name, s.state) for s in engine.store.view(running).steps] == [("read", "failed")]


async def test_a_generation_change_is_answered_from_the_previous_index_while_the_new_one_builds(
    layered: Executor,
) -> None:
    runtime = layered.runtime
    old = await runtime.objects_async()
    (runtime.repository.root / ".ai/repo/project/issues/I0001.yaml").unlink()
    runtime.generation.bump()
    assert await runtime.objects_async() is old
    new = await runtime.objects_async(fresh=True)
    assert new is not old
    assert new.get("svc://issue/I0001") is None
    assert old.get("svc://issue/I0001") is not None
