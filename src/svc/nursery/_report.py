"""The report of an execution running in another process (`executions.report`, sent by `svc run`).

`ReportInput` is what the server decodes and `ReportAnswer` what it answers. The reporter sends `RawReport`,
the same fields with each event still the JSON its store encoded once, so a batch is never decoded only to be
encoded again; a test pins the two field lists together.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import Meta

from svc.nursery._events import EXECUTION_ID_PATTERN, ExecutionEvent, ExecutionView

__all__ = ["MAX_REPORT_EVENTS", "ExecutionId", "RawReport", "ReportAnswer", "ReportInput"]

#: The most events one report carries.
MAX_REPORT_EVENTS = 500
ExecutionId = Annotated[
    str, Meta(pattern=EXECUTION_ID_PATTERN, description="an execution id, x-<UTC timestamp>-<8 hex>")
]
Pid = Annotated[int, Meta(ge=1, le=4294967295)]


class ReportInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A batch of events of an execution running in another process."""

    id: ExecutionId
    capability: str
    title: str
    pid: Pid
    input: Any = None
    cancellable: bool = False
    events: Annotated[list[ExecutionEvent], Meta(max_length=MAX_REPORT_EVENTS)] = []


class ReportAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """What the server applied, where the next report starts, and whether a stop was asked."""

    applied: int
    through: int
    cancel_requested: bool
    execution: ExecutionView


class RawReport(msgspec.Struct, frozen=True, kw_only=True):
    """`ReportInput` as the reporter sends it: its events are the frames of its store, already JSON."""

    id: str
    capability: str
    title: str
    pid: int
    input: Any = None
    cancellable: bool = False
    events: list[msgspec.Raw] = []
