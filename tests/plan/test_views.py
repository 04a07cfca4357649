"""The read answers: next (with its widening), roadmap now/next, status, issues, waves, record, validation."""

from __future__ import annotations

import pytest

from svc import InvalidInput, NotFound
from svc.plan import (
    NONE_UNCLAIMED,
    PlanIssue,
    PlanIssueRecord,
    PlanMilestoneRecord,
    PlanSkipped,
    derive,
    issue_list,
    next_issue,
    next_unclaimed,
    record_view,
    roadmap,
    status_report,
    validation,
    wave_report,
)
from svc.plan._views import NO_ISSUE, NONE_READY
from tests.plan._records import active, done, issue, milestone, plan_of, records_of


def test_next_is_the_lowest_wave_then_priority_then_id_of_the_active_milestone() -> None:
    plan = plan_of(
        [milestone("M1", order=1), milestone("M2", order=2)],
        [
            issue("N0", milestone="M1", priority="p0", **done("N0")),
            issue("N1", milestone="M1", priority="p0", depends_on=["N0"]),
            issue("N2", milestone="M1", priority="p2"),
            issue("N3", milestone="M1", priority="p1"),
            issue("N4", milestone="M1", priority="p1"),
            issue("N5", milestone="M2", priority="p0"),
        ],
    )
    answer = next_issue(plan)
    assert (answer.active_milestone, answer.issue and answer.issue.id, answer.reason) == ("M1", "N3", None)
    assert next_issue(plan, "M2").issue.id == "N5"  # type: ignore[union-attr]


def test_next_widens_to_the_whole_plan_even_with_a_filter() -> None:
    plan = plan_of(
        [milestone("M1", order=1), milestone("M2", order=2), milestone("M3", order=3)],
        [
            issue("W1", milestone="M1", **active("W1")),
            issue("W2", milestone="M1", depends_on=["W1"]),
            issue("W3", milestone="M2", priority="p2"),
            issue("W4", milestone="M3", **active("W4")),
        ],
    )
    assert plan.project.active_milestone == "M1"
    assert next_issue(plan).issue.id == "W3"  # type: ignore[union-attr]
    assert next_issue(plan, "M3").issue.id == "W3"  # type: ignore[union-attr]
    with pytest.raises(NotFound, match="no milestone 'M9' in the plan"):
        next_issue(plan, "M9")


def test_next_says_why_there_is_none() -> None:
    waiting = plan_of([milestone("M1")], [issue("X1", **active("X1")), issue("X2", depends_on=["X1"])])
    assert next_issue(waiting).issue is None
    assert next_issue(waiting).reason == NONE_READY
    empty = derive(records_of([], []))
    assert (next_issue(empty).reason, next_issue(empty).active_milestone) == (NO_ISSUE, "")
    orphan = plan_of([], [issue("O1", milestone="gone")])
    assert next_issue(orphan).issue.id == "O1", "an empty active milestone means the whole plan"  # type: ignore[union-attr]


def test_next_for_a_session_passes_over_what_is_claimed_and_widens_past_it() -> None:
    plan = plan_of(
        [milestone("M1", order=1), milestone("M2", order=2)],
        [
            issue("C1", milestone="M1", priority="p0"),
            issue("C2", milestone="M1", priority="p1"),
            issue("C3", milestone="M2", priority="p0"),
            issue("C4", milestone="M2", priority="p1"),
        ],
    )
    claimed = {"C1", "C2", "C3"}
    asked: list[str] = []

    def passing(issue: PlanIssue) -> PlanSkipped | None:
        asked.append(issue.id)
        if issue.id not in claimed:
            return None
        return PlanSkipped(issue=issue.id, claim=f"s/c-{issue.id}", session="s/other", runtime="r")

    issue_, skipped = next_unclaimed(plan, None, passing)
    assert issue_ is not None
    assert (issue_.id, [s.issue for s in skipped]) == ("C4", ["C1", "C2", "C3"])
    assert asked == ["C1", "C2", "C3", "C4"], "each issue is judged once, the widening included"
    answer = next_issue(plan, session="s/me", passing=passing)
    assert (answer.issue and answer.issue.id, answer.session) == ("C4", "s/me")
    assert [s.claim for s in answer.skipped] == ["s/c-C1", "s/c-C2", "s/c-C3"]
    claimed.add("C4")
    none = next_issue(plan, session="s/me", passing=passing, notes=["first"])
    assert (none.issue, none.reason, none.notes) == (None, NONE_UNCLAIMED, ["first"])
    assert [s.issue for s in none.skipped] == ["C1", "C2", "C3", "C4"]
    assert next_issue(plan).issue.id == "C1", "without a session nothing is passed over"  # type: ignore[union-attr]
    with pytest.raises(NotFound, match="no milestone 'M9'"):
        next_unclaimed(plan, "M9", passing)


def test_roadmap_orders_by_rank_order_id_and_names_now_and_next() -> None:
    plan = plan_of(
        [
            milestone("Ma", order=5),
            milestone("Mb", order=1),
            milestone("Mc", depends_on=["Mb"]),
            milestone("Md", order=1, evidence_required=["x"], evidence=[{"covers": "x"}]),
        ],
        [issue("I1", milestone="Ma"), issue("I2", milestone="Mb"), issue("I3", milestone="Mc")],
    )
    answer = roadmap(plan)
    assert [m.id for m in answer.milestones] == ["Mb", "Md", "Ma", "Mc"]
    assert (answer.now, answer.next) == ("Mb", "Ma"), "Md is DONE"


