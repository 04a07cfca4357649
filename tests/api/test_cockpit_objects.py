"""The objects pages: the index by kind, one kind's or tag's objects, and one object.

Pairs with `src/svc/api/cockpit/_objects.py` and the templates `objects.html`, `object.html`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
import trio

from svc.api.cockpit import FRAGMENT_HEADER, _objects
from svc.host import open_service
from svc.layer import Repository
from tests.api._cockpit_pages import (
    HTML,
    assert_links_answer,
    assert_no_absolute_path,
    escape,
    page,
    read_page,
)
from tests.api.conftest import serving

RULE = "svc://rule/project.http-never-writes-the-repository@1"
HOSTILE_TITLE = 'Hostile "><img src=x onerror=alert(1)>'
HOSTILE_DOCUMENT = f"""# {HOSTILE_TITLE}

Before.

<script>alert('owned')</script>

Inline <img src=x onerror="alert(2)"> and [a link](javascript:alert(3)).

## Section
"""


def _uri_query(uri: str) -> str:
    return "/cockpit/object?uri=" + quote(uri, safe="")


async def test_the_index_page_shows_the_kinds_state_and_diagnostics(client: httpx.AsyncClient) -> None:
    index = (await client.get("/api/v1/objects")).json()
    text = await page(client, "/cockpit/objects")
    parsed = read_page(text)
    counts = Counter(o["kind"] for o in index["objects"])
    assert parsed.rows["data-kind"] == sorted(counts)
    for kind, n in counts.items():
        row = text.split(f'<tr data-kind="{kind}">', 1)[1].split("</tr>", 1)[0]
        assert f"<td>{n:,}</td>" in row
    assert f"{index['count']:,} objects in the index" in text or f"{index['count']} objects in the index" in text
    assert f'data-status="{index["state"]}"' in text
    assert f"{len(index['diagnostics'])} diagnostic" in text
    assert 'aria-current="page">Objects' in text
    assert_no_absolute_path(text)
    await assert_links_answer(client, parsed.main_links)


async def test_a_kind_lists_its_objects_with_their_tags(client: httpx.AsyncClient) -> None:
    listing = (await client.get("/api/v1/objects", params={"kind": "rule"})).json()
    text = await page(client, "/cockpit/objects?kind=rule")
    parsed = read_page(text)
    assert parsed.rows["data-uri"] == [o["uri"] for o in listing["objects"]]
    for summary in listing["objects"]:
        view = (await client.get("/api/v1/object", params={"uri": summary["uri"]})).json()
        row = text.split(f'data-uri="{escape(summary["uri"])}"', 1)[1].split("</tr>", 1)[0]
        assert escape(summary["path"]) in row
        tags = view["metadata"].get("tags", [])
        assert tags, "svc's rules carry tags"
        for tag in tags:
            assert f'href="/cockpit/objects?tag={quote(tag)}"' in row
    assert_no_absolute_path(text)
    await assert_links_answer(client, parsed.main_links)


async def test_a_tag_lists_the_objects_carrying_it(client: httpx.AsyncClient) -> None:
    view = (await client.get("/api/v1/object", params={"uri": RULE})).json()
    tag = view["metadata"]["tags"][0]
    listing = (await client.get("/api/v1/objects", params={"tag": tag})).json()
    parsed = read_page(await page(client, f"/cockpit/objects?tag={tag}"))
    assert parsed.rows["data-uri"] == [o["uri"] for o in listing["objects"]]
    assert RULE in parsed.rows["data-uri"]
    both = read_page(await page(client, f"/cockpit/objects?kind=rule&tag={tag}"))
    expected = (await client.get("/api/v1/objects", params={"tag": tag, "kind": "rule"})).json()
    assert both.rows["data-uri"] == [o["uri"] for o in expected["objects"]]


async def test_a_long_list_is_paged(client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_objects, "PAGE_SIZE", 10)
    issues = [o["uri"] for o in (await client.get("/api/v1/objects", params={"kind": "issue"})).json()["objects"]]
    assert len(issues) > 20
    pages = -(-len(issues) // 10)
    seen: list[str] = []
    for number in range(1, pages + 1):
        parsed = read_page(text := await page(client, f"/cockpit/objects?kind=issue&page={number}"))
        seen += parsed.rows["data-uri"]
        assert f"Page {number} of {pages}" in text
        assert ('rel="next"' in text) == (number < pages)
    assert seen == issues
    assert "from 1 to" in await page(client, f"/cockpit/objects?kind=issue&page={pages + 1}", 400)
    assert "give kind or tag" in await page(client, "/cockpit/objects?page=1", 400)


async def test_an_object_page_shows_what_objects_get_answers(client: httpx.AsyncClient) -> None:
    view = (await client.get("/api/v1/object", params={"uri": RULE})).json()
    text = await page(client, _uri_query(RULE))
    parsed = read_page(text)
    assert f'<h1 id="object-title">{escape(view["title"])}</h1>' in text
    for key in view["metadata"]:
        assert f"<code>{escape(key)}</code>" in text
    assert escape(view["provenance"]["path"]) in text
    assert escape(view["provenance"]["source_class"]) in text
    assert f"{view['provenance']['bytes']:,} bytes" in text
    # The body is rendered (its headings under the page's own), the front matter left to the metadata table.
    body = text.split('id="object-body">', 1)[1].split("</div>", 1)[0]
    assert "<h3>Rationale</h3>" in body
    assert "<h1>" not in body
    assert "statement:" not in body
    assert escape(view["content"].splitlines()[1]) in text  # the file as read, in <details>
    assert_no_absolute_path(text)
    await assert_links_answer(client, parsed.main_links)


async def test_an_object_page_lists_its_relations_from_the_composed_graph(client: httpx.AsyncClient) -> None:
    graph = (await client.get("/api/v1/graph", params={"id": "composed"})).json()
    uri = "svc://issue/I0002"
    edges = [e for e in graph["edges"] if uri in (e["source"], e["target"])]
    assert any(e["kind"] == "belongs_to" for e in edges)
    text = await page(client, _uri_query(uri))
    table = text.split('id="object-relations"', 1)[1].split("</table>", 1)[0]
    assert table.count("<tr>") == len(edges) + 1
    nodes = {n["id"]: n for n in graph["nodes"]}
    for edge in edges:
        other = edge["target"] if edge["source"] == uri else edge["source"]
        assert f'<code class="svc-muted">{escape(other)}</code>' in table
        if "route" in nodes[other]:
            assert f'href="{escape(nodes[other]["route"])}"' in table
    parsed = read_page(text)
    assert f"/cockpit/graphs/composed?focus={quote(uri, safe='')}" in parsed.main_links
    await assert_links_answer(client, parsed.main_links)


async def test_a_query_resource_shows_its_answer(client: httpx.AsyncClient) -> None:
    view = (await client.get("/api/v1/object", params={"uri": "svc://graphs"})).json()
    text = await page(client, _uri_query("svc://graphs"))
    assert view["source"] == "builtin"
    assert f'href="/cockpit/capabilities/{view["id"]}"' in text
    assert escape(view["answer"]["graphs"][0]["description"]) in text
    await assert_links_answer(client, read_page(text).main_links)


@pytest.mark.parametrize(
    ("query", "status", "words"),
    [
        ("/cockpit/objects?kind=planet", 400, "no object of kind &#39;planet&#39;"),
        ("/cockpit/objects?colour=red", 400, "unknown query parameter &#39;colour&#39;"),
        ("/cockpit/objects?kind=rule&kind=issue", 400, "given 2 times"),
        ("/cockpit/object", 400, "give the object&#39;s uri"),
        ("/cockpit/object?uri=", 400, "give the object&#39;s uri"),
        ("/cockpit/object?uri=svc://rule/none", 404, "unknown resource"),
        ("/cockpit/object?uri=svc://x/y&kind=rule", 400, "unknown query parameter &#39;kind&#39;"),
    ],
)
async def test_bad_queries_answer_an_error_page(client: httpx.AsyncClient, query: str, status: int, words: str) -> None:
    text = await page(client, query, status)
    assert words in text


async def test_object_pages_are_live(client: httpx.AsyncClient) -> None:
    full = await client.get(_uri_query(RULE), headers=HTML)
    assert "data-svc-live" in full.text
    etag = full.headers["ETag"]
    fragment = await client.get(_uri_query(RULE), headers={**HTML, FRAGMENT_HEADER: "main"})
    assert "<html" not in fragment.text
    assert 'id="object-title"' in fragment.text
    for path in (_uri_query(RULE), "/cockpit/objects", "/cockpit/objects?kind=rule"):
        same = await client.get(path, headers={**HTML, FRAGMENT_HEADER: "main", "If-None-Match": etag})
        assert same.status_code == 304


@pytest.fixture
async def hostile_client(checkout: Path, nursery: trio.Nursery) -> AsyncIterator[httpx.AsyncClient]:
    """A server over a checkout whose `docs/hostile.md` carries HTML meant to run in a reader's browser."""
    (checkout / "docs").mkdir()
    (checkout / "docs" / "hostile.md").write_text(HOSTILE_DOCUMENT, encoding="utf-8")
    await trio.run_process(["git", "add", "docs/hostile.md"], cwd=checkout, capture_stdout=True, capture_stderr=True)
    async with (
        open_service(Repository.discover(checkout), surface="http", watch=False) as executor,
        serving(executor, nursery) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as http,
    ):
        yield http


async def test_a_document_with_hostile_html_is_shown_never_run(hostile_client: httpx.AsyncClient) -> None:
    uri = "svc://document/docs/hostile.md"
    view = (await hostile_client.get("/api/v1/object", params={"uri": uri})).json()
    assert view["title"] == HOSTILE_TITLE
    for path in (_uri_query(uri), "/cockpit/objects?kind=document"):
        text = await page(hostile_client, path)
        assert "<script>alert" not in text
        assert "<img" not in text.split("<main", 1)[1]
        assert escape(HOSTILE_TITLE) in text
        assert not read_page(text).styled
    text = await page(hostile_client, _uri_query(uri))
    body = text.split('id="object-body">', 1)[1].split("</div>", 1)[0]
    assert "&lt;script&gt;alert(&#39;owned&#39;)&lt;/script&gt;" in body or "&lt;script&gt;alert('owned')" in body
    assert 'href="javascript:' not in text
    assert "<h4>Section</h4>" in body
