"""The mesh page: who works on this repository from where, and what each holds, live.

`GET /cockpit/mesh` shows discovery (`mesh.status`: this node, its providers), and when cooperation runs, the
folded state (`mesh.state`, view `full`): the peers tree of machine, runtime and session (`mesh.peers`), the
claims with their standing and the overlaps and conflicts between them, the sessions, handovers and review
requests (open first), the links (`mesh.cooperation`) and the journal's streams. Where the mesh or
cooperation does not run, it says why and what to do. `claims=live` keeps only held and conflicted claims.
"""

from __future__ import annotations

from typing import Any

import trio
from quart import Response, request
from quart_trio import QuartTrio

from svc._errors import InvalidInput, SvcError
from svc.api.cockpit._render import Cockpit

__all__ = ["routes", "short_key"]

#: The claim filters the page takes (`mesh.state`'s `claims`).
CLAIM_FILTERS = ("all", "live")
#: The order claims are listed in: what needs attention first.
_STANDING_ORDER = {"conflicted": 0, "held": 1, "expired": 2, "released": 3}
_REVIEW_ORDER = {"open": 0, "answered": 1, "expired": 2, "withdrawn": 3}
_SESSION_ORDER = {"active": 0, "expired": 1, "closed": 2}
_LIVE = ("held", "conflicted")


def short_key(key: str) -> str:
    """A mesh key as a person scans it: a node, runtime or stream shortened to its first 8 hex, ids kept.

    `<node>-<runtime>-<instance>/<id>` reads `<node[:8]>…/<id>`; `<node>-<runtime>` reads `<node[:8]>…-<runtime[:6]>`.
    """
    stream, slash, local = key.partition("/")
    parts = stream.split("-")
    if len(parts[0]) == 32:
        head = parts[0][:8] + "…"
        if not slash and len(parts) > 1:
            head += "-" + parts[1][:6]
        return head + slash + local
    return key


def _query() -> str:
    """The `claims` filter of the page (`all` when not given).

    Raises:
        InvalidInput: an unknown, repeated or unexpected parameter.
    """
    for name in request.args:
        if name != "claims":
            raise InvalidInput(f"unknown query parameter {name!r}; this page takes claims")
    given = request.args.getlist("claims")
    if len(given) > 1:
        raise InvalidInput(f"query parameter 'claims' given {len(given)} times; give it once")
    chosen = given[0] if given and given[0] else "all"
    if chosen not in CLAIM_FILTERS:
        raise InvalidInput(f"claims {chosen!r} is not a claim filter; choose one of {', '.join(CLAIM_FILTERS)}")
    return chosen


def _board(state: dict[str, Any]) -> dict[str, Any]:
    """The fold arranged for reading: claims by standing (overlapping ones marked), sessions, reviews open first."""
    claims: list[dict[str, Any]] = state["claims"]
    overlapping: dict[str, list[str]] = {}
    for overlap in state["overlaps"]:
        overlapping.setdefault(overlap["first"], []).append(overlap["second"])
        overlapping.setdefault(overlap["second"], []).append(overlap["first"])
    return {
        "claims": sorted(claims, key=lambda c: (_STANDING_ORDER.get(c["state"]["state"], 9), c["key"])),
        "claim_by_key": {c["key"]: c for c in claims},
        "overlapping": overlapping,
        "sessions": sorted(state["sessions"], key=lambda s: (_SESSION_ORDER.get(s["state"], 9), s["key"])),
        "reviews": sorted(
            state["reviews"], key=lambda r: (_REVIEW_ORDER.get(r["state"], 9), -r["requested_lamport"], r["key"])
        ),
        "handovers": sorted(state["handovers"], key=lambda h: -h["published_lamport"]),
        "tally": {
            "sessions": sum(1 for s in state["sessions"] if s["state"] == "active"),
            "live_claims": sum(1 for c in claims if c["state"]["state"] in _LIVE),
            "conflicted": sum(1 for c in claims if c["state"]["state"] == "conflicted"),
            "overlaps": len(state["overlaps"]),
            "open_reviews": sum(1 for r in state["reviews"] if r["state"] == "open"),
            "untaken_handovers": sum(1 for h in state["handovers"] if not h["consumed_by"]),
        },
    }


def routes(app: QuartTrio, cockpit: Cockpit) -> None:
    """`GET /cockpit/mesh`."""

    @app.get("/cockpit/mesh")
    async def mesh_page() -> Response:
        unchanged = cockpit.unchanged()
        if unchanged is not None:
            return unchanged
        claims = _query()
        asks = {
            "status": ("mesh.status", {}),
            "cooperation": ("mesh.cooperation", {}),
            "state": ("mesh.state", {"view": "full", "claims": claims}),
            "peers": ("mesh.peers", {"view": "full", "claims": claims}),
        }
        answers: dict[str, Any] = {}
        refusals: list[SvcError] = []

        async def ask(name: str, capability: str, params: dict[str, Any]) -> None:
            try:
                answers[name] = await cockpit.ask(capability, params)
            except SvcError as exc:
                refusals.append(exc)

        async with trio.open_nursery() as nursery:
            for name, (capability, params) in asks.items():
                nursery.start_soon(ask, name, capability, params)
        if refusals:
            raise refusals[0]
        state = answers["state"]
        running = bool(state["active"] and state.get("state"))
        return cockpit.render(
            "mesh.html",
            section="mesh",
            title="Mesh",
            live=True,
            topics="mesh",
            discovery=answers["status"],
            cooperation=answers["cooperation"],
            mesh=state,
            tree=answers["peers"],
            board=_board(state["state"]) if running else None,
            claims_filter=claims,
            claim_filters=CLAIM_FILTERS,
            short=short_key,
        )
