"""A probe registry for the execution tests: capabilities whose runs a test drives step by step.

`probe.wait` (cancellable) and `probe.stubborn` (not cancellable) block on a `Gate` the test opens with an
outcome; `probe.shielded` ignores cancellation until its gate opens; `probe.emit` publishes log lines with a
checkpoint between them; `probe.raise` raises what it is told; `probe.secret` takes sensitive input;
`probe.noisy` writes escape sequences into every text field; `probe.big` answers a large output. The
registry also holds the builtin `executions.*` capabilities, so the same executor serves them over HTTP.

`Tap` records every frame a store publishes; `LocalRun` numbers events as a reporting process (`svc run`)
does, for `Engine.report`.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
import trio
from msgspec import Meta

from svc import Forbidden, Internal, InvalidInput, MethodNotAllowed, NotFound, PayloadTooLarge, Refused, Unavailable
from svc.capabilities import _executions
from svc.layer import Repository
from svc.nursery import Engine, Execution, ExecutionEvent, ExecutionStore, Limits, ReportResult, Subscriber
from svc.nursery._events import ActorView, RepositoryRef
from svc.registry import Benchmark, Capability, Example, Module, Registry, build_registry
from svc.runtime import Actor, Context, Executor, Generation, Runtime, Supervisor

__all__ = [
    "ALLOWED",
    "FINAL_STATES",
    "SECRET",
    "STATE_OF",
    "Gate",
    "Gates",
    "LocalRun",
    "Tap",
    "build_probe_registry",
    "open_probe_executor",
    "retained",
    "start",
]

#: A value no event, view or answer may ever carry.
SECRET = "hunter2-do-not-leak"
PROBE = Module(id="probe", title="Probe", description="Capabilities that exist only for the execution tests.")
Outcome = Literal["return", "refuse", "crash"]
ErrorName = Literal[
    "runtime",
    "invalid_input",
    "not_found",
    "refused",
    "forbidden",
    "unavailable",
    "internal",
    "payload_too_large",
    "method_not_allowed",
]

#: The spec's execution transitions (EXECUTIONS.md §2); `None` is "(new)".
ALLOWED: frozenset[tuple[str | None, str]] = frozenset(
    {
        (None, "queued"),
        ("queued", "running"),
        ("queued", "cancelled"),
        ("queued", "failed"),
        ("running", "succeeded"),
        ("running", "failed"),
        ("running", "cancelling"),
        ("cancelling", "cancelled"),
        ("cancelling", "succeeded"),
        ("cancelling", "failed"),
    }
)
FINAL_STATES = frozenset({"succeeded", "failed", "cancelled"})
#: The state each state-changing event type moves an execution to.
STATE_OF = {
    "execution.created": "queued",
    "execution.started": "running",
    "execution.cancelling": "cancelling",
    "execution.cancelled": "cancelled",
    "execution.completed": "succeeded",
    "execution.failed": "failed",
}


class Gate:
    """One controllable run: the handler waits on `opened`, then ends as `outcome` says."""

    def __init__(self) -> None:
        self.entered = trio.Event()
        self.opened = trio.Event()
        self.outcome: Outcome = "return"
        self.cancelled = False

    def open(self, outcome: Outcome = "return") -> None:
        self.outcome = outcome
        self.opened.set()


class Gates:
    """The gates of one test, by key (created on first use)."""

    def __init__(self) -> None:
        self._gates: dict[str, Gate] = {}

    def __getitem__(self, key: str) -> Gate:
        return self._gates.setdefault(key, Gate())

    def reset(self) -> None:
        self._gates.clear()


class ProbeKey(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Which gate a run waits on."""

    key: str = "a"


class ProbeDone(msgspec.Struct, frozen=True, kw_only=True):
    """The answer of a gated run."""

    key: str


