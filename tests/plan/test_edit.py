"""The sans-I/O half of a move: the refusal rules and the in-place edit of the record text."""

from __future__ import annotations

import pytest

from svc import Internal, NotFound, Refused
from svc.plan import MOVES, check_move, derive, seal, set_fields, stamp_record
from tests.plan._records import PROOF, active, done, issue, milestone, records_of, sealed

RECORD = b"""# An issue record, written by hand.
id: I0001
milestone: M1   # the milestone it serves
title: "Quoted: title"
scope:
  - src/a
updated_at: 2026-09-04
# evidence follows
evidence:
  - covers: proof
    type: test
"""


def test_an_existing_key_is_replaced_where_it_stands() -> None:
    out = set_fields(RECORD, [("updated_at", "2026-11-21T10:00:00Z")])
    assert out == RECORD.replace(b"updated_at: 2026-09-04", b"updated_at: 2026-11-21T10:00:00Z")


def test_a_new_key_goes_before_evidence_else_at_the_end() -> None:
    out = set_fields(RECORD, [("started_at", "2026-11-21T10:00:00Z"), ("started_event", "sha256:ab")])
    assert out == RECORD.replace(
        b"evidence:\n", b"started_at: 2026-11-21T10:00:00Z\nstarted_event: sha256:ab\nevidence:\n"
    )
    plain = b"id: I1\ntitle: t"
    assert set_fields(plain, [("started_at", "x1")]) == b"id: I1\ntitle: t\nstarted_at: x1\n", "ends with a newline"


def test_every_column_zero_line_of_the_key_is_replaced_and_indented_ones_are_not() -> None:
    text = b"a: 1\nnested:\n  updated_at: keep\nupdated_at: old\nupdated_at: older\nupdated_at_x: keep\n"
    assert set_fields(text, [("updated_at", "new")]) == (
        b"a: 1\nnested:\n  updated_at: keep\nupdated_at: new\nupdated_at: new\nupdated_at_x: keep\n"
    )


def test_crlf_files_keep_their_line_endings() -> None:
    text = b"id: I1\r\nupdated_at: old\r\nevidence: []\r\n"
    assert set_fields(text, [("updated_at", "new"), ("started_at", "t")]) == (
        b"id: I1\r\nupdated_at: new\r\nstarted_at: t\r\nevidence: []\r\n"
    )


def test_values_must_be_plain() -> None:
    with pytest.raises(ValueError, match="plain scalar"):
        set_fields(b"a: 1\n", [("a", "x: y")])


def test_stamp_record_writes_the_stamp_its_seal_and_updated_at() -> None:
    at = "2026-11-21T10:00:00Z"
    out = stamp_record(RECORD, "I0001", MOVES["start"], at)
    assert out == RECORD.replace(b"updated_at: 2026-09-04", f"updated_at: {at}".encode()).replace(
        b"evidence:\n",
        f"started_at: {at}\nstarted_event: {seal('plan_start', 'I0001', at)}\nevidence:\n".encode(),
    )


def test_stamp_record_refuses_an_edit_that_would_not_read_back() -> None:
    flow = b"{id: I1, started_at: x}\n"
    with pytest.raises(Internal, match="nothing was written"):
        stamp_record(flow, "I1", MOVES["start"], "2026-11-21T10:00:00Z")


M = [milestone("M1"), milestone("M2", depends_on=["M1"])]


def _check(issues: list[dict[str, object]], issue_id: str, move: str) -> str:
    records = records_of(M, issues)
    with pytest.raises(Refused) as caught:
        check_move(derive(records), records.issues, issue_id, move)
    return caught.value.message


def test_start_needs_a_ready_issue_and_names_what_it_waits_on() -> None:
    issues = [issue("I0001"), issue("I0002", depends_on=["I0001"], milestone="M2"), issue("I0003", **active("I0003"))]
    assert _check(issues, "I0002", "start") == "I0002 is BLOCKED, not READY (waiting on I0001 milestone:M2)"
    assert _check(issues, "I0003", "start") == "I0003 is ACTIVE, not READY"
    records = records_of(M, issues)
    found, move = check_move(derive(records), records.issues, "I0001", "start")
    assert (found.id, move.field) == ("I0001", "started_at")


def test_verify_needs_an_active_or_verify_issue() -> None:
    issues = [issue("I0001"), issue("I0002", **done("I0002"))]
    assert _check(issues, "I0001", "verify") == "I0001 is READY; only an ACTIVE issue can move to VERIFY"
    assert _check(issues, "I0002", "verify") == "I0002 is DONE; only an ACTIVE issue can move to VERIFY"


def test_done_checks_dependencies_then_status_then_evidence() -> None:
    issues = [
        issue("I0001", **active("I0001")),
        issue("I0002", depends_on=["I0001"], **active("I0002")),
        issue("I0003"),
        issue("I0004", evidence_required=["a", "b"], **active("I0004")),
        issue("I0005", cancelled=True, **active("I0005")),
    ]
    assert _check(issues, "I0002", "done") == "I0002 cannot be DONE while I0001 is not DONE"
    assert _check(issues, "I0003", "done") == "I0003 is READY; only an ACTIVE or VERIFY issue can move to DONE"
    assert _check(issues, "I0004", "done") == (
        "I0004 has evidence for 0 of 2 requirement(s) (record evidence under `evidence:` in the issue file)"
    )
    assert _check(issues, "I0005", "done") == "I0005 is CANCELLED; only an ACTIVE or VERIFY issue can move to DONE"
    partial = [issue("I0004", evidence_required=["a", "b"], evidence=[{"covers": "a"}], **active("I0004"))]
    records = records_of(M, partial)
    assert check_move(derive(records), records.issues, "I0004", "done")[1].field == "completed_at"


def test_an_unknown_issue_is_not_found() -> None:
    records = records_of(M, [issue("I0001")])
    with pytest.raises(NotFound, match="no issue 'I9'"):
        check_move(derive(records), records.issues, "I9", "start")


def test_a_hand_written_stamp_may_be_started_over() -> None:
    records = records_of(M, [issue("I0001", started_at="2026-11-01T00:00:00Z", **PROOF)])
    assert check_move(derive(records), records.issues, "I0001", "start")[0].status == "READY"


def test_sealed_helper_matches_the_seal() -> None:
    assert sealed("I1", ("started_at", "t"))["started_event"] == seal("plan_start", "I1", "t")
