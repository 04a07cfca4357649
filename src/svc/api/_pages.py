"""The pages of the server (not capabilities): home, `/api/v1`, `/openapi.json`, `/swagger`, `/docs/`.

A quart-trio app. Every failure is the same ErrorBody the capability routes send.
"""

from __future__ import annotations

import functools
import hashlib
import html
import logging
import mimetypes
import os
import secrets
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import msgspec
import trio
from markdown_it import MarkdownIt
from quart import Response, request
from quart_trio import QuartTrio

from svc._errors import Internal, MethodNotAllowed, NotFound, SvcError, Unavailable
from svc._gc import gc_paused
from svc._version import __version__
from svc.api._http import error_response
from svc.api.cockpit import PAGE_HEADERS, Cockpit, mount
from svc.api.cockpit._home import home_page
from svc.layer import (
    DESIGN_ASSET_ROUTE,
    Unreadable,
    check_repository_dir,
    design_asset,
    read_repository_file,
    run_git,
)
from svc.runtime import Executor, Runtime
from svc.surfaces import SERVER_ROUTES, ServerRoute, openapi_json, server_route

__all__ = ["SURFACES", "HomeDocument", "build_pages", "home_document"]

_log = logging.getLogger("svc.pages")
_SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
#: svc's own pages (home, `/docs/`) and the design's files: styles come from the design's stylesheets only.
_PAGE_HEADERS = {
    **_SECURITY_HEADERS,
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'",
}
_SWAGGER_FILES = frozenset(
    {"swagger-ui-bundle.js", "swagger-ui.css", "svc-swagger.js", "favicon-32x32.png", "LICENSE", "NOTICE"}
)
_HTML = "text/html; charset=utf-8"
#: Documents rendered at once (each in a worker thread; Markdown rendering is CPU-bound).
_RENDERS = 2
#: The largest Markdown document rendered to HTML; a larger one (up to the 4 MiB reading limit) is sent as text.
RENDER_LIMIT = 1024 * 1024
#: Makes a page of a title and safe HTML (the cockpit's frame around a document of `/docs/`).
PageMaker = Callable[[str, str], str]
#: What the home page offers: every server route but the home page itself.
SURFACES: tuple[ServerRoute, ...] = tuple(r for r in SERVER_ROUTES if r.path != "/")


class Surface(msgspec.Struct, frozen=True, kw_only=True):
    """One surface of the home page: a server route, and whether this process serves it (`ready`)."""

    id: str
    title: str
    path: str
    category: str
    visibility: Literal["public"] = "public"
    kind: Literal["route"] = "route"
    ready: bool
    #: Why it cannot serve (null when `ready`): not served by this process, or nothing to serve here.
    reason: str | None = None


class HomeDocument(msgspec.Struct, frozen=True, kw_only=True):
    """The JSON answer of `GET /`: what this server is, the checkout it serves, and every surface it offers."""

    name: Literal["svc"] = "svc"
    version: str
    commit: str | None
    dirty: bool | None
    stale: bool
    description: str
    reference: str
    repository: str
    repository_id: str
    git_repository_id: str | None
    linked_worktree: bool
    layer: bool
    surfaces: list[Surface]
    leaseholder: bool | None


class ApiRoute(msgspec.Struct, frozen=True, kw_only=True):
    """One capability route of `GET /api/v1`."""

    method: str
    path: str
    capability: str
    title: str


class ApiIndex(msgspec.Struct, frozen=True, kw_only=True):
    """The JSON answer of `GET /api/v1`: every capability route, and where their OpenAPI document is."""

    description: str
    openapi: str
    swagger: str
    routes: list[ApiRoute]


def _json_response(data: Any, status: int = 200) -> Response:
    return Response(msgspec.json.encode(data), status=status, content_type="application/json")


def _error(exc: SvcError) -> Response:
    status, headers, body = error_response(exc)
    return Response(body, status=status, headers={k.decode(): v.decode() for k, v in headers})


@functools.cache
def _git_repository_id(common_dir: str | None) -> str | None:
    if common_dir is None:
        return None
    return hashlib.sha256(b"svc-git/v1\n" + common_dir.encode()).hexdigest()[:32]


@functools.cache
def _source_dirty() -> bool | None:
    source = Path(__file__).resolve().parents[3]
    if not (source / ".git").exists():
        return None
    out = run_git(source, "status", "--porcelain", "--untracked-files=no", timeout=5)
    return None if out is None else bool(out.strip())