def test_roadmap_with_a_blocked_first_milestone_has_no_now() -> None:
    plan = plan_of(
        [
            milestone("Ma", cancelled=True),
            milestone("Mb", depends_on=["Ma"]),
            milestone("Mc", order=9, depends_on=["Ma"]),
        ],
        [issue("I1", milestone="Mb"), issue("I2", milestone="Mc")],
    )
    answer = roadmap(plan)
    assert (answer.now, answer.next) == (None, "Mb")
    assert (roadmap(derive(records_of([], []))).now, roadmap(derive(records_of([], []))).next) == (None, None)


def test_status_counts_the_plan_or_one_milestone() -> None:
    plan = plan_of(
        [milestone("M1"), milestone("M2")],
        [
            issue("I1", milestone="M1", **done("I1")),
            issue("I2", milestone="M1"),
            issue("I3", milestone="M2", cancelled=True),
        ],
    )
    whole = status_report(plan)
    assert [m.id for m in whole.milestones] == ["M1", "M2"]
    assert (whole.counts.total, whole.counts.required, whole.counts.by_status["DONE"]) == (3, 2, 1)
    assert whole.next_ready is not None
    assert whole.next_ready.id == "I2"
    one = status_report(plan, "M2")
    assert ([m.id for m in one.milestones], one.counts.total, one.counts.required) == (["M2"], 1, 0)
    assert one.next_ready is not None
    assert one.next_ready.id == "I2", "next_ready widens like plan.next"


def test_issue_filters() -> None:
    plan = plan_of(
        [milestone("M1"), milestone("M2")],
        [issue("I1", milestone="M1"), issue("I2", milestone="M1", depends_on=["I1"]), issue("I3", milestone="M2")],
    )
    assert [i.id for i in issue_list(plan).issues] == ["I1", "I2", "I3"]
    assert [i.id for i in issue_list(plan, status="READY").issues] == ["I1", "I3"]
    assert [i.id for i in issue_list(plan, status="BLOCKED").issues] == ["I2"]
    assert [i.id for i in issue_list(plan, milestone="M1", wave=0).issues] == ["I1"]
    assert issue_list(plan, wave=1).total == 1
    with pytest.raises(InvalidInput, match="status 'PAUSED' is not an issue status"):
        issue_list(plan, status="PAUSED")
    with pytest.raises(NotFound):
        issue_list(plan, milestone="M9")


def test_waves_of_one_milestone_keep_global_numbers() -> None:
    plan = plan_of(
        [milestone("M1"), milestone("M2")],
        [
            issue("I1", milestone="M1", scope=["docs"]),
            issue("I2", milestone="M2", depends_on=["I1"], scope=["a"]),
            issue("I3", milestone="M2", scope=["docs"]),
            issue("I4", milestone="M2", scope=["docs/x"]),
        ],
    )
    whole = wave_report(plan)
    assert [(w.wave, [i.id for i in w.issues]) for w in whole.waves] == [(0, ["I1", "I3", "I4"]), (1, ["I2"])]
    assert [(f.subject, f.message) for f in whole.serialised_by_scope] == [
        ("I1", "shares docs with I3; they may not run concurrently"),
        ("I1", "shares docs with I4; they may not run concurrently"),
        ("I3", "shares docs with I4; they may not run concurrently"),
    ]
    m1 = wave_report(plan, "M1")
    assert [(w.wave, [i.id for i in w.issues]) for w in m1.waves] == [(0, ["I1"])]
    assert [f.subject for f in m1.serialised_by_scope] == ["I1", "I1"]
    m2 = wave_report(plan, "M2")
    assert [(w.wave, [i.id for i in w.issues]) for w in m2.waves] == [(0, ["I3", "I4"]), (1, ["I2"])]


def test_record_of_a_milestone_and_of_an_issue() -> None:
    records = records_of(
        [milestone("M1", order=3, version=0.6)],
        [
            issue("I1", milestone="M1"),
            issue("I2", milestone="M1", depends_on=["I9", "I1", "I1", "I2"], cancelled=True, created_at="2026-09-04"),
        ],
    )
    plan = derive(records)
    m = record_view(plan, records, "M1")
    assert isinstance(m, PlanMilestoneRecord)
    assert (m.path, [i.id for i in m.issues], m.derived.order) == (
        ".ai/repo/project/milestones/M1.yaml",
        ["I1", "I2"],
        3,
    )
    assert (m.record["order"], m.record["version"], m.record["acceptance_criteria"]) == ("3", "0.6", ["it works"])
    i = record_view(plan, records, "I2")
    assert isinstance(i, PlanIssueRecord)
    assert ([d.id for d in i.issues], i.record["cancelled"], i.record["created_at"]) == (["I1"], "true", "2026-09-04")
    assert [f.code for f in i.findings] == ["unknown_dependency", "duplicate_dependency", "self_dependency"]
    with pytest.raises(NotFound, match=r"no milestone or issue 'I7' in the plan$"):
        record_view(plan, records, "I7")


def test_record_of_a_left_out_file_points_at_its_finding() -> None:
    records = records_of([milestone("M1")], [], raw={"issues/I1.yaml": b"title: a: b\n"})
    with pytest.raises(NotFound, match="its record was left out"):
        record_view(derive(records), records, "I1")


def test_validation_tallies() -> None:
    plan = plan_of(
        [milestone("M1"), milestone("M2")], [issue("I1", depends_on=["I0"]), issue("I2", evidence_required=[])]
    )
    answer = validation(plan)
    assert (answer.valid, answer.milestones, answer.issues, answer.failures, answer.warnings) == (False, 2, 2, 1, 2)
    assert [f.code for f in answer.findings] == ["unknown_dependency", "no_evidence_required", "empty_milestone"]
    assert validation(plan_of([milestone("M1")], [issue("I1")])).valid
