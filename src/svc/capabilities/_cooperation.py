"""`mesh.*` (cooperation): claims, sessions, handovers, review requests, the folded state, peers, events, verify.

Cooperation runs in the serving server, beside discovery (`Mesh.cooperation`). Where it does not run (no
mesh, the mesh or cooperation off, or a process that does not serve the mesh) the queries answer their
inactive shapes with the reason, and every write is refused `not_active: <reason>`.

The journal is svc's own state under `.ai/local/`, not the repository, so the writes are process-state
commands served over HTTP too. `mesh.handover.consume` with `materialize` writes one handover record under
`.ai/local/state/handovers/`, svc's own untracked state as well, so it is allowed over HTTP like the rest.

Sessions: a write that names none takes the calling MCP session, projected as `board-<peer>` (opened when
new, closed when the MCP session ends); over HTTP and the command line a session must be named (400).
"""

from __future__ import annotations

import time
from functools import partial
from typing import TYPE_CHECKING

import msgspec
import trio

from svc._errors import InvalidInput, Refused
from svc.capabilities._mesh import MODULE
from svc.mesh_udp import (
    NOT_RUNNING,
    ClaimInput,
    ConsumeAnswer,
    CooperationStatus,
    DoctorCheck,
    EventList,
    HandoverConsumeInput,
    HandoverPublishInput,
    Mesh,
    MeshEventsInput,
    MeshStateAnswer,
    MeshVerifyReport,
    PeerDetail,
    PeerInput,
    PeerTree,
    ReleaseInput,
    ReviewAnswerInput,
    ReviewRequestInput,
    ReviewWithdrawInput,
    SessionCloseInput,
    SessionInput,
    StateFilter,
    Written,
)
from svc.registry import Benchmark, Declarations, Example, NoInput
from svc.runtime import Context

if TYPE_CHECKING:
    from svc.mesh_udp import Cooperation

#: Writes change the journal, so their examples are no repeatable benchmark case.
_WRITE = Benchmark(policy="waived", reason="transient_state")
#: A stream and ids of the examples (no runtime holds them: on a server they are refused or not found).
_STREAM = "0123456789abcdef0123456789abcdef-0123456789abcdef-fedcba9876543210"
_CLAIM = f"{_STREAM}/c-0123456789ab"
_REVIEW = f"{_STREAM}/r-0123456789ab"
_HANDOVER = "0123456789abcdef0123456789abcdef"
_RUNTIME = "0123456789abcdef0123456789abcdef-0123456789abcdef"
_NO_SESSION = "session is required: only an MCP session stands for its own (board-<peer>)"
_INACTIVE = "on a server where cooperation does not run (svc's own checkout declares no mesh), it is refused (422)"


def cooperation_here(ctx: Context) -> Cooperation | None:
    """This process's cooperation when it runs and nothing refuses it, found without reading anything."""
    mesh = ctx.components.find(Mesh)
    coop = mesh.cooperation if mesh is not None else None
    return coop if coop is not None and coop.reason is None else None


async def running_cooperation(ctx: Context) -> Cooperation | str:
    """This process's cooperation, or why it does not run here (read from the mesh declaration if need be)."""
    mesh = ctx.components.find(Mesh)
    if mesh is None:
        idle = await trio.to_thread.run_sync(Mesh.idle, ctx.runtime.repository)
        return idle.reason or NOT_RUNNING
    if mesh.cooperation is None:
        return mesh.cooperation_reason() or "not started"
    return mesh.cooperation


async def active_cooperation(ctx: Context) -> Cooperation:
    """The running cooperation.

    Raises:
        Refused: `not_active` with the reason.
    """
    found = await running_cooperation(ctx)
    if isinstance(found, str):
        raise Refused(f"not_active: {found}")
    if found.reason is not None:
        raise Refused(f"not_active: {found.reason}")
    return found


def mcp_peer(ctx: Context) -> str | None:
    """The MCP peer id of the caller (None for HTTP, the command line and executions)."""
    return ctx.actor.peer if ctx.actor.kind == "mcp" else None


def named_session(ctx: Context, session: str | None) -> str:
    """The session named, else the calling MCP session's `board-<peer>`.

    Raises:
        InvalidInput: none named and the caller is no MCP session.
    """
    if session is not None:
        return session
    peer = mcp_peer(ctx)
    if peer is None:
        raise InvalidInput(_NO_SESSION)
    from svc.mesh_udp._cooperation import board_session

    return board_session(peer)


