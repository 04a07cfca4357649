"""`executions.*`: start, watch, page and cancel executions; the live channel's protocol; reports."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
import trio
from msgspec import Meta

from svc._errors import Internal, InvalidInput, Unavailable
from svc.nursery import (
    EVENT_TYPES,
    PROTOCOL_VERSION,
    Engine,
    ExecutionEvent,
    ExecutionId,
    ExecutionView,
    ReportAnswer,
    ReportInput,
    event_schema,
)
from svc.nursery._events import ExecutionState
from svc.nursery._topics import MAX_RETAINED, TOPIC_STREAM_TYPES, TOPICS, topic_stream_schema
from svc.registry import Benchmark, Declarations, Example, McpResource, Module, NoInput, input_problems
from svc.runtime import Context

MODULE = Module(
    id="executions",
    title="Executions",
    description="Capabilities run as watched executions: start, follow, page, cancel, and report from another process.",
)
#: An execution id no server has run: the lookups answer 404 with it (executions live in memory only).
_EXAMPLE_ID = "x-20261121T120000Z-0123abcd"
#: The id the reporting example mirrors (distinct, so that the lookups' answers do not depend on order).
_REPORTED_ID = "x-20261121T120000Z-4242abcd"
_UNKNOWN = "an execution this server never ran: 404 not_found"
_TRANSIENT = Benchmark(policy="waived", reason="transient_state")
#: The spec's uint64: `executions.demonstrate` bounds `steps` by nothing else (cancellation is the guard).
#: msgspec checks no integer bound past int64, so the schema states it and the input Struct holds it.
UINT64_MAX = 2**64 - 1
_UINT64_MAX = {"maximum": UINT64_MAX}


def _engine(ctx: Context) -> Engine:
    return ctx.components.get(Engine)


class StartInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Input of `executions.start`."""

    capability: Annotated[str, Meta(description="canonical id of the capability to run")]
    input: Annotated[
        dict[str, Any] | None,
        Meta(description="that capability's own input (an object); {} when it takes none"),
    ] = None


class ExecutionListInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Filters of `executions.list`."""

    state: Annotated[ExecutionState | None, Meta(description="keep only this state")] = None
    capability: Annotated[str | None, Meta(description="keep only this capability")] = None
    limit: Annotated[int, Meta(ge=1, le=200, description="at most this many, newest first")] = 200


class ExecutionList(msgspec.Struct, frozen=True, kw_only=True):
    """Executions newest first, with tallies over the whole store."""

    count: int
    remembered: int
    active: int
    queued: int
    live_channels: int
    executions: list[ExecutionView]


class IdInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One execution by id."""

    id: ExecutionId


class EventsInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A page of an execution's retained events."""

    id: ExecutionId
    after: Annotated[int, Meta(ge=0, description="only events with a higher sequence")] = 0
    limit: Annotated[int, Meta(ge=1, le=500, description="at most this many events")] = 500


class EventHistory(msgspec.Struct, frozen=True, kw_only=True):
    """A page of retained events, oldest first; `last_sequence` is the next page's `after`."""

    execution_id: str
    state: ExecutionState
    events: list[ExecutionEvent]
    last_sequence: int
    more: bool
    truncated: bool


class CancelReport(msgspec.Struct, frozen=True, kw_only=True):
    """What a cancel request did."""

    outcome: str
    cancellable: bool
    execution: ExecutionView


class DemonstrateInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Input of `executions.demonstrate`."""

    steps: Annotated[int, Meta(ge=0, extra_json_schema=_UINT64_MAX, description="how many steps")] = 3
    delay_ms: Annotated[int, Meta(ge=0, le=10000, description="wait per step, in milliseconds")] = 0
    fail_at: Annotated[
        Annotated[int, Meta(ge=1, extra_json_schema=_UINT64_MAX)] | None,
        Meta(description="fail on this step (1..steps)"),
    ] = None

    def __post_init__(self) -> None:
        """Hold what the schema cannot check: the uint64 bound (msgspec checks `ge` only) and `fail_at <= steps`.

        Raises:
            ValueError: out of bounds (a `msgspec.ValidationError` to whoever decodes, so 400 `invalid_input`).
        """
        if self.steps > UINT64_MAX:
            raise ValueError(f"steps must be at most {UINT64_MAX} (uint64), got {self.steps}")
        if self.fail_at is not None and self.fail_at > self.steps:
            raise ValueError(f"fail_at must be within 1..{self.steps} (the steps), got {self.fail_at}")


class DemonstrateReport(msgspec.Struct, frozen=True, kw_only=True):
    """What a demonstration did; `observed` is false when called directly."""

    steps: int
    elapsed_ms: int
    observed: bool


class ParameterView(msgspec.Struct, frozen=True, kw_only=True):
    """A subscription parameter of the live channel."""

    name: str
    description: str
    required: bool


class LimitsView(msgspec.Struct, frozen=True, kw_only=True):
    """The store bounds."""

    max_executions: int
    max_events: int
    max_log_chars: int
    max_running: int
    max_subscriber_queue: int


class ProtocolReport(msgspec.Struct, frozen=True, kw_only=True):
    """How to follow executions, the plan and the mesh live."""

    protocol_version: str
    websocket: str
    subscription: list[ParameterView]
    heartbeat_seconds: int
    max_connections: int
    max_replay: int
    event_types: list[str]
    stream_types: Annotated[
        list[str],
        Meta(description="every other frame: the control frames and the topic events (plan.changed, mesh.changed)"),
    ]
    event_schema: Any
    stream_schema: Annotated[Any, Meta(description="the JSON Schema of the stream types (oneOf on `type`)")]
    limits: LimitsView


async def start(ctx: Context, params: StartInput) -> ExecutionView:
    """Queue an execution and answer at once (state `queued`).

    Checks in order: the server is stopping (503), the capability is unknown (404), not executable or a
    repository writer asked over HTTP (422 / 403), its input does not hold (400, at most five problems).
    """
    engine = _engine(ctx)
    if engine.stopping:
        raise Unavailable("the server is stopping; it takes no new execution")
    cap = engine.find_capability(params.capability)
    engine.check_executable(cap)
    engine.executor.admit(cap, ctx.actor)
    problems = input_problems(cap, params.input)
    if problems:
        raise InvalidInput(f"input of {cap.id}: " + "; ".join(problems))
    execution = engine.start(cap, engine.executor.decode_value(cap, params.input), actor=ctx.actor)
    return engine.store.view(execution)


async def list_executions(ctx: Context, params: ExecutionListInput) -> ExecutionList:
    """Executions newest first."""
    engine = _engine(ctx)
    every = list(engine.store)
    chosen = [
        x
        for x in reversed(every)
        if (params.state is None or x.state == params.state)
        and (params.capability is None or x.capability == params.capability)
    ][: params.limit]
    return ExecutionList(
        count=len(chosen),
        remembered=len(every),
        active=sum(1 for x in every if x.state in ("running", "cancelling")),
        queued=sum(1 for x in every if x.state == "queued"),
        live_channels=engine.live_channels,
        executions=[engine.store.view(x) for x in chosen],
    )


async def get(ctx: Context, params: IdInput) -> ExecutionView:
    """One execution."""
    engine = _engine(ctx)
    return engine.store.view(engine.store.get(params.id))


async def events(ctx: Context, params: EventsInput) -> EventHistory:
    """A page of retained events above `after`."""
    store = _engine(ctx).store
    x = store.get(params.id)
    page = store.events(x, params.after, params.limit)
    cursor = page[-1].sequence if page else min(params.after, x.last_sequence)
    return EventHistory(
        execution_id=x.id,
        state=x.state,
        events=page,
        last_sequence=cursor,
        more=cursor < x.last_sequence,
        truncated=x.first_sequence > params.after + 1,
    )


async def cancel(ctx: Context, params: IdInput) -> CancelReport:
    """Ask an execution to stop."""
    engine = _engine(ctx)
    outcome, x = engine.cancel(params.id, by=ctx.actor.kind)
    return CancelReport(outcome=outcome, cancellable=x.cancellable, execution=engine.store.view(x))


async def protocol(ctx: Context, params: NoInput) -> ProtocolReport:
    """The live channel's protocol, schemas and bounds."""
    limits = _engine(ctx).limits
    return ProtocolReport(
        protocol_version=PROTOCOL_VERSION,
        websocket="/events",
        subscription=[
            ParameterView(
                name="execution",
                description="an execution id (repeatable); with exactly one, its retained history is replayed first",
                required=False,
            ),
            ParameterView(
                name="after",
                description="replay only events with a higher sequence (reconnect cursor; needs exactly one execution)",
                required=False,
            ),
            ParameterView(
                name="topic",
                description=(
                    f"a topic to follow (repeatable): {', '.join(TOPICS)}; without it the channel follows executions "
                    "alone, with it only the topics named (an `execution` id implies `executions`)"
                ),
                required=False,
            ),
            ParameterView(
                name="plan_after",
                description=(
                    "replay the retained `plan.changed` frames with a higher sequence (reconnect cursor; needs "
                    f"topic=plan; the newest {MAX_RETAINED} are kept)"
                ),
                required=False,
            ),
            ParameterView(
                name="mesh_after",
                description=(
                    "replay the retained `mesh.changed` frames with a higher sequence (reconnect cursor; needs "
                    f"topic=mesh; the newest {MAX_RETAINED} are kept)"
                ),
                required=False,
            ),
        ],
        heartbeat_seconds=limits.heartbeat_seconds,
        max_connections=limits.max_connections,
        max_replay=limits.max_replay,
        event_types=list(EVENT_TYPES),
        stream_types=list(TOPIC_STREAM_TYPES),
        event_schema=event_schema(),
        stream_schema=topic_stream_schema(),
        limits=LimitsView(
            max_executions=limits.max_executions,
            max_events=limits.max_events,
            max_log_chars=limits.max_log_chars,
            max_running=limits.max_running,
            max_subscriber_queue=limits.max_subscriber_queue,
        ),
    )


