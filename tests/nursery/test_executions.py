"""The `executions.*` capabilities through the executor: start's checks, list, get, events, protocol."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import msgspec
import pytest
import trio
import trio.testing

from svc import InvalidInput, NotFound, Refused, Unavailable
from svc.capabilities._executions import UINT64_MAX, DemonstrateInput
from svc.nursery import EVENT_TYPES, STREAM_TYPES, Engine, event_schema, stream_schema
from svc.runtime import Actor, Executor
from tests.nursery._probe import Gates, LocalRun, start

HTTP = Actor(kind="http")
UNKNOWN = "x-20261121T120000Z-0123abcd"


async def call(executor: Executor, cid: str, /, **input: Any) -> Any:
    cap = executor.runtime.registry.by_id[cid]
    return msgspec.json.decode(await executor.call(cap, executor.decode_value(cap, input), actor=HTTP))


# -- executions.start --------------------------------------------------------------------------------


async def test_start_checks_in_order_stopping_unknown_not_executable_then_input(
    probe_executor: Executor, engine: Engine
) -> None:
    with pytest.raises(NotFound, match=r"no\.such"):
        await call(probe_executor, "executions.start", capability="no.such")
    for not_executable in ("probe.later", "probe.document"):
        with pytest.raises(Refused, match="not executable"):
            await call(probe_executor, "executions.start", capability=not_executable)
    with pytest.raises(InvalidInput, match=r"\$\.steps"):
        await call(probe_executor, "executions.start", capability="executions.demonstrate", input={"steps": -1})
    with pytest.raises(InvalidInput, match="unknown field"):
        await call(probe_executor, "executions.start", capability="executions.demonstrate", input={"nope": 1})
    engine.stopping = True
    with pytest.raises(Unavailable):
        await call(probe_executor, "executions.start", capability="no.such")
    assert len(engine.store) == 0


async def test_start_prefixes_each_input_problem_with_its_path(probe_executor: Executor) -> None:
    """EXECUTIONS.md §3: at most 5 problems joined by `; `, each prefixed by its path (`$.limit: …`)."""
    with pytest.raises(InvalidInput) as info:
        await call(probe_executor, "executions.start", capability="executions.demonstrate", input={"steps": -1})
    assert re.search(r"(^|: |; )\$\.steps: ", info.value.message), info.value.message


async def test_start_takes_an_empty_object_for_a_null_input(probe_executor: Executor, engine: Engine) -> None:
    answer = await call(probe_executor, "executions.start", capability="probe.emit", input=None)
    assert answer["input"] == {"count": 1, "size": 0, "every": 1, "pause_ms": 0}
    await engine.store.get(answer["id"]).done.wait()


# -- executions.list / get ---------------------------------------------------------------------------


async def test_list_is_newest_first_with_filters_tallies_and_a_bounded_limit(
    make_engine: Callable[..., Engine], gates: Gates
) -> None:
    engine = make_engine(max_running=1)
    done = start(engine, "executions.demonstrate", steps=0)
    await done.done.wait()
    running = start(engine, "probe.wait", key="a")
    await trio.testing.wait_all_tasks_blocked()
    queued = start(engine, "probe.wait", key="b")
    mirror = LocalRun()
    mirror.emit("execution.started")
    mirror.report(engine, mirror.events())
    answer = await call(engine.executor, "executions.list")
    assert [x["id"] for x in answer["executions"]] == [mirror.id, queued.id, running.id, done.id]
    assert (answer["count"], answer["remembered"], answer["queued"], answer["live_channels"]) == (4, 4, 1, 0)
    assert answer["active"] == 2  # running or cancelling: the local run and the mirror
    by_state = await call(engine.executor, "executions.list", state="succeeded")
    assert [x["id"] for x in by_state["executions"]] == [done.id]
    assert by_state["remembered"] == 4
    by_capability = await call(engine.executor, "executions.list", capability="probe.wait", limit=1)
    assert [x["id"] for x in by_capability["executions"]] == [queued.id]
    assert (await call(engine.executor, "executions.list", limit=200))["count"] == 4
    for bad in (0, 201):
        with pytest.raises(InvalidInput, match=r"\$\.limit"):
            await call(engine.executor, "executions.list", limit=bad)
    view = await call(engine.executor, "executions.get", id=queued.id)
    assert (view["id"], view["state"], view["actor"]) == (
        queued.id,
        "queued",
        {"kind": "http", "peer": None, "pid": None},
    )
    with pytest.raises(NotFound):
        await call(engine.executor, "executions.get", id=UNKNOWN)
    with pytest.raises(InvalidInput):
        await call(engine.executor, "executions.get", id="x-1")
    gates["a"].open()
    gates["b"].open()


# -- executions.demonstrate --------------------------------------------------------------------------


async def test_demonstrate_takes_any_uint64_steps_and_nothing_past_it(probe_executor: Executor) -> None:
    """The spec's `steps` is a uint64, bounded by nothing else; msgspec cannot bound past int64, the Struct does."""
    cap = probe_executor.runtime.registry.by_id["executions.demonstrate"]
    assert probe_executor.decode_text(cap, [("steps", str(UINT64_MAX))]) == DemonstrateInput(steps=UINT64_MAX)
    for text in (str(UINT64_MAX + 1), str(10**30)):
        with pytest.raises(InvalidInput, match=r"steps must be at most 18446744073709551615 \(uint64\)"):
            probe_executor.decode_text(cap, [("steps", text)])
    with pytest.raises(InvalidInput, match="steps must be at most"):
        probe_executor.decode_json(cap, b'{"steps": 18446744073709551616}')
    schema = probe_executor.runtime.registry.input_schema(cap)["properties"]
    assert (schema["steps"]["minimum"], schema["steps"]["maximum"]) == (0, UINT64_MAX)


