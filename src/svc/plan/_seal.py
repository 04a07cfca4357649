"""Lifecycle stamps and their seals (docs/layer.md): which move writes which field, and what proves a stamp.

A seal is ``sha256:`` + the hex SHA-256 of four LF-terminated lines: the seal schema, the ledger event, the
issue id and the stamp text. It lives in the tracked record beside the stamp, because the ledger is local to
one checkout; a seal copied from another issue or left beside an edited stamp proves nothing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "LEGACY_CUTOFF",
    "MOVES",
    "SEAL_SCHEMA",
    "Move",
    "proven",
    "seal",
]

#: The first line of every sealed text (the reference tool's own name is replaced by `svc`).
SEAL_SCHEMA = "svc.plan-event/v1"
#: Stamps strictly below this text may be excused by `unsealed_stamps` (legacy records).
LEGACY_CUTOFF = "2026-10-01T00:00:00Z"


@dataclass(frozen=True, slots=True)
class Move:
    """One lifecycle move: the stamp it writes, the seal field and the ledger event."""

    transition: Literal["start", "verify", "done"]
    field: Literal["started_at", "verified_at", "completed_at"]
    seal_field: Literal["started_event", "verified_event", "completed_event"]
    event: Literal["plan_start", "plan_verify", "plan_done"]


#: The three moves, in stamp order (start, verify, done).
MOVES: dict[str, Move] = {
    "start": Move("start", "started_at", "started_event", "plan_start"),
    "verify": Move("verify", "verified_at", "verified_event", "plan_verify"),
    "done": Move("done", "completed_at", "completed_event", "plan_done"),
}


def seal(event: str, issue: str, stamp: str) -> str:
    """The seal of `stamp` for `event` on `issue`: ``sha256:<64 lowercase hex>``."""
    text = f"{SEAL_SCHEMA}\n{event}\n{issue}\n{stamp}\n"
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def proven(move: Move, issue: str, stamp: str, sealed_by: str, unsealed: frozenset[str]) -> bool:
    """Whether a stamp is proven: empty, sealed by its seal field, or excused as a legacy stamp.

    The legacy excuse holds only for a stamp that sorts (as text) below `LEGACY_CUTOFF` and whose exact
    ``"<field> <stamp>"`` string is listed in the record's `unsealed_stamps`.
    """
    if not stamp:
        return True
    if sealed_by and sealed_by == seal(move.event, issue, stamp):
        return True
    return stamp < LEGACY_CUTOFF and f"{move.field} {stamp}" in unsealed
