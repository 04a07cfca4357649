"""The shapes of mesh cooperation: answers of the cooperation capabilities and the inputs of its writes and filters.

Answers are plain msgspec Structs; optional fields are omitted when empty, except where every field always
appears (`ClaimView`, the counters and tallies, `CooperationStatus`, whose shape is the same whether or not
cooperation runs). Inputs refuse unknown fields; identifiers are 1-64 of `[A-Za-z0-9._:#-]`, keys are
`<stream>/<id>`, a stream is `<node>-<runtime>-<instance>` and a runtime key `<node>-<runtime>`.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

import msgspec
from msgspec import Meta

from svc.mesh_udp._trust import TrustState
from svc.mesh_udp._views import DoctorCheck

__all__ = [
    "IDENTIFIER_PATTERN",
    "ClaimInput",
    "ClaimMode",
    "ClaimOverlap",
    "ClaimStanding",
    "ClaimState",
    "ClaimView",
    "ConsumeAnswer",
    "CooperationCounters",
    "CooperationState",
    "CooperationStatus",
    "Durability",
    "EventList",
    "EventView",
    "HandoverConsumeInput",
    "HandoverPublishInput",
    "HandoverView",
    "JournalTallies",
    "LinkState",
    "Liveness",
    "MachineView",
    "MeshEventsInput",
    "MeshKind",
    "MeshStateAnswer",
    "MeshVerifyReport",
    "PeerDetail",
    "PeerInput",
    "PeerTree",
    "PeerView",
    "RefusalCode",
    "RefusedView",
    "ReleaseInput",
    "RepositoryView",
    "ReviewAnswerInput",
    "ReviewAnswerView",
    "ReviewRequestInput",
    "ReviewState",
    "ReviewView",
    "ReviewWithdrawInput",
    "RuntimeView",
    "SessionCloseInput",
    "SessionInput",
    "SessionRow",
    "SessionState",
    "SessionView",
    "StateFilter",
    "StreamView",
    "Verdict",
    "VerifyCheck",
    "VerifyPeer",
    "Written",
]

#: An identifier of the mesh (session, claim, review, task, issue, ...): 1-64 of `[A-Za-z0-9._:#-]`.
IDENTIFIER_PATTERN: Final = r"^[A-Za-z0-9._:#-]{1,64}$"
_RUNTIME_PATTERN: Final = r"^[0-9a-f]{32}(-[0-9a-f]{16})?$"
_STREAM = r"[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{16}"
_CLAIM_KEY_PATTERN: Final = rf"^{_STREAM}/c-[0-9a-f]{{12}}$"
_REVIEW_KEY_PATTERN: Final = rf"^{_STREAM}/r-[0-9a-f]{{12}}$"
_SESSION_PATTERN: Final = rf"^({_STREAM}/)?[A-Za-z0-9._:#-]{{1,64}}$"
_WITHDRAW_NOTE_PATTERN: Final = r"^(done|void|superseded)(: [\s\S]*)?$"
_LINE_PATTERN: Final = "^[^\r\n\x0b\x0c\x1c-\x1e\x85\u2028\u2029]*$"
_PATH_PATTERN: Final = r"^(?!/)(?!(.*/)?\.\.(/|$))[^\x00-\x1f\x7f]+$"
_HANDOVER_PATTERN: Final = r"^[0-9a-f]{32}$"

ClaimMode = Literal["exclusive", "advisory"]
ClaimStanding = Literal["held", "released", "expired", "conflicted"]
SessionState = Literal["active", "closed", "expired"]
ReviewState = Literal["open", "answered", "withdrawn", "expired"]
Verdict = Literal["approved", "changes_requested", "commented"]
Durability = Literal["synced", "memory", "not_durable"]
Liveness = Literal["own", "live", "expired"]
LinkState = Literal["connecting", "connected", "degraded", "unreachable", "expired"]
MeshKind = Literal["sessions", "claims", "overlaps", "handovers", "reviews"]
RefusalCode = Literal[
    "not_active",
    "oversized",
    "malformed",
    "signature",
    "stale",
    "protocol_unsupported",
    "self_link",
    "repository_mismatch",
    "untrusted",
    "replay",
    "capacity",
    "unknown_link",
    "feature_unsupported",
]

#: Two paths that meet: the first claim's, then the second's (an array of exactly two).
PathPair = Annotated[list[str], Meta(min_length=2, max_length=2)]

#: A uint64 count or stamp.
UInt = Annotated[int, Meta(ge=0)]

# ---------------------------------------------------------------------------------------------------------------
# The fold


class ClaimState(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Where a claim stands.

    `held`; `released`; `expired` with `detail` saying why (its session closed, or its runtime stopped
    beating); `conflicted` with `detail` the key of the claim that won its scope. Live claims are `held` and
    `conflicted`.
    """

    state: ClaimStanding
    detail: str | None = None


