"""The execution engine: every execution a task of the supervisor nursery, under its own cancel scope.

At most `max_running` run at once (a fair semaphore keeps the rest `queued`, first in first out).
Cancelling a queued execution ends it at once; cancelling a running, cancellable one publishes
`execution.cancelling` and cancels its scope in the same step. Reported executions (`svc run` in another
process) are mirrored here event by event, and fail as `unavailable` when their reporter falls silent.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import msgspec
import trio

from svc._errors import InvalidInput, NotFound, Refused, SvcError, Unavailable
from svc.nursery._events import (
    EVENT_TYPES,
    PROTOCOL_VERSION,
    ActorView,
    AnyEvent,
    ExecutionEvent,
    RepositoryRef,
)
from svc.nursery._redact import redact
from svc.nursery._store import (
    _MOVES,
    _STATE_OF,
    Execution,
    ExecutionStore,
    IllegalMove,
    Limits,
    check_execution_id,
)

if TYPE_CHECKING:
    from svc.registry import Actor, Capability, Executor

__all__ = ["SILENCE_SECONDS", "Engine", "ReportResult"]

_log = logging.getLogger("svc.executions")
SILENCE_SECONDS = 30.0
SHUTDOWN_GRACE = 1.0
CancelOutcome = Literal["requested", "already_requested", "already_finished"]
_event_list = msgspec.json.Decoder(list[AnyEvent])


@dataclass(frozen=True, slots=True)
class ReportResult:
    """What a report changed: events applied, the reporter sequence held up to, and the record."""

    applied: int
    through: int
    cancel_requested: bool
    execution: Execution


class _StoreReporter:
    """The progress API of a handler running as an execution: each call publishes one event."""

    def __init__(self, store: ExecutionStore, execution: Execution) -> None:
        self._store = store
        self._x = execution
        self._step: str | None = None

    def _publish(self, kind: str, data: dict[str, Any]) -> None:
        # IllegalMove: the execution already ended (a handler still talking while it is torn down).
        with contextlib.suppress(IllegalMove):
            self._store.publish(self._x, kind, data)

    def step(self, name: str, title: str) -> None:
        self._step = name
        self._publish("execution.step.started", {"name": name, "title": title})

    def step_done(self, ok: bool, detail: str | None) -> None:
        if self._step is not None:
            self._publish("execution.step.completed", {"name": self._step, "ok": ok, "detail": detail})
            self._step = None

    def progress(self, current: int, total: int | None, message: str | None) -> None:
        self._publish("execution.progress", {"current": current, "total": total, "message": message})

    def stream(self, kind: Literal["stdout", "stderr", "handler"], message: str) -> None:
        self._publish("execution.log", {"stream": kind, "message": message})

    def diagnostic(
        self,
        severity: Literal["info", "warning", "error"],
        code: str,
        summary: str,
        detail: str | None,
        suggestion: str | None,
    ) -> None:
        self._publish(
            "execution.diagnostic",
            {
                "severity": severity,
                "code": code,
                "summary": summary,
                "detail": detail,
                "suggestion": suggestion,
            },
        )


class Engine:
    """Starts, runs, cancels and mirrors executions of one runtime."""

    def __init__(self, executor: Executor, limits: Limits | None = None) -> None:
        self.executor = executor
        self.store = ExecutionStore(limits)
        self.limits = self.store.limits
        self._slots = trio.Semaphore(self.limits.max_running)
        self.stopping = False
        self.live_channels = 0

    # -- starting ---------------------------------------------------------------------------------------

    def repository_ref(self) -> RepositoryRef:
        """The checkout executions run in (name, id, branch; never the path)."""
        repo = self.executor.runtime.repository
        return RepositoryRef(name=repo.name, id=repo.id, branch=repo.git().branch)

    def redacted(self, cap: Capability, value: Any) -> Any:
        """The input with sensitive values replaced, by the capability's input schema."""
        registry = self.executor.runtime.registry
        return redact(value, registry.input_schema(cap), registry.schemas.components)

    def start(self, cap: Capability, params: msgspec.Struct, *, actor: Actor) -> Execution:
        """Queue an execution of `cap` and answer at once; it runs when a worker slot frees.

        Raises:
            Unavailable: the server is stopping, or the store is full of unfinished executions.
            Refused: the capability is not executable.
        """
        if self.stopping:
            raise Unavailable("the server is stopping; it takes no new execution")
        if cap.handler is None or cap.kind == "resource" or cap.stability in ("planned", "unsupported"):
            raise Refused(f"{cap.id} is not executable")
        execution = self.store.create(
            execution_id=None,
            capability=cap.id,
            title=cap.title,
            input=self.redacted(cap, msgspec.to_builtins(params)),
            cancellable=cap.cancellable,
            actor=ActorView(kind=actor.kind, peer=actor.peer, pid=actor.pid),
            repository=self.repository_ref(),
        )
        execution.scope = trio.CancelScope()
        self.executor.supervisor.start_soon(self._run, execution, cap, params, actor, name=execution.id)
        return execution

    async def _run(self, x: Execution, cap: Capability, params: msgspec.Struct, actor: Actor) -> None:
        assert x.scope is not None
        with x.scope:
            async with self._slots:
                if x.final:
                    return
                self.store.publish(x, "execution.started", {})
                ctx = self.executor.context(actor, _StoreReporter(self.store, x))
                try:
                    output = await self.executor.run_here(cap, params, ctx)
                except trio.Cancelled:
                    raise
                except SvcError as exc:
                    if x.cancel_requested and x.cancellable:
                        self._end(x, "execution.cancelled", {})
                    else:
                        self._fail(x, exc.code, exc.message, exc.suggestion)
                except Exception as exc:
                    _log.error("execution_id=%s capability %s failed", x.id, cap.id, exc_info=exc)
                    self._fail(x, "internal", "internal error", f"search the server log for execution_id={x.id}")
                else:
                    self._end(x, "execution.completed", {"output": msgspec.to_builtins(output)})
        if not x.final:
            self._end(x, "execution.cancelled", {})

    def _fail(self, x: Execution, code: str, message: str, suggestion: str | None) -> None:
        error = {"code": code, "message": message, "correlation_id": x.id, "suggestion": suggestion}
        self._end(x, "execution.failed", {"error": error})

    def _end(self, x: Execution, kind: str, data: dict[str, Any]) -> None:
        try:
            self.store.publish(x, kind, data)
        except IllegalMove as exc:
            _log.warning("execution_id=%s: %s", x.id, exc)

    # -- cancelling -------------------------------------------------------------------------------------

    def cancel(self, execution_id: str, *, by: str) -> tuple[CancelOutcome, Execution]:
        """Ask an execution to stop.

        Raises:
            InvalidInput: a malformed id.
            NotFound: no such execution.
        """
        x = self.store.get(execution_id)
        if x.final:
            return "already_finished", x
        if x.cancel_requested:
            return "already_requested", x
        x.cancel_requested = True
        if x.mirror:
            return "requested", x
        if x.state == "queued":
            self._end(x, "execution.cancelled", {})
            if x.scope is not None:
                x.scope.cancel()
        elif x.cancellable:
            self.store.publish(x, "execution.cancelling", {"by": by})
            if x.scope is not None:
                x.scope.cancel()
        return "requested", x

    def close_channels(self, reason: str) -> None:
        """Tell every live subscriber to send `stream.closing` and close."""
        self.stopping = True
        for subscriber in list(self.store.subscribers):
            subscriber.close(reason)

    async def shutdown(self) -> None:
        """Refuse new starts, cancel every active execution (`by: server`), force stragglers after 1 s."""
        self.stopping = True
        for x in self.store.active():
            if x.mirror:
                continue
            x.cancel_requested = True
            if x.state == "running":
                self._end(x, "execution.cancelling", {"by": "server"})
            if x.scope is not None:
                x.scope.cancel()
        with trio.move_on_after(SHUTDOWN_GRACE, shield=True):
            for x in self.store.active():
                if not x.mirror:
                    await x.done.wait()
        for x in self.store.active():
            if x.state in ("queued", "cancelling"):
                self._end(x, "execution.cancelled", {})

    # -- reports from other processes -------------------------------------------------------------------

    def report(
        self,
        *,
        execution_id: str,
        cap: Capability,
        title: str,
        pid: int,
        input: Any,
        cancellable: bool,
        events: list[ExecutionEvent],
    ) -> ReportResult:
        """Apply a reporter's batch to its mirror (creating it on first report), each event once, in order.

        Raises:
            InvalidInput: the batch is malformed (nothing applied).
            Refused: the id belongs to this server or to another pid, or a move is illegal (nothing applied).
            Unavailable: the server is stopping.
        """
        if self.stopping:
            raise Unavailable("the server is stopping")
        check_execution_id(execution_id)
        if pid <= 0:
            raise InvalidInput("pid must be a positive process id")
        self._check_batch(execution_id, events)
        x = self.store.find(execution_id)
        if x is None:
            x = self._mirror(execution_id, cap, title, pid, input, cancellable)
        elif not x.mirror:
            raise Refused(f"execution {execution_id} was started by this server; it cannot be reported")
        elif x.pid != pid:
            raise Refused(f"execution {execution_id} belongs to pid {x.pid}")
        fresh = [e for e in events if e.sequence > x.last_sequence]
        if fresh and x.final and x.error is not None and x.error.code == "unavailable":
            raise Refused(f"execution {execution_id} ended on this server as unavailable")
        if fresh and fresh[0].sequence != x.last_sequence + 1:
            return ReportResult(applied=0, through=x.last_sequence, cancel_requested=x.cancel_requested, execution=x)
        self._simulate(x, fresh)
        for event in fresh:
            data = event.data if isinstance(event.data, dict) else {}
            self.store.publish(x, event.type, data, sequence=event.sequence, timestamp=event.timestamp)
        x.deadline = trio.current_time() + SILENCE_SECONDS
        return ReportResult(
            applied=len(fresh), through=x.last_sequence, cancel_requested=x.cancel_requested, execution=x
        )

    def _check_batch(self, execution_id: str, events: list[ExecutionEvent]) -> None:
        for index, event in enumerate(events):
            where = f"events[{index}]"
            if event.execution_id != execution_id:
                raise InvalidInput(f"{where}.execution_id is {event.execution_id!r}, not {execution_id!r}")
            if event.schema_version != PROTOCOL_VERSION:
                raise InvalidInput(f"{where}.schema_version must be {PROTOCOL_VERSION!r}")
            if event.event_id != f"{execution_id}#{event.sequence}":
                raise InvalidInput(f"{where}.event_id must be {execution_id}#{event.sequence}")
            if event.type not in EVENT_TYPES:
                raise InvalidInput(f"{where}.type {event.type!r} is not an execution event type")
            if index and event.sequence != events[index - 1].sequence + 1:
                raise InvalidInput(f"{where}.sequence is not dense (after {events[index - 1].sequence})")
        try:
            _event_list.decode(msgspec.json.encode(events))
        except msgspec.ValidationError as exc:
            raise InvalidInput(f"an event's data does not fit its type: {exc}") from None

    def _mirror(
        self, execution_id: str, cap: Capability, title: str, pid: int, raw: Any, cancellable: bool
    ) -> Execution:
        params = self.executor.decode_value(cap, raw)
        x = self.store.create(
            execution_id=execution_id,
            capability=cap.id,
            title=title,
            input=self.redacted(cap, msgspec.to_builtins(params)),
            cancellable=cap.cancellable,
            actor=ActorView(kind="cli", pid=pid),
            repository=self.repository_ref(),
            publish=False,
        )
        x.mirror, x.pid = True, pid
        x.deadline = trio.current_time() + SILENCE_SECONDS
        self.executor.supervisor.start_soon(self._watch_silence, x, name=f"silence {execution_id}")
        return x

    def _simulate(self, x: Execution, events: list[ExecutionEvent]) -> None:
        state, final = x.state, x.final
        for event in events:
            target = _STATE_OF.get(event.type)
            if final:
                raise Refused(f"execution {x.id} is {state}; it never moves again")
            if target is None:
                if event.type not in ("execution.created", "execution.queued") and state not in (
                    "running",
                    "cancelling",
                ):
                    raise Refused(f"{event.type} while execution {x.id} is {state}")
                continue
            if target != state and target not in _MOVES[state]:
                raise Refused(f"execution {x.id} cannot move from {state} to {target}")
            state = target
            final = state in ("succeeded", "failed", "cancelled")

    async def _watch_silence(self, x: Execution) -> None:
        while not x.final:
            if trio.current_time() >= x.deadline:
                error = {
                    "code": "unavailable",
                    "message": f"the reporting process (pid {x.pid}) sent nothing for {SILENCE_SECONDS:.0f} s",
                    "correlation_id": x.id,
                    "suggestion": "run it again; the reporter stopped or lost the server",
                }
                self._end(x, "execution.failed", {"error": error})
                return
            await trio.sleep_until(x.deadline)

    def find_capability(self, capability_id: str) -> Capability:
        """A capability of this runtime by id.

        Raises:
            NotFound: unknown id.
        """
        cap = self.executor.runtime.registry.get(capability_id)
        if cap is None:
            raise NotFound(f"no capability {capability_id!r}")
        return cap