def home_document(runtime: Runtime, served: frozenset[str]) -> HomeDocument:
    """The answer of `GET /`; `served` names the surfaces this process serves (the others are not `ready`)."""
    repo = runtime.repository
    common = str(repo.common_dir) if repo.common_dir is not None else None
    return HomeDocument(
        version=__version__,
        commit=runtime.commit,
        dirty=_source_dirty(),
        stale=runtime.stale(),
        description="The capability registry of this repository's AI layer, on 127.0.0.1.",
        reference=server_route("api").path,
        repository=repo.name,
        repository_id=repo.id,
        git_repository_id=_git_repository_id(common),
        linked_worktree=repo.git_dir is not None and repo.git_dir != repo.common_dir,
        layer=repo.has_layer,
        surfaces=[_surface(r, served, repo.root) for r in SURFACES],
        leaseholder=runtime.server.leaseholder,
    )


def _surface(route: ServerRoute, served: frozenset[str], root: Path) -> Surface:
    """A surface and its real state: served by this process, and with something to serve in this checkout."""
    reason: str | None = None
    if route.id not in served:
        reason = "not served by this process"
    elif route.id == "docs" and not (root / "docs").is_dir():
        reason = "this checkout has no docs/ folder"
    return Surface(
        id=route.id, title=route.title, path=route.path, category=route.category, ready=reason is None, reason=reason
    )


def _wants_html() -> bool:
    accept = request.headers.get("Accept", "")
    return "text/html" in accept


def build_pages(executor: Executor, served: frozenset[str]) -> QuartTrio:
    """The page app of one executor's runtime, the cockpit's pages included; `served` names the surfaces."""
    runtime = executor.runtime
    app = QuartTrio("svc", static_folder=None)
    cockpit = Cockpit(executor, served)
    app.config["MAX_CONTENT_LENGTH"] = 1024 * 1024
    app.url_map.merge_slashes = False
    markdown = MarkdownIt("commonmark", {"html": False}).enable("table")
    renders = trio.CapacityLimiter(_RENDERS)
    swagger = resources.files("svc.api") / "static" / "swagger"

    def failure(exc: SvcError) -> Response:
        # A person's browser gets the error as a page; every other client the ErrorBody.
        return cockpit.error_page(exc) if _wants_html() else _error(exc)

    @app.errorhandler(404)
    async def not_found(_: Exception) -> Response:
        return failure(NotFound(f"no route {request.path}; see / and /api/v1"))

    @app.errorhandler(405)
    async def not_allowed(_: Exception) -> Response:
        return _error(MethodNotAllowed(f"{request.path} answers GET, not {request.method}", allow=("GET",)))

    @app.errorhandler(SvcError)
    async def svc_error(exc: SvcError) -> Response:
        return failure(exc)

    @app.errorhandler(500)
    async def internal(exc: Exception) -> Response:
        correlation = "c-" + secrets.token_hex(4)
        _log.error("page %s failed (correlation id %s)", request.path, correlation, exc_info=exc)
        return _error(Internal(f"internal error (correlation id {correlation})"))

    @app.get("/")
    async def home() -> Response:
        doc = home_document(runtime, served)
        return await home_page(cockpit, doc) if _wants_html() else _json_response(doc)

    @app.get("/api/v1")
    async def api_index() -> Response:
        routes = [
            ApiRoute(method=c.exposure.http.method, path=c.exposure.http.path, capability=c.id, title=c.title)
            for c in runtime.registry.capabilities
            if c.exposure.http is not None
        ]
        return _json_response(
            ApiIndex(
                description="Every capability route of this server; each operationId is a capability id.",
                openapi=server_route("openapi").path,
                swagger=server_route("swagger").path,
                routes=sorted(routes, key=lambda r: (r.path, r.method)),
            )
        )

    @app.get("/openapi.json")
    async def openapi() -> Response:
        return Response(openapi_json(runtime.registry), content_type="application/json")

    @app.get("/swagger")
    async def swagger_page() -> Response:
        body = (
            "<!doctype html><html lang=en><head><meta charset=utf-8><title>svc — Swagger UI</title>"
            "<link rel=stylesheet href=/swagger/assets/swagger-ui.css>"
            "<link rel=icon href=/swagger/assets/favicon-32x32.png></head><body><div id=swagger-ui></div>"
            "<script src=/swagger/assets/swagger-ui-bundle.js></script>"
            "<script src=/swagger/assets/svc-swagger.js></script></body></html>"
        )
        return Response(body, content_type="text/html; charset=utf-8", headers=_SECURITY_HEADERS)

    @app.get("/swagger/assets/<name>")
    async def swagger_asset(name: str) -> Response:
        if name not in _SWAGGER_FILES:
            raise NotFound(f"no Swagger UI asset {name!r}")
        data = (swagger / name).read_bytes()
        kind = mimetypes.guess_type(name)[0] or "text/plain"
        headers = {**_SECURITY_HEADERS, "Cache-Control": "public, max-age=86400"}
        return Response(data, content_type=kind, headers=headers)

    @app.get(f"{DESIGN_ASSET_ROUTE}/<path:name>")
    async def design_file(name: str) -> Response:
        # `design_asset` serves a file only by its exact name, never a path from the request joined to a directory.
        asset = await trio.to_thread.run_sync(design_asset, name)
        etag = '"' + hashlib.sha256(asset.body).hexdigest()[:32] + '"'
        headers = {**_PAGE_HEADERS, "Cache-Control": "no-cache", "ETag": etag}
        if etag in (tag.strip() for tag in request.headers.get("If-None-Match", "").split(",")):
            return Response(b"", status=304, headers=headers)
        return Response(asset.body, content_type=asset.media_type, headers=headers)

    @app.get("/docs")
    async def docs_root() -> Response:
        return Response("", status=308, headers={"Location": "/docs/"})

    @app.get("/docs/")
    @app.get("/docs/<path:rel>")
    async def docs(rel: str = "") -> Response:
        root = runtime.repository.root
        body, kind = await trio.to_thread.run_sync(
            _docs_document, root, markdown, cockpit.document_html, rel, limiter=renders
        )
        return Response(body, content_type=kind, headers=PAGE_HEADERS)

    mount(app, cockpit)
    return app