# -- queries ------------------------------------------------------------------------------------------------


async def cooperation(ctx: Context, params: NoInput) -> CooperationStatus:
    """Whether cooperation runs and why not; this runtime, links, refusals, counters, the journal."""
    found = await running_cooperation(ctx)
    return CooperationStatus(active=False, reason=found) if isinstance(found, str) else found.status()


async def state(ctx: Context, params: StateFilter) -> MeshStateAnswer:
    """The folded state as filtered, and every stream's liveness."""
    found = await running_cooperation(ctx)
    return MeshStateAnswer(active=False, reason=found) if isinstance(found, str) else found.mesh_state(params)


async def peers(ctx: Context, params: StateFilter) -> PeerTree:
    """Machines, runtimes, sessions, claims, the local machine first."""
    found = await running_cooperation(ctx)
    return PeerTree(active=False, reason=found) if isinstance(found, str) else found.tree(params)


async def peer(ctx: Context, params: PeerInput) -> PeerDetail:
    """One runtime: its machine, sessions, link and refusals."""
    found = await running_cooperation(ctx)
    if isinstance(found, str):
        return PeerDetail(found=False, reason=f"cooperation does not run here: {found}")
    return found.peer(params.runtime)


async def events(ctx: Context, params: MeshEventsInput) -> EventList:
    """Journal events in Lamport order."""
    found = await running_cooperation(ctx)
    if isinstance(found, str):
        return EventList(active=False, count=0, lamport=params.after, events=[])
    return found.events(params.after, params.limit, params.newest)


# -- writes -------------------------------------------------------------------------------------------------


async def claim(ctx: Context, params: ClaimInput) -> Written:
    """Claim repository paths for a session; an exclusive claim meeting a live one is refused."""
    coop = await active_cooperation(ctx)
    peer = mcp_peer(ctx)
    if params.session is None and peer is None:
        raise InvalidInput(_NO_SESSION)
    return await coop.claim(
        scope=list(params.scope),
        session=params.session,
        peer=peer,
        client=params.client,
        intent=params.intent,
        mode=params.mode,
        issue=params.issue,
        task=params.task,
    )


async def release(ctx: Context, params: ReleaseInput) -> Written:
    """Release a claim this runtime wrote."""
    return await (await active_cooperation(ctx)).release(params.claim)


async def session_open(ctx: Context, params: SessionInput) -> Written:
    """Open a session, or replace its word."""
    coop = await active_cooperation(ctx)
    info = {key: value for key, value in msgspec.structs.asdict(params).items() if value is not None}
    info.setdefault("client", "mcp" if mcp_peer(ctx) is not None else "cli")
    return await coop.session_open(info)


async def session_close(ctx: Context, params: SessionCloseInput) -> Written:
    """Close a session of this runtime; its claims end everywhere."""
    return await (await active_cooperation(ctx)).session_close(params.session)


async def handover_publish(ctx: Context, params: HandoverPublishInput) -> Written:
    """Publish the newest (or the named) handover record of this checkout to every linked runtime."""
    from svc.mesh_udp._handovers import read_handover

    coop = await active_cooperation(ctx)
    handover = await trio.to_thread.run_sync(
        partial(read_handover, ctx.runtime.repository, params.name, issue=params.issue, milestone=params.milestone)
    )
    return await coop.handover_publish(handover)


async def handover_consume(ctx: Context, params: HandoverConsumeInput) -> ConsumeAnswer:
    """Take a published handover for a session; with `materialize`, also write it as a local record, once."""
    coop = await active_cooperation(ctx)
    path = None
    if params.materialize:
        from svc.mesh_udp._handovers import materialize_handover

        view = coop.handover(params.handover)
        try:
            path, _ = await trio.to_thread.run_sync(
                partial(
                    materialize_handover,
                    ctx.runtime.repository,
                    view.handover,
                    publisher=view.runtime,
                    wall=time.time(),
                )
            )
        except OSError as exc:
            raise Refused(f"refused: the handover record could not be written: {exc.strerror or exc}") from None
    taken, written = await coop.handover_consume(params.handover, params.session)
    return ConsumeAnswer(handover=taken, written=written, path=path)


