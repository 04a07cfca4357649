"""The execution store: bounded records, the state machine, dense event sequences, and live subscribers.

Everything here is synchronous: a publish validates the state move, applies the event to the record,
appends it (dropping the oldest past `max_events`), and offers the encoded frame to every subscriber's own
bounded queue, all without a checkpoint. That is what lets a subscriber take a snapshot of the retained
events and register for live ones in one step, with no gap and no duplicate.
"""

from __future__ import annotations

import datetime as dt
import secrets
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec
import trio

from svc._errors import InvalidInput, NotFound, Unavailable
from svc.nursery._events import (
    PROTOCOL_VERSION,
    TERMINAL_TYPES,
    ActorView,
    ExecutionDiagnostic,
    ExecutionError,
    ExecutionEvent,
    ExecutionLinks,
    ExecutionState,
    ExecutionView,
    ProgressView,
    RepositoryRef,
    StepView,
    sanitize,
)

__all__ = ["FINAL", "Execution", "ExecutionStore", "IllegalMove", "Limits", "Subscriber", "new_execution_id"]

FINAL: frozenset[str] = frozenset({"succeeded", "failed", "cancelled"})
_MOVES: dict[str, frozenset[str]] = {
    "queued": frozenset({"running", "cancelled", "failed"}),
    "running": frozenset({"succeeded", "failed", "cancelling"}),
    "cancelling": frozenset({"cancelled", "succeeded", "failed"}),
}
_STATE_OF: dict[str, ExecutionState] = {
    "execution.started": "running",
    "execution.cancelling": "cancelling",
    "execution.cancelled": "cancelled",
    "execution.completed": "succeeded",
    "execution.failed": "failed",
}
_ID_CHARS = "0123456789abcdef"
_encoder = msgspec.json.Encoder()


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def new_execution_id() -> str:
    """`x-<UTC timestamp>-<8 lowercase hex>`."""
    return f"x-{dt.datetime.now(dt.UTC).strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(4)}"


def check_execution_id(value: str) -> str:
    """Parse an execution id strictly.

    Raises:
        InvalidInput: anything but `x-YYYYMMDDTHHMMSSZ-<8 lowercase hex>`.
    """
    parts = value.split("-")
    ok = (
        len(value) == 27
        and len(parts) == 3
        and parts[0] == "x"
        and len(parts[1]) == 16
        and parts[1][8] == "T"
        and parts[1][15] == "Z"
        and (parts[1][:8] + parts[1][9:15]).isdigit()
        and len(parts[2]) == 8
        and all(c in _ID_CHARS for c in parts[2])
    )
    if not ok:
        raise InvalidInput(f"{value!r} is not an execution id (x-YYYYMMDDTHHMMSSZ-<8 hex>)")
    return value


class IllegalMove(Exception):
    """A state move the state machine does not list; nothing was published."""


@dataclass(frozen=True, slots=True)
class Limits:
    """Store and live-channel bounds (reported by `executions.protocol`)."""

    max_executions: int = 200
    max_events: int = 2000
    max_log_chars: int = 2000
    max_running: int = 4
    max_subscriber_queue: int = 512
    max_diagnostics: int = 200
    max_connections: int = 64
    max_replay: int = 1000
    heartbeat_seconds: int = 20
    max_frame_bytes: int = 256 * 1024


