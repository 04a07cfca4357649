"""Execution events and views: the envelope every event travels in, its typed variants, and sanitising.

The variants (`Created`, `Queued`, ...) exist for the published JSON Schema (`executions.protocol`); the
store keeps every event as the one envelope `ExecutionEvent` with its `data` already plain JSON, and
encodes it once.
"""

from __future__ import annotations

import functools
import re
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

__all__ = [
    "DATA_TYPES",
    "EVENT_TYPES",
    "EXECUTION_ID_PATTERN",
    "PROTOCOL_VERSION",
    "STREAM_TYPES",
    "TERMINAL_TYPES",
    "ClosingData",
    "ExecutionDiagnostic",
    "ExecutionError",
    "ExecutionEvent",
    "ExecutionLinks",
    "ExecutionState",
    "ExecutionView",
    "LaggedData",
    "ProgressView",
    "ReadyData",
    "RepositoryRef",
    "StepView",
    "StreamClosing",
    "StreamLagged",
    "StreamReady",
    "event_schema",
    "sanitize",
    "stream_schema",
]

PROTOCOL_VERSION = "1"
#: `x-<UTC timestamp>-<8 lowercase hex>`, as the store makes them (the schema and the store's check agree).
EXECUTION_ID_PATTERN = "^x-[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}$"
ExecutionState = Literal["queued", "running", "cancelling", "succeeded", "failed", "cancelled"]
ErrorCode = Literal["invalid_input", "not_found", "refused", "forbidden", "internal", "cancelled", "unavailable"]
Severity = Literal["info", "warning", "error"]
LogStream = Literal["stdout", "stderr", "handler"]
CancelledBy = Literal["http", "mcp", "cli", "internal", "server"]


class ExecutionError(msgspec.Struct, frozen=True, kw_only=True):
    """Why an execution failed; never a traceback."""

    code: ErrorCode
    message: str
    correlation_id: str
    suggestion: str | None = None


class ExecutionDiagnostic(msgspec.Struct, frozen=True, kw_only=True):
    """A structured finding of a handler."""

    severity: Severity
    code: str
    summary: str
    detail: str | None = None
    suggestion: str | None = None


class ProgressView(msgspec.Struct, frozen=True, kw_only=True):
    """How far along an execution is."""

    current: int
    total: int | None = None
    message: str | None = None


class StepView(msgspec.Struct, kw_only=True):
    """A named phase of an execution."""

    name: str
    title: str
    state: Literal["running", "completed", "failed"]
    started_at: str
    finished_at: str | None = None
    detail: str | None = None


class ExecutionLinks(msgspec.Struct, frozen=True, kw_only=True):
    """Where to read, follow and cancel an execution."""

    self: str
    events: str
    cancel: str
    websocket: str
    cockpit: str


class RepositoryRef(msgspec.Struct, frozen=True, kw_only=True):
    """The checkout an execution ran in (never its path)."""

    name: str
    id: str
    branch: str | None = None


class ActorView(msgspec.Struct, frozen=True, kw_only=True):
    """Who started an execution."""

    kind: Literal["http", "mcp", "cli", "internal"]
    peer: str | None = None
    pid: int | None = None


class ExecutionView(msgspec.Struct, frozen=True, kw_only=True):
    """One execution as every surface shows it."""

    id: str
    capability: str
    title: str
    state: ExecutionState
    created_at: str
    started_at: str | None = None
    finished_at: str | None = None
    duration_ms: int | None = None
    input: Any
    output: Any = None
    error: ExecutionError | None = None
    progress: ProgressView | None = None
    steps: list[StepView] = []
    diagnostics: list[ExecutionDiagnostic] = []
    last_sequence: int
    event_count: int
    events_truncated: bool
    cancellable: bool
    actor: ActorView
    repository: RepositoryRef
    correlation_id: str
    links: ExecutionLinks


class ExecutionEvent(msgspec.Struct, frozen=True, kw_only=True):
    """The envelope of every execution event; `data` depends on `type`."""

    schema_version: str
    event_id: str
    execution_id: Annotated[str, Meta(pattern=EXECUTION_ID_PATTERN)]
    sequence: Annotated[int, Meta(ge=1)]
    timestamp: str
    type: str
    data: Any


