"""Golden tests of the derivation (docs/plan.md-§5) on hand-built records: statuses, gates, graphs, findings."""

from __future__ import annotations

from svc.plan import PlanEdge, PlanFinding, derive, overlap, priority_rank, reconcile
from tests.plan._records import PROOF, active, by_id, codes, done, issue, milestone, plan_of, records_of, sealed

M1 = milestone("M1")


def test_every_issue_status_rule() -> None:
    plan = plan_of(
        [M1],
        [
            issue("I01", cancelled=True, acceptance_criteria=[], validation=[], evidence_required=[]),
            issue("I02", **done("I02")),
            issue(
                "I03", **sealed("I03", ("started_at", "2026-11-01T10:00:00Z"), ("verified_at", "2026-11-01T11:00:00Z"))
            ),
            issue(
                "I04", **sealed("I04", ("started_at", "2026-11-01T10:00:00Z"), ("completed_at", "2026-11-01T12:00:00Z"))
            ),
            issue("I05", **active("I05")),
            issue("I06", depends_on=["I07"]),
            issue("I07"),
        ],
    )
    found = by_id(plan)
    assert [found[f"I0{n}"].status for n in range(1, 8)] == [
        "CANCELLED",
        "DONE",
        "VERIFY",
        "VERIFY",
        "ACTIVE",
        "BLOCKED",
        "READY",
    ]
    assert plan.findings == [
        PlanFinding(
            level="WARN",
            code="evidence_missing",
            subject="I04",
            message="completed_at is set but evidence is missing for proof; status stays VERIFY",
        ),
    ]
    assert found["I06"].blocked_by == ["I07"]
    assert found["I02"].evidence_have == 1
    assert found["I02"].evidence_need == 1
    assert found["M1"].status == "ACTIVE"
    assert found["M1"].counts.total == 7
    assert found["M1"].counts.required == 6
    assert found["M1"].counts.by_status == {
        "READY": 1,
        "BLOCKED": 1,
        "ACTIVE": 1,
        "VERIFY": 2,
        "DONE": 1,
        "CANCELLED": 1,
    }


def test_a_cancelled_dependency_blocks_for_good_and_a_cancelled_issue_is_never_done() -> None:
    plan = plan_of([M1], [issue("I1", cancelled=True, **done("I1")), issue("I2", depends_on=["I1"])])
    found = by_id(plan)
    assert (found["I1"].status, found["I2"].status, found["I2"].blocked_by) == ("CANCELLED", "BLOCKED", ["I1"])


def test_unproven_stamps_move_no_status_and_fail() -> None:
    legacy = "2026-09-04T02:54:00Z"
    cutoff = "2026-10-01T00:00:00Z"
    plan = plan_of(
        [M1],
        [
            issue("I1", started_at="2026-11-01T10:00:00Z"),
            issue(
                "I2",
                started_at="2026-11-01T10:00:00Z",
                started_event=sealed("I9", ("started_at", "2026-11-01T10:00:00Z"))["started_event"],
            ),
            issue("I3", started_at=legacy, unsealed_stamps=[f"started_at {legacy}"]),
            issue("I4", started_at=cutoff, unsealed_stamps=[f"started_at {cutoff}"]),
            issue("I5", started_at=legacy, unsealed_stamps=[f"verified_at {legacy}"]),
            issue(
                "I6",
                started_at="2026-11-01T10:00:01Z",
                started_event=sealed("I6", ("started_at", "2026-11-01T10:00:00Z"))["started_event"],
            ),
            issue("I7", started_at="2026-11-01T09:00:00Z", **sealed("I7", ("verified_at", "2026-11-01T11:00:00Z"))),
        ],
    )
    found = by_id(plan)
    assert [found[f"I{n}"].status for n in range(1, 8)] == [
        "READY",
        "READY",
        "ACTIVE",
        "READY",
        "READY",
        "READY",
        "VERIFY",
    ]
    assert found["I1"].started_at == "2026-11-01T10:00:00Z", "an unproven stamp is shown as written"
    assert codes(plan) == [("FAIL", "stamp_without_event", s) for s in ("I1", "I2", "I4", "I5", "I6", "I7")]
    assert plan.findings[0].message == (
        "started_at 2026-11-01T10:00:00Z has no plan_start event: started_event is absent or does not seal it, "
        "and only `svc plan start` writes the stamp"
    )


