"""`health.*`: liveness (no I/O), readiness (resident state only) and the full health report."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import msgspec
import trio

from svc._version import __version__
from svc.capabilities._artifacts import ArtifactsInput, compare, report
from svc.layer import (
    LayerIndex,
    LayerReading,
    Unreadable,
    YamlAliases,
    YamlError,
    load_yaml,
    pid_alive,
    read_lease,
    read_manifest,
    read_repository_file,
)
from svc.mesh_udp import Mesh
from svc.registry import Cache, Declarations, Example, McpResource, Module, NoInput
from svc.runtime import Context, Runtime

MODULE = Module(
    id="health",
    title="Health",
    description="Whether svc is alive, ready, and how the layer, registry, Git, documents and server stand.",
)

Status = Literal["ok", "warn", "fail", "unknown"]
_ORDER: dict[str, int] = {"ok": 0, "warn": 1, "fail": 2, "unknown": 3}
#: The most findings one check lists.
_MAX_FINDINGS = 20
_VERDICT_STATUS: dict[str, Status] = {
    "current": "ok",
    "not_generated": "ok",
    "unverified": "warn",
    "missing": "warn",
}


class Liveness(msgspec.Struct, frozen=True, kw_only=True):
    """The process answers; which version answered."""

    alive: bool
    version: str
    commit: str | None


class Readiness(msgspec.Struct, frozen=True, kw_only=True):
    """Resident state only: the registry and the layer index are built (`layer` is `unknown` until then)."""

    ready: bool
    version: str
    commit: str | None
    capabilities: int
    objects: int
    layer: Literal["ok", "warn", "fail", "unknown"]
    stale: bool


class HealthCheck(msgspec.Struct, frozen=True, kw_only=True):
    """One check: its status, what decided it, the evidence and any findings."""

    id: str
    title: str
    status: Status
    detail: str
    decided_by: str
    evidence: list[str]
    findings: list[str]


class HealthTallies(msgspec.Struct, frozen=True, kw_only=True):
    """Checks per status."""

    ok: int
    warn: int
    fail: int
    unknown: int


class Health(msgspec.Struct, frozen=True, kw_only=True):
    """`health.report`: the worst status wins (ok < warn < fail < unknown)."""

    status: Status
    tallies: HealthTallies
    checks: list[HealthCheck]


async def live(ctx: Context, params: NoInput) -> Liveness:
    """Answer without touching the disk, the index or the network."""
    return Liveness(alive=True, version=__version__, commit=ctx.runtime.commit)


def _layer_status(reading: LayerReading, index: LayerIndex) -> Literal["ok", "warn", "fail"]:
    if reading.state == "fail" or index.unreadable:
        return "fail"
    return "ok" if reading.state == "ok" else "warn"


async def ready(ctx: Context, params: NoInput) -> Readiness:
    """Answer from resident state: registry size, index size, layer verdict, executable freshness.

    A server never builds here: until its first build of the layer state has finished it answers not ready,
    layer `unknown`. A process without a watcher (a one-shot command) builds once, in a worker thread.
    """
    runtime = ctx.runtime
    resident = runtime.resident()
    if resident is None and not runtime.generation.watched:
        await runtime.warm_async()
        resident = runtime.resident()
    stale = runtime.stale()
    count = len(runtime.registry)
    return Readiness(
        ready=count > 0 and not stale and resident is not None,
        version=__version__,
        commit=runtime.commit,
        capabilities=count,
        objects=len(resident[1]) if resident is not None else 0,
        layer=_layer_status(*resident) if resident is not None else "unknown",
        stale=stale,
    )


def _check(
    id: str,
    title: str,
    status: Status,
    detail: str,
    decided_by: str,
    *,
    evidence: list[str] | None = None,
    findings: list[str] | None = None,
) -> HealthCheck:
    return HealthCheck(
        id=id,
        title=title,
        status=status,
        detail=detail,
        decided_by=decided_by,
        evidence=evidence or [],
        findings=findings or [],
    )


def _layer_check(runtime: Runtime) -> HealthCheck:
    reading = read_manifest(runtime.repository)
    title = "The .ai/ layer"
    if reading.state == "fail":
        return _check(
            "layer",
            title,
            "fail",
            "the manifest is refused, so the layer reads as absent",
            ".ai/manifest.yaml",
            findings=list(reading.problems),
        )
    if not runtime.repository.has_layer:
        return _check(
            "layer",
            title,
            "warn",
            "this checkout has no .ai/ folder; there is no layer to serve",
            ".ai/",
            findings=["create .ai/manifest.yaml (schema: ai-repository/v1) to start a layer"],
        )
    index = runtime.index()
    if index.unreadable:
        count = len(index.unreadable)
        return _check(
            "layer",
            title,
            "fail",
            f"{count} layer file(s) cannot be read and are left out of the index",
            ".ai/repo/",
            findings=list(index.unreadable[:_MAX_FINDINGS]),
        )
    if reading.state == "absent":
        return _check(
            "layer",
            title,
            "warn",
            ".ai/ has no manifest; the default sections apply",
            ".ai/manifest.yaml",
            findings=["add .ai/manifest.yaml with schema: ai-repository/v1"],
        )
    return _check(
        "layer",
        title,
        "ok",
        f"manifest valid; {len(index)} tracked layer files indexed",
        ".ai/manifest.yaml",
        evidence=[f"sections: {', '.join(sorted(reading.sections))}"],
    )


def _scope_check(runtime: Runtime) -> HealthCheck:
    reading = read_manifest(runtime.repository)
    rel = ".ai/" + reading.sections.get("scope", "repo/scope.yaml")
    title = "Scope declaration"
    try:
        raw = read_repository_file(runtime.repository.root, Path(rel))
    except Unreadable as exc:
        return _check("scope", title, "fail", f"{rel} cannot be read: {exc.reason}", rel)
    except OSError:
        return _check("scope", title, "warn", f"{rel} is absent; nothing declares what the layer governs", rel)
    try:
        data = load_yaml(raw)
    except YamlAliases:
        return _check("scope", title, "fail", f"{rel} uses YAML aliases, which svc does not read", rel)
    except (YamlError, ValueError, RecursionError):
        return _check("scope", title, "fail", f"{rel} is not YAML", rel)
    if not isinstance(data, dict):
        return _check("scope", title, "fail", f"{rel} is not a mapping", rel)
    return _check("scope", title, "ok", f"{rel} parses ({len(data)} keys)", rel, evidence=sorted(map(str, data)))


def _git_check(runtime: Runtime) -> HealthCheck:
    repo = runtime.repository
    title = "Git checkout"
    if repo.git_dir is None:
        return _check(
            "git",
            title,
            "warn",
            "not a Git work tree: heads, branches and generations of refs are not tracked",
            "git directory",
        )
    state = repo.git()
    if state.head is None:
        return _check("git", title, "warn", "the repository has no commit yet", "HEAD")
    branch = state.branch or "DETACHED"
    return _check(
        "git",
        title,
        "ok",
        f"HEAD {state.head[:12]} on {branch}",
        "HEAD",
        evidence=[f"head: {state.head}", f"branch: {branch}"],
    )


def _benchmark_check(runtime: Runtime) -> HealthCheck:
    caps = runtime.registry.capabilities
    required = [c for c in caps if c.benchmark.policy != "waived"]
    without = [c.id for c in required if not c.examples]
    waived = [f"{c.id}: {c.benchmark.reason}" for c in caps if c.benchmark.policy == "waived"]
    status: Status = "fail" if without else "ok"
    return _check(
        "benchmark-coverage",
        "Benchmark coverage",
        status,
        f"{len(required)} capabilities are benchmark cases, {len(waived)} waived",
        "registry examples",
        evidence=waived,
        findings=[f"{i} has no example" for i in without],
    )


def _generated_check(runtime: Runtime) -> HealthCheck:
    derived, on_disk = compare(runtime.repository, runtime.registry)
    answer = report(derived, on_disk, ArtifactsInput())
    status = _VERDICT_STATUS.get(answer.verdict, "fail")
    detail = {
        "not_generated": "this checkout commits no generated documents of svc",
        "current": "every committed document matches the registry",
    }.get(answer.verdict, f"the committed documents are {answer.verdict}: run `svc generate`")
    findings = [f"{a.path} is {a.state}" for a in answer.artifacts if a.state not in ("current",)]
    return _check(
        "generated-registry",
        "Generated documents",
        status,
        detail,
        "svc generate --check",
        evidence=[f"verdict: {answer.verdict}"],
        findings=findings if answer.verdict != "not_generated" else [],
    )


def _server_check(runtime: Runtime) -> HealthCheck:
    title = "Server"
    lease = read_lease(runtime.repository)
    if lease is not None and pid_alive(lease.pid) and lease.url is not None:
        return _check("server", title, "ok", f"pid {lease.pid} serves {lease.url}", ".ai/local/state/mcp/server.json")
    if runtime.server.url is not None:
        return _check("server", title, "ok", f"this process serves {runtime.server.url}", "this process")
    return _check(
        "server",
        title,
        "warn",
        "no server serves this repository (start one with svc serve)",
        ".ai/local/state/mcp/server.json",
    )


def _mesh_check(runtime: Runtime, served: Mesh | None) -> HealthCheck:
    title = "Mesh"
    mesh = served if served is not None else Mesh.idle(runtime.repository)
    reading = mesh.reading
    where = reading.path or ".ai/repo/mesh/"
    evidence = [f"declaration: {reading.path}"] if reading.path else []
    if reading.state == "absent":
        return _check("mesh", title, "ok", "the mesh is off: no declaration under .ai/repo/mesh/", where)
    if reading.state == "refused":
        return _check("mesh", title, "fail", "the mesh declaration is refused", where, findings=list(reading.problems))
    dropped = [f"dropped: {line}" for line in reading.dropped]
    if not reading.enabled:
        return _check("mesh", title, "ok", "the mesh is off, as declared", where, evidence=evidence + dropped)
    if served is None:
        return _check(
            "mesh",
            title,
            "warn",
            "the mesh is declared on; this process does not run it (ask the serving server: svc mesh status)",
            where,
            evidence=evidence + dropped,
        )
    if not mesh.active or mesh.providers is None:
        return _check(
            "mesh",
            title,
            "fail",
            f"declared on but not active: {mesh.reason or 'not started'}",
            "this server",
            evidence=evidence,
            findings=["run svc mesh doctor for the remedy"],
        )
    slots = list(mesh.providers.slots.values())
    running = [s.id for s in slots if s.state == "running"]
    failed = [f"{s.id}: {s.detail}" for s in slots if s.state == "failed"]
    known = len(mesh.core.registry) if mesh.core is not None else 0
    detail = f"active: {known} other runtime{'s' if known != 1 else ''} known; providers running: {', '.join(running)}"
    if not running:
        return _check("mesh", title, "fail", "every discovery provider failed", "this server", findings=failed)
    status: Status = "warn" if failed else "ok"
    return _check("mesh", title, status, detail, "this server", evidence=evidence + dropped, findings=failed)


def _health(runtime: Runtime, mesh: Mesh | None) -> Health:
    checks = [
        _layer_check(runtime),
        _check(
            "registry",
            "Capability registry",
            "ok",
            f"{len(runtime.registry)} capabilities in {len(runtime.registry.modules)} modules",
            "registry build",
            evidence=[f"fingerprint: {runtime.registry.fingerprint}"],
        ),
        _scope_check(runtime),
        _git_check(runtime),
        _benchmark_check(runtime),
        _generated_check(runtime),
        _server_check(runtime),
        _mesh_check(runtime, mesh),
    ]
    counts = {s: sum(c.status == s for c in checks) for s in _ORDER}
    worst = max(checks, key=lambda c: _ORDER[c.status]).status
    return Health(status=worst, tallies=HealthTallies(**counts), checks=checks)


async def health_report(ctx: Context, params: NoInput) -> Health:
    """Run every check (file reads happen in a worker thread)."""
    return await trio.to_thread.run_sync(_health, ctx.runtime, ctx.components.find(Mesh))


declare = Declarations[Context](MODULE, source=__name__)

CAPABILITIES = (
    declare.query(
        "live",
        title="Liveness",
        description="The process answers, and which version answered. No index build, no file read, no network.",
        input=NoInput,
        output=Liveness,
        handler=live,
        examples=(Example(name="live", input={}),),
        http="GET /api/v1/live",
        cli="health live",
    ),
    declare.query(
        "ready",
        title="Readiness",
        description="Whether the registry and the layer index are resident and the executable is unchanged.",
        input=NoInput,
        output=Readiness,
        handler=ready,
        examples=(Example(name="ready", input={}),),
        http="GET /api/v1/ready",
        cli="health ready",
    ),
    declare.query(
        "report",
        title="Health report",
        description=(
            "Every health check (layer, registry, scope, git, benchmark-coverage, generated-registry, "
            "server, mesh) with what decided it; the worst status wins."
        ),
        input=NoInput,
        output=Health,
        handler=health_report,
        examples=(Example(name="report", input={}),),
        http="GET /api/v1/health",
        tool="svc_health",
        resource=McpResource(uri="svc://health", name="health"),
        cli="health report",
        cache=Cache(policy="process", max_entries=4, ttl_seconds=5),
    ),
)
