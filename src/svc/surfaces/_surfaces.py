"""What each surface really reaches, computed from the tables the surfaces are built from.

The HTTP server dispatches through `Registry.by_route`, the command line is built from `cli_tree`, and the
MCP server lists its tools and query resources from `mcp_catalog`. The closure matrix compares every
declaration with these.
"""

from __future__ import annotations

from dataclasses import dataclass

from svc.registry._registry import Registry
from svc.surfaces._cli_tree import cli_tree
from svc.surfaces._mcp_catalog import mcp_catalog

__all__ = ["Reachable", "reachable"]


@dataclass(frozen=True, slots=True)
class Reachable:
    """Surface entry → capability id, per surface."""

    http: dict[tuple[str, str], str]
    cli: dict[tuple[str, ...], str | None]
    mcp_tools: dict[str, str]
    mcp_resources: dict[str, str]
    unbacked: tuple[str, ...]


def reachable(registry: Registry) -> Reachable:
    """The reachable entries of every surface of `registry`."""
    tree = cli_tree(registry)
    catalog = mcp_catalog(registry)
    return Reachable(
        http={route: cap.id for route, cap in registry.by_route.items()},
        cli={tuple(c.words): c.capability for c in tree},
        mcp_tools={tool.name: tool.capability for tool in catalog.tools},
        mcp_resources={resource.uri: resource.capability for resource in catalog.resources},
        unbacked=tuple(" ".join(c.words) for c in tree if c.capability is None),
    )
