"""What a browser saw while it showed svc's pages: console errors, page errors, failed and foreign requests.

`PageWatch.attach` listens on a page before it loads anything and routes every request: a request to another
origin than the server's is aborted (svc works offline; a page asking another host is a defect) and recorded.
`problems()` lists everything a clean page must not have; `assert_clean()` fails with that list.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

from playwright.sync_api import ConsoleMessage, Page, Request, Response, Route, WebSocket


def origin(url: str) -> tuple[str, str]:
    """The scheme-free origin of a URL (host and port), so `ws://` and `http://` of one server compare equal."""
    parts = urlsplit(url)
    return parts.hostname or "", str(parts.port or "")


@dataclass
class PageWatch:
    """The problems one page met, recorded from the moment `attach` wired it."""

    server: str
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    bad_responses: list[str] = field(default_factory=list)
    foreign_requests: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    #: Every request, answer, failure and WebSocket frame, with the seconds since `attach`: for failure messages.
    timeline: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)

    @classmethod
    def attach(cls, page: Page, server: str) -> PageWatch:
        """Start watching `page` (before its first navigation); requests to another origin are aborted."""
        watch = cls(server=server)
        page.on("console", watch._console)
        page.on("pageerror", lambda error: watch.page_errors.append(f"{error.name}: {error.message}"))
        page.on("requestfailed", watch._failed)
        page.on("response", watch._response)
        page.on("request", watch._request)
        page.on("websocket", watch._websocket)
        page.on("requestfinished", lambda request: watch._at(f"done {request.method} {request.url}"))
        page.route("**/*", watch._route)
        return watch

    def _at(self, what: str) -> None:
        self.timeline.append(f"{time.monotonic() - self.started:7.2f}s {what}")

    def recent(self, count: int = 20) -> str:
        """The last `count` lines of the timeline, one per line."""
        return "\n".join(self.timeline[-count:])

    def _local(self, url: str) -> bool:
        return url.startswith(("data:", "about:", "blob:")) or origin(url) == origin(self.server)

    def _console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            where = message.location.get("url", "")
            self.console_errors.append(f"{message.text} ({where})")

    def _failed(self, request: Request) -> None:
        self._at(f"failed {request.method} {request.url}: {request.failure}")
        # A page left while a request of it was in flight cancels that request: not a failure of svc.
        if request.failure != "net::ERR_ABORTED" or not self._local(request.url):
            self.failed_requests.append(f"{request.method} {request.url}: {request.failure}")

    def _response(self, response: Response) -> None:
        self._at(
            f"answer {response.status} {response.request.method} {response.url} etag={response.headers.get('etag')}"
        )
        if response.status >= 400:
            self.bad_responses.append(f"{response.request.method} {response.url}: {response.status}")

    def _request(self, request: Request) -> None:
        self.requests.append(request.url)
        self._at(f"ask {request.method} {request.url} if-none-match={request.headers.get('if-none-match')}")
        if not self._local(request.url):
            self.foreign_requests.append(request.url)

    def _websocket(self, socket: WebSocket) -> None:
        self.requests.append(socket.url)
        self._at(f"websocket {socket.url}")
        socket.on("framereceived", lambda frame: self._at(f"frame {str(frame)[:100]}"))
        socket.on("close", lambda _: self._at(f"websocket closed {socket.url}"))
        socket.on("socketerror", lambda error: self._at(f"websocket error {error}"))
        if not self._local(socket.url):
            self.foreign_requests.append(socket.url)

    def _route(self, route: Route) -> None:
        if self._local(route.request.url):
            route.continue_()
        else:
            route.abort("blockedbyclient")

    def problems(self) -> list[str]:
        """Every problem seen, one line each, by family."""
        return [
            *(f"console error: {m}" for m in self.console_errors),
            *(f"page error: {m}" for m in self.page_errors),
            *(f"failed request: {m}" for m in self.failed_requests),
            *(f"answer >= 400: {m}" for m in self.bad_responses),
            *(f"request to another host: {m}" for m in self.foreign_requests),
        ]

    def assert_clean(self, what: str) -> None:
        """Fail listing every problem seen on `what` (a page's path)."""
        problems = self.problems()
        assert not problems, f"{what}:\n  " + "\n  ".join(problems)


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            href = dict(attrs).get("href")
            if href is not None:
                self.hrefs.append(href)


def links(html: str, base: str) -> list[str]:
    """Every `a[href]` of an HTML document, absolute against `base`, fragment removed, in document order."""
    parser = _Links()
    parser.feed(html)
    return [urljoin(base, href).partition("#")[0] for href in parser.hrefs]
