"""`/events` topics: `plan.changed` on a move by the command line and on a hand edit, `mesh.changed` on a claim,
replay by cursor, and subscriptions that mix topics with executions (existing clients unchanged).

The plan tests run a real server with its repository watcher over a checkout holding a small plan, and open
the channel with trio-websocket; every wait is bounded with `trio.fail_after`.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
import trio
import trio.testing
import trio_websocket

from svc.api import _topics, serve_http
from svc.api._events import EventsChannel
from svc.api._topics import Topics
from svc.host._service import open_service
from svc.layer import Repository
from svc.nursery import Engine
from svc.runtime import Executor
from tests.api.test_events import connect, opened
from tests.capabilities._served import serving as serving_mesh
from tests.nursery._probe import start

Message = dict[str, Any]
SVC = [sys.executable, "-m", "svc"]
#: Bound of one wait for a frame: a watcher round (notifications, 100 ms batches) and one derivation.
FRAME_SECONDS = 10
#: Bound of a command-line move (a fresh Python process).
CLI_SECONDS = 60


@pytest.fixture
async def watched(planned: Path) -> AsyncIterator[Executor]:
    """The service over the planned checkout, its repository watcher running (as `svc serve` runs it)."""
    async with open_service(Repository.discover(planned), surface="http", watch=True) as ex:
        yield ex


@pytest.fixture
async def plan_server(watched: Executor, nursery: trio.Nursery) -> AsyncIterator[str]:
    shutdown = trio.Event()
    url: str = await nursery.start(functools.partial(serve_http, watched, port=0, shutdown=shutdown))
    yield url
    shutdown.set()


@asynccontextmanager
async def channel_of(url: str, query: str) -> AsyncIterator[trio_websocket.WebSocketConnection]:
    ws_url = url.replace("http://", "ws://") + "/events" + (f"?{query}" if query else "")
    async with trio_websocket.open_websocket_url(ws_url, disconnect_timeout=2) as ws:
        yield ws


async def frame(ws: trio_websocket.WebSocketConnection) -> Message:
    with trio.fail_after(FRAME_SECONDS):
        decoded: Message = msgspec.json.decode(await ws.get_message())
    return decoded


def named(change: Message) -> dict[str, Message]:
    return {issue["id"]: issue for issue in change["data"]["issues"]}


async def plan_cli(root: Path, *args: str) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with trio.fail_after(CLI_SECONDS):
        done = await trio.run_process(
            [*SVC, "plan", *args], cwd=root, env=env, capture_stdout=True, capture_stderr=True
        )
    assert done.returncode == 0, done.stderr


def hand_edit(root: Path, issue: str, text: str) -> None:
    """Append `text` to an issue's record, as an editor saving in place would."""
    record = root / ".ai/repo/project/issues" / f"{issue}.yaml"
    with record.open("ab") as file:
        file.write(text.encode())


# -- plan.changed ------------------------------------------------------------------------------------


async def test_a_move_by_the_command_line_sends_plan_changed_naming_the_issue_and_its_dependents(
    plan_server: str, watched: Executor, planned: Path
) -> None:
    async with channel_of(plan_server, "topic=plan") as ws:
        ready = await frame(ws)
        assert ready == {
            "type": "stream.ready",
            "data": {
                "protocol_version": "1",
                "scope": "none",
                "replayed": 0,
                "truncated": False,
                "heartbeat_seconds": 20,
                "topics": [{"topic": "plan", "last_sequence": 0, "replayed": 0, "truncated": False, "active": True}],
            },
        }
        before = watched.runtime.generation.value
        await plan_cli(planned, "start", "I0001")
        changed = await frame(ws)
        assert (changed["type"], changed["topic"], changed["sequence"], changed["event_id"]) == (
            "plan.changed",
            "plan",
            1,
            "plan#1",
        )
        assert changed["data"]["generation"] > before
        assert changed["data"]["generation"] <= watched.runtime.generation.value
        assert named(changed) == {
            "I0001": {
                "id": "I0001",
                "before": {"status": "READY", "wave": 0, "blocked_by": []},
                "after": {"status": "ACTIVE", "wave": 0, "blocked_by": []},
                "dependents": ["I0004"],
            }
        }
        assert str(planned) not in msgspec.json.encode(changed).decode()


