"""The server's own routes (not capabilities), written once.

The OpenAPI document lists them (`x-svc.infrastructure`), the home page offers them as surfaces, the HTTP app
dispatches them to its page app, and `GET /api/v1` points at the OpenAPI document and Swagger UI through them.
"""

from __future__ import annotations

from typing import Literal

import msgspec

__all__ = ["SERVER_ROUTES", "ServerRoute", "server_route"]

RouteCategory = Literal["api", "page", "mcp", "stream"]


class ServerRoute(msgspec.Struct, frozen=True, kw_only=True):
    """One route of the server itself (spec: "Server routes")."""

    id: str
    method: Literal["GET"] = "GET"
    path: str
    #: What it is for, as the OpenAPI document's `x-svc.infrastructure` says it.
    purpose: str
    #: Its name on the home page.
    title: str
    category: RouteCategory
    #: It also answers the paths below it (`/swagger/assets/…`, `/docs/…`, `/cockpit/executions`).
    subtree: bool = False


SERVER_ROUTES: tuple[ServerRoute, ...] = (
    ServerRoute(id="home", path="/", purpose="home page listing every surface", title="Home", category="page"),
    ServerRoute(
        id="api",
        path="/api/v1",
        purpose="the capability registry over HTTP",
        title="Capability registry (HTTP)",
        category="api",
    ),
    ServerRoute(
        id="openapi",
        path="/openapi.json",
        purpose="the OpenAPI document",
        title="OpenAPI 3.1 document",
        category="api",
    ),
    ServerRoute(
        id="swagger",
        path="/swagger",
        purpose="Swagger UI over that document",
        title="Swagger UI",
        category="page",
        subtree=True,
    ),
    ServerRoute(
        id="mcp",
        path="/mcp",
        purpose="MCP over HTTP for further clients",
        title="MCP over HTTP",
        category="mcp",
    ),
    ServerRoute(
        id="events",
        path="/events",
        purpose="live channel (WebSocket) of executions",
        title="Live channel of executions (WebSocket)",
        category="stream",
    ),
    ServerRoute(
        id="cockpit",
        path="/cockpit",
        purpose="the registry rendered for a person",
        title="Cockpit",
        category="page",
        subtree=True,
    ),
    ServerRoute(
        id="docs",
        path="/docs/",
        purpose="the repository's own documentation",
        title="Repository documentation",
        category="page",
        subtree=True,
    ),
)

_BY_ID = {route.id: route for route in SERVER_ROUTES}


def server_route(route_id: str) -> ServerRoute:
    """The server route with this id (`home`, `api`, `openapi`, `swagger`, `mcp`, `events`, `cockpit`, `docs`).

    Raises:
        KeyError: no route has this id.
    """
    return _BY_ID[route_id]
