"""The one executor: decode, cache by policy, supervised handler runs, one error mapping."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
import trio.testing

from svc import Internal, InvalidInput, NotFound, Unavailable
from svc.layer import Repository
from svc.registry import Cache, Capability, Example, Exposure, HttpExposure, Module, build_registry, input_problems
from svc.runtime import Actor, Executor, Generation, Runtime, Supervisor

MODULE = Module(id="demo", title="Demo", description="test capabilities")
ACTOR = Actor(kind="internal")


class Echo(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    value: int = 0
    fail: bool = False


class Count(msgspec.Struct, frozen=True):
    value: int
    calls: int


class Calls:
    def __init__(self) -> None:
        self.count = 0
        self.started = trio.Event()
        self.cancelled = False


def declare(cid: str, policy: Cache, calls: Calls, *, kind: str = "query", block: bool = False) -> Capability:
    async def handler(ctx: Any, params: Echo) -> Count:
        calls.count += 1
        calls.started.set()
        if block:
            try:
                await trio.sleep_forever()
            except trio.Cancelled:
                calls.cancelled = True
                raise
        if params.fail:
            raise NotFound(f"no value {params.value}")
        if params.value < 0:
            raise RuntimeError("secret internal detail")
        return Count(value=params.value, calls=calls.count)

    method = "GET" if kind == "query" else "POST"
    return Capability(
        id=f"demo.{cid}",
        module="demo",
        title=cid,
        description=cid,
        kind=kind,  # type: ignore[arg-type]
        input=Echo,
        output=Count,
        handler=handler,
        examples=(Example(name="one", input={}),),
        exposure=Exposure(http=HttpExposure(method=method, path=f"/api/v1/{cid}")),  # type: ignore[arg-type]
        cache=policy,
    )


@pytest.fixture
async def harness(tmp_path: Path) -> AsyncIterator[tuple[Executor, dict[str, Calls]]]:
    calls = {name: Calls() for name in ("plain", "process", "ttl", "generation", "command", "block")}
    caps = [
        declare("plain", Cache(policy="disabled"), calls["plain"]),
        declare("process", Cache(policy="process", max_entries=2), calls["process"]),
        declare("ttl", Cache(policy="process", max_entries=4, ttl_seconds=5), calls["ttl"]),
        declare("generation", Cache(policy="generation", max_entries=4), calls["generation"]),
        declare("command", Cache(policy="disabled"), calls["command"], kind="command"),
        declare("block", Cache(policy="disabled"), calls["block"], block=True),
    ]
    repo = Repository.discover(tmp_path)
    runtime = Runtime(registry=build_registry([MODULE], caps), repository=repo, generation=Generation(repo, stamp=b""))
    async with Supervisor.open() as supervisor:
        yield Executor(runtime, supervisor), calls


async def call(executor: Executor, cid: str, **params: Any) -> dict[str, Any]:
    cap = executor.runtime.registry.by_id[f"demo.{cid}"]
    body = await executor.call(cap, executor.decode_value(cap, params), actor=ACTOR)
    decoded: dict[str, Any] = msgspec.json.decode(body)
    return decoded


async def test_disabled_policy_always_runs_the_handler(harness: tuple[Executor, dict[str, Calls]]) -> None:
    executor, calls = harness
    await call(executor, "plain", value=1)
    await call(executor, "plain", value=1)
    assert calls["plain"].count == 2
    assert executor.cache("demo.plain") is None


async def test_process_cache_hits_are_byte_identical_and_fifo_bounded(
    harness: tuple[Executor, dict[str, Calls]],
) -> None:
    executor, calls = harness
    cap = executor.runtime.registry.by_id["demo.process"]
    first = await executor.call(cap, Echo(value=1), actor=ACTOR)
    assert await executor.call(cap, Echo(value=1), actor=ACTOR) == first
    assert calls["process"].count == 1
    await call(executor, "process", value=2)
    await call(executor, "process", value=3)  # evicts value=1 (max_entries 2)
    cache = executor.cache("demo.process")
    assert cache is not None
    assert len(cache) == 2
    await call(executor, "process", value=1)
    assert calls["process"].count == 4


async def test_the_key_is_the_canonical_input_with_defaults(harness: tuple[Executor, dict[str, Calls]]) -> None:
    executor, calls = harness
    await call(executor, "process")
    await call(executor, "process", value=0, fail=False)
    assert calls["process"].count == 1


async def test_ttl_expires_on_trio_clock(
    harness: tuple[Executor, dict[str, Calls]], autojump_clock: trio.testing.MockClock
) -> None:
    executor, calls = harness
    await call(executor, "ttl", value=1)
    await trio.sleep(4.9)
    await call(executor, "ttl", value=1)
    assert calls["ttl"].count == 1
    await trio.sleep(0.2)
    await call(executor, "ttl", value=1)
    assert calls["ttl"].count == 2


async def test_generation_cache_is_kept_until_the_generation_changes(
    harness: tuple[Executor, dict[str, Calls]],
) -> None:
    executor, calls = harness
    await call(executor, "generation", value=1)
    await call(executor, "generation", value=1)
    assert calls["generation"].count == 1
    executor.runtime.generation.bump()
    answer = await call(executor, "generation", value=1)
    assert answer == {"value": 1, "calls": 2}


async def test_a_process_cache_never_answers_across_a_generation_change(
    harness: tuple[Executor, dict[str, Calls]],
) -> None:
    executor, calls = harness
    await call(executor, "process", value=1)
    await call(executor, "process", value=1)
    assert calls["process"].count == 1
    executor.runtime.generation.bump()
    answer = await call(executor, "process", value=1)
    assert answer == {"value": 1, "calls": 2}


async def test_errors_are_never_cached(harness: tuple[Executor, dict[str, Calls]]) -> None:
    executor, calls = harness
    for _ in range(2):
        with pytest.raises(NotFound, match="no value 7"):
            await call(executor, "process", value=7, fail=True)
    assert calls["process"].count == 2


async def test_unexpected_exceptions_become_internal_without_their_text(
    harness: tuple[Executor, dict[str, Calls]], caplog: pytest.LogCaptureFixture
) -> None:
    executor, _ = harness
    with pytest.raises(Internal) as info:
        await call(executor, "plain", value=-1)
    assert "secret internal detail" not in info.value.message
    assert info.value.message.startswith("internal error (correlation id c-")
    correlation = info.value.message.split("correlation id ")[1].rstrip(")")
    assert any(correlation in r.getMessage() for r in caplog.records)


async def test_decode_errors_are_invalid_input(harness: tuple[Executor, dict[str, Calls]]) -> None:
    executor, _ = harness
    cap = executor.runtime.registry.by_id["demo.plain"]
    with pytest.raises(InvalidInput, match=r"Expected `int`, got `str` - at `\$.value`"):
        executor.decode_value(cap, {"value": "x"})
    with pytest.raises(InvalidInput, match="unknown field `other`"):
        executor.decode_json(cap, b'{"other": 1}')
    with pytest.raises(InvalidInput, match="must be a JSON object"):
        executor.decode_json(cap, b"[1]")
    with pytest.raises(InvalidInput, match="not valid JSON"):
        executor.decode_json(cap, b"{")
    with pytest.raises(InvalidInput, match="unknown parameter 'nope'"):
        executor.decode_text(cap, [("nope", "1")])
    with pytest.raises(InvalidInput, match="given more than once"):
        executor.decode_text(cap, [("value", "1"), ("value", "2")])
    assert executor.decode_text(cap, [("value", "12"), ("fail", "false")]) == Echo(value=12, fail=False)
    assert executor.decode_json(cap, b"") == Echo()
    with pytest.raises(InvalidInput, match="not valid JSON"):
        executor.decode_json(cap, b"  ")


async def test_a_whole_number_is_an_integer_as_json_schema_says(harness: tuple[Executor, dict[str, Calls]]) -> None:
    """`type: integer` admits 42.0 (schemathesis sends it): every JSON path reads it as 42, and only it."""
    executor, _ = harness
    cap = executor.runtime.registry.by_id["demo.plain"]
    assert executor.decode_json(cap, b'{"value": 42.0}') == Echo(value=42)
    assert executor.decode_json(cap, b'{"value": -1e3}') == Echo(value=-1000)
    assert executor.decode_value(cap, {"value": 42.0}) == Echo(value=42)
    assert input_problems(cap, {"value": 42.0}) == []
    with pytest.raises(InvalidInput, match=r"Expected `int`, got `float` - at `\$.value`"):
        executor.decode_json(cap, b'{"value": 42.5}')
    with pytest.raises(InvalidInput, match=r"Expected `int`, got `float` - at `\$.value`"):
        executor.decode_value(cap, {"value": 42.5})
    assert input_problems(cap, {"value": 42.5}) == ["$.value: Expected `int`, got `float`"]
    with pytest.raises(InvalidInput, match=r"Expected `bool`, got `(float|int)` - at `\$.fail`"):
        executor.decode_json(cap, b'{"value": 1.0, "fail": 1.0}')


async def test_a_cancelled_caller_cancels_the_handler_scope(harness: tuple[Executor, dict[str, Calls]]) -> None:
    executor, calls = harness
    async with trio.open_nursery() as nursery:
        nursery.start_soon(call, executor, "block")
        await calls["block"].started.wait()
        assert executor.supervisor.active == 1
        nursery.cancel_scope.cancel()
    assert calls["block"].cancelled
    await trio.testing.wait_all_tasks_blocked()
    assert executor.supervisor.active == 0


async def test_commands_are_serial_per_capability(tmp_path: Path) -> None:
    inside = 0
    most = 0
    gate = trio.Event()

    async def handler(ctx: Any, params: Echo) -> Count:
        nonlocal inside, most
        inside += 1
        most = max(most, inside)
        await gate.wait()
        inside -= 1
        return Count(value=0, calls=0)

    cap = Capability(
        id="demo.write",
        module="demo",
        title="w",
        description="w",
        kind="command",
        input=Echo,
        output=Count,
        handler=handler,
        examples=(Example(name="one", input={}),),
        exposure=Exposure(http=HttpExposure(method="POST", path="/api/v1/write")),
    )
    repo = Repository.discover(tmp_path)
    runtime = Runtime(registry=build_registry([MODULE], [cap]), repository=repo, generation=Generation(repo))
    async with Supervisor.open() as supervisor, trio.open_nursery() as nursery:
        executor = Executor(runtime, supervisor)
        for _ in range(3):
            nursery.start_soon(functools.partial(executor.call, cap, Echo(), actor=ACTOR))
        await trio.testing.wait_all_tasks_blocked()
        assert inside == 1
        gate.set()
    assert most == 1


async def test_a_closing_supervisor_refuses_new_work(tmp_path: Path) -> None:
    async def work() -> int:
        return 1

    async with Supervisor.open() as supervisor:
        assert await supervisor.run(work) == 1
    with pytest.raises(Exception, match="stopping"):
        await supervisor.run(work)


async def test_closing_cancels_every_run_in_its_callers_task_and_waits_for_it() -> None:
    started = trio.Event()
    unwound: list[str] = []

    async def work() -> int:
        started.set()
        try:
            await trio.sleep_forever()
        finally:
            with trio.CancelScope(shield=True):
                await trio.lowlevel.checkpoint()
            unwound.append("run")
        return 1

    outcome: list[BaseException] = []

    async def caller(supervisor: Supervisor) -> None:
        try:
            await supervisor.run(work)
        except Unavailable as exc:
            outcome.append(exc)

    async with trio.open_nursery() as callers:
        async with Supervisor.open() as supervisor:
            callers.start_soon(caller, supervisor)
            await started.wait()
            assert supervisor.active == 1
        # The supervisor has closed: the run was cancelled in its caller's task and had unwound before the close ended.
        assert unwound == ["run"]
        assert supervisor.active == 0
    assert [str(exc) for exc in outcome] == ["the service stopped before the call finished"]


async def test_a_run_that_does_not_unwind_holds_the_close_at_most_its_bound(
    autojump_clock: trio.testing.MockClock,
) -> None:
    from svc.runtime._supervisor import UNWIND_SECONDS

    started = trio.Event()
    finish = trio.Event()

    async def stubborn() -> int:
        started.set()
        with trio.CancelScope(shield=True):
            await finish.wait()
        return 1

    async with trio.open_nursery() as callers:
        async with Supervisor.open() as supervisor:
            callers.start_soon(supervisor.run, stubborn)
            await started.wait()
            closing = trio.current_time()
        assert trio.current_time() - closing == pytest.approx(UNWIND_SECONDS)
        assert supervisor.active == 1
        finish.set()


async def test_an_unscoped_run_is_counted_and_refused_once_closing_but_not_cancelled_by_the_close(
    autojump_clock: trio.testing.MockClock,
) -> None:
    from svc.runtime._supervisor import UNWIND_SECONDS

    release = trio.Event()
    finished: list[int] = []

    async def work() -> int:
        await release.wait()
        finished.append(1)
        return 1

    async with trio.open_nursery() as callers:
        async with Supervisor.open() as supervisor:
            callers.start_soon(functools.partial(supervisor.run, work, scoped=False))
            await trio.testing.wait_all_tasks_blocked()
            assert supervisor.active == 1
            closing = trio.current_time()
        # The close had no scope to cancel: it waited its bound for the run, which goes on.
        assert trio.current_time() - closing == pytest.approx(UNWIND_SECONDS)
        assert supervisor.active == 1
        with pytest.raises(Unavailable, match="stopping"):
            await supervisor.run(work, scoped=False)
        release.set()
    assert finished == [1]
    assert supervisor.active == 0


async def test_a_read_runs_in_a_worker_thread_with_the_repository(tmp_path: Path) -> None:
    import threading

    from svc.registry import Declarations

    seen: list[tuple[int, Path]] = []

    def read(repo: Repository, params: Echo) -> Count:
        seen.append((threading.get_ident(), repo.root))
        if params.fail:
            raise NotFound(f"no value {params.value}")
        return Count(value=params.value, calls=len(seen))

    cap = Declarations[Any](MODULE, source=__name__).query(
        "read",
        title="Read",
        description="a read of the checkout",
        input=Echo,
        output=Count,
        read=read,
        examples=(Example(name="one"),),
        http="GET /api/v1/read",
    )
    repo = Repository.discover(tmp_path)
    runtime = Runtime(registry=build_registry([MODULE], [cap]), repository=repo, generation=Generation(repo, stamp=b""))
    with trio.fail_after(10):
        async with Supervisor.open() as supervisor:
            executor = Executor(runtime, supervisor)
            assert msgspec.json.decode(await executor.call(cap, Echo(value=7), actor=ACTOR)) == {"value": 7, "calls": 1}
            with pytest.raises(NotFound, match="no value 3"):
                await executor.call(cap, Echo(value=3, fail=True), actor=ACTOR)
    assert [root for _, root in seen] == [repo.root, repo.root]
    assert threading.get_ident() not in {thread for thread, _ in seen}


class Live(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    value: int = 0
    session: str | None = None


async def test_a_read_with_live_fields_runs_its_handler_uncached_for_an_input_that_needs_the_runtime(
    tmp_path: Path,
) -> None:
    from svc.registry import Cache, Declarations

    ran: list[str] = []

    def read(repo: Repository, params: Live) -> Count:
        ran.append("read")
        return Count(value=params.value, calls=len(ran))

    async def handler(ctx: Any, params: Live) -> Count:
        ran.append(f"handler {params.session} {ctx.actor.kind}")
        return Count(value=params.value, calls=len(ran))

    cap = Declarations[Any](MODULE, source=__name__).query(
        "live",
        title="Live",
        description="a read the runtime may refine",
        input=Live,
        output=Count,
        read=read,
        handler=handler,
        live=("session",),
        examples=(Example(name="one"),),
        http="GET /api/v1/live-read",
        cache=Cache(policy="generation", max_entries=8),
    )
    assert cap.runs_live(Live(session="s"), mcp=False)
    assert cap.runs_live(Live(), mcp=True)
    assert not cap.runs_live(Live(), mcp=False)
    repo = Repository.discover(tmp_path)
    runtime = Runtime(registry=build_registry([MODULE], [cap]), repository=repo, generation=Generation(repo, stamp=b""))
    mcp = Actor(kind="mcp", peer="stdio-0123abcd", transport="stdio")
    with trio.fail_after(10):
        async with Supervisor.open() as supervisor:
            executor = Executor(runtime, supervisor)
            for params, actor in ((Live(), ACTOR), (Live(), ACTOR), (Live(session="s"), ACTOR), (Live(), mcp)) * 2:
                await executor.call(cap, params, actor=actor)
    assert ran == ["read", "handler s internal", "handler None mcp", "handler s internal", "handler None mcp"]


def test_a_declaration_has_a_handler_or_a_read_exactly_one() -> None:
    from svc.registry import Declarations

    async def handler(ctx: Any, params: Echo) -> Count:
        return Count(value=0, calls=0)

    def read(repo: Repository, params: Echo) -> Count:
        return Count(value=0, calls=0)

    declare = Declarations[Any](MODULE, source=__name__)
    common: dict[str, Any] = {"title": "t", "description": "d", "input": Echo, "output": Count, "examples": ()}
    with pytest.raises(ValueError, match=r"demo\.none: declare a handler or a read, exactly one"):
        declare.query("none", **common)
    with pytest.raises(ValueError, match=r"demo\.both: declare a handler or a read, exactly one"):
        declare.query("both", handler=handler, read=read, **common)
    assert declare.query("one", read=read, **common).executable
    assert declare.query("live", read=read, handler=handler, live=("value",), **common).live == ("value",)
