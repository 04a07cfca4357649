"""The pages of a real server: home, `/api/v1`, `/openapi.json`, Swagger UI and the repository's `docs/`.

Pairs with `src/svc/api/_pages.py`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import httpx
import pytest
import trio

from svc import __version__
from svc.api._pages import RENDER_LIMIT
from svc.api.cockpit import PAGE_HEADERS
from svc.capabilities import builtin_registry
from svc.layer import checkout_id
from svc.registry import Registry
from svc.surfaces import openapi_json
from tests.api._wire import assert_error, raw_request, websocket_upgrade
from tests.api.conftest import SECRET, open_executor, serving

#: svc's own pages take scripts and styles from this server's files only; the Swagger UI shell allows inline styles.
CSP = PAGE_HEADERS["Content-Security-Policy"]
SWAGGER_CSP = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'"
SURFACE_PATHS = {"/api/v1", "/openapi.json", "/swagger", "/docs/", "/mcp", "/events", "/cockpit"}
HOME_FIELDS = {
    "name",
    "version",
    "commit",
    "dirty",
    "stale",
    "description",
    "reference",
    "repository",
    "repository_id",
    "git_repository_id",
    "linked_worktree",
    "surfaces",
    "leaseholder",
}


def assert_hardened(response: httpx.Response, csp: str = CSP) -> None:
    assert response.headers["content-security-policy"] == csp
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "no-referrer"


def expected_routes(registry: Registry) -> list[dict[str, str]]:
    routes = [
        {"method": c.exposure.http.method, "path": c.exposure.http.path, "capability": c.id, "title": c.title}
        for c in registry.capabilities
        if c.exposure.http is not None
    ]
    return sorted(routes, key=lambda r: (r["path"], r["method"]))


# Home.


@pytest.mark.parametrize("accept", [None, "*/*", "application/json", "application/json, */*;q=0.5"])
async def test_home_answers_json_unless_html_is_named(client: httpx.AsyncClient, accept: str | None) -> None:
    r = await client.get("/", headers={} if accept is None else {"Accept": accept})
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json"
    home = r.json()
    assert set(home) >= HOME_FIELDS
    assert home["name"] == "svc"
    assert home["version"] == __version__
    assert home["reference"] == "/api/v1"
    assert {s["path"] for s in home["surfaces"]} == SURFACE_PATHS
    for surface in home["surfaces"]:
        assert {"id", "title", "path", "category", "visibility", "kind", "ready"} <= set(surface)


MCP_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "tests", "version": "0"}},
}


async def test_every_surface_the_home_calls_ready_answers(client: httpx.AsyncClient, server: str) -> None:
    surfaces = (await client.get("/")).json()["surfaces"]
    ready = {s["path"]: s["category"] for s in surfaces if s["ready"]}
    assert {"/api/v1", "/openapi.json", "/swagger", "/docs/", "/events"} <= set(ready)
    for path, category in ready.items():
        if category == "stream":
            assert (await client.get(path)).status_code == 426, path
            assert (await websocket_upgrade(server, path)).status_code == 101, path
        elif category == "mcp":
            accept = {"Accept": "application/json, text/event-stream"}
            r = await client.post(path, json=MCP_INITIALIZE, headers=accept)
            assert r.status_code == 200, (path, r.text)
        else:
            assert (await client.get(path)).status_code == 200, path


async def test_home_names_the_checkout_and_never_its_path(docs_client: httpx.AsyncClient, docs_checkout: Path) -> None:
    home = (await docs_client.get("/")).json()
    assert home["repository"] == docs_checkout.name
    assert home["repository_id"] == checkout_id(docs_checkout)
    assert home["git_repository_id"] is None
    assert home["linked_worktree"] is False
    assert str(docs_checkout) not in (await docs_client.get("/")).text


@pytest.mark.parametrize("accept", ["text/html", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"])
async def test_home_answers_html_when_asked_for(client: httpx.AsyncClient, accept: str) -> None:
    r = await client.get("/", headers={"Accept": accept})
    assert r.status_code == 200
    assert r.headers["content-type"] == "text/html; charset=utf-8"
    assert_hardened(r)
    assert r.text.startswith("<!doctype html>")
    for path in SURFACE_PATHS - {"/mcp", "/events"}:
        assert f'href="{path}"' in r.text, path
    for path in ("/mcp", "/events"):
        assert f"<code>{path}</code>" in r.text, path
    # Scripts only by file from this server: no inline script, no handler attribute.
    assert re.findall(r"<script[^>]*>", r.text) == [
        '<script src="/cockpit/assets/design/theme.js">',
        '<script src="/cockpit/assets/cockpit.js" defer>',
    ]
    assert not re.search(r"\son[a-z]+=", r.text)
    assert "style=" not in r.text


# The capability registry over HTTP.


async def test_api_index_lists_every_route_of_the_builtin_registry(client: httpx.AsyncClient) -> None:
    r = await client.get("/api/v1")
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json"
    index = r.json()
    assert index["openapi"] == "/openapi.json"
    assert index["swagger"] == "/swagger"
    assert index["description"]
    assert index["routes"] == expected_routes(builtin_registry())


async def test_api_index_lists_the_routes_of_the_served_registry(
    demo_client: httpx.AsyncClient, demo_registry: Registry
) -> None:
    routes = (await demo_client.get("/api/v1")).json()["routes"]
    assert routes == expected_routes(demo_registry)
    assert {r["capability"] for r in routes} == {
        "demo.probe",
        "demo.echo",
        "demo.crash",
        "demo.raise",
        "demo.write",
    }


async def test_openapi_is_the_rendered_document_byte_for_byte(client: httpx.AsyncClient) -> None:
    r = await client.get("/openapi.json")
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json"
    assert r.content == openapi_json(builtin_registry())
    assert r.json()["openapi"] == "3.1.0"


async def test_openapi_is_rendered_from_the_served_registry(
    demo_client: httpx.AsyncClient, demo_registry: Registry
) -> None:
    r = await demo_client.get("/openapi.json")
    assert r.content == openapi_json(demo_registry)
    operations = {op["operationId"] for path in r.json()["paths"].values() for op in path.values()}
    assert operations == {"demo.probe", "demo.echo", "demo.crash", "demo.raise", "demo.write"}


# Swagger UI, offline.


def references(html: str) -> list[str]:
    return re.findall(r"""(?:src|href)=['"]?([^'"\s>]+)""", html)


