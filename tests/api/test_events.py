"""`/events`, the live channel: refusals before the handshake, replay then live with no gap and no
duplicate, lagging, closing; and the `executions.*` routes over HTTP.

Most tests drive the ASGI app in memory (a channel pair per connection, a slow peer is one whose channel has
no buffer and is not read). A thin layer repeats the essentials over real sockets on 127.0.0.1, port 0.
"""

from __future__ import annotations

import functools
import math
import socket
from collections.abc import AsyncIterator, Callable, MutableMapping
from contextlib import asynccontextmanager
from typing import Any, cast

import h11
import httpx
import msgspec
import pytest
import trio
import trio.testing
import trio_websocket
from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    CloseConnection,
    Ping,
    Pong,
    RejectConnection,
    RejectData,
    Request,
    TextMessage,
)

from svc.api import serve_http
from svc.api._events import EventsChannel
from svc.nursery import Engine, Execution, Limits
from svc.runtime import Actor, Executor
from tests.api._wire import assert_error, raw_request, websocket_upgrade
from tests.nursery._probe import Gates, LocalRun, start

UNKNOWN = "x-20261121T120000Z-0123abcd"
TERMINAL = {"execution.completed", "execution.failed", "execution.cancelled"}
Message = dict[str, Any]


# -- fixtures ----------------------------------------------------------------------------------------


@pytest.fixture
def channel(engine: Engine) -> EventsChannel:
    """The `/events` ASGI app over the default engine."""
    return EventsChannel(engine)


@pytest.fixture
async def probe_server(probe_executor: Executor, nursery: trio.Nursery) -> AsyncIterator[str]:
    """The probe registry served for real on 127.0.0.1 port 0 (default bounds); yields the URL."""
    async with serving(probe_executor, nursery) as url:
        yield url


@asynccontextmanager
async def serving(executor: Executor, nursery: trio.Nursery) -> AsyncIterator[str]:
    shutdown = trio.Event()
    url: str = await nursery.start(functools.partial(serve_http, executor, port=0, shutdown=shutdown))
    try:
        yield url
    finally:
        shutdown.set()


# -- the in-memory ASGI harness ----------------------------------------------------------------------


class Peer:
    """The client end of one in-memory connection to the ASGI app."""

    def __init__(self, inbox: trio.MemoryReceiveChannel[Message], outbox: trio.MemorySendChannel[Message]) -> None:
        self._inbox = inbox
        self._outbox = outbox

    async def message(self) -> Message:
        """The next ASGI message the app sent."""
        return await self._inbox.receive()

    async def frame(self) -> Message:
        """The next WebSocket text frame, decoded."""
        message = await self._inbox.receive()
        assert message["type"] == "websocket.send", message
        decoded: Message = msgspec.json.decode(message["text"])
        return decoded

    async def frames_until(self, done: Callable[[list[Message]], bool]) -> list[Message]:
        frames: list[Message] = []
        while not done(frames):
            frames.append(await self.frame())
        return frames

    def drain(self) -> list[Message]:
        """Every frame already sent and not yet read, decoded (call once every task is blocked)."""
        frames: list[Message] = []
        while True:
            try:
                message = self._inbox.receive_nowait()
            except trio.WouldBlock:
                return frames
            assert message["type"] == "websocket.send", message
            frames.append(msgspec.json.decode(message["text"]))

    def disconnect(self) -> None:
        self._outbox.send_nowait({"type": "websocket.disconnect", "code": 1000})


def ws_scope(query: str, headers: list[tuple[bytes, bytes]] | None = None) -> Message:
    return {
        "type": "websocket",
        "path": "/events",
        "query_string": query.encode(),
        "headers": headers or [(b"host", b"127.0.0.1:8741")],
    }


@asynccontextmanager
async def connect(app: EventsChannel, query: str = "", *, buffer: float = math.inf) -> AsyncIterator[Peer]:
    """Open a WebSocket to `app` in memory; `buffer` 0 makes a peer that takes frames only when read."""
    to_app, app_inbox = trio.open_memory_channel[Message](math.inf)
    app_outbox, from_app = trio.open_memory_channel[Message](buffer)
    to_app.send_nowait({"type": "websocket.connect"})

    async def receive() -> MutableMapping[str, Any]:
        return await app_inbox.receive()

    async def send(message: MutableMapping[str, Any]) -> None:
        await app_outbox.send(dict(message))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(app, ws_scope(query), receive, send)
        peer = Peer(from_app, to_app)
        try:
            yield peer
        finally:
            peer.disconnect()


async def opened(peer: Peer) -> Message:
    """The accept and the `stream.ready` frame; the ready data."""
    assert (await peer.message()) == {"type": "websocket.accept"}
    ready = await peer.frame()
    assert ready["type"] == "stream.ready"
    data: Message = ready["data"]
    return data


async def refusal(app: EventsChannel, query: str) -> tuple[int, Message]:
    """The status and ErrorBody of a WebSocket the app refuses before the handshake."""
    async with connect(app, query) as peer:
        start_ = await peer.message()
        body = await peer.message()
    assert start_["type"] == "websocket.http.response.start", start_
    assert body["type"] == "websocket.http.response.body"
    assert (b"content-type", b"application/json") in start_["headers"]
    decoded: Message = msgspec.json.decode(body["body"])
    return start_["status"], decoded


