"""`svc executions follow` and `svc run --server`: every event once, in order, across dropped connections.

The follower's resumption is tested first without sockets, against scripted connections (drops, duplicates,
`stream.lagged`, a skipped sequence, a truncated replay, refusals). The end-to-end tests run a real server in
this process over a temporary checkout, with its lease pointing at a loopback proxy the test controls, and the
follower as a subprocess (`python -m svc`) with wall-clock bounds, hence `slow`: the proxy drops the live
channel mid-way, SIGINT asks the server to cancel.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import msgspec
import pytest
import trio
import trio.testing
import trio_websocket

from svc._errors import NotFound, Unavailable
from svc.api import serve_http
from svc.cli._follow import Channel, Follower
from svc.host import take_lease
from svc.host._service import open_service
from svc.layer import Repository, publish_url, release_lease
from svc.nursery import Engine, Limits, Subscriber
from svc.runtime import Actor, Executor
from tests.conftest import make_checkout

SVC = [sys.executable, "-m", "svc"]
ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}
ID = "x-20261121T120000Z-0123abcd"
START_SECONDS = 60
Message = dict[str, Any]


# -- without sockets: scripted connections -------------------------------------------------------------


def event(sequence: int, kind: str, **data: Any) -> Message:
    return {
        "schema_version": "1",
        "event_id": f"{ID}#{sequence}",
        "execution_id": ID,
        "sequence": sequence,
        "timestamp": "2026-11-21T12:00:00.000Z",
        "type": kind,
        "data": data,
    }


def history(steps: int) -> list[Message]:
    """The events of a demonstration of `steps` steps, as a server numbers them."""
    kinds: list[tuple[str, dict[str, Any]]] = [
        ("execution.created", {"capability": "executions.demonstrate", "title": "Demo", "input": {}}),
        ("execution.queued", {"ahead": 0}),
        ("execution.started", {}),
    ]
    for n in range(1, steps + 1):
        kinds += [
            ("execution.step.started", {"name": f"step-{n}", "title": f"Step {n} of {steps}"}),
            ("execution.log", {"stream": "handler", "message": f"step {n} of {steps}"}),
            ("execution.step.completed", {"name": f"step-{n}", "ok": True, "detail": None}),
            ("execution.progress", {"current": n, "total": steps, "message": None}),
        ]
    kinds.append(("execution.completed", {"output": {"steps": steps}}))
    return [event(k, kind, **data) for k, (kind, data) in enumerate(kinds, start=1)]


def ready(*, truncated: bool = False) -> Message:
    return {"type": "stream.ready", "data": {"protocol_version": "1", "scope": "executions", "truncated": truncated}}


class Scripted:
    """A connection that sends its messages, then reports a dropped connection (as a peer that vanished)."""

    def __init__(self, messages: list[Message]) -> None:
        self.messages = deque(json.dumps(m) for m in messages)

    async def get_message(self) -> str:
        await trio.lowlevel.checkpoint()
        if not self.messages:
            raise trio_websocket.ConnectionClosed(trio_websocket.CloseReason(1006, None))
        return self.messages.popleft()


#: What the n-th connection (from 0) sends, given the `after` its URL asked for.
Script = Callable[[int, int], list[Message]]


@dataclass
class Server:
    """Scripted connections, and the `after` of each."""

    script: Script
    afters: list[int] = field(default_factory=list)
    refusals: deque[trio_websocket.ConnectionRejected] = field(default_factory=deque)

    @asynccontextmanager
    async def connect(self, url: str) -> AsyncIterator[Channel]:
        await trio.lowlevel.checkpoint()
        query = parse_qs(urlsplit(url).query)
        assert query["execution"] == [ID]
        after = int(query.get("after", ["0"])[0])
        if self.refusals:
            raise self.refusals.popleft()
        self.afters.append(after)
        yield Scripted(self.script(len(self.afters) - 1, after))


@dataclass
class Seen:
    """What the follower showed and noted."""

    events: list[Message] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def show(self, frame: Any) -> None:
        self.events.append(frame)

    def note(self, text: str, tone: str) -> None:
        self.notes.append(text)

    @property
    def sequences(self) -> list[int]:
        return [e["sequence"] for e in self.events]


def follower(server: Server, seen: Seen) -> Follower:
    return Follower("http://127.0.0.1:9", ID, show=seen.show, note=seen.note, connect=server.connect)


async def test_a_dropped_connection_resumes_after_the_last_event_shown_and_shows_nothing_twice() -> None:
    events = history(3)

    def script(n: int, after: int) -> list[Message]:
        if n == 0:
            return [ready(), *events[:7]]  # then the connection drops
        # The replay starts two events early: what was shown already is skipped, not shown again.
        return [ready(), *events[after - 2 :]]

    server, seen = Server(script), Seen()
    await follower(server, seen).run()
    assert seen.sequences == list(range(1, len(events) + 1))
    assert server.afters == [0, 7]
    assert len(seen.notes) == 1
    assert "dropped after event 7" in seen.notes[0]


async def test_lagged_or_a_skipped_sequence_reconnects_from_the_cursor() -> None:
    events = history(2)
    lagged = {"type": "stream.lagged", "data": {"dropped": 3}}

    def script(n: int, after: int) -> list[Message]:
        if n == 0:
            return [ready(), *events[:3], lagged, *events[6:]]
        if n == 1:
            return [ready(), events[after], events[after + 2]]  # a sequence is missing
        return [ready(), *events[after:]]

    server, seen = Server(script), Seen()
    await follower(server, seen).run()
    assert seen.sequences == list(range(1, len(events) + 1))
    assert server.afters == [0, 3, 4]
    assert seen.notes == []  # nothing was dropped by the network


async def test_a_truncated_replay_says_how_many_events_are_gone_and_goes_on() -> None:
    events = history(2)

    def script(n: int, after: int) -> list[Message]:
        return [ready(truncated=True), *events[4:]]

    server, seen = Server(script), Seen()
    await follower(server, seen).run()
    assert seen.sequences == list(range(5, len(events) + 1))
    assert seen.notes == ["svc: 4 earlier events are no longer kept"]


@pytest.mark.bound(120)  # on the autojumping clock
async def test_an_unknown_execution_is_not_found_and_a_lost_server_is_given_up_after_30_s(
    autojump_clock: trio.testing.MockClock,
) -> None:
    body = b'{"error":{"code":"not_found","message":"no execution x-20261121T120000Z-0123abcd"}}'
    server = Server(lambda n, after: [])
    server.refusals.append(trio_websocket.ConnectionRejected(404, (), body))
    with pytest.raises(NotFound, match="no execution"):
        await follower(server, Seen()).run()

    busy = b'{"error":{"code":"unavailable","message":"the server is stopping"}}'
    server = Server(lambda n, after: [])
    server.refusals.extend(trio_websocket.ConnectionRejected(503, (), busy) for _ in range(100))
    seen = Seen()
    began = trio.current_time()
    with pytest.raises(Unavailable, match="could not be opened again for 30 s"):
        await follower(server, seen).run()
    assert trio.current_time() - began >= 30
    assert len(seen.notes) == 1
    assert "the server is stopping" in seen.notes[0]


async def test_the_server_closing_the_channel_ends_the_follower() -> None:
    closing = {"type": "stream.closing", "data": {"reason": "server shutdown"}}
    server = Server(lambda n, after: [ready(), *history(1)[:3], closing])
    with pytest.raises(Unavailable, match="server shutdown"):
        await follower(server, Seen()).run()


async def test_an_error_while_closing_after_the_end_changes_nothing() -> None:
    events = history(1)
    seen = Seen()

    @asynccontextmanager
    async def connect(url: str) -> AsyncIterator[Channel]:
        yield Scripted([ready(), *events])
        raise trio_websocket.DisconnectionTimeout

    await Follower("http://127.0.0.1:9", ID, show=seen.show, note=seen.note, connect=connect).run()
    assert seen.sequences == list(range(1, len(events) + 1))


# -- a real server behind a proxy the test controls, and `svc` subprocesses ----------------------------


@dataclass
class Proxy:
    """Forwards loopback connections to the server; remembers the live-channel ones and can drop them."""

    port: int
    heads: list[bytes] = field(default_factory=list)
    channels: list[trio.CancelScope] = field(default_factory=list)
    opened: trio.Event = field(default_factory=trio.Event)

    async def serve(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        task_status.started(listeners[0].socket.getsockname()[1])
        await trio.serve_listeners(self.handle, listeners)

    async def handle(self, client: trio.SocketStream) -> None:
        async with client, await trio.open_tcp_stream("127.0.0.1", self.port) as upstream:
            head = await client.receive_some(65536)
            if not head:
                return
            await upstream.send_all(head)
            with trio.CancelScope() as scope:
                if head.startswith(b"GET /events"):
                    self.heads.append(head)
                    self.channels.append(scope)
                    self.opened.set()
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(pump, client, upstream, nursery.cancel_scope)
                    nursery.start_soon(pump, upstream, client, nursery.cancel_scope)

    def drop(self) -> None:
        """Close every live channel open now, in both directions, whatever is in flight."""
        for scope in self.channels:
            scope.cancel()
        self.opened = trio.Event()


async def pump(source: trio.SocketStream, sink: trio.SocketStream, done: trio.CancelScope) -> None:
    try:
        while chunk := await source.receive_some(65536):
            await sink.send_all(chunk)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    done.cancel()


@dataclass
class Served:
    """A server over a checkout whose lease names the proxy's URL."""

    checkout: Path
    url: str
    proxy: Proxy
    engine: Engine
    http: httpx.AsyncClient


