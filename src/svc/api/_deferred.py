"""Parts of the server built by the first request that needs them: `/mcp` and the pages.

The MCP SDK takes about a second to import, the pages' stack (Quart with Flask and Werkzeug, Jinja, Markdown,
the cockpit) about half of one. Built at the start, they would hold back the server's first answer on every
start, whether or not anybody asks for them (or, imported on a worker thread beside the first requests, slow
those as much). So each is a `Deferred`: the first request that needs it has `serve` load it on a worker thread
(the imports), make it on the event loop and run it until `stop()`; requests wait for it meanwhile. A request
that arrives after `stop()` with nothing built is answered 503; one that cannot be built is logged once and
its requests are answered 500 from then on, while the rest of the server goes on serving.
"""

from __future__ import annotations

import importlib
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

import trio

from svc._errors import Internal, SvcError, Unavailable
from svc.api._http import ASGIApp, Message, Receive, Scope, Send, refuse_websocket, send_error

if TYPE_CHECKING:
    from svc.api._mcp_http import McpEndpoint
    from svc.runtime import Executor

__all__ = ["Deferred", "DeferredMcp", "DeferredPages"]

_log = logging.getLogger("svc.server")

_T = TypeVar("_T")


class Deferred(ABC, Generic[_T]):
    """Something requests need, loaded when the first one asks, run from then until `stop()`.

    `load` runs on a worker thread (imports go there); `make` turns what it loaded into the thing on the event
    loop; `run` runs it (`task_status.started()` once it answers) until `halt` ends it.
    """

    #: What it is, for the messages: "the MCP endpoint", "the pages".
    what: ClassVar[str]
    #: The answer (503) to a request that arrives after `stop()`, with nothing built.
    stopping: ClassVar[str]

    def __init__(self, load: Callable[[], Any]) -> None:
        self._load = load
        self._built: _T | None = None
        self._wanted = trio.Event()
        self._settled = trio.Event()
        self._stopped = False
        self._failure: str | None = None

    def make(self, loaded: Any) -> _T:
        """The thing, from what `load` gave (on the event loop)."""
        built: _T = loaded
        return built

    @abstractmethod
    async def run(self, built: _T, *, task_status: trio.TaskStatus[None]) -> None:
        """Run it until `halt(built)`; `task_status.started()` once it answers requests."""

    @abstractmethod
    def halt(self, built: _T) -> None:
        """Have `run` end."""

    async def serve(self) -> None:
        """Once a request asks for it, load it on a worker thread, make it, and run it until `stop()`."""
        try:
            await self._wanted.wait()
            if self._stopped:
                return
            async with trio.open_nursery() as nursery:
                try:
                    loaded = await trio.to_thread.run_sync(self._load, abandon_on_cancel=True)
                    if self._stopped:
                        return
                    built = self.make(loaded)
                    await nursery.start(self.run, built)
                except Exception as exc:
                    self._failure = f"{self.what} could not be built: {type(exc).__name__}: {exc}"
                    _log.exception("svc: %s", self._failure)
                    return
                self._built = built
                self._settled.set()
                if self._stopped:
                    self.halt(built)
        finally:
            self._settled.set()

    def stop(self) -> None:
        """Halt it and refuse further requests (503); one not yet built is never built."""
        self._stopped = True
        if self._built is not None:
            self.halt(self._built)
        self._wanted.set()
        self._settled.set()

    async def built(self) -> _T:
        """It, once it runs (asking for it first).

        Raises:
            Unavailable: stopped before it was built.
            Internal: it could not be built.
        """
        self._wanted.set()
        await self._settled.wait()
        if self._built is None:
            failed = self._failure
            raise Unavailable(self.stopping) if failed is None else Internal(failed)
        return self._built


def _mcp_endpoint(executor: Executor) -> McpEndpoint:
    """`/mcp`'s endpoint, its module (and with it the MCP SDK) imported now."""
    module = importlib.import_module("svc.api._mcp_http")
    endpoint: McpEndpoint = module.McpEndpoint(executor)
    return endpoint


class DeferredMcp(Deferred["McpEndpoint"]):
    """`/mcp`, its endpoint built (on the worker thread, the SDK imported) when the first request asks for it.

    The endpoint's session manager runs until `stop()`. A WebSocket upgrade is refused at once (403), as the
    endpoint refuses it.
    """

    what = "the MCP endpoint"
    stopping = "the MCP endpoint is stopping"

    def __init__(self, executor: Executor, build: Callable[[Executor], McpEndpoint] = _mcp_endpoint) -> None:
        super().__init__(lambda: build(executor))

    async def run(self, built: McpEndpoint, *, task_status: trio.TaskStatus[None]) -> None:
        await built.serve(task_status=task_status)

    def halt(self, built: McpEndpoint) -> None:
        built.stop()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            # /mcp is Streamable HTTP (POST, GET, DELETE): a WebSocket upgrade is refused (403).
            await send({"type": "websocket.close", "code": 1008})
            return
        try:
            endpoint = await self.built()
        except SvcError as exc:
            await send_error(send, exc)
            return
        await endpoint(scope, receive, send)


def _pages_module() -> Any:
    return importlib.import_module("svc.api._pages")


#: The lifespan scope the page app is run with.
_LIFESPAN: Scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}, "state": {}}


class DeferredPages(Deferred[ASGIApp]):
    """The page app (`build_pages`), loaded with the first request for a page, as an ASGI app of its own.

    The server's lifespan runs `serve` (startup completes at once); the page app, once made, runs its own
    lifespan until the server's ends. A WebSocket to a page path goes to the page app like any request.
    """

    what = "the pages"
    stopping = "the server is stopping"

    def __init__(self, executor: Executor, served: frozenset[str], load: Callable[[], Any] = _pages_module) -> None:
        super().__init__(load)
        self._executor = executor
        self._served = served
        self._halted = trio.Event()

    def make(self, loaded: Any) -> ASGIApp:
        app: ASGIApp = loaded.build_pages(self._executor, self._served)
        return app

    async def run(self, built: ASGIApp, *, task_status: trio.TaskStatus[None]) -> None:
        to_app, app_receives = trio.open_memory_channel[Message](1)
        app_sends, from_app = trio.open_memory_channel[Message](1)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(built, dict(_LIFESPAN, state={}), app_receives.receive, app_sends.send)
            await to_app.send({"type": "lifespan.startup"})
            started = await from_app.receive()
            if started["type"] != "lifespan.startup.complete":
                nursery.cancel_scope.cancel()
            else:
                task_status.started()
                await self._halted.wait()
                await to_app.send({"type": "lifespan.shutdown"})
                await from_app.receive()
        if started["type"] != "lifespan.startup.complete":
            raise RuntimeError(started.get("message") or started["type"])

    def halt(self, built: ASGIApp) -> None:
        self._halted.set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        try:
            app = await self.built()
        except SvcError as exc:
            if scope["type"] == "websocket":
                await refuse_websocket(send, exc)
            else:
                await send_error(send, exc)
            return
        await app(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        """The server's lifespan: `serve` from its startup to its shutdown.

        The shutdown stops the page app (its own lifespan ends); pages still loading are abandoned.
        """
        await receive()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.serve)
            await send({"type": "lifespan.startup.complete"})
            await receive()
            self.stop()
            if self._built is None:
                nursery.cancel_scope.cancel()
        await send({"type": "lifespan.shutdown.complete"})