async def http_exchange(app: EventsChannel, method: str) -> tuple[int, dict[bytes, bytes], Message]:
    sent: list[Message] = []

    async def receive() -> MutableMapping[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(dict(message))

    scope = {"type": "http", "method": method, "path": "/events", "query_string": b"", "headers": []}
    await app(scope, receive, send)
    return sent[0]["status"], dict(sent[0]["headers"]), msgspec.json.decode(sent[1]["body"])


def sequences(frames: list[Message], execution_id: str | None = None) -> list[int]:
    return [
        f["sequence"] for f in frames if "sequence" in f and (execution_id is None or f["execution_id"] == execution_id)
    ]


def any_ended(frames: list[Message]) -> bool:
    """Whether the last frame read is a terminal event."""
    return bool(frames) and frames[-1].get("type") in TERMINAL


def ended(execution_id: str) -> Callable[[list[Message]], bool]:
    """Whether the last frame read is the execution's terminal event (checked after every frame)."""
    return lambda frames: (
        bool(frames) and frames[-1].get("execution_id") == execution_id and frames[-1].get("type") in TERMINAL
    )


async def published(x: Execution, sequence: int) -> None:
    """Wait (at scheduling points) until `x` published `sequence`."""
    while x.last_sequence < sequence:
        await trio.lowlevel.checkpoint()


# -- refusals before the handshake (in memory) -------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "status", "code", "fragment"),
    [
        ("channel=x", 400, "invalid_input", "unknown parameter 'channel'"),
        ("topic=x", 400, "invalid_input", "unknown topic 'x'"),
        ("plan_after=3", 400, "invalid_input", "'plan_after' needs 'topic=plan'"),
        ("topic=plan&plan_after=1&plan_after=2", 400, "invalid_input", "more than once"),
        ("topic=mesh&mesh_after=-1", 400, "invalid_input", "mesh_after"),
        ("execution=../../etc/passwd", 400, "invalid_input", "not an execution id"),
        ("execution=X-20261121T120000Z-0123abcd", 400, "invalid_input", "not an execution id"),
        ("after=3", 400, "invalid_input", "exactly one 'execution'"),
        ("after=x&execution={id}", 400, "invalid_input", "after"),
        ("after=-1&execution={id}", 400, "invalid_input", "after"),
        ("after=1&after=2&execution={id}", 400, "invalid_input", "more than once"),
        ("after=1&execution={id}&execution={other}", 400, "invalid_input", "exactly one 'execution'"),
        (f"execution={UNKNOWN}", 404, "not_found", UNKNOWN),
        (f"execution={{id}}&execution={UNKNOWN}", 404, "not_found", UNKNOWN),
    ],
)
async def test_a_bad_subscription_is_refused_before_the_handshake(
    channel: EventsChannel, engine: Engine, query: str, status: int, code: str, fragment: str
) -> None:
    x, other = start(engine, "probe.emit", count=0), start(engine, "probe.emit", count=0)
    got, body = await refusal(channel, query.format(id=x.id, other=other.id))
    assert (got, body["error"]["code"]) == (status, code)
    assert fragment in body["error"]["message"]
    assert engine.live_channels == 0
    assert not engine.store.subscribers


async def test_max_connections_is_refused_503_before_the_handshake(make_engine: Callable[..., Engine]) -> None:
    engine = make_engine(max_connections=2)
    app = EventsChannel(engine)
    async with connect(app) as first, connect(app) as second:
        await opened(first)
        await opened(second)
        assert engine.live_channels == 2
        status, body = await refusal(app, "")
        assert (status, body["error"]["code"]) == (503, "unavailable")
    await trio.testing.wait_all_tasks_blocked()
    assert engine.live_channels == 0
    async with connect(app) as third:
        await opened(third)


async def test_a_stopping_server_refuses_new_channels(channel: EventsChannel, engine: Engine) -> None:
    engine.stopping = True
    status, body = await refusal(channel, "")
    assert (status, body["error"]["code"]) == (503, "unavailable")


async def test_plain_http_is_426_pointing_at_the_history_and_other_methods_405(channel: EventsChannel) -> None:
    status, headers, body = await http_exchange(channel, "GET")
    assert status == 426
    assert headers[b"upgrade"] == b"websocket"
    assert "/api/v1/executions/events" in body["error"]["message"]
    status, headers, body = await http_exchange(channel, "POST")
    assert (status, body["error"]["code"]) == (405, "method_not_allowed")
    assert headers[b"allow"] == b"GET"


# -- the stream (in memory) --------------------------------------------------------------------------


async def test_the_first_frame_is_stream_ready(channel: EventsChannel, engine: Engine) -> None:
    async with connect(channel) as peer:
        assert await opened(peer) == {
            "protocol_version": "1",
            "scope": "all",
            "replayed": 0,
            "truncated": False,
            "heartbeat_seconds": 20,
        }
    x = start(engine, "probe.emit", count=2)
    await x.done.wait()
    async with connect(channel, f"execution={x.id}") as peer:
        ready = await opened(peer)
        assert ready == {
            "protocol_version": "1",
            "scope": "executions",
            "executions": [x.id],
            "replayed": 6,
            "truncated": False,
            "heartbeat_seconds": 20,
        }
        replay = [await peer.frame() for _ in range(6)]
        assert sequences(replay) == [1, 2, 3, 4, 5, 6]
        assert replay[0]["event_id"] == f"{x.id}#1"


