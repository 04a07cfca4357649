"""`commands.list`, `commands.get`, `commands.graph` over HTTP, MCP and the `svc://commands` resource, and
`svc commands refresh` on the command line.

The fixture checkout has a justfile (a grouped recipe, a `[confirm]` recipe, one with parameters and an alias)
whose recipes a refresh without `just` cached, and a tool registry in a share directory named by `SVC_SHARE`.
The golden files `tests/capabilities/golden/commands-*.json` hold the graph's tool and workflow commands with
its diagnostics, and a few of svc's own commands (the rest of svc's commands are compared with the click tree
in `tests/surfaces/test_executable_commands.py`); `SVC_UPDATE_GOLDEN=1` rewrites them.
"""

from __future__ import annotations

import functools
import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import mcp_types as types
import msgspec
import pytest
import trio
from asyncclick.testing import CliRunner

from svc.api import LocalBackend, serve_http
from svc.capabilities import builtin_registry
from svc.cli import build_cli
from svc.host._service import open_service
from svc.layer import Repository
from svc.layer._command_graph import CommandGraphReport
from svc.layer._command_sources import CACHE, JUST_DUMP, TEXT_READER, load_command_graph
from svc.layer._share import SHARE_ENV
from svc.runtime import Actor, Executor
from svc.surfaces import executable_commands
from tests.api._wire import assert_error
from tests.api.test_mcp import connect
from tests.conftest import make_checkout
from tests.layer.test_command_sources import fake_just

ACTOR = Actor(kind="internal")
GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("SVC_UPDATE_GOLDEN") == "1"

JUSTFILE = """\
set shell := ["bash", "-cu"]

version := "1.2"

# Build the site into public/
[group('site')]
site:
    echo building {{version}}

# Remove everything the build wrote
[confirm]
clean:
    rm -rf public

# Deploy one environment of the site
[group('site')]
deploy env target='web' *flags:
    echo {{env}} {{target}} {{flags}}

alias d := deploy

# Publish the packages with a token
publish +files $api_token="":
    echo {{files}}

[private]
helper:
    true

_hidden:
    true
"""

TOOLS = """\
version: 1
commands:
  - id: check
    title: check
    summary: Is the current task still consistent with its policy?
    category: task
    visibility: public
    class: read-only
    requires_task: required
    syntax: tool check [--json]
  - id: checkpoint
    summary: Record compact progress inside the active task.
    category: continuity
    class: state-mutating
    syntax: tool checkpoint [--derive] < body.md
    note: A progress note, not a report.
  - id: init
    summary: Create the layer.
    category: system
    class: generated-output-mutating
    requires_repository: false
    syntax: tool init --scope <path>
  - id: doctor
    summary: Dispatched but not listed.
    visibility: internal
"""


def _golden(name: str, answer: Any) -> None:
    text = msgspec.json.format(msgspec.json.encode(answer), indent=2).decode() + "\n"
    path = GOLDEN / f"{name}.json"
    if UPDATE:
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert text == path.read_text(), f"{name}: the answer differs from {path.name}"


def _without_just() -> str:
    """The PATH without any directory that holds a `just`."""
    dirs = os.environ.get("PATH", "").split(os.pathsep)
    return os.pathsep.join(d for d in dirs if d and not os.path.exists(os.path.join(d, "just")))


async def _refresh(root: Path) -> Any:
    return await CliRunner().invoke(build_cli(), ["--repo", str(root), "commands", "refresh"], catch_exceptions=False)