def test_a_ledger_gap_follows_the_stamp_findings_of_its_issue() -> None:
    records = records_of(
        [M1],
        [
            issue(
                "I1",
                verified_at="2026-11-01T11:00:00Z",
                **sealed("I1", ("started_at", "2026-11-01T10:00:00Z"), ("completed_at", "2026-11-01T12:00:00Z")),
                evidence_required=["a"],
            ),
            issue("I2", depends_on=["I9"]),
        ],
    )
    unlogged = {("I1", "plan_done", "2026-11-01T12:00:00Z"), ("I2", "plan_start", "2026-11-01T10:00:00Z")}
    plan = derive(records, unlogged=unlogged)
    assert codes(plan) == [
        ("FAIL", "stamp_without_event", "I1"),
        ("WARN", "ledger_gap", "I1"),
        ("WARN", "evidence_missing", "I1"),
        ("FAIL", "unknown_dependency", "I2"),
    ], "a gap names a stamp the record holds; I2 has none"
    assert plan.findings[1].message == (
        "completed_at 2026-11-01T12:00:00Z is sealed but the ledger has no plan_done event for it (the move was "
        "interrupted); the next transition or `svc plan repair-ledger` appends it"
    )
    assert derive(records).findings == [f for f in plan.findings if f.code != "ledger_gap"]


def test_all_three_unproven_stamps_are_reported_in_move_order() -> None:
    plan = plan_of(
        [M1],
        [
            issue(
                "I1",
                started_at="2026-11-01T10:00:00Z",
                verified_at="2026-11-01T11:00:00Z",
                completed_at="2026-11-01T12:00:00Z",
                **PROOF,
            )
        ],
    )
    assert [f.message.split(" ")[0] for f in plan.findings] == ["started_at", "verified_at", "completed_at"]
    assert "no plan_done event: completed_event" in plan.findings[2].message
    assert "`svc plan done`" in plan.findings[2].message
    assert by_id(plan)["I1"].status == "READY"


def test_dependency_edges_and_their_findings() -> None:
    plan = plan_of(
        [M1], [issue("A1", depends_on=["A1", "X9", "A2", "A2", "A3"]), issue("A2"), issue("A3", **done("A3"))]
    )
    assert plan.findings == [
        PlanFinding(level="FAIL", code="self_dependency", subject="A1", message="depends on itself"),
        PlanFinding(
            level="FAIL", code="unknown_dependency", subject="A1", message="depends on X9, which is not an issue"
        ),
        PlanFinding(level="WARN", code="duplicate_dependency", subject="A1", message="names A2 more than once"),
    ]
    found = by_id(plan)
    assert found["A1"].depends_on == ["A1", "X9", "A2", "A2", "A3"], "an issue's depends_on is as declared"
    assert found["A1"].blocked_by == ["A2", "A2"], "a duplicate blocks twice; unknown and self never block"
    assert plan.edges == [PlanEdge(from_="A2", to="A1"), PlanEdge(from_="A3", to="A1")]
    assert (found["A2"].dependents, found["A3"].dependents) == (["A1"], ["A1"])


def test_record_findings_in_derivation_order() -> None:
    plan = plan_of(
        [M1],
        [
            issue("B1", milestone=""),
            issue("B2", milestone="M404"),
            issue("B3", acceptance_criteria=[], validation=[], evidence_required=[]),
            issue("B4", cancelled=True, acceptance_criteria=[], validation=[], evidence_required=[]),
        ],
    )
    assert plan.findings == [
        PlanFinding(level="FAIL", code="no_milestone", subject="B1", message="names no milestone"),
        PlanFinding(
            level="FAIL", code="unknown_milestone", subject="B2", message="names milestone M404, which does not exist"
        ),
        PlanFinding(
            level="FAIL",
            code="no_acceptance",
            subject="B3",
            message="has no acceptance criteria; an issue without one is a placeholder",
        ),
        PlanFinding(level="FAIL", code="no_validation", subject="B3", message="names no validation command"),
        PlanFinding(
            level="WARN",
            code="no_evidence_required",
            subject="B3",
            message="requires no evidence; nothing gates its completion",
        ),
    ]
    assert by_id(plan)["M1"].issues == ["B3", "B4"]


