"""A real `.ai/` plan layer written by the reference tool (the shared corpus): read whole, derived sensibly."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from svc.layer import Repository
from svc.plan import ISSUE_STATUSES, next_issue, read_snapshot, roadmap, validation

UNPARSEABLE = {"I0823", "I1105", "I1108", "I1109", "I1111", "I2067"}
SEALED_BY_THE_REFERENCE = {"I0837", "I1403", "I2096", "I2097", "I2293"}


def test_the_reference_layer_reads_whole(corpus: Path) -> None:
    snapshot = read_snapshot(Repository(root=corpus, git_dir=None, common_dir=None))
    plan = snapshot.plan
    assert (len(plan.milestones), len(plan.issues)) == (65, 412 - len(UNPARSEABLE))
    assert plan.project.name == "Prismatic Majordomus"
    assert plan.project.default_branch == "master"
    not_yaml = {f.subject for f in plan.findings if f.code == "schema" and "is not YAML" in f.message}
    assert not_yaml == UNPARSEABLE
    assert all(f.level == "FAIL" for f in plan.findings if f.code == "schema")


def test_dangling_references_are_findings(corpus: Path) -> None:
    plan = read_snapshot(Repository(root=corpus, git_dir=None, common_dir=None)).plan
    missing_milestones = {f.message.split()[2].rstrip(",") for f in plan.findings if f.code == "unknown_milestone"}
    assert missing_milestones == {"M001", "M002", "shared-policy", "cost-per-accepted-outcome"}
    missing_issues = {f.message.split()[2].rstrip(",") for f in plan.findings if f.code == "unknown_dependency"}
    assert missing_issues >= UNPARSEABLE, "a left-out record dangles like an absent one"
    assert len(missing_issues) > len(UNPARSEABLE)
    empty = sum(1 for m in plan.milestones if m.counts.total == 0)
    assert empty >= 12
    assert not validation(plan).valid


def test_statuses_and_a_next_issue(corpus: Path) -> None:
    plan = read_snapshot(Repository(root=corpus, git_dir=None, common_dir=None)).plan
    statuses = Counter(i.status for i in plan.issues)
    assert set(statuses) <= set(ISSUE_STATUSES)
    assert statuses["READY"] > 0
    assert statuses["DONE"] > 0
    assert statuses["BLOCKED"] > 0
    answer = next_issue(plan)
    assert answer.issue is not None
    assert answer.issue.status == "READY"
    assert answer.active_milestone == plan.project.active_milestone != ""
    assert roadmap(plan).now == plan.project.active_milestone
    waves = {i.id: i.wave for i in plan.issues}
    for edge in plan.edges:
        assert waves[edge.to] > waves[edge.from_]


def test_the_reference_tools_seals_are_not_svc_seals(corpus: Path) -> None:
    """The reference tool seals with its own name in the seal schema line; under the spec's `svc.plan-event/v1`
    those stamps are unproven, so they move no status and each raises `stamp_without_event`."""
    plan = read_snapshot(Repository(root=corpus, git_dir=None, common_dir=None)).plan
    unproven = {f.subject for f in plan.findings if f.code == "stamp_without_event"}
    assert unproven >= SEALED_BY_THE_REFERENCE
