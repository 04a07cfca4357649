"""The cockpit: svc's registry, plan, executions, mesh and layer rendered for a person, at `/` and `/cockpit`.

Server-rendered pages over the same executor every surface calls (`Cockpit.ask`), wearing the design system's
stylesheets, with one small script (`cockpit.js`) for what must be live. Each family of pages is a module
with a `routes(app, cockpit)` function; `mount` adds them all to the page app.
"""

from __future__ import annotations

from quart_trio import QuartTrio

from svc.api.cockpit._assets import routes as _asset_routes
from svc.api.cockpit._commands import routes as _command_routes
from svc.api.cockpit._executions import routes as _execution_routes
from svc.api.cockpit._graphs import routes as _graph_routes
from svc.api.cockpit._mesh import routes as _mesh_routes
from svc.api.cockpit._objects import routes as _object_routes
from svc.api.cockpit._plan import routes as _plan_routes
from svc.api.cockpit._registry import routes as _registry_routes
from svc.api.cockpit._render import ASSET_ROUTE as ASSET_ROUTE
from svc.api.cockpit._render import FRAGMENT_HEADER as FRAGMENT_HEADER
from svc.api.cockpit._render import NAVIGATION as NAVIGATION
from svc.api.cockpit._render import PAGE_HEADERS as PAGE_HEADERS
from svc.api.cockpit._render import Cockpit as Cockpit
from svc.api.cockpit._render import NavItem as NavItem

__all__ = ["ASSET_ROUTE", "FRAGMENT_HEADER", "NAVIGATION", "PAGE_HEADERS", "Cockpit", "NavItem", "mount"]

_FAMILIES = (
    _asset_routes,
    _execution_routes,
    _mesh_routes,
    _registry_routes,
    _plan_routes,
    _object_routes,
    _graph_routes,
    _command_routes,
)


def mount(app: QuartTrio, cockpit: Cockpit) -> None:
    """Add every cockpit page (and its script) to the page app."""
    for routes in _FAMILIES:
        routes(app, cockpit)
