"""The executions pages: the list and one page per execution, each showing what `executions.*` answers, live.

Executions are started over HTTP (`POST /api/v1/executions/start`) and awaited on the store's own `done`
event, never a sleep. The builtin service over svc's own checkout runs `executions.demonstrate`; the probe
registry (`tests/nursery/_probe.py`) holds runs open on gates, writes hostile text, and logs many lines.
Pairs with `src/svc/api/cockpit/_executions.py` and its templates `executions.html`, `execution.html`.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import markupsafe
import pytest
import trio

from svc.api.cockpit import FRAGMENT_HEADER
from svc.api.cockpit._executions import duration_text
from svc.nursery import Engine
from svc.nursery._events import TERMINAL_TYPES
from svc.runtime import Executor
from tests.api._page_tree import Element, parse
from tests.api.conftest import serving
from tests.conftest import ROOT
from tests.nursery._probe import Gates

HTML = {"Accept": "text/html"}
UNKNOWN = "x-20261121T120000Z-0123abcd"
HOSTILE = '<script>alert(1)</script>"><img src=x onerror=alert(2)>'


@pytest.fixture
async def probe_http(probe_executor: Executor, nursery: trio.Nursery) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client of the probe registry served for real."""
    async with serving(probe_executor, nursery) as url, httpx.AsyncClient(base_url=url) as http:
        yield http


async def start(http: httpx.AsyncClient, capability: str, **input: Any) -> dict[str, Any]:
    """Start an execution over HTTP; its view (state queued)."""
    answer = await http.post("/api/v1/executions/start", json={"capability": capability, "input": input})
    assert answer.status_code == 200, answer.text
    view: dict[str, Any] = answer.json()
    return view


async def finished(executor: Executor, execution_id: str) -> None:
    """Until the execution has ended."""
    await executor.components.get(Engine).store.get(execution_id).done.wait()


async def page(http: httpx.AsyncClient, path: str, **params: str) -> Element:
    """The page at `path`, which must answer 200 HTML."""
    answer = await http.get(path, params=params, headers=HTML)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/html")
    return parse(answer.text)


async def api(http: httpx.AsyncClient, path: str, **params: Any) -> Any:
    answer = await http.get(path, params=params)
    assert answer.status_code == 200, answer.text
    return answer.json()


def check_execution_page(tree: Element, view: dict[str, Any], history: dict[str, Any]) -> None:
    """The page shows `view` (executions.get) and the log lines of `history` (executions.events)."""
    state = tree.by_id("execution-state")
    assert (state.text, state.get("data-status")) == (view["state"], view["state"])
    facts = tree.by_id("execution-facts").text
    assert view["capability"] in facts
    assert view["actor"]["kind"] in facts
    assert view["correlation_id"] in facts
    if view["duration_ms"] is not None:
        assert tree.by_id("execution-duration").text == duration_text(view["duration_ms"])
    progress = view["progress"]
    bar = tree.maybe_id("execution-progress")
    if progress is not None and progress["total"] is not None:
        assert bar is not None
        assert (bar.get("max"), bar.get("value")) == (str(progress["total"]), str(progress["current"]))
    elif progress is not None or view["state"] in ("queued", "running", "cancelling"):
        assert bar is not None
        assert not bar.has("value"), "an unknown total is an indeterminate bar"
    if progress is not None and progress["message"]:
        assert tree.by_id("execution-progress-message").text == progress["message"]
    rows = tree.by_id("execution-steps").find_all("tr", data_step=True)
    assert [(r.get("data-step"), r.get("data-state")) for r in rows] == [(s["name"], s["state"]) for s in view["steps"]]
    for row, step in zip(rows, view["steps"], strict=True):
        assert step["title"] in row.text
        assert (step["detail"] or "") in row.text
    lines = tree.by_id("execution-log").find_all("li", data_stream=True)
    logged = [e for e in history["events"] if e["type"] == "execution.log"]
    assert [(li.get("data-stream"), li.one("code").text) for li in lines] == [
        (e["data"]["stream"], e["data"]["message"]) for e in logged
    ]
    diagnostics = tree.by_id("execution-diagnostics").text
    for d in view["diagnostics"]:
        assert d["code"] in diagnostics
    error = tree.maybe_id("execution-error")
    assert (error is not None) == (view["error"] is not None)
    if view["error"] is not None and error is not None:
        assert view["error"]["message"] in error.text
    output = tree.maybe_id("execution-output")
    assert (output is not None) == (view["state"] == "succeeded")


