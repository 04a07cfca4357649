"""The foundation capabilities through the executor: introspection, health, artifacts, changelog."""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from svc import InvalidInput, NotFound, Unavailable
from svc.capabilities._release import parse_changelog
from svc.host._service import open_service
from svc.layer import Repository
from svc.runtime import Actor, Executor
from tests.api.test_hostile_layer import sparse
from tests.conftest import make_checkout

ACTOR = Actor(kind="internal")


async def ask(executor: Executor, cid: str, **params: Any) -> Any:
    cap = executor.runtime.registry.by_id[cid]
    return msgspec.json.decode(await executor.call(cap, executor.decode_value(cap, params), actor=ACTOR))


@pytest.fixture
async def bare(tmp_path: Path) -> AsyncIterator[Executor]:
    """A service over a plain directory: no Git, no `.ai/`."""
    async with open_service(Repository.discover(tmp_path), surface="cli", watch=False) as ex:
        yield ex


@pytest.fixture
async def layered(checkout: Path) -> AsyncIterator[Executor]:
    async with open_service(Repository.discover(checkout), surface="cli", watch=False) as ex:
        yield ex


async def test_list_filters_and_summarises_the_whole_registry(bare: Executor) -> None:
    everything = await ask(bare, "capabilities.list")
    assert everything["count"] == len(bare.runtime.registry) == everything["summary"]["total"]
    on_mcp = await ask(bare, "capabilities.list", exposure="mcp")
    expected = [c.id for c in bare.runtime.registry.capabilities if c.exposure.mcp is not None]
    assert [c["id"] for c in on_mcp["capabilities"]] == expected
    assert on_mcp["count"] == len(expected)
    assert on_mcp["summary"] == everything["summary"]
    commands = await ask(bare, "capabilities.list", kind="command")
    assert commands["count"] == everything["summary"]["by_kind"]["command"]


async def test_describe_answers_the_descriptor_and_refuses_unknown_ids(bare: Executor) -> None:
    live = await ask(bare, "capabilities.describe", id="health.live")
    assert live["execution"]["effect"] == "read"
    assert live["execution"]["hints"]["read_only"] is True
    assert live["input"]["name"] == "NoInput"
    with pytest.raises(NotFound, match=r"no capability 'nope\.x'"):
        await ask(bare, "capabilities.describe", id="nope.x")


async def test_projections_close_http_and_cli_and_name_what_is_unmet(bare: Executor) -> None:
    matrix = await ask(bare, "capabilities.projections")
    rows = {r["id"]: r for r in matrix["rows"]}
    assert rows["health.live"]["closed"] is True
    assert rows["health.live"]["http"] == "GET /api/v1/live"
    assert matrix["unbacked"] == [
        "commands refresh",
        "executions follow",
        "generate",
        "mcp",
        "plan repair-ledger",
        "plan reseal",
        "serve",
    ]
    unmet = await ask(bare, "capabilities.projections", unmet=True)
    assert all(not r["closed"] for r in unmet["rows"])
    assert {f["id"] for f in unmet["findings"]} == {r["id"] for r in unmet["rows"]}
    assert not any(f["code"].startswith("CLOSURE_CLI") for f in matrix["findings"])
    health = await ask(bare, "capabilities.projections", module="health")
    assert {r["module"] for r in health["rows"]} == {"health"}
    with pytest.raises(NotFound, match="no module 'nope'"):
        await ask(bare, "capabilities.projections", module="nope")


async def test_live_and_ready(layered: Executor) -> None:
    live = await ask(layered, "health.live")
    assert live["alive"] is True
    ready = await ask(layered, "health.ready")
    assert ready["ready"] is True
    assert ready["capabilities"] == len(layered.runtime.registry)
    assert ready["objects"] > 0
    assert ready["layer"] == "ok"