async def review_request(ctx: Context, params: ReviewRequestInput) -> Written:
    """Ask for a review of a branch, commit or pull request; a named reviewer must be linked and take reviews."""
    coop = await active_cooperation(ctx)
    session = named_session(ctx, params.session)
    return await coop.review_request(
        session=session, subject=params.subject, scope=list(params.scope), issue=params.issue, reviewer=params.reviewer
    )


async def review_answer(ctx: Context, params: ReviewAnswerInput) -> Written:
    """Answer a review request of another session."""
    coop = await active_cooperation(ctx)
    session = named_session(ctx, params.session)
    return await coop.review_answer(request=params.request, session=session, verdict=params.verdict, note=params.note)


async def review_withdraw(ctx: Context, params: ReviewWithdrawInput) -> Written:
    """End a review request this runtime asked for (`done`, `void` or `superseded`)."""
    coop = await active_cooperation(ctx)
    session = named_session(ctx, params.session)
    return await coop.review_withdraw(request=params.request, session=session, note=params.note)


async def verify(ctx: Context, params: NoInput) -> MeshVerifyReport:
    """Live checks, then one timed round with every peer this runtime dials."""
    found = await running_cooperation(ctx)
    if isinstance(found, str):
        check = DoctorCheck(
            check="cooperation",
            ok=False,
            detail=f"cooperation does not run here: {found}",
            impact="nothing is replicated: claims, sessions, handovers and reviews stay on this runtime",
            remediation="enable the mesh and cooperation in .ai/repo/mesh/, then run svc serve (svc mesh doctor)",
        )
        return MeshVerifyReport(ok=False, checks=[check])
    return await found.verify()


declare = Declarations[Context](MODULE, source=__name__)

