"""How a cockpit page is made: its data asked of the executor, its HTML rendered from a template, kept live.

A page reads nothing on its own: every fact it shows is the answer of a capability, asked through the one
executor as an HTTP caller would (`Cockpit.ask`), so a page shows exactly what `/api/v1` answers and can never
write the repository. Templates are Jinja2 with autoescaping on; Markdown is rendered with raw HTML off.

Live pages: a page rendered with `live=True` carries its version (`data-svc-version`, also its `ETag`). Its
script asks the same URL again with `X-Svc-Fragment: main` and `If-None-Match`; while the repository
generation, the executions and the mesh state are unchanged the answer is 304 without deriving anything, else
the `<main>` element's new content.
"""

from __future__ import annotations

import html
import json
import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlencode

import jinja2
import markupsafe
import msgspec
import trio
from markdown_it import MarkdownIt
from quart import Response, request

from svc._errors import NotFound, SvcError
from svc.layer import DESIGN_ASSET_ROUTE
from svc.nursery import Engine
from svc.runtime import Actor, Executor

__all__ = [
    "ASSET_ROUTE",
    "FRAGMENT_HEADER",
    "NAVIGATION",
    "PAGE_HEADERS",
    "Cockpit",
    "NavItem",
]

_log = logging.getLogger("svc.cockpit")

#: Where the cockpit's own scripts are served (by exact name, from the package).
ASSET_ROUTE = "/cockpit/assets"
#: The request header a live page's script sends to ask for its `<main>` only.
FRAGMENT_HEADER = "X-Svc-Fragment"
#: svc's pages: styles and scripts from this server only, no inline script or style, no frames, no plugins.
PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}
_HTML = "text/html; charset=utf-8"
_STYLESHEETS = ("tokens.css", "base.css", "kit.css", "cockpit.css")


class NavItem(msgspec.Struct, frozen=True):
    """One entry of the navigation: its section id, label and path."""

    id: str
    label: str
    path: str


NAVIGATION: tuple[NavItem, ...] = (
    NavItem("home", "Home", "/"),
    NavItem("registry", "Registry", "/cockpit"),
    NavItem("plan", "Plan", "/cockpit/plan"),
    NavItem("executions", "Executions", "/cockpit/executions"),
    NavItem("mesh", "Mesh", "/cockpit/mesh"),
    NavItem("objects", "Objects", "/cockpit/objects"),
    NavItem("graphs", "Graphs", "/cockpit/graphs"),
    NavItem("commands", "Commands", "/cockpit/commands"),
    NavItem("docs", "Docs", "/docs/"),
)

_ACTOR = Actor(kind="http", peer="cockpit")


