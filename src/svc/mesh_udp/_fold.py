"""The fold: the journal's events, in one order, read into one cooperation state.

Every runtime holding the same events folds them into the same state and the same digest. The fold is pure:
events sorted by (lamport, stream, seq), duplicates dropped, then one pass applying sessions, claims,
handovers and reviews; dead streams expire what they hold; exclusive claims are ranked so every runtime names
the same winner of a contested scope; overlaps pair live claims that are not both exclusive. `select` answers
the filters of `mesh.peers` and `mesh.state` over a folded state (its digest stays the whole fold's).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, Generic, TypeVar

import msgspec

from svc._gc import gc_paused
from svc.mesh_udp._canonical import canonical_json
from svc.mesh_udp._coop_views import (
    ClaimMode,
    ClaimOverlap,
    ClaimState,
    ClaimView,
    CooperationState,
    HandoverView,
    ReviewAnswerView,
    ReviewState,
    ReviewView,
    SessionState,
    SessionView,
    StateFilter,
    Verdict,
)

if TYPE_CHECKING:
    from svc.mesh_udp._events import Event

__all__ = [
    "RUNTIME_STOPPED",
    "SESSION_CLOSED",
    "conflicts",
    "fold",
    "normalize_path",
    "paths_meet",
    "select",
    "state_digest",
]

#: Why a claim, a session's standing or a review request expired.
RUNTIME_STOPPED: Final = "its runtime stopped beating"
SESSION_CLOSED: Final = "its session closed"

_NODE_LENGTH: Final = 32
_RUNTIME_KEY_LENGTH: Final = 49
_HELD: Final = ClaimState(state="held")
_RELEASED: Final = ClaimState(state="released")
_EXPIRED_STOPPED: Final = ClaimState(state="expired", detail=RUNTIME_STOPPED)
_EXPIRED_CLOSED: Final = ClaimState(state="expired", detail=SESSION_CLOSED)
_LIVE: Final = frozenset({"held", "conflicted"})
_VERDICTS: Final = frozenset({"approved", "changes_requested", "commented"})

_T = TypeVar("_T")


@functools.lru_cache(maxsize=16384)
def normalize_path(path: str) -> str:
    """`path` as compared: leading `./` and trailing `/` removed (`.` and `./` are the repository root, ``)."""
    while path.startswith("./"):
        path = path[2:]
    path = path.rstrip("/")
    return "" if path == "." else path


def paths_meet(a: str, b: str) -> bool:
    """Whether two repository paths meet: equal, or one is a `/`-prefix of the other (the root meets all)."""
    a, b = normalize_path(a), normalize_path(b)
    if a == b or not a or not b:
        return True
    if len(a) < len(b):
        return b.startswith(a) and b[len(a)] == "/"
    return a.startswith(b) and a[len(b)] == "/"


@functools.lru_cache(maxsize=16384)
def _chain(path: str) -> tuple[str, ...]:
    """The root ``, every ancestor directory of a normalized path, then the path itself."""
    if not path:
        return ("",)
    parts = path.split("/")
    return ("", *("/".join(parts[: n + 1]) for n in range(len(parts))))


class _PathIndex(Generic[_T]):
    """Items indexed by normalized path: those at a path, and those strictly under a directory."""

    __slots__ = ("at", "under")

    def __init__(self) -> None:
        self.at: dict[str, list[_T]] = {}
        self.under: dict[str, list[_T]] = {}

    def add(self, path: str, item: _T) -> None:
        chain = _chain(path)
        found = self.at.get(path)
        if found is None:
            self.at[path] = [item]
        else:
            found.append(item)
        under = self.under
        for directory in chain[:-1]:
            found = under.get(directory)
            if found is None:
                under[directory] = [item]
            else:
                found.append(item)

    def meeting(self, path: str) -> list[list[_T]]:
        """The lists of items whose path meets `path` (an item may appear in several lists)."""
        at = self.at
        lists = [found for directory in _chain(path) if (found := at.get(directory))]
        below = self.under.get(path)
        if below:
            lists.append(below)
        return lists


class _Session:
    __slots__ = ("info", "key", "lamport", "state", "stream")

    def __init__(self, key: str, stream: str, info: dict[str, Any], lamport: int) -> None:
        self.key = key
        self.stream = stream
        self.info = info
        self.lamport = lamport
        self.state: SessionState = "active"


class _Claim:
    __slots__ = ("body", "event", "key", "mode", "paths", "scope", "session", "state")

    def __init__(self, key: str, event: Event, body: dict[str, Any], scope: list[str], session: str) -> None:
        self.key = key
        self.event = event
        self.body = body
        self.mode: ClaimMode = "advisory" if body.get("mode") == "advisory" else "exclusive"
        self.scope = scope
        self.paths: list[str] = []
        self.session = session
        self.state = _HELD


class _Handover:
    __slots__ = ("body", "consumed", "handover_id", "lamport", "seen", "stream")

    def __init__(self, handover_id: str, stream: str, lamport: int, body: dict[str, Any]) -> None:
        self.handover_id = handover_id
        self.stream = stream
        self.lamport = lamport
        self.body = body
        self.consumed: list[str] = []
        self.seen: set[str] = set()


class _Review:
    __slots__ = ("answers", "body", "ending", "key", "lamport", "session", "state", "stream")

    def __init__(self, key: str, stream: str, lamport: int, body: dict[str, Any], session: str) -> None:
        self.key = key
        self.stream = stream
        self.lamport = lamport
        self.body = body
        self.session = session
        self.state: ReviewState = "open"
        self.ending: str | None = None
        self.answers: list[ReviewAnswerView] = []


def _sorted_unique(events: Sequence[Event]) -> list[Event]:
    """`events` by (lamport, stream, seq) without duplicates of (stream, seq) (the first in order kept)."""
    out: list[Event] = []
    seen: set[tuple[str, int]] = set()
    for event in sorted(events, key=lambda e: (e.lamport, e.stream, e.seq)):
        identity = (event.stream, event.seq)
        if identity not in seen:
            seen.add(identity)
            out.append(event)
    return out


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _scope(value: Any) -> list[str] | None:
    """A claim's or a request's paths (verified events hold 1-64 strings; anything else is not folded)."""
    return value if type(value) is list and value and type(value[0]) is str else None


class _Folder:
    """One fold's working state (see `fold`)."""

    def __init__(self) -> None:
        self.sessions: dict[str, _Session] = {}
        self.claims: dict[str, _Claim] = {}
        self.claims_of: dict[str, list[_Claim]] = {}
        self.handovers: dict[str, _Handover] = {}
        self.reviews: dict[str, _Review] = {}
        self.handlers: dict[Any, Callable[[Event, dict[str, Any]], None]] = {
            "session_opened": self._session_opened,
            "session_closed": self._session_closed,
            "claim_acquired": self._claim_acquired,
            "claim_released": self._claim_released,
            "handover_published": self._handover_published,
            "handover_consumed": self._handover_consumed,
            "review_requested": self._review_requested,
            "review_answered": self._review_answered,
            "review_withdrawn": self._review_withdrawn,
        }

    def run(self, events: Sequence[Event]) -> bool:
        """Apply `events`; False (stopping) at the first one out of order or repeated, so the caller sorts."""
        handlers = self.handlers
        last_seq: dict[str, int] = {}
        lamport, stream, seq = -1, "", 0
        for event in events:
            next_lamport, next_stream, next_seq = event.lamport, event.stream, event.seq
            if next_lamport <= lamport and (
                next_lamport < lamport or next_stream < stream or (next_stream == stream and next_seq <= seq)
            ):
                return False
            if next_seq <= last_seq.get(next_stream, 0):
                return False
            last_seq[next_stream] = next_seq
            lamport, stream, seq = next_lamport, next_stream, next_seq
            body = event.body
            handler = handlers.get(body.get("kind"))
            if handler is not None:
                handler(event, body)
        return True

    def _session_opened(self, event: Event, body: dict[str, Any]) -> None:
        info = body.get("info")
        if not isinstance(info, dict):
            return
        session = _string(info.get("session"))
        if session is None:
            return
        key = f"{event.stream}/{session}"
        held = self.sessions.get(key)
        if held is None:
            self.sessions[key] = _Session(key, event.stream, info, event.lamport)
            return
        held.info = info
        held.lamport = event.lamport
        held.state = "active"

    def _session_closed(self, event: Event, body: dict[str, Any]) -> None:
        session = _string(body.get("session"))
        if session is None:
            return
        key = f"{event.stream}/{session}"
        held = self.sessions.get(key)
        if held is None:
            return
        held.state = "closed"
        held.lamport = event.lamport
        for claim in self.claims_of.get(key, ()):
            if claim.state is _HELD:
                claim.state = _EXPIRED_CLOSED

    def _claim_acquired(self, event: Event, body: dict[str, Any]) -> None:
        claim_id, session, scope = body.get("claim"), body.get("session"), _scope(body.get("scope"))
        if type(claim_id) is not str or type(session) is not str or scope is None:
            return
        stream = event.stream
        key = f"{stream}/{claim_id}"
        claims = self.claims
        if key in claims:
            return
        session_key = f"{stream}/{session}"
        claim = claims[key] = _Claim(key, event, body, scope, session_key)
        held = self.claims_of.get(session_key)
        if held is None:
            self.claims_of[session_key] = [claim]
        else:
            held.append(claim)

    def _claim_released(self, event: Event, body: dict[str, Any]) -> None:
        named = body.get("claim")
        if type(named) is not str:
            return
        stream = event.stream
        claim = self.claims.get(named if "/" in named else f"{stream}/{named}")
        if claim is None or claim.state is not _HELD:
            return
        if claim.key[:_RUNTIME_KEY_LENGTH] == stream[:_RUNTIME_KEY_LENGTH]:
            claim.state = _RELEASED

    def _handover_published(self, event: Event, body: dict[str, Any]) -> None:
        handover = body.get("handover")
        if not isinstance(handover, dict):
            return
        handover_id = _string(handover.get("id"))
        if handover_id is None or handover_id in self.handovers:
            return
        self.handovers[handover_id] = _Handover(handover_id, event.stream, event.lamport, handover)

    def _handover_consumed(self, event: Event, body: dict[str, Any]) -> None:
        handover_id = _string(body.get("handover"))
        session = _string(body.get("session"))
        if handover_id is None or session is None:
            return
        held = self.handovers.get(handover_id)
        if held is None:
            return
        key = f"{event.stream}/{session}"
        if key not in held.seen:
            held.seen.add(key)
            held.consumed.append(key)

    def _review_requested(self, event: Event, body: dict[str, Any]) -> None:
        review_id = _string(body.get("review"))
        session = _string(body.get("session"))
        if (
            review_id is None
            or session is None
            or _string(body.get("subject")) is None
            or not _scope(body.get("scope"))
        ):
            return
        key = f"{event.stream}/{review_id}"
        if key not in self.reviews:
            self.reviews[key] = _Review(key, event.stream, event.lamport, body, f"{event.stream}/{session}")

    def _review_answered(self, event: Event, body: dict[str, Any]) -> None:
        request = _string(body.get("request"))
        session = _string(body.get("session"))
        verdict = body.get("verdict")
        if request is None or session is None or verdict not in _VERDICTS:
            return
        review = self.reviews.get(request)
        if review is None or review.state == "withdrawn":
            return
        key = f"{event.stream}/{session}"
        if key == review.session:
            return
        answer_verdict: Verdict = verdict
        review.answers.append(ReviewAnswerView(session=key, verdict=answer_verdict, note=_string(body.get("note"))))
        review.state = "answered"

    def _review_withdrawn(self, event: Event, body: dict[str, Any]) -> None:
        request = _string(body.get("request"))
        note = _string(body.get("note"))
        if request is None or note is None or _string(body.get("session")) is None:
            return
        review = self.reviews.get(request)
        if review is None or review.state == "withdrawn":
            return
        if review.stream[:_RUNTIME_KEY_LENGTH] != event.stream[:_RUNTIME_KEY_LENGTH]:
            return
        review.state = "withdrawn"
        review.ending = note

    def expire(self, dead: Callable[[str], bool]) -> None:
        """Expire what dead streams hold, and the claims of sessions no longer active.

        A dead stream's active sessions and held claims expire and its open requests read expired.
        """
        verdicts: dict[str, bool] = {}

        def is_dead(stream: str) -> bool:
            known = verdicts.get(stream)
            if known is None:
                known = verdicts[stream] = bool(dead(stream))
            return known

        for session in self.sessions.values():
            if session.state == "active" and is_dead(session.stream):
                session.state = "expired"
        sessions = self.sessions
        for claim in self.claims.values():
            if claim.state is not _HELD:
                continue
            if is_dead(claim.event.stream):
                claim.state = _EXPIRED_STOPPED
                continue
            holder = sessions.get(claim.session)
            if holder is None or holder.state != "active":
                claim.state = _EXPIRED_CLOSED
        for review in self.reviews.values():
            if review.state == "open" and is_dead(review.stream):
                review.state = "expired"
                review.ending = RUNTIME_STOPPED

    def rank(self) -> list[_Claim]:
        """Rank exclusive held claims by (acquired_lamport, stream, acquired_seq); answer the live claims.

        One meeting an earlier winner of another session is conflicted, its detail the winner's key.
        """
        live = [c for c in self.claims.values() if c.state is _HELD]
        for claim in live:
            claim.paths = [normalize_path(path) for path in claim.scope]
        # claims are held in the order folded: by (acquired_lamport, stream, acquired_seq)
        contenders = [c for c in live if c.mode == "exclusive"]
        winners: list[_Claim] = []
        index: _PathIndex[int] = _PathIndex()
        for claim in contenders:
            best = len(winners)
            own = claim.session
            for path in claim.paths:
                for found in index.meeting(path):
                    for position in found:
                        if position >= best:
                            break
                        if winners[position].session != own:
                            best = position
                            break
            if best < len(winners):
                claim.state = ClaimState(state="conflicted", detail=winners[best].key)
                continue
            winners.append(claim)
            for path in claim.paths:
                index.add(path, best)
        return live

    @staticmethod
    def overlaps(live: list[_Claim]) -> list[ClaimOverlap]:
        """Pairs of live claims of different sessions, not both exclusive, whose paths meet."""
        advisory = [c for c in live if c.mode == "advisory"]
        if not advisory:
            return []
        index: _PathIndex[tuple[_Claim, str]] = _PathIndex()
        for claim in live:
            for path, normal in zip(claim.scope, claim.paths, strict=True):
                index.add(normal, (claim, path))
        pairs: dict[tuple[str, str], set[tuple[str, str]]] = {}
        for claim in advisory:
            key, session = claim.key, claim.session
            for path, normal in zip(claim.scope, claim.paths, strict=True):
                for found in index.meeting(normal):
                    for other, other_path in found:
                        if other.session == session:
                            continue
                        other_key = other.key
                        if key < other_key:
                            pair, paths = (key, other_key), (path, other_path)
                        elif other.mode == "advisory":
                            continue  # recorded from the other side
                        else:
                            pair, paths = (other_key, key), (other_path, path)
                        held = pairs.get(pair)
                        if held is None:
                            pairs[pair] = {paths}
                        else:
                            held.add(paths)
        return [
            ClaimOverlap(first=first, second=second, paths=[list(pair) for pair in sorted(paths)])
            for (first, second), paths in sorted(pairs.items())
        ]

    def state(self, overlaps: list[ClaimOverlap], *, opaque: int) -> CooperationState:
        sessions = self.sessions
        claims = self.claims
        handovers = self.handovers
        reviews = self.reviews
        session_views = [
            SessionView(
                key=s.key,
                stream=s.stream,
                runtime=s.stream[:_RUNTIME_KEY_LENGTH],
                node=s.stream[:_NODE_LENGTH],
                info=s.info,
                state=s.state,
                updated_lamport=s.lamport,
            )
            for s in map(sessions.__getitem__, sorted(sessions))
        ]
        claim_views = []
        for c in map(claims.__getitem__, sorted(claims)):
            event, body = c.event, c.body
            intent, issue = body.get("intent"), body.get("issue")
            claim_views.append(
                ClaimView(
                    key=c.key,
                    stream=event.stream,
                    runtime=event.stream[:_RUNTIME_KEY_LENGTH],
                    session=c.session,
                    scope=list(c.scope),
                    intent=intent if isinstance(intent, str) else None,
                    mode=c.mode,
                    issue=issue if isinstance(issue, str) else None,
                    acquired_lamport=event.lamport,
                    acquired_seq=event.seq,
                    state=c.state,
                )
            )
        handover_views = [
            HandoverView(
                id=h.handover_id,
                stream=h.stream,
                runtime=h.stream[:_RUNTIME_KEY_LENGTH],
                published_lamport=h.lamport,
                handover=h.body,
                consumed_by=h.consumed,
            )
            for h in map(handovers.__getitem__, sorted(handovers))
        ]
        review_views = [
            ReviewView(
                key=r.key,
                session=r.session,
                subject=r.body["subject"],
                scope=list(r.body["scope"]),
                state=r.state,
                requested_lamport=r.lamport,
                answers=r.answers,
                issue=_string(r.body.get("issue")),
                reviewer=_string(r.body.get("reviewer")),
                ending=r.ending,
            )
            for r in map(reviews.__getitem__, sorted(reviews))
        ]
        unsigned = CooperationState(
            sessions=session_views,
            claims=claim_views,
            overlaps=overlaps,
            handovers=handover_views,
            reviews=review_views,
            opaque_events=opaque,
            digest="",
        )
        return msgspec.structs.replace(unsigned, digest=state_digest(unsigned))


