"""The plan types of the specification, as msgspec Structs with the field names the spec writes.

`Plan` and its parts are what derivation produces; the other Structs are the answers of the read
capabilities (`plan.next`, `plan.status`, ...) and of `plan.transition`. Every list is in the order the
spec names: records in id byte order, waves lowest first, edges sorted, findings in derivation order.
`from` is a Python keyword, so the two Structs carrying it name the attribute `from_` and encode `from`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

import msgspec
from msgspec import Meta

__all__ = [
    "FINDING_CODES",
    "FINDING_LEVELS",
    "ISSUE_STATUSES",
    "MILESTONE_STATUSES",
    "FindingCode",
    "FindingLevel",
    "Plan",
    "PlanCounts",
    "PlanEdge",
    "PlanFinding",
    "PlanFindingCounts",
    "PlanIssue",
    "PlanIssueList",
    "PlanIssueRecord",
    "PlanMilestone",
    "PlanMilestoneProgress",
    "PlanMilestoneRecord",
    "PlanNextIssue",
    "PlanProject",
    "PlanRoadmap",
    "PlanSkipped",
    "PlanStatusReport",
    "PlanTake",
    "PlanTransition",
    "PlanTransitionResult",
    "PlanUnprovenStamp",
    "PlanValidation",
    "PlanVocabulary",
    "PlanWave",
    "PlanWaveReport",
    "PlanWaveView",
    "UnprovenReason",
    "vocabulary",
]

#: The issue statuses, in derivation order (docs/plan.md).
ISSUE_STATUSES: tuple[str, ...] = ("READY", "BLOCKED", "ACTIVE", "VERIFY", "DONE", "CANCELLED")
#: The milestone statuses, in derivation order.
MILESTONE_STATUSES: tuple[str, ...] = (
    "PLANNED",
    "BLOCKED",
    "ACTIVE",
    "VERIFY",
    "DONE",
    "CANCELLED",
    "SUPERSEDED",
)

UInt = Annotated[int, Meta(ge=0)]
UInt32 = Annotated[int, Meta(ge=0, le=4_294_967_295)]
PlanTransition = Literal["start", "verify", "done"]
#: The level of a finding: a failure makes the plan invalid, a warning does not.
FindingLevel = Literal["FAIL", "WARN"]
#: Every finding code svc reports (docs/plan.md): the loader's, then derivation's in step order.
FindingCode = Literal[
    "layer",
    "unreadable",
    "schema",
    "self_dependency",
    "unknown_dependency",
    "duplicate_dependency",
    "no_milestone",
    "unknown_milestone",
    "no_acceptance",
    "no_validation",
    "no_evidence_required",
    "stamp_without_event",
    "ledger_gap",
    "evidence_missing",
    "cycle",
    "premature_execution",
    "milestone_self_dependency",
    "milestone_unknown_dependency",
    "milestone_duplicate_dependency",
    "milestone_cycle",
    "milestone_evidence_missing",
    "milestone_premature",
    "empty_milestone",
    "scope_conflict",
    "undeclared_status",
]
#: Why a written stamp proves nothing (`PlanUnprovenStamp.reason`).
UnprovenReason = Literal["foreign_domain", "wrong_seal", "late_excuse", "unsealed"]
FINDING_LEVELS: tuple[FindingLevel, ...] = get_args(FindingLevel)
FINDING_CODES: tuple[FindingCode, ...] = get_args(FindingCode)


class PlanProject(msgspec.Struct, frozen=True, kw_only=True):
    """The plan's header; `active_milestone` is derived on every read and stored nowhere."""

    name: str
    repository: str
    default_branch: str
    active_milestone: str


class PlanVocabulary(msgspec.Struct, frozen=True, kw_only=True):
    """The status vocabularies, each in derivation order."""

    issue: list[str]
    milestone: list[str]


def vocabulary() -> PlanVocabulary:
    """The declared vocabularies, sent with every answer that carries statuses."""
    return PlanVocabulary(issue=list(ISSUE_STATUSES), milestone=list(MILESTONE_STATUSES))


class PlanCounts(msgspec.Struct, frozen=True, kw_only=True):
    """Issues counted: every one, the required ones (total less cancelled), and one entry per status."""

    total: UInt32
    required: UInt32
    by_status: dict[str, UInt32]


# The Structs a plan holds one of per issue, edge or finding are not tracked by the cyclic garbage collector
# (`gc=False`): they hold text, numbers and lists of text, so no cycle can pass through them, and a 10,000-issue
# plan leaves the collector's first pass over it half as long.