def test_a_cycle_leaves_its_issues_and_their_dependents_unplaced() -> None:
    plan = plan_of(
        [M1],
        [issue("C1", depends_on=["C2"]), issue("C2", depends_on=["C1"]), issue("C3", depends_on=["C1"]), issue("C4")],
    )
    assert plan.findings == [
        PlanFinding(
            level="FAIL",
            code="cycle",
            subject="graph",
            message="a dependency cycle prevents these issues from ever becoming ready: C1 C2 C3",
        ),
    ]
    assert [(w.wave, w.issues) for w in plan.waves] == [(0, ["C4"])]
    found = by_id(plan)
    assert [(found[i].wave, found[i].status) for i in ("C1", "C2", "C3", "C4")] == [
        (0, "BLOCKED"),
        (0, "BLOCKED"),
        (0, "BLOCKED"),
        (0, "READY"),
    ]


def test_waves_are_one_past_the_longest_dependency_path() -> None:
    plan = plan_of(
        [M1],
        [
            issue("D1", **done("D1")),
            issue("D2", depends_on=["D1"]),
            issue("D3", depends_on=["D1"]),
            issue("D4", depends_on=["D3", "D2"]),
            issue("D5", depends_on=["D1", "D4"]),
            issue("D6", cancelled=True),
        ],
    )
    assert [(w.wave, w.issues) for w in plan.waves] == [(0, ["D1", "D6"]), (1, ["D2", "D3"]), (2, ["D4"]), (3, ["D5"])]
    assert by_id(plan)["D5"].wave == 3


def test_milestone_edges_ranks_and_their_findings() -> None:
    plan = plan_of(
        [
            milestone("Ma", depends_on=["Ma", "Mzz", "Mb", "Mb"]),
            milestone("Mb"),
            milestone("Mc1", depends_on=["Mc2"]),
            milestone("Mc2", depends_on=["Mc1"]),
            milestone("Md", depends_on=["Mc1"]),
        ],
        [issue(f"I{n}", milestone=m) for n, m in enumerate(("Ma", "Mb", "Mc1", "Mc2", "Md"))],
    )
    assert codes(plan) == [
        ("FAIL", "milestone_self_dependency", "Ma"),
        ("FAIL", "milestone_unknown_dependency", "Ma"),
        ("WARN", "milestone_duplicate_dependency", "Ma"),
        ("FAIL", "milestone_cycle", "Mc1 Mc2 Md"),
    ]
    assert plan.findings[0].message == "requires itself"
    assert plan.findings[1].message == "requires Mzz, which is not a milestone here"
    assert plan.findings[2].message == "requires Mb more than once"
    assert plan.findings[3].message == "milestone dependencies form a cycle; no roadmap order exists"
    found = by_id(plan)
    assert [found[m].rank for m in ("Ma", "Mb", "Mc1", "Mc2", "Md")] == [1, 0, 0, 0, 0]
    assert found["Ma"].depends_on == ["Mb"], "a milestone lists only its valid edges"
    assert found["Mb"].dependents == ["Ma"]
    assert plan.milestone_edges == [
        PlanEdge(from_="Mb", to="Ma"),
        PlanEdge(from_="Mc1", to="Mc2"),
        PlanEdge(from_="Mc1", to="Md"),
        PlanEdge(from_="Mc2", to="Mc1"),
    ]
    assert [found[m].blocked_by for m in ("Ma", "Mc1", "Mc2", "Md")] == [["Mb"], ["Mc2"], ["Mc1"], ["Mc1"]]
    assert plan.project.active_milestone == "Mb"


