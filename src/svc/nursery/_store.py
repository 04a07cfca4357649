"""The execution store: bounded records, the state machine, dense event sequences, and live subscribers.

Everything here is synchronous: a publish validates the state move, applies the event to the record,
appends it (dropping the oldest past `max_events`), and offers the encoded frame to every subscriber's own
bounded queue, all without a checkpoint. That is what lets a subscriber take a snapshot of the retained
events and register for live ones in one step, with no gap and no duplicate.
"""

from __future__ import annotations

import datetime as dt
import itertools
import re
import secrets
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec
import trio

from svc._errors import InvalidInput, NotFound, Unavailable
from svc.nursery._events import (
    DATA_TYPES,
    EXECUTION_ID_PATTERN,
    PROTOCOL_VERSION,
    TERMINAL_TYPES,
    ActorView,
    ExecutionDiagnostic,
    ExecutionError,
    ExecutionEvent,
    ExecutionLinks,
    ExecutionState,
    ExecutionView,
    FailedData,
    LaggedData,
    ProgressView,
    RepositoryRef,
    StepView,
    StreamLagged,
    sanitize,
)

__all__ = [
    "FINAL",
    "STATE_OF",
    "Execution",
    "ExecutionStore",
    "IllegalMove",
    "Limits",
    "Subscriber",
    "check_execution_id",
    "new_execution_id",
    "next_state",
]

FINAL: frozenset[str] = frozenset({"succeeded", "failed", "cancelled"})
_MOVES: dict[str, frozenset[str]] = {
    "queued": frozenset({"running", "cancelled", "failed"}),
    "running": frozenset({"succeeded", "failed", "cancelling"}),
    "cancelling": frozenset({"cancelled", "succeeded", "failed"}),
}
STATE_OF: dict[str, ExecutionState] = {
    "execution.started": "running",
    "execution.cancelling": "cancelling",
    "execution.cancelled": "cancelled",
    "execution.completed": "succeeded",
    "execution.failed": "failed",
}
# Events that move no state, and the states in which each may be published.
_WHILE: dict[str, frozenset[str]] = {
    "execution.created": frozenset({"queued"}),
    "execution.queued": frozenset({"queued"}),
    "execution.progress": frozenset({"running", "cancelling"}),
    "execution.step.started": frozenset({"running", "cancelling"}),
    "execution.step.completed": frozenset({"running", "cancelling"}),
    "execution.log": frozenset({"running", "cancelling"}),
    "execution.diagnostic": frozenset({"running", "cancelling"}),
}
# The text fields of each event's data that are sanitised (a failure's error is sanitised on its own).
_TEXTS: dict[str, tuple[str, ...]] = {
    "execution.created": ("capability", "title"),
    "execution.progress": ("message",),
    "execution.step.started": ("name", "title"),
    "execution.step.completed": ("name", "detail"),
    "execution.log": ("message",),
    "execution.diagnostic": ("code", "summary", "detail", "suggestion"),
}
_ID = re.compile(EXECUTION_ID_PATTERN)
_encoder = msgspec.json.Encoder()
_event_decoder = msgspec.json.Decoder(ExecutionEvent)


def next_state(execution_id: str, state: ExecutionState, sequence: int, event_type: str) -> ExecutionState:
    """The state after publishing `event_type` as event `sequence + 1` of an execution in `state`.

    A same-state repeat (`started` while running, ...) is no move and answers `state`.

    Raises:
        IllegalMove: the event would move the execution along an edge the state machine does not list.
    """
    if state in FINAL:
        raise IllegalMove(f"execution {execution_id} is {state}; it never moves again")
    target = STATE_OF.get(event_type)
    if target is None:
        allowed = _WHILE.get(event_type)
        if allowed is None:
            raise IllegalMove(f"{event_type!r} is not an execution event type")
        if event_type == "execution.created" and sequence != 0:
            raise IllegalMove(f"execution {execution_id} was already created")
        if state not in allowed or (event_type != "execution.created" and sequence == 0):
            raise IllegalMove(f"{event_type} while execution {execution_id} is {state}")
        return state
    if target != state and target not in _MOVES[state]:
        raise IllegalMove(f"execution {execution_id} cannot move from {state} to {target}")
    return target


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
    if _ID.fullmatch(value) is None:
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
    """One live-channel connection: its own bounded queue of frames and its dropped count.

    `offer` never blocks: a frame that does not fit (the queue is full, or the frame is over the size
    bound) is counted as dropped for this subscriber only, and `stream.lagged {dropped}` is queued ahead of
    the next frame that fits.
    """

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
        """Queue a live frame without blocking; skip what was already replayed (`marks`)."""
        if sequence <= self.marks.get(execution_id, 0):
            return
        if len(frame) > self.max_frame or len(self.frames) >= self.capacity:
            self.dropped += 1
        else:
            if self.dropped:
                self._lagged()
            self.frames.append(frame)
        self._wakeup.set()

    def _lagged(self) -> None:
        self.frames.append(_encoder.encode(StreamLagged(data=LaggedData(dropped=self.dropped))).decode())
        self.dropped = 0

    def close(self, reason: str) -> None:
        """Ask the connection to send `stream.closing` and close."""
        self.closing = reason
        self._wakeup.set()

    def take(self) -> list[str]:
        """Every queued frame (a pending `stream.lagged` first when nothing else is queued), without waiting."""
        if not self.frames and self.dropped:
            self._lagged()
        taken = list(self.frames)
        self.frames.clear()
        return taken

    async def wait(self) -> None:
        """Wait until there is something to take (or the connection is asked to close)."""
        while not self.frames and not self.dropped and self.closing is None:
            await self._wakeup.wait()
            self._wakeup = trio.Event()

    async def next_frames(self) -> list[str]:
        """Wait for frames (or closing) and take every queued one."""
        await self.wait()
        return self.take()