async def test_several_executions_are_followed_live_without_a_replay(channel: EventsChannel, engine: Engine) -> None:
    a, b = start(engine, "probe.emit", count=0), start(engine, "probe.emit", count=0)
    await a.done.wait()
    await b.done.wait()
    c = start(engine, "probe.emit", count=0)
    async with connect(channel, f"execution={a.id}&execution={b.id}") as peer:
        ready = await opened(peer)
        assert (ready["replayed"], sorted(ready["executions"])) == (0, sorted([a.id, b.id]))
        await c.done.wait()
        await trio.testing.wait_all_tasks_blocked()
        assert peer.drain() == []  # c is not followed


async def test_replay_and_live_stream_of_a_busy_execution_have_no_gap_and_no_duplicate(
    channel: EventsChannel, engine: Engine
) -> None:
    """Subscribers join while events are published, each at a different point and cursor."""
    count = 400
    results: dict[str, list[Message]] = {}
    async with trio.open_nursery() as nursery:

        async def follow(name: str, query: str, task_status: trio.TaskStatus[None]) -> None:
            async with connect(channel, query) as peer:
                ready = await opened(peer)
                task_status.started()
                results[name] = [{"ready": ready}, *await peer.frames_until(any_ended)]

        await nursery.start(follow, "all", "")
        x = start(engine, "probe.emit", count=count)
        joins = [(0, None), (1, None), (2, None), (7, 3), (60, None), (61, 20), (200, 199), (300, 100), (403, 401)]
        for at, after in joins:
            await published(x, at)
            query = f"execution={x.id}" + (f"&after={after}" if after is not None else "")
            await nursery.start(follow, f"{at}/{after}", query)
        await x.done.wait()
    last = x.last_sequence
    assert last == count + 4
    assert sequences(results.pop("all")[1:], x.id) == list(range(1, last + 1))
    for name, frames in results.items():
        after = 0 if name.endswith("None") else int(name.split("/")[1])
        got = sequences(frames[1:], x.id)
        assert got == list(range(after + 1, last + 1)), name
        assert frames[0]["ready"]["replayed"] <= len(got)
        assert not any(f.get("type") == "stream.lagged" for f in frames[1:])


async def test_a_slow_subscriber_gets_stream_lagged_while_a_fast_one_gets_everything(
    make_engine: Callable[..., Engine],
) -> None:
    engine = make_engine(max_subscriber_queue=16)
    app = EventsChannel(engine)
    async with connect(app) as fast, connect(app, buffer=0) as slow:
        await opened(fast)
        assert (await slow.message())["type"] == "websocket.accept"
        await trio.testing.wait_all_tasks_blocked()
        x = start(engine, "probe.emit", count=300)
        frames = await fast.frames_until(ended(x.id))
        await x.done.wait()  # the execution finished while the slow peer read nothing
        total = x.last_sequence
        assert sequences(frames) == list(range(1, total + 1))
        assert not any(f["type"] == "stream.lagged" for f in frames)
        slow_frames: list[Message] = []
        received = dropped = 0
        with trio.fail_after(5):
            while received + dropped < total:
                frame = await slow.frame()
                slow_frames.append(frame)
                if frame["type"] == "stream.lagged":
                    dropped += frame["data"]["dropped"]
                elif "sequence" in frame:
                    received += 1
        assert slow_frames[0]["type"] == "stream.ready"
        assert dropped > 0
        assert [f["data"]["dropped"] for f in slow_frames if f["type"] == "stream.lagged"] == [dropped]
        got = sequences(slow_frames)
        assert got == sorted(set(got))
        assert len(got) <= 16 + 1


async def test_an_oversized_event_is_skipped_and_reported_as_lagged_live(make_engine: Callable[..., Engine]) -> None:
    engine = make_engine(max_frame_bytes=1500)
    app = EventsChannel(engine)
    async with connect(app) as peer:
        await opened(peer)
        x = start(engine, "probe.emit", count=3, size=1800)
        frames = await peer.frames_until(ended(x.id))
    assert sum(f["data"]["dropped"] for f in frames if f["type"] == "stream.lagged") == 3
    assert [f["type"] for f in frames if "sequence" in f].count("execution.log") == 0


async def test_an_oversized_event_in_the_replay_is_reported_as_lagged(make_engine: Callable[..., Engine]) -> None:
    engine = make_engine(max_frame_bytes=1500)
    app = EventsChannel(engine)
    x = start(engine, "probe.emit", count=3, size=1800)
    await x.done.wait()
    async with connect(app, f"execution={x.id}") as peer:
        ready = await opened(peer)
        await trio.testing.wait_all_tasks_blocked()
        frames = peer.drain()
    replayed = [f for f in frames if "sequence" in f]
    lagged = sum(f["data"]["dropped"] for f in frames if f["type"] == "stream.lagged")
    assert ready["replayed"] == len(replayed)
    assert len(replayed) + lagged == x.last_sequence


