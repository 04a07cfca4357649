"""`design.system` and `design.contrast` over real loopback HTTP and MCP, and the design's files on the pages.

Pairs with `src/svc/capabilities/_design.py` and the design route of `src/svc/api/_pages.py`.
"""

from __future__ import annotations

import re
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

import httpx
import mcp_types as types
import msgspec
import pytest

from svc.api import LocalBackend
from svc.api.cockpit import PAGE_HEADERS
from svc.layer import DESIGN_ASSET_ROUTE, design_contrast, design_system
from svc.layer._design import load_design
from svc.layer._design_render import render_theme_js, render_tokens_css
from svc.runtime import Executor
from tests.api._wire import assert_error, raw_request
from tests.api.test_mcp import connect

PACKAGED = Path(str(resources.files("svc") / "share"))
PAGE_CSP = PAGE_HEADERS["Content-Security-Policy"]


def assert_no_absolute_path(text: str, *roots: Path) -> None:
    for root in (PACKAGED, *roots):
        assert str(root) not in text


@pytest.fixture
def share(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of svc's share, named by `SVC_SHARE` for the test."""
    copy = tmp_path / "share"
    shutil.copytree(PACKAGED, copy)
    monkeypatch.setenv("SVC_SHARE", str(copy))
    return copy


async def test_both_operations_answer_over_http_as_derived(layer_root: Path, layer_server: str) -> None:
    async with httpx.AsyncClient(base_url=layer_server) as http:
        system = await http.get("/api/v1/design")
        contrast = await http.get("/api/v1/design/contrast")
    assert (system.status_code, contrast.status_code) == (200, 200)
    assert system.headers["content-type"] == "application/json"
    assert system.content == msgspec.json.encode(design_system())
    assert contrast.content == msgspec.json.encode(design_contrast())
    report = contrast.json()
    assert report["readable"] is True
    assert report["findings"] == []
    assert report["standard"] == "WCAG 2.1 AA"
    assert report["fingerprint"] == system.json()["fingerprint"]
    assert system.json()["source"] == "svc/share/design/tokens.yaml"
    for answer in (system, contrast):
        assert_no_absolute_path(answer.text, layer_root)


async def test_a_parameter_is_invalid_input(layer_server: str) -> None:
    async with httpx.AsyncClient(base_url=layer_server) as http:
        for path in ("/api/v1/design", "/api/v1/design/contrast"):
            assert_error(await http.get(path, params={"theme": "dark"}), 400, "invalid_input", "theme")


async def test_a_darkened_token_answers_unreadable_over_http(share: Path, layer_server: str) -> None:
    declaration = share / "design" / "tokens.yaml"
    async with httpx.AsyncClient(base_url=layer_server) as http:
        before = (await http.get("/api/v1/design")).json()["fingerprint"]
        text = declaration.read_text()
        darker = text.replace("    light: grey-700\n    dark: grey-300", "    light: grey-500\n    dark: grey-300")
        assert darker != text
        declaration.write_text(darker)
        report = (await http.get("/api/v1/design/contrast")).json()
        system = (await http.get("/api/v1/design")).json()
    assert report["readable"] is False
    assert report["fingerprint"] == system["fingerprint"] != before
    failing = {(p["foreground"], p["ground"], p["theme"]) for p in report["pairs"] if p["enforced"] and not p["passes"]}
    assert ("body", "sunken", "light") in failing
    # the neutral status's text is the body role: it moves with it
    assert {(fg, theme) for fg, _, theme in failing} == {("body", "light"), ("neutral", "light")}
    assert len(report["findings"]) == len(failing)
    assert any(f.startswith("body (grey-500 oklch(58% 0.021 255)) on sunken (grey-50 ") for f in report["findings"])
    assert system["source"] == "SVC_SHARE/design/tokens.yaml"
    assert str(share) not in str(report) + str(system)


@pytest.mark.parametrize(
    ("rel", "path"),
    [("design/kit.css", "/api/v1/design/contrast"), ("design/tokens.yaml", "/api/v1/design")],
)
async def test_a_missing_share_file_is_500_naming_it(share: Path, layer_server: str, rel: str, path: str) -> None:
    (share / rel).unlink()
    async with httpx.AsyncClient(base_url=layer_server) as http:
        message = assert_error(await http.get(path), 500, "internal", f"SVC_SHARE/{rel}")
    assert str(share) not in message


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_the_tools_and_the_resource_answer_over_mcp(layer_executor: Executor, mode: Any) -> None:
    system = msgspec.json.encode(design_system())
    contrast = msgspec.json.encode(design_contrast())
    async with connect(LocalBackend(layer_executor), mode) as client:
        called = await client.call_tool("svc_design", {})
        measured = await client.call_tool("svc_design_contrast", {})
        resource = await client.read_resource("svc://design")
        unknown = await client.call_tool("svc_design_contrast", {"theme": "dark"})
    for result, expected in ((called, system), (measured, contrast)):
        text = result.content[0]
        assert isinstance(text, types.TextContent)
        assert (result.is_error, text.text.encode()) == (False, expected)
    (content,) = resource.contents
    assert isinstance(content, types.TextResourceContents)
    assert (content.mime_type, content.text.encode()) == ("application/json", system)
    assert unknown.is_error is True
    error = unknown.content[0]
    assert isinstance(error, types.TextContent)
    assert error.text.startswith("invalid_input: ")


# The design's files, served by exact name.


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("tokens.css", "text/css; charset=utf-8"),
        ("base.css", "text/css; charset=utf-8"),
        ("kit.css", "text/css; charset=utf-8"),
        ("theme.js", "text/javascript; charset=utf-8"),
        ("brand/mark.svg", "image/svg+xml"),
        ("brand/logo.svg", "image/svg+xml"),
        ("brand/social-card.svg", "image/svg+xml"),
    ],
)
async def test_every_design_file_is_served_with_its_type(layer_server: str, name: str, kind: str) -> None:
    async with httpx.AsyncClient(base_url=layer_server) as http:
        r = await http.get(f"{DESIGN_ASSET_ROUTE}/{name}")
        assert r.status_code == 200, r.text
        assert r.headers["content-type"] == kind
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["cache-control"] == "no-cache"
        etag = r.headers["etag"]
        again = await http.get(f"{DESIGN_ASSET_ROUTE}/{name}", headers={"If-None-Match": etag})
        assert (again.status_code, again.content) == (304, b"")
    design = load_design()
    derived = {"tokens.css": render_tokens_css(design), "theme.js": render_theme_js(design)}
    expected = derived[name].encode() if name in derived else (PACKAGED / "design" / name).read_bytes()
    assert r.content == expected


