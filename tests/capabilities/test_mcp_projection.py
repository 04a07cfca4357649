"""`mcp.projection`: every field of McpProjection, the effect filter, client standings and findings."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from svc import InvalidInput
from svc.capabilities import builtin_registry
from svc.capabilities._mcp import CLIENTS, LAUNCHER, LAUNCHER_PATH, client_entry
from svc.host._service import open_service
from svc.layer import Repository
from svc.runtime import Actor, Executor
from svc.surfaces import PROTOCOL_VERSIONS, SERVED_METHODS, mcp_catalog
from svc.surfaces._surfaces import reachable
from tests.conftest import ROOT

ACTOR = Actor(kind="internal")


async def projection(executor: Executor, **params: Any) -> Any:
    cap = executor.runtime.registry.by_id["mcp.projection"]
    return msgspec.json.decode(await executor.call(cap, executor.decode_value(cap, params), actor=ACTOR))


@pytest.fixture
async def layered(checkout: Path) -> AsyncIterator[Executor]:
    async with open_service(Repository.discover(checkout), surface="cli", watch=False) as ex:
        yield ex


async def test_every_field_is_reported(layered: Executor) -> None:
    answer = await projection(layered)
    catalog = mcp_catalog(layered.runtime.registry)
    assert answer["server"] == {
        "name": "svc",
        "title": "svc: the capability registry of this repository's AI layer",
        "version": layered.runtime.version,
    }
    assert answer["protocol_versions"] == list(PROTOCOL_VERSIONS)
    assert answer["protocol_versions"] == sorted(answer["protocol_versions"], reverse=True)
    assert answer["transports"] == [
        {"id": "stdio", "reached_by": "svc mcp", "attached": 0},
        {"id": "http", "reached_by": "/mcp", "attached": 0},
    ]
    assert answer["serving"] == {
        "methods": list(SERVED_METHODS),
        "tools": True,
        "resources": True,
        "prompts": False,
        "notifications": False,
    }
    assert answer["tool_count"] == len(catalog.tools) == len(answer["tools"])
    assert [t["name"] for t in answer["tools"]] == [t.name for t in catalog.tools]
    first = answer["tools"][0]
    assert set(first) == {"name", "capability", "module", "title", "effect", "hints"}
    assert set(first["hints"]) == {"read_only", "destructive", "idempotent", "open_world"}
    assert sum(e["tools"] for e in answer["effects"]) == answer["tool_count"]
    assert [e["effect"] for e in answer["effects"]] == ["read", "process_state", "repository_mutation"]
    assert answer["writers"] == ["svc_plan_transition"]
    objects = await layered.runtime.objects_async()
    assert answer["resources"] == {
        "builtin": len(catalog.resources),
        "objects": len(objects),
        "template": "svc://<kind>/<identity>",
    }
    assert answer["launcher_in_repository"] is False
    assert [c["id"] for c in answer["clients"]] == ["claude-code", "codex", "cursor", "gemini", "vscode"]
    assert {c["standing"] for c in answer["clients"]} == {"absent"}
    assert [f["code"] for f in answer["findings"]] == ["mcp_launcher_missing", "mcp_no_client_configured"]
    assert all(f["message"] and f["remedy"] for f in answer["findings"])
    assert LAUNCHER in answer["findings"][0]["remedy"]
    assert '{\n  "mcpServers": {\n    "svc": {\n      "command": "bin/svc-mcp"' in answer["findings"][1]["remedy"]


async def test_the_effect_filter_keeps_tools_but_not_the_count(layered: Executor) -> None:
    everything = await projection(layered)
    writers = await projection(layered, effect="repository_mutation")
    reads = await projection(layered, effect="read")
    assert [t["name"] for t in writers["tools"]] == ["svc_plan_transition"]
    assert writers["tool_count"] == everything["tool_count"]
    assert writers["effects"] == everything["effects"]
    assert all(t["effect"] == "read" for t in reads["tools"])
    assert all(
        t["hints"] == {"read_only": True, "destructive": False, "idempotent": True, "open_world": False}
        for t in reads["tools"]
    )
    with pytest.raises(InvalidInput, match=r"\$\.effect"):
        await projection(layered, effect="writes")


async def test_clients_are_wired_foreign_or_absent(checkout: Path) -> None:
    root = checkout
    (root / "bin").mkdir()
    (root / LAUNCHER_PATH).write_text(LAUNCHER, encoding="utf-8")
    (root / ".mcp.json").write_text(client_entry(CLIENTS[0]), encoding="utf-8")
    (root / ".codex").mkdir()
    (root / ".codex/config.toml").write_text('[mcp_servers.other]\ncommand = "node"\nargs = ["x.js"]\n', "utf-8")
    (root / ".cursor").mkdir()
    (root / ".cursor/mcp.json").write_text("{ not json", encoding="utf-8")
    (root / ".vscode").mkdir()
    (root / ".vscode/mcp.json").write_text(
        json.dumps({"servers": {"svc": {"type": "stdio", "command": "svc", "args": ["--repo", ".", "mcp"]}}}),
        encoding="utf-8",
    )
    async with open_service(Repository.discover(root), surface="cli", watch=False) as executor:
        answer = await projection(executor)
    standing = {c["id"]: c["standing"] for c in answer["clients"]}
    assert standing == {
        "claude-code": "wired",
        "codex": "foreign",
        "cursor": "foreign",
        "gemini": "absent",
        "vscode": "wired",
    }
    assert answer["launcher_in_repository"] is True
    foreign = [f for f in answer["findings"] if f["code"] == "mcp_client_config_foreign"]
    assert [f["message"].split(" ")[0] for f in foreign] == [".codex/config.toml", ".cursor/mcp.json"]
    assert foreign[0]["remedy"].endswith('[mcp_servers.svc]\ncommand = "bin/svc-mcp"\n')
    assert not any(f["code"] == "mcp_no_client_configured" for f in answer["findings"])


@pytest.mark.parametrize("kind", CLIENTS, ids=lambda k: k.id)
async def test_each_clients_own_entry_wires_it(checkout: Path, kind: Any) -> None:
    target = checkout / kind.config
    target.parent.mkdir(exist_ok=True)
    target.write_text(client_entry(kind), encoding="utf-8")
    async with open_service(Repository.discover(checkout), surface="cli", watch=False) as executor:
        answer = await projection(executor)
    assert {c["id"]: c["standing"] for c in answer["clients"]}[kind.id] == "wired"


async def test_svcs_own_repository_ships_the_launcher_and_a_wired_client(tmp_path: Path) -> None:
    assert (ROOT / LAUNCHER_PATH).read_text(encoding="utf-8") == LAUNCHER
    assert (ROOT / LAUNCHER_PATH).stat().st_mode & 0o111
    assert json.loads((ROOT / ".mcp.json").read_text(encoding="utf-8")) == {
        "mcpServers": {"svc": {"command": "bin/svc-mcp"}}
    }
    copy = tmp_path / "svc"
    copy.mkdir()
    shutil.copytree(ROOT / ".ai", copy / ".ai", ignore=shutil.ignore_patterns("local"))
    shutil.copytree(ROOT / "bin", copy / "bin")
    shutil.copy(ROOT / ".mcp.json", copy / ".mcp.json")
    async with open_service(Repository.discover(copy), surface="cli", watch=False) as executor:
        answer = await projection(executor)
    assert answer["launcher_in_repository"] is True
    assert answer["findings"] == []


def test_the_closure_matrix_closes_every_mcp_declaration() -> None:
    registry = builtin_registry()
    surfaces = reachable(registry)
    for cap in registry.capabilities:
        mcp = cap.exposure.mcp
        if mcp is not None and mcp.tool is not None:
            assert surfaces.mcp_tools[mcp.tool] == cap.id
        if mcp is not None and mcp.resource is not None:
            assert surfaces.mcp_resources[mcp.resource.uri] == cap.id
    assert surfaces.mcp_tools["svc_mcp"] == "mcp.projection"
    assert surfaces.mcp_resources["svc://mcp"] == "mcp.projection"


async def test_a_client_file_that_is_no_regular_file_reads_as_foreign(checkout: Path) -> None:
    os.mkfifo(checkout / ".mcp.json")
    (checkout / ".gemini").mkdir()
    os.symlink("/dev/zero", checkout / ".gemini" / "settings.json")
    async with open_service(Repository.discover(checkout), surface="cli", watch=False) as executor:
        answer = await projection(executor)
    standing = {c["id"]: c["standing"] for c in answer["clients"]}
    assert (standing["claude-code"], standing["gemini"]) == ("foreign", "foreign")