async def test_demonstrate_refuses_a_fail_at_past_its_steps_before_anything_runs(
    probe_executor: Executor, engine: Engine
) -> None:
    with pytest.raises(InvalidInput, match=r"fail_at must be within 1\.\.2 \(the steps\), got 3"):
        await call(probe_executor, "executions.demonstrate", steps=2, fail_at=3)
    with pytest.raises(InvalidInput, match=r"\$: fail_at must be within 1\.\.2"):
        await call(
            probe_executor, "executions.start", capability="executions.demonstrate", input={"steps": 2, "fail_at": 3}
        )
    assert len(engine.store) == 0


@pytest.mark.slow
async def test_a_long_direct_demonstrate_stops_when_its_caller_is_cancelled(probe_executor: Executor) -> None:
    """Each step is a checkpoint: a caller that gives up (an HTTP client that left) cancels the walk at once.

    A million steps of no delay take seconds to walk even without checkpoints, so a walk that stopped
    checkpointing finishes (and fails here) instead of hanging the test.
    """
    began = trio.current_time()
    with trio.move_on_after(0.2) as gave_up:
        await call(probe_executor, "executions.demonstrate", steps=10**6)
    assert gave_up.cancelled_caught
    assert trio.current_time() - began < 1.5
    assert probe_executor.supervisor.active == 0


# -- executions.events -------------------------------------------------------------------------------


async def test_events_pages_by_cursor_with_more_and_a_bounded_limit(probe_executor: Executor, engine: Engine) -> None:
    x = start(engine, "probe.emit", count=10)
    await x.done.wait()
    assert x.last_sequence == 14
    first = await call(probe_executor, "executions.events", id=x.id, limit=5)
    assert [e["sequence"] for e in first["events"]] == [1, 2, 3, 4, 5]
    assert (first["last_sequence"], first["more"], first["truncated"], first["state"]) == (5, True, False, "succeeded")
    second = await call(probe_executor, "executions.events", id=x.id, after=first["last_sequence"], limit=500)
    assert [e["sequence"] for e in second["events"]] == list(range(6, 15))
    assert (second["last_sequence"], second["more"]) == (14, False)
    empty = await call(probe_executor, "executions.events", id=x.id, after=14)
    assert (empty["events"], empty["last_sequence"], empty["more"]) == ([], 14, False)
    for bad in (0, 501):
        with pytest.raises(InvalidInput, match=r"\$\.limit"):
            await call(probe_executor, "executions.events", id=x.id, limit=bad)
    with pytest.raises(NotFound):
        await call(probe_executor, "executions.events", id=UNKNOWN)


