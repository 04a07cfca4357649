"""The commands pages: `GET /cockpit/commands` (every command a person can run here) and one command.

`/cockpit/commands` shows what `commands.list` answers, grouped by origin (executable, tool, workflow), with the
filters it takes (`origin`, `effect` as a ceiling, `search`), and the diagnostics of `commands.graph`.
`/cockpit/commands/<id>` (or `/cockpit/commands?id=`) shows what `commands.get` answers: its arguments, how it
is executed, its effect and where it is projected, or why a machine surface withholds it.
"""

from __future__ import annotations

from typing import Any

from quart import Response
from quart_trio import QuartTrio

from svc._errors import InvalidInput
from svc.api.cockpit._query import page_args
from svc.api.cockpit._render import Cockpit
from svc.layer._command_graph import EFFECTS, ORIGINS

__all__ = ["routes"]

#: The surfaces of a command's projections, in the order a page lists them, with their names for a person.
PROJECTIONS = (
    ("cli", "Command line"),
    ("workflow", "Workflow recipe"),
    ("mcp", "MCP tool"),
    ("http", "HTTP route"),
    ("cockpit", "Cockpit"),
    ("docs", "Documentation"),
)
#: A command's optional fields, present for the template when the answer omits them.
_COMMAND_DEFAULTS: dict[str, Any] = {
    "description": None,
    "group": None,
    "tags": [],
    "aliases": [],
    "deprecation": None,
    "entrypoint": None,
}
_ARGUMENT_DEFAULTS: dict[str, Any] = {"long": None, "short": None, "value_name": None, "values": [], "defaults": []}


def routes(app: QuartTrio, cockpit: Cockpit) -> None:
    """Register `/cockpit/commands` and `/cockpit/commands/<id>`."""

    @app.get("/cockpit/commands")
    async def commands() -> Response:
        args = page_args(("id", "origin", "effect", "search"))
        command_id = args.pop("id", None)
        if isinstance(command_id, str):
            if args:
                raise InvalidInput(f"{sorted(args)[0]} filters the list: give it without id")
            return await _command_page(cockpit, command_id)
        return await _list_page(cockpit, {k: v for k, v in args.items() if isinstance(v, str)})

    @app.get("/cockpit/commands/<command_id>")
    async def command(command_id: str) -> Response:
        page_args(())
        return await _command_page(cockpit, command_id)


async def _list_page(cockpit: Cockpit, filters: dict[str, str]) -> Response:
    unchanged = cockpit.unchanged()
    if unchanged is not None:
        return unchanged
    index = await cockpit.ask("commands.list", filters)
    report, refusal = await cockpit.ask_or_error("commands.graph")
    groups = [
        (origin, [{"group": None, **c} for c in index["commands"] if c["origin"] == origin]) for origin in ORIGINS
    ]
    return cockpit.render(
        "commands.html",
        section="commands",
        title="Commands",
        live=True,
        index=index,
        groups=[(origin, rows) for origin, rows in groups if filters.get("origin") in (None, origin)],
        filters=filters,
        chosen={name: filters.get(name) for name in ("origin", "effect", "search")},
        origins=ORIGINS,
        effects=EFFECTS,
        diagnostics=report["graph"]["diagnostics"] if report else [],
        diagnostics_note=refusal,
        projections=PROJECTIONS,
    )


async def _command_page(cockpit: Cockpit, command_id: str) -> Response:
    unchanged = cockpit.unchanged()
    if unchanged is not None:
        return unchanged
    node = await cockpit.ask("commands.get", {"id": command_id})
    return cockpit.render(
        "command.html",
        section="commands",
        title=node["invocation"],
        live=True,
        command={**_COMMAND_DEFAULTS, **node},
        arguments=[{**_ARGUMENT_DEFAULTS, **a} for a in node["arguments"]],
        projections=PROJECTIONS,
    )
