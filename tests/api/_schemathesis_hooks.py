"""Schemathesis hooks of `test_schemathesis.py`, loaded by `st run` through `SCHEMATHESIS_HOOKS`.

They change only what no JSON Schema can say, and never make an invalid request valid:

- `executions.demonstrate` walks `steps` steps of `delay_ms` each, so one valid call may last 2**64 × 10 s
  (cancellation, not a bound, is its guard, and a client that leaves cancels it): every generated call, of
  either mode, walks at most `DEMONSTRATE_STEPS` steps and waits at most `DEMONSTRATE_MS` in all, so the
  fuzzer's client does not time out on a call that works as specified.
- `executions.start` and `executions.report` check `input` against the schema of the capability their
  `capability` names: a body naming a capability of the registry gets that capability's first example
  input (an empty object when it has none).
- `objects.list` and `objects.verify` refuse a `kind` the repository lacks (400, as the spec says), and which
  kinds a checkout holds is no schema's to say: a generated `kind` of a positive case becomes `rule`, a kind
  svc's own layer holds.
- `executions.report` checks that every event repeats the report's id, carries the event id `<id>#<n>`,
  continues the sequence densely and moves the execution's state machine legally: a generated body is sent
  with no events (a heartbeat); malformed events still go out in the negative cases.
"""

from __future__ import annotations

from typing import Any

import schemathesis
from schemathesis import HookContext
from schemathesis.core.parameters import ParameterLocation
from schemathesis.generation.case import Case

from svc.capabilities import builtin_registry
from svc.capabilities._executions import UINT64_MAX

DEMONSTRATE_STEPS = 1000
HELD_KIND = "rule"
DEMONSTRATE_MS = 100

#: The input a run of each capability is sent with.
_INPUTS: dict[str, dict[str, Any]] = {
    cap.id: dict(cap.examples[0].input) if cap.examples else {} for cap in builtin_registry().capabilities
}


@schemathesis.hook
def map_case(context: HookContext, case: Case[Any]) -> Case[Any]:
    """Shape what the schema cannot say (see the module docstring); bodies of positive cases only."""
    operation = case.operation.definition.raw.get("operationId")
    if operation == "executions.demonstrate":
        _shorten(case)
    elif operation in ("objects.list", "objects.verify") and _positive(case, ParameterLocation.QUERY):
        if isinstance(case.query, dict) and "kind" in case.query:
            case.query = {**case.query, "kind": HELD_KIND}
    elif operation in ("executions.start", "executions.report") and _positive(case, ParameterLocation.BODY):
        body = case.body
        if isinstance(body, dict):
            body = dict(body)
            capability = body.get("capability")
            if isinstance(capability, str) and capability in _INPUTS:
                body["input"] = _INPUTS[capability]
            if operation == "executions.report":
                body["events"] = []
            case.body = body
    return case


def _positive(case: Case[Any], location: ParameterLocation) -> bool:
    meta = case.meta
    return meta is None or not meta.is_negative_at(location)


def _shorten(case: Case[Any]) -> None:
    """Fewer steps for a call that would walk long; whatever makes a call invalid, it keeps (negative cases too).

    A case generated as negative may still be a valid call (a mutation that misses), so this reads the values,
    not the case's mode: a valid `steps` stays valid when it shrinks.
    """
    query: dict[str, Any] = dict(case.query or {})
    steps, delay = _int(query.get("steps", 3)), _int(query.get("delay_ms", 0))
    if steps is None or delay is None or not 0 <= steps <= UINT64_MAX or delay < 0:
        return
    short = min(steps, DEMONSTRATE_STEPS, DEMONSTRATE_MS // delay if delay else steps)
    if short != steps:
        query["steps"] = str(short) if isinstance(query.get("steps"), str) else short
        case.query = query


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