async def demonstrate(ctx: Context, params: DemonstrateInput) -> DemonstrateReport:
    """Walk through steps with logs and progress, observing cancellation between steps and while waiting."""
    total = params.steps
    began = trio.current_time()
    for n in range(1, total + 1):
        ctx.step(f"step-{n}", f"Step {n} of {total}")
        ctx.log(f"step {n} of {total}")
        if params.delay_ms:
            await trio.sleep(params.delay_ms / 1000)
        if params.fail_at == n:
            ctx.step_done(False, "failed as asked")
            raise Internal(f"step {n} of {total} failed as asked")
        ctx.step_done(True)
        ctx.progress(n, total, f"{n} of {total} done")
        await ctx.cancelled()
    elapsed = int((trio.current_time() - began) * 1000)
    return DemonstrateReport(steps=total, elapsed_ms=elapsed, observed=ctx.is_reporting())


async def report(ctx: Context, params: ReportInput) -> ReportAnswer:
    """Apply a reporter's batch to its mirror and answer where the next report starts."""
    engine = _engine(ctx)
    cap = engine.find_capability(params.capability)
    result = engine.report(
        execution_id=params.id,
        cap=cap,
        title=params.title,
        pid=params.pid,
        input=params.input if params.input is not None else {},
        events=list(params.events),
    )
    return ReportAnswer(
        applied=result.applied,
        through=result.through,
        cancel_requested=result.cancel_requested,
        execution=engine.store.view(result.execution),
    )


declare = Declarations[Context](MODULE, source=__name__)

