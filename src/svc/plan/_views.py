"""The answers of the read capabilities, shaped from a derived plan (docs/plan.md). Pure functions.

A filter naming a milestone the plan does not hold, or a record id it does not hold, is `NotFound`; a
status outside the issue vocabulary is `InvalidInput`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from svc._errors import InvalidInput, NotFound
from svc.plan._derive import priority_rank
from svc.plan._load import Records
from svc.plan._model import (
    FINDING_CODES,
    FINDING_LEVELS,
    ISSUE_STATUSES,
    Plan,
    PlanCounts,
    PlanFinding,
    PlanFindingCounts,
    PlanIssue,
    PlanIssueList,
    PlanIssueRecord,
    PlanMilestone,
    PlanMilestoneProgress,
    PlanMilestoneRecord,
    PlanNextIssue,
    PlanRoadmap,
    PlanSkipped,
    PlanStatusReport,
    PlanUnprovenStamp,
    PlanValidation,
    PlanWaveReport,
    PlanWaveView,
    vocabulary,
)
from svc.plan._proof import UnprovenStamp, unproven_stamps

__all__ = [
    "FAILURES_COMMAND",
    "NONE_READY",
    "NONE_UNCLAIMED",
    "NO_ISSUE",
    "Passing",
    "issue_list",
    "next_issue",
    "next_ready",
    "next_unclaimed",
    "record_view",
    "roadmap",
    "status_report",
    "validation",
    "wave_report",
]

#: The command that lists the plan's failures, named by `plan.status` and `plan.next` when there is one.
FAILURES_COMMAND = "svc plan validate --level FAIL"
NONE_READY = "no issue is READY: every open issue waits on a dependency or a milestone gate"
NO_ISSUE = "the plan declares no issue"
NONE_UNCLAIMED = "every READY issue meets a live claim of another session (see skipped)"
#: Why an issue is passed over for a session (the claim it meets), or None when it may be taken.
Passing = Callable[[PlanIssue], "PlanSkipped | None"]
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


def next_unclaimed(plan: Plan, milestone: str | None, passing: Passing) -> tuple[PlanIssue | None, list[PlanSkipped]]:
    """`next_ready` for a session: the best READY issue `passing` does not pass over, and those it passed over.

    The same order and widening as `next_ready`; an issue is passed over when `passing(issue)` answers why (a
    live claim of another session meets it). The issues passed over are listed best first, the milestone's
    before the rest of the plan's.

    Raises:
        NotFound: `milestone` is not a milestone of the plan.
    """
    if milestone is not None:
        _milestone(plan, milestone)
    skipped: dict[str, PlanSkipped] = {}

    def first(issues: Iterable[PlanIssue]) -> PlanIssue | None:
        ready = (i for i in issues if i.status == "READY")
        for issue in sorted(ready, key=lambda i: (i.wave, priority_rank(i.priority), i.id)):
            met = skipped.get(issue.id) or passing(issue)
            if met is None:
                return issue
            skipped[issue.id] = met
        return None

    scope = milestone if milestone is not None else plan.project.active_milestone
    found = first(i for i in plan.issues if i.milestone == scope) if scope else None
    if found is None:
        found = first(plan.issues)
    return found, list(skipped.values())


def _failures(plan: Plan) -> int:
    return sum(1 for f in plan.findings if f.level == "FAIL")


def _failures_command(failures: int) -> str | None:
    return FAILURES_COMMAND if failures else None


def _stamp_view(unproven: UnprovenStamp) -> PlanUnprovenStamp:
    move = unproven.move
    return PlanUnprovenStamp(
        field=move.field,
        stamp=unproven.stamp,
        event=move.event,
        reason=unproven.reason,
        domain=unproven.domain,
        message=f"{move.field} {unproven.stamp} does not count: {unproven.why()}",
    )


def _invalid_note(failures: int) -> str:
    many = "failure" if failures == 1 else "failures"
    return (
        f"the plan is invalid: {failures} {many} (`{FAILURES_COMMAND}` lists them); the recommendation is "
        "derived from the plan as it reads now"
    )


def _stamps_note(issue: PlanIssue, stamps: Sequence[PlanUnprovenStamp]) -> str:
    written = ", ".join(f"{s.field} {s.stamp}" for s in stamps)
    return (
        f"{issue.id} is {issue.status} although its record carries {written}: a stamp counts only when its "
        "seal proves it (or unsealed_stamps excuses it as a legacy stamp), and none of these does, so they move "
        "no status (see unproven_stamps)"
    )


def next_issue(
    plan: Plan,
    milestone: str | None = None,
    records: Records | None = None,
    domains: Sequence[str] = (),
    *,
    session: str | None = None,
    passing: Passing | None = None,
    notes: Sequence[str] = (),
) -> PlanNextIssue:
    """`plan.next`: the issue, or the reason there is none, with the plan's failures and notes for a person.

    With `records` (those `plan` was derived from), the stamps the recommended issue's record carries but
    that prove nothing are listed and explained (`domains`: the seal domains of other tools). With `passing`
    (the claims of other sessions than `session`), READY issues it passes over are skipped and listed;
    `notes` come first among the answer's notes.

    Raises:
        NotFound: `milestone` is not a milestone of the plan.
    """
    if milestone is not None:
        _milestone(plan, milestone)
    skipped: list[PlanSkipped] = []
    if passing is None:
        issue = next_ready(plan, milestone)
    else:
        issue, skipped = next_unclaimed(plan, milestone, passing)
    active = plan.project.active_milestone
    failures = _failures(plan)
    said = [*notes, *([_invalid_note(failures)] if failures else [])]
    command = _failures_command(failures)
    if issue is None:
        reason = NONE_UNCLAIMED if skipped else NONE_READY if plan.issues else NO_ISSUE
        return PlanNextIssue(
            active_milestone=active,
            reason=reason,
            session=session,
            skipped=skipped,
            failures=failures,
            failures_command=command,
            notes=said,
        )
    record = next((r for r in records.issues if r.id == issue.id), None) if records is not None else None
    stamps = [_stamp_view(u) for u in unproven_stamps(record, domains)] if record is not None else []
    if stamps:
        said.append(_stamps_note(issue, stamps))
    return PlanNextIssue(
        issue=issue,
        active_milestone=active,
        session=session,
        skipped=skipped,
        failures=failures,
        failures_command=command,
        unproven_stamps=stamps,
        notes=said,
    )


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
    failures = _failures(plan)
    return PlanStatusReport(
        project=plan.project,
        statuses=plan.statuses,
        milestones=progress,
        next_ready=next_ready(plan, milestone),
        counts=counts,
        failures=failures,
        failures_command=_failures_command(failures),
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


def validation(plan: Plan, code: str | None = None, level: str | None = None) -> PlanValidation:
    """`plan.validate`: the findings of `code` and `level` (all without them) in derivation order.

    `valid`, `failures`, `warnings` and `counts` always count every finding of the plan.

    Raises:
        InvalidInput: `code` is not a finding code, or `level` not a finding level.
    """
    if code is not None and code not in FINDING_CODES:
        raise InvalidInput(f"code {code!r} is not a finding code ({', '.join(FINDING_CODES)})")
    if level is not None and level not in FINDING_LEVELS:
        raise InvalidInput(f"level {level!r} is not a finding level ({', '.join(FINDING_LEVELS)})")
    by_level: dict[str, int] = dict.fromkeys(FINDING_LEVELS, 0)
    by_code: dict[str, int] = {}
    for f in plan.findings:
        by_level[f.level] += 1
        by_code[f.code] = by_code.get(f.code, 0) + 1
    chosen = [f for f in plan.findings if (code is None or f.code == code) and (level is None or f.level == level)]
    failures = by_level["FAIL"]
    return PlanValidation(
        valid=failures == 0,
        milestones=len(plan.milestones),
        issues=len(plan.issues),
        failures=failures,
        warnings=len(plan.findings) - failures,
        counts=PlanFindingCounts(by_level=by_level, by_code=dict(sorted(by_code.items()))),
        findings=chosen,
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
