"""The execution engine: every execution a task of the supervisor nursery, under its own cancel scope.

At most `max_running` run at once; the rest wait `queued` in a first-in-first-out line, and each slot that
frees goes to the head of the line in the same step. Cancelling a queued execution ends it at once;
cancelling a running, cancellable one publishes `execution.cancelling` and cancels its scope in the same
step. Reported executions (`svc run` in another process) are mirrored here event by event, and fail as
`unavailable` when their reporter falls silent.
"""

from __future__ import annotations

import contextlib
import logging
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

import msgspec
import trio

from svc._errors import InvalidInput, NotFound, Refused, SvcError, Unavailable
from svc.nursery._events import PROTOCOL_VERSION, ActorView, ErrorCode, ExecutionEvent, RepositoryRef
from svc.nursery._redact import redact, unredact
from svc.nursery._store import (
    STATE_OF,
    Execution,
    ExecutionStore,
    IllegalMove,
    Limits,
    check_execution_id,
    next_state,
)
from svc.runtime import EventReporter

if TYPE_CHECKING:
    from svc.registry import Capability
    from svc.runtime import Actor, Executor

__all__ = ["SILENCE_SECONDS", "Engine", "ReportResult"]

_log = logging.getLogger("svc.executions")
SILENCE_SECONDS = 30.0
SHUTDOWN_GRACE = 1.0
CancelOutcome = Literal["requested", "already_requested", "already_finished"]
_ERROR_CODES = frozenset(get_args(ErrorCode))


@dataclass(frozen=True, slots=True)
class ReportResult:
    """What a report changed: events applied, the reporter sequence held up to, and the record."""

    applied: int
    through: int
    cancel_requested: bool
    execution: Execution


class _StoreReporter(EventReporter):
    """The progress API of a handler running as an execution: each call publishes one event."""

    def __init__(self, store: ExecutionStore, execution: Execution) -> None:
        super().__init__()
        self._store = store
        self._x = execution

    def emit(self, kind: str, data: dict[str, Any]) -> None:
        """Publish one event of the execution."""
        # IllegalMove: the execution already ended (a handler still talking while it is torn down).
        with contextlib.suppress(IllegalMove):
            self._store.publish(self._x, kind, data)


