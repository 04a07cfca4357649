"""The graphs pages: `GET /cockpit/graphs` (every graph `graph.list` names) and one graph drawn as a picture.

`GET /cockpit/graphs/<id>` (or `/cockpit/graphs?id=<id>`) asks `graph.get` and draws its answer as inline SVG
(`_svg`), with every node and edge in tables below the picture. `graph.get` takes only the graph's id, so the
page narrows the answer itself: `kind` (repeatable) keeps the nodes of those kinds, `focus` keeps one node and
the nodes within `depth` edges of it (either direction, 1 to 5, default 1). The picture holds at most
`MAX_DRAWN` nodes (the first ones, in the answer's order) and says when it holds fewer than the tables.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import trio
from quart import Response
from quart_trio import QuartTrio

from svc._errors import InvalidInput, NotFound
from svc.api.cockpit._query import page_args, whole_number
from svc.api.cockpit._render import Cockpit
from svc.api.cockpit._svg import DrawNode, render_svg

__all__ = ["MAX_DRAWN", "narrow", "routes"]

#: The most nodes a picture draws; the tables below it always list every node and edge.
MAX_DRAWN = 400
#: The farthest a focus reaches.
MAX_DEPTH = 5
#: A node's optional fields, present for the template when the answer omits them.
_NODE_DEFAULTS: dict[str, Any] = {"summary": None, "route": None, "source": None, "status": None, "external": False}


def routes(app: QuartTrio, cockpit: Cockpit) -> None:
    """Register `/cockpit/graphs` and `/cockpit/graphs/<id>`."""

    @app.get("/cockpit/graphs")
    async def graphs() -> Response:
        args = page_args(("id", "focus", "depth"), ("kind",))
        graph_id = args.pop("id", None)
        if isinstance(graph_id, str):
            return await _graph_page(cockpit, graph_id, args)
        if args:
            raise InvalidInput(f"{sorted(args)[0]} narrows one graph: give id too (/cockpit/graphs/<id>)")
        return await _list_page(cockpit)

    @app.get("/cockpit/graphs/<graph_id>")
    async def graph(graph_id: str) -> Response:
        return await _graph_page(cockpit, graph_id, page_args(("focus", "depth"), ("kind",)))


def _one(value: str | list[str] | None) -> str | None:
    """A single-valued parameter (`page_args` gives those as strings)."""
    return value if isinstance(value, str) else None


async def _list_page(cockpit: Cockpit) -> Response:
    unchanged = cockpit.unchanged()
    if unchanged is not None:
        return unchanged
    listing = await cockpit.ask("graph.list")
    sizes: dict[str, tuple[Any, str | None]] = {}

    async def size(graph_id: str) -> None:
        sizes[graph_id] = await cockpit.ask_or_error("graph.get", {"id": graph_id})

    async with trio.open_nursery() as nursery:
        for info in listing["graphs"]:
            nursery.start_soon(size, info["id"])
    rows = []
    for info in listing["graphs"]:
        answer, refusal = sizes[info["id"]]
        rows.append({**info, "metadata": answer["metadata"] if answer else None, "refusal": refusal})
    return cockpit.render("graphs.html", section="graphs", title="Graphs", live=True, graphs=rows)


def narrow(graph: dict[str, Any], kinds: list[str], focus: str | None, depth: int) -> list[dict[str, Any]]:
    """The nodes of `graph` a page keeps: of `kinds` (all when empty), within `depth` edges of `focus` (if any).

    The focus itself is always kept; order is the answer's.
    """
    nodes: list[dict[str, Any]] = graph["nodes"]
    keep = {node["id"] for node in nodes if not kinds or node["kind"] in kinds}
    if focus is not None:
        near: dict[str, list[str]] = {}
        for edge in graph["edges"]:
            near.setdefault(edge["source"], []).append(edge["target"])
            near.setdefault(edge["target"], []).append(edge["source"])
        reached = {focus: 0}
        queue = deque([focus])
        while queue:
            node = queue.popleft()
            if reached[node] == depth:
                continue
            for other in near.get(node, ()):
                if other not in reached:
                    reached[other] = reached[node] + 1
                    queue.append(other)
        keep = (keep & reached.keys()) | {focus}
    return [node for node in nodes if node["id"] in keep]


async def _graph_page(cockpit: Cockpit, graph_id: str, args: dict[str, str | list[str]]) -> Response:
    unchanged = cockpit.unchanged()
    if unchanged is not None:
        return unchanged
    graph = await cockpit.ask("graph.get", {"id": graph_id})
    given = args.get("kind")
    kinds = given if isinstance(given, list) else []
    unknown = [k for k in kinds if k not in graph["node_kinds"]]
    if unknown:
        held = ", ".join(graph["node_kinds"]) or "none"
        raise InvalidInput(f"graph {graph_id} has no node kind {unknown[0]!r} (its kinds: {held})")
    focus = _one(args.get("focus"))
    if focus is not None and not any(node["id"] == focus for node in graph["nodes"]):
        raise NotFound(f"graph {graph_id} has no node {focus!r} (its node table names every node)")
    if "depth" in args and focus is None:
        raise InvalidInput("depth counts edges from a focus: give focus too")
    depth = whole_number("depth", args.get("depth"), default=1, lowest=1, highest=MAX_DEPTH)
    nodes = [{**_NODE_DEFAULTS, **node} for node in narrow(graph, kinds, focus, depth)]
    kept = {node["id"] for node in nodes}
    edges = [e for e in graph["edges"] if e["source"] in kept and e["target"] in kept]
    drawn = nodes[:MAX_DRAWN]
    ids = {node["id"] for node in drawn}
    picture = render_svg(
        [
            DrawNode(
                id=node["id"],
                label=node["label"],
                kind=node["kind"],
                summary=node.get("summary"),
                route=node.get("route"),
                status=node.get("status"),
                external=bool(node.get("external", False)),
            )
            for node in drawn
        ],
        [(e["source"], e["target"], e["kind"]) for e in edges if e["source"] in ids and e["target"] in ids],
        label=f"{graph['title']}: {len(drawn)} nodes and their edges, drawn in layers from left to right",
        focus=focus,
    )
    labels = {node["id"]: node["label"] for node in graph["nodes"]}
    return cockpit.render(
        "graph.html",
        section="graphs",
        title=graph["title"],
        live=True,
        graph=graph,
        nodes=nodes,
        edges=edges,
        drawn=len(drawn),
        cap=MAX_DRAWN,
        picture=picture,
        labels=labels,
        kinds=kinds,
        focus=focus,
        depth=depth,
        max_depth=MAX_DEPTH,
        narrowed=bool(kinds) or focus is not None,
        unresolved=graph.get("unresolved_relations") or [],
    )
