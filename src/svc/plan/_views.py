"""The answers of the read capabilities, shaped from a derived plan (docs/plan.md). Pure functions.

A filter naming a milestone the plan does not hold, or a record id it does not hold, is `NotFound`; a
status outside the issue vocabulary is `InvalidInput`.
"""

from __future__ import annotations

from collections.abc import Iterable

from svc._errors import InvalidInput, NotFound
from svc.plan._derive import priority_rank
from svc.plan._load import Records
from svc.plan._model import (
    ISSUE_STATUSES,
    Plan,
    PlanCounts,
    PlanFinding,
    PlanIssue,
    PlanIssueList,
    PlanIssueRecord,
    PlanMilestone,
    PlanMilestoneProgress,
    PlanMilestoneRecord,
    PlanNextIssue,
    PlanRoadmap,
    PlanStatusReport,
    PlanValidation,
    PlanWaveReport,
    PlanWaveView,
    vocabulary,
)

__all__ = [
    "NONE_READY",
    "NO_ISSUE",
    "issue_list",
    "next_issue",
    "next_ready",
    "record_view",
    "roadmap",
    "status_report",
    "validation",
    "wave_report",
]

NONE_READY = "no issue is READY: every open issue waits on a dependency or a milestone gate"
NO_ISSUE = "the plan declares no issue"
_CLOSED = ("DONE", "CANCELLED", "SUPERSEDED")


def _milestone(plan: Plan, milestone_id: str) -> PlanMilestone:
    for milestone in plan.milestones:
        if milestone.id == milestone_id:
            return milestone
    known = ", ".join(m.id for m in plan.milestones) or "none"
    raise NotFound(f"no milestone {milestone_id!r} in the plan (milestones: {known})")


def _best(issues: Iterable[PlanIssue]) -> PlanIssue | None:
    ready = [i for i in issues if i.status == "READY"]
    return min(ready, key=lambda i: (i.wave, priority_rank(i.priority), i.id), default=None)


def next_ready(plan: Plan, milestone: str | None = None) -> PlanIssue | None:
    """The READY issue to take now, or None.

    The lowest (wave, priority rank, id) of the filter milestone (else the active milestone, else the whole
    plan), widened to the whole plan when that milestone has none.
    """
    scope = milestone if milestone is not None else plan.project.active_milestone
    if scope:
        found = _best(i for i in plan.issues if i.milestone == scope)
        if found is not None:
            return found
    return _best(plan.issues)


def next_issue(plan: Plan, milestone: str | None = None) -> PlanNextIssue:
    """`plan.next`: the issue, or the reason there is none.

    Raises:
        NotFound: `milestone` is not a milestone of the plan.
    """
    if milestone is not None:
        _milestone(plan, milestone)
    issue = next_ready(plan, milestone)
    active = plan.project.active_milestone
    if issue is not None:
        return PlanNextIssue(issue=issue, active_milestone=active)
    return PlanNextIssue(active_milestone=active, reason=NONE_READY if plan.issues else NO_ISSUE)


def _counts(issues: Iterable[PlanIssue]) -> PlanCounts:
    by_status = dict.fromkeys(ISSUE_STATUSES, 0)
    total = 0
    for issue in issues:
        total += 1
        by_status[issue.status] = by_status.get(issue.status, 0) + 1
    return PlanCounts(total=total, required=total - by_status["CANCELLED"], by_status=by_status)


def status_report(plan: Plan, milestone: str | None = None) -> PlanStatusReport:
    """`plan.status`: progress of every milestone (or the one named), the next ready issue, the counts.

    Raises:
        NotFound: `milestone` is not a milestone of the plan.
    """
    chosen = plan.milestones if milestone is None else [_milestone(plan, milestone)]
    progress = [PlanMilestoneProgress(id=m.id, status=m.status, title=m.title, counts=m.counts) for m in chosen]
    counts = _counts(plan.issues) if milestone is None else chosen[0].counts
    return PlanStatusReport(
        project=plan.project,
        statuses=plan.statuses,
        milestones=progress,
        next_ready=next_ready(plan, milestone),
        counts=counts,
    )


