"""The home page for a person: the surfaces with their real state, and a panel for each thing people watch.

`GET /` answers this page to a browser (an `Accept` naming `text/html`) and the JSON `HomeDocument` to
everything else (the server lease probe reads that). Each panel is the answer of a capability: the plan
(`plan.status`), executions (`executions.list`), the mesh (`mesh.state`), health (`health.report`) and the
layer (`objects.list`). A panel whose capability refuses shows the refusal instead (a checkout without `.ai/`
has no plan to show).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import msgspec
import trio
from quart import Response

from svc.api.cockpit._render import Cockpit

__all__ = ["home_page"]

#: How long the page waits for a panel's answer; a slower one fills in on the page's next live refresh.
PANEL_SECONDS = 0.5
#: The capabilities the panels show, with their inputs.
_PANELS: dict[str, tuple[str, dict[str, Any]]] = {
    "plan": ("plan.status", {}),
    "next": ("plan.next", {}),
    "executions": ("executions.list", {"limit": 8}),
    "mesh": ("mesh.state", {"view": "summary"}),
    "health": ("health.report", {}),
    "objects": ("objects.list", {}),
}


async def home_page(cockpit: Cockpit, document: msgspec.Struct) -> Response:
    """The home page of `document` (the JSON home answer), with its live panels."""
    unchanged = cockpit.unchanged()
    if unchanged is not None:
        return unchanged
    answers: dict[str, tuple[Any, str | None]] = {}
    pending: set[str] = set()

    async def ask(name: str, capability: str, params: dict[str, Any]) -> None:
        answer, refusal, late = await cockpit.ask_within(capability, params, PANEL_SECONDS)
        answers[name] = (answer, refusal if not late else "still being read; this panel fills in by itself")
        if late:
            pending.add(name)

    async with trio.open_nursery() as nursery:
        for name, (capability, params) in _PANELS.items():
            nursery.start_soon(ask, name, capability, params)
    objects, _ = answers["objects"]
    kinds = Counter(o["kind"] for o in objects["objects"]) if objects else Counter()
    return cockpit.render(
        "home.html",
        section="home",
        title="Home",
        live=True,
        pending=bool(pending),
        follow="*",
        home=msgspec.to_builtins(document),
        panels=answers,
        kinds=sorted(kinds.items()),
    )
