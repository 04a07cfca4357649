"""The sans-I/O half of a move: whether it is allowed, and the record's new bytes (docs/plan.md).

`check_move` applies the refusal rules in order and names what is in the way. `stamp_record` edits the
record text in place (the stamp, its seal, then `updated_at`), keeping every other byte, and proves the
edit by parsing the result: every other key must read exactly as before and the three fields as written.
`reseal_record` does the same for one seal field alone (`svc plan reseal`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from svc._errors import Internal, NotFound, Refused
from svc.layer import YamlError, load_yaml
from svc.plan._load import IssueRecord
from svc.plan._model import Plan, PlanIssue
from svc.plan._seal import MOVES, Move, seal

__all__ = ["check_move", "reseal_record", "set_fields", "stamp_record"]

_PLAIN = re.compile(r"^[A-Za-z0-9:._+-]+$")


def check_move(plan: Plan, records: Sequence[IssueRecord], issue_id: str, transition: str) -> tuple[PlanIssue, Move]:
    """The issue and the move, when the move is allowed now.

    Raises:
        NotFound: no issue has this id.
        Refused: the first rule that turns the move down, naming what is in the way.
    """
    issue = next((i for i in plan.issues if i.id == issue_id), None)
    record = next((r for r in records if r.id == issue_id), None)
    if issue is None or record is None:
        raise NotFound(f"no issue '{issue_id}'")
    move = MOVES[transition]
    status = issue.status
    if transition == "start":
        if status != "READY":
            waiting = f" (waiting on {' '.join(issue.blocked_by)})" if issue.blocked_by else ""
            raise Refused(f"{issue_id} is {status}, not READY{waiting}")
    elif transition == "verify":
        if status not in ("ACTIVE", "VERIFY"):
            raise Refused(f"{issue_id} is {status}; only an ACTIVE issue can move to VERIFY")
    else:
        if issue.blocked_by:
            raise Refused(f"{issue_id} cannot be DONE while {' '.join(issue.blocked_by)} is not DONE")
        if status not in ("ACTIVE", "VERIFY"):
            raise Refused(f"{issue_id} is {status}; only an ACTIVE or VERIFY issue can move to DONE")
        need = record.evidence_required
        have = sum(1 for token in need if token in record.covers)
        if need and have == 0:
            raise Refused(
                f"{issue_id} has evidence for 0 of {len(need)} requirement(s) "
                "(record evidence under `evidence:` in the issue file)"
            )
    return issue, move


def _lines(data: bytes) -> list[bytes]:
    parts = data.split(b"\n")
    lines = [part + b"\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def set_fields(data: bytes, fields: Sequence[tuple[str, str]]) -> bytes:
    """Set top-level keys of a YAML record in place, in order.

    A line starting with ``<key>:`` at column 0 is replaced where it stands (every such line); otherwise the
    line is inserted before the first line starting with ``evidence:``, else appended. Every other byte is
    kept; new lines follow the file's line-ending style and the file ends with a newline. Values are written
    plain, so they must be plain-safe (timestamps, ``sha256:<hex>``).

    Raises:
        ValueError: a value that cannot be written plain.
    """
    lines = _lines(data)
    eol = b"\r\n" if lines and lines[0].endswith(b"\r\n") else b"\n"
    if lines and not lines[-1].endswith(b"\n"):
        lines[-1] += eol
    for key, value in fields:
        if not _PLAIN.match(value) or not _PLAIN.match(key):
            raise ValueError(f"{key}: {value!r} cannot be written as a plain scalar")
        prefix = key.encode() + b":"
        text = prefix + b" " + value.encode()
        hits = [n for n, line in enumerate(lines) if line.startswith(prefix)]
        for n in hits:
            lines[n] = text + (b"\r\n" if lines[n].endswith(b"\r\n") else b"\n")
        if hits:
            continue
        anchor = next((n for n, line in enumerate(lines) if line.startswith(b"evidence:")), None)
        if anchor is None:
            lines.append(text + eol)
        else:
            lines.insert(anchor, text + eol)
    return b"".join(lines)


def _mapping(data: bytes) -> dict[Any, Any] | None:
    try:
        value = load_yaml(data)
    except (YamlError, ValueError, TypeError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _edited(data: bytes, issue_id: str, fields: Sequence[tuple[str, str]], doing: str, change: str) -> bytes:
    """`data` with `fields` set, proved by parsing: every other key reads as before and these as written.

    Raises:
        Internal: the edited text would not read back as exactly this change (nothing is written).
    """
    try:
        edited = set_fields(data, fields)
    except ValueError as exc:
        raise Internal(f"cannot {doing} {issue_id}: {exc}") from exc
    before, after = _mapping(data), _mapping(edited)
    keys = {name for name, _ in fields}
    expected = None if before is None else {k: v for k, v in before.items() if k not in keys}
    if (
        after is None
        or expected != {k: v for k, v in after.items() if k not in keys}
        or any(after.get(name) != value for name, value in fields)
    ):
        raise Internal(
            f"cannot {doing} {issue_id}: its record does not read back as {change} alone once edited "
            "(is a stamp field written in an unusual YAML form?); nothing was written"
        )
    return edited


def stamp_record(data: bytes, issue_id: str, move: Move, at: str) -> bytes:
    """The record's bytes with `move`'s stamp, its seal and `updated_at` set to `at`.

    Raises:
        Internal: the edited text would not read back as exactly this change (nothing is written).
    """
    fields = ((move.field, at), (move.seal_field, seal(move.event, issue_id, at)), ("updated_at", at))
    return _edited(data, issue_id, fields, "stamp", "the stamp")


def reseal_record(data: bytes, issue_id: str, move: Move, stamp: str) -> bytes:
    """The record's bytes with `move`'s seal field replaced by svc's seal of `stamp` (nothing else changes).

    Raises:
        Internal: the edited text would not read back as exactly this change (nothing is written).
    """
    return _edited(data, issue_id, ((move.seal_field, seal(move.event, issue_id, stamp)),), "re-seal", "the seal")
