"""`plan.*`: the plan derived from `.ai/repo/project/` on every call, and its one writer, `plan.transition`.

Every read is a plain function of the checkout: the executor runs it in a worker thread (the event loop never
blocks on the disk) and the command line calls it directly, with no event loop (so this module imports no trio
until a transition runs). The transition runs the whole read-check-write-ledger sequence in one worker thread
under the cross-process `plan.lock`, and bumps the repository generation right after the record is replaced, so
generation-cached answers of `plan.issues`, `plan.next`, `plan.roadmap` and `plan.status` are dropped before it
answers.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Annotated, Literal

import msgspec
from msgspec import Meta

from svc._version import __version__
from svc.layer import Repository
from svc.layer._required import require_layer
from svc.plan import (
    FindingCode,
    FindingLevel,
    Plan,
    PlanIssueList,
    PlanIssueRecord,
    PlanMilestoneRecord,
    PlanNextIssue,
    PlanRoadmap,
    PlanStatusReport,
    PlanTake,
    PlanTransition,
    PlanTransitionResult,
    PlanValidation,
    PlanWaveReport,
    Snapshot,
    issue_list,
    known_domains,
    move_issue,
    next_issue,
    read_snapshot,
    record_view,
    roadmap,
    status_report,
    validation,
    wave_report,
)
from svc.registry import (
    Benchmark,
    Cache,
    CliPreset,
    Declarations,
    Example,
    McpResource,
    Module,
    NoInput,
    one_of,
)

if TYPE_CHECKING:
    from svc.runtime import Context

MODULE = Module(
    id="plan",
    title="Plan",
    description=(
        "Milestones and issues of .ai/repo/project/, derived on every read (statuses, gates, ranks, waves, "
        "findings) and moved only by sealed transitions. A checkout without an .ai/ layer answers not found."
    ),
)

#: `plan.record` answers one of two shapes, told apart by `kind` (`milestone` or `issue`).
PlanRecord = one_of(PlanMilestoneRecord, PlanIssueRecord)
IssueStatus = Literal["READY", "BLOCKED", "ACTIVE", "VERIFY", "DONE", "CANCELLED"]
_MILESTONE = Meta(description="keep only this milestone (a milestone id)")


class MilestoneFilter(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """An optional milestone filter (`plan.next`, `plan.status`, `plan.waves`)."""

    milestone: Annotated[str | None, _MILESTONE] = None


class NextInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Input of `plan.next`: a milestone filter, and the session to weigh the mesh's claims for."""

    milestone: Annotated[str | None, _MILESTONE] = None
    session: Annotated[
        str | None,
        Meta(
            description=(
                "a mesh session (a key, or an id of the serving runtime's sessions): READY issues meeting a live "
                "claim of another session are passed over and listed in skipped (an MCP session stands for its "
                "own board-<peer> when none is named)"
            )
        ),
    ] = None


class TakeInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Input of `plan.take`."""

    session: Annotated[
        str | None,
        Meta(description="the session taking the issue (required but over MCP, where it is the caller's own)"),
    ] = None
    milestone: Annotated[str | None, _MILESTONE] = None
    start: Annotated[
        bool,
        Meta(description="also move the issue to ACTIVE (plan.transition start); MCP over stdio and the CLI only"),
    ] = False
    intent: Annotated[str | None, Meta(description="what the session means to do, shown on the claim")] = None


class IssuesInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Filters of `plan.issues`; every filter given must hold."""

    milestone: Annotated[str | None, _MILESTONE] = None
    status: Annotated[IssueStatus | None, Meta(description="keep only issues of this derived status")] = None
    wave: Annotated[
        Annotated[int, Meta(ge=0, le=4_294_967_295)] | None, Meta(description="keep only issues of this wave")
    ] = None


class RecordInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Input of `plan.record`."""

    id: Annotated[str, Meta(description="a milestone id or an issue id")]


class ValidateInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Filters of `plan.validate`'s findings; the tallies and `valid` always count every finding."""

    code: Annotated[FindingCode | None, Meta(description="keep only the findings of this code")] = None
    level: Annotated[FindingLevel | None, Meta(description="keep only the findings of this level")] = None


class PlanTransitionInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Input of `plan.transition`: the issue and the move, nothing else (no timestamp, force or reason)."""

    issue: Annotated[str, Meta(description="the issue id, e.g. I0001")]
    transition: Annotated[PlanTransition, Meta(description="start, verify or done")]


def read_checkout(repo: Repository) -> Snapshot:
    """The records and the plan; `NotFound` when the checkout has no `.ai/` layer."""
    require_layer(repo)
    return read_snapshot(repo)


def model(repo: Repository, params: NoInput) -> Plan:
    """The whole plan, derived now."""
    return read_checkout(repo).plan


def issues(repo: Repository, params: IssuesInput) -> PlanIssueList:
    """The issues matching the filters (404 for an unknown milestone)."""
    return issue_list(read_checkout(repo).plan, params.milestone, params.status, params.wave)


def next_(repo: Repository, params: NextInput) -> PlanNextIssue:
    """The READY issue to take now, widened to the whole plan when the milestone has none."""
    snapshot = read_checkout(repo)
    return next_issue(snapshot.plan, params.milestone, snapshot.records, known_domains())


async def next_for_session(ctx: Context, params: NextInput) -> PlanNextIssue:
    """The READY issue to take now that no live claim of another session meets."""
    from svc.capabilities._plan_claims import next_for_session as weighed

    return await weighed(ctx, params.milestone, params.session)


async def take(ctx: Context, params: TakeInput) -> PlanTake:
    """Claim the session's next issue in one step (and start it, when asked)."""
    from svc.capabilities._plan_claims import take_issue

    start = partial(start_issue, ctx) if params.start else None
    return await take_issue(ctx, session=params.session, milestone=params.milestone, start=start, intent=params.intent)


def record(repo: Repository, params: RecordInput) -> PlanMilestoneRecord | PlanIssueRecord:
    """One record as authored, with its derived facts, related issues and findings."""
    snapshot = read_checkout(repo)
    return record_view(snapshot.plan, snapshot.records, params.id)


def roadmap_(repo: Repository, params: NoInput) -> PlanRoadmap:
    """Milestones in roadmap order, with `now` and `next`."""
    return roadmap(read_checkout(repo).plan)


def status(repo: Repository, params: MilestoneFilter) -> PlanStatusReport:
    """Progress per milestone, the next ready issue and the counts."""
    return status_report(read_checkout(repo).plan, params.milestone)


def validate(repo: Repository, params: ValidateInput) -> PlanValidation:
    """The findings of the code and level asked for (every one without), in derivation order, with the tallies."""
    return validation(read_checkout(repo).plan, params.code, params.level)


def waves(repo: Repository, params: MilestoneFilter) -> PlanWaveReport:
    """The execution waves and the scope overlaps that serialise issues of one wave."""
    return wave_report(read_checkout(repo).plan, params.milestone)


def _move(repo: Repository, params: PlanTransitionInput, bump: Callable[[], int]) -> PlanTransitionResult:
    import trio

    def written() -> None:
        trio.from_thread.run_sync(bump)

    require_layer(repo)
    return move_issue(repo, params.issue, params.transition, by=f"svc/{__version__}", on_written=written)


def start_issue(ctx: Context, issue: str) -> PlanTransitionResult:
    """Move `issue` to ACTIVE, in a worker thread of `ctx`'s runtime (`plan.take` with `start`)."""
    return _move(
        ctx.runtime.repository, PlanTransitionInput(issue=issue, transition="start"), ctx.runtime.generation.bump
    )


async def transition(ctx: Context, params: PlanTransitionInput) -> PlanTransitionResult:
    """Move one issue with a sealed stamp and a ledger event (never over HTTP)."""
    import trio

    return await trio.to_thread.run_sync(_move, ctx.runtime.repository, params, ctx.runtime.generation.bump)


