"""The commands pages: every command grouped by origin, the filters of `commands.list`, and one command.

Pairs with `src/svc/api/cockpit/_commands.py` and the templates `commands.html`, `command.html`.
"""

from __future__ import annotations

import httpx
import pytest

from svc.api.cockpit import FRAGMENT_HEADER
from tests.api._cockpit_pages import (
    HTML,
    assert_links_answer,
    assert_no_absolute_path,
    escape,
    page,
    read_page,
)


async def test_the_list_shows_every_command_grouped_by_origin(client: httpx.AsyncClient) -> None:
    index = (await client.get("/api/v1/commands")).json()
    text = await page(client, "/cockpit/commands")
    parsed = read_page(text)
    assert parsed.rows["data-command-id"] == [c["id"] for c in index["commands"]]
    for origin in ("executable", "tool", "workflow"):
        assert f'<section aria-labelledby="commands-{origin}"' in text
        section = text.split(f'data-origin="{origin}"', 1)[1].split("</section>", 1)[0]
        ids = [c["id"] for c in index["commands"] if c["origin"] == origin]
        assert read_page(section).rows.get("data-command-id", []) == ids
    for command in index["commands"]:
        row = text.split(f'data-command-id="{command["id"]}"', 1)[1].split("</tr>", 1)[0]
        assert f"<code>{escape(command['invocation'])}</code>" in row
        assert f'data-status="{command["effect"]}"' in row
        for surface in ("mcp", "http", "withheld"):
            if surface in command["projections"]:
                assert escape(command["projections"][surface]) in row
    assert index["fingerprint"] in text
    graph = (await client.get("/api/v1/commands/graph")).json()
    assert ("commands-diagnostics" in parsed.ids) == bool(graph["graph"]["diagnostics"])
    assert 'aria-current="page">Commands' in text
    assert_no_absolute_path(text)
    await assert_links_answer(client, parsed.main_links)


@pytest.mark.parametrize(
    "query",
    ["effect=read_only", "origin=executable", "search=PLAN", "effect=local_mutation&search=mesh", "origin=workflow"],
)
async def test_the_filters_are_those_of_commands_list(client: httpx.AsyncClient, query: str) -> None:
    answer = (await client.get(f"/api/v1/commands?{query}")).json()
    text = await page(client, f"/cockpit/commands?{query}")
    assert read_page(text).rows.get("data-command-id", []) == [c["id"] for c in answer["commands"]]
    assert f"match, of {answer['total']}" in text
    if "origin=" in query:
        origin = query.split("origin=", 1)[1]
        assert text.count("<section aria-labelledby=") == 1
        assert f'data-origin="{origin}"' in text


async def test_a_command_page_shows_what_commands_get_answers(client: httpx.AsyncClient) -> None:
    node = (await client.get("/api/v1/command", params={"id": "executable.plan.status"})).json()
    text = await page(client, "/cockpit/commands/executable.plan.status")
    assert text == await page(client, "/cockpit/commands?id=executable.plan.status")
    parsed = read_page(text)
    assert parsed.rows["data-argument"] == [a["name"] for a in node["arguments"]]
    assert f'<h1 class="svc-mono">{escape(node["invocation"])}</h1>' in text
    assert f"<code>{escape(' '.join(node['execution']['argv']))}</code>" in text
    assert f'data-status="{node["effect"]}"' in text
    for value in node["projections"].values():
        assert escape(value) in text
    capability = node["provenance"]["capability"]
    assert f'href="/cockpit/capabilities/{capability}"' in text
    assert escape(node["provenance"]["declared_in"]) in text
    assert "command-withheld" not in parsed.ids
    assert_no_absolute_path(text)
    await assert_links_answer(client, parsed.main_links)


async def test_a_withheld_command_says_why(client: httpx.AsyncClient) -> None:
    index = (await client.get("/api/v1/commands")).json()
    withheld = [c for c in index["commands"] if "withheld" in c["projections"]]
    assert withheld
    reasons = {c["projections"]["withheld"]: c["id"] for c in withheld}
    for reason, command_id in reasons.items():
        parsed = read_page(text := await page(client, f"/cockpit/commands/{command_id}"))
        assert "command-withheld" in parsed.ids
        assert escape(reason) in text
        await assert_links_answer(client, parsed.main_links)


@pytest.mark.parametrize(
    ("query", "status", "words"),
    [
        ("/cockpit/commands/executable.nope", 404, "no command &#39;executable.nope&#39;"),
        ("/cockpit/commands?id=executable.nope", 404, "no command &#39;executable.nope&#39;"),
        ("/cockpit/commands?origin=planet", 400, "planet"),
        ("/cockpit/commands?effect=planet", 400, "planet"),
        ("/cockpit/commands?colour=red", 400, "unknown query parameter &#39;colour&#39;"),
        ("/cockpit/commands?id=executable.plan.status&origin=tool", 400, "give it without id"),
        ("/cockpit/commands/executable.plan.status?origin=tool", 400, "unknown query parameter &#39;origin&#39;"),
    ],
)
async def test_bad_queries_answer_an_error_page(client: httpx.AsyncClient, query: str, status: int, words: str) -> None:
    assert words in await page(client, query, status)


async def test_a_hostile_search_is_escaped(client: httpx.AsyncClient) -> None:
    text = await page(client, '/cockpit/commands?search="><script>alert(1)</script>')
    assert "<script>alert(1)" not in text
    assert escape('"><script>alert(1)</script>') in text


async def test_command_pages_are_live(client: httpx.AsyncClient) -> None:
    full = await client.get("/cockpit/commands", headers=HTML)
    etag = full.headers["ETag"]
    fragment = await client.get("/cockpit/commands", headers={**HTML, FRAGMENT_HEADER: "main"})
    assert "<html" not in fragment.text
    assert 'id="commands-filters"' in fragment.text
    for path in ("/cockpit/commands", "/cockpit/commands/executable.plan.status"):
        same = await client.get(path, headers={**HTML, FRAGMENT_HEADER: "main", "If-None-Match": etag})
        assert same.status_code == 304