class Engine:
    """Starts, runs, cancels and mirrors executions of one runtime."""

    def __init__(self, executor: Executor, limits: Limits | None = None) -> None:
        self.executor = executor
        self.store = ExecutionStore(limits)
        self.limits = self.store.limits
        self._line: deque[Execution] = deque()
        self._running = 0
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

    def check_executable(self, cap: Capability) -> None:
        """Raise `Refused` unless `cap` can run as an execution."""
        if not cap.executable or cap.kind == "resource" or cap.stability in ("planned", "unsupported"):
            raise Refused(f"{cap.id} is not executable")

    def start(self, cap: Capability, params: msgspec.Struct, *, actor: Actor) -> Execution:
        """Queue an execution of `cap` and answer at once (state `queued`); it runs when a slot frees.

        Raises:
            Unavailable: the server is stopping, or the store is full of unfinished executions.
            Refused: the capability is not executable.
        """
        if self.stopping:
            raise Unavailable("the server is stopping; it takes no new execution")
        self.check_executable(cap)
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
        self._line.append(execution)
        self.executor.supervisor.start_soon(self._run, execution, cap, params, actor, name=execution.id)
        return execution

    def _dispatch(self) -> None:
        """Give every free slot to the head of the line, in order (no checkpoint)."""
        while self._line and self._running < self.limits.max_running and not self.stopping:
            x = self._line.popleft()
            if x.final:
                continue
            self._running += 1
            self.store.publish(x, "execution.started", {})
            x.turn.set()

    async def _run(self, x: Execution, cap: Capability, params: msgspec.Struct, actor: Actor) -> None:
        assert x.scope is not None
        with x.scope:
            try:
                self._dispatch()
                await x.turn.wait()
                ctx = self.executor.context(actor, _StoreReporter(self.store, x))
                try:
                    output = await self.executor.run_here(cap, params, ctx)
                except trio.Cancelled:
                    raise
                except SvcError as exc:
                    if x.cancel_requested and x.cancellable:
                        self._end(x, "execution.cancelled", {})
                    else:
                        code = exc.code if exc.code in _ERROR_CODES else "internal"
                        self._fail(x, code, exc.message, exc.suggestion)
                except Exception as exc:
                    _log.error("execution_id=%s capability %s failed", x.id, cap.id, exc_info=exc)
                    self._fail(x, "internal", "internal error", f"search the server log for execution_id={x.id}")
                else:
                    self._end(x, "execution.completed", {"output": msgspec.to_builtins(output)})
            finally:
                if x.turn.is_set():
                    # The slot frees only once the execution has ended, so no `started` of the next one in
                    # line is ever published while this one still reads as running.
                    if not x.final:
                        self._end(x, "execution.cancelled", {})
                    self._running -= 1
                    self._dispatch()
        if not x.final:
            self._end(x, "execution.cancelled", {})

    def _fail(self, x: Execution, code: str, message: str, suggestion: str | None) -> None:
        error = {"code": code, "message": message, "correlation_id": x.id, "suggestion": suggestion}
        self._end(x, "execution.failed", {"error": error})

    def _end(self, x: Execution, kind: str, data: dict[str, Any]) -> None:
        try:
            self.store.publish(x, kind, data)
        except (IllegalMove, InvalidInput) as exc:
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
        elif x.cancellable:
            self._end(x, "execution.cancelling", {"by": by})
        else:
            return "requested", x
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
        own = [x for x in self.store.active() if not x.mirror]
        for x in own:
            x.cancel_requested = True
            if x.state == "queued":
                self._end(x, "execution.cancelled", {})
            elif x.state == "running":
                self._end(x, "execution.cancelling", {"by": "server"})
            if x.scope is not None:
                x.scope.cancel()
        with trio.move_on_after(SHUTDOWN_GRACE, shield=True):
            for x in own:
                await x.done.wait()
        for x in own:
            if not x.final:
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
        events: list[ExecutionEvent],
    ) -> ReportResult:
        """Apply a reporter's batch to its mirror (creating it on first report), each event once, in order.

        The reporter numbers events in its own dense sequence; `through` is how far the mirror holds it.
        Events at or below `through` are skipped (a re-sent batch applies nothing twice); a batch that
        does not continue at `through + 1` is a gap and applies nothing.

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
        cleaned = self._check_batch(execution_id, events)
        x = self.store.find(execution_id)
        if x is None:
            x = self._mirror(execution_id, cap, title, pid, input)
        elif not x.mirror:
            raise Refused(f"execution {execution_id} was started by this server; it cannot be reported")
        elif x.pid != pid:
            raise Refused(f"execution {execution_id} belongs to pid {x.pid}")
        fresh = [(e, data) for e, data in zip(events, cleaned, strict=True) if e.sequence > x.through]
        if fresh and x.final and x.error is not None and x.error.code == "unavailable" and x.last_sequence > x.through:
            raise Refused(f"execution {execution_id} ended on this server as unavailable")
        if fresh and fresh[0][0].sequence != x.through + 1:
            return ReportResult(applied=0, through=x.through, cancel_requested=x.cancel_requested, execution=x)
        state, sequence = x.state, x.last_sequence
        for event, _ in fresh:
            try:
                after = next_state(x.id, state, sequence, event.type)
            except IllegalMove as exc:
                raise Refused(str(exc)) from None
            if after == state and event.type in STATE_OF:
                raise Refused(f"event {event.sequence} ({event.type}) repeats the state {state}")
            state, sequence = after, sequence + 1
        for event, data in fresh:
            self.store.publish(
                x,
                event.type,
                self.store.created_data(x) if event.type == "execution.created" else data,
                timestamp=event.timestamp,
            )
            x.through = x.last_sequence
        x.deadline = trio.current_time() + SILENCE_SECONDS
        return ReportResult(applied=len(fresh), through=x.through, cancel_requested=x.cancel_requested, execution=x)

    def _check_batch(self, execution_id: str, events: list[ExecutionEvent]) -> list[Any]:
        """The data of each event, cleaned; every envelope checked first.

        Raises:
            InvalidInput: an envelope or data does not hold (the first problem, with its index).
        """
        cleaned: list[Any] = []
        for index, event in enumerate(events):
            where = f"events[{index}]"
            if event.execution_id != execution_id:
                raise InvalidInput(f"{where}.execution_id is {event.execution_id!r}, not {execution_id!r}")
            if event.schema_version != PROTOCOL_VERSION:
                raise InvalidInput(f"{where}.schema_version must be {PROTOCOL_VERSION!r}")
            if event.event_id != f"{execution_id}#{event.sequence}":
                raise InvalidInput(f"{where}.event_id must be {execution_id}#{event.sequence}")
            if index and event.sequence != events[index - 1].sequence + 1:
                raise InvalidInput(f"{where}.sequence is not dense (after {events[index - 1].sequence})")
            if event.sequence < 1:
                raise InvalidInput(f"{where}.sequence must be 1 or more")
            try:
                cleaned.append(self.store.clean(event.type, event.data))
            except InvalidInput as exc:
                raise InvalidInput(f"{where}: {exc.message}") from None
        return cleaned

    def _mirror(self, execution_id: str, cap: Capability, title: str, pid: int, raw: Any) -> Execution:
        registry = self.executor.runtime.registry
        schema, components = registry.input_schema(cap), registry.schemas.components
        self.check_executable(cap)
        params = self.executor.decode_value(cap, unredact(raw, schema, components))
        x = self.store.create(
            execution_id=execution_id,
            capability=cap.id,
            title=title,
            input=redact(msgspec.to_builtins(params), schema, components),
            cancellable=cap.cancellable,
            actor=ActorView(kind="cli", pid=pid),
            repository=self.repository_ref(),
            publish=False,
        )
        x.mirror, x.pid = True, pid
        x.deadline = trio.current_time() + SILENCE_SECONDS
        self.executor.supervisor.start_soon(self._watch_silence, x, name=f"silence {execution_id}")
        return x

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