_GENERATION = Cache(policy="generation", max_entries=16)
_INACTIVE_TAKE = "on a server where cooperation does not run (svc's own checkout declares no mesh), it is refused (422)"
_MOVE_SUMMARY = "Move an issue to {0} (writes {1} and its seal, appends {2})"
declare: Declarations[Context] = Declarations(MODULE, source=__name__)

CAPABILITIES = (
    declare.query(
        "model",
        title="The plan",
        description=(
            "The whole plan derived from .ai/repo/project/ now: project (with the derived active milestone), "
            "status vocabularies, milestones and issues in id order, waves, both dependency graphs and every "
            "finding in derivation order."
        ),
        input=NoInput,
        output=Plan,
        read=model,
        examples=(Example(name="plan"),),
        http="GET /api/v1/plan",
        tool="svc_plan",
        resource=McpResource(uri="svc://plan", name="plan"),
        cli="plan",
    ),
    declare.query(
        "issues",
        title="Plan issues",
        description=(
            "The issues matching every filter given: milestone, derived status (READY is the ready set, "
            "BLOCKED the blocked set) and wave. An unknown milestone is 404."
        ),
        input=IssuesInput,
        output=PlanIssueList,
        read=issues,
        examples=(
            Example(name="all"),
            Example(name="ready", input={"status": "READY"}, description="the ready set"),
        ),
        http="GET /api/v1/plan/issues",
        tool="svc_plan_issues",
        cli="plan issues",
        cache=_GENERATION,
    ),
    declare.query(
        "next",
        title="Next issue",
        description=(
            "The lowest-wave READY issue of the milestone (else the active milestone), highest priority "
            "first, then by id; widened to the whole plan when that milestone has none ready. With nothing "
            "executable, `issue` is absent and `reason` says why. `failures` counts the plan's failures "
            "(`failures_command` lists them); `unproven_stamps` and `notes` say why an issue whose record "
            "carries stamps is still READY (no stamp of it is proven). 404 when the checkout has no .ai/ layer."
        ),
        input=NextInput,
        output=PlanNextIssue,
        read=next_,
        handler=next_for_session,
        live=("session",),
        examples=(Example(name="next"),),
        http="GET /api/v1/plan/next",
        tool="svc_plan_next",
        cli="plan next",
        cache=_GENERATION,
    ),
    declare.command(
        "take",
        title="Take the next issue",
        description=(
            "In one step under the mesh journal's lock: pick the issue `plan.next` answers for the session "
            "(passing over READY issues a live claim of another session meets) and claim its scope (else its "
            "record file) exclusively, with the issue id on the claim. Concurrent takes on one runtime never "
            "pick one issue; across runtimes the fold names one winner, the loser's claim reads conflicted and "
            "its next take releases it and moves on. A session that already holds the claim gets it back "
            "(`existing`). `taken` is false, with `reason`, when nothing is left (`svc plan take` exits 10). It "
            "writes the mesh journal only, so it is served over HTTP; `start` also moves the issue to ACTIVE "
            "(a repository write: MCP over stdio and the command line only, 403 over HTTP). Refused (422) "
            "where cooperation does not run."
        ),
        input=TakeInput,
        output=PlanTake,
        handler=take,
        examples=(
            Example(
                name="take",
                input={"session": "s1"},
                status=422,
                description=_INACTIVE_TAKE,
            ),
        ),
        http="POST /api/v1/plan/take",
        tool="svc_plan_take",
        cli="plan take",
        cli_verdict="taken",
        cli_remote=True,
        benchmark=Benchmark(policy="waived", reason="transient_state"),
    ),
    declare.query(
        "record",
        title="One plan record",
        description=(
            "A milestone record with its issues in full, or an issue record with the issues it waits on in "
            "full: the authored mapping (scalars as text), the derived facts and the findings about it."
        ),
        input=RecordInput,
        output=PlanRecord,
        read=record,
        examples=(
            Example(name="milestone", input={"id": "plan"}),
            Example(name="issue", input={"id": "I0001"}),
        ),
        http="GET /api/v1/plan/record",
        tool="svc_plan_record",
        cli="plan record",
    ),
    declare.query(
        "roadmap",
        title="Roadmap",
        description=(
            "Milestones ordered by rank, then `order`, then id; `now` is the first unfinished milestone when "
            "it is unblocked, `next` the unfinished one after it (or that first one when it is blocked)."
        ),
        input=NoInput,
        output=PlanRoadmap,
        read=roadmap_,
        examples=(Example(name="roadmap"),),
        http="GET /api/v1/plan/roadmap",
        tool="svc_plan_roadmap",
        cli="plan roadmap",
        cache=Cache(policy="generation", max_entries=4),
    ),
    declare.query(
        "status",
        title="Plan status",
        description=(
            "Status and counts of every milestone (or the one named), the next ready issue, the counts "
            "over the whole plan (or that milestone), and the number of failures of the whole plan with the "
            "command that lists them. 404 when the checkout has no .ai/ layer."
        ),
        input=MilestoneFilter,
        output=PlanStatusReport,
        read=status,
        examples=(Example(name="status"),),
        http="GET /api/v1/plan/status",
        tool="svc_plan_status",
        cli="plan status",
        cache=_GENERATION,
    ),
    declare.command(
        "transition",
        title="Move an issue",
        description=(
            "The only plan operation that writes the repository: start (READY to ACTIVE), verify or done. "
            "Writes the stamp, its seal and updated_at in place, replaces the record atomically, then appends "
            "the ledger event, all under the cross-process plan lock; `to` is derived from the record as "
            "written. Refused (422) with what is in the way; never over HTTP (403)."
        ),
        input=PlanTransitionInput,
        output=PlanTransitionResult,
        handler=transition,
        examples=(
            Example(
                name="start",
                input={"issue": "I0001", "transition": "start"},
                status=403,
                description="over HTTP the move is refused (403): it runs over MCP on stdio or the command line",
            ),
        ),
        http="POST /api/v1/plan/transition",
        tool="svc_plan_transition",
        cli="plan transition",
        cli_presets=tuple(
            CliPreset(
                words=("plan", verb),
                input={"transition": verb},
                summary=_MOVE_SUMMARY.format(status, field, event),
            )
            for verb, status, field, event in (
                ("start", "ACTIVE", "started_at", "plan_start"),
                ("verify", "VERIFY", "verified_at", "plan_verify"),
                ("done", "DONE", "completed_at", "plan_done"),
            )
        ),
        benchmark=Benchmark(
            policy="required_when",
            when="run against a disposable checkout holding a READY issue (the move writes the record)",
        ),
        writes_repository=True,
    ),
    declare.query(
        "validate",
        title="Validate the plan",
        description=(
            "The findings of the derivation (FAIL or WARN) in derivation order, those of one `code` and/or "
            "`level` when asked; `valid`, `failures`, `warnings` and `counts` (by level and by code) always "
            "count every finding. `valid` is false when any finding is a failure, and `svc plan validate` then "
            "exits 10."
        ),
        input=ValidateInput,
        output=PlanValidation,
        read=validate,
        examples=(Example(name="validate"),),
        http="GET /api/v1/plan/validate",
        tool="svc_plan_validate",
        cli="plan validate",
        cli_verdict="valid",
    ),
    declare.query(
        "waves",
        title="Execution waves",
        description=(
            "The execution waves lowest first (an issue enters a wave once every dependency has left), with "
            "the issues in full, and the scope overlaps that serialise two issues of one wave."
        ),
        input=MilestoneFilter,
        output=PlanWaveReport,
        read=waves,
        examples=(Example(name="waves"),),
        http="GET /api/v1/plan/waves",
        tool="svc_plan_waves",
        cli="plan waves",
    ),
)