class Cockpit:
    """What every cockpit page needs: the executor to ask, the template environment, Markdown."""

    def __init__(self, executor: Executor, served: frozenset[str]) -> None:
        self.executor = executor
        self.served = served
        self.registry = executor.runtime.registry
        self._pending: dict[tuple[str, str], _PendingCall] = {}
        self.markdown = MarkdownIt("commonmark", {"html": False}).enable("table")
        self.env = jinja2.Environment(
            loader=jinja2.PackageLoader("svc.api.cockpit", "templates"),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            enable_async=False,
        )
        self.env.globals.update(
            navigation=self.navigation,
            design_route=DESIGN_ASSET_ROUTE,
            asset_route=ASSET_ROUTE,
            stylesheets=_STYLESHEETS,
            url=page_url,
            quote=_quote,
        )
        self.env.filters.update(pretty_json=_pretty_json, plural=_plural, count=_count)
        # The shared pieces (`ui.badge`, `ui.facts`, ...) as a global: a live page renders its `main` block
        # alone, where a template's own imports would not be defined.
        self.env.globals["ui"] = self.env.get_template("_macros.html").make_module()

    def navigation(self) -> list[NavItem]:
        """The navigation: every section, Docs only when the checkout has a `docs/` folder to serve."""
        docs = (self.executor.runtime.repository.root / "docs").is_dir()
        return [item for item in NAVIGATION if item.id != "docs" or docs]

    # -- data ---------------------------------------------------------------------------------------

    async def ask(self, capability_id: str, params: Mapping[str, Any] | None = None) -> Any:
        """The answer of a capability to `params`, decoded: what `/api/v1` answers, as plain values.

        Raises:
            SvcError: the capability's refusal (the page shows it as an error page of that status).
        """
        cap = self.registry.get(capability_id)
        if cap is None:
            raise NotFound(f"no capability {capability_id}")
        decoded = self.executor.decode_value(cap, dict(params or {}))
        return msgspec.json.decode(await self.executor.call(cap, decoded, actor=_ACTOR))

    async def ask_or_error(self, capability_id: str, params: Mapping[str, Any] | None = None) -> tuple[Any, str | None]:
        """`ask`, with a refusal returned as its message instead of raised (for a panel that may be empty)."""
        try:
            return await self.ask(capability_id, params), None
        except SvcError as exc:
            return None, exc.message

    async def ask_within(
        self, capability_id: str, params: Mapping[str, Any] | None, seconds: float
    ) -> tuple[Any, str | None, bool]:
        """`ask_or_error` given at most `seconds`: `(answer, refusal, pending)`.

        The call runs as a task of the supervisor, so a slow answer (a first health report renders every
        generated document) goes on after the page was sent: `pending` is True then, the page says so, and
        its next live refresh shows the answer. One call per capability and input is under way at a time.
        """
        key = (capability_id, json.dumps(params or {}, sort_keys=True))
        call = self._pending.get(key)
        if call is None:
            call = _PendingCall()
            self._pending[key] = call

            async def run() -> None:
                try:
                    call.result = await self.ask_or_error(capability_id, params)
                finally:
                    del self._pending[key]
                    call.done.set()

            self.executor.supervisor.start_soon(run, name=f"cockpit {capability_id}")
        with trio.move_on_after(seconds):
            await call.done.wait()
        if call.result is None:
            return None, None, True
        answer, refusal = call.result
        return answer, refusal, False

    def version(self) -> str:
        """The version of everything a live page shows: the generation, the executions, the mesh state."""
        runtime = self.executor.runtime
        engine = self.executor.components.find(Engine)
        executions = engine.store.revision if engine is not None else 0
        return f"g{runtime.generation.value}.x{executions}.m{self._mesh_version()}"

    def _mesh_version(self) -> str:
        from svc.mesh_udp import Mesh

        mesh = self.executor.components.find(Mesh)
        cooperation = mesh.cooperation if mesh is not None else None
        if cooperation is None or not cooperation.active:
            return "0"
        return cooperation.state().digest[:12]

    # -- pages --------------------------------------------------------------------------------------

    def render(
        self,
        template: str,
        *,
        section: str,
        title: str,
        live: bool = False,
        pending: bool = False,
        follow: str | None = None,
        status: int = 200,
        **context: Any,
    ) -> Response:
        """A page of `template` (a full page, or only its `<main>` when a live page's script asks).

        `section` marks the navigation entry of the page; `live` makes the page current without a reload;
        `follow` names the execution (or `*` for all) whose events make it ask at once. A live page with a
        `pending` part carries a version no state has, so its next refresh renders it again.
        """
        tmpl = self.env.get_template(template)
        values = {"section": section, "title": title, "live": live, "follow": follow, **context}
        version = (self.version() + (".pending" if pending else "")) if live else None
        if version is not None:
            values["version"] = version
        headers = dict(PAGE_HEADERS)
        if version is not None:
            headers["ETag"] = f'"{version}"'
        if request.headers.get(FRAGMENT_HEADER) == "main":
            body = "".join(tmpl.blocks["main"](tmpl.new_context(values)))
        else:
            body = tmpl.render(values)
        return Response(body, status=status, content_type=_HTML, headers=headers)

    def unchanged(self) -> Response | None:
        """A 304 when a live page's script already holds the current version (nothing is derived then)."""
        if request.headers.get(FRAGMENT_HEADER) != "main":
            return None
        version = f'"{self.version()}"'
        if version in (tag.strip() for tag in request.headers.get("If-None-Match", "").split(",")):
            return Response(b"", status=304, headers={**PAGE_HEADERS, "ETag": version})
        return None

    def error_page(self, exc: SvcError) -> Response:
        """An error as a page: its status, its code and message, and the way back."""
        tmpl = self.env.get_template("error.html")
        body = tmpl.render(section="", title=f"{exc.status} {exc.code}", live=False, follow=None, error=exc)
        return Response(body, status=exc.status, content_type=_HTML, headers=PAGE_HEADERS)

    def document_html(self, title: str, body: str) -> str:
        """A page around `body`, HTML already made safe (a rendered document of `/docs/`); thread-safe."""
        tmpl = self.env.get_template("document.html")
        return tmpl.render(section="docs", title=title, live=False, follow=None, body=markupsafe.Markup(body))

    def markdown_html(self, text: str) -> str:
        """Markdown as HTML with raw HTML off (what a document says is shown, never run)."""
        rendered: str = self.markdown.render(text)
        return rendered


class _PendingCall:
    """A capability call of a page under way: its result once done."""

    def __init__(self) -> None:
        self.done = trio.Event()
        self.result: tuple[Any, str | None] | None = None


def page_url(path: str, /, **params: Any) -> str:
    """`path` with the query of the given parameters (None and empty values left out)."""
    query = urlencode([(k, v) for k, v in params.items() if v not in (None, "")], doseq=True)
    return f"{path}?{query}" if query else path


def _quote(value: str) -> str:
    return quote(value, safe="")


def _pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _count(n: int) -> str:
    return f"{n:,}"


def escape(text: str) -> str:
    """HTML-escape text (for the few strings built outside templates)."""
    return html.escape(text)
