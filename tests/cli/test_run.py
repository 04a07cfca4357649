"""`svc run`: one execution in the CLI's own process, reported to the server serving the checkout.

In-process tests drive the `Reporter` against a real server on 127.0.0.1 port 0. The end-to-end tests run
`svc serve` and `svc run` as subprocesses (`python -m svc`) with wall-clock bounds, hence `slow`.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
import trio
import trio_websocket

import svc.host._run
from svc.host._run import Reporter
from svc.host._service import open_service
from svc.layer import Repository
from svc.nursery import Engine, Execution, Limits, Subscriber
from svc.runtime import Actor, Executor
from tests.conftest import ROOT, make_checkout
from tests.nursery._probe import retained

SVC = [sys.executable, "-m", "svc"]
ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}
SERVING = re.compile(rb"serving (http://127\.0\.0\.1:[0-9]+)")
TERMINAL = {"execution.completed", "execution.failed", "execution.cancelled"}
#: Wall-clock bounds: starting a Python process that imports svc, and one whole scenario.
START_SECONDS = 60
Message = dict[str, Any]


# -- in process: the reporter against a real server --------------------------------------------------


@asynccontextmanager
async def local_engine() -> AsyncIterator[Engine]:
    """A second service over this checkout, as the CLI process has: its own engine and store."""
    async with open_service(Repository.discover(ROOT), surface="cli", watch=False) as executor:
        yield executor.components.get(Engine)


def start_local(engine: Engine, **input: Any) -> Execution:
    cap = engine.find_capability("executions.demonstrate")
    return engine.start(cap, engine.executor.decode_value(cap, input), actor=Actor(kind="cli", pid=os.getpid()))


async def first_event(subscriber: Subscriber, kind: str) -> Message:
    while True:
        for frame in await subscriber.next_frames():
            event: Message = msgspec.json.decode(frame)
            if event.get("type") == kind:
                return event


async def test_a_reporter_mirrors_its_run_on_the_server_event_for_event(server: str, executor: Executor) -> None:
    served = executor.components.get(Engine)
    async with local_engine() as engine, httpx.AsyncClient() as client:
        x = start_local(engine, steps=3)
        cap = engine.find_capability("executions.demonstrate")
        reporter = Reporter(client, server, engine, x, cap)
        await reporter.run()
        assert x.state == "succeeded"
        assert reporter.through == x.last_sequence
        assert not reporter.gave_up
        mirror = served.store.get(x.id)
        assert mirror.state == "succeeded"
        assert msgspec.to_builtins(retained(mirror)) == msgspec.to_builtins(retained(x))
        view = served.store.view(mirror)
        assert (view.actor.kind, view.actor.pid) == ("cli", os.getpid())
        # Three steps without delay: their elapsed time is whatever the machine took, identical on both sides.
        assert view.output == engine.store.view(x).output
        assert view.output["steps"] == 3
        assert view.output["observed"] is True


@pytest.mark.slow
async def test_a_cancel_asked_on_the_server_reaches_the_reporting_process(
    server: str, executor: Executor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server records the request; the reporter learns it from its next answer (the heartbeat, made
    0.5 s here so that a loaded machine still answers well within the bound)."""
    monkeypatch.setattr(svc.host._run, "HEARTBEAT_SECONDS", 0.5)
    served = executor.components.get(Engine)
    watch, _, _ = served.store.subscribe(None)
    async with local_engine() as engine, httpx.AsyncClient() as client, trio.open_nursery() as nursery:
        x = start_local(engine, steps=1, delay_ms=10000)
        reporter = Reporter(client, server, engine, x, engine.find_capability("executions.demonstrate"))
        nursery.start_soon(reporter.run)
        await first_event(watch, "execution.step.started")
        answer = await client.post(server + "/api/v1/executions/cancel", json={"id": x.id})
        assert (answer.json()["outcome"], answer.json()["execution"]["state"]) == ("requested", "running")
        with trio.fail_after(8):
            await first_event(watch, "execution.cancelled")
        assert x.state == "cancelled"
        mirror = served.store.get(x.id)
        assert mirror.state == "cancelled"
        cancelling = [e for e in retained(mirror) if e.type == "execution.cancelling"]
        assert [e.data for e in cancelling] == [{"by": "server"}]
    served.store.unsubscribe(watch)


