"""Every page of the navigation, and the first page each list links to, in a real Chromium.

A page loads clean: no console error, no uncaught script error, no failed request, no answer of 400 or more,
and no request (WebSocket included) to another host than the server, which the test also blocks. Every link of
the home page and of the registry page answers below 400.
"""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import BrowserContext, Page

from tests.browser._site import HTML, LISTED, NAVIGATION_PATHS, Listed, first_linked
from tests.browser._watch import PageWatch, links, origin

pytestmark = pytest.mark.slow

#: How long a page may take to be loaded and settled (its scripts run, its live channel opened), in ms.
SETTLE_MS = 10_000


def visit(page: Page, server: str, path: str) -> PageWatch:
    """Open `path` on a watched page, wait for the network to settle, and answer what the watch saw."""
    watch = PageWatch.attach(page, server)
    response = page.goto(path, wait_until="load")
    assert response is not None, path
    assert response.status == 200, f"{path} answered {response.status}"
    assert "text/html" in response.headers.get("content-type", ""), path
    # The page's own script has run: a live page has asked nothing yet or once; nothing may have failed.
    page.wait_for_load_state("networkidle", timeout=SETTLE_MS)
    return watch


@pytest.mark.parametrize("path", NAVIGATION_PATHS)
def test_every_page_of_the_navigation_loads_clean(page: Page, server: str, path: str) -> None:
    watch = visit(page, server, path)
    watch.assert_clean(path)
    assert page.locator("main#main").count() == 1, f"{path} has no <main id=main>"
    assert page.locator("h1").count() >= 1, f"{path} has no heading"
    assert any(origin(url) == origin(server) for url in watch.requests)


@pytest.mark.parametrize("listed", LISTED, ids=[item.name for item in LISTED])
def test_the_first_page_linked_from_each_list_loads_clean(
    page: Page, server: str, api: httpx.Client, listed: Listed
) -> None:
    path = first_linked(api, listed)
    watch = visit(page, server, path)
    watch.assert_clean(path)
    assert page.locator("h1").count() >= 1, f"{path} has no heading"


def test_an_execution_page_loads_clean(page: Page, server: str, api: httpx.Client) -> None:
    from tests.browser._site import cockpit_link, start_demonstration

    path = cockpit_link(start_demonstration(api, steps=1, delay_ms=0))
    watch = visit(page, server, path)
    watch.assert_clean(path)
    assert page.locator("#execution-state").count() == 1


@pytest.mark.parametrize("path", ["/", "/cockpit"])
def test_every_link_on_the_page_answers_below_400(context: BrowserContext, server: str, path: str) -> None:
    page = context.new_page()
    visit(page, server, path).assert_clean(path)
    hrefs = page.eval_on_selector_all("a[href]", "anchors => anchors.map(a => a.href)")
    assert hrefs, f"{path} has no link"
    targets = sorted(set(links("".join(f'<a href="{h}">' for h in hrefs), page.url)))
    foreign = [url for url in targets if origin(url) != origin(server)]
    assert not foreign, f"{path} links another host: {foreign}"
    failures = []
    for url in targets:
        answer = context.request.get(url, headers=HTML, timeout=10_000)
        if answer.status >= 400:
            failures.append(f"{url}: {answer.status}")
        answer.dispose()
    assert not failures, f"{path} links what does not answer:\n  " + "\n  ".join(failures)
    assert len(targets) >= 5