async def test_a_reconnect_replays_only_after_its_cursor_and_at_most_max_replay(
    make_engine: Callable[..., Engine],
) -> None:
    engine = make_engine(max_replay=5)
    app = EventsChannel(engine)
    x = start(engine, "probe.emit", count=10)
    await x.done.wait()
    async with connect(app, f"execution={x.id}") as peer:
        ready = await opened(peer)
        assert (ready["replayed"], ready["truncated"]) == (5, True)
        assert sequences([await peer.frame() for _ in range(5)]) == [10, 11, 12, 13, 14]
    async with connect(app, f"execution={x.id}&after=11") as peer:
        ready = await opened(peer)
        assert (ready["replayed"], ready["truncated"]) == (3, False)
        assert sequences([await peer.frame() for _ in range(3)]) == [12, 13, 14]


async def test_shutdown_sends_stream_closing_then_closes_1001(channel: EventsChannel, engine: Engine) -> None:
    async with connect(channel) as peer:
        await opened(peer)
        engine.close_channels("server shutdown")
        assert await peer.frame() == {"type": "stream.closing", "data": {"reason": "server shutdown"}}
        assert await peer.message() == {"type": "websocket.close", "code": 1001}
    await trio.testing.wait_all_tasks_blocked()
    assert engine.live_channels == 0


async def test_a_disconnect_forgets_the_subscriber_and_the_channel_count(
    probe_executor: Executor, channel: EventsChannel, engine: Engine
) -> None:
    async with connect(channel) as peer:
        await opened(peer)
        assert engine.live_channels == 1
        cap = probe_executor.runtime.registry.by_id["executions.list"]
        listing = msgspec.json.decode(await probe_executor.call(cap, cap.input(), actor=Actor(kind="http")))
        assert listing["live_channels"] == 1
    await trio.testing.wait_all_tasks_blocked()
    assert engine.live_channels == 0
    assert not engine.store.subscribers


async def test_reported_events_reach_the_live_channel(channel: EventsChannel, engine: Engine) -> None:
    run = LocalRun()
    run.emit("execution.started")
    run.report(engine, run.events())
    async with connect(channel, f"execution={run.id}") as peer:
        await opened(peer)
        assert sequences([await peer.frame() for _ in range(3)]) == [1, 2, 3]
        run.logs(2)
        run.emit("execution.completed", {"output": None})
        run.report(engine, run.events(after=3))
        run.report(engine, run.events())  # a re-sent batch: nothing twice
        frames = await peer.frames_until(ended(run.id))
        assert sequences(frames) == [4, 5, 6]


# -- real sockets ------------------------------------------------------------------------------------


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


async def post(url: str, path: str, body: Any) -> httpx.Response:
    async with httpx.AsyncClient(base_url=url) as http:
        return await http.post(path, content=msgspec.json.encode(body))


@asynccontextmanager
async def small_server(executor: Executor, nursery: trio.Nursery, **limits: Any) -> AsyncIterator[str]:
    limited = Executor(executor.runtime, executor.supervisor, built=(lambda x: Engine(x, Limits(**limits)),))
    async with serving(limited, nursery) as url:
        yield url


async def test_real_refusals_before_the_handshake(probe_executor: Executor, nursery: trio.Nursery) -> None:
    async with small_server(probe_executor, nursery, max_connections=1) as url:
        created = await post(url, "/api/v1/executions/start", {"capability": "probe.emit"})
        assert created.status_code == 200
        known = created.json()["id"]
        port = port_of(url)
        cases: list[tuple[str, list[tuple[str, str]], int, str]] = [
            ("/events?nope=1", [], 400, "invalid_input"),
            ("/events?execution=x-1", [], 400, "invalid_input"),
            ("/events?after=2", [], 400, "invalid_input"),
            (f"/events?execution={UNKNOWN}", [], 404, "not_found"),
            ("/events", [("Origin", "http://evil.example")], 403, "forbidden"),
            ("/events", [("Origin", f"http://localhost:{port}")], 403, "forbidden"),
            ("/events", [("Host", "evil.example")], 403, "forbidden"),
        ]
        for target, headers, status, code in cases:
            assert_error(await websocket_upgrade(url, target, headers=headers), status, code)
        same_origin = await websocket_upgrade(
            url, f"/events?execution={known}", headers=[("Origin", f"http://127.0.0.1:{port}")]
        )
        assert same_origin.status_code == 101
        plain = await raw_request(url, "/events")
        assert_error(plain, 426, "upgrade_required", "/api/v1/executions/events")
        assert_error(await raw_request(url, "/events", method="POST", body=b"{}"), 405, "method_not_allowed")
        async with trio_websocket.open_websocket_url(url.replace("http", "ws") + "/events", disconnect_timeout=2) as ws:
            assert msgspec.json.decode(await ws.get_message())["type"] == "stream.ready"
            assert_error(await websocket_upgrade(url, "/events"), 503, "unavailable")


