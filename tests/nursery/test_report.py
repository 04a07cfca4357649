"""Reports from another process (`svc run`): mirrors, each event applied once, gaps, silence, refusals.

The reporter's events are numbered by a `LocalRun` (its own store), exactly as the reporting process numbers
them. The silence deadline runs on the `autojump_clock`.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import pytest
import trio
import trio.testing

from svc import InvalidInput, NotFound, Refused, Unavailable
from svc.nursery import REDACTED, SILENCE_SECONDS, Engine, ExecutionEvent, RawReport, ReportInput
from svc.runtime import Executor
from tests.nursery._probe import SECRET, Gates, LocalRun, Tap, start

STARTED = ("execution.created", "execution.queued", "execution.started")


def running_run(**kwargs: object) -> LocalRun:
    run = LocalRun(**kwargs)  # type: ignore[arg-type]
    run.emit("execution.started")
    return run


def replaced(event: ExecutionEvent, **fields: object) -> ExecutionEvent:
    return msgspec.structs.replace(event, **fields)


def forged(run: LocalRun, sequence: int, kind: str, data: dict[str, object]) -> ExecutionEvent:
    """An event of `run` its own store would refuse to publish (a reporter the server must not trust)."""
    return ExecutionEvent(
        schema_version="1",
        event_id=f"{run.id}#{sequence}",
        execution_id=run.id,
        sequence=sequence,
        timestamp="2026-11-21T12:00:00.000Z",
        type=kind,
        data=data,
    )


# -- mirrors -----------------------------------------------------------------------------------------


async def test_the_first_report_registers_a_mirror_with_the_reporters_sequences(engine: Engine, tap: Tap) -> None:
    run = running_run()
    result = run.report(engine, run.events())
    assert (result.applied, result.through, result.cancel_requested) == (3, 3, False)
    x = result.execution
    view = engine.store.view(x)
    assert (view.id, view.state, view.capability) == (run.id, "running", "executions.demonstrate")
    assert (view.actor.kind, view.actor.pid) == ("cli", 4242)
    assert view.cancellable is True
    assert view.input == {"steps": 3, "delay_ms": 0, "fail_at": None}
    assert [(e["sequence"], e["type"]) for e in tap.events(run.id)] == list(enumerate(STARTED, start=1))
    local = [msgspec.to_builtins(e) for e in run.events()]
    mirrored = tap.events(run.id)
    assert mirrored[1:] == local[1:]  # sequences, ids and timestamps kept as reported
    assert {k: v for k, v in mirrored[0].items() if k != "data"} == {k: v for k, v in local[0].items() if k != "data"}
    # `created` says what will run as the mirror holds it: the input checked, completed and redacted here.
    assert mirrored[0]["data"] == {"capability": "executions.demonstrate", "title": run.title, "input": view.input}


async def test_a_mirror_input_is_revalidated_and_redacted(engine: Engine) -> None:
    run = LocalRun("probe.secret", title="Probe secret", input={"password": SECRET})
    x = run.report(engine, []).execution
    assert engine.store.view(x).input["password"] == REDACTED
    with pytest.raises(InvalidInput):
        LocalRun("probe.secret", input={"unknown": 1}).report(engine, [])


async def test_a_reported_created_event_is_stored_with_its_input_redacted(engine: Engine, tap: Tap) -> None:
    """Redaction happens before anything is stored, whoever numbered the event."""
    run = LocalRun("probe.secret", title="Probe secret", input={"password": SECRET})
    run.report(engine, run.events())
    assert tap.events(run.id)[0]["data"]["input"]["password"] == REDACTED
    assert not any(SECRET in frame for frame in tap.subscriber.frames)


async def test_a_reporters_own_redacted_input_is_accepted(probe_executor: Executor, engine: Engine) -> None:
    """`svc run` reports the input its own engine stored, already redacted; the server must take it."""
    local = Engine(probe_executor)
    x = start(local, "probe.pin", pin=1234)
    await x.done.wait()
    assert x.input == {"pin": REDACTED}
    run = LocalRun("probe.pin", title=x.title, input=x.input)
    mirror = run.report(engine, run.events()).execution
    assert engine.store.view(mirror).input == {"pin": REDACTED}


async def test_a_mirror_takes_no_worker_slot(make_engine: Callable[..., Engine]) -> None:
    engine = make_engine(max_running=1)
    run = running_run()
    run.report(engine, run.events())
    local = start(engine, "executions.demonstrate", steps=1)
    await local.done.wait()
    assert local.state == "succeeded"
    assert engine.store.get(run.id).state == "running"


async def test_mirrors_count_against_max_executions(make_engine: Callable[..., Engine]) -> None:
    engine = make_engine(max_executions=2)
    for _ in range(2):
        run = running_run()
        run.report(engine, run.events())
    with pytest.raises(Unavailable):
        running_run().report(engine, [])
    with pytest.raises(Unavailable):
        start(engine, "executions.demonstrate")


async def test_reported_events_are_applied_as_local_ones(engine: Engine) -> None:
    run = running_run()
    run.emit("execution.step.started", {"name": "one", "title": "One"})
    run.emit("execution.log", {"stream": "stderr", "message": "warn"})
    run.emit("execution.step.completed", {"name": "one", "ok": True, "detail": "fine"})
    run.emit("execution.progress", {"current": 1, "total": 1, "message": "done"})
    run.emit("execution.diagnostic", {"severity": "warning", "code": "w", "summary": "look"})
    run.emit("execution.completed", {"output": {"steps": 1, "elapsed_ms": 5, "observed": True}})
    x = run.report(engine, run.events()).execution
    view = engine.store.view(x)
    assert view.state == "succeeded"
    assert view.output == {"steps": 1, "elapsed_ms": 5, "observed": True}
    assert [(s.name, s.state, s.detail) for s in view.steps] == [("one", "completed", "fine")]
    assert view.progress is not None
    assert view.progress.message == "done"
    assert [d.code for d in view.diagnostics] == ["w"]
    assert (view.last_sequence, view.event_count) == (9, 9)
    assert x.done.is_set()


async def test_reported_text_is_sanitised(engine: Engine) -> None:
    dirty = "a\x1b[31mb\x07c\x01d"
    run = LocalRun(title=f"Title {dirty}")
    run.emit("execution.started")
    x = run.report(engine, run.events()).execution
    error = {"code": "internal", "message": f"failed {dirty}", "correlation_id": run.id, "suggestion": dirty}
    run.report(engine, [*run.events(), forged(run, 4, "execution.failed", {"error": error})])
    view = engine.store.view(x)
    assert view.state == "failed"
    assert view.error is not None
    texts = {"title": view.title, "error.message": view.error.message, "error.suggestion": view.error.suggestion}
    assert {name: text for name, text in texts.items() if any(c in (text or "") for c in "\x1b\x07\x01")} == {}


# -- each event once, in order -----------------------------------------------------------------------


async def test_a_re_sent_report_batch_applies_nothing_twice(engine: Engine, tap: Tap) -> None:
    run = running_run()
    run.logs(2)
    first = run.report(engine, run.events())
    assert (first.applied, first.through) == (5, 5)
    again = run.report(engine, run.events())
    assert (again.applied, again.through) == (0, 5)
    run.logs(3)
    overlapping = run.report(engine, run.events(after=3))
    assert (overlapping.applied, overlapping.through) == (3, 8)
    assert run.report(engine, run.events(after=3)).applied == 0
    assert run.report(engine, []).applied == 0
    x = engine.store.get(run.id)
    assert (x.last_sequence, x.event_count) == (8, 8)
    assert [e["sequence"] for e in tap.events(run.id)] == list(range(1, 9))


async def test_a_batch_after_a_gap_applies_nothing_and_answers_where_to_resume(engine: Engine, tap: Tap) -> None:
    run = running_run()
    run.logs(6)
    run.report(engine, run.events(through=3))
    gap = run.report(engine, run.events(after=5))
    assert (gap.applied, gap.through) == (0, 3)
    resumed = run.report(engine, run.events(after=gap.through))
    assert (resumed.applied, resumed.through) == (6, 9)
    assert [e["sequence"] for e in tap.events(run.id)] == list(range(1, 10))


async def test_a_first_report_that_starts_late_registers_the_mirror_and_applies_nothing(engine: Engine) -> None:
    run = running_run()
    result = run.report(engine, run.events(after=2))
    assert (result.applied, result.through) == (0, 0)
    assert result.execution.state == "queued"
    assert run.report(engine, run.events()).through == 3


async def test_an_illegal_move_in_a_batch_applies_nothing(engine: Engine, tap: Tap) -> None:
    run = LocalRun()
    done = forged(run, 3, "execution.completed", {"output": None})
    with pytest.raises(Refused, match="cannot move from queued to succeeded"):
        run.report(engine, [*run.events(), done])
    assert engine.store.get(run.id).last_sequence == 0
    assert tap.events(run.id) == []
    run.emit("execution.started")
    cancelled = forged(run, 4, "execution.cancelled", {})
    with pytest.raises(Refused, match="running to cancelled"):
        run.report(engine, [*run.events(), cancelled])
    assert engine.store.get(run.id).last_sequence == 0
    log = forged(run, 1, "execution.log", {"stream": "stdout", "message": "before created"})
    other = LocalRun()
    with pytest.raises(Refused, match="while execution"):
        other.report(engine, [replaced(log, execution_id=other.id, event_id=f"{other.id}#1")])


async def test_a_reported_queued_after_started_is_refused(engine: Engine) -> None:
    run = running_run()
    with pytest.raises(Refused):
        run.report(engine, [*run.events(), forged(run, 4, "execution.queued", {"ahead": 0})])
    assert engine.store.get(run.id).last_sequence == 0


async def test_nothing_moves_a_reported_final_state(engine: Engine) -> None:
    run = running_run()
    run.emit("execution.completed", {"output": None})
    run.report(engine, run.events())
    late = forged(run, 5, "execution.log", {"stream": "stdout", "message": "after the end"})
    with pytest.raises(Refused, match="never moves again"):
        run.report(engine, [late])
    assert engine.store.get(run.id).last_sequence == 4


# -- refusals before anything is applied -------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"execution_id": "x-20261121T120000Z-0123abcd"}, "execution_id"),
        ({"event_id": "x-20261121T120000Z-0123abcd#2"}, "event_id"),
        ({"schema_version": "2"}, "schema_version"),
        ({"type": "execution.exploded"}, "not an execution event type"),
        ({"data": {"stream": "stdout"}}, "does not fit its type"),
        ({"data": {"stream": "elsewhere", "message": "m"}}, "does not fit its type"),
    ],
)
async def test_a_malformed_event_refuses_the_whole_batch(
    engine: Engine, change: dict[str, object], message: str
) -> None:
    run = running_run()
    run.logs(2)
    events = run.events()
    events[3] = replaced(events[3], **change)
    with pytest.raises(InvalidInput, match=message):
        run.report(engine, events)
    assert engine.store.find(run.id) is None


async def test_a_batch_with_sequences_not_dense_is_refused(engine: Engine) -> None:
    run = running_run()
    run.logs(3)
    events = run.events()
    with pytest.raises(InvalidInput, match="not dense"):
        run.report(engine, [*events[:2], *events[3:]])
    with pytest.raises(InvalidInput, match="not dense"):
        run.report(engine, [events[1], events[0]])
    assert engine.store.find(run.id) is None


async def test_report_refusals(engine: Engine) -> None:
    run = running_run()
    with pytest.raises(InvalidInput, match="pid"):
        run.report(engine, run.events(), pid=0)
    with pytest.raises(NotFound):
        engine.find_capability("no.such")
    run.report(engine, run.events())
    with pytest.raises(Refused, match=f"belongs to pid {run.pid}"):
        run.report(engine, [], pid=run.pid + 1)
    local = start(engine, "executions.demonstrate", steps=0)
    stranger = LocalRun()
    stranger.x.id = local.id
    with pytest.raises(Refused, match="started by this server"):
        stranger.report(engine, [])
    engine.stopping = True
    with pytest.raises(Unavailable):
        run.report(engine, [])


# -- cancel of a mirror ------------------------------------------------------------------------------


async def test_cancel_of_a_mirror_is_recorded_and_told_to_the_reporter(engine: Engine, tap: Tap) -> None:
    run = running_run()
    run.report(engine, run.events())
    outcome, x = engine.cancel(run.id, by="http")
    assert (outcome, x.state) == ("requested", "running")
    assert engine.cancel(run.id, by="http")[0] == "already_requested"
    assert len(tap.events(run.id)) == 3  # the server publishes nothing for a mirror
    answer = run.report(engine, [])
    assert answer.cancel_requested is True
    run.emit("execution.cancelling", {"by": "server"})
    run.emit("execution.cancelled")
    answer = run.report(engine, run.events(after=answer.through))
    assert (answer.applied, answer.execution.state, answer.cancel_requested) == (2, "cancelled", True)
    assert engine.cancel(run.id, by="http")[0] == "already_finished"


# -- silence -----------------------------------------------------------------------------------------


@pytest.mark.bound(300)
async def test_a_silent_reporter_is_failed_unavailable_after_30_seconds(
    engine: Engine, tap: Tap, autojump_clock: trio.testing.MockClock
) -> None:
    assert SILENCE_SECONDS == 30
    run = running_run()
    run.report(engine, run.events())
    x = engine.store.get(run.id)
    began = trio.current_time()
    await trio.sleep(29.9)
    assert x.state == "running"
    await x.done.wait()
    assert trio.current_time() - began == pytest.approx(30, abs=0.01)
    assert engine.store.view(x).state == "failed"
    last = tap.events(run.id)[-1]
    assert (last["type"], last["sequence"]) == ("execution.failed", 4)
    error = last["data"]["error"]
    assert error["code"] == "unavailable"
    assert error["message"] == "the reporting process (pid 4242) sent nothing for 30 s"
    assert error["correlation_id"] == run.id
    assert error["suggestion"]


@pytest.mark.bound(300)
async def test_after_silence_old_events_apply_nothing_and_new_ones_are_refused(
    engine: Engine, autojump_clock: trio.testing.MockClock
) -> None:
    run = running_run()
    run.report(engine, run.events())
    x = engine.store.get(run.id)
    await x.done.wait()
    assert run.report(engine, []).applied == 0
    assert run.report(engine, run.events()).applied == 0
    run.logs(2)
    with pytest.raises(Refused, match="ended on this server as unavailable"):
        run.report(engine, run.events(after=3))
    assert x.state == "failed"


@pytest.mark.bound(300)
async def test_after_silence_the_one_next_event_is_refused_too(
    engine: Engine, autojump_clock: trio.testing.MockClock
) -> None:
    """The reporter's sequence 4 is new even though the server numbered its own failure 4."""
    run = running_run()
    run.report(engine, run.events())
    await engine.store.get(run.id).done.wait()
    run.logs(1)
    with pytest.raises(Refused, match="ended on this server as unavailable"):
        run.report(engine, run.events(after=3))


