"""A graph drawn as a picture: a layered layout computed in plain Python, written out as inline SVG.

The layout is the classic layered one. Cycles are broken first (every edge a depth-first walk in node order
finds pointing back to a node on its path is laid out reversed and drawn as a back edge); each node then gets
the longest-path layer (a node no edge reaches sits one layer before its nearest successor, so an edge spans as
few layers as it can); a few barycenter sweeps, down then up, order each layer by the mean position of its
neighbours to reduce crossings. A layer holding more than `COLUMN_ROWS` nodes is cut into several adjacent
columns in that order, so the picture stays as tall as it is wide enough to read. Layers run left to right:
every edge of an acyclic graph points rightwards.

Everything is deterministic (same nodes and edges, same picture) and every colour is a class that
`cockpit.css` paints with `--svc-` tokens: the SVG carries no `style` attribute and no literal colour.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence

import markupsafe
import msgspec

__all__ = [
    "COLUMN_ROWS",
    "LABEL_CHARS",
    "NODE_HEIGHT",
    "NODE_WIDTH",
    "Box",
    "DrawNode",
    "DrawnEdge",
    "Layout",
    "layout",
    "render_svg",
]

#: A node's box, in SVG user units (CSS pixels at scale 1).
NODE_WIDTH = 200
NODE_HEIGHT = 28
#: Space between two columns (room for the edges) and between two boxes of a column.
GAP_X = 90
GAP_Y = 12
#: Space around the drawing (room for self-loops above the first row).
MARGIN = 30
#: The most boxes one column holds; a larger layer is cut into adjacent columns.
COLUMN_ROWS = 36
#: Label characters shown in a box; a longer label ends with an ellipsis (the full text is in its `<title>`).
LABEL_CHARS = 27
#: Barycenter sweeps (each one down and one up).
SWEEPS = 3


class DrawNode(msgspec.Struct, frozen=True, kw_only=True):
    """What a picture shows of one node: its id, the label in its box, the tooltip, its link and state."""

    id: str
    label: str
    kind: str
    summary: str | None = None
    route: str | None = None
    status: str | None = None
    external: bool = False


class Box(msgspec.Struct, frozen=True, kw_only=True):
    """Where a node is drawn: its layer, its column (a layer may span several) and its box."""

    layer: int
    column: int
    x: float
    y: float
    width: float = NODE_WIDTH
    height: float = NODE_HEIGHT


class DrawnEdge(msgspec.Struct, frozen=True, kw_only=True):
    """One edge as drawn: its ends, its kind and its path; `back` when it closes a cycle, `loop` for a self-loop."""

    source: str
    target: str
    kind: str
    d: str
    back: bool = False
    loop: bool = False


class Layout(msgspec.Struct, frozen=True, kw_only=True):
    """A whole picture: its size, every node's box and every edge's path."""

    width: float
    height: float
    layers: int
    columns: int
    boxes: dict[str, Box]
    edges: list[DrawnEdge]


def layout(node_ids: Sequence[str], edges: Iterable[tuple[str, str, str]]) -> Layout:
    """The layered layout of `node_ids` (in their given order) and `edges` as (source, target, kind).

    An edge whose ends are not both among `node_ids` is not drawn; a node id given twice counts once.
    """
    order = list(dict.fromkeys(node_ids))
    index = {node: i for i, node in enumerate(order)}
    drawn = [(s, t, k) for s, t, k in edges if s in index and t in index]
    pairs = sorted({(index[s], index[t]) for s, t, _ in drawn if s != t})
    back = _back_edges(len(order), pairs)
    dag = sorted({(t, s) if (s, t) in back else (s, t) for s, t in pairs})
    layer_of = _layers(len(order), dag)
    layers = _ordered_layers(len(order), dag, layer_of)
    boxes: dict[str, Box] = {}
    column = 0
    rows_most = 0
    placed: list[tuple[int, list[int]]] = []
    for number, members in enumerate(layers):
        for start in range(0, max(len(members), 1), COLUMN_ROWS):
            chunk = members[start : start + COLUMN_ROWS]
            placed.append((number, chunk))
            rows_most = max(rows_most, len(chunk))
            column += 1
    height = 2 * MARGIN + max(rows_most, 1) * (NODE_HEIGHT + GAP_Y) - GAP_Y
    for col, (number, chunk) in enumerate(placed):
        offset = (rows_most - len(chunk)) * (NODE_HEIGHT + GAP_Y) / 2
        x = MARGIN + col * (NODE_WIDTH + GAP_X)
        for row, i in enumerate(chunk):
            y = MARGIN + offset + row * (NODE_HEIGHT + GAP_Y)
            boxes[order[i]] = Box(layer=number, column=col, x=x, y=y)
    width = 2 * MARGIN + max(column, 1) * (NODE_WIDTH + GAP_X) - GAP_X
    back_ids = {(order[s], order[t]) for s, t in back}
    paths = [
        _edge(boxes[s], boxes[t], s, t, k, back=(s, t) in back_ids)
        for s, t, k in sorted(set(drawn), key=lambda e: (index[e[0]], index[e[1]], e[2]))
    ]
    return Layout(width=width, height=height, layers=len(layers), columns=column, boxes=boxes, edges=paths)


def _back_edges(n: int, pairs: list[tuple[int, int]]) -> set[tuple[int, int]]:
    """The edges a depth-first walk in node order finds pointing at a node on its current path."""
    succ: list[list[int]] = [[] for _ in range(n)]
    for s, t in pairs:
        succ[s].append(t)
    state = [0] * n  # 0 unseen, 1 on the path, 2 done
    back: set[tuple[int, int]] = set()
    for root in range(n):
        if state[root]:
            continue
        state[root] = 1
        stack: list[tuple[int, int]] = [(root, 0)]
        while stack:
            node, nxt = stack[-1]
            if nxt < len(succ[node]):
                stack[-1] = (node, nxt + 1)
                target = succ[node][nxt]
                if state[target] == 1:
                    back.add((node, target))
                elif state[target] == 0:
                    state[target] = 1
                    stack.append((target, 0))
            else:
                state[node] = 2
                stack.pop()
    return back


def _layers(n: int, dag: list[tuple[int, int]]) -> list[int]:
    """The longest-path layer of each node; a node without predecessors moves up to just before its successors."""
    succ: list[list[int]] = [[] for _ in range(n)]
    indegree = [0] * n
    for s, t in dag:
        succ[s].append(t)
        indegree[t] += 1
    ready = [i for i in range(n) if indegree[i] == 0]
    heapq.heapify(ready)
    topo: list[int] = []
    layer = [0] * n
    remaining = list(indegree)
    while ready:
        node = heapq.heappop(ready)
        topo.append(node)
        for t in succ[node]:
            layer[t] = max(layer[t], layer[node] + 1)
            remaining[t] -= 1
            if remaining[t] == 0:
                heapq.heappush(ready, t)
    for node in reversed(topo):
        if indegree[node] == 0 and succ[node]:
            layer[node] = min(layer[t] for t in succ[node]) - 1
    return layer


def _ordered_layers(n: int, dag: list[tuple[int, int]], layer_of: list[int]) -> list[list[int]]:
    """Each layer's nodes, ordered by barycenter sweeps (ties keep the previous order)."""
    count = max(layer_of, default=-1) + 1
    layers: list[list[int]] = [[] for _ in range(count)]
    for i in range(n):
        layers[layer_of[i]].append(i)
    pred: list[list[int]] = [[] for _ in range(n)]
    succ: list[list[int]] = [[] for _ in range(n)]
    for s, t in dag:
        succ[s].append(t)
        pred[t].append(s)
    position = [0.0] * n

    def place(members: list[int]) -> None:
        for rank, node in enumerate(members):
            position[node] = (rank + 0.5) / len(members)

    for members in layers:
        place(members)

    def sweep(numbers: Iterable[int], neighbours: list[list[int]]) -> None:
        for number in numbers:
            members = layers[number]

            def key(node: int) -> tuple[float, float]:
                near = neighbours[node]
                mean = sum(position[m] for m in near) / len(near) if near else position[node]
                return (mean, position[node])

            members.sort(key=key)
            place(members)

    for _ in range(SWEEPS):
        sweep(range(1, count), pred)
        sweep(range(count - 2, -1, -1), succ)
    return layers