async def test_real_replay_and_live_stream_of_a_running_demonstrate_are_dense(
    probe_server: str, engine: Engine
) -> None:
    ws_url = probe_server.replace("http", "ws")
    results: dict[str, list[Message]] = {}
    async with trio.open_nursery() as nursery:

        async def follow(name: str, path: str, task_status: trio.TaskStatus[None]) -> None:
            async with trio_websocket.open_websocket_url(
                ws_url + path, message_queue_size=4096, disconnect_timeout=2
            ) as ws:
                frames = [msgspec.json.decode(await ws.get_message())]
                task_status.started()
                while not ended(execution_id)(frames):
                    frames.append(msgspec.json.decode(await ws.get_message()))
                results[name] = frames

        execution_id = ""
        await nursery.start(follow, "all", "/events")
        answer = await post(
            probe_server,
            "/api/v1/executions/start",
            {"capability": "executions.demonstrate", "input": {"steps": 60, "delay_ms": 2}},
        )
        assert answer.status_code == 200, answer.text
        execution_id = answer.json()["id"]
        x = engine.store.get(execution_id)
        await published(x, 40)
        await nursery.start(follow, "scoped", f"/events?execution={execution_id}")
        await published(x, 150)
        await nursery.start(follow, "cursor", f"/events?execution={execution_id}&after=100")
    last = x.last_sequence
    assert x.state == "succeeded"
    assert sequences(results["all"], execution_id) == list(range(1, last + 1))
    assert sequences(results["scoped"], execution_id) == list(range(1, last + 1))
    assert sequences(results["cursor"], execution_id) == list(range(101, last + 1))
    assert results["scoped"][0]["data"]["replayed"] >= 40


@asynccontextmanager
async def own_websocket(
    url: str, resource: str, *, receive_buffer: int | None = None, queue: int = 1
) -> AsyncIterator[trio_websocket.WebSocketConnection]:
    """A WebSocket over a socket this test owns and closes on the way out whatever happened (a server blocked
    sending to it is released; a close the server started leaves no socket behind)."""
    port = port_of(url)
    sock = trio.socket.socket(trio.socket.AF_INET, trio.socket.SOCK_STREAM)
    if receive_buffer is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    await sock.connect(("127.0.0.1", port))
    stream = trio.SocketStream(sock)
    try:
        async with trio.open_nursery() as nursery:
            ws = await trio_websocket.wrap_client_stream(
                nursery, stream, f"127.0.0.1:{port}", resource, message_queue_size=queue
            )
            yield ws
            nursery.cancel_scope.cancel()
    finally:
        await stream.aclose()


def slow_websocket(url: str, resource: str) -> Any:
    """A WebSocket with a tiny receive buffer whose client reads only when asked."""
    return own_websocket(url, resource, receive_buffer=4096)


@pytest.mark.bound(60)
async def test_real_slow_subscriber_gets_lagged_while_a_fast_one_gets_everything(
    probe_server: str, engine: Engine
) -> None:
    """The emission (about 1000 events/s) is well within what one reading client takes over loopback."""
    async with slow_websocket(probe_server, "/events") as slow, trio.open_nursery() as nursery:
        fast_frames: list[Message] = []
        fast_ready = trio.Event()
        fast_done = trio.Event()

        async def fast_reader() -> None:
            async with trio_websocket.open_websocket_url(
                probe_server.replace("http", "ws") + "/events", message_queue_size=8192, disconnect_timeout=2
            ) as ws:
                fast_frames.append(msgspec.json.decode(await ws.get_message()))
                fast_ready.set()
                while fast_frames[-1].get("type") not in TERMINAL:
                    fast_frames.append(msgspec.json.decode(await ws.get_message()))
            fast_done.set()

        nursery.start_soon(fast_reader)
        await fast_ready.wait()
        while engine.live_channels < 2:
            await trio.lowlevel.checkpoint()
        emit = {"count": 3000, "every": 10, "pause_ms": 10}
        answer = await post(probe_server, "/api/v1/executions/start", {"capability": "probe.emit", "input": emit})
        x = engine.store.get(answer.json()["id"])
        await x.done.wait()  # the execution was not slowed by the client that reads nothing
        await fast_done.wait()
        total = x.last_sequence
        assert sequences(fast_frames) == list(range(1, total + 1))
        assert not any(f["type"] == "stream.lagged" for f in fast_frames)
        received = dropped = 0
        slow_frames: list[Message] = []
        while received + dropped < total:
            frame = msgspec.json.decode(await slow.get_message())
            slow_frames.append(frame)
            if frame["type"] == "stream.lagged":
                dropped += frame["data"]["dropped"]
            elif "sequence" in frame:
                received += 1
        assert dropped > 0
        got = sequences(slow_frames)
        assert got == sorted(set(got))


@pytest.mark.bound(60)
async def test_server_shutdown_is_bounded_even_when_a_websocket_client_stops_reading(
    probe_executor: Executor,
) -> None:
    """`serve_http` closes the live channels and drains for about a second; a stalled client cannot hold it."""
    engine = probe_executor.components.get(Engine)
    shutdown = trio.Event()
    stopped = trio.Event()

    async def serve(task_status: trio.TaskStatus[str]) -> None:
        try:
            await serve_http(probe_executor, port=0, shutdown=shutdown, task_status=task_status)
        finally:
            stopped.set()

    async with trio.open_nursery() as nursery:
        url: str = await nursery.start(serve)
        async with slow_websocket(url, "/events"):
            while engine.live_channels < 1:
                await trio.lowlevel.checkpoint()
            answer = await post(url, "/api/v1/executions/start", {"capability": "probe.emit", "input": {"count": 3000}})
            await engine.store.get(answer.json()["id"]).done.wait()
            asked = trio.current_time()
            shutdown.set()
            with trio.move_on_after(5):
                await stopped.wait()
            took = trio.current_time() - asked
        await stopped.wait()
    assert took < 3, f"serve_http was still serving {took:.1f} s after shutdown"