def state_digest(state: CooperationState) -> str:
    """The first 32 hex of SHA-256 over the canonical JSON of `state` with an empty digest."""
    if state.digest:
        state = msgspec.structs.replace(state, digest="")
    return hashlib.sha256(canonical_json(state, checked=True)).hexdigest()[:32]


def fold(events: Sequence[Event], *, dead: Callable[[str], bool], opaque: int) -> CooperationState:
    """The cooperation state of `events`.

    Args:
        events: the journal's events, normally already by (lamport, stream, seq) (`Journal.ordered()`); any
            other order is sorted and duplicates of (stream, seq) dropped first.
        dead: whether a stream's runtime stopped beating (its liveness is `expired`).
        opaque: the events of kinds this runtime does not interpret (counted, relayed, not folded).
    """
    with gc_paused():  # the fold makes many small objects and no cycles: collections would only slow it
        folder = _Folder()
        if not folder.run(events):
            folder = _Folder()
            folder.run(_sorted_unique(events))
        folder.expire(dead)
        live = folder.rank()
        return folder.state(folder.overlaps(live), opaque=opaque)


def conflicts(state: CooperationState, *, session: str, scope: list[str]) -> list[ClaimView]:
    """The live exclusive claims of sessions other than `session` (a session key) whose scope meets `scope`."""
    wanted = [normalize_path(path) for path in scope]
    out: list[ClaimView] = []
    for claim in state.claims:
        if claim.mode != "exclusive" or claim.session == session or claim.state.state not in _LIVE:
            continue
        if any(paths_meet(mine, theirs) for mine in wanted for theirs in claim.scope):
            out.append(claim)
    return out


