"""Why a stamp does not count: the proof of each lifecycle stamp of an issue record, explained.

A stamp is proven by its seal under svc's domain, or excused as a legacy stamp (`_seal.proven`). A stamp that
is neither moves no status. This module says which of four reasons holds, so `plan validate` and `plan next`
can name the remedy: a stamp sealed under the domain of another tool that writes this record format
(`svc plan reseal --domain DOMAIN`), a seal that seals something else, an excuse past the cut-off, or no seal
at all (`svc plan start|verify|done` writes a sealed stamp).
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from svc.plan._load import IssueRecord
from svc.plan._model import UnprovenReason
from svc.plan._seal import LEGACY_CUTOFF, MOVES, SEAL_SCHEMA, Move, sealing_domain

__all__ = ["UnprovenStamp", "unproven_stamps"]


class UnprovenStamp(msgspec.Struct, frozen=True):
    """One stamp of a record that proves nothing, and why; `domain` is the other tool's seal domain."""

    move: Move
    stamp: str
    reason: UnprovenReason
    domain: str | None = None

    def why(self) -> str:
        """Why the stamp does not count, and what proves it, in one clause."""
        move = self.move
        if self.reason == "foreign_domain":
            return (
                f"{move.seal_field} seals it under the domain {self.domain}, not svc's {SEAL_SCHEMA}; "
                f"`svc plan reseal --domain {self.domain}` re-seals it"
            )
        if self.reason == "wrong_seal":
            return f"{move.seal_field} does not seal it (a seal copied from elsewhere, or the stamp was edited)"
        if self.reason == "late_excuse":
            return f"unsealed_stamps lists it, but only stamps before {LEGACY_CUTOFF} are excused"
        return f"it has no {move.seal_field} seal and unsealed_stamps does not list '{move.field} {self.stamp}'"


def unproven_stamps(record: IssueRecord, domains: Sequence[str] = ()) -> list[UnprovenStamp]:
    """The stamps of `record` that are written but not proven, in stamp order (start, verify, done).

    `domains` are the seal domains of other tools svc recognises (`known_domains()`); a seal that proves its
    stamp under one of them reads as `foreign_domain`.
    """
    out: list[UnprovenStamp] = []
    stamps = (record.started_at, record.verified_at, record.completed_at)
    seals = (record.started_event, record.verified_event, record.completed_event)
    for move, stamp, sealed_by, proof in zip(MOVES.values(), stamps, seals, record.proven, strict=True):
        if not stamp or proof:
            continue
        if sealed_by:
            domain = sealing_domain(move, record.id, stamp, sealed_by, domains)
            reason: UnprovenReason = "wrong_seal" if domain is None else "foreign_domain"
            out.append(UnprovenStamp(move=move, stamp=stamp, reason=reason, domain=domain))
        elif f"{move.field} {stamp}" in record.unsealed:
            out.append(UnprovenStamp(move=move, stamp=stamp, reason="late_excuse"))
        else:
            out.append(UnprovenStamp(move=move, stamp=stamp, reason="unsealed"))
    return out