# -- over svc's own checkout -------------------------------------------------------------------------


async def test_the_list_shows_what_executions_list_answers_and_filters(
    client: httpx.AsyncClient, executor: Executor
) -> None:
    ran = await start(client, "executions.demonstrate", steps=2)
    failed = await start(client, "executions.demonstrate", steps=2, fail_at=2)
    await finished(executor, ran["id"])
    await finished(executor, failed["id"])
    listing = await api(client, "/api/v1/executions")
    tree = await page(client, "/cockpit/executions")
    rows = tree.by_id("executions-table").find_all("tr", data_execution=True)
    assert [r.get("data-execution") for r in rows] == [x["id"] for x in listing["executions"]]
    for row, x in zip(rows, listing["executions"], strict=True):
        assert row.get("data-state") == x["state"]
        assert x["links"]["cockpit"] in row.hrefs()
        assert f"/cockpit/capabilities/{x['capability']}" in row.hrefs()
        assert row.one("span", class_="svc-badge").text == x["state"]
    assert f"{listing['remembered']} executions remembered" in tree.by_id("executions-tallies").text

    only_failed = await page(client, "/cockpit/executions", state="failed")
    shown = [r.get("data-execution") for r in only_failed.find_all("tr", data_execution=True)]
    assert shown == [x["id"] for x in (await api(client, "/api/v1/executions", state="failed"))["executions"]]
    assert failed["id"] in shown
    assert ran["id"] not in shown
    assert only_failed.by_id("executions-state").one("option", selected=True).get("value") == "failed"
    by_capability = await page(client, "/cockpit/executions", capability="executions.demonstrate", state="")
    assert {ran["id"], failed["id"]} <= {r.get("data-execution") for r in by_capability.find_all("tr")}
    none = await page(client, "/cockpit/executions", capability="health.report")
    assert none.maybe_id("executions-table") is None
    assert "No execution matches" in none.by_id("executions-empty").text


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("state=bogus", "no execution state"),
        ("capability=no.such", "not in this registry"),
        ("limit=3", "unknown query parameter"),
        ("state=failed&state=running", "give it once"),
    ],
)
async def test_a_bad_filter_is_a_400_page(client: httpx.AsyncClient, query: str, words: str) -> None:
    answer = await client.get(f"/cockpit/executions?{query}", headers=HTML)
    assert answer.status_code == 400
    assert answer.headers["content-type"].startswith("text/html")
    assert "invalid_input" in answer.text
    assert words in answer.text


async def test_a_page_shows_what_executions_get_and_events_answer(
    client: httpx.AsyncClient, executor: Executor
) -> None:
    ran = await start(client, "executions.demonstrate", steps=3)
    failed = await start(client, "executions.demonstrate", steps=3, fail_at=2)
    for x in (ran, failed):
        await finished(executor, x["id"])
        view = await api(client, "/api/v1/executions/get", id=x["id"])
        history = await api(client, "/api/v1/executions/events", id=x["id"])
        tree = await page(client, x["links"]["cockpit"])
        check_execution_page(tree, view, history)
        assert tree.maybe_id("execution-cancel") is None, "a finished execution has no cancel button"
        assert tree.one("main").get("data-svc-follow") == x["id"]
        assert ROOT.as_posix() not in tree.text
    output = (await page(client, ran["links"]["cockpit"])).by_id("execution-output").text
    assert '"steps": 3' in output
    error = (await page(client, failed["links"]["cockpit"])).by_id("execution-error").text
    assert "step 2 of 3 failed as asked" in error


