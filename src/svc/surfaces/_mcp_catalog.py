"""The MCP listing of a registry as plain data: tools, query resources, served methods and versions.

A pure function of the registry (no MCP library is imported here): the MCP server lists exactly these tools
and resources, `mcp.projection` reports them, and the closure matrix checks every declaration against them,
so the three cannot drift. Each tool carries self-contained JSON Schemas (`inputSchema`, `outputSchema`) from
the same Structs as the OpenAPI document, and annotations derived from the capability's effect.

A tool set (`svc mcp --tools SET`) is a part of the catalog: `all`, `core` (`CORE_MODULES` and `CORE_TOOLS`), or a
comma list of module ids and tool names. Its size in tokens is an estimate: the UTF-8 bytes of the compact JSON
array of its tools exactly as `tools/list` lists them (`tool_listing`), divided by 4 and rounded up.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Mapping
from contextvars import ContextVar
from types import MappingProxyType
from typing import Any

import msgspec

from svc.registry._declaration import Effect, Hints
from svc.registry._registry import Registry
from svc.registry._schema import standalone

__all__ = [
    "ALL_TOOLS",
    "CORE_MODULES",
    "CORE_TOOLS",
    "CORE_TOOL_SET",
    "OBJECT_TEMPLATE",
    "PROTOCOL_VERSIONS",
    "SERVED_METHODS",
    "SERVED_TOOL_SET",
    "SERVER_NAME",
    "SERVER_TITLE",
    "McpCatalog",
    "ResourceSpec",
    "ToolSet",
    "ToolSpec",
    "UnknownToolSet",
    "mcp_catalog",
    "tool_listing",
    "tool_set",
]

SERVER_NAME = "svc"
SERVER_TITLE = "svc: the capability registry of this repository's AI layer"
#: Every protocol version the MCP server accepts, newest first: the 2026-07-28 per-request era, then the
#: `initialize` handshake era. `tests/api/test_mcp.py` pins this against the SDK's own lists.
PROTOCOL_VERSIONS: tuple[str, ...] = ("2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
#: The requests the server answers; any other method is answered -32601. `ping` belongs to the handshake
#: era and `server/discover` to the 2026-07-28 era. `notifications/initialized` is acted on, never answered.
SERVED_METHODS: tuple[str, ...] = (
    "initialize",
    "server/discover",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "resources/templates/list",
)
#: The URI shape of the layer's objects.
OBJECT_TEMPLATE = "svc://<kind>/<identity>"
#: The tool set of every tool (the default of `svc mcp --tools`).
ALL_TOOLS = "all"
#: The tool set an agent working the plan needs: `CORE_MODULES` and `CORE_TOOLS`.
CORE_TOOL_SET = "core"
#: Every tool of these modules is in `core`: the plan, health and the capability catalog.
CORE_MODULES: tuple[str, ...] = ("plan", "health", "capabilities")
#: These tools are in `core` by name: claiming and releasing on the mesh, and taking the next issue. A name the
#: registry does not hold is passed over, so a tool declared later under it joins `core` as it appears.
CORE_TOOLS: tuple[str, ...] = ("svc_mesh_claim", "svc_mesh_release", "svc_plan_take")


class ToolSpec(msgspec.Struct, frozen=True, kw_only=True):
    """One MCP tool: a capability with `x-svc-mcp.tool`."""

    name: str
    capability: str
    module: str
    title: str
    description: str
    effect: Effect
    hints: Hints
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None

    @property
    def writes_repository(self) -> bool:
        """Whether calling the tool writes the repository (effect `repository_mutation`)."""
        return self.effect == "repository_mutation"


class ResourceSpec(msgspec.Struct, frozen=True, kw_only=True):
    """One query resource: a capability with `x-svc-mcp.resource`, read by calling it with no input."""

    uri: str
    name: str
    title: str
    description: str
    capability: str


class McpCatalog:
    """The tools and query resources of one registry, in registry (capability id) order."""

    def __init__(self, tools: tuple[ToolSpec, ...], resources: tuple[ResourceSpec, ...]) -> None:
        self.tools = tools
        self.resources = resources
        self.tool_by_name: Mapping[str, ToolSpec] = MappingProxyType({t.name: t for t in tools})
        self.resource_by_uri: Mapping[str, ResourceSpec] = MappingProxyType({r.uri: r for r in resources})
        self.writers: tuple[str, ...] = tuple(t.name for t in tools if t.writes_repository)
        #: The module ids that have tools, in registry order.
        self.modules: tuple[str, ...] = tuple(dict.fromkeys(t.module for t in tools))
        #: The UTF-8 bytes of each tool's compact JSON as `tools/list` lists it.
        self.tool_bytes: Mapping[str, int] = MappingProxyType(
            {t.name: len(msgspec.json.encode(tool_listing(t))) for t in tools}
        )

    def tokens(self, names: Iterable[str]) -> int:
        """Estimated tokens of a `tools/list` answer holding these tools: the bytes of its JSON array over 4."""
        sizes = [self.tool_bytes[name] for name in names]
        array = 2 + sum(sizes) + max(0, len(sizes) - 1)
        return (array + 3) // 4


class ToolSet(msgspec.Struct, frozen=True, kw_only=True):
    """The tools one MCP stdio session serves (`svc mcp --tools SET`), in registry order."""

    set: str
    tools: tuple[str, ...]
    tokens: int

    @property
    def names(self) -> frozenset[str]:
        """The tool names of the set."""
        return frozenset(self.tools)


class UnknownToolSet(ValueError):
    """A tool set names something that is neither a module with tools nor a tool."""

    def __init__(self, spec: str, unknown: tuple[str, ...], modules: tuple[str, ...]) -> None:
        if unknown:
            what = f"unknown module or tool {', '.join(repr(u) for u in unknown)} in the tool set {spec!r}"
        else:
            what = f"the tool set {spec!r} names nothing"
        super().__init__(
            f"{what}: a tool set is `{ALL_TOOLS}`, `{CORE_TOOL_SET}`, or a comma list of module ids and tool "
            f"names (svc_...); the module ids are {', '.join(modules)}"
        )
        self.unknown = unknown


#: The tool set this process's `svc mcp` serves on its stdio session; None: every tool (no `--tools`).
SERVED_TOOL_SET: ContextVar[ToolSet | None] = ContextVar("svc_served_tool_set", default=None)


def tool_set(catalog: McpCatalog, spec: str) -> ToolSet:
    """Resolve `spec` against the catalog: `all`, `core`, or a comma list of module ids and tool names.

    A member of a comma list may itself be `all` or `core`; spaces around members are ignored. The set is
    named by its members as given, once each, joined by commas.

    Raises:
        UnknownToolSet: a member is neither `all`, `core`, a module id with tools nor a tool name, or the
            list names nothing.
    """
    members = tuple(dict.fromkeys(m.strip() for m in spec.split(",") if m.strip()))
    unknown = tuple(
        m
        for m in members
        if m not in (ALL_TOOLS, CORE_TOOL_SET) and m not in catalog.modules and m not in catalog.tool_by_name
    )
    if unknown or not members:
        raise UnknownToolSet(spec, unknown, catalog.modules)
    modules: set[str] = set()
    names: set[str] = set()
    for member in members:
        if member == ALL_TOOLS:
            modules.update(catalog.modules)
        elif member == CORE_TOOL_SET:
            modules.update(CORE_MODULES)
            names.update(CORE_TOOLS)
        elif member in catalog.tool_by_name:
            names.add(member)
        else:
            modules.add(member)
    tools = tuple(t.name for t in catalog.tools if t.module in modules or t.name in names)
    return ToolSet(set=",".join(members), tools=tools, tokens=catalog.tokens(tools))


def tool_listing(spec: ToolSpec) -> dict[str, Any]:
    """One tool as `tools/list` lists it (the MCP `Tool` object, fields without a value left out)."""
    hints = spec.hints
    listed: dict[str, Any] = {
        "name": spec.name,
        "title": spec.title,
        "description": spec.description,
        "inputSchema": spec.input_schema,
    }
    if spec.output_schema is not None:
        listed["outputSchema"] = spec.output_schema
    listed["annotations"] = {
        "title": spec.title,
        "readOnlyHint": hints.read_only,
        "destructiveHint": hints.destructive,
        "idempotentHint": hints.idempotent,
        "openWorldHint": hints.open_world,
    }
    listed["_meta"] = {"svc": {"id": spec.capability, "effect": spec.effect}}
    return listed


_CATALOGS: weakref.WeakKeyDictionary[Registry, McpCatalog] = weakref.WeakKeyDictionary()


def mcp_catalog(registry: Registry) -> McpCatalog:
    """The MCP catalog of `registry` (built once per registry)."""
    catalog = _CATALOGS.get(registry)
    if catalog is None:
        catalog = _build(registry)
        _CATALOGS[registry] = catalog
    return catalog


def _build(registry: Registry) -> McpCatalog:
    tools: list[ToolSpec] = []
    resources: list[ResourceSpec] = []
    for cap in registry.capabilities:
        mcp = cap.exposure.mcp
        if mcp is None:
            continue
        if mcp.tool is not None:
            tools.append(
                ToolSpec(
                    name=mcp.tool,
                    capability=cap.id,
                    module=cap.module,
                    title=cap.title,
                    description=cap.description,
                    effect=cap.effect,
                    hints=cap.hints,
                    input_schema=_object_schema(standalone(registry.schemas, cap.input)) or {"type": "object"},
                    output_schema=_object_schema(standalone(registry.schemas, cap.output)),
                )
            )
        if mcp.resource is not None:
            resources.append(
                ResourceSpec(
                    uri=mcp.resource.uri,
                    name=mcp.resource.name,
                    title=cap.title,
                    description=cap.description,
                    capability=cap.id,
                )
            )
    return McpCatalog(tuple(tools), tuple(resources))


def _object_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    """`schema` when its root is an object (or a union of objects, then typed `object`), else None.

    MCP requires `type: object` at the root of `inputSchema` and `outputSchema` through 2025-11-25.
    """
    if schema.get("type") == "object":
        return schema
    members = schema.get("anyOf") or schema.get("oneOf")
    if "type" not in schema and isinstance(members, list) and members:
        defs: dict[str, Any] = schema.get("$defs", {})
        if all(_is_object(member, defs) for member in members):
            return {"type": "object", **schema}
    return None


def _is_object(member: Any, defs: dict[str, Any]) -> bool:
    if not isinstance(member, dict):
        return False
    ref = member.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        member = defs.get(ref[len("#/$defs/") :], {})
    return isinstance(member, dict) and member.get("type") == "object"