@dataclass(slots=True, eq=False)
class Execution:
    """One execution's record (mutable; only the store changes it).

    `events` holds the encoded frames of the retained events, oldest first; sequences are dense, so the
    first retained one is `last_sequence - len(events) + 1`. For a mirror (an execution reported by another
    process), `through` is the reporter's sequence applied up to.
    """

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
    duration_ms: int | None = None
    output: Any = None
    error: ExecutionError | None = None
    progress: ProgressView | None = None
    steps: list[StepView] = field(default_factory=list)
    diagnostics: list[ExecutionDiagnostic] = field(default_factory=list)
    events: deque[str] = field(default_factory=deque)
    last_sequence: int = 0
    event_count: int = 0
    truncated: bool = False
    cancel_requested: bool = False
    scope: trio.CancelScope | None = None
    turn: trio.Event = field(default_factory=trio.Event)
    done: trio.Event = field(default_factory=trio.Event)
    pid: int | None = None
    mirror: bool = False
    through: int = 0
    deadline: float = 0.0

    @property
    def final(self) -> bool:
        """Whether the execution reached a final state."""
        return self.state in FINAL

    @property
    def first_sequence(self) -> int:
        """The sequence of the oldest retained event (`last_sequence + 1` when none is retained)."""
        return self.last_sequence - len(self.events) + 1