async def test_swagger_is_a_hardened_shell_over_packaged_assets_only(client: httpx.AsyncClient) -> None:
    r = await client.get("/swagger")
    assert r.status_code == 200
    assert r.headers["content-type"] == "text/html; charset=utf-8"
    assert_hardened(r, SWAGGER_CSP)
    assert "http://" not in r.text
    assert "https://" not in r.text
    assert "<script>" not in r.text.replace(" ", "")  # no inline script: the CSP would block it
    refs = references(r.text)
    assert any(ref.endswith(".js") for ref in refs)
    assert any(ref.endswith(".css") for ref in refs)
    for ref in refs:
        assert ref.startswith("/swagger/assets/"), ref


@pytest.mark.parametrize(("suffix", "kind"), [(".js", "javascript"), (".css", "text/css"), (".png", "image/png")])
async def test_every_asset_the_swagger_shell_references_answers(
    client: httpx.AsyncClient, suffix: str, kind: str
) -> None:
    refs = [ref for ref in references((await client.get("/swagger")).text) if ref.endswith(suffix)]
    assert refs
    for ref in refs:
        r = await client.get(ref)
        assert r.status_code == 200, ref
        assert kind in r.headers["content-type"], (ref, r.headers["content-type"])
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.content


async def test_swagger_assets_load_nothing_from_the_network(client: httpx.AsyncClient) -> None:
    starter = (await client.get("/swagger/assets/svc-swagger.js")).text
    assert '"/openapi.json"' in starter
    assert "validatorUrl: null" in starter
    assert not re.search(r"https?://", starter)
    css = (await client.get("/swagger/assets/swagger-ui.css")).text
    assert "@import" not in css
    for target in re.findall(r"url\(\s*['\"]?([^'\")]{0,12})", css):
        assert target.startswith("data:"), target


@pytest.mark.parametrize("name", ["LICENSE", "NOTICE"])
async def test_the_swagger_licence_is_shipped(client: httpx.AsyncClient, name: str) -> None:
    r = await client.get(f"/swagger/assets/{name}")
    assert r.status_code == 200
    assert "swagger" in r.text.lower() or "Apache License" in r.text


@pytest.mark.parametrize("name", ["nope.js", "swagger-ui.js", "index.html", "__init__.py"])
async def test_an_unknown_swagger_asset_is_404(client: httpx.AsyncClient, name: str) -> None:
    r = await client.get(f"/swagger/assets/{name}")
    assert_error(r, 404, "not_found", name)


@pytest.mark.parametrize(
    "target",
    [
        "/swagger/assets/../../_http.py",
        "/swagger/assets/%2e%2e/%2e%2e/_http.py",
        "/swagger/assets/..%2f..%2f_http.py",
        "/swagger/assets/%2e%2e%2f%2e%2e%2f_http.py",
    ],
)
async def test_swagger_assets_refuse_traversal(server: str, target: str) -> None:
    r = await raw_request(server, target)
    assert_error(r, 404, "not_found")
    assert b"SvcApp" not in r.content


# The repository's docs/: Markdown rendered with raw HTML off, nothing outside docs/.


async def test_docs_root_renders_the_readme(docs_client: httpx.AsyncClient) -> None:
    r = await docs_client.get("/docs/")
    assert r.status_code == 200
    assert r.headers["content-type"] == "text/html; charset=utf-8"
    assert_hardened(r)
    assert "<h1>Handbook</h1>" in r.text
    assert '<a href="guide/usage.md">the guide</a>' in r.text