@pytest.mark.bound(300)
async def test_every_report_resets_the_silence_deadline(engine: Engine, autojump_clock: trio.testing.MockClock) -> None:
    run = running_run()
    run.report(engine, run.events())
    x = engine.store.get(run.id)
    began = trio.current_time()
    await trio.sleep(20)
    run.report(engine, [])  # a heartbeat
    await trio.sleep(29.9)
    assert x.state == "running"
    await x.done.wait()
    assert trio.current_time() - began == pytest.approx(50, abs=0.01)


@pytest.mark.bound(300)
async def test_a_reporter_silent_before_starting_fails_its_queued_mirror(
    engine: Engine, autojump_clock: trio.testing.MockClock
) -> None:
    run = LocalRun()
    run.report(engine, run.events())
    x = engine.store.get(run.id)
    assert x.state == "queued"
    await x.done.wait()
    view = engine.store.view(x)
    assert view.state == "failed"
    assert view.error is not None
    assert view.error.code == "unavailable"


@pytest.mark.bound(300)
async def test_a_finished_mirror_is_not_failed_by_silence(
    engine: Engine, gates: Gates, autojump_clock: trio.testing.MockClock
) -> None:
    run = running_run()
    run.emit("execution.completed", {"output": None})
    run.report(engine, run.events())
    await trio.sleep(SILENCE_SECONDS * 3)
    assert engine.store.get(run.id).state == "succeeded"


def test_what_the_reporter_sends_is_the_report_the_server_decodes() -> None:
    """`RawReport` has `ReportInput`'s fields in its order; its raw events decode as the events they encode."""
    fields = [(f.name, f.default) for f in msgspec.structs.fields(ReportInput)]
    assert [(f.name, f.default) for f in msgspec.structs.fields(RawReport)] == fields
    run = running_run()
    events = run.events()
    sent = RawReport(
        id=run.id,
        capability="executions.demonstrate",
        title="Demonstrate an execution",
        pid=4242,
        input={"steps": 1},
        cancellable=True,
        events=[msgspec.Raw(msgspec.json.encode(e)) for e in events],
    )
    received = msgspec.json.decode(msgspec.json.encode(sent), type=ReportInput)
    assert received == ReportInput(
        id=run.id,
        capability="executions.demonstrate",
        title="Demonstrate an execution",
        pid=4242,
        input={"steps": 1},
        cancellable=True,
        events=events,
    )
