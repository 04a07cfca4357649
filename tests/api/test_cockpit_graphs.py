"""The graphs pages and the layered drawing of a graph.

Pairs with `src/svc/api/cockpit/_graphs.py`, `_svg.py` and the templates `graphs.html`, `graph.html`.
"""

from __future__ import annotations

import random
import re
from itertools import combinations

import httpx
import pytest

from svc.api.cockpit import FRAGMENT_HEADER, _graphs
from svc.api.cockpit._svg import COLUMN_ROWS, LABEL_CHARS, DrawNode, Layout, layout, render_svg
from tests.api._cockpit_pages import (
    HTML,
    assert_links_answer,
    assert_no_absolute_path,
    escape,
    page,
    read_page,
)

# -- the layout --------------------------------------------------------------------------------------------


def _assert_no_overlap(drawn: Layout) -> None:
    boxes = list(drawn.boxes.items())
    for (a, p), (b, q) in combinations(boxes, 2):
        apart = p.x + p.width <= q.x or q.x + q.width <= p.x or p.y + p.height <= q.y or q.y + q.height <= p.y
        assert apart, (a, p, b, q)
    for box in drawn.boxes.values():
        assert box.x >= 0
        assert box.x + box.width <= drawn.width
        assert box.y >= 0
        assert box.y + box.height <= drawn.height


def _random_graph(seed: int, n: int, m: int, *, acyclic: bool) -> tuple[list[str], list[tuple[str, str, str]]]:
    rng = random.Random(seed)
    ids = [f"n{i:03d}" for i in range(n)]
    edges: set[tuple[str, str, str]] = set()
    while len(edges) < m:
        a, b = rng.randrange(n), rng.randrange(n)
        if a == b:
            continue
        if acyclic and a > b:
            a, b = b, a
        edges.add((ids[a], ids[b], rng.choice(["x", "y"])))
    order = ids[:]
    rng.shuffle(order)
    return order, sorted(edges)


@pytest.mark.parametrize("seed", range(6))
def test_an_acyclic_graph_points_every_edge_rightwards_and_no_boxes_overlap(seed: int) -> None:
    nodes, edges = _random_graph(seed, 60, 110, acyclic=True)
    drawn = layout(nodes, edges)
    assert set(drawn.boxes) == set(nodes)
    _assert_no_overlap(drawn)
    assert [(e.source, e.target, e.kind) for e in drawn.edges] == sorted(
        edges, key=lambda e: (nodes.index(e[0]), nodes.index(e[1]), e[2])
    )
    for edge in drawn.edges:
        a, b = drawn.boxes[edge.source], drawn.boxes[edge.target]
        assert a.layer < b.layer, edge
        assert a.x + a.width < b.x, edge
        assert not edge.back
        assert edge.d.startswith("M")


@pytest.mark.parametrize("seed", range(4))
def test_cycles_are_drawn_with_back_edges_and_every_edge_is_drawn(seed: int) -> None:
    nodes, edges = _random_graph(seed, 40, 90, acyclic=False)
    edges.append((nodes[0], nodes[0], "self"))
    drawn = layout(nodes, edges)
    assert len(drawn.edges) == len(set(edges))
    _assert_no_overlap(drawn)
    loops = [e for e in drawn.edges if e.loop]
    assert [(e.source, e.target) for e in loops] == [(nodes[0], nodes[0])]
    forward = [e for e in drawn.edges if not e.back and not e.loop]
    backward = [e for e in drawn.edges if e.back and not e.loop]
    assert backward, "a random graph this dense has a cycle"
    for edge in forward:
        assert drawn.boxes[edge.source].layer < drawn.boxes[edge.target].layer
    for edge in backward:
        assert drawn.boxes[edge.source].layer >= drawn.boxes[edge.target].layer


def test_a_two_node_cycle_and_a_triangle_are_laid_out() -> None:
    drawn = layout(["a", "b", "c"], [("a", "b", "k"), ("b", "a", "k"), ("b", "c", "k"), ("c", "a", "k")])
    _assert_no_overlap(drawn)
    assert len(drawn.edges) == 4
    assert sum(e.back for e in drawn.edges) >= 1


def test_the_layout_is_deterministic_and_ignores_edges_to_absent_nodes() -> None:
    nodes, edges = _random_graph(7, 30, 50, acyclic=False)
    first = layout(nodes, [*edges, ("n000", "ghost", "k")])
    assert first == layout(nodes, edges)
    assert all(e.target != "ghost" for e in first.edges)


def test_barycenter_sweeps_uncross_two_edges() -> None:
    # Given in crossing order: a→y, b→x with x above y.
    drawn = layout(["a", "b", "x", "y"], [("a", "y", "k"), ("b", "x", "k")])
    box = drawn.boxes
    assert (box["a"].y < box["b"].y) == (box["y"].y < box["x"].y)


