"""What the tests of the objects, graphs and commands pages share: reading a page's links, tables and SVG."""

from __future__ import annotations

from html.parser import HTMLParser
from urllib.parse import urlsplit

import httpx
import markupsafe
import trio

from tests.conftest import ROOT

HTML = {"Accept": "text/html"}


def escape(text: str) -> str:
    """Text as the pages' templates escape it."""
    return str(markupsafe.escape(text))


class Page(HTMLParser):
    """What a test reads of a page.

    Its links (`main_links`: those of its `<main>`, not the frame's navigation), the `data-*` ids of its table
    rows and SVG elements, the ids of its elements, and any element with a `style` or `on*` attribute.
    """

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.main_links: list[str] = []
        self._in_main = False
        self.rows: dict[str, list[str]] = {}
        self.svg_nodes: list[str] = []
        self.svg_links: list[tuple[str, str]] = []
        self.svg_edges: list[tuple[str, str, str]] = []
        self.ids: set[str] = set()
        self.styled: list[str] = []
        self._open_svg_link: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {name: value or "" for name, value in attrs}
        if "style" in a or any(name.startswith("on") for name in a):
            self.styled.append(tag)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "main":
            self._in_main = True
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
            if self._in_main:
                self.main_links.append(a["href"])
            self._open_svg_link = a["href"]
        if tag == "tr":
            for key in ("data-node-id", "data-uri", "data-command-id", "data-kind", "data-argument", "data-graph-id"):
                if key in a:
                    self.rows.setdefault(key, []).append(a[key])
        if tag == "g" and "data-node-id" in a:
            self.svg_nodes.append(a["data-node-id"])
            if self._open_svg_link is not None:
                self.svg_links.append((a["data-node-id"], self._open_svg_link))
        if tag == "path" and "data-source" in a:
            self.svg_edges.append((a["data-source"], a["data-target"], a["data-kind"]))

    def handle_endtag(self, tag: str) -> None:
        if tag == "a":
            self._open_svg_link = None
        if tag == "main":
            self._in_main = False


def read_page(text: str) -> Page:
    """`text` parsed."""
    page = Page()
    page.feed(text)
    return page


def assert_no_absolute_path(text: str) -> None:
    """No answer names the checkout's absolute path."""
    assert str(ROOT) not in text


async def page(client: httpx.AsyncClient, path: str, status: int = 200) -> str:
    """The page at `path`, asked as a browser; its status must be `status`."""
    response = await client.get(path, headers=HTML)
    assert response.status_code == status, (path, response.status_code, response.text[-400:])
    assert response.headers["content-type"].startswith("text/html")
    return response.text


async def assert_links_answer(client: httpx.AsyncClient, links: list[str], *, skip: tuple[str, ...] = ()) -> int:
    """Every link of this server among `links` answers below 400 (asked as a browser); returns how many were asked."""
    own = sorted(
        {
            link
            for link in links
            if link.startswith("/") and not link.startswith("//") and not link.startswith(skip) and "#" not in link
        }
    )
    failed: list[tuple[str, int]] = []
    limit = trio.CapacityLimiter(2)

    async def ask(link: str) -> None:
        async with limit:
            response = await client.get(link, headers=HTML)
        if response.status_code >= 400:
            failed.append((link, response.status_code))

    async with trio.open_nursery() as nursery:
        for link in own:
            nursery.start_soon(ask, link)
    assert not failed, sorted(failed)
    return len(own)


def path_of(link: str) -> str:
    """The path of a link (its query left out)."""
    return urlsplit(link).path