async def test_a_hand_edit_sends_plan_changed_for_the_issue_and_the_dependents_it_moved(
    plan_server: str, planned: Path
) -> None:
    async with channel_of(plan_server, "topic=plan") as ws:
        assert (await frame(ws))["type"] == "stream.ready"
        hand_edit(planned, "I0001", "depends_on:\n- I0003\n")
        changed = await frame(ws)
        assert changed["type"] == "plan.changed"
        issues = named(changed)
        assert sorted(issues) == ["I0001", "I0004"]
        assert issues["I0001"]["before"] == {"status": "READY", "wave": 0, "blocked_by": []}
        assert issues["I0001"]["after"] == {"status": "BLOCKED", "wave": 1, "blocked_by": ["I0003"]}
        assert issues["I0001"]["dependents"] == ["I0004"]
        assert (issues["I0004"]["before"]["wave"], issues["I0004"]["after"]["wave"]) == (1, 2)
        assert issues["I0004"]["after"]["status"] == "BLOCKED"


async def test_plan_frames_replay_by_cursor_without_gap_or_duplicate(plan_server: str, planned: Path) -> None:
    async with channel_of(plan_server, "topic=plan") as ws:
        await frame(ws)
        hand_edit(planned, "I0001", "depends_on:\n- I0003\n")
        first = await frame(ws)
    assert first["sequence"] == 1
    # Nobody listens: the plan is still followed (the linger), so a reconnect from its cursor misses nothing.
    hand_edit(planned, "I0002", "depends_on:\n- I0003\n")
    async with channel_of(plan_server, "topic=plan") as ws:
        ready = await frame(ws)
        seen = ready["data"]["topics"][0]["last_sequence"]
        if seen < 2:  # the edit's round had not run yet: it comes live
            second = await frame(ws)
            assert second["sequence"] == 2
    async with channel_of(plan_server, "topic=plan&plan_after=1") as ws:
        ready = await frame(ws)
        assert ready["data"]["topics"] == [
            {"topic": "plan", "last_sequence": 2, "replayed": 1, "truncated": False, "active": True}
        ]
        replayed = await frame(ws)
        assert (replayed["sequence"], sorted(named(replayed))) == (2, ["I0002"])
    async with channel_of(plan_server, "topic=plan&plan_after=0") as ws:
        ready = await frame(ws)
        assert ready["data"]["topics"][0]["replayed"] == 2
        assert [(await frame(ws))["sequence"] for _ in range(2)] == [1, 2]
        # Live after the replay, numbered on.
        hand_edit(planned, "I0006", "depends_on:\n- I0002\n")
        live = await frame(ws)
        assert (live["sequence"], "I0006" in named(live)) == (3, True)
    async with channel_of(plan_server, "topic=plan&plan_after=99") as ws:
        ready = await frame(ws)
        assert ready["data"]["topics"] == [
            {"topic": "plan", "last_sequence": 3, "replayed": 0, "truncated": True, "active": True}
        ]


async def test_a_cursor_from_before_a_pause_reads_truncated(
    plan_server: str, watched: Executor, planned: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_topics, "LINGER_SECONDS", 0.0)
    async with channel_of(plan_server, "topic=plan") as ws:
        await frame(ws)
        hand_edit(planned, "I0001", "depends_on:\n- I0003\n")
        assert (await frame(ws))["sequence"] == 1
    await trio.testing.wait_all_tasks_blocked()  # the server saw the close
    plan = Topics.of(watched.components.get(Engine)).plan
    assert plan.subscribers == 0
    # Nobody listens and nothing lingers: the round of this edit drops the view, and the change is never sent.
    dropped = trio.Event()
    token = trio.lowlevel.current_trio_token()

    def seen() -> None:  # a hook after the topic's own: it runs once the topic has seen the round
        if not plan.holding:
            trio.from_thread.run_sync(dropped.set, trio_token=token)

    watched.runtime.generation.hooks.append(seen)
    hand_edit(planned, "I0002", "depends_on:\n- I0003\n")
    with trio.fail_after(FRAME_SECONDS):
        await dropped.wait()
    async with channel_of(plan_server, "topic=plan&plan_after=1") as ws:
        ready = await frame(ws)
        assert ready["data"]["topics"] == [
            {"topic": "plan", "last_sequence": 1, "replayed": 0, "truncated": True, "active": True}
        ]