def test_a_large_layer_is_cut_into_columns_that_keep_edges_rightwards() -> None:
    leaves = [f"leaf{i:03d}" for i in range(COLUMN_ROWS * 2 + 5)]
    drawn = layout(["root", *leaves], [(leaf, "root", "to") for leaf in leaves])
    _assert_no_overlap(drawn)
    assert drawn.layers == 2
    assert drawn.columns == 4
    assert max(box.column for name, box in drawn.boxes.items() if name != "root") == 2
    assert all(drawn.boxes[leaf].x < drawn.boxes["root"].x for leaf in leaves)


def test_an_empty_graph_is_an_empty_picture() -> None:
    drawn = layout([], [])
    assert drawn.boxes == {}
    assert drawn.edges == []
    assert drawn.width > 0
    assert drawn.height > 0


def test_the_svg_escapes_labels_links_only_local_routes_and_carries_no_style_or_literal_colour() -> None:
    hostile = '"><script>alert(1)</script>'
    long = "a-label-much-longer-than-any-box-can-hold-in-one-line"
    svg = str(
        render_svg(
            [
                DrawNode(id="n:1", label=hostile, kind="k", summary="<b>x</b>", route="/cockpit/object?uri=a&b=1"),
                DrawNode(id="n:2", label=long, kind="k", route="javascript:alert(1)", external=True),
                DrawNode(id="n:3", label="third", kind="k", route="//elsewhere.example/x", status="Done"),
            ],
            [("n:1", "n:2", "links"), ("n:2", "n:3", "links")],
            label="A <test> graph",
            focus="n:3",
        )
    )
    assert "<script>" not in svg
    assert "<b>" not in svg
    assert escape(hostile) in svg
    assert 'href="/cockpit/object?uri=a&amp;b=1"' in svg
    assert "javascript:" not in svg
    assert "elsewhere.example" not in svg
    assert svg.count("<a ") == 1
    assert f"<title>{long} (k)</title>" in svg
    texts = re.findall(r"<text [^>]*>([^<]*)</text>", svg)
    assert texts[1] == long[: LABEL_CHARS - 1] + "…"
    assert len(texts[1]) == LABEL_CHARS
    assert 'data-status="done"' in svg
    assert "cockpit-graph__node--focus" in svg
    assert "cockpit-graph__node--external" in svg
    assert svg.count('marker-end="url(#cockpit-arrow)"') == 2
    assert "style=" not in svg
    assert not re.search(r"#[0-9a-fA-F]{3,6}\b|rgb\(|hsl\(", svg)


# -- the pages ---------------------------------------------------------------------------------------------


async def test_the_list_shows_every_graph_with_its_size(client: httpx.AsyncClient) -> None:
    listing = (await client.get("/api/v1/graphs")).json()
    text = await page(client, "/cockpit/graphs")
    parsed = read_page(text)
    assert parsed.rows["data-graph-id"] == [g["id"] for g in listing["graphs"]]
    for info in listing["graphs"]:
        graph = (await client.get("/api/v1/graph", params={"id": info["id"]})).json()
        assert escape(info["title"]) in text
        assert f"/cockpit/graphs/{info['id']}" in parsed.links
        row = text.split(f'data-graph-id="{info["id"]}"', 1)[1].split("</tr>", 1)[0]
        assert f"<td>{graph['metadata']['nodes']:,}" in row
        assert f"<td>{graph['metadata']['edges']:,}</td>" in row
    assert 'aria-current="page">Graphs' in text
    assert_no_absolute_path(text)


@pytest.mark.bound(120)
@pytest.mark.parametrize("graph_id", ["registry", "layer", "rules", "adrs", "use-cases", "why", "product", "composed"])
async def test_a_graph_page_draws_and_lists_what_graph_get_answers(client: httpx.AsyncClient, graph_id: str) -> None:
    graph = (await client.get("/api/v1/graph", params={"id": graph_id})).json()
    text = await page(client, f"/cockpit/graphs/{graph_id}")
    assert text == await page(client, f"/cockpit/graphs?id={graph_id}")
    parsed = read_page(text)
    ids = [node["id"] for node in graph["nodes"]]
    assert parsed.rows.get("data-node-id", []) == ids
    drawn = ids[: _graphs.MAX_DRAWN]
    assert parsed.svg_nodes == drawn
    kept = set(drawn)
    expected_edges = {(e["source"], e["target"], e["kind"]) for e in graph["edges"]}
    assert set(parsed.svg_edges) == {e for e in expected_edges if e[0] in kept and e[1] in kept}
    assert len(parsed.svg_edges) == len(set(parsed.svg_edges))
    routes = {node["id"]: node["route"] for node in graph["nodes"] if "route" in node and node["id"] in kept}
    assert dict(parsed.svg_links) == routes
    assert ("graph-capped" in parsed.ids) == (len(ids) > _graphs.MAX_DRAWN)
    assert not parsed.styled
    assert_no_absolute_path(text)
    # Every link of the page's content answers, the nodes' routes included (the composed graph repeats the
    # routes of the other graphs for every object: five of each node kind stand for the rest there). A focus
    # link is one per node: the first few stand for the rest (focusing is tested below).
    focus = [link for link in parsed.main_links if "focus=" in link]
    assert len(focus) == len(ids)
    others = [link for link in parsed.main_links if "focus=" not in link and link not in routes.values()]
    if graph_id == "composed":
        by_kind: dict[str, list[str]] = {}
        for node in graph["nodes"]:
            if node["id"] in routes:
                by_kind.setdefault(node["kind"], []).append(routes[node["id"]])
        checked = [route for kind_routes in by_kind.values() for route in kind_routes[:5]]
    else:
        checked = list(routes.values())
    await assert_links_answer(client, [*others, *checked, *focus[:5]])


