"""Fixtures of the browser tests: Debian's Chromium driven by Playwright, a real `svc serve` per module.

One browser for the whole `tests/browser` package (package scope: it closes when the package's last test ran,
so its event loop never outlives the browser tests); one server for the modules that only read and one of its
own for a module that changes what the pages show (`test_live.py`); one fresh browser context per test.
Playwright's sync API runs in plain (non-async) test functions. Every Playwright call waits at most
`ACTION_MS` unless it names its own timeout, and every test runs under a wall-clock bound (`BOUND_SECONDS`, or
`@pytest.mark.bound(n)`) enforced by SIGALRM, which Playwright's sync API raises in the waiting test.

The tests skip only when no Chromium is installed: `SVC_CHROMIUM` names one, else `/usr/bin/chromium`
(Debian's `chromium` package, which `.ci/run` installs so CI always runs them).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Literal

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Playwright, sync_playwright

from tests.browser._report import LINES
from tests.browser._serve import Served, browser_checkout, svc_serve

#: The Chromium the tests drive; never a download.
CHROMIUM = Path(os.environ.get("SVC_CHROMIUM") or "/usr/bin/chromium")
#: Headless Debian Chromium as root in a container: no sandbox (root has none), /dev/shm may be small.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"]
#: The default bound of one Playwright action or wait, in milliseconds.
ACTION_MS = 10_000
#: The default wall-clock bound of one browser test.
BOUND_SECONDS = 60.0
#: The desktop viewport of the tests that do not name one (width, height).
DESKTOP = (1280, 900)


@pytest.fixture(autouse=True)
def _wall_clock_bound(request: pytest.FixtureRequest) -> Iterator[None]:
    """Bound the test's own body (fixtures of wider scope are bounded by their own timeouts)."""
    marker = request.node.get_closest_marker("bound")
    seconds = float(marker.args[0]) if marker else BOUND_SECONDS

    def expire(signum: int, frame: FrameType | None) -> None:
        raise TimeoutError(f"{request.node.nodeid} ran over its bound of {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture(scope="package")
def playwright() -> Iterator[Playwright]:
    """Playwright's driver (shipped in its wheel), for the browser tests."""
    if not CHROMIUM.is_file():
        pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install chromium (or set SVC_CHROMIUM)")
    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="package")
def browser(playwright: Playwright) -> Iterator[Browser]:
    """One headless Chromium for the whole browser suite."""
    chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, timeout=30_000)
    try:
        yield chromium
    finally:
        chromium.close()


@contextmanager
def checked_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A real `svc serve` over a disposable checkout of svc's layer and docs.

    At the end the server must stop on SIGTERM with exit 0 and no traceback on stderr.
    """
    root = browser_checkout(tmp_path_factory.mktemp("browser") / "checkout")
    with svc_serve(root) as server:
        yield server
    code = server.process.returncode
    log = server.log()
    assert code == 0, f"svc serve exited {code}:\n{log}"
    assert "Traceback" not in log, log


@pytest.fixture(scope="package")
def reading_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The server of the modules that only read (pages, accessibility, screens): started once for them."""
    with checked_server(tmp_path_factory) as server:
        yield server


@pytest.fixture(scope="module")
def served(reading_server: Served) -> Served:
    """The module's server: the shared reading one, unless the module (one that changes state) starts its own."""
    return reading_server


@pytest.fixture(scope="module")
def server(served: Served) -> str:
    """The URL of the module's server."""
    return served.url


@pytest.fixture(scope="module")
def api(server: str) -> Iterator[httpx.Client]:
    """A JSON client of the module's server (what `/api/v1` answers, to compare the pages against)."""
    with httpx.Client(base_url=server, timeout=10.0) as client:
        yield client


def new_context(
    browser: Browser,
    server: str,
    *,
    width: int = DESKTOP[0],
    height: int = DESKTOP[1],
    color_scheme: Literal["light", "dark"] = "light",
) -> BrowserContext:
    """A fresh browser context on the server (own storage), every action bounded by ACTION_MS.

    Motion is reduced (the design's durations are zero then), so a theme switch or a progress bar is measured
    and pictured in its final state, not halfway through a transition.
    """
    context = browser.new_context(
        base_url=server,
        viewport={"width": width, "height": height},
        color_scheme=color_scheme,
        reduced_motion="reduce",
    )
    context.set_default_timeout(ACTION_MS)
    context.set_default_navigation_timeout(ACTION_MS)
    return context


@pytest.fixture
def context(browser: Browser, server: str) -> Iterator[BrowserContext]:
    """A fresh desktop browser context (light theme) for one test."""
    ctx = new_context(browser, server)
    try:
        yield ctx
    finally:
        ctx.close()


@pytest.fixture
def page(context: BrowserContext) -> Page:
    """A fresh page of the test's context."""
    return context.new_page()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print what the browser tests noted: the screenshots' folder, the minor accessibility findings."""
    if LINES:
        terminalreporter.section("svc browser tests")
        for line in LINES:
            terminalreporter.write_line(line)