class ClaimView(msgspec.Struct, frozen=True, kw_only=True):
    """One claim on repository paths (every field always appears; `intent` and `issue` are null when absent).

    `key` is `<stream>/<claim id>`, `runtime` the writer's `<node>-<runtime>`, `session` the holder's session
    key; `scope` the repository-relative paths claimed; `acquired_lamport` and `acquired_seq` the stamp and the
    sequence of the event that acquired it (the ranking of exclusive claims).
    """

    key: str
    stream: str
    runtime: str
    session: str
    scope: list[str]
    intent: str | None
    mode: ClaimMode
    issue: str | None
    acquired_lamport: int
    acquired_seq: int
    state: ClaimState


class ClaimOverlap(msgspec.Struct, frozen=True, kw_only=True):
    """Two live claims of different sessions, not both exclusive, whose paths meet.

    `first` and `second` are claim keys in key order; `paths` the pairs (first's path, second's path) that meet.
    """

    first: str
    second: str
    paths: list[PathPair]


class SessionView(msgspec.Struct, frozen=True, kw_only=True):
    """One working session of a runtime.

    `key` is `<stream>/<session id>`; `info` the latest word of the session (client, worker, intent, task,
    issue, milestone, checkout, branch, head, dirty, context); `state` `active`, `closed`, or `expired` when its
    runtime stopped beating; `updated_lamport` the stamp of its latest event.
    """

    key: str
    stream: str
    runtime: str
    node: str
    info: dict[str, Any]
    state: SessionState
    updated_lamport: int


class HandoverView(msgspec.Struct, frozen=True, kw_only=True):
    """A published handover.

    Its id (first 32 hex of SHA-256 of the body), who published it and when, the handover itself (task,
    issue, milestone, branch, head, created_at, name, body), and the session keys that took it, in order.
    """

    id: str
    stream: str
    runtime: str
    published_lamport: int
    handover: dict[str, Any]
    consumed_by: list[str]