async def test_the_picture_is_capped_and_says_so(client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_graphs, "MAX_DRAWN", 10)
    graph = (await client.get("/api/v1/graph", params={"id": "registry"})).json()
    parsed = read_page(text := await page(client, "/cockpit/graphs/registry"))
    assert len(parsed.svg_nodes) == 10
    assert len(parsed.rows["data-node-id"]) == len(graph["nodes"]) > 10
    assert "graph-capped" in parsed.ids
    assert f"first 10 of {len(graph['nodes'])} nodes" in text
    drawn = set(parsed.svg_nodes)
    assert all(s in drawn and t in drawn for s, t, _ in parsed.svg_edges)


async def test_kinds_and_a_focus_narrow_the_graph(client: httpx.AsyncClient) -> None:
    graph = (await client.get("/api/v1/graph", params={"id": "registry"})).json()
    kinds = {node["id"]: node["kind"] for node in graph["nodes"]}
    parsed = read_page(await page(client, "/cockpit/graphs/registry?kind=module&kind=projection"))
    assert parsed.rows["data-node-id"] == [n["id"] for n in graph["nodes"] if n["kind"] in ("module", "projection")]
    assert not parsed.svg_edges  # modules compose capabilities, which are filtered out
    focus = "capability:graph.get"
    near = {focus} | {e["target"] for e in graph["edges"] if e["source"] == focus}
    near |= {e["source"] for e in graph["edges"] if e["target"] == focus}
    text = await page(client, f"/cockpit/graphs/registry?focus={focus}")
    parsed = read_page(text)
    assert set(parsed.rows["data-node-id"]) == near
    assert 'cockpit-graph__node cockpit-graph__node--focus" data-node-id="capability:graph.get"' in text
    two = read_page(await page(client, f"/cockpit/graphs/registry?focus={focus}&depth=2")).rows["data-node-id"]
    assert set(two) > near
    only = read_page(await page(client, f"/cockpit/graphs/registry?focus={focus}&kind=projection"))
    assert set(only.rows["data-node-id"]) == {focus} | {n for n in near if kinds[n] == "projection"}


@pytest.mark.parametrize(
    ("query", "status", "words"),
    [
        ("/cockpit/graphs/nope", 404, "no graph &#39;nope&#39;"),
        ("/cockpit/graphs?id=nope", 404, "no graph &#39;nope&#39;"),
        ("/cockpit/graphs/registry?kind=planet", 400, "no node kind &#39;planet&#39;"),
        ("/cockpit/graphs/registry?focus=capability:none", 404, "no node &#39;capability:none&#39;"),
        ("/cockpit/graphs/registry?depth=2", 400, "give focus too"),
        ("/cockpit/graphs/registry?focus=module:graph&depth=9", 400, "from 1 to 5"),
        ("/cockpit/graphs/registry?focus=module:graph&depth=-1", 400, "whole number"),
        ("/cockpit/graphs/registry?colour=red", 400, "unknown query parameter &#39;colour&#39;"),
        ("/cockpit/graphs?kind=module", 400, "give id too"),
        ("/cockpit/graphs/registry?focus=a&focus=b", 400, "given 2 times"),
    ],
)
async def test_bad_queries_answer_an_error_page(client: httpx.AsyncClient, query: str, status: int, words: str) -> None:
    text = await page(client, query, status)
    assert words in text
    assert "<h1>" in text


async def test_a_hostile_node_label_is_escaped(client: httpx.AsyncClient) -> None:
    text = await page(client, "/cockpit/graphs/registry?focus=%22%3E%3Cscript%3Ealert(1)%3C/script%3E", 404)
    assert "<script>alert(1)" not in text
    assert escape('"><script>alert(1)</script>') in text


async def test_graph_pages_are_live(client: httpx.AsyncClient) -> None:
    full = await client.get("/cockpit/graphs/rules", headers=HTML)
    etag = full.headers["ETag"]
    assert "data-svc-live" in full.text
    fragment = await client.get("/cockpit/graphs/rules", headers={**HTML, FRAGMENT_HEADER: "main"})
    assert fragment.status_code == 200
    assert "<html" not in fragment.text
    assert "<svg" in fragment.text
    same = await client.get("/cockpit/graphs/rules", headers={**HTML, FRAGMENT_HEADER: "main", "If-None-Match": etag})
    assert same.status_code == 304
    assert same.content == b""
    listing = await client.get("/cockpit/graphs", headers={**HTML, FRAGMENT_HEADER: "main", "If-None-Match": etag})
    assert listing.status_code == 304