def issue_list(
    plan: Plan, milestone: str | None = None, status: str | None = None, wave: int | None = None
) -> PlanIssueList:
    """`plan.issues`: the issues matching every filter given, in id order.

    Raises:
        NotFound: `milestone` is not a milestone of the plan.
        InvalidInput: `status` is not an issue status.
    """
    if milestone is not None:
        _milestone(plan, milestone)
    if status is not None and status not in ISSUE_STATUSES:
        raise InvalidInput(f"status {status!r} is not an issue status ({', '.join(ISSUE_STATUSES)})")
    chosen = [
        i
        for i in plan.issues
        if (milestone is None or i.milestone == milestone)
        and (status is None or i.status == status)
        and (wave is None or i.wave == wave)
    ]
    return PlanIssueList(issues=chosen, total=len(chosen), statuses=vocabulary())


def roadmap(plan: Plan) -> PlanRoadmap:
    """`plan.roadmap`: milestones by (rank, order, id), with `now` and `next`.

    `now` is the first open milestone (not DONE, CANCELLED or SUPERSEDED) when it is unblocked, and `next` the
    open one after it; when that first open milestone is blocked, `now` is null and `next` names it.
    """
    ordered = sorted(plan.milestones, key=lambda m: (m.rank, m.order, m.id))
    open_ids = [m for m in ordered if m.status not in _CLOSED]
    now: str | None = None
    after: str | None = None
    if open_ids:
        first = open_ids[0]
        if first.blocked_by:
            after = first.id
        else:
            now = first.id
            after = open_ids[1].id if len(open_ids) > 1 else None
    return PlanRoadmap(milestones=ordered, now=now, next=after)


def wave_report(plan: Plan, milestone: str | None = None) -> PlanWaveReport:
    """`plan.waves`: the waves with their issues in full, and the scope overlaps that serialise them.

    A milestone filter keeps that milestone's issues and drops the layers left empty (wave numbers stay global).

    Raises:
        NotFound: `milestone` is not a milestone of the plan.
    """
    if milestone is not None:
        _milestone(plan, milestone)
    by_id = {i.id: i for i in plan.issues}
    views: list[PlanWaveView] = []
    for wave in plan.waves:
        issues = [by_id[i] for i in wave.issues if milestone is None or by_id[i].milestone == milestone]
        if issues:
            views.append(PlanWaveView(wave=wave.wave, issues=issues))
    conflicts = [
        f
        for f in plan.findings
        if f.code == "scope_conflict" and (milestone is None or by_id[f.subject].milestone == milestone)
    ]
    return PlanWaveReport(waves=views, serialised_by_scope=conflicts)


def validation(plan: Plan) -> PlanValidation:
    """`plan.validate`: the findings in derivation order, with the tallies; valid when nothing fails."""
    failures = sum(1 for f in plan.findings if f.level == "FAIL")
    return PlanValidation(
        valid=failures == 0,
        milestones=len(plan.milestones),
        issues=len(plan.issues),
        failures=failures,
        warnings=len(plan.findings) - failures,
        findings=plan.findings,
    )


def _findings(plan: Plan, subject: str) -> list[PlanFinding]:
    return [f for f in plan.findings if f.subject == subject]


def record_view(plan: Plan, records: Records, record_id: str) -> PlanMilestoneRecord | PlanIssueRecord:
    """`plan.record`: a milestone with its issues in full, or an issue with the issues it waits on.

    Raises:
        NotFound: no milestone or issue of the plan has this id (the message points at a `schema` finding
            when the record was left out).
    """
    by_id = {i.id: i for i in plan.issues}
    for m in records.milestones:
        if m.id == record_id:
            derived = _milestone(plan, record_id)
            return PlanMilestoneRecord(
                id=m.id,
                path=m.path,
                record=m.raw,
                derived=derived,
                issues=[by_id[i] for i in derived.issues],
                findings=_findings(plan, record_id),
            )
    for r in records.issues:
        if r.id == record_id:
            waits: list[PlanIssue] = []
            for dep in dict.fromkeys(r.depends_on):
                if dep in by_id and dep != r.id:
                    waits.append(by_id[dep])
            return PlanIssueRecord(
                id=r.id,
                path=r.path,
                record=r.raw,
                derived=by_id[r.id],
                issues=waits,
                findings=_findings(plan, record_id),
            )
    left_out = any(f.code == "schema" and f.subject == record_id for f in plan.findings)
    hint = "; its record was left out (see the schema findings of plan.validate)" if left_out else ""
    raise NotFound(f"no milestone or issue {record_id!r} in the plan{hint}")