def _edge(a: Box, b: Box, source: str, target: str, kind: str, *, back: bool) -> DrawnEdge:
    """The path of one edge: a curve from the right side of `a` to the left side of `b`, or around for a cycle."""
    mid_a = a.y + a.height / 2
    mid_b = b.y + b.height / 2
    if source == target:
        right = a.x + a.width
        d = _curve((right - 24, a.y), (right - 24, a.y - 22), (right + 18, a.y - 22), (right, a.y + 6))
        return DrawnEdge(source=source, target=target, kind=kind, d=d, back=back, loop=True)
    if b.x > a.x:
        start = a.x + a.width
        end = b.x
        bend = (end - start) / 2
        d = _curve((start, mid_a), (start + bend, mid_a), (end - bend, mid_b), (end, mid_b))
        return DrawnEdge(source=source, target=target, kind=kind, d=d, back=back)
    # The target sits in the same column or to the left: leave by the left side, come in on its right side,
    # bowing below the straight line so the curve does not run along the boxes between.
    start = a.x
    end = b.x + b.width
    d = _curve((start, mid_a), (start - 60, mid_a + 40), (end + 60, mid_b + 40), (end, mid_b))
    return DrawnEdge(source=source, target=target, kind=kind, d=d, back=True)


def _curve(*points: tuple[float, float]) -> str:
    """An SVG path: a move to the first point, then one cubic curve through the other three."""
    (x0, y0), *rest = points
    return f"M{_n(x0)},{_n(y0)} C" + " ".join(f"{_n(x)},{_n(y)}" for x, y in rest)


