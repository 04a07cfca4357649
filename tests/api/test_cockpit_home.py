"""The home page for a person, the cockpit's frame, its live versions and its script file.

Pairs with `src/svc/api/cockpit/_home.py`, `_render.py`, `_assets.py` and `src/svc/api/_pages.py`.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from html.parser import HTMLParser
from pathlib import Path

import httpx
import markupsafe
import pytest
import trio

from svc.api.cockpit import FRAGMENT_HEADER, NAVIGATION, PAGE_HEADERS, _home
from svc.host import open_service
from svc.layer import Repository
from svc.nursery import Engine
from svc.runtime import Executor
from tests.api.conftest import serving
from tests.conftest import make_checkout

HTML = {"Accept": "text/html"}
PENDING = "this panel fills in by itself"


def escape(text: str) -> str:
    """Text as the pages' templates escape it."""
    return str(markupsafe.escape(text))


class Links(HTMLParser):
    """Every `href` and `src` of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("href", "src") and value:
                self.found.append(value)


async def settled(http: httpx.AsyncClient, path: str = "/") -> httpx.Response:
    """The page once every panel answered: a panel still being read fills in on a later request.

    Each request waits up to the panels' budget for the calls under way, so this asks a handful of times.
    """
    with trio.fail_after(30):
        while True:
            r = await http.get(path, headers=HTML)
            if PENDING not in r.text:
                return r


def links(text: str) -> list[str]:
    parser = Links()
    parser.feed(text)
    return parser.found


@pytest.fixture
async def service(checkout: Path) -> AsyncIterator[Executor]:
    async with open_service(Repository.discover(checkout), surface="http", watch=False) as executor:
        yield executor


@pytest.fixture
async def http(service: Executor, nursery: trio.Nursery) -> AsyncIterator[httpx.AsyncClient]:
    async with serving(service, nursery) as url, httpx.AsyncClient(base_url=url) as client:
        yield client


async def test_the_home_page_shows_what_the_capabilities_answer(http: httpx.AsyncClient) -> None:
    page = (await settled(http)).text
    status = (await http.get("/api/v1/plan/status")).json()
    next_issue = (await http.get("/api/v1/plan/next")).json()["issue"]
    objects = (await http.get("/api/v1/objects")).json()
    health = (await http.get("/api/v1/health")).json()
    assert f'href="/cockpit/plan/milestone?id={status["project"]["active_milestone"]}"' in page
    for word, n in status["counts"]["by_status"].items():
        assert f'data-status="{word.lower()}">{word}</span></a> {n:,}' in page
    assert f'href="/cockpit/plan/issue?id={next_issue["id"]}"' in page
    assert escape(next_issue["title"]) in page
    assert f"{objects['count']} objects" in page
    kinds = {o["kind"] for o in objects["objects"]}
    for kind in kinds:
        assert f'href="/cockpit/objects?kind={kind}"' in page
    for check in health["checks"]:
        assert escape(check["title"]) in page
    assert "Cooperation is not running" in page


async def test_every_link_and_asset_of_the_home_page_answers(http: httpx.AsyncClient) -> None:
    page = (await http.get("/", headers=HTML)).text
    found = set(links(page))
    # The checkout has no docs/: the navigation leaves Docs out rather than link a 404.
    assert {item.path for item in NAVIGATION if item.id != "docs"} <= found
    assert "/docs/" not in found
    for target in sorted(found):
        if target.startswith("/cockpit/") and target.split("?")[0] not in ("/cockpit/assets/cockpit.js",):
            continue  # The cockpit's own pages are each tested by their family's tests.
        r = await http.get(target, headers=HTML)
        assert r.status_code < 400, target


async def test_the_frame_carries_the_navigation_the_theme_switch_and_no_inline_code(http: httpx.AsyncClient) -> None:
    r = await http.get("/", headers=HTML)
    for header, value in PAGE_HEADERS.items():
        assert r.headers[header] == value
    page = r.text
    assert 'aria-current="page">Home</a>' in page
    assert "data-theme-toggle" in page
    assert 'href="#main"' in page
    assert 'id="main"' in page
    assert re.findall(r"<script[^>]*>", page) == [
        '<script src="/cockpit/assets/design/theme.js">',
        '<script src="/cockpit/assets/cockpit.js" defer>',
    ]
    assert "style=" not in page
    assert not re.search(r"\son[a-z]+=", page)


async def test_a_live_page_answers_304_until_the_generation_moves(service: Executor, http: httpx.AsyncClient) -> None:
    full = await settled(http)
    etag = full.headers["etag"]
    assert f'data-svc-version="{etag.strip(chr(34))}"' in full.text
    ask = {**HTML, FRAGMENT_HEADER: "main", "If-None-Match": etag}
    same = await http.get("/", headers=ask)
    assert same.status_code == 304
    assert same.content == b""
    service.runtime.generation.bump()
    moved = await http.get("/", headers=ask)
    assert moved.status_code == 200
    assert moved.headers["etag"] != etag
    assert moved.text.lstrip().startswith("<h1>")
    assert "<html" not in moved.text
    # Without the fragment header the whole page comes back, whatever the ETag.
    assert (await http.get("/", headers={**HTML, "If-None-Match": moved.headers["etag"]})).status_code == 200


async def test_an_execution_moves_the_version_of_a_live_page(service: Executor, http: httpx.AsyncClient) -> None:
    etag = (await settled(http)).headers["etag"]
    started = await http.post(
        "/api/v1/executions/start", json={"capability": "executions.demonstrate", "input": {"steps": 1}}
    )
    assert started.status_code == 200, started.text
    engine = service.components.find(Engine)
    assert engine is not None
    with trio.fail_after(10):
        await engine.store.get(started.json()["id"]).done.wait()
    page = await http.get("/", headers={**HTML, FRAGMENT_HEADER: "main", "If-None-Match": etag})
    assert page.status_code == 200
    assert started.json()["links"]["cockpit"] in page.text


async def test_a_checkout_without_a_layer_says_so_in_every_panel(tmp_path: Path, nursery: trio.Nursery) -> None:
    bare = make_checkout(tmp_path / "bare", layer=False)
    async with (
        open_service(Repository.discover(bare), surface="http", watch=False) as executor,
        serving(executor, nursery) as url,
        httpx.AsyncClient(base_url=url) as client,
    ):
        page = (await settled(client)).text
        refusal = (await client.get("/api/v1/plan/status")).json()["error"]["message"]
        assert "has no <code>.ai/</code> folder" in page
        assert escape(refusal) in page
        home = (await client.get("/")).json()
        docs = {s["id"]: s for s in home["surfaces"]}["docs"]
        assert docs["ready"] is False
        assert docs["reason"] == "this checkout has no docs/ folder"
        assert "this checkout has no docs/ folder" in page
        assert str(bare) not in page


async def test_a_browser_gets_errors_as_pages_and_other_clients_the_error_body(http: httpx.AsyncClient) -> None:
    page = await http.get("/cockpit/no-such-page", headers=HTML)
    assert page.status_code == 404
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert "no route /cockpit/no-such-page" in page.text
    body = await http.get("/cockpit/no-such-page")
    assert body.status_code == 404
    assert body.json()["error"]["code"] == "not_found"


async def test_the_script_is_served_from_the_package_by_exact_name_only(http: httpx.AsyncClient) -> None:
    r = await http.get("/cockpit/assets/cockpit.js")
    assert r.status_code == 200
    assert r.headers["content-type"] == "text/javascript; charset=utf-8"
    assert "data-svc-live" in r.text
    assert (
        await http.get("/cockpit/assets/cockpit.js", headers={"If-None-Match": r.headers["etag"]})
    ).status_code == 304
    for name in ("nope.js", "..%2Fcockpit%2F_render.py", "__init__.py", "cockpit.js.map"):
        assert (await http.get(f"/cockpit/assets/{name}")).status_code == 404, name


async def test_a_panel_slower_than_its_budget_fills_in_on_the_next_refresh(
    http: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_home, "PANEL_SECONDS", 0)
    first = await http.get("/", headers=HTML)
    assert first.status_code == 200
    assert PENDING in first.text
    assert first.headers["etag"].endswith('.pending"')
    # A page holding a pending panel is never current: its refresh renders again.
    again = await http.get("/", headers={**HTML, FRAGMENT_HEADER: "main", "If-None-Match": first.headers["etag"]})
    assert again.status_code == 200
    monkeypatch.setattr(_home, "PANEL_SECONDS", 0.5)
    page = await settled(http)
    assert not page.headers["etag"].endswith('.pending"')
    assert "Active milestone" in page.text
