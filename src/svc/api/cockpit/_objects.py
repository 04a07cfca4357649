"""The objects pages: `GET /cockpit/objects` (the index by kind, or one kind's or tag's objects) and one object.

`/cockpit/objects` shows what `objects.list` answers: the kinds with their counts, the index's state and its
diagnostics; `?kind=` and `?tag=` list the matching objects (`PAGE_SIZE` a page, `?page=`), each with the tags
of its metadata (asked of `objects.get` for the rows shown). `/cockpit/object?uri=` shows what `objects.get`
answers: the names, metadata, provenance and content of an object (Markdown rendered with raw HTML off, any
other text as it is), or a query's resource with its answer; and the object's relations, the edges of the
composed graph (`graph.get`) that start or end at it.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from typing import Any

import markupsafe
import trio
from quart import Response
from quart_trio import QuartTrio

from svc._errors import InvalidInput
from svc.api.cockpit._query import page_args, whole_number
from svc.api.cockpit._render import Cockpit

__all__ = ["PAGE_SIZE", "document_html", "metadata_rows", "routes", "tags_of"]

#: Objects listed on one page of a kind or tag.
PAGE_SIZE = 200
#: The front matter a Markdown file opens with (shown as metadata, so the rendered body leaves it out).
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n.*?^---[ \t]*\r?$\n?", re.DOTALL | re.MULTILINE)
_MARKDOWN = frozenset({"text/markdown"})
#: A heading tag of rendered Markdown (the renderer writes them without attributes).
_HEADING = re.compile(r"<(/?)h([1-6])>")


def routes(app: QuartTrio, cockpit: Cockpit) -> None:
    """Register `/cockpit/objects` and `/cockpit/object`."""

    @app.get("/cockpit/objects")
    async def objects() -> Response:
        args = page_args(("kind", "tag", "page"))
        unchanged = cockpit.unchanged()
        if unchanged is not None:
            return unchanged
        kind = _one(args.get("kind"))
        tag = _one(args.get("tag"))
        if "page" in args and kind is None and tag is None:
            raise InvalidInput("page counts the objects of a kind or tag: give kind or tag too")
        index = await cockpit.ask("objects.list")
        kinds = sorted(Counter(o["kind"] for o in index["objects"]).items())
        rows: list[dict[str, Any]] = []
        listing: dict[str, Any] | None = None
        page = pages = 1
        if kind is not None or tag is not None:
            listing = await cockpit.ask("objects.list", {"kind": kind, "tag": tag})
            found: list[dict[str, Any]] = listing["objects"]
            pages = max(1, math.ceil(len(found) / PAGE_SIZE))
            page = whole_number("page", args.get("page"), default=1, lowest=1, highest=pages)
            rows = [{"description": None, "title": None, **o} for o in found[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]]
            await _add_tags(cockpit, rows)
        return cockpit.render(
            "objects.html",
            section="objects",
            title=f"Objects: {kind}" if kind else f"Objects tagged {tag}" if tag else "Objects",
            live=True,
            index=index,
            kinds=kinds,
            kind=kind,
            tag=tag,
            listing=listing,
            rows=rows,
            page=page,
            pages=pages,
            page_size=PAGE_SIZE,
        )

    @app.get("/cockpit/object")
    async def one_object() -> Response:
        args = page_args(("uri",))
        uri = _one(args.get("uri"))
        if uri is None:
            raise InvalidInput("give the object's uri: /cockpit/object?uri=svc://<kind>/<identity>")
        unchanged = cockpit.unchanged()
        if unchanged is not None:
            return unchanged
        view = await cockpit.ask("objects.get", {"uri": uri})
        relations: list[dict[str, Any]] = []
        relations_note: str | None = None
        body: markupsafe.Markup | None = None
        if view["source"] == "declarative":
            relations, relations_note = await _relations(cockpit, view["uri"])
            if view["media_type"] in _MARKDOWN:
                body = markupsafe.Markup(document_html(cockpit, view["content"]))
        return cockpit.render(
            "object.html",
            section="objects",
            title=view.get("title") or view["identity"],
            live=True,
            view={"title": None, "description": None, **view},
            metadata=metadata_rows(view.get("metadata", {})),
            provenance=view["provenance"],
            body=body,
            relations=relations,
            relations_note=relations_note,
        )


def document_html(cockpit: Cockpit, content: str) -> str:
    """A Markdown object's body as HTML, raw HTML off.

    Its front matter is left out (the page shows it as metadata) and every heading goes two levels down, under
    the page's own `h1` and its `h2` "Content".
    """
    rendered = cockpit.markdown_html(_FRONT_MATTER.sub("", content, count=1))
    return _HEADING.sub(lambda m: f"<{m.group(1)}h{min(int(m.group(2)) + 2, 6)}>", rendered)


def _one(value: str | list[str] | None) -> str | None:
    return value if isinstance(value, str) else None


def tags_of(metadata: dict[str, Any]) -> list[str]:
    """The tags of an object: the strings of its metadata's `tags` (a lone string counts as one)."""
    tags = metadata.get("tags")
    if isinstance(tags, str):
        return [tags]
    if isinstance(tags, list):
        return [t for t in tags if isinstance(t, str)]
    return []


async def _add_tags(cockpit: Cockpit, rows: list[dict[str, Any]]) -> None:
    """Give each row its `tags`, from `objects.get` of its URI (a refused one has none)."""

    async def one(row: dict[str, Any]) -> None:
        view, _ = await cockpit.ask_or_error("objects.get", {"uri": row["uri"]})
        row["tags"] = tags_of(view.get("metadata", {})) if view else []

    async with trio.open_nursery() as nursery:
        for row in rows:
            nursery.start_soon(one, row)


def metadata_rows(metadata: dict[str, Any]) -> list[tuple[str, str]]:
    """The metadata as (key, text) rows in file order.

    Scalars read as they are, lists of scalars comma-joined, anything else as compact JSON.
    """
    rows: list[tuple[str, str]] = []
    for key, value in metadata.items():
        rows.append((str(key), _text(value)))
    return rows


def _text(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    if isinstance(value, list) and all(isinstance(v, (str, int, float, bool)) for v in value):
        return ", ".join(_text(v) for v in value)
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


async def _relations(cockpit: Cockpit, uri: str) -> tuple[list[dict[str, Any]], str | None]:
    """The edges of the composed graph at the object: each with its direction, kind and the node at the other end."""
    graph, refusal = await cockpit.ask_or_error("graph.get", {"id": "composed"})
    if graph is None:
        return [], refusal
    nodes = {node["id"]: node for node in graph["nodes"]}
    rows: list[dict[str, Any]] = []
    for edge in graph["edges"]:
        if edge["source"] == uri:
            direction, other = "out", edge["target"]
        elif edge["target"] == uri:
            direction, other = "in", edge["source"]
        else:
            continue
        node = nodes.get(other, {})
        rows.append(
            {
                "direction": direction,
                "kind": edge["kind"],
                "id": other,
                "label": node.get("label", other),
                "node_kind": node.get("kind", ""),
                "route": node.get("route"),
                "external": bool(node.get("external", False)),
            }
        )
    rows.sort(key=lambda r: (r["direction"] != "out", r["kind"], r["id"]))
    return rows, None