async def test_every_link_of_the_pages_answers(client: httpx.AsyncClient, executor: Executor) -> None:
    ran = await start(client, "executions.demonstrate", steps=1)
    await finished(executor, ran["id"])
    found: set[str] = set()
    for path in ("/cockpit/executions", ran["links"]["cockpit"], "/cockpit/executions?state=succeeded"):
        answer = await client.get(path, headers=HTML)
        assert answer.status_code == 200
        assert ROOT.as_posix() not in answer.text
        found |= set(parse(answer.text).hrefs())
    assert f"/cockpit/capabilities/{ran['capability']}" in found
    for href in sorted(h for h in found if not h.startswith("#")):
        # The first page that reads the layer builds its index: give it longer than the client's default.
        answer = await client.get(href, headers=HTML, timeout=30)
        assert answer.status_code < 400, (href, answer.status_code)


async def test_unknown_and_malformed_ids_answer_as_the_api_does(client: httpx.AsyncClient) -> None:
    for ident, status in ((UNKNOWN, 404), ("nope", 400)):
        assert (await client.get("/api/v1/executions/get", params={"id": ident})).status_code == status
        answer = await client.get(f"/cockpit/executions/{ident}", headers=HTML)
        assert answer.status_code == status
        assert answer.headers["content-type"].startswith("text/html")
        assert ("not_found" if status == 404 else "invalid_input") in answer.text
    assert (await client.get("/cockpit/executions/a/b", headers=HTML)).status_code == 404
    assert (await client.get(f"/cockpit/executions/{UNKNOWN}?x=1", headers=HTML)).status_code == 400


# -- over the probe registry --------------------------------------------------------------------------


async def test_the_cancel_button_shows_while_cancellable_and_its_target_cancels(
    probe_http: httpx.AsyncClient, probe_executor: Executor, gates: Gates
) -> None:
    stubborn = await start(probe_http, "probe.stubborn", key="s")
    waiting = await start(probe_http, "probe.wait", key="w")
    await gates["s"].entered.wait()
    await gates["w"].entered.wait()

    tree = await page(probe_http, stubborn["links"]["cockpit"])
    assert tree.by_id("execution-state").text == "running"
    assert tree.maybe_id("execution-cancel") is None, "a non-cancellable execution has no cancel button"

    tree = await page(probe_http, waiting["links"]["cockpit"])
    view = await api(probe_http, "/api/v1/executions/get", id=waiting["id"])
    check_execution_page(tree, view, await api(probe_http, "/api/v1/executions/events", id=waiting["id"]))
    button = tree.by_id("execution-cancel")
    assert (button.tag, button.get("type"), button.get("data-svc-cancel")) == ("button", "button", waiting["id"])
    assert tree.one(data_svc_cancel_note=True).get("aria-live") == "polite"
    # What cockpit.js posts when the button is pressed.
    assert view["links"]["cancel"] == "/api/v1/executions/cancel"
    cancelled = await probe_http.post(view["links"]["cancel"], json={"id": button.get("data-svc-cancel")})
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["outcome"] == "requested"
    await finished(probe_executor, waiting["id"])
    tree = await page(probe_http, waiting["links"]["cockpit"])
    assert tree.by_id("execution-state").text == "cancelled"
    assert tree.maybe_id("execution-cancel") is None
    gates["s"].open()
    await finished(probe_executor, stubborn["id"])