@pytest.mark.parametrize(
    "target",
    [
        f"{DESIGN_ASSET_ROUTE}/tokens.yaml",
        f"{DESIGN_ASSET_ROUTE}/nope.css",
        f"{DESIGN_ASSET_ROUTE}/brand/",
        f"{DESIGN_ASSET_ROUTE}/brand/../tokens.yaml",
        f"{DESIGN_ASSET_ROUTE}/../design/tokens.yaml",
        f"{DESIGN_ASSET_ROUTE}/%2e%2e/%2e%2e/share/distribution.yaml",
        f"{DESIGN_ASSET_ROUTE}/brand/%2e%2e/tokens.yaml",
        f"{DESIGN_ASSET_ROUTE}/..%2fbase.css",
        f"{DESIGN_ASSET_ROUTE}/%2fetc%2fpasswd",
        f"{DESIGN_ASSET_ROUTE}//etc/passwd",
        f"{DESIGN_ASSET_ROUTE}/base.css%00",
    ],
)
async def test_anything_else_under_the_design_route_is_404(layer_server: str, target: str) -> None:
    r = await raw_request(layer_server, target)
    assert_error(r, 404, "not_found")
    assert b"--svc-" not in r.content


async def test_a_missing_stylesheet_is_500_on_the_route_naming_it(share: Path, layer_server: str) -> None:
    (share / "design" / "base.css").unlink()
    async with httpx.AsyncClient(base_url=layer_server) as http:
        message = assert_error(await http.get(f"{DESIGN_ASSET_ROUTE}/base.css"), 500, "internal")
    assert "SVC_SHARE/design/base.css" in message
    assert str(share) not in message


# The pages wear the design: linked stylesheets, no inline style.


async def test_the_pages_link_the_design_and_carry_no_inline_style(layer_root: Path, layer_server: str) -> None:
    docs = layer_root / "docs"
    docs.mkdir(exist_ok=True)
    (docs / "table.md").write_text("# Table\n\n| name | count |\n|:--|--:|\n| a | 1 |\n")
    async with httpx.AsyncClient(base_url=layer_server) as http:
        pages = [
            await http.get("/", headers={"Accept": "text/html"}),
            await http.get("/docs/"),
            await http.get("/docs/table.md"),
        ]
        for page in pages:
            assert page.status_code == 200, page.text
            assert page.headers["content-security-policy"] == PAGE_CSP
            assert "<style" not in page.text
            assert " style=" not in page.text
            # Scripts by file only: the theme's bootstrap first, then the cockpit's.
            assert re.findall(r"<script[^>]*>", page.text) == [
                f'<script src="{DESIGN_ASSET_ROUTE}/theme.js">',
                '<script src="/cockpit/assets/cockpit.js" defer>',
            ]
            links = re.findall(r'<link rel="stylesheet" href="([^"]+)">', page.text)
            assert links == [f"{DESIGN_ASSET_ROUTE}/{n}" for n in ("tokens.css", "base.css", "kit.css", "cockpit.css")]
            for link in links:
                css = await http.get(link)
                assert (css.status_code, css.headers["content-type"]) == (200, "text/css; charset=utf-8")
    table = pages[2].text
    assert '<th class="align-left">name</th>' in table
    assert '<td class="align-right">1</td>' in table


def test_the_stylesheets_name_colours_only_through_tokens() -> None:
    colour = re.compile(r"#[0-9a-fA-F]{3,8}\b|\b(?:rgb|rgba|hsl|hsla|oklch|oklab|lab|lch)\(")
    for name in ("base.css", "kit.css", "cockpit.css"):
        text = (PACKAGED / "design" / name).read_text()
        assert not colour.search(text), name
        for prop, value in re.findall(r"(?m)^\s*((?:background|border|outline|color)[a-z-]*)\s*:\s*([^;]+);", text):
            if prop.startswith(("border-radius", "border-collapse", "outline-offset")):
                continue
            words = set(re.sub(r"var\(--svc-[a-z0-9-]+(?:,\s*var\(--svc-[a-z0-9-]+\))?\)", "", value).split())
            assert words <= {"0", "1px", "2px", "3px", "solid", "none", "transparent"}, (name, prop, value)