CAPABILITIES = (
    declare.command(
        "start",
        title="Start an execution",
        description=(
            "Check the input against the named capability's own schema, queue the work, and answer at once "
            "(state queued). The execution runs through the same executor as every surface."
        ),
        input=StartInput,
        output=ExecutionView,
        handler=start,
        examples=(Example(name="demonstrate", input={"capability": "executions.demonstrate", "input": {"steps": 0}}),),
        http="POST /api/v1/executions/start",
        tool="svc_execution_start",
        cli="run",
    ),
    declare.query(
        "list",
        title="List executions",
        description="Executions remembered by this server, newest first, with tallies of the whole store.",
        input=ExecutionListInput,
        output=ExecutionList,
        handler=list_executions,
        examples=(Example(name="recent", input={"limit": 20}),),
        http="GET /api/v1/executions",
        tool="svc_executions",
        resource=McpResource(uri="svc://executions", name="executions"),
        cli="executions list",
        cli_remote=True,
    ),
    declare.query(
        "get",
        title="Show one execution",
        description="One execution with its steps, progress, diagnostics and links.",
        input=IdInput,
        output=ExecutionView,
        handler=get,
        examples=(Example(name="by_id", input={"id": _EXAMPLE_ID}, status=404, description=_UNKNOWN),),
        http="GET /api/v1/executions/get",
        tool="svc_execution",
        cli="executions show",
        benchmark=_TRANSIENT,
        cli_remote=True,
    ),
    declare.query(
        "events",
        title="Page an execution's events",
        description=(
            "Retained events with a sequence above `after`, oldest first; `last_sequence` is the cursor for the "
            "next page and for the live channel."
        ),
        input=EventsInput,
        output=EventHistory,
        handler=events,
        examples=(Example(name="from_start", input={"id": _EXAMPLE_ID, "after": 0}, status=404, description=_UNKNOWN),),
        http="GET /api/v1/executions/events",
        tool="svc_execution_events",
        cli="executions events",
        benchmark=_TRANSIENT,
        cli_remote=True,
    ),
    declare.command(
        "cancel",
        title="Cancel an execution",
        description=(
            "Ask an execution to stop: a queued one ends at once, a running cancellable one is cancelled, a "
            "non-cancellable one runs to completion and the answer says so."
        ),
        input=IdInput,
        output=CancelReport,
        handler=cancel,
        examples=(Example(name="by_id", input={"id": _EXAMPLE_ID}, status=404, description=_UNKNOWN),),
        http="POST /api/v1/executions/cancel",
        tool="svc_execution_cancel",
        cli="executions cancel",
        benchmark=_TRANSIENT,
        cli_remote=True,
    ),
    declare.query(
        "protocol",
        title="Live channel protocol",
        description=(
            "The WebSocket path, subscription parameters (executions, and the `plan` and `mesh` topics), event "
            "and stream types with their JSON Schemas, the heartbeat, and the store bounds."
        ),
        input=NoInput,
        output=ProtocolReport,
        handler=protocol,
        examples=(Example(name="protocol", input={}),),
        http="GET /api/v1/executions/protocol",
        tool="svc_execution_protocol",
        resource=McpResource(uri="svc://executions/protocol", name="executions protocol"),
        cli="executions protocol",
        cli_remote=True,
    ),
    declare.query(
        "demonstrate",
        title="Demonstrate an execution",
        description=(
            "Walk through `steps` steps (logs, progress, a wait of `delay_ms` each), failing at `fail_at` when "
            "asked. Reads and writes nothing; observes cancellation between steps and while waiting."
        ),
        input=DemonstrateInput,
        output=DemonstrateReport,
        handler=demonstrate,
        examples=(
            Example(name="instant", input={"steps": 0}),
            Example(name="three_steps", input={"steps": 3}),
        ),
        http="GET /api/v1/executions/demonstrate",
        tool="svc_demonstrate_execution",
        cancellable=True,
    ),
    declare.command(
        "report",
        title="Report an execution from another process",
        description=(
            "`svc run` reports its events here in batches of at most 500 (an empty batch is a heartbeat); each "
            "event is applied once and in order. Changes only this server's memory."
        ),
        input=ReportInput,
        output=ReportAnswer,
        handler=report,
        examples=(
            Example(
                name="heartbeat",
                input={
                    "id": _REPORTED_ID,
                    "capability": "executions.demonstrate",
                    "title": "Demo",
                    "pid": 4242,
                },
            ),
        ),
        http="POST /api/v1/executions/report",
        benchmark=_TRANSIENT,
    ),
)