# -- the executions routes over HTTP -----------------------------------------------------------------


async def test_start_list_get_events_and_cancel_over_http(probe_server: str, engine: Engine, gates: Gates) -> None:
    async with httpx.AsyncClient(base_url=probe_server) as http:
        r = await http.post("/api/v1/executions/start", json={"capability": "probe.wait", "input": {"key": "h"}})
        assert r.status_code == 200
        view = r.json()
        assert (view["state"], view["actor"]["kind"], view["last_sequence"]) == ("queued", "http", 2)
        await gates["h"].entered.wait()
        listing = (await http.get("/api/v1/executions", params={"state": "running"})).json()
        assert [x["id"] for x in listing["executions"]] == [view["id"]]
        got = (await http.get("/api/v1/executions/get", params={"id": view["id"]})).json()
        assert got["state"] == "running"
        page = (await http.get("/api/v1/executions/events", params={"id": view["id"], "after": 1})).json()
        assert [e["sequence"] for e in page["events"]] == [2, 3]
        cancel = await http.post("/api/v1/executions/cancel", json={"id": view["id"]})
        assert cancel.status_code == 200
        assert (cancel.json()["outcome"], cancel.json()["execution"]["state"]) == ("requested", "cancelling")
        await engine.store.get(view["id"]).done.wait()
        again = (await http.post("/api/v1/executions/cancel", json={"id": view["id"]})).json()
        assert (again["outcome"], again["execution"]["state"]) == ("already_finished", "cancelled")
        events = (await http.get("/api/v1/executions/events", params={"id": view["id"]})).json()
        assert events["events"][-2]["data"] == {"by": "http"}


async def test_start_refusals_over_http(probe_server: str, engine: Engine) -> None:
    async with httpx.AsyncClient(base_url=probe_server) as http:
        start_ = functools.partial(http.post, "/api/v1/executions/start")
        assert_error(await start_(json={"capability": "no.such"}), 404, "not_found")
        assert_error(await start_(json={"capability": "probe.later"}), 422, "refused", "not executable")
        assert_error(await start_(json={"capability": "probe.document"}), 422, "refused", "not executable")
        assert_error(
            await start_(json={"capability": "executions.demonstrate", "input": {"delay_ms": 10001}}),
            400,
            "invalid_input",
            "$.delay_ms",
        )
        assert_error(await start_(json={"capability": "executions.demonstrate", "input": [1]}), 400, "invalid_input")
        assert_error(await http.get("/api/v1/executions/get", params={"id": "../x"}), 400, "invalid_input")
        assert_error(await http.get("/api/v1/executions/get", params={"id": UNKNOWN}), 404, "not_found")
        assert_error(await http.post("/api/v1/executions/cancel", json={"id": UNKNOWN}), 404, "not_found")
        assert_error(await http.get("/api/v1/executions", params={"limit": 201}), 400, "invalid_input")
        assert_error(
            await http.get("/api/v1/executions/events", params={"id": UNKNOWN, "limit": 501}), 400, "invalid_input"
        )
        engine.stopping = True
        assert_error(await start_(json={"capability": "executions.demonstrate"}), 503, "unavailable")
        assert len(engine.store) == 0


async def test_report_over_http_applies_each_event_once(probe_server: str, engine: Engine) -> None:
    run = LocalRun()
    run.emit("execution.started")
    run.logs(3)
    first = await post(probe_server, "/api/v1/executions/report", run.body(run.events()))
    assert first.status_code == 200, first.text
    assert {k: first.json()[k] for k in ("applied", "through", "cancel_requested")} == {
        "applied": 6,
        "through": 6,
        "cancel_requested": False,
    }
    assert first.json()["execution"]["actor"] == {"kind": "cli", "peer": None, "pid": 4242}
    again = await post(probe_server, "/api/v1/executions/report", run.body(run.events()))
    assert (again.json()["applied"], again.json()["through"]) == (0, 6)
    heartbeat = await post(probe_server, "/api/v1/executions/report", run.body([]))
    assert (heartbeat.json()["applied"], heartbeat.json()["through"]) == (0, 6)
    assert engine.store.get(run.id).event_count == 6
    other_pid = await post(probe_server, "/api/v1/executions/report", run.body([], pid=7))
    assert_error(other_pid, 422, "refused", f"belongs to pid {run.pid}")
    unknown = LocalRun("no.such")
    assert_error(await post(probe_server, "/api/v1/executions/report", unknown.body([])), 404, "not_found")
    big = LocalRun()
    big.emit("execution.started")
    big.logs(498)
    assert_error(await post(probe_server, "/api/v1/executions/report", big.body(big.events())), 400, "invalid_input")
    assert engine.store.find(big.id) is None
    bad_pid = await post(probe_server, "/api/v1/executions/report", big.body([], pid=0))
    assert_error(bad_pid, 400, "invalid_input")
    engine.stopping = True
    assert_error(await post(probe_server, "/api/v1/executions/report", run.body([])), 503, "unavailable")