# ---------------------------------------------------------------------------------------------------------------
# Filters


def _runtime_of(key: str) -> str:
    return key[:_RUNTIME_KEY_LENGTH]


def _resolve_runtime(state: CooperationState, runtime: str) -> str:
    """A runtime key as given, or a node id's first runtime (in byte order) among those the state names."""
    if len(runtime) != _NODE_LENGTH:
        return runtime
    known = {s.runtime for s in state.sessions if s.node == runtime}
    known.update(c.runtime for c in state.claims if c.stream.startswith(runtime))
    known.update(h.runtime for h in state.handovers if h.stream.startswith(runtime))
    known.update(_runtime_of(r.key) for r in state.reviews if r.key.startswith(runtime))
    return min(known) if known else f"{runtime}-"


def _session_matcher(session: str) -> Callable[[str], bool]:
    if "/" in session:
        return lambda key: key == session
    suffix = "/" + session
    return lambda key: key.endswith(suffix)


def _contains(needle: str, *values: Any) -> bool:
    for value in values:
        if isinstance(value, str) and needle in value.lower():
            return True
        if isinstance(value, list) and any(isinstance(v, str) and needle in v.lower() for v in value):
            return True
    return False


def _newest(items: list[_T], limit: int | None, stamp: Callable[[_T], int]) -> list[_T]:
    if limit is None or len(items) <= limit:
        return items
    keep = {id(item) for item in sorted(items, key=stamp, reverse=True)[:limit]}
    return [item for item in items if id(item) in keep]


