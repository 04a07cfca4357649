"""A checkout without `.ai/` (in Git or outside it): what refuses, what still answers and says so.

Every query is asked with each of its examples in such a checkout; exactly the capabilities of `REFUSING` answer
the one `require_layer` refusal (404 over HTTP, a tool error over MCP, exit 10 and one line on the command line);
every other answers, since it describes svc itself or says the absence in its answer. The table is the one of
docs/cli.md, "A checkout without .ai/".
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
import trio
from asyncclick.testing import CliRunner
from mcp import types

from svc._errors import NotFound, SvcError
from svc.api import LocalBackend, serve_http
from svc.capabilities import builtin_registry
from svc.cli import build_cli
from svc.host._service import open_service
from svc.layer import Repository
from svc.registry import Capability
from svc.runtime import Actor, Executor
from tests.api.test_mcp import connect
from tests.conftest import make_checkout

#: The queries that refuse a checkout without `.ai/`: `graph.get` for the graphs of `LAYER_GRAPHS` (the others
#: draw svc's registry), `objects.get` for a URI of the layer (a query's resource is svc's own and answers).
REFUSING = {
    "deploy.check",
    "deploy.get",
    "deploy.list",
    "directories.list",
    "distribution.releases",
    "distribution.status",
    "graph.get",
    "objects.get",
    "objects.list",
    "objects.verify",
    "plan.issues",
    "plan.model",
    "plan.next",
    "plan.record",
    "plan.roadmap",
    "plan.status",
    "plan.validate",
    "plan.waves",
}
LAYER_GRAPHS = {"layer", "rules", "adrs", "use-cases", "why", "product"}
#: Examples that are an error in any checkout without the file they read (beside those declared as errors).
MISSING_FILE = {("release.changelog", "unreleased")}
#: Modules whose queries read no file of the checkout's layer: executions (this process's memory).
NOT_ASKED = {"executions"}
GIT_MESSAGE = (
    "there is no .ai/ layer to read: the checkout bare-git/ has no .ai/ folder at its top level; create "
    ".ai/manifest.yaml (schema: ai-repository/v1) to start one, or run svc in a checkout that has one"
)
DIR_MESSAGE = (
    "there is no .ai/ layer to read: bare-dir/ is not inside a Git checkout and has no .ai/ folder; run svc "
    "inside a checkout that has one (or name it with --repo)"
)
#: Commands that refuse, beside the plan family (tests/capabilities/test_plan_for_people.py).
REFUSING_COMMANDS = [["distribution", "releases"], ["distribution", "status"]]


def _bare(tmp_path: Path, *, git: bool) -> Path:
    return make_checkout(tmp_path / ("bare-git" if git else "bare-dir"), layer=False, git=git).resolve()


async def _ask(ex: Executor, cap: Capability, given: dict[str, Any]) -> tuple[bytes, SvcError | None]:
    """The answer of `cap` to `given`, or the error it answered."""
    try:
        return await ex.call(cap, ex.decode_value(cap, given), actor=Actor(kind="cli", pid=1)), None
    except SvcError as exc:
        return b"", exc


@pytest.mark.bound(180)  # every example of every query: health and artifacts read the whole checkout
@pytest.mark.parametrize("git", [True, False], ids=["git-checkout", "no-git"])
async def test_exactly_the_layer_queries_refuse_and_every_other_answers(tmp_path: Path, git: bool) -> None:
    root = _bare(tmp_path, git=git)
    refused: set[tuple[str, str]] = set()
    answered: set[tuple[str, str]] = set()
    async with open_service(Repository.discover(root), surface="cli", watch=False) as ex:
        for cap in ex.runtime.registry.capabilities:
            if cap.kind != "query" or cap.module in NOT_ASKED:
                continue
            for example in cap.examples:
                case = (cap.id, example.name)
                expected_error = example.status != 200 or case in MISSING_FILE
                body, error = await _ask(ex, cap, example.input)
                if isinstance(error, NotFound) and "there is no .ai/ layer to read" in error.message:
                    assert error.message == (GIT_MESSAGE if git else DIR_MESSAGE), case
                    refused.add(case)
                elif error is not None:
                    assert expected_error, (case, error.code, error.message)
                else:
                    assert not expected_error, case
                    assert str(root) not in body.decode(), case
                    answered.add(case)
    assert {cid for cid, _ in refused} == REFUSING
    assert {name for cid, name in refused if cid == "graph.get"} == LAYER_GRAPHS
    assert {name for cid, name in answered if cid == "graph.get"} == {"registry", "composed"}
    assert ("objects.get", "builtin") in answered  # a query's resource is svc's own
    assert ("objects.get", "rule") in refused  # an object of the layer is not
    assert {"continuity.state", "health.report", "commands.list", "design.system", "mesh.status"} <= {
        cid for cid, _ in answered
    }
    assert sorted(p.name for p in root.iterdir()) == ([".git"] if git else [])


@pytest.fixture
async def bare_server(tmp_path: Path, nursery: trio.Nursery) -> AsyncIterator[tuple[str, Path]]:
    root = _bare(tmp_path, git=True)
    async with open_service(Repository.discover(root), surface="http", watch=False) as ex:
        shutdown = trio.Event()
        url: str = await nursery.start(functools.partial(serve_http, ex, port=0, shutdown=shutdown))
        yield url, root
        shutdown.set()


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/api/v1/objects", {}),
        ("/api/v1/objects/verify", {"limit": "3"}),
        ("/api/v1/object", {"uri": "svc://rule/project.anything"}),
        ("/api/v1/directories", {}),
        ("/api/v1/graph", {"id": "rules"}),
        ("/api/v1/distribution/releases", {}),
    ],
)
async def test_http_answers_404_naming_the_missing_layer(
    bare_server: tuple[str, Path], path: str, params: dict[str, str]
) -> None:
    url, root = bare_server
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        response = await http.get(path, params=params)
    assert response.status_code == 404, response.text
    assert response.json() == {"error": {"code": "not_found", "message": GIT_MESSAGE}}
    assert str(root) not in response.text


@pytest.mark.bound(120)
async def test_http_still_answers_what_describes_svc(bare_server: tuple[str, Path]) -> None:
    url, root = bare_server
    async with httpx.AsyncClient(base_url=url, timeout=100) as http:
        for path, params in (
            ("/api/v1/graph", {"id": "registry"}),
            ("/api/v1/object", {"uri": "svc://executions/protocol"}),
            ("/api/v1/distribution", {}),
            ("/api/v1/continuity", {}),
            ("/api/v1/health", {}),
        ):
            response = await http.get(path, params=params)
            assert response.status_code == 200, (path, response.text)
            assert str(root) not in response.text
        continuity = (await http.get("/api/v1/continuity")).json()
    assert continuity["present"] is False


async def test_mcp_answers_a_tool_error_naming_the_missing_layer(tmp_path: Path) -> None:
    root = _bare(tmp_path, git=True)
    async with (
        open_service(Repository.discover(root), surface="mcp", watch=False) as ex,
        connect(LocalBackend(ex), "2026-07-28") as client,
    ):
        for tool, arguments in (("svc_list", {}), ("svc_directories", {}), ("svc_graph", {"id": "adrs"})):
            result = await client.call_tool(tool, arguments)
            assert result.is_error is True, tool
            text = result.content[0]
            assert isinstance(text, types.TextContent)
            assert text.text == f"not_found: {GIT_MESSAGE}", tool
        graph = await client.call_tool("svc_graph", {"id": "registry"})
        assert graph.is_error is not True


async def _invoke(*args: str) -> Any:
    return await CliRunner().invoke(build_cli(), list(args), catch_exceptions=False)


@pytest.mark.parametrize("git", [True, False], ids=["git-checkout", "no-git"])
@pytest.mark.parametrize("words", REFUSING_COMMANDS, ids=" ".join)
async def test_a_refusing_command_exits_10_with_one_line_naming_ai(tmp_path: Path, git: bool, words: list[str]) -> None:
    root = _bare(tmp_path, git=git)
    for extra in ([], ["--json"]):
        result = await _invoke("--repo", str(root), *words, *extra)
        assert (result.exit_code, result.stdout) == (10, ""), (words, extra)
        assert result.stderr == f"svc: not_found: {GIT_MESSAGE if git else DIR_MESSAGE}\n"
        assert ".ai/" in result.stderr


def test_every_refusing_capability_with_command_words_is_tested() -> None:
    registry = builtin_registry()
    worded = {registry.by_id[cid].exposure.cli for cid in REFUSING if registry.by_id[cid].exposure.cli}
    plan = {words for words in worded if words[0] == "plan"}
    assert worded - plan == {tuple(words) for words in REFUSING_COMMANDS}


@pytest.mark.bound(120)
@pytest.mark.parametrize(
    ("words", "stdout", "stderr"),
    [
        (["distribution", "show"], "binary\tsvc", "has no .ai/ layer, so this is svc's own distribution model"),
        (["distribution", "artifact", "linux-x86_64-gnu", "{tag}"], "target\tlinux-x86_64-gnu", "has no .ai/ layer"),
        (["health", "ready"], "ready\tyes", "has no .ai/ layer: no object is served"),
        (["health", "report"], "this checkout has no .ai/ folder; there is no layer to serve", None),
        (["release", "changelog"], "present\tno", "CHANGELOG.md is absent from bare-git/: there is no release to show"),
        (["mesh", "status"], "off: no declaration under .ai/repo/mesh/", None),
        (["mesh", "peers"], "cooperation\tinactive\toff: no declaration under .ai/repo/mesh/", None),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else "",
)
async def test_a_command_that_answers_says_what_is_absent_in_words(
    tmp_path: Path, words: list[str], stdout: str, stderr: str | None
) -> None:
    root = _bare(tmp_path, git=True)
    result = await _invoke("--repo", str(root), *words)
    assert result.exit_code == 0, result.output
    assert stdout in result.stdout
    if stderr is not None:
        assert stderr in result.stderr
        notes = [line for line in result.stderr.splitlines() if "absent" in line or ".ai/" in line]
        assert len(notes) == 1, result.stderr
    assert str(root) not in result.output
    as_json = await _invoke("--repo", str(root), *words, "--json")
    assert as_json.exit_code == 0
    msgspec.json.decode(as_json.stdout)
    if stderr is not None:
        assert stderr not in as_json.stderr


async def test_a_checkout_with_a_layer_gets_no_note(tmp_path: Path) -> None:
    root = make_checkout(tmp_path / "layered")
    for words in (["distribution", "show"], ["health", "ready"]):
        result = await _invoke("--repo", str(root), *words)
        assert result.exit_code == 0, result.output
        assert "no .ai/ layer" not in result.stderr