# -- an upgraded socket (the channel owns the connection) --------------------------------------------


class SocketPeer:
    """A wsproto client on one end of an in-memory stream whose other end `serve_stream` serves."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self.ws = WSConnection(ConnectionType.CLIENT)
        self.events: list[Any] = []
        self.reads = 0

    async def handshake(self, target: str = "/events", headers: list[tuple[bytes, bytes]] | None = None) -> Any:
        """Send the upgrade; the handshake answer (`AcceptConnection` or `RejectConnection`)."""
        request = Request(host="127.0.0.1:8741", target=target, extra_headers=headers or [])
        await self.stream.send_all(self.ws.send(request))
        return await self.next_event()

    async def next_event(self) -> Any:
        while not self.events:
            data = await self.stream.receive_some(1 << 20)
            self.reads += 1
            self.ws.receive_data(bytes(data) if data else None)
            self.events.extend(self.ws.events())
        return self.events.pop(0)

    async def frame(self) -> Message:
        """The next text message, whole (wsproto hands a message split across reads in parts)."""
        parts: list[str] = []
        while True:
            event = await self.next_event()
            assert isinstance(event, TextMessage), event
            parts.append(event.data)
            if event.message_finished:
                decoded: Message = msgspec.json.decode("".join(parts))
                return decoded


@asynccontextmanager
async def socket_peer(channel: EventsChannel) -> AsyncIterator[SocketPeer]:
    """`serve_stream` on one end of an in-memory stream pair (its head read as the listener reads it)."""
    client, server = trio.testing.memory_stream_pair()
    peer = SocketPeer(client)

    async def serve() -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            head += await server.receive_some(1 << 16)
        await channel.serve_stream(server, head)  # type: ignore[arg-type]

    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve)
        yield peer
        nursery.cancel_scope.cancel()


async def test_a_socket_subscriber_gets_ready_the_replay_and_live_frames(
    channel: EventsChannel, engine: Engine
) -> None:
    x = start(engine, "probe.emit", count=3)
    await x.done.wait()
    async with socket_peer(channel) as peer:
        assert isinstance(await peer.handshake(f"/events?execution={x.id}&after=2"), AcceptConnection)
        ready = await peer.frame()
        assert ready["type"] == "stream.ready"
        assert (ready["data"]["replayed"], ready["data"]["truncated"]) == (x.last_sequence - 2, False)
        assert sequences([await peer.frame() for _ in range(x.last_sequence - 2)]) == list(
            range(3, x.last_sequence + 1)
        )
        assert engine.live_channels == 1


async def test_frames_queued_together_leave_in_one_write(channel: EventsChannel, engine: Engine) -> None:
    async with socket_peer(channel) as peer:
        assert isinstance(await peer.handshake(), AcceptConnection)
        assert (await peer.frame())["type"] == "stream.ready"
        reads = peer.reads
        run = LocalRun()
        run.emit("execution.started")
        run.logs(300)
        run.report(engine, run.events())  # 303 events published in one step
        frames = [await peer.frame() for _ in range(303)]
        assert sequences(frames) == list(range(1, 304))
        assert peer.reads - reads == 1


@pytest.mark.parametrize(
    ("target", "headers", "status", "code"),
    [
        (f"/events?execution={UNKNOWN}", [], 404, "not_found"),
        ("/events?after=x", [], 400, "invalid_input"),
        ("/events", [(b"origin", b"http://evil.example")], 403, "forbidden"),
    ],
)
async def test_a_socket_upgrade_is_refused_with_an_error_body(
    channel: EventsChannel, target: str, headers: list[tuple[bytes, bytes]], status: int, code: str
) -> None:
    async with socket_peer(channel) as peer:
        refused = await peer.handshake(target, headers)
        assert isinstance(refused, RejectConnection)
        assert refused.status_code == status
        assert (b"content-type", b"application/json") in refused.headers
        body = await peer.next_event()
        assert isinstance(body, RejectData)
        assert msgspec.json.decode(body.data)["error"]["code"] == code


async def test_a_malformed_upgrade_is_answered_400(channel: EventsChannel) -> None:
    client, server = trio.testing.memory_stream_pair()
    head = b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
    async with trio.open_nursery() as nursery:
        nursery.start_soon(channel.serve_stream, cast("trio.SocketStream", server), head)
        answer = b""
        while True:
            data = await client.receive_some(1 << 16)
            if not data:
                break
            answer += data
    assert answer.startswith(b"HTTP/1.1 400 ")
    body = msgspec.json.decode(answer.split(b"\r\n\r\n", 1)[1])
    assert body["error"]["code"] == "invalid_input"
    assert "Sec-WebSocket" in body["error"]["message"]


async def test_a_quiet_socket_is_pinged_and_a_client_ping_is_answered(
    channel: EventsChannel, engine: Engine, autojump_clock: trio.testing.MockClock
) -> None:
    async with socket_peer(channel) as peer:
        assert isinstance(await peer.handshake(), AcceptConnection)
        assert (await peer.frame())["type"] == "stream.ready"
        began = trio.current_time()
        assert isinstance(await peer.next_event(), Ping)
        assert trio.current_time() - began == pytest.approx(engine.limits.heartbeat_seconds)
        await peer.stream.send_all(peer.ws.send(Ping(payload=b"hi")))
        pong = await peer.next_event()
        assert isinstance(pong, Pong)
        assert pong.payload == b"hi"


async def test_a_socket_client_close_is_answered_and_forgets_the_subscriber(
    channel: EventsChannel, engine: Engine
) -> None:
    async with socket_peer(channel) as peer:
        assert isinstance(await peer.handshake(), AcceptConnection)
        assert (await peer.frame())["type"] == "stream.ready"
        assert engine.live_channels == 1
        await peer.stream.send_all(peer.ws.send(CloseConnection(code=1000)))
        answer = await peer.next_event()
        assert isinstance(answer, CloseConnection)
        assert answer.code == 1000
        assert await peer.stream.receive_some(1 << 16) == b""
    assert engine.live_channels == 0
    assert engine.store.subscribers == set()


async def test_a_socket_gets_stream_closing_then_close_1001(channel: EventsChannel, engine: Engine) -> None:
    async with socket_peer(channel) as peer:
        assert isinstance(await peer.handshake(), AcceptConnection)
        assert (await peer.frame())["type"] == "stream.ready"
        engine.close_channels("server shutdown")
        assert await peer.frame() == {"type": "stream.closing", "data": {"reason": "server shutdown"}}
        close = await peer.next_event()
        assert isinstance(close, CloseConnection)
        assert close.code == 1001
        await peer.stream.send_all(peer.ws.send(close.response()))
        assert await peer.stream.receive_some(1 << 16) == b""
    assert engine.live_channels == 0


async def test_a_client_that_vanishes_is_forgotten(channel: EventsChannel, engine: Engine) -> None:
    async with socket_peer(channel) as peer:
        assert isinstance(await peer.handshake(), AcceptConnection)
        assert (await peer.frame())["type"] == "stream.ready"
        await peer.stream.aclose()
        while engine.live_channels:
            await trio.testing.wait_all_tasks_blocked()
    assert engine.store.subscribers == set()


async def test_an_upgrade_after_a_request_on_the_same_connection_is_served_through_asgi(probe_server: str) -> None:
    """The listener reads only each connection's first request; hypercorn serves what follows, upgrades too."""
    port = port_of(probe_server)
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        client = h11.Connection(h11.CLIENT)
        host = ("Host", f"127.0.0.1:{port}")
        await stream.send_all(client.send(h11.Request(method="GET", target="/api/v1/executions", headers=[host])))
        await stream.send_all(client.send(h11.EndOfMessage()))
        events: list[Any] = []
        while not any(isinstance(e, h11.EndOfMessage) for e in events):
            client.receive_data(await stream.receive_some(1 << 16))
            while (event := client.next_event()) is not h11.NEED_DATA:
                events.append(event)
        assert events[0].status_code == 200
        ws = WSConnection(ConnectionType.CLIENT)
        await stream.send_all(ws.send(Request(host=f"127.0.0.1:{port}", target="/events")))
        received: list[Any] = []
        while not any(isinstance(e, TextMessage) for e in received):
            ws.receive_data(await stream.receive_some(1 << 16))
            received.extend(ws.events())
        assert isinstance(received[0], AcceptConnection)
        assert msgspec.json.decode(received[1].data)["type"] == "stream.ready"


