"""The pages built by their first request: nothing before one, their lifespan run inside the server's."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import SimpleNamespace
from typing import Any, cast

import pytest
import trio
import trio.testing

from svc.api._deferred import DeferredPages
from svc.api._http import Message
from svc.runtime import Executor

BOUND = 10
NO_EXECUTOR = cast(Executor, object())


class FakePages:
    """A page app: its lifespan events and the paths it answered, in order."""

    def __init__(self, *, startup: str = "lifespan.startup.complete") -> None:
        self.startup = startup
        self.events: list[str] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                self.events.append(message["type"])
                if message["type"] == "lifespan.startup":
                    await send({"type": self.startup, "message": "no database"})
                else:
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        self.events.append(f"{scope['type']} {scope['path']}")
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"page"})


class Gate:
    """A `load` that holds the worker thread until opened, then gives a module whose `build_pages` is `pages`."""

    def __init__(self, pages: FakePages) -> None:
        self.pages = pages
        self.made: list[tuple[Executor, frozenset[str]]] = []
        self.open = threading.Event()
        self.entered = threading.Event()

    def __call__(self) -> Any:
        self.entered.set()
        assert self.open.wait(BOUND)

        def build_pages(executor: Executor, served: frozenset[str]) -> FakePages:
            self.made.append((executor, served))
            return self.pages

        return SimpleNamespace(build_pages=build_pages)


def deferred(pages: FakePages, *, opened: bool) -> tuple[Gate, DeferredPages]:
    gate = Gate(pages)
    if opened:
        gate.open.set()
    return gate, DeferredPages(NO_EXECUTOR, frozenset({"api"}), load=gate)


async def ask(app: DeferredPages, scope_type: str = "http", path: str = "/") -> list[Message]:
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    await app({"type": scope_type, "path": path}, receive, send)
    return sent


class ServerLifespan:
    """The server's side of the app's lifespan: startup sent at once, shutdown when `end()` is called."""

    def __init__(self) -> None:
        self.received: list[str] = []
        self._to_app, self._app_receives = trio.open_memory_channel[Message](2)
        self.started = trio.Event()
        self.ended = trio.Event()

    async def run(self, app: DeferredPages) -> None:
        async def send(message: Message) -> None:
            self.received.append(message["type"])
            if message["type"] == "lifespan.startup.complete":
                self.started.set()

        await self._to_app.send({"type": "lifespan.startup"})
        await app({"type": "lifespan"}, self._app_receives.receive, send)
        self.ended.set()

    async def end(self) -> None:
        await self._to_app.send({"type": "lifespan.shutdown"})
        await self.ended.wait()


@asynccontextmanager
async def serving(app: DeferredPages) -> AsyncIterator[tuple[trio.Nursery, ServerLifespan]]:
    """A nursery running the server's lifespan of `app`, once its startup completed."""
    server = ServerLifespan()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(server.run, app)
        await server.started.wait()
        yield nursery, server


async def wait_entered(gate: Gate) -> None:
    assert await trio.to_thread.run_sync(gate.entered.wait, BOUND)


def asking(nursery: trio.Nursery, app: DeferredPages, answers: list[list[Message]], path: str = "/") -> trio.Event:
    """Ask `app` for `path` in a task of `nursery`; the answer goes to `answers`, then the event is set."""
    answered = trio.Event()

    async def one() -> None:
        answers.append(await ask(app, path=path))
        answered.set()

    nursery.start_soon(one)
    return answered


async def test_the_first_page_request_builds_the_pages_and_their_lifespan_runs_inside_the_servers() -> None:
    pages = FakePages()
    gate, app = deferred(pages, opened=False)
    answers: list[list[Message]] = []
    with trio.fail_after(BOUND):
        async with serving(app) as (nursery, server):
            await trio.testing.wait_all_tasks_blocked()
            assert not gate.entered.is_set()
            answered = asking(nursery, app, answers, "/docs/")
            await wait_entered(gate)
            await trio.testing.wait_all_tasks_blocked()
            assert answers == []
            gate.open.set()
            await answered.wait()
            answers.append(await ask(app, path="/cockpit"))
            await server.end()
    assert [a[0]["status"] for a in answers] == [200, 200]
    assert pages.events == ["lifespan.startup", "http /docs/", "http /cockpit", "lifespan.shutdown"]
    assert gate.made == [(NO_EXECUTOR, frozenset({"api"}))]
    assert server.received == ["lifespan.startup.complete", "lifespan.shutdown.complete"]


async def test_a_server_that_no_page_was_asked_of_builds_nothing_and_then_answers_503() -> None:
    pages = FakePages()
    gate, app = deferred(pages, opened=True)
    with trio.fail_after(BOUND):
        async with serving(app) as (_, server):
            await server.end()
        http = await ask(app)
        websocket = await ask(app, "websocket")
    assert not gate.entered.is_set()
    assert pages.events == []
    assert http[0]["status"] == 503
    assert b"the server is stopping" in http[1]["body"]
    assert websocket[0] == {"type": "websocket.http.response.start", "status": 503, "headers": websocket[0]["headers"]}


async def test_the_servers_shutdown_while_the_pages_load_never_starts_them() -> None:
    pages = FakePages()
    gate, app = deferred(pages, opened=False)
    answers: list[list[Message]] = []
    with trio.fail_after(BOUND):
        async with serving(app) as (nursery, server):
            asking(nursery, app, answers)
            await wait_entered(gate)
            await trio.testing.wait_all_tasks_blocked()
            await server.end()
            gate.open.set()
    assert answers[0][0]["status"] == 503
    assert gate.made == []
    assert pages.events == []


async def test_pages_that_cannot_be_loaded_answer_500_and_the_server_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    def broken() -> Any:
        raise ImportError("no module named 'quart'")

    app = DeferredPages(NO_EXECUTOR, frozenset(), load=broken)
    with trio.fail_after(BOUND):
        async with serving(app) as (_, server):
            sent = await ask(app)
            again = await ask(app)
            await server.end()
    assert [sent[0]["status"], again[0]["status"]] == [500, 500]
    assert b"the pages could not be built: ImportError: no module named 'quart'" in sent[1]["body"]
    assert [r.getMessage() for r in caplog.records if r.name == "svc.server"] == [
        "svc: the pages could not be built: ImportError: no module named 'quart'"
    ]
    assert server.received == ["lifespan.startup.complete", "lifespan.shutdown.complete"]


async def test_pages_whose_lifespan_fails_to_start_answer_500(caplog: pytest.LogCaptureFixture) -> None:
    pages = FakePages(startup="lifespan.startup.failed")
    _, app = deferred(pages, opened=True)
    with trio.fail_after(BOUND):
        async with serving(app) as (_, server):
            sent = await ask(app)
            await server.end()
    assert sent[0]["status"] == 500
    assert b"the pages could not be built: RuntimeError: no database" in sent[1]["body"]
    assert "http /" not in pages.events


def test_serving_http_imports_neither_the_mcp_sdk_nor_the_pages_stack() -> None:
    code = (
        "import sys\n"
        "import svc.host._serve, svc.api._server, svc.api\n"
        "stacks = ('mcp', 'mcp_types', 'pydantic', 'quart', 'flask', 'jinja2', 'markdown_it', 'svc.api._pages')\n"
        "print(sorted(m for m in stacks if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"
