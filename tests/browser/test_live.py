"""Live pages in a real Chromium: an execution followed to its end, a cancel button, a plan transition.

Each test opens its page once and never reloads it: a marker set on `window` after the load must still be there
at the end (a reload or a navigation would drop it), while the page shows the new state, which only the page's
script (`cockpit.js`: `/events` and the fragment refresh of `<main>`) can have brought.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Page, WebSocket
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from svc.layer import dump_yaml, load_yaml
from tests.browser._serve import Served
from tests.browser._site import cockpit_link, start_demonstration
from tests.browser._watch import PageWatch
from tests.browser.conftest import checked_server

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """This module's own server: its executions and its plan transition change what the pages show."""
    with checked_server(tmp_path_factory) as server:
        yield server


#: How long a live page may take to show a change (its poll is every 2 s; `/events` is at once), in ms.
LIVE_MS = 15_000
STATE = "#execution-state"


def mark(page: Page) -> None:
    """Set the marker that a reload or a navigation would drop."""
    page.evaluate("() => { window.__svcMarker = 1; }")


def still_marked(page: Page) -> bool:
    """Whether the document is the one `mark` marked."""
    marked: bool = page.evaluate("() => window.__svcMarker === 1")
    return marked


def shown_state(page: Page) -> str:
    """The execution state the page shows (its word, and the badge's `data-status` agrees)."""
    badge = page.locator(STATE)
    word = badge.inner_text().strip()
    assert badge.get_attribute("data-status") == word
    return word


def wait_for_state(page: Page, word: str, api: httpx.Client, execution: str, watch: PageWatch) -> None:
    """Wait until the page shows `word` as the execution's state; on timeout, say what the page and API show."""
    try:
        page.wait_for_function(
            "word => { const el = document.querySelector('#execution-state'); "
            "return el !== null && el.textContent.trim() === word; }",
            arg=word,
            timeout=LIVE_MS,
        )
    except PlaywrightTimeoutError:
        answered = api.get("/api/v1/executions/get", params={"id": execution}).json().get("state")
        note = page.locator("[data-svc-cancel-note]").all_inner_texts()
        raise AssertionError(
            f"the page did not show {word!r} within {LIVE_MS} ms: it shows {page.locator(STATE).inner_text()!r}, "
            f"executions.get answers {answered!r}, cancel note {note!r}; the page's last requests:\n{watch.recent()}"
        ) from None


def test_an_execution_started_over_http_is_followed_to_succeeded_without_a_reload(
    page: Page, server: str, api: httpx.Client
) -> None:
    view = start_demonstration(api, steps=8, delay_ms=500)
    watch = PageWatch.attach(page, server)
    page.goto(cockpit_link(view))
    first = shown_state(page)
    assert first in ("queued", "running"), first
    mark(page)
    wait_for_state(page, "succeeded", api, str(view["id"]), watch)
    assert still_marked(page), "the page was reloaded"
    assert page.locator("main[data-svc-follow]").count() == 1
    answered = api.get("/api/v1/executions/get", params={"id": str(view["id"])}).json()
    assert answered["state"] == "succeeded"
    # The page shows the finished execution's facts: every step, the progress at its end.
    assert page.locator("#execution-progress").get_attribute("value") == "8"
    watch.assert_clean(page.url)


def test_the_cancel_button_ends_a_running_demonstration_as_cancelled(
    page: Page, server: str, api: httpx.Client
) -> None:
    view = start_demonstration(api, steps=1000, delay_ms=1000)
    watch = PageWatch.attach(page, server)
    page.goto(cockpit_link(view))
    mark(page)
    wait_for_state(page, "running", api, str(view["id"]), watch)
    page.locator("#execution-cancel").click()
    wait_for_state(page, "cancelled", api, str(view["id"]), watch)
    assert still_marked(page), "the page was reloaded"
    answered = api.get("/api/v1/executions/get", params={"id": str(view["id"])}).json()
    assert answered["state"] == "cancelled"
    assert answered["progress"] is None or answered["progress"]["current"] < 1000
    # A finished execution offers no cancel button any more.
    assert page.locator("#execution-cancel").count() == 0
    watch.assert_clean(page.url)