@asynccontextmanager
async def served(tmp_path: Path, *, max_running: int = 4) -> AsyncIterator[Served]:
    checkout = make_checkout(tmp_path / "c")
    repo = Repository.discover(checkout)
    lease = await trio.to_thread.run_sync(take_lease, repo)
    assert lease is not None
    try:
        async with (
            open_service(repo, surface="http", watch=False) as service,
            trio.open_nursery() as nursery,
            httpx.AsyncClient() as http,
        ):
            limits = Limits(max_running=max_running)
            executor = Executor(service.runtime, service.supervisor, built=(lambda x: Engine(x, limits),))
            executor.runtime.server.leaseholder = True
            stop = trio.Event()
            url: str = await nursery.start(partial(serve_http, executor, port=0, shutdown=stop))
            proxy = Proxy(int(url.rsplit(":", 1)[1]))
            port: int = await nursery.start(proxy.serve)
            proxied = f"http://127.0.0.1:{port}"
            lease = await trio.to_thread.run_sync(publish_url, repo, lease, proxied)
            yield Served(checkout, proxied, proxy, executor.components.get(Engine), http)
            stop.set()
            nursery.cancel_scope.cancel()
    finally:
        release_lease(repo, lease)


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

    async def stderr_has(self, text: bytes) -> None:
        while text not in self.stderr:
            assert self.process.returncode is None, bytes(self.stderr)
            await self.wrote.wait()


