"""`resolve_environment` on a fixture checkout (markers, justfile, policy projections, lease), with fake tools."""

from __future__ import annotations

import json
import os
import platform
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from svc.layer import ObjectIndex, RepositoryEnvironment
from svc.layer._env_model import LayerSummary
from svc.layer._env_toolchains import satisfies, version_of
from svc.layer._env_workflows import natural_key, parse_dump
from svc.layer._environment import (
    explain_environment,
    project_identity,
    resolve_environment,
    summarise_layer,
    unavailable_layer,
)
from svc.layer._repository import Repository
from tests.layer._env_fixture import DUMP, environment_checkout, fake_tools, lease

NOW = "2026-11-21T12:00:00Z"
LAYER = LayerSummary(state="resolved", objects=0, capabilities=3, invalid=0, degraded=False)
TOOLS = "svc.environment.toolchains"


@pytest.fixture
def listening() -> Iterator[int]:
    """A port on 127.0.0.1 that accepts connections."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def resolve(root: Path, tools: str, *, probe: bool = False, layer: LayerSummary = LAYER) -> RepositoryEnvironment:
    return resolve_environment(
        Repository.discover(root),
        layer=layer,
        commit=None,
        now=NOW,
        probe_services=probe,
        search_path=tools,
        probe_seconds=0.5,
    )


def fact(field: str, value: str | None, source: str, resolver: str, confidence: str = "exact") -> dict[str, Any]:
    out = {"field": field, "value": value, "source": source, "resolver": resolver, "confidence": confidence}
    return {k: v for k, v in out.items() if v is not None}


def tool_facts(declared: str | None, by: str, installed: str | None, tool: str, ident: str) -> list[dict[str, Any]]:
    how = f"{tool}, bounded to 1.5 s" if tool != "python" else "the running interpreter"
    sure = "exact" if installed is not None or ident == "go" else "unknown"
    return [
        fact(f"toolchains.{ident}.declared", declared, by, TOOLS),
        fact(f"toolchains.{ident}.installed", installed, how, TOOLS, sure),
    ]


def test_the_whole_snapshot_of_the_fixture_checkout(tmp_path: Path, listening: int) -> None:
    root = environment_checkout(tmp_path / "co")
    tools = fake_tools(tmp_path / "bin")
    url = f"http://127.0.0.1:{listening}"
    lease(root, url)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, check=True).stdout.decode()
    python = platform.python_version()
    major, minor, _ = platform.python_version_tuple()
    answer = msgspec.json.decode(msgspec.json.encode(resolve(root, tools, probe=True)))
    assert answer == {
        "schema": "svc/repository-environment/v1",
        "generated_at": NOW,
        "resolution": "full",
        "project": msgspec.to_builtins(project_identity(None)),
        "repository": {
            "name": "co",
            "root": ".",
            "layer_schema": "ai-repository/v1",
            "sections": {"policy": ".ai/repo/policy.yaml", "rules": ".ai/repo/rules"},
            "local_path": ".ai/local",
            "linked_worktree": False,
        },
        "vcs": {
            "state": "git",
            "head": head.strip(),
            "branch": "main",
            "detached": False,
            "staged": 0,
            "modified": 1,
            "untracked": 2,
            "conflicted": 0,
            "clean": False,
            "changed_paths": [".ai/local/", "AGENTS.md", "notes.txt"],
        },
        "toolchains": [
            {
                "id": "python",
                "title": "Python",
                "declared": f"{major}.{minor}",
                "declared_by": ".python-version",
                "installed": python,
                "availability": "installed",
            },
            {
                "id": "node",
                "title": "Node.js",
                "declared": "v20",
                "declared_by": ".nvmrc",
                "installed": "20.11.1",
                "availability": "installed",
            },
            {
                "id": "rust",
                "title": "Rust",
                "declared": "1.80",
                "declared_by": "Cargo.toml",
                "installed": "1.78.0",
                "availability": "mismatch",
            },
            {"id": "go", "title": "Go", "declared": "1.22", "declared_by": "go.mod", "availability": "missing"},
            {
                "id": "just",
                "title": "just",
                "declared_by": "justfile",
                "installed": "1.25.2",
                "availability": "installed",
            },
            {
                "id": "elixir",
                "title": "Elixir",
                "declared": "~> 1.15",
                "declared_by": "mix.exs",
                "availability": "unknown",
            },
            {"id": "deno", "title": "Deno", "declared_by": "deno.json", "availability": "unknown"},
        ],
        "layer": {"state": "resolved", "objects": 0, "capabilities": 3, "invalid": 0, "degraded": False},
        "workflows": {
            "state": "resolved",
            "source": "just --dump --dump-format json",
            "workflows": [
                {
                    "name": "check",
                    "description": "Everything CI runs",
                    "group": "check",
                    "dependencies": ["test"],
                    "confirm": False,
                },
                {
                    "name": "docs build",
                    "namespace": "docs",
                    "description": "Build the documentation",
                    "parameters": [{"name": "out", "variadic": False, "required": False}],
                    "confirm": False,
                },
                {
                    "name": "release9",
                    "parameters": [{"name": "files", "variadic": True, "required": True}],
                    "confirm": False,
                },
                {
                    "name": "release10",
                    "group": "ship",
                    "parameters": [{"name": "version", "variadic": False, "required": True}],
                    "confirm": True,
                },
                {
                    "name": "test",
                    "description": "Run the tests",
                    "group": "check",
                    "parameters": [{"name": "args", "variadic": True, "required": False}],
                    "confirm": False,
                },
            ],
            "entrypoints": [
                {"group": "check", "workflow": "check", "command": "just check", "description": "Everything CI runs"}
            ],
        },
        "providers": [
            {"id": "agents", "target": "AGENTS.md", "state": "unknown", "always_loaded": True},
            {"id": "claude-code", "target": "CLAUDE.md", "state": "absent", "always_loaded": False},
        ],
        "services": [
            {"id": i, "title": t, "path": p, "url": url + p, "availability": "available"}
            for i, t, p in (
                ("cockpit", "Cockpit", "/cockpit"),
                ("docs", "Documentation", "/docs/"),
                ("swagger", "Swagger UI", "/swagger"),
                ("api", "HTTP API", "/api/v1"),
                ("openapi", "OpenAPI document", "/openapi.json"),
                ("mcp", "MCP over HTTP", "/mcp"),
                ("events", "Live events", "/events"),
                ("index", "Home page", "/"),
            )
        ],
        "diagnostics": [
            {
                "severity": "warning",
                "code": "toolchain_mismatch",
                "path": "Cargo.toml",
                "message": "Rust 1.80 is declared here and 1.78.0 is installed",
            },
            {
                "severity": "warning",
                "code": "toolchain_missing",
                "path": "go.mod",
                "message": "Go is declared here and `go` is not on the PATH",
            },
            {
                "severity": "info",
                "code": "toolchain_unknown",
                "path": "mix.exs",
                "message": "`elixir --version` did not answer in time",
            },
            {
                "severity": "info",
                "code": "toolchain_unknown",
                "path": "deno.json",
                "message": "`deno --version` gave no version",
            },
            {
                "severity": "warning",
                "code": "projection_stale",
                "path": "CLAUDE.md",
                "message": "CLAUDE.md is missing: the policy projects claude-code there",
            },
            {
                "severity": "warning",
                "code": "projection_invalid",
                "path": ".ai/repo/policy.yaml",
                "message": "projections[2] needs a provider and a repository-relative target",
            },
        ],
        "provenance": [
            fact(
                "project.version",
                answer["project"]["version"],
                "the metadata of the installed svc distribution",
                "svc.environment.resolve",
            ),
            fact(
                "project.summary",
                answer["project"]["summary"],
                "the metadata of the installed svc distribution",
                "svc.environment.resolve",
            ),
            fact(
                "project.commit",
                None,
                "svc does not run from a checkout of its own source",
                "svc.environment.resolve",
                "unknown",
            ),
            fact("repository.name", "co", "the directory name of the checkout", "svc.environment.resolve"),
            fact("repository.sections", "2 section(s)", ".ai/manifest.yaml", "svc.environment.resolve"),
            fact("vcs.branch", "main", "git status --porcelain=v2 --branch", "svc.environment.vcs"),
            fact("vcs.clean", "false", "git status --porcelain=v2 --branch", "svc.environment.vcs"),
            fact("vcs.ahead_behind", None, "the branch tracks no upstream", "svc.environment.vcs", "unknown"),
            fact("layer.objects", "0", "the object index this process serves", "svc.environment.layer"),
            fact("layer.capabilities", "3", "the capability registry this process serves", "svc.environment.layer"),
            fact("workflows", "5 workflow(s)", "just --dump --dump-format json", "svc.environment.workflows"),
            fact(
                "toolchains",
                "7 declared",
                "the marker file of each toolchain, and its own --version (Python: the running interpreter)",
                TOOLS,
            ),
            *tool_facts(f"{major}.{minor}", ".python-version", python, "python", "python"),
            *tool_facts("v20", ".nvmrc", "20.11.1", "node --version", "node"),
            *tool_facts("1.80", "Cargo.toml", "1.78.0", "rustc --version", "rust"),
            *tool_facts("1.22", "go.mod", None, "go version", "go"),
            *tool_facts(None, "justfile", "1.25.2", "just --version", "just"),
            *tool_facts("~> 1.15", "mix.exs", None, "elixir --version", "elixir"),
            *tool_facts(None, "deno.json", None, "deno --version", "deno"),
            fact("providers", "2 projection(s)", ".ai/repo/policy.yaml, projections[]", "svc.environment.providers"),
            fact("services.url", url, ".ai/local/state/mcp/server.json", "svc.environment.services"),
        ],
    }
    assert str(tmp_path) not in json.dumps(answer)


def test_outside_git_without_tools_lease_or_probe(tmp_path: Path) -> None:
    root = environment_checkout(tmp_path / "plain", git=False)
    empty = tmp_path / "empty"
    empty.mkdir()
    env = resolve(root, str(empty), layer=unavailable_layer())
    assert msgspec.to_builtins(env.vcs) == {"state": "unavailable", "reason": "the checkout is not a Git work tree"}
    assert msgspec.to_builtins(env.layer) == {"state": "unavailable"}
    assert msgspec.to_builtins(env.workflows) == {"state": "unavailable"}
    assert [(t.id, t.availability) for t in env.toolchains] == [
        ("python", "installed"),
        ("node", "missing"),
        ("rust", "missing"),
        ("go", "missing"),
        ("just", "missing"),
        ("elixir", "missing"),
        ("deno", "missing"),
    ]
    assert {s.availability for s in env.services} == {"not_running"}
    assert all(s.url is None for s in env.services)
    codes = [d.code for d in env.diagnostics]
    assert codes[:2] == ["vcs_unavailable", "layer_unavailable"]
    assert codes[2] == "workflow_runner_missing"
    assert codes.count("toolchain_missing") == 6
    explained = {f.field: f for f in env.provenance}
    assert explained["vcs.branch"].confidence == "unknown"
    assert explained["vcs.branch"].source == "git status --porcelain=v2 --branch: the checkout is not a Git work tree"
    assert "vcs.clean" not in explained
    assert explained["layer.objects"].confidence == "unknown"
    assert explained["workflows"].source == "no workflow runner answered for this checkout"
    assert explained["services.url"].source == "no server holds the lease at .ai/local/state/mcp/server.json"


def test_a_lease_is_unknown_without_probe_not_running_when_closed_and_ignored_when_stale(tmp_path: Path) -> None:
    root = environment_checkout(tmp_path / "co", git=False)
    tools = str(tmp_path)
    port = closed_port()
    lease(root, f"http://127.0.0.1:{port}")
    assert {s.availability for s in resolve(root, tools).services} == {"unknown"}
    assert {s.availability for s in resolve(root, tools, probe=True).services} == {"not_running"}
    lease(root, "http://192.0.2.1:80")
    probed = resolve(root, tools, probe=True)
    assert {s.availability for s in probed.services} == {"unknown"}
    assert "lease_not_loopback" in [d.code for d in probed.diagnostics]
    dead = subprocess.Popen(["true"])
    dead.wait()
    lease(root, f"http://127.0.0.1:{port}", pid=dead.pid)
    stale = resolve(root, tools, probe=True)
    assert all(s.url is None and s.availability == "not_running" for s in stale.services)
    assert "lease_stale" in [d.code for d in stale.diagnostics]
    (root / ".ai/local/state/mcp/server.json").write_text('{"schema": "other/v9", "pid": 1, "token": "t", "root": "/"}')
    assert {s.availability for s in resolve(root, tools, probe=True).services} == {"not_running"}


def test_layer_tallies_come_from_the_object_index(tmp_path: Path) -> None:
    root = environment_checkout(tmp_path / "co")
    summary = summarise_layer(ObjectIndex.build(Repository.discover(root)), 42)
    assert summary.state == "resolved"
    assert summary.capabilities == 42
    assert summary.objects == sum(k.count for k in summary.kinds)
    assert {k.kind: k.count for k in summary.kinds}["rule"] == 1
    assert [k.kind for k in summary.kinds] == sorted(k.kind for k in summary.kinds)


def test_hostile_markers_and_policy_become_diagnostics(tmp_path: Path) -> None:
    root = tmp_path / "hostile"
    (root / ".ai/repo").mkdir(parents=True)
    os.mkfifo(root / ".python-version")
    (root / "package.json").write_text("{not json")
    os.symlink("/etc/hostname", root / "go.mod")
    (root / ".ai/repo/policy.yaml").write_text("projections: [\n")
    env = resolve(root, str(tmp_path))
    by_id = {t.id: t for t in env.toolchains}
    assert by_id["python"].declared is None
    assert by_id["python"].declared_by == ".python-version"
    assert by_id["node"].declared is None
    assert by_id["go"].declared is None
    found = [(d.code, d.path) for d in env.diagnostics]
    assert ("toolchain_marker_unreadable", ".python-version") in found
    assert ("toolchain_marker_unreadable", "package.json") in found
    assert ("toolchain_marker_unreadable", "go.mod") in found
    assert ("policy_unreadable", ".ai/repo/policy.yaml") in found
    assert env.repository.layer_schema is None
    assert str(tmp_path) not in msgspec.json.encode(env).decode()


def test_explain_filters_by_prefix_and_answers_none_for_nothing(tmp_path: Path) -> None:
    root = environment_checkout(tmp_path / "co")
    env = resolve(root, str(tmp_path))
    every = explain_environment(env, None)
    assert every is not None
    assert every.fields == env.provenance
    vcs = explain_environment(env, "vcs")
    assert vcs is not None
    assert [f.field for f in vcs.fields] == ["vcs.branch", "vcs.clean", "vcs.ahead_behind"]
    one = explain_environment(env, "project.version")
    assert one is not None
    assert [f.field for f in one.fields] == ["project.version"]
    assert [f.field for f in explain_environment(env, "toolchains.go").fields] == [  # type: ignore[union-attr]
        "toolchains.go.declared",
        "toolchains.go.installed",
    ]
    assert explain_environment(env, "vc") is None
    assert explain_environment(env, "nothing.here") is None


@pytest.mark.parametrize(
    ("declared", "installed", "python", "minimum", "held"),
    [
        ("20", "20.11.1", False, False, True),
        ("v20.11", "20.11.1", False, False, True),
        ("20.12", "20.11.1", False, False, False),
        (">=1.70", "1.78.0", False, False, True),
        (">= 1.80", "1.78.0", False, False, False),
        ("1.70", "1.78.0", False, True, True),
        ("1.22", "1.21.9", False, True, False),
        ("1.2", "1.2", False, True, True),
        ("lts/iron", "20.11.1", False, False, None),
        ("^18", "18.1.0", False, False, None),
        (">=3.11,<4", "3.11.7", True, False, True),
        (">=3.12", "3.11.7", True, False, False),
        ("3.11", "3.11.7", True, False, True),
        ("3.12", "3.13.0rc1", True, False, False),
        ("not a spec", "3.11.7", True, False, None),
    ],
)
def test_satisfies(declared: str, installed: str, python: bool, minimum: bool, held: bool | None) -> None:
    assert satisfies(declared, installed, python=python, minimum=minimum) is held


def test_version_of_reads_the_first_dotted_word() -> None:
    assert version_of(b"v20.11.1\n") == "20.11.1"
    assert version_of(b"go version go1.22.1 linux/amd64\n") == "1.22.1"
    assert version_of(b"Erlang/OTP 26 [erts-14.2.1]\n\nElixir 1.15.7 (compiled with Erlang/OTP 26)\n") == "1.15.7"
    assert version_of(b"rustc 1.78.0 (9b00956e5 2024-04-29)\n") == "1.78.0"
    assert version_of(b"no version here\n") is None


def test_workflows_parse_and_order() -> None:
    workflows, entrypoints = parse_dump(json.dumps(DUMP).encode(), b"Recipe groups:\n    ship\n    check\n")
    assert [w.name for w in workflows] == ["check", "docs build", "release9", "release10", "test"]
    assert [e.workflow for e in entrypoints] == ["check"]
    with pytest.raises(ValueError, match="not a JSON object"):
        parse_dump(b"[]", None)
    assert sorted(["a10", "a9", "A1", "a01", "b"], key=natural_key) == ["a01", "A1", "a9", "a10", "b"]