async def test_events_marks_pages_that_miss_dropped_events_as_truncated(make_engine: Callable[..., Engine]) -> None:
    engine = make_engine(max_events=5)
    x = start(engine, "probe.emit", count=3)
    await x.done.wait()
    page = await call(engine.executor, "executions.events", id=x.id)
    assert [e["sequence"] for e in page["events"]] == [3, 4, 5, 6, 7]
    assert page["truncated"] is True
    assert (await call(engine.executor, "executions.events", id=x.id, after=2))["truncated"] is False
    view = await call(engine.executor, "executions.get", id=x.id)
    assert (view["events_truncated"], view["event_count"], view["last_sequence"]) == (True, 7, 7)


# -- executions.protocol -----------------------------------------------------------------------------


async def test_protocol_reports_the_channel_the_schemas_and_the_bounds(probe_executor: Executor) -> None:
    answer = await call(probe_executor, "executions.protocol")
    assert (answer["protocol_version"], answer["websocket"]) == ("1", "/events")
    assert [(p["name"], p["required"]) for p in answer["subscription"]] == [
        ("execution", False),
        ("after", False),
        ("topic", False),
        ("plan_after", False),
        ("mesh_after", False),
    ]
    assert (answer["heartbeat_seconds"], answer["max_connections"], answer["max_replay"]) == (20, 64, 1000)
    assert answer["limits"] == {
        "max_executions": 200,
        "max_events": 2000,
        "max_log_chars": 2000,
        "max_running": 4,
        "max_subscriber_queue": 512,
    }
    assert len(answer["event_types"]) == 12
    assert len(answer["stream_types"]) == 5
    assert answer["event_types"] == list(EVENT_TYPES)
    assert answer["stream_types"] == [*STREAM_TYPES, "plan.changed", "mesh.changed"]
    assert answer["event_schema"] == event_schema()
    assert answer["stream_schema"]["$defs"]["StreamLagged"] == stream_schema()["$defs"]["StreamLagged"]
    for types, schema in (
        (answer["event_types"], answer["event_schema"]),
        (answer["stream_types"], answer["stream_schema"]),
    ):
        assert sorted(union_types(schema)) == sorted(types)
    assert set(answer["stream_types"]) == {
        "stream.ready",
        "stream.lagged",
        "stream.closing",
        "plan.changed",
        "mesh.changed",
    }


def union_types(schema: dict[str, Any]) -> list[str]:
    """The `type` values of a tagged union's members (`const`, or a one-value `enum`)."""
    members = schema.get("oneOf") or schema["anyOf"]
    defs = schema["$defs"]
    out = []
    for member in members:
        tag = defs[member["$ref"].rsplit("/", 1)[-1]]["properties"]["type"]
        out.append(tag["const"] if "const" in tag else tag["enum"][0])
    return out


async def test_protocol_type_lists_read_from_one_of_as_documented(probe_executor: Executor) -> None:
    """EXECUTIONS.md §6: the type lists are read from the schemas (`oneOf[*].properties.type.const`)."""
    answer = await call(probe_executor, "executions.protocol")
    for types, schema in (
        (answer["event_types"], answer["event_schema"]),
        (answer["stream_types"], answer["stream_schema"]),
    ):
        assert "oneOf" in schema, sorted(schema)
        defs = schema["$defs"]
        consts = [defs[m["$ref"].rsplit("/", 1)[-1]]["properties"]["type"].get("const") for m in schema["oneOf"]]
        assert consts == types


async def test_protocol_reports_the_engines_own_bounds(make_engine: Callable[..., Engine]) -> None:
    engine = make_engine(max_events=7, max_connections=3, max_replay=9)
    answer = await call(engine.executor, "executions.protocol")
    assert (answer["max_connections"], answer["max_replay"], answer["limits"]["max_events"]) == (3, 9, 7)