def test_a_plan_transition_made_with_the_cli_shows_on_the_open_board_without_a_reload(
    page: Page, served: Served, api: httpx.Client
) -> None:
    issue = api.get("/api/v1/plan/next").json()["issue"]["id"]
    watch = PageWatch.attach(page, served.url)
    page.goto("/cockpit/plan")
    card = f'[data-plan-issue="{issue}"]'
    assert page.locator(f'[data-plan-status="READY"] {card}').count() == 1
    version = page.locator("main").get_attribute("data-svc-version")
    mark(page)
    moved = subprocess.run(
        [sys.executable, "-m", "svc", "--repo", str(served.root), "plan", "transition", issue, "start", "--json"],
        capture_output=True,
        cwd=served.root,
        timeout=60,
        check=False,
    )
    assert moved.returncode == 0, moved.stderr.decode()
    to = json.loads(moved.stdout)["to"]
    assert to == "ACTIVE"
    page.locator(f'[data-plan-status="{to}"] {card}').wait_for(timeout=LIVE_MS)
    assert page.locator(f'[data-plan-status="READY"] {card}').count() == 0
    assert still_marked(page), "the page was reloaded"
    assert page.locator("main").get_attribute("data-svc-version") != version
    watch.assert_clean(page.url)


def test_a_hand_edit_of_an_issue_shows_on_the_open_board_at_once_without_the_poll(
    page: Page, served: Served, api: httpx.Client
) -> None:
    ready = api.get("/api/v1/plan/issues", params={"status": "READY"}).json()["issues"]
    assert len(ready) >= 2, ready
    issue, blocker = ready[0]["id"], ready[1]["id"]
    # No timer of the page ever fires, so the two-second poll never asks: only `/events` can refresh it.
    page.add_init_script("window.setInterval = function () { return 0; };")
    sockets: list[WebSocket] = []
    frames: list[str] = []

    def opened(ws: WebSocket) -> None:
        if "topic=plan" in ws.url:
            sockets.append(ws)
            ws.on("framereceived", lambda payload: frames.append(str(payload)))

    page.on("websocket", opened)
    watch = PageWatch.attach(page, served.url)
    page.goto("/cockpit/plan")
    card = f'[data-plan-issue="{issue}"]'
    assert page.locator(f'[data-plan-status="READY"] {card}').count() == 1
    assert page.locator("main").get_attribute("data-svc-topics") == "plan"
    version = page.locator("main").get_attribute("data-svc-version")
    mark(page)
    if not any('"stream.ready"' in frame for frame in frames):  # events reach the listeners inside Playwright calls
        if not sockets:
            page.wait_for_event("websocket", predicate=lambda ws: "topic=plan" in ws.url, timeout=LIVE_MS)
        sockets[0].wait_for_event("framereceived", predicate=lambda p: '"stream.ready"' in str(p), timeout=LIVE_MS)
    record = served.root / ".ai/repo/project/issues" / f"{issue}.yaml"
    fields = load_yaml(record.read_text(encoding="utf-8"))
    fields["depends_on"] = [*fields.get("depends_on", []), blocker]
    record.write_text(dump_yaml(fields), encoding="utf-8")
    page.locator(f'[data-plan-status="READY"] {card}').wait_for(state="detached", timeout=LIVE_MS)
    assert any('"plan.changed"' in frame and issue in frame for frame in frames), frames
    assert still_marked(page), "the page was reloaded"
    assert page.locator("main").get_attribute("data-svc-version") != version
    answered = api.get("/api/v1/plan/record", params={"id": issue}).json()
    assert answered["derived"]["status"] == "BLOCKED", answered
    watch.assert_clean(page.url)
