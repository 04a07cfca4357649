"""The execution plane: the supervisor nursery, the execution store and engine, and their events.

Every handler runs as a task of the supervisor nursery under its own cancel scope; executions add a
bounded store, a state machine, dense event sequences and live subscribers on top.
"""

from __future__ import annotations

from svc.nursery._engine import SILENCE_SECONDS as SILENCE_SECONDS
from svc.nursery._engine import Engine as Engine
from svc.nursery._engine import ReportResult as ReportResult
from svc.nursery._events import EVENT_TYPES as EVENT_TYPES
from svc.nursery._events import PROTOCOL_VERSION as PROTOCOL_VERSION
from svc.nursery._events import STREAM_TYPES as STREAM_TYPES
from svc.nursery._events import TERMINAL_TYPES as TERMINAL_TYPES
from svc.nursery._events import ClosingData as ClosingData
from svc.nursery._events import ExecutionEvent as ExecutionEvent
from svc.nursery._events import ExecutionView as ExecutionView
from svc.nursery._events import LaggedData as LaggedData
from svc.nursery._events import ReadyData as ReadyData
from svc.nursery._events import StreamClosing as StreamClosing
from svc.nursery._events import StreamLagged as StreamLagged
from svc.nursery._events import StreamReady as StreamReady
from svc.nursery._events import event_schema as event_schema
from svc.nursery._events import stream_schema as stream_schema
from svc.nursery._redact import REDACTED as REDACTED
from svc.nursery._redact import redact as redact
from svc.nursery._report import MAX_REPORT_EVENTS as MAX_REPORT_EVENTS
from svc.nursery._report import ExecutionId as ExecutionId
from svc.nursery._report import RawReport as RawReport
from svc.nursery._report import ReportAnswer as ReportAnswer
from svc.nursery._report import ReportInput as ReportInput
from svc.nursery._store import FINAL as FINAL
from svc.nursery._store import Execution as Execution
from svc.nursery._store import ExecutionStore as ExecutionStore
from svc.nursery._store import IllegalMove as IllegalMove
from svc.nursery._store import Limits as Limits
from svc.nursery._store import Subscriber as Subscriber
from svc.nursery._store import check_execution_id as check_execution_id
from svc.nursery._store import new_execution_id as new_execution_id
from svc.runtime._supervisor import Supervisor as Supervisor

__all__ = [
    "EVENT_TYPES",
    "FINAL",
    "MAX_REPORT_EVENTS",
    "PROTOCOL_VERSION",
    "REDACTED",
    "SILENCE_SECONDS",
    "STREAM_TYPES",
    "TERMINAL_TYPES",
    "ClosingData",
    "Engine",
    "Execution",
    "ExecutionEvent",
    "ExecutionId",
    "ExecutionStore",
    "ExecutionView",
    "IllegalMove",
    "LaggedData",
    "Limits",
    "RawReport",
    "ReadyData",
    "ReportAnswer",
    "ReportInput",
    "ReportResult",
    "StreamClosing",
    "StreamLagged",
    "StreamReady",
    "Subscriber",
    "Supervisor",
    "check_execution_id",
    "event_schema",
    "new_execution_id",
    "redact",
    "stream_schema",
]