@asynccontextmanager
async def svc_process(*args: str, cwd: Path) -> AsyncIterator[Process]:
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


def start(engine: Engine, **input: Any) -> str:
    cap = engine.find_capability("executions.demonstrate")
    execution = engine.start(cap, engine.executor.decode_value(cap, input), actor=Actor(kind="http"))
    return execution.id


async def first(subscriber: Subscriber, kind: str, name: str | None = None) -> None:
    while True:
        for frame in await subscriber.next_frames():
            event: Message = msgspec.json.decode(frame)
            if event["type"] == kind and name in (None, event["data"].get("name")):
                return


def lines(text: bytes) -> list[str]:
    return text.decode().splitlines()


@pytest.mark.slow
@pytest.mark.bound(180)
async def test_follow_shows_every_step_once_across_a_connection_the_test_drops(tmp_path: Path) -> None:
    """The demonstration waits in line behind another until the follower is connected, so that the drop
    (when step 2 starts) always comes while the follower's first connection carries a running execution."""
    async with served(tmp_path, max_running=1) as s:
        blocker = start(s.engine, steps=1, delay_ms=10000)
        execution_id = start(s.engine, steps=4, delay_ms=300)
        assert s.engine.store.get(execution_id).state == "queued"
        watch, _, _ = s.engine.store.subscribe(frozenset({execution_id}))
        async with svc_process("executions", "follow", execution_id, cwd=s.checkout) as follow:
            with trio.fail_after(START_SECONDS):
                await s.proxy.opened.wait()
            s.engine.cancel(blocker, by="http")  # the demonstration runs now
            with trio.fail_after(10):
                await first(watch, "execution.step.started", "step-2")
            s.proxy.drop()  # mid-way: step 2 has just started, its events may be in flight
            with trio.fail_after(20):
                code = await follow.process.wait()
        s.engine.store.unsubscribe(watch)
        assert code == 0, bytes(follow.stderr)
        shown = lines(bytes(follow.stderr))
        for n in range(1, 5):
            for line in (f"  … Step {n} of 4", f"    step {n} of 4", f"  ✓ Step {n} of 4"):
                assert shown.count(line) == 1, (line, shown)
        assert any("dropped after event" in line and "resuming" in line for line in shown), shown
        assert re.search(rf"executions\.demonstrate succeeded in [0-9.]+ s \({execution_id}\)", shown[-1])
        assert b"steps" in bytes(follow.stdout)
        # Two connections: the second asked for the events after the last one shown.
        assert len(s.proxy.heads) == 2
        resumed = re.search(rb"after=([0-9]+)", s.proxy.heads[1])
        assert resumed is not None
        assert int(resumed[1]) > 0
        assert b"after=" not in s.proxy.heads[0]
        assert str(s.checkout).encode() not in follow.stderr + follow.stdout