class ProbeEmit(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How many log lines to publish, how long each is (0: `line N`), and a checkpoint every `every` lines
    (a pause of `pause_ms` instead, when given)."""

    count: int = 1
    size: int = 0
    every: int = 1
    pause_ms: int = 0


class ProbeEmitted(msgspec.Struct, frozen=True, kw_only=True):
    """How many lines were published."""

    emitted: int


class ProbeRaise(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Which error `probe.raise` raises."""

    error: ErrorName = "runtime"


class ProbeNothing(msgspec.Struct, frozen=True, kw_only=True):
    """No answer (never returned)."""


Sensitive = Annotated[str, Meta(extra_json_schema={"x-svc-sensitive": True})]


class ProbeCredential(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A user and a write-only secret."""

    user: str
    secret: Annotated[str, Meta(extra_json_schema={"writeOnly": True})]


class ProbeSecrets(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Input with sensitive values at every place the redaction walk must reach."""

    name: str = "visible"
    password_hint: str = "visible-by-name"
    password: Annotated[str, Meta(extra_json_schema={"format": "password"})] = ""
    credential: ProbeCredential = msgspec.field(default_factory=lambda: ProbeCredential(user="nobody", secret=""))
    credentials: list[ProbeCredential] = []
    tokens: list[Sensitive] = []
    headers: dict[str, Sensitive] = {}


class ProbeSecretsOptional(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A sensitive value reached only through an optional (`T | None`) nested object."""

    credential: ProbeCredential | None = None


class ProbePin(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A sensitive value that is not a string."""

    pin: Annotated[int, Meta(ge=0, extra_json_schema={"writeOnly": True})] = 0


class ProbeAccepted(msgspec.Struct, frozen=True, kw_only=True):
    """What `probe.secret` saw (never echoed)."""

    fields: int


class ProbeNoise(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The text `probe.noisy` writes into every field, and whether it then raises with it."""

    text: str = "a\x1b[31mred\x1b[0m\x1b]0;title\x07b\x01c\td\x7fe\nf"
    fail: bool = False


class ProbeBig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How many characters `probe.big` answers."""

    size: int = 1000


class ProbeBlob(msgspec.Struct, frozen=True, kw_only=True):
    """A large answer."""

    blob: str


def _error(name: ErrorName) -> Exception:
    errors: dict[str, Exception] = {
        "runtime": RuntimeError(f"handler exploded: {SECRET}"),
        "invalid_input": InvalidInput("the probe refuses this value"),
        "not_found": NotFound("no probe object p-1"),
        "refused": Refused("claim_conflict: the probe is claimed"),
        "forbidden": Forbidden("the probe forbids this"),
        "unavailable": Unavailable("the probe is stopping"),
        "internal": Internal("the probe failed as asked"),
        "payload_too_large": PayloadTooLarge("the probe's body is too large"),
        "method_not_allowed": MethodNotAllowed("the probe answers GET", allow=("GET",)),
    }
    return errors[name]


def probe_capabilities(gates: Gates) -> tuple[Capability, ...]:
    """The probe declarations; gated handlers wait on `gates`."""

    async def gated(ctx: Context, params: ProbeKey) -> ProbeDone:
        gate = gates[params.key]
        gate.entered.set()
        try:
            await gate.opened.wait()
        except trio.Cancelled:
            gate.cancelled = True
            raise
        if gate.outcome == "refuse":
            raise Refused(f"gate {params.key} refused as asked")
        if gate.outcome == "crash":
            raise RuntimeError(f"gate {params.key} crashed: {SECRET}")
        return ProbeDone(key=params.key)

    async def shielded(ctx: Context, params: ProbeKey) -> ProbeDone:
        gate = gates[params.key]
        gate.entered.set()
        with trio.CancelScope(shield=True):
            await gate.opened.wait()
        return ProbeDone(key=params.key)

    async def emit(ctx: Context, params: ProbeEmit) -> ProbeEmitted:
        for n in range(1, params.count + 1):
            ctx.log("x" * params.size if params.size else f"line {n}")
            if params.every and n % params.every == 0:
                await trio.sleep(params.pause_ms / 1000)
        return ProbeEmitted(emitted=params.count)

    async def raise_(ctx: Context, params: ProbeRaise) -> ProbeNothing:
        ctx.log("about to fail")
        raise _error(params.error)

    async def secret(ctx: Context, params: ProbeSecrets | ProbeSecretsOptional | ProbePin) -> ProbeAccepted:
        return ProbeAccepted(fields=len(msgspec.structs.fields(params)))

    async def noisy(ctx: Context, params: ProbeNoise) -> ProbeDone:
        text = params.text
        ctx.step("noisy", text)
        ctx.log(text)
        ctx.stream("stdout", text)
        ctx.progress(1, 2, text)
        ctx.diagnostic("warning", "noisy", text, detail=text, suggestion=text)
        ctx.step_done(False, text)
        if params.fail:
            raise InvalidInput(f"bad value {text}")
        return ProbeDone(key="noisy")

    async def big(ctx: Context, params: ProbeBig) -> ProbeBlob:
        return ProbeBlob(blob="b" * params.size)

    def declare(
        cid: str,
        handler: Any,
        input: type[msgspec.Struct],
        output: type[msgspec.Struct],
        *,
        cancellable: bool = True,
        kind: Literal["query", "command", "resource"] = "query",
        stability: Literal["implemented", "planned"] = "implemented",
    ) -> Capability:
        return Capability(
            id=f"probe.{cid}",
            module="probe",
            title=f"Probe {cid}",
            description=f"The probe capability {cid}.",
            input=input,
            output=output,
            handler=handler,
            examples=(Example(name="plain", input={}),),
            kind=kind,
            stability=stability,
            cancellable=cancellable,
        )

    document = Capability(
        id="probe.document",
        module="probe",
        title="Probe document",
        description="A resource: nothing to execute.",
        input=ProbeKey,
        output=ProbeDone,
        handler=None,
        examples=(),
        kind="resource",
        benchmark=Benchmark(policy="waived", reason="not_executable"),
    )
    return (
        document,
        declare("wait", gated, ProbeKey, ProbeDone),
        declare("stubborn", gated, ProbeKey, ProbeDone, cancellable=False),
        declare("shielded", shielded, ProbeKey, ProbeDone),
        declare("emit", emit, ProbeEmit, ProbeEmitted),
        declare("raise", raise_, ProbeRaise, ProbeNothing),
        declare("secret", secret, ProbeSecrets, ProbeAccepted),
        declare("optional", secret, ProbeSecretsOptional, ProbeAccepted),
        declare("pin", secret, ProbePin, ProbeAccepted),
        declare("noisy", noisy, ProbeNoise, ProbeDone),
        declare("big", big, ProbeBig, ProbeBlob),
        declare("later", gated, ProbeKey, ProbeDone, stability="planned"),
        declare("command", gated, ProbeKey, ProbeDone, kind="command"),
    )


def build_probe_registry(gates: Gates) -> Registry:
    """The `executions.*` capabilities and the probes, one registry."""
    return build_registry([_executions.MODULE, PROBE], [*_executions.CAPABILITIES, *probe_capabilities(gates)])


@asynccontextmanager
async def open_probe_executor(registry: Registry, root: Path, limits: Limits | None = None) -> AsyncIterator[Executor]:
    """An executor of `registry` over `root` (generation pinned) whose runtime has an engine of `limits`."""
    repo = Repository.discover(root)
    runtime = Runtime(registry=registry, repository=repo, generation=Generation(repo, stamp=b""), surface="http")
    async with Supervisor.open() as supervisor:
        yield Executor(runtime, supervisor, built=(lambda x: Engine(x, limits),))


def retained(x: Execution) -> list[ExecutionEvent]:
    """The events `x` retains, decoded, oldest first."""
    return [msgspec.json.decode(frame, type=ExecutionEvent) for frame in x.events]


def start(engine: Engine, capability: str, *, actor: str = "http", **input: Any) -> Any:
    """Start an execution of `capability` with `input` as `actor` (no checkpoint); the record."""
    cap = engine.find_capability(capability)
    return engine.start(cap, engine.executor.decode_value(cap, input), actor=Actor(kind=actor))  # type: ignore[arg-type]


class Tap:
    """Every frame `store` publishes from now on, unbounded; decoded on demand."""

    def __init__(self, store: ExecutionStore) -> None:
        self.subscriber = Subscriber(None, sys.maxsize, sys.maxsize)
        store.subscribers.add(self.subscriber)

    def frames(self) -> list[dict[str, Any]]:
        return [msgspec.json.decode(frame) for frame in self.subscriber.frames]

    def events(self, execution_id: str | None = None) -> list[dict[str, Any]]:
        """Execution events (not stream messages), of one execution when given."""
        return [
            f for f in self.frames() if "sequence" in f and (execution_id is None or f["execution_id"] == execution_id)
        ]

    def types(self, execution_id: str) -> list[str]:
        return [e["type"] for e in self.events(execution_id)]

    def states(self, execution_id: str) -> list[str]:
        """The states the execution passed through, from its events."""
        return [STATE_OF[e["type"]] for e in self.events(execution_id) if e["type"] in STATE_OF]


class LocalRun:
    """A run numbered as a reporting process (`svc run`) numbers it: its own store and dense sequence."""

    def __init__(
        self,
        capability: str = "executions.demonstrate",
        *,
        title: str = "Demonstrate an execution",
        pid: int = 4242,
        input: dict[str, Any] | None = None,
    ) -> None:
        self.capability = capability
        self.title = title
        self.pid = pid
        self.input = input or {}
        self.store = ExecutionStore(Limits(max_events=1_000_000))
        self.x = self.store.create(
            execution_id=None,
            capability=capability,
            title=title,
            input=self.input,
            cancellable=True,
            actor=ActorView(kind="cli", pid=pid),
            repository=RepositoryRef(name="probe", id="probe"),
        )

    @property
    def id(self) -> str:
        return self.x.id

    def emit(self, kind: str, data: dict[str, Any] | None = None) -> ExecutionEvent | None:
        return self.store.publish(self.x, kind, data or {})

    def logs(self, count: int, message: str = "line") -> None:
        for n in range(count):
            self.emit("execution.log", {"stream": "stdout", "message": f"{message} {n}"})

    def events(self, after: int = 0, through: int | None = None) -> list[ExecutionEvent]:
        """The events with `after` < sequence ≤ `through` (default: all)."""
        last = self.x.last_sequence if through is None else through
        return [event for event in self.store.events(self.x, after) if event.sequence <= last]

    def report(self, engine: Engine, events: list[ExecutionEvent], *, pid: int | None = None) -> ReportResult:
        """Report `events` to `engine` as this run's process would."""
        return engine.report(
            execution_id=self.id,
            cap=engine.find_capability(self.capability),
            title=self.title,
            pid=self.pid if pid is None else pid,
            input=self.input,
            events=events,
        )

    def body(self, events: list[ExecutionEvent], *, pid: int | None = None) -> dict[str, Any]:
        """The JSON body of `POST /api/v1/executions/report` for `events`."""
        return {
            "id": self.id,
            "capability": self.capability,
            "title": self.title,
            "pid": self.pid if pid is None else pid,
            "input": self.input,
            "cancellable": True,
            "events": msgspec.to_builtins(events),
        }