CAPABILITIES = (
    declare.query(
        "cooperation",
        title="Cooperation status",
        description=(
            "Whether cooperation runs in this server and, if not, why: this runtime and its stream, the "
            "repository identity links are matched on, the protocol range and features, heartbeat and expiry, "
            "endpoints and seeds, every linked peer, refused links, counters and the journal's tallies. Inactive, "
            "the same shape states the reason and the protocol range."
        ),
        input=NoInput,
        output=CooperationStatus,
        handler=cooperation,
        examples=(Example(name="cooperation", input={}),),
        http="GET /api/v1/mesh/cooperation",
        tool="svc_mesh_cooperation",
        cli="mesh cooperation",
        stability="experimental",
        cli_remote=True,
    ),
    declare.query(
        "state",
        title="Mesh state",
        description=(
            "The journal folded into one state (sessions, claims with their standing, overlaps, handovers, "
            "review requests) as the filters select it, and every stream's liveness. The digest always covers the "
            "whole fold: equal digests on two runtimes mean equal state."
        ),
        input=StateFilter,
        output=MeshStateAnswer,
        handler=state,
        examples=(
            Example(name="summary", input={}),
            Example(name="open_claims", input={"kind": "claims", "open": True, "view": "full"}),
        ),
        http="GET /api/v1/mesh/state",
        tool="svc_mesh_state",
        cli="mesh state",
        stability="experimental",
        cli_remote=True,
    ),
    declare.query(
        "peers",
        title="Mesh peers",
        description=(
            "The tree of machine, runtime, session and claim, this machine first: each runtime's liveness and "
            "link, each session's word with its claims and review requests; refused links; the digest of the "
            "whole fold. The summary view lists active sessions only. On a terminal the command line draws the "
            "tree; piped, it prints one record per line (`machine`, `runtime`, `session`, `claim`, `review`)."
        ),
        input=StateFilter,
        output=PeerTree,
        handler=peers,
        examples=(
            Example(name="summary", input={}),
            Example(name="live_claims", input={"view": "full", "claims": "live"}),
        ),
        http="GET /api/v1/mesh/peers",
        tool="svc_mesh_peers",
        cli="mesh peers",
        stability="experimental",
        cli_remote=True,
    ),
    declare.query(
        "peer",
        title="One mesh runtime",
        description=(
            "One runtime by `<node>-<runtime>` (a node id alone names its first runtime): its machine, liveness, "
            "sessions, claims and review requests, its link and the refused links that name it."
        ),
        input=PeerInput,
        output=PeerDetail,
        handler=peer,
        examples=(Example(name="unknown", input={"runtime": _RUNTIME}),),
        http="GET /api/v1/mesh/peer",
        tool="svc_mesh_peer",
        cli="mesh peer",
        stability="experimental",
        cli_remote=True,
    ),
    declare.query(
        "events",
        title="Mesh journal events",
        description=(
            "Journal events in Lamport order, each with its stream, sequence, stamp, repository, signing key, "
            "kind and body; `lamport` is the next page's `after`. With `newest`, the newest `limit` events above "
            "`after`, still in Lamport order, and `lamport` the newest stamp held."
        ),
        input=MeshEventsInput,
        output=EventList,
        handler=events,
        examples=(Example(name="first_page", input={}), Example(name="newest", input={"newest": True, "limit": 10})),
        http="GET /api/v1/mesh/events",
        tool="svc_mesh_events",
        cli="mesh events",
        stability="experimental",
        cli_remote=True,
    ),
    declare.command(
        "claim",
        title="Claim paths",
        description=(
            "Claim repository paths for a session (opened when new; an MCP caller naming none claims for its "
            "own `board-<peer>` session, over HTTP and the command line one must be named). An exclusive claim "
            "that meets a live exclusive claim of another session on any known runtime is refused "
            "`claim_conflict`, listing the claims it meets; an advisory one is recorded and its overlaps "
            "reported. A claim lives while its session is open and its runtime beats."
        ),
        input=ClaimInput,
        output=Written,
        handler=claim,
        examples=(
            Example(
                name="exclusive",
                input={"scope": ["src/svc/mesh_udp/"], "session": "s1", "intent": "rework the links"},
                status=422,
                description=_INACTIVE,
            ),
        ),
        http="POST /api/v1/mesh/claims",
        tool="svc_mesh_claim",
        cli="mesh claim",
        benchmark=_WRITE,
        stability="experimental",
        cli_remote=True,
    ),
    declare.command(
        "release",
        title="Release a claim",
        description=(
            "Release a live claim by its key. Only the runtime that wrote it may (`not_own` otherwise); an "
            "unknown claim is 404."
        ),
        input=ReleaseInput,
        output=Written,
        handler=release,
        examples=(Example(name="release", input={"claim": _CLAIM}, status=422, description=_INACTIVE),),
        http="POST /api/v1/mesh/claims/release",
        tool="svc_mesh_release",
        cli="mesh release",
        benchmark=_WRITE,
        stability="experimental",
        cli_remote=True,
    ),
    declare.command(
        "session.open",
        title="Open a session",
        description=(
            "Open a working session of this runtime, or replace its word (client, worker, intent, task, issue, "
            "milestone, branch, head, dirtiness, context revision): a later word replaces an earlier one."
        ),
        input=SessionInput,
        output=Written,
        handler=session_open,
        examples=(
            Example(
                name="open",
                input={"session": "s1", "intent": "review the links", "branch": "main"},
                status=422,
                description=_INACTIVE,
            ),
        ),
        http="POST /api/v1/mesh/sessions",
        tool="svc_mesh_session_open",
        cli="mesh session open",
        benchmark=_WRITE,
        stability="experimental",
        cli_remote=True,
    ),
    declare.command(
        "session.close",
        title="Close a session",
        description=(
            "Close a session of this runtime: every claim it holds ends on every linked runtime (read "
            '`expired`, "its session closed").'
        ),
        input=SessionCloseInput,
        output=Written,
        handler=session_close,
        examples=(Example(name="close", input={"session": "s1"}, status=422, description=_INACTIVE),),
        http="POST /api/v1/mesh/sessions/close",
        tool="svc_mesh_session_close",
        cli="mesh session close",
        benchmark=_WRITE,
        stability="experimental",
        cli_remote=True,
    ),
    declare.command(
        "handover.publish",
        title="Publish a handover",
        description=(
            "Publish the newest handover record of this checkout (or the one named) from "
            ".ai/local/state/handovers/ to every linked runtime: task, issue, milestone, branch, head, time, the "
            "record's file name and its Markdown body (at most 32 KiB), identified by the body's digest. No "
            "local path travels and nothing outside that directory is read; no record is 404."
        ),
        input=HandoverPublishInput,
        output=Written,
        handler=handover_publish,
        examples=(Example(name="newest", input={}, status=422, description=_INACTIVE),),
        http="POST /api/v1/mesh/handovers",
        tool="svc_mesh_handover_publish",
        cli="mesh handover publish",
        benchmark=_WRITE,
        stability="experimental",
        cli_remote=True,
    ),
    declare.command(
        "handover.consume",
        title="Take a handover",
        description=(
            "Record on the mesh that a session takes a published handover. With `materialize`, also write it "
            "into this checkout's .ai/local/state/handovers/ (svc's own state) as a record `handover --resolve` "
            "finds on the published branch: written once however often it is taken, its path answered each time."
        ),
        input=HandoverConsumeInput,
        output=ConsumeAnswer,
        handler=handover_consume,
        examples=(
            Example(
                name="materialize",
                input={"handover": _HANDOVER, "session": "s1", "materialize": True},
                status=422,
                description=_INACTIVE,
            ),
        ),
        http="POST /api/v1/mesh/handovers/consume",
        tool="svc_mesh_handover_consume",
        cli="mesh handover consume",
        benchmark=_WRITE,
        stability="experimental",
        cli_remote=True,
    ),
    declare.command(
        "review.request",
        title="Ask for a review",
        description=(
            "Ask for a review of a branch, commit or pull request over some paths, for a session (the calling "
            "MCP session when none is named). A named reviewer runtime must be linked and take reviews, else "
            "`feature_unsupported`. An unanswered request reads expired while its runtime has stopped beating."
        ),
        input=ReviewRequestInput,
        output=Written,
        handler=review_request,
        examples=(
            Example(
                name="request",
                input={"subject": "feature/links", "scope": ["src/svc/mesh_udp/"], "session": "s1"},
                status=422,
                description=_INACTIVE,
            ),
        ),
        http="POST /api/v1/mesh/reviews",
        tool="svc_mesh_review_request",
        cli="mesh review request",
        benchmark=_WRITE,
        stability="experimental",
        cli_remote=True,
    ),
    declare.command(
        "review.answer",
        title="Answer a review request",
        description=(
            "Answer a review request with a verdict (`approved`, `changes_requested`, `commented`) and a note. "
            "A session cannot answer its own request; a withdrawn request is refused."
        ),
        input=ReviewAnswerInput,
        output=Written,
        handler=review_answer,
        examples=(
            Example(
                name="approve",
                input={"request": _REVIEW, "verdict": "approved", "session": "s2", "note": "reads well"},
                status=422,
                description=_INACTIVE,
            ),
        ),
        http="POST /api/v1/mesh/reviews/answer",
        tool="svc_mesh_review_answer",
        cli="mesh review answer",
        benchmark=_WRITE,
        stability="experimental",
        cli_remote=True,
    ),
    declare.command(
        "review.withdraw",
        title="Withdraw a review request",
        description=(
            "End a review request as `done`, `void` or `superseded` (optionally `: text`). Only a session of the "
            "asking runtime may (`not_own` otherwise); it is never counted as an answer, and only once."
        ),
        input=ReviewWithdrawInput,
        output=Written,
        handler=review_withdraw,
        examples=(
            Example(
                name="done",
                input={"request": _REVIEW, "note": "done: merged", "session": "s1"},
                status=422,
                description=_INACTIVE,
            ),
        ),
        http="POST /api/v1/mesh/reviews/withdraw",
        tool="svc_mesh_review_withdraw",
        cli="mesh review withdraw",
        benchmark=_WRITE,
        stability="experimental",
        cli_remote=True,
    ),
    declare.command(
        "verify",
        title="Verify the mesh",
        description=(
            "Live checks (cooperation, repository, endpoints, heartbeat, journal, refusals, links), then one "
            "timed sync round with every peer this runtime dials and whether both sides hold equal high-water "
            "marks. `ok` when every check passes and no peer's round failed; the command line exits 10 otherwise."
        ),
        input=NoInput,
        output=MeshVerifyReport,
        handler=verify,
        examples=(Example(name="verify", input={}),),
        http="POST /api/v1/mesh/verify",
        tool="svc_mesh_verify",
        cli="mesh verify",
        benchmark=Benchmark(policy="waived", reason="external_dependency"),
        stability="experimental",
        cli_verdict="ok",
        cli_remote=True,
    ),
)