# -- subprocesses ------------------------------------------------------------------------------------


@dataclass
class Process:
    """A running `python -m svc …` and what it wrote so far."""

    process: trio.Process
    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)
    wrote: trio.Event = field(default_factory=trio.Event)

    async def drain(self, stream: trio.abc.ReceiveStream | None, into: bytearray) -> None:
        assert stream is not None
        while chunk := await stream.receive_some(65536):
            into += chunk
            self.wrote.set()
            self.wrote = trio.Event()
        self.wrote.set()

    async def stderr_match(self, pattern: re.Pattern[bytes]) -> re.Match[bytes]:
        """Wait until stderr matches `pattern`."""
        while (match := pattern.search(self.stderr)) is None:
            assert self.process.returncode is None, bytes(self.stderr)
            await self.wrote.wait()
        return match


@asynccontextmanager
async def svc_process(*args: str, cwd: Path) -> AsyncIterator[Process]:
    """Run `python -m svc ARGS` in `cwd`, its output drained in the background; killed if still running."""
    process = await trio.lowlevel.open_process(
        [*SVC, *args], cwd=cwd, env=ENV, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    running = Process(process)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(running.drain, process.stdout, running.stdout)
            nursery.start_soon(running.drain, process.stderr, running.stderr)
            try:
                yield running
            finally:
                if process.returncode is None:
                    process.kill()
    finally:
        with trio.CancelScope(shield=True):
            await process.wait()


@asynccontextmanager
async def svc_serve(checkout: Path) -> AsyncIterator[str]:
    """`svc serve --port 0` in `checkout`; yields its URL once logged.

    The lease exists before the server binds (its URL follows the log line at once, and `svc run` waits up to
    2 s for it), so a `svc run` started now finds this server.
    """
    async with svc_process("serve", "--port", "0", cwd=checkout) as served:
        with trio.fail_after(START_SECONDS):
            match = await served.stderr_match(SERVING)
        try:
            yield match[1].decode()
        finally:
            served.process.send_signal(signal.SIGTERM)
            with trio.move_on_after(10):
                await served.process.wait()


async def next_event(ws: trio_websocket.WebSocketConnection, execution_id: str | None = None) -> Message:
    """The next execution event on `ws` (of one execution when given)."""
    while True:
        frame: Message = msgspec.json.decode(await ws.get_message())
        if "sequence" in frame and execution_id in (None, frame["execution_id"]):
            return frame


async def until(ws: trio_websocket.WebSocketConnection, execution_id: str, kinds: set[str]) -> list[Message]:
    seen: list[Message] = []
    while not seen or seen[-1]["type"] not in kinds:
        seen.append(await next_event(ws, execution_id))
    return seen


@pytest.fixture
def run_checkout(tmp_path: Path) -> Path:
    """A checkout with svc's layer, for a server and `svc run` processes."""
    return make_checkout(tmp_path / "c")


@pytest.mark.slow
@pytest.mark.bound(180)
async def test_svc_run_shows_up_live_in_the_list_and_on_events_and_ends_succeeded(run_checkout: Path) -> None:
    async with svc_serve(run_checkout) as url, httpx.AsyncClient(base_url=url) as http:
        async with trio_websocket.open_websocket_url(
            url.replace("http", "ws") + "/events", message_queue_size=4096, disconnect_timeout=2
        ) as ws:
            assert msgspec.json.decode(await ws.get_message())["type"] == "stream.ready"
            run_input = json.dumps({"steps": 3, "delay_ms": 300})
            async with svc_process(
                "run", "executions.demonstrate", "--input", run_input, "--json", cwd=run_checkout
            ) as run:
                with trio.fail_after(START_SECONDS):
                    first = await next_event(ws)
                execution_id = first["execution_id"]
                assert (first["sequence"], first["type"]) == (1, "execution.created")
                with trio.fail_after(10):
                    events = [first, *await until(ws, execution_id, {"execution.step.started"})]
                listing = (await http.get("/api/v1/executions")).json()
                (shown,) = [x for x in listing["executions"] if x["id"] == execution_id]
                assert shown["state"] == "running"
                assert shown["actor"] == {"kind": "cli", "peer": None, "pid": run.process.pid}
                assert shown["capability"] == "executions.demonstrate"
                with trio.fail_after(15):
                    events += await until(ws, execution_id, TERMINAL)
                    code = await run.process.wait()
            assert code == 0, bytes(run.stderr)
        assert [e["sequence"] for e in events] == list(range(1, len(events) + 1))
        assert events[-1]["type"] == "execution.completed"
        view = json.loads(bytes(run.stdout))
        assert (view["id"], view["state"], view["last_sequence"]) == (execution_id, "succeeded", len(events))
        assert b"nobody else can see" not in run.stderr
        lease = json.loads((run_checkout / ".ai" / "local" / "state" / "mcp" / "server.json").read_text())
        assert lease["url"] == url
        on_server = (await http.get("/api/v1/executions/get", params={"id": execution_id})).json()
        assert (on_server["state"], on_server["last_sequence"]) == ("succeeded", view["last_sequence"])
        assert on_server["output"] == view["output"]
        history = (await http.get("/api/v1/executions/events", params={"id": execution_id})).json()
        assert [e["sequence"] for e in history["events"]] == list(range(1, len(events) + 1))


@pytest.mark.slow
@pytest.mark.bound(180)
async def test_ctrl_c_on_svc_run_ends_the_execution_cancelled_on_the_server(run_checkout: Path) -> None:
    async with svc_serve(run_checkout) as url, httpx.AsyncClient(base_url=url) as http:
        async with trio_websocket.open_websocket_url(
            url.replace("http", "ws") + "/events", message_queue_size=4096, disconnect_timeout=2
        ) as ws:
            await ws.get_message()
            run_input = json.dumps({"steps": 1, "delay_ms": 10000})
            async with svc_process("run", "executions.demonstrate", "--input", run_input, cwd=run_checkout) as run:
                with trio.fail_after(START_SECONDS):
                    first = await next_event(ws)
                execution_id = first["execution_id"]
                with trio.fail_after(10):
                    await until(ws, execution_id, {"execution.step.started"})
                interrupted = trio.current_time()
                run.process.send_signal(signal.SIGINT)
                with trio.fail_after(10):
                    tail = await until(ws, execution_id, TERMINAL)
                    code = await run.process.wait()
                took = trio.current_time() - interrupted
        assert code == 10, bytes(run.stderr)
        assert [e["type"] for e in tail[-2:]] == ["execution.cancelling", "execution.cancelled"]
        assert tail[-2]["data"] == {"by": "cli"}
        assert took < 5  # not the 10 s delay
        on_server = (await http.get("/api/v1/executions/get", params={"id": execution_id})).json()
        assert on_server["state"] == "cancelled"
        assert on_server["error"]["code"] == "cancelled"
        assert b"cancelled" in run.stderr


@pytest.mark.slow
@pytest.mark.bound(120)
async def test_without_a_server_svc_run_runs_alone_and_says_so(run_checkout: Path) -> None:
    run_input = json.dumps({"steps": 2})
    async with svc_process("run", "executions.demonstrate", "--input", run_input, "--json", cwd=run_checkout) as run:
        with trio.fail_after(START_SECONDS):
            code = await run.process.wait()
    assert code == 0, bytes(run.stderr)
    assert b"no server serves this repository" in run.stderr
    assert b"nobody else can see this run" in run.stderr
    view = json.loads(bytes(run.stdout))
    assert (view["state"], view["actor"]["kind"], view["actor"]["pid"]) == ("succeeded", "cli", run.process.pid)
    assert view["output"]["observed"] is True


@pytest.mark.slow
@pytest.mark.bound(240)
@pytest.mark.parametrize(
    ("args", "code", "stderr"),
    [
        (["executions.demonstrate", "--input", '{"steps": 2, "fail_at": 2}'], 10, b"step 2 of 2 failed as asked"),
        (["executions.demonstrate", "--input", "{nope"], 10, b"svc: invalid_input: --input is not JSON"),
        (["executions.demonstrate", "--input", '{"steps": -1}'], 10, b"svc: invalid_input"),
        (["no.such"], 10, b"svc: not_found"),
        ([], 2, b"Missing argument"),
    ],
)
async def test_svc_run_exit_codes(run_checkout: Path, args: list[str], code: int, stderr: bytes) -> None:
    async with svc_process("run", *args, cwd=run_checkout) as run:
        with trio.fail_after(START_SECONDS):
            got = await run.process.wait()
    assert got == code, bytes(run.stderr)
    assert stderr in run.stderr
    assert bytes(run.stdout) == b""


async def test_a_reporter_keeps_every_unacknowledged_event_beyond_its_stores_bound(
    server: str, executor: Executor
) -> None:
    """The local store keeps 5 events; the reporter still delivers all of them, in order."""
    served = executor.components.get(Engine)
    async with local_engine() as engine, httpx.AsyncClient() as client:
        small = Engine(engine.executor, Limits(max_events=5))
        x = start_local(small, steps=30)
        reporter = Reporter(client, server, small, x, small.find_capability("executions.demonstrate"))
        await reporter.run()
        assert x.state == "succeeded"
        assert x.truncated
        mirror = served.store.get(x.id)
        assert mirror.state == "succeeded"
        assert [e.sequence for e in retained(mirror)] == list(range(1, x.last_sequence + 1))
        assert reporter.through == x.last_sequence


async def svc_json(*args: str, cwd: Path) -> tuple[int, Any, bytes]:
    """Run `svc ARGS --json`; the exit code, the decoded stdout (None when empty) and stderr."""
    async with svc_process(*args, "--json", cwd=cwd) as proc:
        with trio.fail_after(START_SECONDS):
            code = await proc.process.wait()
    return code, json.loads(bytes(proc.stdout)) if proc.stdout.strip() else None, bytes(proc.stderr)


@pytest.mark.slow
@pytest.mark.bound(240)
async def test_svc_executions_commands_ask_the_serving_server(run_checkout: Path) -> None:
    async with svc_serve(run_checkout) as url, httpx.AsyncClient(base_url=url) as http:
        body = {"capability": "executions.demonstrate", "input": {"steps": 1, "delay_ms": 10000}}
        started = (await http.post("/api/v1/executions/start", json=body)).json()
        execution_id = started["id"]
        code, listing, _ = await svc_json("executions", "list", cwd=run_checkout)
        assert code == 0
        assert [x["id"] for x in listing["executions"]] == [execution_id]
        code, shown, _ = await svc_json("executions", "show", execution_id, cwd=run_checkout)
        assert (code, shown["id"], shown["actor"]["kind"]) == (0, execution_id, "http")
        async with trio_websocket.open_websocket_url(
            url.replace("http", "ws") + f"/events?execution={execution_id}", disconnect_timeout=2
        ) as ws:
            await ws.get_message()
            code, cancelled, _ = await svc_json("executions", "cancel", execution_id, cwd=run_checkout)
            assert (code, cancelled["outcome"], cancelled["cancellable"]) == (0, "requested", True)
            with trio.fail_after(10):
                await until(ws, execution_id, {"execution.cancelled"})
        code, history, _ = await svc_json("executions", "events", execution_id, "--after", "2", cwd=run_checkout)
        assert code == 0
        assert history["events"][0]["sequence"] == 3
        assert history["events"][-1]["type"] == "execution.cancelled"
        assert history["last_sequence"] == history["events"][-1]["sequence"]
        code, protocol, _ = await svc_json("executions", "protocol", cwd=run_checkout)
        assert (code, protocol["websocket"], protocol["heartbeat_seconds"]) == (0, "/events", 20)
        code, _, stderr = await svc_json("executions", "show", "x-20261121T120000Z-0123abcd", cwd=run_checkout)
        assert code == 10
        assert b"not_found" in stderr
    code, listing, stderr = await svc_json("executions", "list", cwd=run_checkout)
    assert (code, listing["executions"]) == (0, [])
    assert b"no server serves this repository" in stderr