@pytest.fixture
def share(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A share directory with a tool registry, named by SVC_SHARE."""
    directory = tmp_path / "share"
    directory.mkdir()
    (directory / "commands.yaml").write_text(TOOLS, encoding="utf-8")
    monkeypatch.setenv(SHARE_ENV, str(directory))
    return directory


@pytest.fixture
def bare_root(tmp_path: Path) -> Path:
    """A checkout with the fixture justfile and no cache yet."""
    root = make_checkout(tmp_path / "checkout", layer=False, git=False).resolve()
    (root / "justfile").write_text(JUSTFILE, encoding="utf-8")
    return root


@pytest.fixture
async def root(bare_root: Path, share: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fixture checkout after `svc commands refresh` ran without `just` on the PATH."""
    monkeypatch.setenv("PATH", _without_just())
    result = await _refresh(bare_root)
    assert result.exit_code == 0, result.output
    return bare_root


@pytest.fixture
async def commands_executor(root: Path) -> AsyncIterator[Executor]:
    async with open_service(Repository.discover(root), surface="http", watch=False) as ex:
        yield ex


@pytest.fixture
async def commands_server(commands_executor: Executor, nursery: trio.Nursery) -> AsyncIterator[str]:
    shutdown = trio.Event()
    url: str = await nursery.start(functools.partial(serve_http, commands_executor, port=0, shutdown=shutdown))
    yield url
    shutdown.set()


async def call(executor: Executor, cid: str, **params: Any) -> Any:
    cap = executor.runtime.registry.by_id[cid]
    return msgspec.json.decode(await executor.call(cap, executor.decode_value(cap, params), actor=ACTOR))


async def test_the_refresh_prints_what_it_wrote(bare_root: Path, share: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", _without_just())
    result = await _refresh(bare_root)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith(f"wrote {CACHE} (fingerprint ")
    assert lines[2:] == [
        "  tool       3 commands",
        "  workflow   4 commands",
        "  info       workflow-runner-missing: `just` is not on the PATH; the recipes were read from the text of "
        "justfile",
    ]
    assert lines[1].startswith("  executable ")
    assert (bare_root / ".ai/local/.gitignore").read_bytes() == b"# svc's own state: never tracked.\n*\n"
    assert (bare_root / CACHE).is_file()
    assert str(bare_root) not in result.output


async def test_the_fixture_graph_is_its_golden_answer(commands_server: str, root: Path, share: Path) -> None:
    async with httpx.AsyncClient(base_url=commands_server) as http:
        answer = await http.get("/api/v1/commands/graph")
    assert answer.status_code == 200
    report = msgspec.json.decode(answer.content, type=CommandGraphReport)
    assert report == CommandGraphReport(
        graph=load_command_graph(root, executable_commands(builtin_registry())), errors=0
    )
    assert len(report.graph.fingerprint) == 16
    for secret in (str(root), str(share)):
        assert secret not in answer.text
    graph = report.graph
    foreign = msgspec.structs.replace(
        graph, fingerprint="(over every command)", commands=[n for n in graph.commands if n.origin != "executable"]
    )
    _golden("commands-tool-and-workflow", foreign)
    chosen = {"executable.plan.status", "executable.plan.start", "executable.mesh.review"}
    chosen |= {"executable.commands.refresh", "executable.serve"}
    _golden("commands-executable", [n for n in graph.commands if n.id in chosen])


async def test_every_example_answers_its_status_over_http(commands_executor: Executor, commands_server: str) -> None:
    async with httpx.AsyncClient(base_url=commands_server) as http:
        for cid in ("commands.list", "commands.get", "commands.graph"):
            cap = commands_executor.runtime.registry.by_id[cid]
            assert cap.exposure.http is not None
            for example in cap.examples:
                answer = await http.get(cap.exposure.http.path, params=example.input)
                assert answer.status_code == example.status, (cid, example.name, answer.text)
                if example.status == 200:
                    assert answer.json() == await call(commands_executor, cid, **example.input)


async def test_list_filters_by_origin_effect_and_search(commands_server: str) -> None:
    async with httpx.AsyncClient(base_url=commands_server) as http:
        whole = (await http.get("/api/v1/commands")).json()
        workflows = (await http.get("/api/v1/commands", params={"origin": "workflow"})).json()
        read_only = (await http.get("/api/v1/commands", params={"effect": "read_only"})).json()
        local = (await http.get("/api/v1/commands", params={"effect": "local_mutation", "origin": "tool"})).json()
        found = (await http.get("/api/v1/commands", params={"search": "DEPLOY"})).json()
    assert whole["total"] == len(whole["commands"]) == workflows["total"] == read_only["total"]
    assert [c["id"] for c in workflows["commands"]] == [
        "workflow.clean",
        "workflow.deploy",
        "workflow.publish",
        "workflow.site",
    ]
    assert {c["effect"] for c in read_only["commands"]} == {"read_only"}
    assert "executable.plan.status" in {c["id"] for c in read_only["commands"]}
    assert [c["id"] for c in local["commands"]] == ["tool.check", "tool.checkpoint"]
    assert [c["id"] for c in found["commands"]] == ["workflow.deploy"]
    assert list(workflows["commands"][0]) == ["id", "invocation", "summary", "origin", "effect", "projections"]
    assert workflows["commands"][1]["group"] == "site"


async def test_bad_inputs_answer_their_status_over_http(commands_server: str) -> None:
    async with httpx.AsyncClient(base_url=commands_server) as http:
        message = assert_error(await http.get("/api/v1/commands", params={"origin": "shell"}), 400, "invalid_input")
        assert message == "unknown origin 'shell'; the origins are executable, tool, workflow"
        message = assert_error(await http.get("/api/v1/commands", params={"effect": "readonly"}), 400, "invalid_input")
        assert message == (
            "unknown effect 'readonly'; the effects are, in order, read_only, local_mutation, "
            "repository_mutation, network_mutation, destructive"
        )
        assert_error(await http.get("/api/v1/commands", params={"search": "x" * 201}), 400, "invalid_input", "search")
        assert_error(await http.get("/api/v1/commands", params={"depth": "1"}), 400, "invalid_input", "depth")
        message = assert_error(
            await http.get("/api/v1/command", params={"id": "executable.plan.statu"}), 404, "not_found"
        )
        assert message.startswith(
            "no command 'executable.plan.statu' (GET /api/v1/commands lists them); did you mean executable.plan.status"
        )
        assert_error(await http.get("/api/v1/command"), 400, "invalid_input", "id")
        assert_error(await http.get("/api/v1/command", params={"id": ""}), 400, "invalid_input", "id")
        assert_error(await http.get("/api/v1/commands/graph", params={"x": "1"}), 400, "invalid_input", "x")


async def test_get_answers_the_whole_node(commands_server: str) -> None:
    async with httpx.AsyncClient(base_url=commands_server) as http:
        deploy = (await http.get("/api/v1/command", params={"id": "workflow.deploy"})).json()
        refresh = (await http.get("/api/v1/command", params={"id": "executable.commands.refresh"})).json()
    assert deploy["invocation"] == "just deploy"
    assert deploy["aliases"] == ["d"]
    assert deploy["provenance"] == {"declared_in": "justfile", "read_by": TEXT_READER}
    assert [a["name"] for a in deploy["arguments"]] == ["env", "target", "flags"]
    assert (refresh["effect"], refresh["runnable"]) == ("local_mutation", True)
    assert refresh["provenance"] == {"declared_in": "src/svc/surfaces/_commands.py"}


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_the_tools_and_the_resource_answer_over_mcp(commands_executor: Executor, mode: Any) -> None:
    listing = await call(commands_executor, "commands.list")
    workflows = await call(commands_executor, "commands.list", origin="workflow")
    one = await call(commands_executor, "commands.get", id="tool.check")
    whole = await call(commands_executor, "commands.graph")
    async with connect(LocalBackend(commands_executor), mode) as client:
        answers = [
            await client.call_tool("svc_commands", {"origin": "workflow"}),
            await client.call_tool("svc_command", {"id": "tool.check"}),
            await client.call_tool("svc_command_graph", {}),
        ]
        resource = await client.read_resource("svc://commands")
        errors = [
            await client.call_tool("svc_commands", {"effect": "lethal"}),
            await client.call_tool("svc_command", {"id": "tool.nope"}),
            await client.call_tool("svc_command", {}),
        ]
    for result, expected in zip(answers, (workflows, one, whole), strict=True):
        text = result.content[0]
        assert isinstance(text, types.TextContent)
        assert (result.is_error, msgspec.json.decode(text.text)) == (False, expected)
    (content,) = resource.contents
    assert isinstance(content, types.TextResourceContents)
    assert (content.mime_type, msgspec.json.decode(content.text)) == ("application/json", listing)
    for result, code in zip(errors, ("invalid_input", "not_found", "invalid_input"), strict=True):
        assert result.is_error is True
        error = result.content[0]
        assert isinstance(error, types.TextContent)
        assert error.text.startswith(f"{code}: ")


async def test_a_request_starts_no_process(commands_executor: Executor, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"a request started a process: {args!r}")

    async def refuse_async(*args: Any, **kwargs: Any) -> Any:
        refuse(*args)

    for target, name in ((subprocess, "Popen"), (subprocess, "run"), (os, "posix_spawn"), (os, "fork")):
        monkeypatch.setattr(target, name, refuse)
    monkeypatch.setattr(trio, "run_process", refuse_async)
    listed = await call(commands_executor, "commands.list", origin="workflow")
    assert [c["invocation"] for c in listed["commands"]] == ["just clean", "just deploy", "just publish", "just site"]
    assert (await call(commands_executor, "commands.get", id="workflow.publish"))["arguments"][1]["secrecy"] == "secret"


async def test_with_just_on_the_path_the_refresh_caches_its_dump(
    bare_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dump = {
        "aliases": {"d": {"attributes": [], "name": "d", "target": "deploy"}},
        "recipes": {
            "deploy": {
                "attributes": [{"group": "site"}],
                "doc": "Deploy one environment of the site",
                "name": "deploy",
                "parameters": [{"default": None, "kind": "singular", "name": "env"}],
            },
        },
        "source": str(bare_root / "justfile"),
    }
    monkeypatch.setenv("PATH", fake_just(tmp_path, dump) + os.pathsep + _without_just())
    monkeypatch.delenv(SHARE_ENV, raising=False)
    result = await _refresh(bare_root)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[2:] == ["  tool       0 commands", "  workflow   1 command"]
    async with open_service(Repository.discover(bare_root), surface="http", watch=False) as executor:
        deploy = await call(executor, "commands.get", id="workflow.deploy")
        graph = await call(executor, "commands.graph")
    assert deploy["provenance"] == {"declared_in": "justfile", "read_by": JUST_DUMP}
    assert deploy["availability"] == {"available": True, "requires": ["repository", "workflow_runner"]}
    assert deploy["aliases"] == ["d"]
    assert graph["graph"]["diagnostics"] == []
    assert str(bare_root) not in msgspec.json.encode(graph).decode()


async def test_a_bad_or_old_cache_is_a_diagnostic_and_svc_commands_stay_current(root: Path) -> None:
    cached = msgspec.json.decode((root / CACHE).read_bytes())
    retired = {**cached["commands"][0], "id": "executable.retired", "path": ["retired"]}
    cached["commands"].insert(0, retired)
    (root / CACHE).write_bytes(msgspec.json.encode(cached))
    os.utime(root / "justfile", ns=(0, 0))
    async with open_service(Repository.discover(root), surface="http", watch=False) as executor:
        ids = {c["id"] for c in (await call(executor, "commands.list"))["commands"]}
        assert "executable.retired" not in ids
        assert {"executable.commands.refresh", "workflow.deploy"} <= ids
        (root / CACHE).write_bytes(b"\x00 not a graph")
        report = await call(executor, "commands.graph")
    assert report["errors"] == 0
    assert [(d["severity"], d["code"]) for d in report["graph"]["diagnostics"]] == [
        ("warning", "workflow-cache-unreadable")
    ]
    assert not [c for c in report["graph"]["commands"] if c["origin"] == "workflow"]
