"""The engine: starting, the worker slots, cancelling, handler failures, redaction, shutdown.

Timed behaviour runs on trio's `autojump_clock` (virtual time); handlers are probes the test opens, so
nothing sleeps and every interleaving is chosen by the test.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
import pytest
import trio
import trio.testing

from svc import InvalidInput, NotFound, Unavailable
from svc.nursery import REDACTED, Engine
from svc.runtime import Actor, Executor
from tests.nursery._probe import SECRET, Gates, Tap, start

HTTP = Actor(kind="http")
ERROR_CODES = {"invalid_input", "not_found", "refused", "forbidden", "internal", "cancelled", "unavailable"}


async def settle() -> None:
    """Let every task run until all are blocked."""
    await trio.testing.wait_all_tasks_blocked()


async def call(executor: Executor, cid: str, /, **input: Any) -> Any:
    """Call a capability as HTTP does; the decoded answer."""
    cap = executor.runtime.registry.by_id[cid]
    return msgspec.json.decode(await executor.call(cap, executor.decode_value(cap, input), actor=HTTP))


def running_at_most(tap: Tap) -> int:
    """The most executions between `started` and their end at any moment, replayed from the events."""
    running: set[str] = set()
    most = 0
    for event in tap.events():
        if event["type"] == "execution.started":
            running.add(event["execution_id"])
        elif event["type"] in ("execution.completed", "execution.failed", "execution.cancelled"):
            running.discard(event["execution_id"])
        most = max(most, len(running))
    return most


def has_no_controls(text: str) -> bool:
    return not any((ord(c) < 0x20 and c != "\t") or c == "\x7f" for c in text)


# -- starting and running ----------------------------------------------------------------------------


async def test_start_answers_queued_at_once_with_created_and_queued(engine: Engine, tap: Tap, gates: Gates) -> None:
    x = start(engine, "probe.wait", key="a")
    assert x.state == "queued"
    events = tap.events(x.id)
    assert [(e["sequence"], e["type"]) for e in events] == [(1, "execution.created"), (2, "execution.queued")]
    assert events[0]["data"] == {"capability": "probe.wait", "title": "Probe wait", "input": {"key": "a"}}
    assert events[1]["data"] == {"ahead": 0}
    await settle()
    assert x.state == "running"
    assert gates["a"].entered.is_set()
    gates["a"].open()
    await x.done.wait()
    assert tap.types(x.id) == ["execution.created", "execution.queued", "execution.started", "execution.completed"]
    view = engine.store.view(x)
    assert view.state == "succeeded"
    assert view.output == {"key": "a"}
    assert view.error is None
    assert view.started_at is not None
    assert view.finished_at is not None
    assert view.duration_ms is not None
    assert view.duration_ms >= 0
    assert (view.actor.kind, view.correlation_id, view.cancellable) == ("http", x.id, True)
    assert view.links.websocket == f"/events?execution={x.id}"
    assert view.links.cockpit == f"/cockpit/executions/{x.id}"


async def test_the_start_capability_answers_the_queued_snapshot(probe_executor: Executor, engine: Engine) -> None:
    answer = await call(probe_executor, "executions.start", capability="executions.demonstrate", input=None)
    assert answer["state"] == "queued"
    assert answer["input"] == {"steps": 3, "delay_ms": 0, "fail_at": None}
    assert (answer["last_sequence"], answer["event_count"]) == (2, 2)
    x = engine.store.get(answer["id"])
    await x.done.wait()
    assert x.state == "succeeded"


async def test_demonstrate_publishes_its_steps_logs_and_progress_in_order(
    engine: Engine, tap: Tap, autojump_clock: trio.testing.MockClock
) -> None:
    x = start(engine, "executions.demonstrate", steps=2, delay_ms=1500)
    await x.done.wait()
    events = tap.events(x.id)
    assert [e["sequence"] for e in events] == list(range(1, len(events) + 1))
    step = ["execution.step.started", "execution.log", "execution.step.completed", "execution.progress"]
    assert [e["type"] for e in events] == [
        "execution.created",
        "execution.queued",
        "execution.started",
        *step,
        *step,
        "execution.completed",
    ]
    assert events[3]["data"] == {"name": "step-1", "title": "Step 1 of 2"}
    assert events[4]["data"] == {"stream": "handler", "message": "step 1 of 2"}
    assert {k: events[5]["data"][k] for k in ("name", "ok")} == {"name": "step-1", "ok": True}
    assert events[6]["data"] == {"current": 1, "total": 2, "message": "1 of 2 done"}
    assert events[-1]["data"] == {"output": {"steps": 2, "elapsed_ms": 3000, "observed": True}}
    assert [(s.name, s.state) for s in engine.store.view(x).steps] == [("step-1", "completed"), ("step-2", "completed")]


async def test_demonstrate_fails_at_the_step_asked(engine: Engine, tap: Tap) -> None:
    x = start(engine, "executions.demonstrate", steps=3, fail_at=2)
    await x.done.wait()
    events = tap.events(x.id)
    assert [e["type"] for e in events[-3:]] == ["execution.log", "execution.step.completed", "execution.failed"]
    assert events[-2]["data"]["ok"] is False
    error = events[-1]["data"]["error"]
    assert (error["code"], error["message"]) == ("internal", "step 2 of 3 failed as asked")
    assert [(s.name, s.state) for s in engine.store.view(x).steps] == [("step-1", "completed"), ("step-2", "failed")]


async def test_demonstrate_called_directly_is_not_observed(probe_executor: Executor, engine: Engine) -> None:
    answer = await call(probe_executor, "executions.demonstrate", steps=2)
    assert answer == {"steps": 2, "elapsed_ms": 0, "observed": False}
    assert len(engine.store) == 0


async def test_commands_are_serial_per_capability(engine: Engine, gates: Gates) -> None:
    runs = {key: start(engine, "probe.command", key=key) for key in "ab"}
    await settle()
    inside = [key for key in "ab" if gates[key].entered.is_set()]
    assert len(inside) == 1
    (first,) = inside
    (second,) = set("ab") - set(inside)
    assert runs[second].state == "running"  # claimed by a worker, waiting for the capability's lock
    gates[first].open()
    await runs[first].done.wait()
    await settle()
    assert gates[second].entered.is_set()
    gates[second].open()
    await runs[second].done.wait()
    assert {x.state for x in runs.values()} == {"succeeded"}


# -- the worker slots (max_running) ------------------------------------------------------------------


async def test_queued_executions_beyond_max_running_start_as_others_finish(
    make_engine: Callable[..., Engine], gates: Gates
) -> None:
    engine = make_engine(max_running=2)
    tap = Tap(engine.store)
    keys = ["a", "b", "c", "d", "e"]
    runs = {key: start(engine, "probe.wait", key=key) for key in "ab"}
    await settle()
    for key in "cde":
        runs[key] = start(engine, "probe.wait", key=key)
        await trio.lowlevel.checkpoint()
    await settle()
    assert [runs[k].state for k in keys] == ["running", "running", "queued", "queued", "queued"]
    assert [tap.events(runs[k].id)[1]["data"]["ahead"] for k in "cde"] == [0, 1, 2]
    for finished, expected_running in [("a", "bc"), ("b", "cd"), ("c", "de"), ("d", "e"), ("e", "")]:
        gates[finished].open()
        await runs[finished].done.wait()
        await settle()
        assert {k for k in keys if runs[k].state == "running"} == set(expected_running), finished
        assert {k for k in keys if gates[k].entered.is_set() and not gates[k].opened.is_set()} == set(expected_running)
    started = [e["execution_id"] for e in tap.events() if e["type"] == "execution.started"]
    assert set(started[:2]) == {runs["a"].id, runs["b"].id}
    assert started[2:] == [runs[k].id for k in "cde"]
    assert running_at_most(tap) == 2


async def test_executions_started_in_the_same_step_run_first_in_first_out(
    make_engine: Callable[..., Engine], gates: Gates
) -> None:
    """Several requests can be answered in one scheduling batch; the queue is still FIFO (16 rounds)."""
    engine = make_engine(max_running=1)
    tap = Tap(engine.store)
    unordered = 0
    for round_ in range(16):
        blocker = start(engine, "probe.wait", key=f"block-{round_}")
        await settle()
        queued = [start(engine, "probe.emit", count=0) for _ in range(3)]
        gates[f"block-{round_}"].open()
        for x in queued:
            await x.done.wait()
        await blocker.done.wait()
        started = [e["execution_id"] for e in tap.events() if e["type"] == "execution.started"]
        if [i for i in started if i in {x.id for x in queued}] != [x.id for x in queued]:
            unordered += 1
    assert unordered == 0, f"{unordered} of 16 rounds started queued executions out of order"


async def test_max_running_holds_under_many_starts(make_engine: Callable[..., Engine]) -> None:
    engine = make_engine(max_running=3)
    tap = Tap(engine.store)
    runs = [start(engine, "executions.demonstrate", steps=2) for _ in range(12)]
    for x in runs:
        await x.done.wait()
    assert all(x.state == "succeeded" for x in runs)
    assert running_at_most(tap) == 3


# -- the store bound through the engine --------------------------------------------------------------


async def test_a_store_full_of_unfinished_executions_refuses_start_until_one_finishes(
    make_engine: Callable[..., Engine], gates: Gates
) -> None:
    engine = make_engine(max_executions=3, max_running=3)
    runs = [start(engine, "probe.wait", key=k) for k in "abc"]
    await settle()
    with pytest.raises(Unavailable, match="3 executions are unfinished"):
        start(engine, "probe.wait", key="d")
    with pytest.raises(Unavailable):
        await call(engine.executor, "executions.start", capability="probe.wait", input={"key": "d"})
    assert len(engine.store) == 3
    gates["b"].open()
    await runs[1].done.wait()
    fourth = start(engine, "probe.wait", key="d")
    assert [x.id for x in engine.store] == [runs[0].id, runs[2].id, fourth.id]
    for key in "acd":
        gates[key].open()


# -- cancelling --------------------------------------------------------------------------------------


async def test_cancel_of_a_running_demonstrate_mid_delay_reaches_cancelled_without_waiting(
    probe_executor: Executor, engine: Engine, tap: Tap, autojump_clock: trio.testing.MockClock
) -> None:
    x = start(engine, "executions.demonstrate", steps=1, delay_ms=10000)
    await settle()
    assert x.state == "running"
    assert tap.types(x.id)[-2:] == ["execution.step.started", "execution.log"]
    asked = trio.current_time()
    answer = await call(probe_executor, "executions.cancel", id=x.id)
    assert (answer["outcome"], answer["cancellable"]) == ("requested", True)
    assert answer["execution"]["state"] == "cancelling"
    await x.done.wait()
    assert trio.current_time() - asked < 0.001  # virtual seconds; waiting out the delay would be 10
    assert x.state == "cancelled"
    events = tap.events(x.id)
    assert [e["type"] for e in events[-2:]] == ["execution.cancelling", "execution.cancelled"]
    assert events[-2]["data"] == {"by": "http"}
    assert events[-1]["data"] == {}
    view = engine.store.view(x)
    assert view.error is not None
    assert view.error.code == "cancelled"
    assert [(s.name, s.state) for s in view.steps] == [("step-1", "failed")]
    assert view.output is None


async def test_cancel_answers_requested_then_already_requested_then_already_finished(
    make_engine: Callable[..., Engine], gates: Gates
) -> None:
    engine = make_engine(max_running=1)
    tap = Tap(engine.store)
    running = start(engine, "probe.wait", key="a")
    await settle()
    queued = start(engine, "probe.wait", key="b")
    assert engine.cancel(queued.id, by="mcp") == ("requested", queued)
    assert queued.state == "cancelled"
    assert tap.types(queued.id) == ["execution.created", "execution.queued", "execution.cancelled"]
    assert engine.cancel(queued.id, by="mcp")[0] == "already_finished"
    assert engine.cancel(running.id, by="cli")[0] == "requested"
    assert running.state == "cancelling"
    assert engine.cancel(running.id, by="cli")[0] == "already_requested"
    await running.done.wait()
    assert running.state == "cancelled"
    assert gates["a"].cancelled
    assert engine.cancel(running.id, by="cli")[0] == "already_finished"
    await settle()
    assert not gates["b"].entered.is_set()
    with pytest.raises(NotFound):
        engine.cancel("x-20261121T120000Z-0123abcd", by="http")
    with pytest.raises(InvalidInput):
        engine.cancel("../x", by="http")


async def test_cancel_of_a_non_cancellable_run_is_recorded_and_it_runs_to_completion(
    probe_executor: Executor, engine: Engine, tap: Tap, gates: Gates
) -> None:
    x = start(engine, "probe.stubborn", key="a")
    await settle()
    answer = await call(probe_executor, "executions.cancel", id=x.id)
    assert (answer["outcome"], answer["cancellable"], answer["execution"]["state"]) == ("requested", False, "running")
    assert (await call(probe_executor, "executions.cancel", id=x.id))["outcome"] == "already_requested"
    await settle()
    assert x.state == "running"
    assert not gates["a"].cancelled
    gates["a"].open()
    await x.done.wait()
    assert x.state == "succeeded"
    assert "execution.cancelling" not in tap.types(x.id)


@pytest.mark.parametrize(
    ("outcome", "final", "last"),
    [
        ("return", "succeeded", "execution.completed"),
        ("crash", "failed", "execution.failed"),
        ("refuse", "cancelled", "execution.cancelled"),
    ],
)
async def test_a_handler_ending_in_the_step_it_is_cancelled_decides_the_final_state(
    engine: Engine, tap: Tap, gates: Gates, outcome: Any, final: str, last: str
) -> None:
    x = start(engine, "probe.wait", key="a")
    await settle()
    gates["a"].open(outcome)  # the handler is woken, but runs only after the cancel below
    assert engine.cancel(x.id, by="http")[0] == "requested"
    await x.done.wait()
    assert x.state == final
    assert tap.types(x.id)[-2:] == ["execution.cancelling", last]


# -- handler failures --------------------------------------------------------------------------------


async def test_a_raising_handler_leaks_no_text(
    probe_executor: Executor, engine: Engine, tap: Tap, caplog: pytest.LogCaptureFixture
) -> None:
    x = start(engine, "probe.raise", error="runtime")
    await x.done.wait()
    assert x.state == "failed"
    error = tap.events(x.id)[-1]["data"]["error"]
    assert error == {
        "code": "internal",
        "message": "internal error",
        "correlation_id": x.id,
        "suggestion": f"search the server log for execution_id={x.id}",
    }
    assert not any(SECRET in frame for frame in tap.subscriber.frames)
    assert SECRET.encode() not in msgspec.json.encode(engine.store.view(x))
    for capability in ("executions.get", "executions.events"):
        assert SECRET not in str(await call(probe_executor, capability, id=x.id))
    assert SECRET not in str(await call(probe_executor, "executions.list"))
    logged = [r for r in caplog.records if f"execution_id={x.id}" in r.getMessage()]
    assert logged, "the failure is logged with the execution id"
    assert logged[0].exc_info is not None
    assert SECRET in str(logged[0].exc_info[1])


@pytest.mark.parametrize("code", ["invalid_input", "not_found", "refused", "forbidden", "unavailable", "internal"])
async def test_a_handler_error_keeps_its_code_and_message(engine: Engine, tap: Tap, code: str) -> None:
    x = start(engine, "probe.raise", error=code)
    await x.done.wait()
    error = tap.events(x.id)[-1]["data"]["error"]
    assert (x.state, error["code"], error["correlation_id"]) == ("failed", code, x.id)
    assert "probe" in error["message"]


@pytest.mark.parametrize("code", ["payload_too_large", "method_not_allowed"])
async def test_a_handler_error_outside_the_execution_codes_fails_the_execution_not_the_engine(
    engine: Engine, tap: Tap, code: str
) -> None:
    x = start(engine, "probe.raise", error=code)
    with trio.fail_after(5):
        await x.done.wait()
    assert x.state == "failed"
    assert tap.events(x.id)[-1]["data"]["error"]["code"] in ERROR_CODES
    after = start(engine, "executions.demonstrate", steps=1)
    await after.done.wait()
    assert after.state == "succeeded"


# -- redaction and sanitising ------------------------------------------------------------------------


async def test_sensitive_input_is_redacted_by_schema_before_anything_is_stored(engine: Engine, tap: Tap) -> None:
    x = start(
        engine,
        "probe.secret",
        name="visible",
        password_hint="hint",
        password=SECRET,
        credential={"user": "u", "secret": SECRET},
        credentials=[{"user": "v", "secret": SECRET}],
        tokens=[SECRET, SECRET],
        headers={"authorization": SECRET},
    )
    await x.done.wait()
    expected = {
        "name": "visible",
        "password_hint": "hint",
        "password": REDACTED,
        "credential": {"user": "u", "secret": REDACTED},
        "credentials": [{"user": "v", "secret": REDACTED}],
        "tokens": [REDACTED, REDACTED],
        "headers": {"authorization": REDACTED},
    }
    assert tap.events(x.id)[0]["data"]["input"] == expected
    assert engine.store.view(x).input == expected
    assert x.state == "succeeded"
    assert not any(SECRET in frame for frame in tap.subscriber.frames)


async def test_a_sensitive_value_inside_an_optional_object_is_redacted(engine: Engine, tap: Tap) -> None:
    x = start(engine, "probe.optional", credential={"user": "u", "secret": SECRET})
    await x.done.wait()
    assert engine.store.view(x).input == {"credential": {"user": "u", "secret": REDACTED}}
    assert not any(SECRET in frame for frame in tap.subscriber.frames)


async def test_every_text_a_handler_reports_is_sanitised(engine: Engine, tap: Tap) -> None:
    x = start(engine, "probe.noisy")
    await x.done.wait()
    texts: list[str] = []
    for event in tap.events(x.id)[3:-1]:
        texts.extend(
            v
            for k, v in event["data"].items()
            if isinstance(v, str) and k not in ("name", "code", "stream", "severity")
        )
    assert len(texts) == 8
    assert [t for t in texts if "\x1b" in t or not has_no_controls(t)] == []
    assert all("red" in t for t in texts)


async def test_the_error_message_of_a_failed_execution_is_sanitised(engine: Engine, tap: Tap) -> None:
    x = start(engine, "probe.noisy", fail=True)
    await x.done.wait()
    error = tap.events(x.id)[-1]["data"]["error"]
    assert error["code"] == "invalid_input"
    assert "\x1b" not in error["message"], repr(error["message"])
    assert has_no_controls(error["message"]), repr(error["message"])


# -- shutdown ----------------------------------------------------------------------------------------


async def test_shutdown_cancels_everything_refuses_new_starts_and_forces_stragglers_after_the_grace(
    make_engine: Callable[..., Engine], gates: Gates, autojump_clock: trio.testing.MockClock
) -> None:
    engine = make_engine(max_running=2)
    tap = Tap(engine.store)
    polite = start(engine, "probe.wait", key="polite")
    straggler = start(engine, "probe.shielded", key="straggler")
    await settle()
    queued = start(engine, "probe.wait", key="queued")
    began = trio.current_time()
    await engine.shutdown()
    assert 1.0 <= trio.current_time() - began < 1.01
    assert (polite.state, straggler.state, queued.state) == ("cancelled", "cancelled", "cancelled")
    assert {"by": "server"} in [e["data"] for e in tap.events(polite.id) if e["type"] == "execution.cancelling"]
    assert "execution.started" not in tap.types(queued.id)
    with pytest.raises(Unavailable, match="stopping"):
        start(engine, "probe.wait", key="late")
    with pytest.raises(Unavailable):
        await call(engine.executor, "executions.start", capability="probe.wait", input={"key": "late"})
    gates["straggler"].open()
    await settle()
    assert straggler.state == "cancelled"
    assert tap.types(straggler.id)[-1] == "execution.cancelled"
