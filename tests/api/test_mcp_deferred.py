"""`/mcp` built by its first request: nothing is built before one, requests wait for it, none after `stop()`."""

from __future__ import annotations

import threading
from typing import Any, cast

import pytest
import trio
import trio.testing

from svc.api._deferred import DeferredMcp
from svc.api._http import Message
from svc.runtime import Executor

BOUND = 10


class FakeEndpoint:
    """What `DeferredMcp` asks of `McpEndpoint`: `serve` until `stop()`, then answer requests."""

    def __init__(self) -> None:
        self.served = False
        self.stopped = trio.Event()
        self.requests: list[str] = []

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        self.served = True
        task_status.started()
        await self.stopped.wait()

    def stop(self) -> None:
        self.stopped.set()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.requests.append(scope["path"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"endpoint"})


class Gate:
    """A `build` that holds the worker thread until opened, then gives `endpoint`."""

    def __init__(self, endpoint: FakeEndpoint) -> None:
        self.endpoint = endpoint
        self.open = threading.Event()
        self.entered = threading.Event()

    def __call__(self, executor: Executor) -> Any:
        self.entered.set()
        assert self.open.wait(BOUND)
        return self.endpoint


async def ask(app: DeferredMcp, scope_type: str = "http") -> list[Message]:
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    await app({"type": scope_type, "path": "/mcp"}, receive, send)
    return sent


def status(sent: list[Message]) -> int:
    return int(sent[0]["status"])


async def wait_entered(gate: Gate) -> None:
    assert await trio.to_thread.run_sync(gate.entered.wait, BOUND)


NO_EXECUTOR = cast(Executor, object())


def deferred(*, opened: bool) -> tuple[FakeEndpoint, Gate, DeferredMcp]:
    """A fake endpoint, the gate that builds it (already open or not), and the `/mcp` app over them."""
    endpoint = FakeEndpoint()
    gate = Gate(endpoint)
    if opened:
        gate.open.set()
    return endpoint, gate, DeferredMcp(NO_EXECUTOR, build=gate)


async def test_the_first_request_builds_the_endpoint_and_waits_for_it() -> None:
    endpoint, gate, app = deferred(opened=False)
    answers: list[list[Message]] = []
    answered = trio.Event()
    with trio.fail_after(BOUND):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(app.serve)
            await trio.testing.wait_all_tasks_blocked()
            assert not gate.entered.is_set()

            async def one() -> None:
                answers.append(await ask(app))
                answered.set()

            nursery.start_soon(one)
            await wait_entered(gate)
            await trio.testing.wait_all_tasks_blocked()
            assert answers == []
            gate.open.set()
            await answered.wait()
            assert status(await ask(app)) == 200
            app.stop()
    assert status(answers[0]) == 200
    assert endpoint.requests == ["/mcp", "/mcp"]
    assert endpoint.served
    assert endpoint.stopped.is_set()


async def test_stop_before_any_request_builds_nothing() -> None:
    endpoint, gate, app = deferred(opened=True)
    with trio.fail_after(BOUND):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(app.serve)
            await trio.testing.wait_all_tasks_blocked()
            app.stop()
        assert status(await ask(app)) == 503
    assert not gate.entered.is_set()
    assert not endpoint.served


async def test_stop_before_the_endpoint_is_built_never_starts_it() -> None:
    endpoint, gate, app = deferred(opened=False)
    answers: list[list[Message]] = []
    with trio.fail_after(BOUND):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(app.serve)

            async def one(kind: str) -> None:
                answers.append(await ask(app, kind))

            nursery.start_soon(one, "http")
            await wait_entered(gate)
            await trio.testing.wait_all_tasks_blocked()
            app.stop()
            gate.open.set()
        answers.append(await ask(app, "websocket"))
    assert status(answers[0]) == 503
    assert answers[1] == [{"type": "websocket.close", "code": 1008}]
    assert not endpoint.served
    assert endpoint.requests == []


async def test_stop_ends_a_running_endpoint() -> None:
    endpoint, _, app = deferred(opened=True)
    with trio.fail_after(BOUND):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(app.serve)
            assert status(await ask(app)) == 200
            app.stop()
    assert endpoint.stopped.is_set()


async def test_an_endpoint_that_cannot_be_built_answers_500_and_ends_nothing(caplog: pytest.LogCaptureFixture) -> None:
    def broken(executor: Executor) -> Any:
        raise ImportError("no module named 'mcp'")

    app = DeferredMcp(NO_EXECUTOR, build=broken)
    with trio.fail_after(BOUND):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(app.serve)
            sent = await ask(app)
            again = await ask(app)
            app.stop()
    assert status(sent) == 500
    assert status(again) == 500
    assert b"could not be built: ImportError: no module named 'mcp'" in sent[1]["body"]
    assert [r.getMessage() for r in caplog.records if r.name == "svc.server"] == [
        "svc: the MCP endpoint could not be built: ImportError: no module named 'mcp'"
    ]


class SlowStart(FakeEndpoint):
    """An endpoint whose start waits until `go` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.starting = trio.Event()
        self.go = trio.Event()

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        self.starting.set()
        await self.go.wait()
        await super().serve(task_status=task_status)


async def test_stop_while_the_endpoint_starts_ends_it_once_started() -> None:
    endpoint = SlowStart()

    def build(executor: Executor) -> Any:
        return endpoint

    app = DeferredMcp(NO_EXECUTOR, build=build)
    answers: list[list[Message]] = []
    with trio.fail_after(BOUND):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(app.serve)

            async def one() -> None:
                answers.append(await ask(app))

            nursery.start_soon(one)
            await endpoint.starting.wait()
            app.stop()
            endpoint.go.set()
    assert endpoint.served
    assert endpoint.stopped.is_set()
    assert status(answers[0]) == 503