async def test_health_of_a_directory_without_a_layer_is_a_clear_warning(bare: Executor) -> None:
    report = await ask(bare, "health.report")
    checks = {c["id"]: c for c in report["checks"]}
    assert list(checks) == [
        "layer",
        "registry",
        "scope",
        "git",
        "benchmark-coverage",
        "generated-registry",
        "server",
        "mesh",
    ]
    assert checks["layer"]["status"] == "warn"
    assert "no .ai/ folder" in checks["layer"]["detail"]
    assert checks["git"]["status"] == "warn"
    assert report["status"] == "warn"
    assert sum(report["tallies"].values()) == len(checks)


async def test_a_refused_manifest_fails_the_layer_check(tmp_path: Path) -> None:
    (tmp_path / ".ai").mkdir()
    (tmp_path / ".ai/manifest.yaml").write_text("schema: ai-repository/v1\nsurprise: true\n")
    async with open_service(Repository.discover(tmp_path), surface="cli", watch=False) as ex:
        report = await ask(ex, "health.report")
        ready = await ask(ex, "health.ready")
    layer = next(c for c in report["checks"] if c["id"] == "layer")
    assert layer["status"] == "fail"
    assert layer["findings"] == [".ai/manifest.yaml: unknown key 'surprise'"]
    assert report["status"] == "fail"
    assert ready["layer"] == "fail"


async def test_artifacts_verdicts(tmp_path: Path) -> None:
    checkout = make_checkout(tmp_path / "a", git=False)
    async with open_service(Repository.discover(checkout), surface="cli", watch=False) as ex:
        cap = ex.runtime.registry.by_id["artifacts.list"]
        assert (await ask(ex, "artifacts.list"))["verdict"] == "not_generated"
        from svc.cli._generate import write_documents

        write_documents(ex.runtime.repository, ex.runtime.registry, lambda _: None)
        current = msgspec.json.decode(await ex.call(cap, ex.decode_value(cap, {"format": "yaml"}), actor=ACTOR))
        assert current["verdict"] == "current"
        assert {a["format"] for a in current["artifacts"]} == {"yaml"}
        (checkout / "docs/generated/registry.yaml").write_text("edited\n")
        (checkout / "docs/generated/cli.md").unlink()
        report = await ask(ex, "artifacts.list", document="registry")
        assert report["verdict"] == "stale"
        assert {a["path"]: a["state"] for a in report["artifacts"]} == {
            "docs/generated/registry.json": "current",
            "docs/generated/registry.yaml": "stale",
        }
        assert (await ask(ex, "artifacts.list", document="cli", format="json"))["verdict"] == "current"
        everything = await ask(ex, "artifacts.list", document="cli")
        assert everything["verdict"] == "missing"
        with pytest.raises(InvalidInput, match=r"Invalid enum value 'nope' - at `\$.document`"):
            await ask(ex, "artifacts.list", document="nope")


CHANGELOG = """# Changelog

All notable changes.

## [Unreleased]

### Added

- one thing
  continued on a second line
- another

## [1.2.0] - 2026-03-04

### Fixed

* a bug

## [1.1.0] - 2026-01-02 [YANKED]

[Unreleased]: https://example.invalid/compare/v1.2.0...HEAD
[1.2.0]: https://example.invalid/releases/v1.2.0
"""


def test_changelog_parsing() -> None:
    releases = parse_changelog(CHANGELOG)
    assert [r.version for r in releases] == ["unreleased", "1.2.0", "1.1.0"]
    assert releases[0].unreleased
    assert releases[0].url == "https://example.invalid/compare/v1.2.0...HEAD"
    assert releases[0].groups[0].entries == ["one thing continued on a second line", "another"]
    assert releases[1].date == "2026-03-04"
    assert releases[1].groups[0].kind == "Fixed"
    assert releases[2].yanked
    assert releases[2].groups == []