async def test_a_live_page_answers_304_until_an_event_then_its_new_main(
    probe_http: httpx.AsyncClient, probe_executor: Executor, gates: Gates
) -> None:
    x = await start(probe_http, "probe.wait", key="live")
    await gates["live"].entered.wait()
    first = await probe_http.get(x["links"]["cockpit"], headers=HTML)
    etag = first.headers["ETag"]
    version = parse(first.text).one("main").get("data-svc-version")
    assert etag == f'"{version}"'
    fragment = {**HTML, FRAGMENT_HEADER: "main", "If-None-Match": etag}
    same = await probe_http.get(x["links"]["cockpit"], headers=fragment)
    assert same.status_code == 304
    assert same.content == b""
    listing = await probe_http.get("/cockpit/executions", headers=fragment)
    assert listing.status_code == 304, "the list shares the version"

    gates["live"].open()
    await finished(probe_executor, x["id"])
    moved = await probe_http.get(x["links"]["cockpit"], headers=fragment)
    assert moved.status_code == 200
    assert moved.headers["ETag"] != etag
    assert "<html" not in moved.text
    assert "<main" not in moved.text
    tree = parse(moved.text)
    assert tree.by_id("execution-state").text == "succeeded"
    rows = (await probe_http.get("/cockpit/executions", headers=fragment)).text
    assert f'data-execution="{x["id"]}" data-state="succeeded"' in rows


async def test_hostile_text_in_input_steps_logs_and_errors_is_escaped(
    probe_http: httpx.AsyncClient, probe_executor: Executor
) -> None:
    x = await start(probe_http, "probe.noisy", text=HOSTILE, fail=True)
    await finished(probe_executor, x["id"])
    answer = await probe_http.get(x["links"]["cockpit"], headers=HTML)
    body = answer.text
    assert "<script>alert" not in body
    assert "<img src=x" not in body
    assert str(markupsafe.escape(HOSTILE)) in body
    view = await api(probe_http, "/api/v1/executions/get", id=x["id"])
    assert view["state"] == "failed"
    tree = parse(body)
    check_execution_page(tree, view, await api(probe_http, "/api/v1/executions/events", id=x["id"]))
    assert HOSTILE in tree.by_id("execution-log").text
    assert HOSTILE in tree.by_id("execution-steps").text
    assert HOSTILE in tree.by_id("execution-error").text
    assert not tree.find_all("img")
    assert [s.get("src") for s in tree.find_all("script")] == [
        s.get("src") for s in parse((await probe_http.get("/", headers=HTML)).text).find_all("script")
    ], "no script but the frame's own"


async def test_a_long_log_shows_the_newest_events_and_says_the_rest_are_not_shown(
    probe_http: httpx.AsyncClient, probe_executor: Executor
) -> None:
    x = await start(probe_http, "probe.emit", count=700, every=100)
    await finished(probe_executor, x["id"])
    view = await api(probe_http, "/api/v1/executions/get", id=x["id"])
    newest = await api(
        probe_http, "/api/v1/executions/events", id=x["id"], after=view["last_sequence"] - 500, limit=500
    )
    tree = await page(probe_http, x["links"]["cockpit"])
    check_execution_page(tree, view, newest)
    note = tree.by_id("execution-log-truncated").text
    assert f"The {view['last_sequence'] - 500} earlier events are not shown" in note
    assert "line 700" in tree.by_id("execution-log").text
    assert f"/api/v1/executions/events?id={x['id']}&after=0" in tree.by_id("execution-log").hrefs()


def test_the_page_script_stops_following_on_every_terminal_frame_and_only_those() -> None:
    """cockpit.js stops reconnecting to a followed execution once a terminal frame came (a name it misspelt
    would leave a finished page reconnecting for good)."""
    script = (ROOT / "src/svc/api/static/cockpit/cockpit.js").read_text(encoding="utf-8")
    found = re.search(r"/\^execution\\\.\(([a-z|]+)\)\$/", script)
    assert found is not None, "cockpit.js names the terminal frames in one pattern"
    assert {f"execution.{name}" for name in found[1].split("|")} == TERMINAL_TYPES
