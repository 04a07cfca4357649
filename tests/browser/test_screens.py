"""Screenshots of the main pages in both themes and at a phone's width; the theme toggle; no overflow at 320 px.

Screenshots go to `SVC_SCREENSHOTS` (a directory, created) or else a fresh temporary directory of the run; the
folder is printed at the end of the run. They are for a person to look at, never committed, and never compared:
the test fails only when a page does not answer or cannot be pictured.
"""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext

from tests.browser._report import note
from tests.browser._site import MAIN_PAGES, main_pages
from tests.browser.conftest import new_context

pytestmark = pytest.mark.slow

#: The pages also pictured at a phone's width.
PHONE_PAGES = ("home", "plan", "execution", "object")
PHONE = 390
NARROWEST = 320
#: Elements wider than the page, outside the table wrappers (which scroll on their own): their selector-ish name.
OVERFLOWING = """(width) => {
  const out = [];
  for (const el of document.querySelectorAll("body *")) {
    if (el.closest(".cockpit-table-wrap")) continue;
    const box = el.getBoundingClientRect();
    if (box.width > 0 && box.right > width + 0.5) {
      const classes = el.classList.length ? "." + Array.from(el.classList).join(".") : "";
      out.push(el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + classes + " right=" + Math.round(box.right));
    }
  }
  return out.slice(0, 8);
}"""


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The screenshots' folder: `SVC_SCREENSHOTS`, else a temporary directory of the run."""
    named = os.environ.get("SVC_SCREENSHOTS")
    folder = Path(named).resolve() if named else tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    note(f"screenshots: {folder}")
    return folder


@pytest.fixture(scope="module")
def pages(api: httpx.Client) -> dict[str, str]:
    """The main pages' paths on this module's server."""
    return main_pages(api)


def test_the_theme_button_switches_the_theme_and_keeps_the_choice(context: BrowserContext) -> None:
    page = context.new_page()
    page.goto("/")
    dark = "() => document.documentElement.classList.contains('dark')"
    toggle = page.locator("[data-theme-toggle]")
    assert page.evaluate(dark) is False  # the system (light) decides while nothing is stored
    assert toggle.get_attribute("aria-pressed") == "false"
    toggle.click()
    assert page.evaluate(dark) is True
    assert toggle.get_attribute("aria-pressed") == "true"
    assert page.evaluate("() => window.localStorage.getItem('svc-theme')") == "dark"
    page.goto("/cockpit")  # the choice holds on the next page, before any paint (theme.js runs first)
    assert page.evaluate(dark) is True
    page.locator("[data-theme-toggle]").click()
    assert page.evaluate(dark) is False
    assert page.evaluate("() => window.localStorage.getItem('svc-theme')") == "light"


@pytest.mark.parametrize("name", MAIN_PAGES)
def test_screenshots_of_the_main_pages_in_both_themes(
    context: BrowserContext, pages: dict[str, str], shots: Path, name: str
) -> None:
    page = context.new_page()
    response = page.goto(pages[name])
    assert response is not None, pages[name]
    assert response.status == 200, pages[name]
    for theme in ("light", "dark"):
        # The theme's own hook, as the Theme button calls it; the page is not loaded again.
        page.evaluate("theme => window.svcTheme.set(theme)", theme)
        shown = page.evaluate("() => document.documentElement.classList.contains('dark') ? 'dark' : 'light'")
        assert shown == theme
        target = shots / f"{name}-{theme}.jpeg"
        # The whole page in the light theme; the first screen in the dark one (the same layout, other colours).
        full = theme == "light"
        page.screenshot(path=target, full_page=full, type="jpeg", quality=80, timeout=20_000)
        assert target.stat().st_size > 0


@pytest.mark.parametrize("name", PHONE_PAGES)
def test_screenshots_at_a_phone_width(
    browser: Browser, server: str, pages: dict[str, str], shots: Path, name: str
) -> None:
    context = new_context(browser, server, width=PHONE, height=844)
    try:
        page = context.new_page()
        page.goto(pages[name])
        target = shots / f"{name}-phone.jpeg"
        page.screenshot(path=target, full_page=True, type="jpeg", quality=80, timeout=20_000)
        assert target.stat().st_size > 0
    finally:
        context.close()


def test_no_page_overflows_a_320_px_screen_outside_its_table_wrappers(
    browser: Browser, server: str, pages: dict[str, str]
) -> None:
    context = new_context(browser, server, width=NARROWEST, height=640)
    overflowing = []
    try:
        page = context.new_page()
        for name in MAIN_PAGES:
            page.goto(pages[name])
            width = page.evaluate("() => document.documentElement.scrollWidth")
            if width > NARROWEST:
                culprits = page.evaluate(OVERFLOWING, NARROWEST)
                overflowing.append(f"{pages[name]} is {width} px wide; wider elements: {culprits}")
    finally:
        context.close()
    assert not overflowing, f"at {NARROWEST} px:\n  " + "\n  ".join(overflowing)