# -- subscriptions mixing topics and executions (in memory) ----------------------------------------------


async def test_a_topic_only_channel_gets_no_execution_frames_and_old_queries_are_unchanged(engine: Engine) -> None:
    channel = EventsChannel(engine)
    async with connect(channel, "topic=plan") as plan_only, connect(channel) as everything:
        ready = await opened(plan_only)
        assert ready["scope"] == "none"
        assert ready["topics"] == [
            {"topic": "plan", "last_sequence": 0, "replayed": 0, "truncated": False, "active": True}
        ]
        old = await opened(everything)
        assert "topics" not in old
        assert old["scope"] == "all"
        x = start(engine, "probe.emit", count=2)
        await x.done.wait()
        await trio.testing.wait_all_tasks_blocked()
        assert plan_only.drain() == []
        assert [f["type"] for f in everything.drain()][-1] == "execution.completed"
    async with connect(channel, "topic=plan&topic=executions&topic=mesh") as both:
        ready = await opened(both)
        assert ready["scope"] == "all"
        assert ready["topics"] == [
            {"topic": "plan", "last_sequence": 0, "replayed": 0, "truncated": False, "active": True},
            {"topic": "mesh", "last_sequence": 0, "replayed": 0, "truncated": False, "active": False},
        ]
    assert channel.topics.plan.subscribers == 0
    assert not channel.topics.plan.log.subscribers
    assert not engine.store.subscribers


# -- mesh.changed ------------------------------------------------------------------------------------


async def until_frame(ws: trio_websocket.WebSocketConnection, done: Callable[[Message], bool]) -> Message:
    """The first frame `done` holds for (mesh beats change sessions on their own: skip the others)."""
    while True:
        got = await frame(ws)
        if done(got):
            return got


def claim_moved(key: str, after: str) -> Callable[[Message], bool]:
    def done(message: Message) -> bool:
        if message["type"] != "mesh.changed":
            return False
        return any(c["key"] == key and c["after"] == after for c in message["data"]["claims"])

    return done


async def test_a_claim_and_its_release_send_mesh_changed_and_replay_by_cursor(tmp_path: Path, state: Path) -> None:
    async with serving_mesh(tmp_path, 1) as [a]:
        async with channel_of(a.url, "topic=mesh") as ws:
            ready = await frame(ws)
            assert ready["data"]["topics"][0]["active"] is True
            async with httpx.AsyncClient(base_url=a.url) as http:
                written = await http.post("/api/v1/mesh/claims", json={"scope": ["src/"], "session": "s1"})
                assert written.status_code == 200, written.text
                key = written.json()["key"]
                held = await until_frame(ws, claim_moved(key, "held"))
                assert held["data"]["digest"] != held["data"]["previous"]
                change = next(c for c in held["data"]["claims"] if c["key"] == key)
                assert change == {"key": key, "before": None, "after": "held"}
                released = await http.post("/api/v1/mesh/claims/release", json={"claim": key})
                assert released.status_code == 200, released.text
            gone = await until_frame(ws, claim_moved(key, "released"))
            assert next(c for c in gone["data"]["claims"] if c["key"] == key)["before"] == "held"
            assert gone["data"]["previous"] is not None
        cursor = held["sequence"]
        async with channel_of(a.url, f"topic=mesh&mesh_after={cursor}") as ws:
            ready = await frame(ws)
            (topic,) = ready["data"]["topics"]
            assert topic["truncated"] is False
            assert topic["replayed"] == topic["last_sequence"] - cursor >= 1
            replayed = [await frame(ws) for _ in range(topic["replayed"])]
            assert [f["sequence"] for f in replayed] == list(range(cursor + 1, topic["last_sequence"] + 1))
            assert any(claim_moved(key, "released")(f) for f in replayed)


async def test_without_cooperation_the_mesh_topic_is_inactive(tmp_path: Path, state: Path) -> None:
    async with serving_mesh(tmp_path, 1, declared=False) as [a], channel_of(a.url, "topic=mesh") as ws:
        ready = await frame(ws)
        assert ready["data"]["topics"] == [
            {"topic": "mesh", "last_sequence": 0, "replayed": 0, "truncated": False, "active": False}
        ]
