"""The execution store alone: every bound at its edge, the state machine, sanitising, ids, subscribers.

No engine and no handler: events are published straight into a store, as the engine and reports do.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
import pytest

from svc import InvalidInput, Unavailable
from svc.nursery import (
    EVENT_TYPES,
    Execution,
    ExecutionStore,
    IllegalMove,
    Limits,
    Subscriber,
    check_execution_id,
    new_execution_id,
)
from svc.nursery._events import ActorView, RepositoryRef, sanitize
from tests.nursery._probe import ALLOWED, FINAL_STATES, STATE_OF, retained

ACTOR = ActorView(kind="internal")
REPO = RepositoryRef(name="probe", id="probe")
ERROR = {"error": {"code": "internal", "message": "boom", "correlation_id": "c"}}
#: Data valid for each event type.
DATA: dict[str, dict[str, Any]] = {
    "execution.created": {"capability": "probe.wait", "title": "t", "input": {}},
    "execution.queued": {"ahead": 0},
    "execution.started": {},
    "execution.progress": {"current": 1, "total": 2, "message": "half"},
    "execution.step.started": {"name": "s", "title": "S"},
    "execution.step.completed": {"name": "s", "ok": True},
    "execution.log": {"stream": "handler", "message": "m"},
    "execution.diagnostic": {"severity": "info", "code": "c", "summary": "s"},
    "execution.cancelling": {"by": "http"},
    "execution.cancelled": {},
    "execution.completed": {"output": {"ok": True}},
    "execution.failed": ERROR,
}
#: Event types that move no state.
INERT = (
    "execution.progress",
    "execution.step.started",
    "execution.step.completed",
    "execution.log",
    "execution.diagnostic",
)
#: How to reach each state from a fresh (queued) execution.
PATHS: dict[str, tuple[str, ...]] = {
    "queued": (),
    "running": ("execution.started",),
    "cancelling": ("execution.started", "execution.cancelling"),
    "succeeded": ("execution.started", "execution.completed"),
    "failed": ("execution.started", "execution.failed"),
    "cancelled": ("execution.cancelled",),
}


def new(store: ExecutionStore, *, capability: str = "probe.wait") -> Execution:
    return store.create(
        execution_id=None,
        capability=capability,
        title="Probe",
        input={},
        cancellable=True,
        actor=ACTOR,
        repository=REPO,
    )


def publish(store: ExecutionStore, x: Execution, *kinds: str) -> None:
    for kind in kinds:
        store.publish(x, kind, dict(DATA[kind]))


def in_state(store: ExecutionStore, state: str) -> Execution:
    x = new(store)
    publish(store, x, *PATHS[state])
    assert x.state == state
    return x


def sequences(x: Execution) -> list[int]:
    return [e.sequence for e in retained(x)]


def listening(store: ExecutionStore, capacity: int = 10_000) -> Subscriber:
    subscriber = Subscriber(None, capacity, 1 << 30)
    store.subscribers.add(subscriber)
    return subscriber


def decoded(frames: list[str]) -> list[dict[str, Any]]:
    return [msgspec.json.decode(f) for f in frames]


# -- creation ------------------------------------------------------------------------------------------


async def test_create_publishes_created_then_queued_with_dense_sequences() -> None:
    store = ExecutionStore()
    x = new(store)
    assert x.state == "queued"
    assert [(e.sequence, e.type) for e in retained(x)] == [(1, "execution.created"), (2, "execution.queued")]
    created = retained(x)[0]
    assert created.event_id == f"{x.id}#1"
    assert created.schema_version == "1"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", created.timestamp)
    assert created.data == {"capability": "probe.wait", "title": "Probe", "input": {}}
    second = new(store)
    assert retained(second)[1].data == {"ahead": 1}


# -- bounds at their edges ---------------------------------------------------------------------------


async def test_max_events_keeps_exactly_the_bound_then_drops_the_oldest() -> None:
    store = ExecutionStore(Limits(max_events=5))
    x = new(store)
    publish(store, x, "execution.started", "execution.log", "execution.log")
    assert sequences(x) == [1, 2, 3, 4, 5]
    assert x.truncated is False
    assert store.view(x).events_truncated is False
    publish(store, x, "execution.log")
    assert sequences(x) == [2, 3, 4, 5, 6]
    assert x.truncated is True
    view = store.view(x)
    assert view.events_truncated is True
    assert (view.event_count, view.last_sequence) == (6, 6)


async def test_max_log_chars_cuts_longer_text_with_an_ellipsis() -> None:
    store = ExecutionStore(Limits(max_log_chars=10))
    x = in_state(store, "running")
    store.publish(x, "execution.log", {"stream": "stdout", "message": "a" * 10})
    store.publish(x, "execution.log", {"stream": "stdout", "message": "b" * 11})
    store.publish(x, "execution.progress", {"current": 1, "message": "c" * 50})
    store.publish(x, "execution.step.started", {"name": "n" * 11, "title": "t" * 11})
    store.publish(x, "execution.diagnostic", {"severity": "info", "code": "c", "summary": "s" * 11})
    logs = [e.data["message"] for e in retained(x) if e.type == "execution.log"]
    assert logs == ["a" * 10, "b" * 9 + "…"]
    assert x.progress is not None
    assert x.progress.message == "c" * 9 + "…"
    assert x.steps[0].title == "t" * 9 + "…"
    assert x.diagnostics[0].summary == "s" * 9 + "…"
    assert all(len(e.data.get("message", "")) <= 10 for e in retained(x) if e.type == "execution.log")


async def test_max_diagnostics_keeps_the_first_ones_in_the_view_and_publishes_every_event() -> None:
    store = ExecutionStore(Limits(max_diagnostics=3))
    x = in_state(store, "running")
    for n in range(3):
        store.publish(x, "execution.diagnostic", {"severity": "info", "code": f"d{n}", "summary": "s"})
    assert [d.code for d in store.view(x).diagnostics] == ["d0", "d1", "d2"]
    store.publish(x, "execution.diagnostic", {"severity": "error", "code": "d3", "summary": "s"})
    assert [d.code for d in store.view(x).diagnostics] == ["d0", "d1", "d2"]
    assert [e.data["code"] for e in retained(x) if e.type == "execution.diagnostic"] == ["d0", "d1", "d2", "d3"]


async def test_max_executions_evicts_the_oldest_finished_never_an_unfinished_one() -> None:
    store = ExecutionStore(Limits(max_executions=3))
    running = in_state(store, "running")
    done_first = in_state(store, "succeeded")
    done_second = in_state(store, "cancelled")
    assert len(store) == 3
    fourth = new(store)
    assert [x.id for x in store] == [running.id, done_second.id, fourth.id]
    assert store.find(done_first.id) is None
    fifth = new(store)
    assert [x.id for x in store] == [running.id, fourth.id, fifth.id]


async def test_a_store_full_of_unfinished_executions_refuses_a_new_one_and_publishes_nothing() -> None:
    store = ExecutionStore(Limits(max_executions=2))
    kept = [new(store), in_state(store, "cancelling")]
    subscriber = listening(store)
    with pytest.raises(Unavailable, match="2 executions are unfinished"):
        new(store)
    assert [x.id for x in store] == [x.id for x in kept]
    assert not subscriber.frames


async def test_max_subscriber_queue_holds_exactly_the_bound_then_reports_stream_lagged() -> None:
    store = ExecutionStore(Limits(max_subscriber_queue=3))
    x = in_state(store, "running")
    slow, _, _ = store.subscribe(None)
    fast = listening(store)
    for n in range(3):
        store.publish(x, "execution.log", {"stream": "stdout", "message": f"{n}"})
    assert (len(slow.frames), slow.dropped) == (3, 0)
    store.publish(x, "execution.log", {"stream": "stdout", "message": "3"})
    store.publish(x, "execution.log", {"stream": "stdout", "message": "4"})
    assert (len(slow.frames), slow.dropped) == (3, 2)
    assert [f["sequence"] for f in decoded(await slow.next_frames())] == [4, 5, 6]
    assert decoded(await slow.next_frames()) == [{"type": "stream.lagged", "data": {"dropped": 2}}]
    store.publish(x, "execution.log", {"stream": "stdout", "message": "5"})
    assert [f["sequence"] for f in decoded(await slow.next_frames())] == [9]
    assert [f["sequence"] for f in decoded(list(fast.frames))] == [4, 5, 6, 7, 8, 9]


async def test_overflow_after_a_drop_is_reported_before_the_next_frame() -> None:
    subscriber = Subscriber(None, 1, 1 << 20)
    subscriber.offer("x", 1, "one")
    subscriber.offer("x", 2, "two")
    assert await subscriber.next_frames() == ["one"]
    subscriber.offer("x", 3, "three")
    assert await subscriber.next_frames() == ['{"type":"stream.lagged","data":{"dropped":1}}', "three"]


async def test_a_frame_over_the_frame_bound_is_dropped_and_counted() -> None:
    store = ExecutionStore(Limits(max_frame_bytes=400))
    x = in_state(store, "running")
    subscriber, _, _ = store.subscribe(None)
    store.publish(x, "execution.log", {"stream": "stdout", "message": "y" * 500})
    store.publish(x, "execution.log", {"stream": "stdout", "message": "short"})
    frames = decoded(await subscriber.next_frames())
    assert frames[0] == {"type": "stream.lagged", "data": {"dropped": 1}}
    assert frames[1]["data"]["message"] == "short"


async def test_max_replay_replays_exactly_the_bound_and_marks_older_events_left_out() -> None:
    store = ExecutionStore(Limits(max_replay=3))
    x = new(store)
    publish(store, x, "execution.started")
    _, replay, truncated = store.subscribe(frozenset({x.id}))
    assert [f["sequence"] for f in decoded(replay)] == [1, 2, 3]
    assert truncated is False
    publish(store, x, "execution.log", "execution.log")
    _, replay, truncated = store.subscribe(frozenset({x.id}))
    assert [f["sequence"] for f in decoded(replay)] == [3, 4, 5]
    assert truncated is True
    _, replay, truncated = store.subscribe(frozenset({x.id}), after=2)
    assert [f["sequence"] for f in decoded(replay)] == [3, 4, 5]
    assert truncated is False


async def test_replay_after_store_drops_is_truncated() -> None:
    store = ExecutionStore(Limits(max_events=3))
    x = new(store)
    publish(store, x, "execution.started", "execution.log", "execution.log")
    _, replay, truncated = store.subscribe(frozenset({x.id}))
    assert [f["sequence"] for f in decoded(replay)] == [3, 4, 5]
    assert truncated is True


async def test_a_reconnect_at_the_last_sequence_is_not_truncated() -> None:
    """Nothing was left out: the cursor is already past every event the store dropped."""
    store = ExecutionStore(Limits(max_events=3))
    x = new(store)
    publish(store, x, "execution.started", "execution.log", "execution.log")
    assert x.truncated is True
    _, replay, truncated = store.subscribe(frozenset({x.id}), after=x.last_sequence)
    assert replay == []
    assert truncated is False


# -- subscribing: no gap, no duplicate ------------------------------------------------------------------


async def test_subscribe_takes_the_replay_and_goes_live_with_no_gap_and_no_duplicate() -> None:
    store = ExecutionStore()
    x = new(store)
    publish(store, x, "execution.started", "execution.log")
    subscriber, replay, _ = store.subscribe(frozenset({x.id}), after=1)
    publish(store, x, "execution.log", "execution.completed")
    seen = [f["sequence"] for f in decoded(replay)] + [f["sequence"] for f in decoded(await subscriber.next_frames())]
    assert seen == [2, 3, 4, 5, 6]


async def test_a_live_frame_at_or_below_the_replay_mark_is_skipped() -> None:
    store = ExecutionStore()
    x = new(store)
    subscriber, replay, _ = store.subscribe(frozenset({x.id}))
    assert len(replay) == 2
    subscriber.offer(x.id, 2, "duplicate")
    subscriber.offer(x.id, 3, "fresh")
    assert list(subscriber.frames) == ["fresh"]


async def test_a_cursor_beyond_the_last_sequence_replays_nothing_and_skips_up_to_it() -> None:
    store = ExecutionStore()
    x = new(store)
    subscriber, replay, _ = store.subscribe(frozenset({x.id}), after=3)
    assert replay == []
    publish(store, x, "execution.started", "execution.log")
    assert [f["sequence"] for f in decoded(list(subscriber.frames))] == [4]


async def test_subscribers_receive_only_their_executions() -> None:
    store = ExecutionStore()
    mine, other = new(store), new(store)
    subscriber, _, _ = store.subscribe(frozenset({mine.id}))
    everything, _, _ = store.subscribe(None)
    publish(store, other, "execution.started")
    publish(store, mine, "execution.started")
    assert {f["execution_id"] for f in decoded(list(subscriber.frames))} == {mine.id}
    assert [f["execution_id"] for f in decoded(list(everything.frames))] == [other.id, mine.id]
    store.unsubscribe(subscriber)
    publish(store, mine, "execution.log")
    assert len(subscriber.frames) == 1


# -- the state machine -------------------------------------------------------------------------------


@pytest.mark.parametrize("state", list(PATHS))
@pytest.mark.parametrize("kind", [k for k in EVENT_TYPES if k in STATE_OF and k != "execution.created"])
async def test_only_listed_moves_are_published(state: str, kind: str) -> None:
    store = ExecutionStore()
    x = in_state(store, state)
    subscriber = listening(store)
    before = (x.state, x.last_sequence, x.event_count, sequences(x))
    target = STATE_OF[kind]
    if state in FINAL_STATES:
        expected = "refused"
    elif target == state:
        expected = "repeat"
    else:
        expected = "moved" if (state, target) in ALLOWED else "refused"
    if expected == "refused":
        with pytest.raises(IllegalMove):
            store.publish(x, kind, dict(DATA[kind]))
        assert (x.state, x.last_sequence, x.event_count, sequences(x)) == before
        assert not subscriber.frames
    elif expected == "repeat":
        store.publish(x, kind, dict(DATA[kind]))
        assert (x.state, x.last_sequence, x.event_count, sequences(x)) == before
        assert not subscriber.frames
    else:
        store.publish(x, kind, dict(DATA[kind]))
        assert x.state == target
        assert x.last_sequence == before[1] + 1
        assert [f["type"] for f in decoded(list(subscriber.frames))] == [kind]


@pytest.mark.parametrize("state", list(PATHS))
@pytest.mark.parametrize("kind", INERT)
async def test_inert_events_are_published_only_while_running_or_cancelling(state: str, kind: str) -> None:
    store = ExecutionStore()
    x = in_state(store, state)
    if state in ("running", "cancelling"):
        store.publish(x, kind, dict(DATA[kind]))
        assert x.state == state
        assert retained(x)[-1].type == kind
    else:
        last = x.last_sequence
        with pytest.raises(IllegalMove):
            store.publish(x, kind, dict(DATA[kind]))
        assert x.last_sequence == last


async def test_created_is_refused_once_the_execution_exists() -> None:
    store = ExecutionStore()
    x = new(store)
    with pytest.raises(IllegalMove, match="already created"):
        store.publish(x, "execution.created", dict(DATA["execution.created"]))
    assert x.last_sequence == 2


@pytest.mark.parametrize("state", ["running", "cancelling"])
async def test_queued_is_refused_once_the_execution_left_queued(state: str) -> None:
    """`execution.queued` says "waiting for a worker": after `started` it would read as a move back."""
    store = ExecutionStore()
    x = in_state(store, state)
    last = x.last_sequence
    with pytest.raises(IllegalMove):
        store.publish(x, "execution.queued", {"ahead": 0})
    assert (x.state, x.last_sequence) == (state, last)


async def test_a_final_state_never_moves_again() -> None:
    store = ExecutionStore()
    for state in sorted(FINAL_STATES):
        x = in_state(store, state)
        for kind in EVENT_TYPES:
            with pytest.raises(IllegalMove, match="never moves again"):
                store.publish(x, kind, dict(DATA[kind]))
        assert x.state == state
        assert x.done.is_set()


async def test_cancelled_gets_the_cancelled_error_and_running_steps_end_failed() -> None:
    store = ExecutionStore()
    x = in_state(store, "running")
    store.publish(x, "execution.step.started", {"name": "one", "title": "One"})
    publish(store, x, "execution.cancelling", "execution.cancelled")
    view = store.view(x)
    assert view.error is not None
    assert (view.error.code, view.error.correlation_id) == ("cancelled", x.id)
    assert view.steps[0].state == "failed"
    assert view.steps[0].finished_at is not None
    assert view.output is None


# -- sanitising --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("plain", "plain"),
        ("tab\tkept", "tab\tkept"),
        ("\x1b[31mred\x1b[0m", "red"),
        ("\x1b[2J\x1b[1;1Hcleared", "cleared"),
        ("\x1b]0;window title\x07after", "after"),
        ("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"),
        ("bell\x07nul\x00del\x7fnl\ncr\r", "bell nul del nl cr "),
        ("lone\x1bescape", "lone escape"),
    ],
)
async def test_sanitize_removes_escapes_and_replaces_controls_but_tab(raw: str, clean: str) -> None:
    assert sanitize(raw, 2000) == clean


async def test_sanitize_replaces_c1_control_characters() -> None:
    """C1 controls (U+0080–U+009F) are control characters too; U+009B is a one-byte CSI in some terminals."""
    clean = sanitize("a\x9b31mb\x85c", 2000)
    assert not any("\x80" <= char <= "\x9f" for char in clean), repr(clean)
    assert clean.startswith("a")
    assert clean.endswith("b c")


@pytest.mark.parametrize("limit", [1, 2, 10])
async def test_sanitize_cuts_at_the_limit_with_an_ellipsis(limit: int) -> None:
    assert sanitize("z" * limit, limit) == "z" * limit
    cut = sanitize("z" * (limit + 1), limit)
    assert len(cut) == limit
    assert cut.endswith("…")


# -- ids ---------------------------------------------------------------------------------------------


async def test_new_ids_have_the_documented_shape_and_parse() -> None:
    for _ in range(20):
        value = new_execution_id()
        assert re.fullmatch(r"x-\d{8}T\d{6}Z-[0-9a-f]{8}", value)
        assert check_execution_id(value) == value


@pytest.mark.parametrize(
    "value",
    [
        "",
        "x-20261121T120000Z-0123ABCD",
        "x-20261121T120000Z-0123abc",
        "x-20261121T120000Z-0123abcde",
        "x-20261121t120000z-0123abcd",
        "y-20261121T120000Z-0123abcd",
        "x-2026112T1120000Z-0123abcd",
        "x-20261121T12000aZ-0123abcd",
        "x-20261121T120000Z_0123abcd",
        "../../etc/passwd",
        "x-20261121T120000Z-0123abcd/../x",
        "x-20261121T120000Z-0123abc/",
        " x-20261121T120000Z-0123abcd",
        "x-20261121T120000Z-0123abcd\n",
    ],
)
async def test_malformed_ids_are_invalid_input(value: str) -> None:
    with pytest.raises(InvalidInput, match="is not an execution id"):
        check_execution_id(value)
    with pytest.raises(InvalidInput):
        ExecutionStore().get(value)