def test_every_milestone_status_rule() -> None:
    ms = [
        milestone("A-cancelled", cancelled=True),
        milestone("B-superseded", superseded_by="C-covered"),
        milestone("C-covered", evidence_required=["x"], evidence=[{"covers": "x", "type": "manual"}]),
        milestone("D-empty"),
        milestone("E-done"),
        milestone("F-verify", evidence_required=["release", "notes"], evidence=[{"covers": "notes"}]),
        milestone("G-active"),
        milestone("H-blocked"),
        milestone("I-planned"),
        milestone("J-all-cancelled"),
    ]
    issues = [
        issue("I01", milestone="A-cancelled"),
        issue("I02", milestone="B-superseded"),
        issue("I05", milestone="E-done", **done("I05")),
        issue("I06", milestone="E-done", cancelled=True),
        issue("I07", milestone="F-verify", **done("I07")),
        issue("I08", milestone="G-active", **active("I08")),
        issue("I09", milestone="G-active"),
        issue("I10", milestone="H-blocked", depends_on=["I09"]),
        issue("I11", milestone="I-planned"),
        issue("I12", milestone="J-all-cancelled", cancelled=True),
    ]
    plan = plan_of(ms, issues)
    assert [m.status for m in plan.milestones] == [
        "CANCELLED",
        "SUPERSEDED",
        "DONE",
        "PLANNED",
        "DONE",
        "VERIFY",
        "ACTIVE",
        "BLOCKED",
        "PLANNED",
        "BLOCKED",
    ]
    assert plan.findings == [
        PlanFinding(
            level="WARN",
            code="milestone_evidence_missing",
            subject="F-verify",
            message="every issue is DONE but milestone evidence is missing for release; status stays VERIFY",
        ),
        PlanFinding(
            level="WARN",
            code="empty_milestone",
            subject="D-empty",
            message="is reachable and has no issues; it is an outcome nobody is executing",
        ),
    ]
    assert plan.project.active_milestone == "G-active"


def test_the_milestone_gate_blocks_every_open_issue_and_cascades() -> None:
    ms = [
        milestone("MA", order=1),
        milestone("MB", depends_on=["MA"]),
        milestone("MC", depends_on=["MB"]),
        milestone("MD", depends_on=["MA"], cancelled=True),
    ]
    issues = [
        issue("G0", milestone="MA"),
        issue("G1", milestone="MB", **active("G1")),
        issue("G2", milestone="MB"),
        issue("G3", milestone="MB", **done("G3")),
        issue("G4", milestone="MC"),
        issue("G5", milestone="MD"),
    ]
    plan = plan_of(ms, issues)
    found = by_id(plan)
    assert [found[m].status for m in ("MA", "MB", "MC", "MD")] == ["PLANNED", "BLOCKED", "BLOCKED", "CANCELLED"]
    assert [found[m].blocked_by for m in ("MA", "MB", "MC", "MD")] == [[], ["MA"], ["MB"], ["MA"]]
    assert [(found[i].status, found[i].blocked_by) for i in ("G0", "G1", "G2", "G3", "G4", "G5")] == [
        ("READY", []),
        ("BLOCKED", ["milestone:MB"]),
        ("BLOCKED", ["milestone:MB"]),
        ("DONE", []),
        ("BLOCKED", ["milestone:MC"]),
        ("BLOCKED", ["milestone:MD"]),
    ]
    assert plan.findings == [
        PlanFinding(level="FAIL", code="milestone_premature", subject="MB", message="is ACTIVE while MA is not DONE"),
        PlanFinding(
            level="FAIL",
            code="premature_execution",
            subject="G1",
            message="is ACTIVE while its milestone MB waits on MA",
        ),
    ]
    assert found["MB"].counts.by_status == {
        "READY": 0,
        "BLOCKED": 2,
        "ACTIVE": 0,
        "VERIFY": 0,
        "DONE": 1,
        "CANCELLED": 0,
    }, "counts are recomputed"
    assert plan.project.active_milestone == "MA"


def test_execution_ahead_of_a_dependency_is_premature() -> None:
    plan = plan_of(
        [M1],
        [
            issue("P1"),
            issue("P2", depends_on=["P1"], **active("P2")),
            issue("P3", depends_on=["P1", "P2"], **done("P3")),
        ],
    )
    assert plan.findings == [
        PlanFinding(level="FAIL", code="premature_execution", subject="P2", message="is ACTIVE while P1 is not DONE"),
        PlanFinding(level="FAIL", code="premature_execution", subject="P3", message="is DONE while P1,P2 is not DONE"),
    ]