@pytest.mark.slow
@pytest.mark.bound(180)
async def test_ctrl_c_on_follow_cancels_the_execution_on_the_server(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        execution_id = start(s.engine, steps=1, delay_ms=10000)
        async with svc_process("executions", "follow", execution_id, cwd=s.checkout) as follow:
            with trio.fail_after(START_SECONDS):
                await follow.stderr_has(b"Step 1 of 1")
            interrupted = trio.current_time()
            follow.process.send_signal(signal.SIGINT)
            with trio.fail_after(10):
                code = await follow.process.wait()
            took = trio.current_time() - interrupted
        assert code == 10, bytes(follow.stderr)
        assert took < 5  # not the 10 s delay
        x = s.engine.store.get(execution_id)
        assert x.state == "cancelled"
        cancelling = [e for e in s.engine.store.events(x) if e.type == "execution.cancelling"]
        assert [e.data["by"] for e in cancelling] == ["http"]
        shown = lines(bytes(follow.stderr))
        assert f"svc: asking the server to cancel {execution_id} (Ctrl-C again to stop following)" in shown
        assert re.search(rf"executions\.demonstrate cancelled after .* \({execution_id}\)$", shown[-1])


@pytest.mark.slow
@pytest.mark.bound(180)
async def test_svc_run_server_starts_the_execution_there_and_follows_it(tmp_path: Path) -> None:
    async with served(tmp_path) as s:
        run_input = json.dumps({"steps": 2, "delay_ms": 50})
        async with svc_process(
            "run", "--server", "executions.demonstrate", "--input", run_input, cwd=s.checkout
        ) as run:
            with trio.fail_after(START_SECONDS):
                code = await run.process.wait()
        assert code == 0, bytes(run.stderr)
        (x,) = list(s.engine.store)
        assert (x.state, x.actor.kind, x.input) == ("succeeded", "http", {"steps": 2, "delay_ms": 50, "fail_at": None})
        shown = lines(bytes(run.stderr))
        assert [line for line in shown if "Step" in line] == [
            "  … Step 1 of 2",
            "  ✓ Step 1 of 2",
            "  … Step 2 of 2",
            "  ✓ Step 2 of 2",
        ]
        assert re.fullmatch(rf"executions\.demonstrate succeeded in [0-9.]+ (s|ms) \({x.id}\)", shown[-1]), shown
        assert b"nobody else can see" not in run.stderr

        async with svc_process("run", "--server", "executions.demonstrate", "--json", cwd=s.checkout) as run:
            with trio.fail_after(START_SECONDS):
                code = await run.process.wait()
        assert code == 0, bytes(run.stderr)
        view = json.loads(bytes(run.stdout))
        assert (view["state"], view["actor"]["kind"], view["output"]["steps"]) == ("succeeded", "http", 3)
        assert bytes(run.stderr) == b""

        async with svc_process(
            "run", "--server", "executions.demonstrate", "--input", '{"steps": -1}', cwd=s.checkout
        ) as run:
            with trio.fail_after(START_SECONDS):
                code = await run.process.wait()
        assert code == 10
        assert b"svc: invalid_input: input of executions.demonstrate: $.steps" in run.stderr
        assert len(s.engine.store) == 2


@pytest.mark.slow
@pytest.mark.bound(120)
async def test_follow_and_run_server_need_a_server_and_a_known_execution(tmp_path: Path) -> None:
    checkout = make_checkout(tmp_path / "alone")
    for args, code, said in (
        (["executions", "follow", ID], 1, b"svc: unavailable: no server serves this repository"),
        (["run", "--server", "executions.demonstrate"], 1, b"svc: unavailable: no server serves this repository"),
        (["executions", "follow", "x-nope"], 10, b"svc: invalid_input: 'x-nope' is not an execution id"),
    ):
        async with svc_process(*args, cwd=checkout) as proc:
            with trio.fail_after(START_SECONDS):
                got = await proc.process.wait()
        assert (got, bytes(proc.stdout)) == (code, b""), bytes(proc.stderr)
        assert said in proc.stderr
    async with served(tmp_path) as s, svc_process("executions", "follow", ID, cwd=s.checkout) as proc:
        with trio.fail_after(START_SECONDS):
            got = await proc.process.wait()
    assert got == 10
    assert bytes(proc.stderr) == f"svc: not_found: no execution {ID}\n".encode()
