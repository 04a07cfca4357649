"""Property tests: whatever happens, executions move only along the spec's table (EXECUTIONS.md §2).

Two levels. The store: random event types published straight into it. The engine: random interleavings of
start, cancel, finish (return, refuse or crash) and scheduling points over gated probe runs, with two worker
slots, every published event recorded. Each example runs in its own `trio.run`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings

from svc.nursery import EVENT_TYPES, Engine, ExecutionStore, IllegalMove, Limits
from tests.nursery._probe import (
    ALLOWED,
    FINAL_STATES,
    STATE_OF,
    Gates,
    Tap,
    build_probe_registry,
    open_probe_executor,
    retained,
    start,
)
from tests.nursery.test_store import DATA, new

ROOT = Path(__file__).resolve().parents[2]
MAX_RUNNING = 2
#: `execution.queued` says "waiting for a worker": published after the execution left `queued`, it reads as a
#: move back to `queued`, which the table does not list.
MOVES_TO = {**STATE_OF, "execution.queued": "queued"}
TERMINAL = {"execution.completed", "execution.failed", "execution.cancelled"}
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def check_history(events: list[dict[str, Any]]) -> list[tuple[str | None, str]]:
    """Assert one execution's events are dense, end at their first terminal event, and move only along the
    table; return the moves."""
    assert [e["sequence"] for e in events] == list(range(1, len(events) + 1))
    terminal = [i for i, e in enumerate(events) if e["type"] in TERMINAL]
    if terminal:
        assert terminal == [len(events) - 1], [e["type"] for e in events]
    moves: list[tuple[str | None, str]] = []
    state: str | None = None
    for event in events:
        target = MOVES_TO.get(event["type"])
        if target is not None and target != state:
            assert (state, target) in ALLOWED, (state, target, [e["type"] for e in events])
            moves.append((state, target))
            state = target
        elif target is None:
            assert state in ("running", "cancelling"), (event["type"], state)
    return moves


# -- the store ---------------------------------------------------------------------------------------


@SETTINGS
@given(kinds=st.lists(st.sampled_from(EVENT_TYPES), max_size=25))
def test_the_store_publishes_only_listed_moves_and_final_states_never_move(kinds: list[str]) -> None:
    store = ExecutionStore(Limits(max_events=1000))
    x = new(store)
    for kind in kinds:
        before, last = x.state, x.last_sequence
        target = MOVES_TO.get(kind)
        if before in FINAL_STATES or kind == "execution.created":
            listed = False
        elif target is None:
            listed = before in ("running", "cancelling")
        else:
            listed = target == before or (before, target) in ALLOWED
        try:
            store.publish(x, kind, dict(DATA[kind]))
        except IllegalMove:
            assert not listed, (before, kind)
            assert (x.state, x.last_sequence) == (before, last)
            continue
        assert listed, (before, kind)
        if target is not None and target != before:
            assert x.last_sequence == last + 1
            assert x.state == target
        elif kind != "execution.queued":
            # a same-state repeat is a no-op; an inert event is published and moves nothing
            assert x.last_sequence == last + (target is None)
            assert x.state == before
    check_history([{"sequence": e.sequence, "type": e.type} for e in retained(x)])


# -- the engine --------------------------------------------------------------------------------------

Op = tuple[Any, ...]
ops = st.lists(
    st.one_of(
        st.tuples(st.just("start"), st.sampled_from(["probe.wait", "probe.stubborn"])),
        st.tuples(st.just("cancel"), st.integers(0, 7)),
        st.tuples(st.just("finish"), st.integers(0, 7), st.sampled_from(["return", "refuse", "crash"])),
        st.tuples(st.just("checkpoint")),
        st.tuples(st.just("settle")),
    ),
    max_size=40,
)
GATES = Gates()
REGISTRY = build_probe_registry(GATES)


async def drive(operations: list[Op]) -> None:
    GATES.reset()
    async with open_probe_executor(REGISTRY, ROOT, Limits(max_running=MAX_RUNNING)) as executor:
        engine = executor.components.get(Engine)
        tap = Tap(engine.store)
        runs: list[Any] = []
        asked: set[str] = set()
        with trio.fail_after(10):
            for op in operations:
                if op[0] == "start":
                    runs.append(start(engine, op[1], key=f"k{len(runs)}"))
                elif op[0] in ("cancel", "finish") and runs:
                    x = runs[op[1] % len(runs)]
                    if op[0] == "cancel":
                        was_final, was_asked = x.final, x.id in asked
                        outcome, _ = engine.cancel(x.id, by="http")
                        expected = (
                            "already_finished" if was_final else "already_requested" if was_asked else "requested"
                        )
                        assert outcome == expected
                        asked.add(x.id)
                    else:
                        GATES[f"k{runs.index(x)}"].open(op[2])
                elif op[0] == "checkpoint":
                    await trio.lowlevel.checkpoint()
                elif op[0] == "settle":
                    await trio.testing.wait_all_tasks_blocked()
            for n in range(len(runs)):
                GATES[f"k{n}"].open()
            for x in runs:
                await x.done.wait()
        running: set[str] = set()
        for event in tap.events():
            if event["type"] == "execution.started":
                running.add(event["execution_id"])
            elif event["type"] in TERMINAL:
                running.discard(event["execution_id"])
            assert len(running) <= MAX_RUNNING
        for x in runs:
            moves = check_history(tap.events(x.id))
            assert moves[-1][1] == x.state
            assert x.state in FINAL_STATES
            if x.capability == "probe.stubborn":
                assert ("running", "cancelling") not in moves


@SETTINGS
@given(operations=ops)
def test_random_interleavings_of_start_cancel_finish_and_fail_follow_the_table(operations: list[Op]) -> None:
    trio.run(drive, operations)
