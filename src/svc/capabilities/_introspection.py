"""`capabilities.*`: the registry describing itself, and which surface reaches which capability."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from svc._errors import NotFound
from svc.registry import Cache, Capability, CapabilityView, Declarations, Example, Module, descriptor
from svc.runtime import Context
from svc.surfaces._surfaces import Reachable, reachable

MODULE = Module(
    id="capabilities",
    title="Capabilities",
    description="The capability registry describing itself: what exists, and which surface reaches it.",
)


class ListInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Filters of `capabilities.list`."""

    kind: Annotated[Literal["query", "command", "resource"] | None, Meta(description="keep only this kind")] = None
    exposure: Annotated[
        Literal["mcp", "http", "cli"] | None, Meta(description="keep only capabilities on this surface")
    ] = None


class CapabilitySummary(msgspec.Struct, frozen=True, kw_only=True):
    """Tallies over the whole registry."""

    total: int
    builtin: int
    declarative: int
    by_kind: dict[str, int]
    by_stability: dict[str, int]
    mcp_tools: int
    mcp_resources: int
    http_routes: int
    cli_commands: int
    modules: int
    benchmark_required: int
    benchmark_waived: int
    cached: int


class CapabilityList(msgspec.Struct, frozen=True, kw_only=True):
    """`capabilities.list`: the capabilities matching the filters, in id order."""

    count: int
    summary: CapabilitySummary
    capabilities: list[CapabilityView]


class DescribeInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Input of `capabilities.describe`."""

    id: Annotated[str, Meta(description="canonical capability id, e.g. health.live")]


class ProjectionsInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Filters of `capabilities.projections`."""

    module: Annotated[str | None, Meta(description="keep only this module's capabilities")] = None
    unmet: Annotated[bool, Meta(description="keep only rows with a declared surface that is not reachable")] = False