class ExecutionStore:
    """Executions in memory, bounded; the only place their state changes."""

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()
        self._executions: dict[str, Execution] = {}
        self.subscribers: set[Subscriber] = set()
        #: How many events were published so far: a page showing executions is current while it holds this.
        self.revision = 0

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

        `input` must already be redacted. With `publish`, `execution.created` and `execution.queued` are
        published at once (no checkpoint between them).

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
            title=sanitize(title, self.limits.max_log_chars),
            input=input,
            cancellable=cancellable,
            actor=actor,
            repository=repository,
            created_at=_now(),
        )
        self._executions[execution.id] = execution
        if publish:
            ahead = sum(1 for x in self._executions.values() if x.state == "queued" and not x.mirror) - 1
            self.publish(execution, "execution.created", self.created_data(execution))
            self.publish(execution, "execution.queued", {"ahead": ahead})
        return execution

    @staticmethod
    def created_data(x: Execution) -> dict[str, Any]:
        """The data of `execution.created`: what will run, with the record's (redacted) input."""
        return {"capability": x.capability, "title": x.title, "input": x.input}

    def check_move(self, x: Execution, event_type: str) -> ExecutionState:
        """The state `event_type` would move `x` to.

        Raises:
            IllegalMove: the move is not listed.
        """
        return next_state(x.id, x.state, x.last_sequence, event_type)

    def clean(self, event_type: str, data: Any) -> msgspec.Struct:
        """`data` as its type's Struct, every text sanitised and cut to `max_log_chars`.

        Raises:
            InvalidInput: `data` does not fit `event_type`.
        """
        kind = DATA_TYPES.get(event_type)
        if kind is None:
            raise InvalidInput(f"{event_type!r} is not an execution event type")
        try:
            value: msgspec.Struct = msgspec.convert(data if data is not None else {}, kind)
        except msgspec.ValidationError as exc:
            raise InvalidInput(f"the data of {event_type} does not fit its type: {exc}") from None
        limit = self.limits.max_log_chars
        if isinstance(value, FailedData):
            error = value.error
            return FailedData(
                error=msgspec.structs.replace(
                    error,
                    message=sanitize(error.message, limit),
                    suggestion=sanitize(error.suggestion, limit) if error.suggestion is not None else None,
                )
            )
        texts = {
            name: sanitize(text, limit)
            for name in _TEXTS.get(event_type, ())
            if isinstance(text := getattr(value, name), str)
        }
        return msgspec.structs.replace(value, **texts) if texts else value

    def publish(
        self,
        x: Execution,
        event_type: str,
        data: Any,
        *,
        timestamp: str | None = None,
    ) -> ExecutionEvent | None:
        """Apply one event to `x` as its next sequence and publish it (no checkpoint).

        A same-state repeat (`started` while running) publishes nothing and answers None.

        Raises:
            IllegalMove: the move is not listed; nothing changes.
            InvalidInput: `data` does not fit `event_type`; nothing changes.
        """
        target = self.check_move(x, event_type)
        if event_type in STATE_OF and target == x.state:
            return None
        clean = self.clean(event_type, data)
        now = timestamp or _now()
        self._apply(x, event_type, clean, now)
        seq = x.last_sequence + 1
        event = ExecutionEvent(
            schema_version=PROTOCOL_VERSION,
            event_id=f"{x.id}#{seq}",
            execution_id=x.id,
            sequence=seq,
            timestamp=now,
            type=event_type,
            data=clean,
        )
        frame = _encoder.encode(event).decode()
        x.last_sequence = seq
        x.event_count += 1
        self.revision += 1
        x.events.append(frame)
        if len(x.events) > self.limits.max_events:
            x.events.popleft()
            x.truncated = True
        for subscriber in self.subscribers:
            if subscriber.executions is None or x.id in subscriber.executions:
                subscriber.offer(x.id, seq, frame)
        if event_type in TERMINAL_TYPES:
            x.done.set()
        return event

    def _apply(self, x: Execution, kind: str, data: Any, now: str) -> None:
        if kind == "execution.created":
            # The record is created when its `created` event is: a mirror's first report arrives after the
            # reporting process created (and often started) the execution, and carries that moment.
            x.created_at = now
        elif kind == "execution.started":
            x.state, x.started_at = "running", now
        elif kind == "execution.progress":
            x.progress = data
        elif kind == "execution.step.started":
            x.steps.append(StepView(name=data.name, title=data.title, state="running", started_at=now))
        elif kind == "execution.step.completed":
            for step in reversed(x.steps):
                if step.name == data.name and step.state == "running":
                    step.state = "completed" if data.ok else "failed"
                    step.finished_at, step.detail = now, data.detail
                    break
        elif kind == "execution.diagnostic":
            if len(x.diagnostics) < self.limits.max_diagnostics:
                x.diagnostics.append(data)
        elif kind == "execution.cancelling":
            x.state = "cancelling"
        elif kind in TERMINAL_TYPES:
            self._finish(x, kind, data, now)

    def _finish(self, x: Execution, kind: str, data: Any, now: str) -> None:
        x.finished_at = now
        if x.started_at is not None:
            x.duration_ms = max(0, _millis(now) - _millis(x.started_at))
        if kind == "execution.completed":
            x.state, x.output = "succeeded", data.output
        elif kind == "execution.failed":
            x.state, x.error = "failed", data.error
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

    def frames(self, x: Execution, after: int = 0) -> list[str]:
        """The encoded retained events with a sequence above `after`, oldest first."""
        skip = max(0, after - x.first_sequence + 1)
        return list(itertools.islice(x.events, skip, None))

    def events(self, x: Execution, after: int = 0, limit: int | None = None) -> list[ExecutionEvent]:
        """The retained events with a sequence above `after` (at most `limit`), oldest first, decoded."""
        frames = self.frames(x, after)
        return [_event_decoder.decode(frame) for frame in frames[:limit]]

    def subscribe(
        self, executions: frozenset[str] | None, after: int = 0, *, capacity: int | None = None
    ) -> tuple[Subscriber, list[str], bool]:
        """Register a live subscriber and take its replay in the same step (no gap, no duplicate).

        With exactly one execution, its retained events above `after` are replayed (the newest
        `max_replay`); an event over the frame bound is left out of the replay and counted as dropped, so
        the subscriber's first frame after it is `stream.lagged`. Returns the subscriber, the replay frames,
        and whether older events above `after` were left out (by the store bound or by `max_replay`).
        `capacity` replaces `max_subscriber_queue` (and lifts the frame bound and `max_replay`) for an
        in-process subscriber that must see every event, such as the reporter of `svc run`.
        """
        limits = self.limits
        if capacity is None:
            subscriber = Subscriber(executions, limits.max_subscriber_queue, limits.max_frame_bytes)
            max_replay = limits.max_replay
        else:
            subscriber = Subscriber(executions, capacity, capacity)
            max_replay = capacity
        replay: list[str] = []
        truncated = False
        if executions is not None and len(executions) == 1:
            (only,) = executions
            x = self._executions[only]
            frames = self.frames(x, after)
            truncated = x.first_sequence > after + 1 or len(frames) > max_replay
            frames = frames[-max_replay:]
            replay = [frame for frame in frames if len(frame) <= subscriber.max_frame]
            subscriber.dropped = len(frames) - len(replay)
            subscriber.marks[only] = max(after, x.last_sequence)
        self.subscribers.add(subscriber)
        return subscriber, replay, truncated

    def unsubscribe(self, subscriber: Subscriber) -> None:
        """Forget a subscriber."""
        self.subscribers.discard(subscriber)


def _millis(timestamp: str) -> int:
    return int(dt.datetime.fromisoformat(timestamp).timestamp() * 1000)