def _docs_document(root: Path, markdown: MarkdownIt, page: PageMaker, rel: str) -> tuple[str | bytes, str]:
    """The body and type of `docs/<rel>` (blocking: run in a worker thread; rendering is CPU-bound).

    Files are read under the reading rule with `docs/` as the boundary: a FIFO, a device, a symlink leaving
    `docs/` or anything else that is no regular file is 404, a file over 4 MiB is 503 `unavailable`.

    Raises:
        NotFound: no document at `rel`.
        Unavailable: the document is over the size limit.
    """
    parts = [p for p in rel.split("/") if p]
    if rel.startswith("/") or "//" in rel or any(p in ("..", ".") for p in parts) or "\\" in rel or "\0" in rel:
        raise NotFound(f"no document {rel!r}")
    missing = NotFound(f"no document docs/{rel}")
    try:
        docs = check_repository_dir(root, root / "docs")
        target = docs.joinpath(*parts)
        if os.path.isdir(target):
            directory = check_repository_dir(docs, target)
            for index in ("README.md", "index.md"):
                try:
                    return _markdown(markdown, page, read_repository_file(docs, directory / index), index, rel)
                except FileNotFoundError:
                    continue
            return _listing_html(page, docs, directory), _HTML
        data = read_repository_file(docs, target)
    except Unreadable as exc:
        if exc.too_large:
            raise Unavailable(f"docs/{rel} cannot be served: {exc.reason}") from None
        raise missing from None
    except (OSError, ValueError):
        raise missing from None
    if target.suffix == ".md":
        return _markdown(markdown, page, data, target.name, rel)
    return data, mimetypes.guess_type(target.name)[0] or "application/octet-stream"


def _markdown(markdown: MarkdownIt, page: PageMaker, data: bytes, name: str, rel: str) -> tuple[str | bytes, str]:
    """A Markdown document as an HTML page, or as its text when it is over `RENDER_LIMIT`.

    The cyclic garbage collector is paused while rendering: the render allocates a great many acyclic
    objects, and the collections they would trigger stall every thread (the event loop's `/live` included).
    """
    if len(data) > RENDER_LIMIT:
        return data, "text/plain; charset=utf-8"
    text = data.decode("utf-8", "replace")
    title = next((line[2:].strip() for line in text.splitlines() if line.startswith("# ")), name)
    crumbs = f"<p class=svc-breadcrumbs><a href='/docs/'>docs</a> / {html.escape(rel)}</p>"
    with gc_paused():
        rendered = _render(markdown, text)
    return page(title, crumbs + rendered), _HTML


def _render(markdown: MarkdownIt, text: str) -> str:
    """Markdown to HTML, a table column's alignment as a class (`align-right`): the pages allow no inline style."""
    tokens = markdown.parse(text)
    for token in tokens:
        style = token.attrGet("style") if token.type in ("th_open", "td_open") else None
        if isinstance(style, str) and style.startswith("text-align:"):
            token.attrs.pop("style")
            token.attrSet("class", "align-" + style.partition(":")[2].strip())
    rendered: str = markdown.renderer.render(tokens, markdown.options, {})
    return rendered


def _listing_html(page: PageMaker, root: Path, directory: Path) -> str:
    items = []
    for child in sorted(directory.iterdir()):
        if child.name.startswith("."):
            continue
        rel = child.relative_to(root).as_posix() + ("/" if child.is_dir() else "")
        items.append(f"<li><a href='/docs/{html.escape(rel)}'>{html.escape(rel)}</a></li>")
    heading = directory.relative_to(root).as_posix()
    return page("docs", f"<h1>docs/{html.escape('' if heading == '.' else heading)}</h1><ul>{''.join(items)}</ul>")
