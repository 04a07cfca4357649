"""Accessibility of the main pages: axe-core (vendored, `vendor/README.md`) finds no serious or critical violation.

Each page is checked whole in the light theme, then its colour contrast again in the dark theme (switched on the
same page by the theme's own hook, `svcTheme.set("dark")`): contrast is the one rule the theme changes. axe is
evaluated through Playwright's `page.evaluate`, which the DevTools protocol
runs outside the page's Content-Security-Policy: the pages are checked with their real CSP in force (no
`bypass_csp`), and nothing inline is added to them. Findings of lesser impact are listed at the end of the run.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import BrowserContext

from tests.browser._report import note
from tests.browser._site import MAIN_PAGES, main_pages

pytestmark = pytest.mark.slow

AXE = Path(__file__).with_name("vendor") / "axe.min.js"
#: The vendored file's digest, as `vendor/README.md` records it.
AXE_SHA256 = "29348999450cdf2849a8e70b7912fc2da85a849da39c0d0d5394f51d4a9ed95c"
#: The impacts that fail the test; the others are reported.
FAILING = ("serious", "critical")
RUN_AXE = """async (rules) => {
  const options = { resultTypes: ["violations"] };
  if (rules) {
    options.runOnly = { type: "rule", values: rules };
  }
  const result = await axe.run(document, options);
  return result.violations.map(v => ({
    id: v.id,
    impact: v.impact,
    help: v.help,
    nodes: v.nodes.length,
    targets: v.nodes.slice(0, 3).map(n => n.target.join(" ")),
  }));
}"""


@pytest.fixture(scope="module")
def axe_source() -> str:
    """axe-core's source, once per module."""
    return AXE.read_text(encoding="utf-8")


def test_the_vendored_axe_is_the_recorded_release_with_its_licence() -> None:
    assert hashlib.sha256(AXE.read_bytes()).hexdigest() == AXE_SHA256
    readme = AXE.with_name("README.md").read_text(encoding="utf-8")
    assert "axe-core 4.14.1" in readme
    assert AXE_SHA256 in readme
    assert "Mozilla Public License" in AXE.with_name("LICENSE").read_text(encoding="utf-8")
    assert AXE.read_text(encoding="utf-8").startswith("/*! axe v4.14.1")


@pytest.fixture(scope="module")
def pages(api: httpx.Client) -> dict[str, str]:
    """The main pages' paths on this module's server."""
    found = main_pages(api)
    assert tuple(found) == MAIN_PAGES
    return found


def failures(violations: list[dict[str, Any]], where: str) -> list[str]:
    """The failing violations as lines; the others are noted for the end of the run."""
    failing = []
    for v in violations:
        line = f"{v['impact']} {v['id']} on {v['nodes']} node(s): {v['help']}; e.g. {v['targets']}"
        if v["impact"] in FAILING:
            failing.append(f"  {line}")
        else:
            note(f"axe: {where}: {line}")
    return failing


@pytest.mark.parametrize("name", MAIN_PAGES)
def test_axe_finds_no_serious_or_critical_violation(
    context: BrowserContext, pages: dict[str, str], axe_source: str, name: str
) -> None:
    path = pages[name]
    page = context.new_page()
    response = page.goto(path)
    assert response is not None, path
    assert response.status == 200, path
    assert page.evaluate(axe_source + "\n;typeof window.axe") == "object"
    failing = failures(page.evaluate(RUN_AXE, None), f"{path} (light)")
    page.evaluate("() => window.svcTheme.set('dark')")
    assert page.evaluate("() => document.documentElement.classList.contains('dark')"), "the dark theme did not apply"
    failing += failures(page.evaluate(RUN_AXE, ["color-contrast"]), f"{path} (dark)")
    assert not failing, f"{path}:\n" + "\n".join(failing)