class Subscriber:
    """One live-channel connection: its own bounded queue of frames and its dropped count."""

    def __init__(self, executions: frozenset[str] | None, capacity: int, max_frame: int) -> None:
        self.executions = executions
        self.capacity = capacity
        self.max_frame = max_frame
        self.frames: deque[str] = deque()
        self.marks: dict[str, int] = {}
        self.dropped = 0
        self.closing: str | None = None
        self._wakeup = trio.Event()

    def offer(self, execution_id: str, sequence: int, frame: str) -> None:
        """Queue a live frame without blocking; overflow counts as dropped for this subscriber only."""
        if sequence <= self.marks.get(execution_id, 0):
            return
        if len(frame) > self.max_frame or len(self.frames) >= self.capacity:
            self.dropped += 1
        else:
            if self.dropped:
                self.frames.append(
                    _encoder.encode({"type": "stream.lagged", "data": {"dropped": self.dropped}}).decode()
                )
                self.dropped = 0
            self.frames.append(frame)
        self._wakeup.set()

    def _lagged(self) -> None:
        self.frames.append(_encoder.encode({"type": "stream.lagged", "data": {"dropped": self.dropped}}).decode())
        self.dropped = 0

    def close(self, reason: str) -> None:
        """Ask the connection to send `stream.closing` and close."""
        self.closing = reason
        self._wakeup.set()

    async def next_frames(self) -> list[str]:
        """Wait for frames (or closing) and take every queued one."""
        while not self.frames and self.closing is None:
            if self.dropped:
                self.frames.append(
                    _encoder.encode({"type": "stream.lagged", "data": {"dropped": self.dropped}}).decode()
                )
                self.dropped = 0
                break
            await self._wakeup.wait()
            self._wakeup = trio.Event()
        taken = list(self.frames)
        self.frames.clear()
        return taken


@dataclass(slots=True, eq=False)
class Execution:
    """One execution's record (mutable; only the store changes it)."""

    id: str
    capability: str
    title: str
    input: Any
    cancellable: bool
    actor: ActorView
    repository: RepositoryRef
    created_at: str
    state: ExecutionState = "queued"
    started_at: str | None = None
    finished_at: str | None = None
    started_mono: float | None = None
    duration_ms: int | None = None
    output: Any = None
    error: ExecutionError | None = None
    progress: ProgressView | None = None
    steps: list[StepView] = field(default_factory=list)
    diagnostics: list[ExecutionDiagnostic] = field(default_factory=list)
    events: deque[tuple[int, str, ExecutionEvent]] = field(default_factory=deque)
    last_sequence: int = 0
    event_count: int = 0
    truncated: bool = False
    cancel_requested: bool = False
    scope: trio.CancelScope | None = None
    done: trio.Event = field(default_factory=trio.Event)
    pid: int | None = None
    mirror: bool = False
    deadline: float = 0.0

    @property
    def final(self) -> bool:
        """Whether the execution reached a final state."""
        return self.state in FINAL


