"""The seal formula (docs/layer.md), checked against an independent digest and against a real layer's seals."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from svc.layer import load_yaml
from svc.plan import LEGACY_CUTOFF, MOVES, SEAL_SCHEMA, proven, seal
from svc.plan import _seal as seal_module


def test_the_seal_is_the_digest_of_four_lf_terminated_lines() -> None:
    text = b"svc.plan-event/v1\nplan_start\nI0001\n2026-09-11T12:00:00Z\n"
    assert SEAL_SCHEMA == "svc.plan-event/v1"
    assert seal("plan_start", "I0001", "2026-09-11T12:00:00Z") == "sha256:" + hashlib.sha256(text).hexdigest()
    assert (
        seal("plan_start", "I0001", "2026-09-11T12:00:00Z")
        == "sha256:11fc5b2cfabd4c662ec4e711d6f64bd4e9e6940093f8418df9336d67be28266f"
    )


def test_what_proves_a_stamp() -> None:
    start = MOVES["start"]
    stamp = "2026-11-01T10:00:00Z"
    good = seal("plan_start", "I1", stamp)
    assert proven(start, "I1", "", "", frozenset())
    assert proven(start, "I1", stamp, good, frozenset())
    assert not proven(start, "I2", stamp, good, frozenset()), "a seal copied from another issue proves nothing"
    assert not proven(start, "I1", "2026-11-01T10:00:01Z", good, frozenset()), "nor one beside an edited stamp"
    assert not proven(MOVES["verify"], "I1", stamp, good, frozenset()), "nor one of another event"
    legacy = "2026-09-30T23:59:59Z"
    assert proven(start, "I1", legacy, "", frozenset({f"started_at {legacy}"}))
    assert not proven(start, "I1", legacy, "", frozenset({f"verified_at {legacy}"}))
    assert not proven(start, "I1", legacy, "", frozenset({f"started_at  {legacy}"}))
    assert not proven(start, "I1", LEGACY_CUTOFF, "", frozenset({f"started_at {LEGACY_CUTOFF}"})), (
        "the cut-off needs its seal"
    )


def test_the_formula_proves_the_reference_layers_own_seals(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference tool seals with its own product name in the first line; with that name, every one of its
    sealed stamps is proven by this formula, so the formula itself is the reference's."""
    monkeypatch.setattr(seal_module, "SEAL_SCHEMA", "majordomus.plan-event/v1")
    issues = corpus / ".ai" / "repo" / "project" / "issues"
    checked = 0
    for path in sorted(issues.glob("*.yaml")):
        text = path.read_bytes()
        if b"_event:" not in text:
            continue
        record = load_yaml(text)
        for move in MOVES.values():
            stamp = record.get(move.field)
            if stamp and record.get(move.seal_field):
                assert seal_module.seal(move.event, record["id"], stamp) == record[move.seal_field], path.name
                checked += 1
    assert checked == 11