class ReviewAnswerView(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One answer to a review request: the answering session key, its verdict and note."""

    session: str
    verdict: Verdict
    note: str | None = None


class ReviewView(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A review request.

    `key` is `<stream>/<review id>`, `session` the asking session key, `subject` a branch, commit or pull
    request; the paths, the issue and the runtime asked (when named); its state and how it ended (`ending`: the
    withdrawal note, or why it expired); `answers` in order; `requested_lamport` the stamp of the request.
    """

    key: str
    session: str
    subject: str
    scope: list[str]
    state: ReviewState
    requested_lamport: int
    answers: list[ReviewAnswerView]
    issue: str | None = None
    reviewer: str | None = None
    ending: str | None = None


class CooperationState(msgspec.Struct, frozen=True, kw_only=True):
    """The fold of the journal.

    Every collection sorted by key, uninterpreted events counted, and the digest (32 hex of SHA-256 of the
    canonical JSON of the rest; equal digests mean equal state).
    """

    sessions: list[SessionView]
    claims: list[ClaimView]
    overlaps: list[ClaimOverlap]
    handovers: list[HandoverView]
    reviews: list[ReviewView]
    opaque_events: int
    digest: str


# ---------------------------------------------------------------------------------------------------------------
# Journal, writes, events


class JournalTallies(msgspec.Struct, frozen=True, kw_only=True):
    """The journal in numbers.

    Streams and events held, own events written, events received, duplicates, rejected (every reason),
    pending (waiting for a gap to fill), compacted (events dropped with their streams), opaque (events of kinds
    this runtime does not interpret), and the highest Lamport stamp seen.
    """

    streams: int = 0
    events: int = 0
    written: int = 0
    received: int = 0
    duplicates: int = 0
    rejected: int = 0
    pending: int = 0
    compacted: int = 0
    opaque: int = 0
    lamport: int = 0


class Written(msgspec.Struct, frozen=True, kw_only=True):
    """A write's answer.

    The key of what it wrote, the event id `<stream>/<seq>`, its Lamport stamp, and its durability
    (`synced`: fsynced before the append returned; `memory`: the journal has no file; `not_durable`: the file
    write failed, the event is held in memory and replicated only).
    """

    key: str
    event: str
    lamport: int
    durability: Durability


class ConsumeAnswer(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """`mesh.handover.consume`: the handover taken.

    The handover, the consumption written, and the local record's repository-relative path when
    materialized.
    """

    handover: HandoverView
    written: Written
    path: str | None = None


class EventView(msgspec.Struct, frozen=True, kw_only=True):
    """One journal event: stream, sequence, Lamport stamp, time written, repository, signing key, kind, body."""

    stream: str
    seq: int
    lamport: int
    at: str
    repo: str
    pk: str
    kind: str
    body: dict[str, Any]


class EventList(msgspec.Struct, frozen=True, kw_only=True):
    """`mesh.events`: events in Lamport order.

    `lamport` is the next page's `after` (with `newest`, the newest stamp held).
    """

    active: bool
    count: int
    lamport: int
    events: list[EventView]


# ---------------------------------------------------------------------------------------------------------------
# Links and status


class CooperationCounters(msgspec.Struct, frozen=True, kw_only=True):
    """Monotonic counters, never reset.

    Handshakes dialed and answered, failed dials, sync rounds dialed, failed and answered, events sent and
    served, reconnects, restarts of peers, expired peers, refused claims, link tasks started; refusals given
    (`refused_in`) and received (`refused_out`) by code.
    """

    handshakes_out: int = 0
    handshakes_in: int = 0
    dial_failures: int = 0
    syncs_out: int = 0
    syncs_failed: int = 0
    syncs_in: int = 0
    events_sent: int = 0
    events_served: int = 0
    reconnects: int = 0
    restarts: int = 0
    peers_expired: int = 0
    claims_refused: int = 0
    threads: int = 0
    refused_in: dict[str, int] = msgspec.field(default_factory=dict)
    refused_out: dict[str, int] = msgspec.field(default_factory=dict)


class PeerView(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One linked runtime.

    Its runtime key, node, instance, name and version; whether it runs on this machine; its trust; the
    protocol agreed and its features and endpoints; the link state, whether this runtime dials it (`outbound`)
    and is dialed by it (`inbound`), the endpoint dialed, milliseconds since the last exchange, the last round
    trip, consecutive failures and the last error; handshakes, reconnects and restarts seen; and when the link
    was first made.
    """

    runtime: str
    node: str
    instance: str
    name: str
    version: str
    local: bool
    trust: TrustState
    protocol: int
    features: list[str]
    endpoints: list[str]
    state: LinkState
    outbound: bool
    inbound: bool
    failures: int
    handshakes: int
    reconnects: int
    restarts: int
    linked_at: str
    endpoint: str | None = None
    last_exchange_ms: int | None = None
    rtt_ms: int | None = None
    last_error: str | None = None


class RefusedView(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A refused link.

    The endpoint dialed (or `inbound:<runtime>`), whether the refusal was received dialing out or given to
    a caller, the runtime when known, the refusal code and when.
    """

    endpoint: str
    direction: Literal["outbound", "inbound"]
    refusal: RefusalCode
    at: str
    runtime: str | None = None


class RepositoryView(msgspec.Struct, frozen=True, kw_only=True):
    """The repository identity links are matched on.

    The id, whether declared or derived from the root commits, and how it was found.
    """

    id: str
    basis: Literal["declared", "root_commits"]
    detail: str


def _protocol_range() -> list[int]:
    return [1, 1]


class CooperationStatus(msgspec.Struct, frozen=True, kw_only=True):
    """`mesh.cooperation`: whether cooperation runs and why not.

    This runtime and its stream; the repository; the protocol range and features spoken; heartbeat and
    expiry; endpoints advertised and seeds declared; peers and refused links; counters; the journal tallies;
    and when it started. Inactive, the same shape states the reason and the protocol range.
    """

    active: bool
    reason: str | None = None
    runtime: str | None = None
    stream: str | None = None
    repository: RepositoryView | None = None
    protocol: list[int] = msgspec.field(default_factory=_protocol_range)
    features: list[str] = msgspec.field(default_factory=list)
    heartbeat_seconds: UInt = 5
    expiry_seconds: UInt = 30
    endpoints: list[str] = msgspec.field(default_factory=list)
    seeds: list[str] = msgspec.field(default_factory=list)
    peers: list[PeerView] = msgspec.field(default_factory=list)
    refused: list[RefusedView] = msgspec.field(default_factory=list)
    counters: CooperationCounters = msgspec.field(default_factory=CooperationCounters)
    journal: JournalTallies = msgspec.field(default_factory=JournalTallies)
    started_at: str | None = None


class SessionRow(msgspec.Struct, frozen=True, kw_only=True):
    """A session in the peer tree: its key, latest info, state, and its claims and review requests."""

    key: str
    info: dict[str, Any]
    state: SessionState
    claims: list[ClaimView]
    reviews: list[ReviewView]


class RuntimeView(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A runtime in the peer tree.

    Its key, whether it is this runtime, its liveness (`own`, `live`, `expired`), milliseconds since its
    last beat, the state of the link to it, and its sessions.
    """

    runtime: str
    this_runtime: bool
    liveness: Liveness
    sessions: list[SessionRow]
    last_beat_ms: int | None = None
    link: LinkState | None = None


class MachineView(msgspec.Struct, frozen=True, kw_only=True):
    """A machine (node) in the peer tree: its node id, name, whether it is this machine, and its runtimes."""

    node: str
    name: str
    local: bool
    runtimes: list[RuntimeView]


class PeerTree(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """`mesh.peers`: machine, runtime, session, claim, local machine first.

    Also the refused links and the digest of the whole fold.
    """

    active: bool
    machines: list[MachineView] = msgspec.field(default_factory=list)
    refused: list[RefusedView] = msgspec.field(default_factory=list)
    reason: str | None = None
    runtime: str | None = None
    repository: str | None = None
    digest: str | None = None


class PeerDetail(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """`mesh.peer`: one runtime.

    Whether it is known and why not, its machine and runtime rows, its link, and the refused links that
    name it.
    """

    found: bool
    refused: list[RefusedView] = msgspec.field(default_factory=list)
    reason: str | None = None
    machine: MachineView | None = None
    runtime: RuntimeView | None = None
    peer: PeerView | None = None


class StreamView(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A journal stream: its id, its liveness and milliseconds since its last beat."""

    stream: str
    liveness: Liveness
    last_beat_ms: int | None = None


class MeshStateAnswer(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """`mesh.state`: the folded state as filtered (the digest covers the whole fold) and every stream held."""

    active: bool
    streams: list[StreamView] = msgspec.field(default_factory=list)
    reason: str | None = None
    state: CooperationState | None = None


#: One check of `mesh.verify` (the same shape as a doctor check).
VerifyCheck = DoctorCheck


class VerifyPeer(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One peer in `mesh.verify`.

    Its runtime key and link state, whether this runtime dials it, whether the timed round came back and in
    how many milliseconds, whether both sides hold equal high-water marks for every stream, and what was
    found.
    """

    runtime: str
    state: LinkState
    dialed: bool
    detail: str
    round_trip: bool | None = None
    rtt_ms: int | None = None
    converged: bool | None = None


class MeshVerifyReport(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """`mesh.verify`: live checks and one timed round per peer.

    `ok` when every check passes and no non-expired peer's round failed; the checks, the peers, and the
    digest of this runtime's fold.
    """

    ok: bool
    checks: list[DoctorCheck]
    peers: list[VerifyPeer] = msgspec.field(default_factory=list)
    runtime: str | None = None
    digest: str | None = None


# ---------------------------------------------------------------------------------------------------------------
# Inputs

_Identifier = Annotated[str, Meta(pattern=IDENTIFIER_PATTERN)]
_Path = Annotated[str, Meta(min_length=1, max_length=1024, pattern=_PATH_PATTERN)]
_Scope = Annotated[list[_Path], Meta(min_length=1, max_length=64)]
_Line = Annotated[str, Meta(max_length=512, pattern=_LINE_PATTERN)]
_Client = Annotated[str, Meta(min_length=1, max_length=256, pattern=_LINE_PATTERN)]


class ClaimInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Input of `mesh.claim`."""

    scope: Annotated[
        _Scope,
        Meta(
            description="the repository-relative paths claimed (1-64; no leading `/`, no `..`)",
            extra={"metavar": "PATH"},
        ),
    ]
    session: Annotated[
        Annotated[str, Meta(pattern=IDENTIFIER_PATTERN)] | None,
        Meta(description="the holding session's id (default: the calling MCP session; opened when new)"),
    ] = None
    client: Annotated[
        _Client | None,
        Meta(description="the client recorded when the session is opened here (default `cli`)"),
    ] = None
    intent: Annotated[
        Annotated[str, Meta(max_length=512)] | None,
        Meta(description="what the holder means to do with the paths"),
    ] = None
    mode: Annotated[
        ClaimMode | None,
        Meta(
            description="`exclusive` (default: refused when it meets a live exclusive claim) or `advisory`",
            extra={
                "switch": "advisory",
                "switch_help": "claim as `advisory`: recorded and its overlaps reported, never refused",
            },
        ),
    ] = None
    issue: Annotated[_Line | None, Meta(description="the plan issue the work is for")] = None
    task: Annotated[_Line | None, Meta(description="the task recorded when the session is opened here")] = None


class ReleaseInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Input of `mesh.release`."""

    claim: Annotated[
        str,
        Meta(pattern=_CLAIM_KEY_PATTERN, description="the claim key, `<stream>/c-<12 hex>`", extra={"metavar": "KEY"}),
    ]


class SessionInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Input of `mesh.session.open` (a later word replaces an earlier one)."""

    session: Annotated[str, Meta(pattern=IDENTIFIER_PATTERN, description="the session's id")]
    client: Annotated[_Client | None, Meta(description="the client the session runs in (default `cli`)")] = None
    worker: Annotated[_Line | None, Meta(description="the worker or agent running the session")] = None
    intent: Annotated[
        Annotated[str, Meta(max_length=512)] | None,
        Meta(description="what the session is doing"),
    ] = None
    task: Annotated[_Line | None, Meta(description="the task worked on")] = None
    issue: Annotated[_Line | None, Meta(description="the plan issue worked on")] = None
    milestone: Annotated[_Line | None, Meta(description="the plan milestone worked on")] = None
    branch: Annotated[_Line | None, Meta(description="the checkout's branch")] = None
    head: Annotated[_Line | None, Meta(description="the checkout's head commit")] = None
    dirty: Annotated[bool | None, Meta(description="whether the checkout has uncommitted changes")] = None
    context: Annotated[_Line | None, Meta(description="the revision of the context the session works from")] = None


class SessionCloseInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Input of `mesh.session.close` (every claim of the session ends everywhere)."""

    session: Annotated[str, Meta(pattern=IDENTIFIER_PATTERN, description="the session's id")]


class HandoverPublishInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Input of `mesh.handover.publish` (an empty object publishes the newest handover record)."""

    name: Annotated[
        Annotated[str, Meta(min_length=1, max_length=255, pattern=r"^[^/\\\r\n]+$")] | None,
        Meta(description="the handover record to publish, by file name (default: the newest)"),
    ] = None
    issue: Annotated[_Line | None, Meta(description="the plan issue the handover carries")] = None
    milestone: Annotated[_Line | None, Meta(description="the plan milestone the handover carries")] = None


class HandoverConsumeInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Input of `mesh.handover.consume`."""

    handover: Annotated[str, Meta(pattern=_HANDOVER_PATTERN, description="the handover id (32 hex)")]
    session: Annotated[str, Meta(pattern=IDENTIFIER_PATTERN, description="the taking session's id")]
    materialize: Annotated[
        bool,
        Meta(description="also write a local handover record this checkout's `handover --resolve` finds"),
    ] = False


class ReviewRequestInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Input of `mesh.review.request`."""

    subject: Annotated[
        Annotated[str, Meta(min_length=1, max_length=256, pattern=_LINE_PATTERN)],
        Meta(description="what to review: a branch, a commit or a pull request"),
    ]
    scope: Annotated[
        _Scope, Meta(description="the repository-relative paths to review (1-64)", extra={"metavar": "PATH"})
    ]
    session: Annotated[
        _Identifier | None,
        Meta(description="the asking session's id (default: the calling MCP session)"),
    ] = None
    issue: Annotated[_Line | None, Meta(description="the plan issue the change is for")] = None
    reviewer: Annotated[
        Annotated[str, Meta(pattern=_RUNTIME_PATTERN)] | None,
        Meta(description="the runtime asked (`<node>-<runtime>`); it must be linked and serve reviews"),
    ] = None


class ReviewAnswerInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Input of `mesh.review.answer`."""

    request: Annotated[
        str,
        Meta(pattern=_REVIEW_KEY_PATTERN, description="the review request key, `<stream>/r-<12 hex>`"),
    ]
    verdict: Annotated[Verdict, Meta(description="`approved`, `changes_requested` or `commented`")]
    session: Annotated[
        _Identifier | None,
        Meta(description="the answering session's id (default: the calling MCP session)"),
    ] = None
    note: Annotated[Annotated[str, Meta(max_length=2048)] | None, Meta(description="what the reviewer says")] = None


class ReviewWithdrawInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Input of `mesh.review.withdraw` (only a session of the asking runtime; never counted as an answer)."""

    request: Annotated[
        str,
        Meta(pattern=_REVIEW_KEY_PATTERN, description="the review request key, `<stream>/r-<12 hex>`"),
    ]
    note: Annotated[
        Annotated[str, Meta(max_length=2048, pattern=_WITHDRAW_NOTE_PATTERN)],
        Meta(description="how the request ends: `done`, `void` or `superseded`, optionally followed by `: text`"),
    ]
    session: Annotated[
        _Identifier | None,
        Meta(description="the withdrawing session's id (default: the calling MCP session)"),
    ] = None


class StateFilter(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Filters of `mesh.peers` and `mesh.state` (the digest always covers the whole fold)."""

    view: Annotated[
        Literal["summary", "full"],
        Meta(description="`summary` (only active sessions) or `full`"),
    ] = "summary"
    claims: Annotated[
        Literal["all", "live"],
        Meta(description="`all` claims or only `live` ones (held or conflicted)"),
    ] = "all"
    after: Annotated[
        UInt,
        Meta(
            description=(
                "only sessions, claims and handovers with a later Lamport stamp (reviews and overlaps follow "
                "their sessions and claims)"
            )
        ),
    ] = 0
    session: Annotated[
        Annotated[str, Meta(pattern=_SESSION_PATTERN)] | None,
        Meta(description="one session: its key `<stream>/<session>` or its bare id"),
    ] = None
    runtime: Annotated[
        Annotated[str, Meta(pattern=_RUNTIME_PATTERN)] | None,
        Meta(description="one runtime: `<node>-<runtime>`, or a node id (its first runtime)"),
    ] = None
    kind: Annotated[
        MeshKind | None,
        Meta(description="one collection (`sessions`, `claims`, `overlaps`, `handovers`, `reviews`); others empty"),
    ] = None
    limit: Annotated[
        UInt | None,
        Meta(description="at most this many per collection, the newest by Lamport stamp"),
    ] = None
    open: Annotated[
        bool,
        Meta(description="only active sessions, live claims, unanswered review requests and untaken handovers"),
    ] = False
    matching: Annotated[
        Annotated[str, Meta(max_length=256)] | None,
        Meta(description="case-insensitive text in a path, branch, issue, pull request, intent or subject"),
    ] = None


class MeshEventsInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Input of `mesh.events`."""

    after: Annotated[UInt, Meta(description="only events with a later Lamport stamp")] = 0
    limit: Annotated[
        Annotated[int, Meta(ge=1, le=1000)],
        Meta(description="at most this many events (default 100, at most 1000)"),
    ] = 100
    newest: Annotated[
        bool,
        Meta(description="the newest `limit` events above `after` (still in Lamport order)"),
    ] = False


class PeerInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Input of `mesh.peer`."""

    runtime: Annotated[
        str,
        Meta(pattern=_RUNTIME_PATTERN, description="the runtime: `<node>-<runtime>`, or a node id (its first runtime)"),
    ]