async def test_docs_without_slash_redirects_to_the_folder(docs_client: httpx.AsyncClient) -> None:
    r = await docs_client.get("/docs")
    assert r.status_code == 308
    assert r.headers["location"] == "/docs/"


async def test_markdown_is_rendered_with_raw_html_escaped(docs_client: httpx.AsyncClient) -> None:
    r = await docs_client.get("/docs/guide/usage.md")
    assert r.status_code == 200
    assert r.headers["content-type"] == "text/html; charset=utf-8"
    assert_hardened(r)
    assert "<title>Usage · svc</title>" in r.text
    assert "<h1>Usage</h1>" in r.text
    assert "<code>svc serve</code>" in r.text
    assert "<table>" in r.text
    assert "&lt;script&gt;alert(" in r.text
    assert "&lt;img src=x onerror=" in r.text
    # The document's body runs nothing: the page's only scripts are svc's own files.
    body = r.text.split('<div class="svc-prose">', 1)[1]
    assert "<script" not in body.lower()
    assert "<img" not in body.lower()
    assert "<script" not in r.text.split("</head>", 1)[1].lower()


async def test_other_documents_are_served_with_their_type(docs_client: httpx.AsyncClient) -> None:
    r = await docs_client.get("/docs/notes.txt")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain")
    assert r.text == "plain notes\n"
    assert r.headers["x-content-type-options"] == "nosniff"


async def test_a_symlink_that_stays_inside_docs_is_served(docs_client: httpx.AsyncClient) -> None:
    r = await docs_client.get("/docs/alias.md")
    assert r.status_code == 200
    assert "<h1>Usage</h1>" in r.text


@pytest.mark.parametrize("path", ["/docs/missing.md", "/docs/guide/missing/", "/docs/guide/usage.md/x"])
async def test_a_missing_document_is_404(docs_client: httpx.AsyncClient, path: str) -> None:
    assert_error(await docs_client.get(path), 404, "not_found")


@pytest.mark.parametrize(
    "target",
    [
        "/docs/../pyproject.toml",
        "/docs/../secret.md",
        "/docs/%2e%2e/pyproject.toml",
        "/docs/%2E%2E/pyproject.toml",
        "/docs/..%2fpyproject.toml",
        "/docs/%2e%2e%2fpyproject.toml",
        "/docs/guide/../../pyproject.toml",
        "/docs/guide/%2e%2e/%2e%2e/pyproject.toml",
        "/docs/..",
        "/docs/%2e%2e",
        "/docs/guide%2f..%2f..%2fsecret.md",
        "/docs/..%5csecret.md",
        "/docs/leak.md",
        "/docs/absolute.toml",
        "/docs/up",
        "/docs/up/",
        "/docs/up/pyproject.toml",
        "/docs/up/secret.md",
    ],
)
async def test_nothing_outside_docs_is_served(docs_server: str, target: str) -> None:
    r = await raw_request(docs_server, target)
    assert_error(r, 404, "not_found")
    assert SECRET.encode() not in r.content


@pytest.mark.parametrize(
    "target", ["/docs//etc/passwd", "/docs/%2fetc%2fpasswd", "/docs//secret.md", "/docs/%2F%2e%2e/secret.md"]
)
async def test_an_absolute_document_path_is_404(docs_server: str, target: str) -> None:
    # Not a redirect to a merged-slash URL: the docs route refuses absolute paths itself.
    r = await raw_request(docs_server, target)
    assert_error(r, 404, "not_found")
    assert "location" not in r.headers


@pytest.mark.parametrize("target", ["/docs/notes.txt%00", "/docs/notes.txt%00.md", "/docs/%00"])
async def test_a_nul_byte_in_a_document_path_is_404(docs_server: str, target: str) -> None:
    r = await raw_request(docs_server, target)
    assert_error(r, 404, "not_found")


# The reading rule on docs/: a docs/ that leaves the checkout, and Markdown too large to render.


async def test_a_docs_folder_symlinked_out_of_the_checkout_is_not_served(tmp_path: Path, nursery: trio.Nursery) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "README.md").write_text(f"# Elsewhere\n\n{SECRET}\n")
    root = tmp_path / "checkout"
    root.mkdir()
    os.symlink(outside, root / "docs")
    async with (
        open_executor(builtin_registry(), root) as executor,
        serving(executor, nursery) as url,
        httpx.AsyncClient(base_url=url) as http,
    ):
        for path in ("/docs/", "/docs/README.md"):
            response = await http.get(path)
            assert_error(response, 404, "not_found")
            assert SECRET not in response.text


async def test_markdown_over_the_render_limit_is_sent_as_text(
    docs_client: httpx.AsyncClient, docs_checkout: Path
) -> None:
    (docs_checkout / "docs" / "large.md").write_text("# Large\n\n" + "*x* " * (RENDER_LIMIT // 4))
    response = await docs_client.get("/docs/large.md")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    assert response.text.startswith("# Large\n\n*x* ")
