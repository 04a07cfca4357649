"""The plan weighed against the mesh's live claims: `plan.next` for a session, and `plan.take`.

An issue is passed over for a session when a live claim (held or conflicted, of any mode) of another session
meets the paths the issue would claim (its `scope`, else its record file) or names the issue. `plan.take`
picks the issue `plan.next` would answer for the session and claims those paths exclusively, with the issue id
on the claim, in one step under the journal lock (`Cooperation.claim_chosen`): concurrent takes on one runtime
never pick the same issue. Across runtimes two takes of one issue may both be written before they meet; the
fold then names one winner on every runtime, the loser's claim reads `conflicted`, and the loser's next take
releases it and moves on.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import trio

from svc._errors import Forbidden
from svc.capabilities._cooperation import (
    active_cooperation,
    cooperation_here,
    mcp_peer,
    named_session,
    running_cooperation,
)
from svc.layer._required import require_layer
from svc.mesh_udp import ClaimChoice, ClaimView, Cooperation, CooperationState, Written
from svc.mesh_udp._fold import paths_meet
from svc.plan import (
    NO_ISSUE,
    NONE_READY,
    NONE_UNCLAIMED,
    IssueRecord,
    Passing,
    PlanIssue,
    PlanNextIssue,
    PlanSkipped,
    PlanTake,
    PlanTransitionResult,
    Snapshot,
    known_domains,
    next_issue,
    next_unclaimed,
    read_snapshot,
)
from svc.runtime import Context

__all__ = ["ScopeOf", "claim_scopes", "next_for_session", "passing_for", "take_for", "take_issue"]

_LIVE = ("held", "conflicted")
_START_OVER_HTTP = (
    "HTTP never writes the repository: plan.take with start moves the issue (plan.transition); take it over "
    "HTTP without start, or with start through the MCP tool svc_plan_take over stdio (`svc mcp`) or `svc plan "
    "take --start`"
)


ScopeOf = Callable[[PlanIssue], list[str]]


def claim_scopes(snapshot: Snapshot) -> ScopeOf:
    """The paths an issue claims when taken: its scope, else its record file.

    Only an issue without a scope looks its record up (by id), so the records of a reused derivation stay
    undecoded but for that one.
    """
    records: dict[str, IssueRecord] = {}

    def scope_of(issue: PlanIssue) -> list[str]:
        if issue.scope:
            return list(issue.scope)
        if not records:
            records.update((record.id, record) for record in snapshot.records.issues)
        return [records[issue.id].path]

    return scope_of


def passing_for(state: CooperationState, session: str, scope_of: ScopeOf) -> Passing:
    """Why an issue is passed over for `session` (a session key): the first live claim of another session met."""
    others = [c for c in state.claims if c.session != session and c.state.state in _LIVE]

    def passed(issue: PlanIssue) -> PlanSkipped | None:
        paths = scope_of(issue)
        for claim in others:
            if claim.issue == issue.id or any(paths_meet(mine, theirs) for mine in paths for theirs in claim.scope):
                return PlanSkipped(issue=issue.id, claim=claim.key, session=claim.session, runtime=claim.runtime)
        return None

    return passed


def _session_key(coop: Cooperation, session: str) -> str:
    return session if "/" in session else f"{coop.stream}/{session}"


async def _snapshot(ctx: Context) -> Snapshot:
    """The plan as of the runtime's generation, read once per generation (`Runtime.derived`)."""
    require_layer(ctx.runtime.repository)
    return await trio.to_thread.run_sync(ctx.runtime.derived, read_snapshot)


async def next_for_session(ctx: Context, milestone: str | None, session: str | None) -> PlanNextIssue:
    """`plan.next` weighed against the claims of every session but `session` (an MCP caller's own by default).

    Where cooperation does not run, the answer is the plain one; a session named explicitly adds a note saying
    that no claim was weighed.
    """
    snapshot = await _snapshot(ctx)
    coop = cooperation_here(ctx)
    if coop is None:
        if session is None:
            # An MCP caller's own session where cooperation does not run: the plain answer, nothing more to say.
            return next_issue(snapshot.plan, milestone, snapshot.records, known_domains())
        found = await running_cooperation(ctx)
        why = found if isinstance(found, str) else found.reason
        note = f"no claim was weighed: cooperation does not run here ({why})"
        return next_issue(snapshot.plan, milestone, snapshot.records, known_domains(), notes=[note])
    key = _session_key(coop, named_session(ctx, session))
    passing = passing_for(coop.state(), key, claim_scopes(snapshot))
    return next_issue(snapshot.plan, milestone, snapshot.records, known_domains(), session=key, passing=passing)