# Typed variants, published as the event schema. Each carries the envelope fields and its own `data`.
class _Envelope(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    schema_version: str
    event_id: str
    execution_id: str
    sequence: int
    timestamp: str


class CreatedData(msgspec.Struct, frozen=True, kw_only=True):
    """What will run (input redacted)."""

    capability: str
    title: str
    input: Any


class QueuedData(msgspec.Struct, frozen=True, kw_only=True):
    """How many executions were queued before it."""

    ahead: int


class Empty(msgspec.Struct, frozen=True, kw_only=True):
    """No data."""


class StepStartedData(msgspec.Struct, frozen=True, kw_only=True):
    """A named phase entered."""

    name: str
    title: str


class StepCompletedData(msgspec.Struct, frozen=True, kw_only=True):
    """A named phase finished."""

    name: str
    ok: bool
    detail: str | None = None


class LogData(msgspec.Struct, frozen=True, kw_only=True):
    """A line of output."""

    stream: LogStream
    message: str


class CancellingData(msgspec.Struct, frozen=True, kw_only=True):
    """Who asked for the cancellation."""

    by: CancelledBy


class CompletedData(msgspec.Struct, frozen=True, kw_only=True):
    """The output of a successful execution."""

    output: Any


class FailedData(msgspec.Struct, frozen=True, kw_only=True):
    """Why the execution failed."""

    error: ExecutionError


class Created(_Envelope, frozen=True, tag="execution.created"):
    """Accepted."""

    data: CreatedData


class Queued(_Envelope, frozen=True, tag="execution.queued"):
    """Waiting for a worker."""

    data: QueuedData


class Started(_Envelope, frozen=True, tag="execution.started"):
    """Handler entered."""

    data: Empty


class Progress(_Envelope, frozen=True, tag="execution.progress"):
    """How far along."""

    data: ProgressView


class StepStarted(_Envelope, frozen=True, tag="execution.step.started"):
    """Named phase entered."""

    data: StepStartedData


class StepCompleted(_Envelope, frozen=True, tag="execution.step.completed"):
    """Named phase finished."""

    data: StepCompletedData


class Log(_Envelope, frozen=True, tag="execution.log"):
    """A line of output."""

    data: LogData


class Diagnostic(_Envelope, frozen=True, tag="execution.diagnostic"):
    """A structured finding."""

    data: ExecutionDiagnostic


class Cancelling(_Envelope, frozen=True, tag="execution.cancelling"):
    """Cancellation asked, handler not yet stopped."""

    data: CancellingData


class CancelledEvent(_Envelope, frozen=True, tag="execution.cancelled"):
    """Stopped because asked."""

    data: Empty


class Completed(_Envelope, frozen=True, tag="execution.completed"):
    """Finished; state and output in one event."""

    data: CompletedData


class Failed(_Envelope, frozen=True, tag="execution.failed"):
    """Finished unsuccessfully."""

    data: FailedData


AnyEvent = (
    Created
    | Queued
    | Started
    | Progress
    | StepStarted
    | StepCompleted
    | Log
    | Diagnostic
    | Cancelling
    | CancelledEvent
    | Completed
    | Failed
)

#: The Struct of each event type's `data`, read from the variants.
DATA_TYPES: dict[str, Any] = {
    member.__struct_config__.tag: next(f.type for f in msgspec.structs.fields(member) if f.name == "data")
    for member in AnyEvent.__args__
}


# Control messages of the live channel.
class _Stream(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    pass


class ReadyData(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The first frame of a connection."""

    protocol_version: str
    scope: Literal["all", "executions"]
    replayed: int
    truncated: bool
    heartbeat_seconds: int
    executions: list[str] | None = None


class LaggedData(msgspec.Struct, frozen=True, kw_only=True):
    """Events dropped for this subscriber."""

    dropped: int


class ClosingData(msgspec.Struct, frozen=True, kw_only=True):
    """Why the server closes the channel."""

    reason: str


class StreamReady(_Stream, frozen=True, tag="stream.ready"):
    """First frame."""

    data: ReadyData


class StreamLagged(_Stream, frozen=True, tag="stream.lagged"):
    """The subscriber fell behind; re-read the snapshot and page the history."""

    data: LaggedData


class StreamClosing(_Stream, frozen=True, tag="stream.closing"):
    """Server shutdown; close 1001 follows."""

    data: ClosingData


AnyStream = StreamReady | StreamLagged | StreamClosing


def _one_of(tp: Any) -> dict[str, Any]:
    """The JSON Schema of a tagged union, as `oneOf` with each member's tag a `const`.

    msgspec writes a tagged union as `anyOf` plus a discriminator; the members are mutually exclusive (each
    has its own tag), so `oneOf` says the same more precisely, and `const` names the one tag of a member.
    """
    schema: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(msgspec.json.schema(tp)))
    schema["oneOf"] = schema.pop("anyOf")
    for member in schema["oneOf"]:
        tag = schema["$defs"][member["$ref"].rsplit("/", 1)[-1]]["properties"]["type"]
        (only,) = tag.pop("enum")
        tag["const"] = only
    return schema


@functools.cache
def event_schema() -> dict[str, Any]:
    """The JSON Schema of execution events (`oneOf` on `type`; shared, do not mutate)."""
    return _one_of(AnyEvent)


@functools.cache
def stream_schema() -> dict[str, Any]:
    """The JSON Schema of the live channel's control messages (`oneOf` on `type`)."""
    return _one_of(AnyStream)


def _types(schema: dict[str, Any]) -> tuple[str, ...]:
    defs = schema["$defs"]
    return tuple(defs[m["$ref"].rsplit("/", 1)[-1]]["properties"]["type"]["const"] for m in schema["oneOf"])


EVENT_TYPES: tuple[str, ...] = _types(event_schema())
STREAM_TYPES: tuple[str, ...] = _types(stream_schema())
TERMINAL_TYPES = frozenset({"execution.completed", "execution.failed", "execution.cancelled"})

# CSI (ESC [ or the one-byte C1 CSI U+009B) and OSC (ESC ] or U+009D, ended by BEL, ST or U+009C).
_ESCAPES = re.compile(r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]|(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)")
# C0 controls but TAB, DEL, and the C1 controls.
_CONTROLS = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")


def sanitize(text: str, limit: int) -> str:
    """Strip CSI/OSC escapes, replace control characters (C0 but TAB, DEL, C1) by a space, cut to `limit` with `…`."""
    text = _CONTROLS.sub(" ", _ESCAPES.sub("", text))
    if len(text) > limit:
        return text[: limit - 1] + "…"
    return text