class ExecutionStore:
    """Executions in memory, bounded; the only place their state changes."""

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()
        self._executions: dict[str, Execution] = {}
        self.subscribers: set[Subscriber] = set()

    def __len__(self) -> int:
        return len(self._executions)

    def __iter__(self) -> Iterator[Execution]:
        return iter(list(self._executions.values()))

    def get(self, execution_id: str) -> Execution:
        """The execution with this id.

        Raises:
            InvalidInput: the id is malformed.
            NotFound: no such execution is remembered.
        """
        found = self._executions.get(check_execution_id(execution_id))
        if found is None:
            raise NotFound(f"no execution {execution_id}")
        return found

    def find(self, execution_id: str) -> Execution | None:
        """The execution with this id, or None."""
        return self._executions.get(execution_id)

    def active(self) -> list[Execution]:
        """Unfinished executions, oldest first."""
        return [x for x in self._executions.values() if not x.final]

    def create(
        self,
        *,
        execution_id: str | None,
        capability: str,
        title: str,
        input: Any,
        cancellable: bool,
        actor: ActorView,
        repository: RepositoryRef,
        publish: bool = True,
    ) -> Execution:
        """Remember a new execution in state `queued`, evicting the oldest finished one at the bound.

        With `publish`, `execution.created` and `execution.queued` are published at once.

        Raises:
            Unavailable: the store is full of unfinished executions.
        """
        if len(self._executions) >= self.limits.max_executions:
            oldest = next((x for x in self._executions.values() if x.final), None)
            if oldest is None:
                raise Unavailable(f"{self.limits.max_executions} executions are unfinished; try again later")
            del self._executions[oldest.id]
        execution = Execution(
            id=execution_id or new_execution_id(),
            capability=capability,
            title=title,
            input=input,
            cancellable=cancellable,
            actor=actor,
            repository=repository,
            created_at=_now(),
        )
        self._executions[execution.id] = execution
        if publish:
            ahead = sum(1 for x in self._executions.values() if x.state == "queued") - 1
            self.publish(execution, "execution.created", {"capability": capability, "title": title, "input": input})
            self.publish(execution, "execution.queued", {"ahead": ahead})
        return execution

    def check_move(self, execution: Execution, event_type: str) -> None:
        """Raise `IllegalMove` when `event_type` would move `execution` along an unlisted edge."""
        target = _STATE_OF.get(event_type)
        if execution.final:
            raise IllegalMove(f"execution {execution.id} is {execution.state}; it never moves again")
        if event_type in ("execution.created", "execution.queued"):
            if execution.last_sequence > 1 and event_type == "execution.created":
                raise IllegalMove(f"execution {execution.id} was already created")
            return
        if target is None:
            if execution.state not in ("running", "cancelling"):
                raise IllegalMove(f"{event_type} while execution {execution.id} is {execution.state}")
            return
        if target != execution.state and target not in _MOVES[execution.state]:
            raise IllegalMove(f"execution {execution.id} cannot move from {execution.state} to {target}")

    def publish(
        self,
        execution: Execution,
        event_type: str,
        data: dict[str, Any],
        *,
        sequence: int | None = None,
        timestamp: str | None = None,
    ) -> ExecutionEvent:
        """Apply one event to `execution` and publish it (no checkpoint).

        Raises:
            IllegalMove: the move is not listed; nothing changes.
        """
        self.check_move(execution, event_type)
        target = _STATE_OF.get(event_type)
        if target is not None and target == execution.state:
            return self._last_event(execution)
        data = self._apply(execution, event_type, data, timestamp)
        seq = execution.last_sequence + 1 if sequence is None else sequence
        event = ExecutionEvent(
            schema_version=PROTOCOL_VERSION,
            event_id=f"{execution.id}#{seq}",
            execution_id=execution.id,
            sequence=seq,
            timestamp=timestamp or _now(),
            type=event_type,
            data=data,
        )
        frame = _encoder.encode(event).decode()
        execution.last_sequence = seq
        execution.event_count += 1
        execution.events.append((seq, frame, event))
        if len(execution.events) > self.limits.max_events:
            execution.events.popleft()
            execution.truncated = True
        for subscriber in self.subscribers:
            if subscriber.executions is None or execution.id in subscriber.executions:
                subscriber.offer(execution.id, seq, frame)
        if event_type in TERMINAL_TYPES:
            execution.done.set()
        return event

    def _last_event(self, execution: Execution) -> ExecutionEvent:
        return execution.events[-1][2]

    def _apply(self, x: Execution, kind: str, data: dict[str, Any], timestamp: str | None) -> dict[str, Any]:
        limit = self.limits.max_log_chars
        now = timestamp or _now()
        if kind == "execution.started":
            x.state, x.started_at, x.started_mono = "running", now, time.monotonic()
        elif kind == "execution.progress":
            message = data.get("message")
            data = {**data, "message": sanitize(message, limit) if isinstance(message, str) else None}
            x.progress = msgspec.convert(data, ProgressView)
        elif kind == "execution.step.started":
            data = {"name": sanitize(str(data["name"]), limit), "title": sanitize(str(data["title"]), limit)}
            x.steps.append(StepView(name=data["name"], title=data["title"], state="running", started_at=now))
        elif kind == "execution.step.completed":
            detail = data.get("detail")
            data = {
                "name": data["name"],
                "ok": bool(data["ok"]),
                "detail": sanitize(detail, limit) if detail else None,
            }
            for step in reversed(x.steps):
                if step.name == data["name"] and step.state == "running":
                    step.state = "completed" if data["ok"] else "failed"
                    step.finished_at, step.detail = now, data["detail"]
                    break
        elif kind == "execution.log":
            data = {"stream": data["stream"], "message": sanitize(str(data["message"]), limit)}
        elif kind == "execution.diagnostic":
            data = {k: sanitize(v, limit) if isinstance(v, str) and k != "severity" else v for k, v in data.items()}
            if len(x.diagnostics) < self.limits.max_diagnostics:
                x.diagnostics.append(msgspec.convert(data, ExecutionDiagnostic))
        elif kind == "execution.cancelling":
            x.state = "cancelling"
        elif kind in TERMINAL_TYPES:
            self._finish(x, kind, data, now)
        return data

    def _finish(self, x: Execution, kind: str, data: dict[str, Any], now: str) -> None:
        x.finished_at = now
        if x.started_mono is not None:
            x.duration_ms = int((time.monotonic() - x.started_mono) * 1000)
        if kind == "execution.completed":
            x.state, x.output = "succeeded", data.get("output")
        elif kind == "execution.failed":
            x.state, x.error = "failed", msgspec.convert(data["error"], ExecutionError)
        else:
            x.state = "cancelled"
            if x.error is None:
                x.error = ExecutionError(code="cancelled", message="cancelled as asked", correlation_id=x.id)
        for step in x.steps:
            if step.state == "running":
                step.state, step.finished_at = "failed", now

    def view(self, x: Execution) -> ExecutionView:
        """The execution as every surface shows it."""
        return ExecutionView(
            id=x.id,
            capability=x.capability,
            title=x.title,
            state=x.state,
            created_at=x.created_at,
            started_at=x.started_at,
            finished_at=x.finished_at,
            duration_ms=x.duration_ms,
            input=x.input,
            output=x.output if x.state == "succeeded" else None,
            error=x.error if x.state in ("failed", "cancelled") else None,
            progress=x.progress,
            steps=[msgspec.structs.replace(s) for s in x.steps],
            diagnostics=list(x.diagnostics),
            last_sequence=x.last_sequence,
            event_count=x.event_count,
            events_truncated=x.truncated,
            cancellable=x.cancellable,
            actor=x.actor,
            repository=x.repository,
            correlation_id=x.id,
            links=ExecutionLinks(
                self=f"/api/v1/executions/get?id={x.id}",
                events=f"/api/v1/executions/events?id={x.id}",
                cancel="/api/v1/executions/cancel",
                websocket=f"/events?execution={x.id}",
                cockpit=f"/cockpit/executions/{x.id}",
            ),
        )

    def retained(self, x: Execution, after: int) -> list[tuple[int, str, ExecutionEvent]]:
        """Retained events with a sequence above `after`, oldest first."""
        return [entry for entry in x.events if entry[0] > after]

    def subscribe(self, executions: frozenset[str] | None, after: int = 0) -> tuple[Subscriber, list[str], bool]:
        """Register a live subscriber and take its replay in the same step (no gap, no duplicate).

        With exactly one execution, its retained events above `after` are replayed (the newest
        `max_replay`). Returns the subscriber, the replay frames, and whether older events were left out.
        """
        limits = self.limits
        subscriber = Subscriber(executions, limits.max_subscriber_queue, limits.max_frame_bytes)
        replay: list[str] = []
        truncated = False
        if executions is not None and len(executions) == 1:
            (only,) = executions
            x = self._executions[only]
            entries = self.retained(x, after)
            truncated = len(entries) > limits.max_replay or (x.truncated and (not entries or entries[0][0] > after + 1))
            entries = entries[-limits.max_replay :]
            replay = [frame for _, frame, _ in entries]
            subscriber.marks[only] = entries[-1][0] if entries else max(after, x.last_sequence if not entries else 0)
        self.subscribers.add(subscriber)
        return subscriber, replay, truncated

    def unsubscribe(self, subscriber: Subscriber) -> None:
        """Forget a subscriber."""
        self.subscribers.discard(subscriber)
