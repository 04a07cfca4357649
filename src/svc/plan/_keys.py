"""The closed key sets of the plan records (docs/layer.md), and what value fits each kind of key.

Scalars are read as their text: `text_of` is the one conversion, and `problem` says why a value does not
fit its key (None when it does, or when it is null).
"""

from __future__ import annotations

import re
from typing import Any, Literal

__all__ = [
    "ISSUE_KEYS",
    "ISSUE_REQUIRED",
    "MILESTONE_KEYS",
    "MILESTONE_REQUIRED",
    "PROJECT_KEYS",
    "PROJECT_REQUIRED",
    "KeyKind",
    "covers_of",
    "describe",
    "integer",
    "problem",
    "text_of",
]

_INT = re.compile(r"^[+-]?[0-9]+$")
_INT64 = (-(2**63), 2**63 - 1)

KeyKind = Literal["text", "int", "bool", "list", "evidence"]

PROJECT_KEYS: dict[str, KeyKind] = {
    "schema_version": "int",
    "name": "text",
    "repository": "text",
    "default_branch": "text",
}
PROJECT_REQUIRED = frozenset(PROJECT_KEYS)

MILESTONE_KEYS: dict[str, KeyKind] = {
    "id": "text",
    "title": "text",
    "slug": "text",
    "order": "int",
    "priority": "text",
    "problem": "text",
    "outcome": "text",
    "acceptance_criteria": "list",
    "validation": "list",
    "evidence_required": "list",
    "version": "text",
    "cancelled": "bool",
    "superseded_by": "text",
    "created_at": "text",
    "updated_at": "text",
    "current_state": "text",
    "desired_state": "text",
    "scope": "list",
    "non_scope": "list",
    "risks": "list",
    "depends_on": "list",
    "claims": "list",
    "evidence": "evidence",
}
MILESTONE_REQUIRED = frozenset(
    (
        "id",
        "title",
        "slug",
        "order",
        "priority",
        "problem",
        "outcome",
        "acceptance_criteria",
        "validation",
        "evidence_required",
    )
)

ISSUE_KEYS: dict[str, KeyKind] = {
    "id": "text",
    "milestone": "text",
    "title": "text",
    "slug": "text",
    "priority": "text",
    "profile": "text",
    "objective": "text",
    "scope": "list",
    "acceptance_criteria": "list",
    "validation": "list",
    "evidence_required": "list",
    "parallel_safe": "bool",
    "risk": "text",
    "owner": "text",
    "cancelled": "bool",
    "created_at": "text",
    "updated_at": "text",
    "why": "text",
    "current_state": "text",
    "desired_state": "text",
    "completion": "text",
    "non_scope": "list",
    "depends_on": "list",
    "serves": "list",
    "evidence": "evidence",
    "started_at": "text",
    "verified_at": "text",
    "completed_at": "text",
    "started_event": "text",
    "verified_event": "text",
    "completed_event": "text",
    "unsealed_stamps": "list",
}
ISSUE_REQUIRED = frozenset(
    (
        "id",
        "milestone",
        "title",
        "slug",
        "priority",
        "profile",
        "objective",
        "scope",
        "acceptance_criteria",
        "validation",
        "evidence_required",
    )
)

_KIND_WORDS: dict[KeyKind, str] = {
    "text": "text",
    "int": "an integer",
    "bool": "true or false",
    "list": "a list of text",
    "evidence": "a list of evidence entries (mappings)",
}


def text_of(value: Any) -> str | None:
    """A YAML scalar as text (`true`/`false`, numbers as written by Python, null as ""); None otherwise."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return None


def describe(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "empty"
    return f"a {type(value).__name__}"


def integer(value: Any) -> int | None:
    """An integer key's value, or None when it is not an integer within 64 bits."""
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and _INT.match(value.strip()):
        number = int(value.strip())
    else:
        return None
    return number if _INT64[0] <= number <= _INT64[1] else None


def covers_of(entry: dict[Any, Any]) -> tuple[list[str], bool]:
    """The non-empty `covers` tokens of one evidence entry, and whether every one of them was text."""
    covers = entry.get("covers")
    found = covers if isinstance(covers, list) else [covers]
    texts = [text_of(c) for c in found if c is not None]
    return [t for t in texts if t], all(t is not None for t in texts)


def _wrong(kind: KeyKind, value: Any) -> str:
    return f"should be {_KIND_WORDS[kind]}, not {describe(value)}"


def problem(kind: KeyKind, value: Any) -> str | None:
    """Why `value` does not fit `kind` (None when it fits, or is null)."""
    if value is None:
        return None
    if kind == "text":
        return None if text_of(value) is not None else _wrong(kind, value)
    if kind == "bool":
        return None if isinstance(value, bool) else _wrong(kind, value)
    if kind == "int":
        return None if integer(value) is not None else _wrong(kind, value)
    if kind == "list":
        if isinstance(value, list):
            odd = any(item is None or text_of(item) is None for item in value)
            return "has an item that is not text (left out)" if odd else None
        return None if text_of(value) is not None else _wrong(kind, value)
    if not isinstance(value, list):
        return _wrong(kind, value)
    if not all(isinstance(entry, dict) for entry in value):
        return "has an entry that is not a mapping (left out)"
    if not all(covers_of(entry)[1] for entry in value):
        return "has an entry whose 'covers' is not text"
    return None