def select(state: CooperationState, f: StateFilter) -> CooperationState:
    """`state` narrowed by the filters of `mesh.peers` and `mesh.state`; the digest stays the whole fold's.

    `view` `summary` lists only active sessions; `claims` `live` only held and conflicted claims; `after` keeps
    sessions, claims and handovers with a later Lamport stamp (reviews follow their sessions or a later request,
    overlaps their claims); `session` (key or bare id) and `runtime` (runtime key, or a node id for its first
    runtime) narrow every collection; `kind` keeps one collection; `open` keeps active sessions, live claims,
    unanswered requests and untaken handovers; `matching` keeps what mentions the text (case-insensitive) in a
    path, branch, issue, intent or subject (a pull request is a subject); `limit` keeps the newest per
    collection by Lamport stamp.
    """
    in_session = _session_matcher(f.session) if f.session is not None else None
    runtime = _resolve_runtime(state, f.runtime) if f.runtime is not None else None
    needle = f.matching.lower() if f.matching else None
    after = f.after

    sessions = [
        s
        for s in state.sessions
        if (f.view == "full" or s.state == "active")
        and (not f.open or s.state == "active")
        and s.updated_lamport > after
        and (in_session is None or in_session(s.key))
        and (runtime is None or s.runtime == runtime)
        and (
            needle is None
            or _contains(
                needle, s.info.get("branch"), s.info.get("issue"), s.info.get("intent"), s.info.get("checkout")
            )
        )
    ]
    claims = [
        c
        for c in state.claims
        if (f.claims == "all" or c.state.state in _LIVE)
        and (not f.open or c.state.state in _LIVE)
        and c.acquired_lamport > after
        and (in_session is None or in_session(c.session))
        and (runtime is None or c.runtime == runtime)
        and (needle is None or _contains(needle, c.scope, c.intent, c.issue))
    ]
    handovers = [
        h
        for h in state.handovers
        if h.published_lamport > after
        and (not f.open or not h.consumed_by)
        and (in_session is None or any(in_session(key) for key in h.consumed_by))
        and (runtime is None or h.runtime == runtime)
        and (
            needle is None
            or _contains(
                needle,
                h.handover.get("branch"),
                h.handover.get("issue"),
                h.handover.get("name"),
                h.handover.get("task"),
            )
        )
    ]
    later_sessions = {s.key for s in state.sessions if s.updated_lamport > after}
    reviews = [
        r
        for r in state.reviews
        if (r.requested_lamport > after or r.session in later_sessions)
        and (not f.open or r.state == "open")
        and (in_session is None or in_session(r.session) or any(in_session(a.session) for a in r.answers))
        and (runtime is None or _runtime_of(r.key) == runtime)
        and (needle is None or _contains(needle, r.subject, r.scope, r.issue))
    ]
    claims = _newest(claims, f.limit, lambda c: c.acquired_lamport)
    kept = {c.key for c in claims}
    lamport_of = {c.key: c.acquired_lamport for c in state.claims}
    overlaps = [o for o in state.overlaps if o.first in kept or o.second in kept]
    if f.kind is not None:
        sessions = sessions if f.kind == "sessions" else []
        claims = claims if f.kind == "claims" else []
        overlaps = overlaps if f.kind == "overlaps" else []
        handovers = handovers if f.kind == "handovers" else []
        reviews = reviews if f.kind == "reviews" else []
    return msgspec.structs.replace(
        state,
        sessions=_newest(sessions, f.limit, lambda s: s.updated_lamport),
        claims=claims,
        overlaps=_newest(overlaps, f.limit, lambda o: max(lamport_of[o.first], lamport_of[o.second])),
        handovers=_newest(handovers, f.limit, lambda h: h.published_lamport),
        reviews=_newest(reviews, f.limit, lambda r: r.requested_lamport),
    )