def _own_claim(state: CooperationState, session: str, issue: str) -> ClaimView | None:
    return next(
        (c for c in state.claims if c.session == session and c.issue == issue and c.state.state == "held"), None
    )


async def take_for(
    coop: Cooperation,
    snapshot: Snapshot,
    *,
    session: str,
    peer: str | None,
    milestone: str | None = None,
    intent: str | None = None,
) -> tuple[PlanTake, Written | None]:
    """Take `snapshot`'s next issue for the session on `coop`: the answer, and the claim written (None if none).

    A session that already holds a claim on the issue it would take gets that claim back (`existing`), nothing
    written.

    Raises:
        Refused: not active; the session is another runtime's (`not_own`).
        NotFound: an unknown milestone.
    """
    scope_of = claim_scopes(snapshot)
    picked: list[tuple[PlanIssue | None, list[PlanSkipped], ClaimView | None]] = []

    def choose(state: CooperationState, key: str) -> ClaimChoice | None:
        issue, skipped = next_unclaimed(snapshot.plan, milestone, passing_for(state, key, scope_of))
        held = _own_claim(state, key, issue.id) if issue is not None else None
        picked.append((issue, skipped, held))
        if issue is None or held is not None:
            return None
        return ClaimChoice(scope=scope_of(issue), issue=issue.id)

    written, released = await coop.claim_chosen(session=session, peer=peer, choose=choose, intent=intent)
    issue, skipped, held = picked[-1]
    key = _session_key(coop, session)
    if issue is None:
        reason = NONE_UNCLAIMED if skipped else NONE_READY if snapshot.plan.issues else NO_ISSUE
        return PlanTake(taken=False, session=key, released=released, skipped=skipped, reason=reason), None
    if written is not None:
        claim, scope, lamport = written.key, scope_of(issue), written.lamport
    else:
        assert held is not None
        claim, scope, lamport = held.key, held.scope, held.acquired_lamport
    answer = PlanTake(
        taken=True,
        session=key,
        issue=issue,
        claim=claim,
        scope=scope,
        existing=written is None,
        lamport=lamport,
        durability=written.durability if written is not None else None,
        released=released,
        skipped=skipped,
    )
    return answer, written


async def take_issue(
    ctx: Context,
    *,
    session: str | None,
    milestone: str | None,
    start: Callable[[str], PlanTransitionResult] | None,
    intent: str | None,
) -> PlanTake:
    """`plan.take`: claim the session's next issue exclusively (`take_for`), and with `start` move it to ACTIVE.

    `start` is the move of the issue taken (by its id; blocking, run in a worker thread), when one is asked.

    When the start move is refused, a claim written by this call is released before the refusal is answered.

    Raises:
        Forbidden: `start` asked over HTTP.
        InvalidInput: no session named and the caller is no MCP session.
        Refused: cooperation does not run here (`not_active`); the session is another runtime's (`not_own`).
        NotFound: no `.ai/` layer; an unknown milestone.
    """
    if start and ctx.actor.over_http:
        raise Forbidden(_START_OVER_HTTP)
    coop = await active_cooperation(ctx)
    named = named_session(ctx, session)
    snapshot = await _snapshot(ctx)
    answer, written = await take_for(
        coop, snapshot, session=named, peer=mcp_peer(ctx), milestone=milestone, intent=intent
    )
    if start is None or answer.issue is None:
        return answer
    try:
        started = await trio.to_thread.run_sync(start, answer.issue.id)
    except Exception:
        if written is not None:
            await coop.release(written.key)
        raise
    return msgspec.structs.replace(answer, started=started)