async def test_changelog_capability(bare: Executor) -> None:
    absent = await ask(bare, "release.changelog")
    assert absent == {"path": "CHANGELOG.md", "present": False, "format": "keep-a-changelog", "releases": []}
    with pytest.raises(NotFound, match=r"no CHANGELOG\.md"):
        await ask(bare, "release.changelog", version="unreleased")
    (bare.runtime.repository.root / "CHANGELOG.md").write_text(CHANGELOG)
    one = await ask(bare, "release.changelog", version="v1.2.0")
    assert [r["version"] for r in one["releases"]] == ["1.2.0"]
    assert (await ask(bare, "release.changelog", version="unreleased"))["releases"][0]["unreleased"] is True


async def test_ready_answers_from_resident_state_and_never_builds_in_a_server(layered: Executor) -> None:
    runtime = layered.runtime
    runtime.generation.watched = True  # as under `svc serve`: the watcher owns the builds
    before = await ask(layered, "health.ready")
    assert (before["ready"], before["layer"], before["objects"]) == (False, "unknown", 0)
    assert runtime.resident() is None
    await runtime.warm_async()
    built = await ask(layered, "health.ready")
    assert (built["ready"], built["layer"]) == (True, "ok")
    os.mkfifo(runtime.repository.layer / "repo" / "pipe.yaml")
    runtime.generation.bump()
    assert await ask(layered, "health.ready") == built
    await runtime.warm_async()
    after = await ask(layered, "health.ready")
    assert (after["ready"], after["layer"]) == (True, "fail")


async def test_unreadable_layer_files_fail_the_layer_and_scope_checks(checkout: Path) -> None:
    repo = checkout / ".ai" / "repo"
    os.mkfifo(repo / "pipe.yaml")
    (repo / "scope.yaml").unlink()
    os.symlink("/dev/zero", repo / "scope.yaml")
    async with open_service(Repository.discover(checkout), surface="cli", watch=False) as ex:
        checks = {c["id"]: c for c in (await ask(ex, "health.report"))["checks"]}
    assert checks["layer"]["status"] == "fail"
    assert checks["layer"]["findings"] == [
        ".ai/repo/pipe.yaml: not a regular file (a FIFO)",
        ".ai/repo/scope.yaml: a symlink leaving the repository",
    ]
    assert checks["scope"]["status"] == "fail"
    assert checks["scope"]["detail"] == ".ai/repo/scope.yaml cannot be read: a symlink leaving the repository"


async def test_a_changelog_that_is_no_regular_file_or_too_large_is_refused(bare: Executor) -> None:
    path = bare.runtime.repository.root / "CHANGELOG.md"
    os.mkfifo(path)
    with pytest.raises(NotFound, match=r"CHANGELOG\.md cannot be read: not a regular file \(a FIFO\)"):
        await ask(bare, "release.changelog")
    path.unlink()
    sparse(path, 5 * 1024 * 1024)
    with pytest.raises(Unavailable, match=r"5\.0 MiB, over the 4 MiB limit"):
        await ask(bare, "release.changelog")


def test_changelog_parsing_is_linear_in_the_text() -> None:
    started = time.perf_counter()
    parse_changelog("## [1.0]\n### a" + " " * 200_000 + "b\n- x\n" + "  more\n" * 200_000)
    assert time.perf_counter() - started < 2


async def test_a_generated_document_that_is_no_regular_file_reads_as_missing(tmp_path: Path) -> None:
    checkout = make_checkout(tmp_path / "a", git=False)
    async with open_service(Repository.discover(checkout), surface="cli", watch=False) as ex:
        from svc.cli._generate import write_documents

        write_documents(ex.runtime.repository, ex.runtime.registry, lambda _: None)
        openapi = checkout / "docs/generated/openapi.json"
        openapi.unlink()
        os.mkfifo(openapi)
        report = await ask(ex, "artifacts.list", document="openapi", format="json")
    assert [(a["path"], a["state"]) for a in report["artifacts"]] == [("docs/generated/openapi.json", "missing")]