def _n(value: float) -> str:
    """A coordinate as short text (integers without a fraction)."""
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _short(label: str) -> str:
    return label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "…"


def _safe_route(route: str | None) -> str | None:
    """A node's route as a link target: a path of this server only (never a scheme, never another host)."""
    if route is None or not route.startswith("/") or route.startswith("//") or "\\" in route:
        return None
    return route


def render_svg(
    nodes: Sequence[DrawNode], edges: Iterable[tuple[str, str, str]], *, label: str, focus: str | None = None
) -> markupsafe.Markup:
    """The inline `<svg>` of `nodes` and `edges` (source, target, kind), described by `label` for assistive technology.

    Each node is a box with its truncated label and its full label and summary as `<title>`, a link when it has
    a route; each edge a path with an arrowhead and its kind as `<title>`. `focus` marks one node.
    """
    by_id = {node.id: node for node in nodes}
    edge_list = list(edges)
    drawn = layout([node.id for node in nodes], edge_list)
    esc = markupsafe.escape
    out: list[str] = [
        f'<svg class="cockpit-graph" xmlns="http://www.w3.org/2000/svg" role="group" aria-label="{esc(label)}" '
        f'viewBox="0 0 {_n(drawn.width)} {_n(drawn.height)}" width="{_n(drawn.width)}" height="{_n(drawn.height)}" '
        f'data-layers="{drawn.layers}" data-columns="{drawn.columns}">',
        "<defs>"
        '<marker id="cockpit-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path class="cockpit-graph__arrow" d="M0,0 L10,5 L0,10 z"/></marker>'
        "</defs>",
        '<g class="cockpit-graph__edges">',
    ]
    for edge in drawn.edges:
        classes = "cockpit-graph__edge"
        if edge.back:
            classes += " cockpit-graph__edge--back"
        out.append(
            f'<path class="{classes}" d="{edge.d}" marker-end="url(#cockpit-arrow)" data-source="{esc(edge.source)}" '
            f'data-target="{esc(edge.target)}" data-kind="{esc(edge.kind)}">'
            f"<title>{esc(by_id[edge.source].label)} {esc(edge.kind)} {esc(by_id[edge.target].label)}</title></path>"
        )
    out.append("</g>")
    out.append('<g class="cockpit-graph__nodes">')
    for node in nodes:
        box = drawn.boxes[node.id]
        classes = "cockpit-graph__node"
        if node.external:
            classes += " cockpit-graph__node--external"
        if node.id == focus:
            classes += " cockpit-graph__node--focus"
        status = f' data-status="{esc(node.status.lower())}"' if node.status else ""
        tooltip = f"{node.label} ({node.kind})" + (f": {node.summary}" if node.summary else "")
        body = (
            f'<g class="{classes}" data-node-id="{esc(node.id)}" data-kind="{esc(node.kind)}">'
            f"<title>{esc(tooltip)}</title>"
            f'<rect x="{_n(box.x)}" y="{_n(box.y)}" width="{_n(box.width)}" height="{_n(box.height)}" rx="5"{status}/>'
            f'<text x="{_n(box.x + 8)}" y="{_n(box.y + box.height / 2)}" dominant-baseline="central">'
            f"{esc(_short(node.label))}</text></g>"
        )
        route = _safe_route(node.route)
        out.append(f'<a href="{esc(route)}">{body}</a>' if route else body)
    out.append("</g></svg>")
    return markupsafe.Markup("".join(out))