class ClosureRow(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One capability: its declared surfaces and whether every one of them is really reachable."""

    id: str
    module: str
    kind: str
    stability: str
    cli: str | None = None
    http: str | None = None
    mcp_tool: str | None = None
    mcp_resource: str | None = None
    closed: bool
    source: str


class ClosureFinding(msgspec.Struct, frozen=True, kw_only=True):
    """A declared surface that does not reach its capability."""

    code: str
    id: str
    message: str


class ClosureMatrix(msgspec.Struct, frozen=True, kw_only=True):
    """`capabilities.projections`: the closure matrix."""

    rows: list[ClosureRow]
    unbacked: list[str]
    findings: list[ClosureFinding]


def _summary(ctx: Context) -> CapabilitySummary:
    caps = ctx.runtime.registry.capabilities
    by_kind = {k: 0 for k in ("query", "command", "resource")}
    by_stability: dict[str, int] = {}
    for cap in caps:
        by_kind[cap.kind] += 1
        by_stability[cap.stability] = by_stability.get(cap.stability, 0) + 1
    return CapabilitySummary(
        total=len(caps),
        builtin=len(caps),
        declarative=0,
        by_kind=by_kind,
        by_stability=dict(sorted(by_stability.items())),
        mcp_tools=sum(1 for c in caps if c.exposure.mcp is not None and c.exposure.mcp.tool),
        mcp_resources=sum(1 for c in caps if c.exposure.mcp is not None and c.exposure.mcp.resource),
        http_routes=sum(1 for c in caps if c.exposure.http is not None),
        cli_commands=sum(1 for c in caps if c.exposure.cli),
        modules=len(ctx.runtime.registry.modules),
        benchmark_required=sum(1 for c in caps if c.benchmark.policy != "waived"),
        benchmark_waived=sum(1 for c in caps if c.benchmark.policy == "waived"),
        cached=sum(1 for c in caps if c.cache.policy != "disabled"),
    )


def _on_surface(cap: Capability, surface: str | None) -> bool:
    if surface == "http":
        return cap.exposure.http is not None
    if surface == "mcp":
        return cap.exposure.mcp is not None
    if surface == "cli":
        return bool(cap.exposure.cli)
    return True


async def list_capabilities(ctx: Context, params: ListInput) -> CapabilityList:
    """Every capability matching the filters, described in full."""
    registry = ctx.runtime.registry
    chosen = [
        descriptor(registry, cap)
        for cap in registry.capabilities
        if (params.kind is None or cap.kind == params.kind) and _on_surface(cap, params.exposure)
    ]
    return CapabilityList(count=len(chosen), summary=_summary(ctx), capabilities=chosen)


async def describe(ctx: Context, params: DescribeInput) -> CapabilityView:
    """One capability by canonical id."""
    cap = ctx.runtime.registry.get(params.id)
    if cap is None:
        raise NotFound(f"no capability {params.id!r} (see GET /api/v1/capabilities)")
    return descriptor(ctx.runtime.registry, cap)


def _row(cap: Capability, surfaces: Reachable) -> tuple[ClosureRow, list[ClosureFinding]]:
    findings: list[ClosureFinding] = []
    http, mcp = cap.exposure.http, cap.exposure.mcp
    if http is not None and surfaces.http.get((http.method, http.path)) != cap.id:
        findings.append(
            ClosureFinding(
                code="CLOSURE_HTTP_UNROUTED",
                id=cap.id,
                message=f"{http.method} {http.path} does not reach {cap.id} on the HTTP server",
            )
        )
    if cap.exposure.cli:
        words = " ".join(cap.exposure.cli)
        bound = surfaces.cli.get(cap.exposure.cli)
        if bound is None:
            findings.append(
                ClosureFinding(code="CLOSURE_CLI_ABSENT", id=cap.id, message=f"`svc {words}` is not a command")
            )
        elif bound != cap.id:
            findings.append(
                ClosureFinding(
                    code="CLOSURE_CLI_NOT_RUNNABLE",
                    id=cap.id,
                    message=f"`svc {words}` does not run {cap.id}",
                )
            )
    for preset in cap.exposure.cli_presets:
        if surfaces.cli.get(preset.words) != cap.id:
            message = f"`svc {' '.join(preset.words)}` does not run {cap.id}"
            findings.append(ClosureFinding(code="CLOSURE_CLI_ABSENT", id=cap.id, message=message))
    if mcp is not None and mcp.tool is not None and surfaces.mcp_tools.get(mcp.tool) != cap.id:
        findings.append(
            ClosureFinding(
                code="CLOSURE_MCP_ABSENT",
                id=cap.id,
                message=f"the MCP tool {mcp.tool} is not listed by the MCP server",
            )
        )
    if mcp is not None and mcp.resource is not None and surfaces.mcp_resources.get(mcp.resource.uri) != cap.id:
        findings.append(
            ClosureFinding(
                code="CLOSURE_MCP_RESOURCE_ABSENT",
                id=cap.id,
                message=f"the MCP resource {mcp.resource.uri} is not listed by the MCP server",
            )
        )
    row = ClosureRow(
        id=cap.id,
        module=cap.module,
        kind=cap.kind,
        stability=cap.stability,
        cli=cap.cli_text,
        http=f"{http.method} {http.path}" if http is not None else None,
        mcp_tool=mcp.tool if mcp is not None else None,
        mcp_resource=mcp.resource.uri if mcp is not None and mcp.resource is not None else None,
        closed=not findings,
        source="builtin",
    )
    return row, findings


async def projections(ctx: Context, params: ProjectionsInput) -> ClosureMatrix:
    """The closure matrix: which capability reaches which surface."""
    registry = ctx.runtime.registry
    if params.module is not None and params.module not in registry.module_by_id:
        known = ", ".join(m.id for m in registry.modules)
        raise NotFound(f"no module {params.module!r} (modules: {known})")
    surfaces = reachable(registry)
    rows: list[ClosureRow] = []
    findings: list[ClosureFinding] = []
    for cap in registry.capabilities:
        if params.module is not None and cap.module != params.module:
            continue
        row, found = _row(cap, surfaces)
        if params.unmet and row.closed:
            continue
        rows.append(row)
        findings.extend(found)
    return ClosureMatrix(rows=rows, unbacked=list(surfaces.unbacked), findings=findings)


declare = Declarations[Context](MODULE, source=__name__)

CAPABILITIES = (
    declare.query(
        "list",
        title="List capabilities",
        description="Every capability of the registry, described in full, with tallies over the registry.",
        input=ListInput,
        output=CapabilityList,
        handler=list_capabilities,
        examples=(
            Example(name="all", input={}, description="the whole registry"),
            Example(name="mcp_queries", input={"kind": "query", "exposure": "mcp"}),
        ),
        http="GET /api/v1/capabilities",
        tool="svc_capabilities",
        cli="capabilities list",
        cache=Cache(policy="process", max_entries=16),
    ),
    declare.query(
        "projections",
        title="Closure matrix of the surfaces",
        description=(
            "For every capability, the surfaces it declares (HTTP, MCP, CLI) and whether each really reaches "
            "it: the route is dispatched, the tool is listed, the CLI words resolve in the command tree."
        ),
        input=ProjectionsInput,
        output=ClosureMatrix,
        handler=projections,
        examples=(
            Example(name="all", input={}),
            Example(name="unmet", input={"unmet": True}, description="only what is not closed"),
        ),
        http="GET /api/v1/capabilities/projections",
        tool="svc_projections",
        cli="capabilities projections",
        cache=Cache(policy="process", max_entries=8),
    ),
    declare.query(
        "describe",
        title="Describe one capability",
        description="One capability by id: schemas, examples, exposure, policies and classification.",
        input=DescribeInput,
        output=CapabilityView,
        handler=describe,
        examples=(Example(name="live", input={"id": "health.live"}),),
        http="GET /api/v1/capability",
        tool="svc_capability",
        cli="capabilities describe",
    ),
)
