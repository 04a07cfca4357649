"""The MCP listing of a registry as plain data: tools, query resources, served methods and versions.

A pure function of the registry (no MCP library is imported here): the MCP server lists exactly these tools
and resources, `mcp.projection` reports them, and the closure matrix checks every declaration against them,
so the three cannot drift. Each tool carries self-contained JSON Schemas (`inputSchema`, `outputSchema`) from
the same Structs as the OpenAPI document, and annotations derived from the capability's effect.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import msgspec

from svc.registry._declaration import Effect, Hints
from svc.registry._registry import Registry
from svc.registry._schema import standalone

__all__ = [
    "OBJECT_TEMPLATE",
    "PROTOCOL_VERSIONS",
    "SERVED_METHODS",
    "SERVER_NAME",
    "SERVER_TITLE",
    "McpCatalog",
    "ResourceSpec",
    "ToolSpec",
    "mcp_catalog",
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