def test_scope_conflicts_pair_ready_and_active_issues_of_one_wave() -> None:
    plan = plan_of(
        [M1],
        [
            issue("S1", scope=["lib"]),
            issue("S2", scope=["libexec"]),
            issue("S3", scope=["./lib/x/"], **active("S3")),
            issue("S4", scope=["docs", "lib/y"]),
            issue("S5", scope=["lib"], **sealed("S5", ("verified_at", "2026-11-01T11:00:00Z"))),
            issue("S6", scope=["lib"], depends_on=["S7"]),
            issue("S7", scope=["other"], **done("S7")),
            issue("T1", scope=["docs", "src/a"]),
            issue("T2", scope=["src/a/b", "docs/x"]),
        ],
    )
    assert plan.findings == [
        PlanFinding(
            level="WARN",
            code="scope_conflict",
            subject=a,
            message=f"shares {p} with {b}; they may not run concurrently",
        )
        for a, p, b in (
            ("S1", "lib", "S3"),
            ("S1", "lib", "S4"),
            ("S4", "docs", "T1"),
            ("S4", "docs", "T2"),
            ("T1", "docs", "T2"),
        )
    ]


def test_overlap_and_priority_rank() -> None:
    assert overlap("apps/cli", "apps/cli/src/main.rs")
    assert overlap("./lib/", "lib")
    assert overlap("a/b", "a")
    assert not overlap("lib", "libexec")
    assert not overlap("a/bc", "a/b")
    assert [priority_rank(p) for p in ("p0", "p1", "p2", "p3", "", "P0")] == [0, 1, 2, 3, 3, 3]


def test_active_milestone_prefers_active_then_rank_and_order_and_may_be_superseded() -> None:
    assert (
        plan_of(
            [milestone("M1", order=1), milestone("M2", order=5)],
            [issue("I1", milestone="M1"), issue("I2", milestone="M2", **active("I2"))],
        ).project.active_milestone
        == "M2"
    )
    assert (
        plan_of(
            [milestone("M1", order=9), milestone("M2", order=5)],
            [issue("I1", milestone="M1"), issue("I2", milestone="M2")],
        ).project.active_milestone
        == "M2"
    )
    assert (
        plan_of(
            [milestone("M1", order=3), milestone("M2", order=3)],
            [issue("I1", milestone="M1"), issue("I2", milestone="M2")],
        ).project.active_milestone
        == "M1"
    )
    superseded = plan_of(
        [milestone("Old", superseded_by="New"), milestone("New", cancelled=True)], [issue("I1", milestone="Old")]
    )
    assert superseded.project.active_milestone == "Old"
    assert plan_of([milestone("M1")], [issue("I1", milestone="M1", **done("I1"))]).project.active_milestone == ""


def test_undeclared_statuses_are_reported_issues_first() -> None:
    assert reconcile([("I1", "READY"), ("I2", "PAUSED")], [("M1", "ACTIVE"), ("M2", "READY")]) == [
        PlanFinding(
            level="FAIL",
            code="undeclared_status",
            subject="I2",
            message="is PAUSED, which the issue status vocabulary does not declare",
        ),
        PlanFinding(
            level="FAIL",
            code="undeclared_status",
            subject="M2",
            message="is READY, which the milestone status vocabulary does not declare",
        ),
    ]


def test_an_empty_plan() -> None:
    plan = derive(records_of([], [], project={}))
    assert plan.project.active_milestone == ""
    assert plan.milestones == []
    assert plan.issues == []
    assert plan.waves == []
    assert [f.code for f in plan.findings] == ["schema"] * 4, "an empty project.yaml misses its four keys"


def test_statuses_and_findings_never_depend_on_file_order() -> None:
    issues = [issue("I3", depends_on=["I1"]), issue("I1", **active("I1")), issue("I2", depends_on=["I3", "I9"])]
    ms = [milestone("M2", depends_on=["M1"]), M1]
    assert plan_of(ms, issues) == plan_of(list(reversed(ms)), list(reversed(issues)))
