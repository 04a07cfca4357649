"""`continuity.state` through the executor, over loopback HTTP, as an MCP tool and as the resource `svc://continuity`."""

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

from svc.api import LocalBackend, serve_http
from svc.capabilities import _continuity
from svc.host._service import open_service
from svc.layer import Repository
from svc.runtime import Actor, Executor
from tests.api.test_mcp import connect
from tests.layer.test_continuity import NOW, checkout, expected, write_fixture

ACTOR = Actor(kind="internal")
#: Every reading of the clock by `continuity.state` in this module's tests.
READINGS: list[float] = []


def fixed_clock() -> float:
    READINGS.append(NOW + 0.9)
    return READINGS[-1]


@pytest.fixture
def fixture_root(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    root = checkout(tmp_path / "work")
    return root, write_fixture(root)


@pytest.fixture
async def served(
    fixture_root: tuple[Path, dict[str, str]], monkeypatch: pytest.MonkeyPatch, nursery: trio.Nursery
) -> AsyncIterator[tuple[Executor, str]]:
    READINGS.clear()
    monkeypatch.setattr(_continuity, "clock", fixed_clock)
    root, _ = fixture_root
    async with open_service(Repository.discover(root), surface="http", watch=False) as ex:
        shutdown = trio.Event()
        url: str = await nursery.start(functools.partial(serve_http, ex, port=0, shutdown=shutdown))
        yield ex, url
        shutdown.set()


def no_path(text: str, root: Path) -> None:
    assert str(root) not in text
    assert os.path.realpath(root) not in text


async def test_every_surface_answers_the_golden_state(
    served: tuple[Executor, str], fixture_root: tuple[Path, dict[str, str]]
) -> None:
    ex, url = served
    root, commits = fixture_root
    golden = expected(root, commits)
    cap = ex.runtime.registry.by_id["continuity.state"]
    body = await ex.call(cap, ex.decode_value(cap, {}), actor=ACTOR)
    assert msgspec.json.decode(body) == golden
    assert len(READINGS) == 1
    no_path(body.decode(), root)
    cache = ex.cache("continuity.state")
    assert cache is not None
    assert (cap.cache.policy, cap.cache.max_entries, cap.cache.ttl_seconds) == ("process", 2, 2)
    assert cap.exposure.cli == ()

    async with httpx.AsyncClient(base_url=url) as http:
        r = await http.get("/api/v1/continuity")
        assert r.status_code == 200, r.text
        assert r.json() == golden
        no_path(r.text, root)
        bad = await http.get("/api/v1/continuity", params={"worktree": "/"})
        assert bad.status_code == 400
        assert bad.json()["error"]["code"] == "invalid_input"
        assert (await http.post("/api/v1/continuity", json={})).status_code == 405

    async with connect(LocalBackend(ex), "legacy") as client:
        result = await client.call_tool("svc_continuity", {})
        resources = (await client.list_resources()).resources
        read = await client.read_resource("svc://continuity")
        wrong = await client.call_tool("svc_continuity", {"path": "x"})
    assert result.is_error is False
    assert result.structured_content == golden
    (content,) = result.content
    assert isinstance(content, types.TextContent)
    no_path(content.text, root)
    assert wrong.is_error is True
    listed = {r.uri: r for r in resources}
    assert listed["svc://continuity"].name == "continuity"
    (text,) = read.contents
    assert isinstance(text, types.TextResourceContents)
    assert (text.uri, text.mime_type) == ("svc://continuity", "application/json")
    assert msgspec.json.decode(text.text) == golden
    no_path(text.text, root)


async def test_a_checkout_without_local_state_answers_present_false(tmp_path: Path) -> None:
    root = checkout(tmp_path / "fresh")
    async with open_service(Repository.discover(root), surface="cli", watch=False) as ex:
        cap = ex.runtime.registry.by_id["continuity.state"]
        answer: dict[str, Any] = msgspec.json.decode(await ex.call(cap, ex.decode_value(cap, {}), actor=ACTOR))
    assert answer["present"] is False
    assert answer["worktree"] == "fresh"
    assert answer["tallies"] == {"blockers": 0, "checkpoints": 0, "handovers": 0, "ledger_lines": 0}
    assert set(answer) == {"present", "worktree", "branch", "head", "working_tree", "tallies"}