async def test_real_shutdown_sends_stream_closing_and_1001(probe_executor: Executor) -> None:
    shutdown = trio.Event()
    async with trio.open_nursery() as nursery:
        url: str = await nursery.start(functools.partial(serve_http, probe_executor, port=0, shutdown=shutdown))
        async with own_websocket(url, "/events", queue=8) as ws:
            assert msgspec.json.decode(await ws.get_message())["type"] == "stream.ready"
            shutdown.set()
            assert msgspec.json.decode(await ws.get_message()) == {
                "type": "stream.closing",
                "data": {"reason": "server shutdown"},
            }
            with pytest.raises(trio_websocket.ConnectionClosed) as closed:
                await ws.get_message()
            assert closed.value.reason is not None
            assert closed.value.reason.code == 1001


async def test_a_handshake_in_flight_counts_against_max_connections(make_engine: Callable[..., Engine]) -> None:
    engine = make_engine(max_connections=1)
    channel = EventsChannel(engine)
    head = SocketPeer(trio.testing.memory_stream_pair()[0]).ws.send(Request(host="127.0.0.1:8741", target="/events"))
    first_client, first_server = trio.testing.lockstep_stream_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(channel.serve_stream, cast("trio.SocketStream", first_server), head)
        await trio.testing.wait_all_tasks_blocked()  # blocked writing its accept: the client reads nothing yet
        assert engine.live_channels == 1
        async with socket_peer(channel) as second:
            refused = await second.handshake()
            assert isinstance(refused, RejectConnection)
            assert refused.status_code == 503
        await first_client.aclose()
    assert engine.live_channels == 0