class PlanEdge(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One dependency edge: `from` must be real before `to`."""

    from_: str = msgspec.field(name="from")
    to: str


class PlanFinding(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One validation finding; a `FAIL` makes the model invalid."""

    level: Literal["FAIL", "WARN"]
    code: str
    subject: str
    message: str


class PlanIssue(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One issue as its record declares it and as the graph derives it.

    The stamps are shown as written (empty when absent), proven or not.
    """

    id: str
    milestone: str
    status: str
    wave: UInt32
    priority: str
    profile: str
    parallel_safe: bool
    title: str
    slug: str
    depends_on: list[str]
    blocked_by: list[str]
    dependents: list[str]
    scope: list[str]
    serves: list[str]
    objective: str
    evidence_have: UInt32
    evidence_need: UInt32
    started_at: str
    verified_at: str
    completed_at: str


class PlanMilestone(msgspec.Struct, frozen=True, kw_only=True):
    """One milestone as its record declares it and as the two graphs derive it."""

    id: str
    status: str
    order: int
    priority: str
    title: str
    slug: str
    version: str
    rank: UInt32
    depends_on: list[str]
    blocked_by: list[str]
    dependents: list[str]
    claims: list[str]
    counts: PlanCounts
    issues: list[str]
    outcome: str


class PlanWave(msgspec.Struct, frozen=True, kw_only=True):
    """One execution wave: the issues the graph lets run together, in id order."""

    wave: UInt32
    issues: list[str]


class Plan(msgspec.Struct, frozen=True, kw_only=True):
    """The whole derived plan (`plan.model`)."""

    project: PlanProject
    statuses: PlanVocabulary
    milestones: list[PlanMilestone]
    issues: list[PlanIssue]
    waves: list[PlanWave]
    edges: list[PlanEdge]
    milestone_edges: list[PlanEdge]
    findings: list[PlanFinding]


class PlanMilestoneProgress(msgspec.Struct, frozen=True, kw_only=True):
    """A milestone's status and counts (`plan.status`)."""

    id: str
    status: str
    title: str
    counts: PlanCounts


class PlanIssueList(msgspec.Struct, frozen=True, kw_only=True):
    """`plan.issues`: the issues matching the filters, in id order."""

    issues: list[PlanIssue]
    total: UInt
    statuses: PlanVocabulary


class PlanUnprovenStamp(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A stamp written in an issue record that proves nothing, so it moves no status, and why."""

    field: Annotated[str, Meta(description="the stamp field: started_at, verified_at or completed_at")]
    stamp: Annotated[str, Meta(description="the stamp as written")]
    event: Annotated[str, Meta(description="the ledger event the stamp's seal would prove")]
    reason: Annotated[
        UnprovenReason,
        Meta(
            description=(
                "foreign_domain: sealed under another tool's seal domain (`svc plan reseal` re-seals it); "
                "wrong_seal: the seal field does not seal this stamp; late_excuse: unsealed_stamps lists it but "
                "it is not before the legacy cut-off; unsealed: no seal and not listed in unsealed_stamps"
            )
        ),
    ]
    domain: Annotated[str | None, Meta(description="the seal domain that proves it (foreign_domain only)")] = None
    message: Annotated[str, Meta(description="why the stamp does not count, and what proves it")]


_FAILURES = Meta(description="the failures (FAIL findings) of the whole plan; the plan is valid when there is none")
_FAILURES_COMMAND = Meta(description="the command that lists the failures; present when there is one")


class PlanSkipped(msgspec.Struct, frozen=True, kw_only=True):
    """A READY issue passed over for a session: a live claim of another session meets its scope or names it."""

    issue: Annotated[str, Meta(description="the issue passed over")]
    claim: Annotated[str, Meta(description="the claim met (its key, <stream>/<claim id>)")]
    session: Annotated[str, Meta(description="the session holding that claim (a session key)")]
    runtime: Annotated[str, Meta(description="the runtime that wrote it (<node>-<runtime>)")]


class PlanNextIssue(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """`plan.next`: the issue to take now, or why there is none; and what a person should know about it."""

    issue: PlanIssue | None = None
    active_milestone: str
    reason: str | None = None
    session: Annotated[
        str | None,
        Meta(description="the session key the answer was made for (only when a session was named or implied)"),
    ] = None
    skipped: Annotated[
        list[PlanSkipped],
        Meta(description="READY issues passed over for live claims of other sessions, best first (omitted when none)"),
    ] = msgspec.field(default_factory=list)
    failures: Annotated[UInt, _FAILURES]
    failures_command: Annotated[str | None, _FAILURES_COMMAND] = None
    unproven_stamps: Annotated[
        list[PlanUnprovenStamp],
        Meta(description="stamps the recommended issue's record carries that prove nothing (omitted when none)"),
    ] = msgspec.field(default_factory=list)
    notes: Annotated[
        list[str],
        Meta(description="sentences for a person: the plan is invalid; why an issue that looks finished is READY"),
    ] = msgspec.field(default_factory=list)


class PlanRoadmap(msgspec.Struct, frozen=True, kw_only=True):
    """`plan.roadmap`: milestones by (rank, order, id), the one to work on now and the one after it."""

    milestones: list[PlanMilestone]
    now: str | None
    next: str | None


class PlanStatusReport(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """`plan.status`: per-milestone progress, the next ready issue and the counts."""

    project: PlanProject
    statuses: PlanVocabulary
    milestones: list[PlanMilestoneProgress]
    next_ready: PlanIssue | None = None
    counts: PlanCounts
    failures: Annotated[UInt, _FAILURES]
    failures_command: Annotated[str | None, _FAILURES_COMMAND] = None


class PlanFindingCounts(msgspec.Struct, frozen=True, kw_only=True):
    """How many findings the plan has, by level and by code, whatever filter chose the findings shown."""

    by_level: Annotated[dict[str, UInt], Meta(description="FAIL and WARN, both always present")]
    by_code: Annotated[dict[str, UInt], Meta(description="each code that has a finding, in code order")]


class PlanValidation(msgspec.Struct, frozen=True, kw_only=True):
    """`plan.validate`: valid when no finding is a failure.

    `valid`, `failures`, `warnings` and `counts` count every finding; `findings` holds those the filters chose.
    """

    valid: bool
    milestones: UInt
    issues: UInt
    failures: UInt
    warnings: UInt
    counts: PlanFindingCounts
    findings: Annotated[
        list[PlanFinding], Meta(description="the findings of the code and level asked for (all without a filter)")
    ]


class PlanWaveView(msgspec.Struct, frozen=True, kw_only=True):
    """One wave with its issues in full."""

    wave: UInt32
    issues: list[PlanIssue]


class PlanWaveReport(msgspec.Struct, frozen=True, kw_only=True):
    """`plan.waves`: the waves lowest first and the scope overlaps that serialise issues of one wave."""

    waves: list[PlanWaveView]
    serialised_by_scope: list[PlanFinding]


class PlanMilestoneRecord(msgspec.Struct, frozen=True, kw_only=True, tag="milestone", tag_field="kind"):
    """`plan.record` of a milestone: the authored mapping, the derived milestone and its issues in full."""

    id: str
    path: str
    record: dict[str, Any]
    derived: PlanMilestone
    issues: list[PlanIssue]
    findings: list[PlanFinding]


class PlanIssueRecord(msgspec.Struct, frozen=True, kw_only=True, tag="issue", tag_field="kind"):
    """`plan.record` of an issue: the authored mapping, the derived issue and the issues it waits on."""

    id: str
    path: str
    record: dict[str, Any]
    derived: PlanIssue
    issues: list[PlanIssue]
    findings: list[PlanFinding]


Durability = Literal["synced", "memory", "not_durable"]


class PlanTake(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """`plan.take`: the issue claimed for the session in one step, or why none was."""

    taken: Annotated[bool, Meta(description="whether the session holds a claim on an issue now")]
    session: Annotated[str, Meta(description="the session key the issue was taken for")]
    issue: Annotated[PlanIssue | None, Meta(description="the issue taken (absent when nothing was)")] = None
    claim: Annotated[str | None, Meta(description="the exclusive claim on its scope, with the issue id on it")] = None
    scope: Annotated[list[str], Meta(description="the paths claimed: the issue's scope, else its record file")] = (
        msgspec.field(default_factory=list)
    )
    existing: Annotated[bool, Meta(description="the session already held this claim; nothing was written")] = False
    lamport: Annotated[int | None, Meta(description="the Lamport stamp of the claim's event")] = None
    durability: Annotated[Durability | None, Meta(description="how the claim's event was kept")] = None
    released: Annotated[
        list[str],
        Meta(description="the session's conflicted claims released first: they lost their scope (omitted when none)"),
    ] = msgspec.field(default_factory=list)
    skipped: Annotated[
        list[PlanSkipped], Meta(description="READY issues passed over for live claims of other sessions")
    ] = msgspec.field(default_factory=list)
    reason: Annotated[str | None, Meta(description="why nothing was taken")] = None
    started: Annotated[
        PlanTransitionResult | None, Meta(description="the start move, when `start` was asked (MCP and the CLI)")
    ] = None


class PlanTransitionResult(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """`plan.transition`: what moved, the status before and after, the stamp and the ledger event."""

    issue: str
    transition: PlanTransition
    from_: str = msgspec.field(name="from")
    to: str
    field: str
    at: str
    event: str
    next_ready: str | None = None
