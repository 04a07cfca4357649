"""Cooperation of one runtime: the link tasks, the heartbeat, the journal's writes, and the answers.

`Cooperation` is the trio side of `Links` (the sans-I/O link protocol) and `Journal` (the signed events).
`start(nursery)` starts, each as a task of the supervisor nursery in its own cancel scope: the heartbeat
(sign a new own beat, project MCP sessions, reconcile dial targets, expire links, compact every 60 beats),
the persister (appends events received from peers to the journal file off the event loop), and one task
per outbound link (hello, then one sync round per heartbeat, each awaited at most 2 s, with docs/mesh.md's
backoff). A local write wakes every outbound link at once, so a claim reaches every peer this runtime dials
without waiting for the next beat; peers that dial this runtime take it at their next round.

Writes are admitted under one lock against the current fold, written to the file (fsynced) before they are
applied, and answered with their durability: `synced`, `memory` (no journal file) or `not_durable` (the
file write failed; the event is held in memory and replicated).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import trio

from svc._errors import InvalidInput, NotFound, Refused
from svc.mesh_udp._canonical import node_id_of
from svc.mesh_udp._coop_views import (
    ClaimView,
    CooperationCounters,
    CooperationState,
    CooperationStatus,
    EventList,
    EventView,
    HandoverView,
    Liveness,
    MachineView,
    MeshStateAnswer,
    MeshVerifyReport,
    PeerDetail,
    PeerTree,
    PeerView,
    RefusedView,
    RepositoryView,
    ReviewView,
    RuntimeView,
    SessionRow,
    StateFilter,
    StreamView,
    VerifyPeer,
    Written,
)
from svc.mesh_udp._core import Address, address_text
from svc.mesh_udp._events import Event, new_claim_id, new_review_id, runtime_key
from svc.mesh_udp._fold import conflicts, fold, select
from svc.mesh_udp._journal import Journal, JournalStore
from svc.mesh_udp._links import ANSWER_SECONDS, FEATURES, PROTOCOL, Links, Outbound
from svc.mesh_udp._views import DoctorCheck

if TYPE_CHECKING:
    from svc.mesh_udp._declaration import CooperationSettings
    from svc.mesh_udp._identity import NodeIdentity, RepositoryIdentity
    from svc.mesh_udp._nodes import NodeRegistry
    from svc.mesh_udp._trust import TrustStore
    from svc.mesh_udp._wire import LinkMessage

__all__ = ["BOARD_PREFIX", "ClaimChoice", "Cooperation", "board_session"]

_log = logging.getLogger("svc.mesh")

BOARD_PREFIX: Final = "board-"
COMPACT_EVERY: Final = 60


@dataclass(frozen=True, slots=True)
class ClaimChoice:
    """What `Cooperation.claim_chosen` claims: repository paths, and the issue the claim is for."""

    scope: list[str]
    issue: str | None = None


def board_session(peer: str) -> str:
    """The session an MCP session with peer id `peer` is projected as."""
    return f"{BOARD_PREFIX}{peer}"[:64]


def _stamp(wall: float) -> str:
    return dt.datetime.fromtimestamp(wall, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(slots=True)
class _Task:
    """A running link task: its cancel scope and when it ended."""

    scope: trio.CancelScope
    done: trio.Event


class Cooperation:
    """One runtime's cooperation: links, journal, writes and answers. Build it, then `start` it."""

    def __init__(
        self,
        identity: NodeIdentity,
        *,
        instance: str,
        runtime: str,
        repository: RepositoryIdentity,
        settings: CooperationSettings,
        trust: TrustStore,
        registry: NodeRegistry,
        send: Callable[[bytes, Address], Awaitable[bool]],
        resolve: Callable[[str, int], Awaitable[Address]],
        endpoints: Callable[[], list[str]],
        journal: Journal,
        version: str,
        wall: Callable[[], float],
        sessions: Callable[[], Collection[str]] = frozenset,
    ) -> None:
        assert repository.id is not None
        self.identity = identity
        self.instance = instance
        self.runtime = runtime
        self.key = f"{identity.node_id}-{runtime}"
        self.stream = f"{self.key}-{instance}"
        self.repository = repository
        self.settings = settings
        self.registry = registry
        self.send = send
        self.resolve = resolve
        self.wall = wall
        self.sessions = sessions
        self.heartbeat = float(settings.heartbeat_seconds)
        self.expiry = float(settings.expiry_seconds)
        self.journal = journal
        self.store = journal.store
        assert journal.stream == self.stream
        self.links = Links(
            identity,
            instance=instance,
            runtime=runtime,
            repository=repository.id,
            version=version,
            trust=trust,
            journal=self.journal,
            heartbeat=self.heartbeat,
            expiry=self.expiry,
            endpoints=endpoints,
        )
        self.reason: str | None = "not started"
        self.started_at: str | None = None
        self._lock = trio.Lock()
        self._io = trio.Lock()
        self._answers: dict[str, trio.Event] = {}
        self._tasks: dict[str, _Task] = {}
        self._exchanging: dict[str, trio.Lock] = {}
        self._nursery: trio.Nursery | None = None
        self._scopes: list[trio.CancelScope] = []
        self._unsaved: list[dict[str, Any]] = []
        self._unsaved_ready = trio.Event()
        self._kick = trio.Event()
        #: Own events committed so far: a link task whose last round left before the newest runs another.
        self._writes = 0
        self._beats = 0
        self._seeds: list[tuple[str, Address]] = []
        self._fold: tuple[tuple[Any, ...], CooperationState] | None = None
        self._changed = trio.Event()
        self.file_error: str | None = None

    @staticmethod
    def open_journal(
        identity: NodeIdentity,
        *,
        stream: str,
        repository: str,
        trust: TrustStore,
        expiry: float,
        state_dir: Path | None,
    ) -> Journal:
        """The journal of `stream`, reloaded from `state_dir` when given (blocking: file reads, fsync)."""
        options: dict[str, Any] = {
            "key": identity.key,
            "public_key": identity.public_key,
            "stream": stream,
            "repo": repository,
            "trusted": lambda pk: trust.assess(node_id_of(pk), pk).state == "trusted",
            "expiry_seconds": expiry,
        }
        if state_dir is None:
            return Journal(**options)
        return Journal.open(**options, store=JournalStore(state_dir))

    # -- running --------------------------------------------------------------------------------------

    @property
    def active(self) -> bool:
        """Whether cooperation runs."""
        return self.reason is None

    async def start(self, nursery: trio.Nursery) -> None:
        """Start the heartbeat, the persister and the link tasks under `nursery`, each in its own scope."""
        self._nursery = nursery
        self.started_at = _stamp(self.wall())
        self._seeds = []
        for seed in self.settings.seeds:
            host, _, port = seed.rpartition(":")
            try:
                self._seeds.append((seed, await self.resolve(host, int(port))))
            except OSError as exc:
                _log.warning("svc: mesh: seed %s does not resolve: %s", seed, exc)
        self.reason = None
        self.links.active = True
        for body in (self._heartbeat, self._persister):
            self._scopes.append(await nursery.start(body))

    def stop(self, reason: str = "stopped") -> None:
        """Cancel every cooperation task; links refuse with `not_active` from now on."""
        self.reason = reason
        self.links.active = False
        for scope in self._scopes:
            scope.cancel()
        for task in self._tasks.values():
            task.scope.cancel()

    async def _heartbeat(self, *, task_status: trio.TaskStatus[trio.CancelScope] = trio.TASK_STATUS_IGNORED) -> None:
        with trio.CancelScope() as scope:
            task_status.started(scope)
            while True:
                await self.beat()
                await trio.sleep(self.heartbeat)

    async def beat(self) -> None:
        """One heartbeat: a new own beat, MCP sessions projected, targets reconciled, links expired."""
        mono = trio.current_time()
        self.journal.beat()
        await self._project_sessions()
        self._reconcile(mono)
        self.links.expire(mono)
        self._beats += 1
        if self._beats % COMPACT_EVERY == 0 and self.journal.compaction_due():
            await self._compact(mono)
        self._notify()

    async def _compact(self, mono: float) -> None:
        async with self._lock:
            dropped = self.journal.compact(mono=mono, wall=self.wall())
            if dropped and self.store is not None:
                raws, tombstones = self.journal.raw_lines(), self.journal.tombstones()
                async with self._io:
                    try:
                        await trio.to_thread.run_sync(self.store.rewrite, raws)
                        await trio.to_thread.run_sync(self.store.save_tombstones, tombstones)
                    except OSError as exc:
                        _log.warning("svc: mesh: journal compaction could not be written: %s", exc)
        if dropped:
            _log.info("svc: mesh: compacted %d silent streams", len(dropped))

    async def _persister(self, *, task_status: trio.TaskStatus[trio.CancelScope] = trio.TASK_STATUS_IGNORED) -> None:
        """Append events received from peers to the journal file, in arrival order, off the event loop."""
        with trio.CancelScope() as scope:
            task_status.started(scope)
            while True:
                await self._unsaved_ready.wait()
                self._unsaved_ready = trio.Event()
                batch, self._unsaved = self._unsaved, []
                if not batch or self.store is None:
                    continue
                async with self._io:
                    try:
                        await trio.to_thread.run_sync(self.store.append, batch)
                        self.file_error = None
                    except OSError as exc:
                        self.file_error = str(exc)
                        _log.warning("svc: mesh: received events not written to the journal file: %s", exc)

    def _targets(self) -> list[tuple[str, str | None, str | None, Address, bool]]:
        targets: list[tuple[str, str | None, str | None, Address, bool]] = [
            (f"seed:{text}", None, None, address, True) for text, address in self._seeds
        ]
        repo = self.repository.id
        for entry in self.registry:
            if entry.trust.state != "trusted" or repo not in entry.envelope.repos or not entry.endpoints:
                continue
            key = f"{entry.node_id}-{entry.runtime}"
            host, _, port = entry.endpoints[0].rpartition(":")
            targets.append((key, key, entry.envelope.pk, (host, int(port)), False))
        return targets

    def _reconcile(self, mono: float) -> None:
        """Outbound targets from seeds and the registry; a task per target, each in its own scope."""
        self.links.reconcile(self._targets(), mono)
        nursery = self._nursery
        if nursery is None:
            return
        for target in [t for t in self._tasks if t not in self.links.outbound]:
            self._tasks.pop(target).scope.cancel()
            self._exchanging.pop(target, None)
        for target, out in self.links.outbound.items():
            if target not in self._tasks:
                scope = trio.CancelScope()
                self._tasks[target] = _Task(scope=scope, done=trio.Event())
                self.links.counters["threads"] += 1
                nursery.start_soon(self._dial, out, self._tasks[target])

    async def _dial(self, out: Outbound, task: _Task) -> None:
        """One outbound link: hello until welcomed, then a sync round per heartbeat (or at once on a write)."""
        try:
            with task.scope:
                sent = self._writes
                while True:
                    mono = trio.current_time()
                    when = self.links.due(out, mono)
                    if when > mono and not (sent != self._writes and self._kickable(out)):
                        kick, kicked = self._kick, False
                        with trio.move_on_at(min(when, mono + self.heartbeat)):
                            await kick.wait()
                            kicked = True
                        if not kicked or not self._kickable(out):
                            continue
                    sent = self._writes
                    await self.exchange(out)
        finally:
            task.done.set()

    def _kickable(self, out: Outbound) -> bool:
        """Whether a local write may run a round on `out` now: linked, idle and not held back.

        A link backing off after a lost round is still tried at once: the write has news, and a round is
        idempotent. A refused link has no link id, so a write never hurries a refused dial.
        """
        if out.link is None or out.waiting is not None:
            return False
        return self.links.due(out, trio.current_time()) <= out.next_attempt

    async def exchange(self, out: Outbound, *, full: bool = False) -> bool:
        """One hello (unlinked) or sync round (linked) with `out`; whether it was answered."""
        async with self._exchanging.setdefault(out.target, trio.Lock()):
            mono = trio.current_time()
            if out.link is None:
                ex = self.links.hello(out, wall=self.wall(), mono=mono)
            else:
                ex = self.links.sync_request(out, mono=mono, full=full)
            answered = self._answers[ex.waiting] = trio.Event()
            self._notify()
            try:
                if await self.send(ex.data, ex.address):
                    with trio.move_on_after(ANSWER_SECONDS):
                        await answered.wait()
            finally:
                self._answers.pop(ex.waiting, None)
            if out.waiting == ex.waiting:
                self.links.timed_out(out, ex.waiting, trio.current_time())
                return False
            self._notify()
            return out.outcome == "ok"

    def on_link(self, message: LinkMessage, origin: Address, wall: float, mono: float) -> list[tuple[bytes, Address]]:
        """`MeshCore.link_handler`: one link message heard on the link socket."""
        received = self.links.receive(message, origin, wall=wall, mono=mono)
        if received.applied:
            self.on_received(received.applied)
        if received.answered is not None:
            event = self._answers.get(received.answered)
            if event is not None:
                event.set()
        return received.replies

    def on_received(self, applied: list[dict[str, Any]]) -> None:
        """Events of peers just applied: the persister appends them to the file, in arrival order."""
        self._unsaved.extend(applied)
        self._unsaved_ready.set()
        self._notify()

    def on_oversized(self, origin: Address, mono: float) -> None:
        """A datagram over 60 KiB on the link socket."""
        self.links.oversized(origin, mono)

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def changed(self) -> None:
        """Return at the next exchange, write or beat."""
        await self._changed.wait()

    async def wait_until(self, predicate: Callable[[], bool]) -> None:
        """Return once `predicate()` holds, re-checking after every exchange, write and beat."""
        while True:
            changed = self._changed
            if predicate():
                return
            await changed.wait()

    # -- the fold -------------------------------------------------------------------------------------

    def _dead(self, mono: float) -> frozenset[str]:
        return frozenset(s for s in self.journal.streams() if self.journal.liveness(s, mono=mono) == "expired")

    def state(self) -> CooperationState:
        """The fold of the whole journal now (cached until the journal or a stream's liveness changes)."""
        mono = trio.current_time()
        dead = self._dead(mono)
        key = (self.journal.revision, dead)
        if self._fold is not None and self._fold[0] == key:
            return self._fold[1]
        state = fold(self.journal.ordered(), dead=dead.__contains__, opaque=self.journal.opaque_count())
        self._fold = (key, state)
        return state

    # -- writes ---------------------------------------------------------------------------------------

    def _require_active(self) -> None:
        if self.reason is not None:
            raise Refused(f"not_active: {self.reason}")

    async def _write(self, body: dict[str, Any], key: str | None = None) -> Written:
        """Sign, persist (fsync) and apply one own event; the caller holds the lock."""
        try:
            raw = self.journal.prepare(body, wall=self.wall())
        except ValueError as exc:
            raise InvalidInput(f"{exc}: see the bounds of mesh events in docs/mesh.md") from None
        durability = "memory"
        if self.store is not None:
            async with self._io:
                try:
                    await trio.to_thread.run_sync(self.store.append, [raw])
                    durability = "synced"
                except OSError as exc:
                    durability = "not_durable"
                    self.file_error = str(exc)
                    _log.warning("svc: mesh: event not written to the journal file: %s", exc)
        event = self.journal.commit(raw)
        self._writes += 1
        self._kick.set()
        self._kick = trio.Event()
        self._notify()
        return Written(
            key=key or event.id,
            event=event.id,
            lamport=event.lamport,
            durability=durability,  # type: ignore[arg-type]
        )

    def _session_key(self, session: str) -> str:
        return session if "/" in session else f"{self.stream}/{session}"

    def _own_session(self, session: str) -> str:
        """The bare id of one of this runtime's sessions (a key of another stream is refused)."""
        if "/" not in session:
            return session
        stream, _, bare = session.partition("/")
        if stream != self.stream:
            raise Refused(f"not_own: session {session} belongs to another runtime")
        return bare

    async def _ensure_session(self, session: str, info: dict[str, Any]) -> None:
        key = f"{self.stream}/{session}"
        if any(s.key == key and s.state == "active" for s in self.state().sessions):
            return
        await self._write({"kind": "session_opened", "info": {"session": session, **info}}, key)

    async def claim(
        self,
        *,
        scope: list[str],
        session: str | None,
        peer: str | None,
        client: str | None = None,
        intent: str | None = None,
        mode: str | None = None,
        issue: str | None = None,
        task: str | None = None,
    ) -> Written:
        """`mesh.claim` (docs/mesh.md).

        Raises:
            InvalidInput: no session named and no MCP session to stand for one.
            Refused: not active; `claim_conflict` listing the claims met.
        """
        self._require_active()
        session = self._named(session, peer)
        bare = self._own_session(session)
        async with self._lock:
            info = self._session_info(session, peer, client, intent, issue, task)
            return await self._acquire(bare, scope, mode or "exclusive", info, intent, issue)

    async def claim_chosen(
        self,
        *,
        session: str | None,
        peer: str | None,
        choose: Callable[[CooperationState, str], ClaimChoice | None],
        client: str | None = None,
        intent: str | None = None,
    ) -> tuple[Written | None, list[str]]:
        """Claim exclusively what `choose` picks from the fold, in one step under the journal lock.

        First the session's conflicted claims that name an issue are released (they lost their scope to another
        claim, so they hold nothing); then `choose(state, session key)` picks a scope and an issue, or nothing.
        Answers the claim written (None when nothing was chosen) and the keys of the claims released.

        Raises:
            InvalidInput: no session named and no MCP session to stand for one.
            Refused: not active; not this runtime's session; `claim_conflict` (`choose` picked a scope that
                meets a live exclusive claim of another session).
        """
        self._require_active()
        session = self._named(session, peer)
        bare = self._own_session(session)
        key = f"{self.stream}/{bare}"
        async with self._lock:
            released: list[str] = []
            for lost in self.state().claims:
                if lost.session == key and lost.issue is not None and lost.state.state == "conflicted":
                    await self._write({"kind": "claim_released", "claim": lost.key.partition("/")[2]}, lost.key)
                    released.append(lost.key)
            choice = choose(self.state(), key)
            if choice is None:
                return None, released
            info = self._session_info(session, peer, client, intent, choice.issue, None)
            return await self._acquire(bare, choice.scope, "exclusive", info, intent, choice.issue), released

    def _named(self, session: str | None, peer: str | None) -> str:
        if session is not None:
            return session
        if peer is None:
            raise InvalidInput("session is required (only an MCP session stands for its own)")
        return board_session(peer)

    @staticmethod
    def _session_info(
        session: str, peer: str | None, client: str | None, intent: str | None, issue: str | None, task: str | None
    ) -> dict[str, Any]:
        info = {"client": client or ("mcp" if peer is not None and session.startswith(BOARD_PREFIX) else "cli")}
        return info | {k: v for k, v in (("intent", intent), ("issue", issue), ("task", task)) if v is not None}

    async def _acquire(
        self,
        bare: str,
        scope: list[str],
        mode: str,
        info: dict[str, Any],
        intent: str | None,
        issue: str | None,
    ) -> Written:
        """Write one claim of session `bare` (exclusive: refused when it meets another's); the caller holds the lock."""
        if mode == "exclusive":
            met = conflicts(self.state(), session=f"{self.stream}/{bare}", scope=scope)
            if met:
                self.links.counters["claims_refused"] += 1
                listed = ", ".join(f"{c.key} ({c.session}: {' '.join(c.scope)})" for c in met)
                raise Refused(f"claim_conflict: the scope meets {listed}")
        await self._ensure_session(bare, info)
        claim = new_claim_id()
        body: dict[str, Any] = {"kind": "claim_acquired", "claim": claim, "session": bare, "scope": scope, "mode": mode}
        body |= {k: v for k, v in (("intent", intent), ("issue", issue)) if v is not None}
        return await self._write(body, f"{self.stream}/{claim}")

    def _claim(self, key: str) -> ClaimView:
        for claim in self.state().claims:
            if claim.key == key:
                return claim
        raise NotFound(f"no claim {key}")

    async def release(self, claim: str) -> Written:
        """`mesh.release`: only the runtime that wrote the claim; only a live claim.

        Raises:
            NotFound: no such claim.
            Refused: not active; `not_own`; not live.
        """
        self._require_active()
        async with self._lock:
            view = self._claim(claim)
            if view.runtime != self.key:
                raise Refused(f"not_own: claim {claim} was written by runtime {view.runtime}")
            if view.state.state not in ("held", "conflicted"):
                raise Refused(f"refused: claim {claim} is {view.state.state}, not live")
            return await self._write({"kind": "claim_released", "claim": claim.partition("/")[2]}, claim)

    async def session_open(self, info: dict[str, Any]) -> Written:
        """`mesh.session.open`: a later word replaces an earlier one."""
        self._require_active()
        bare = self._own_session(info["session"])
        async with self._lock:
            body = {"kind": "session_opened", "info": {**info, "session": bare}}
            return await self._write(body, f"{self.stream}/{bare}")

    async def session_close(self, session: str) -> Written:
        """`mesh.session.close`: every claim of the session ends on every runtime.

        Raises:
            NotFound: no session of this runtime by that id.
            Refused: not active; already closed.
        """
        self._require_active()
        bare = self._own_session(session)
        key = f"{self.stream}/{bare}"
        async with self._lock:
            found = [s for s in self.state().sessions if s.key == key]
            if not found:
                raise NotFound(f"no session {key} of this runtime")
            if found[0].state != "active":
                raise Refused(f"refused: session {key} is {found[0].state}")
            return await self._write({"kind": "session_closed", "session": bare}, key)

    async def _project_sessions(self) -> None:
        """Every attached MCP session as an active `board-<peer>` session; ended ones closed."""
        peers = {board_session(p) for p in self.sessions()}
        own = {
            s.key.partition("/")[2]: s.state
            for s in self.state().sessions
            if s.stream == self.stream and s.key.partition("/")[2].startswith(BOARD_PREFIX)
        }
        opening = [p for p in peers if own.get(p) != "active"]
        closing = [s for s, state in own.items() if state == "active" and s not in peers]
        if not opening and not closing:
            return
        async with self._lock:
            for session in sorted(opening):
                await self._write({"kind": "session_opened", "info": {"session": session, "client": "mcp"}})
            for session in sorted(closing):
                await self._write({"kind": "session_closed", "session": session})

    async def handover_publish(self, handover: dict[str, Any]) -> Written:
        """Publish one handover (already read from this checkout's records)."""
        self._require_active()
        async with self._lock:
            return await self._write({"kind": "handover_published", "handover": handover}, handover["id"])

    def handover(self, handover: str) -> HandoverView:
        """A published handover by id.

        Raises:
            NotFound: none published with that id.
        """
        for view in self.state().handovers:
            if view.id == handover:
                return view
        raise NotFound(f"no handover {handover} was published")

    async def handover_consume(self, handover: str, session: str) -> tuple[HandoverView, Written]:
        """Record that `session` takes the handover.

        Raises:
            NotFound: no such handover.
            Refused: not active.
        """
        self._require_active()
        bare = self._own_session(session)
        async with self._lock:
            self.handover(handover)
            written = await self._write({"kind": "handover_consumed", "handover": handover, "session": bare}, handover)
            return self.handover(handover), written

    def _review(self, key: str) -> ReviewView:
        for review in self.state().reviews:
            if review.key == key:
                return review
        raise NotFound(f"no review request {key}")

    async def review_request(
        self, *, session: str, subject: str, scope: list[str], issue: str | None, reviewer: str | None
    ) -> Written:
        """`mesh.review.request`: a named reviewer must be linked and list `reviews`.

        Raises:
            Refused: not active; `feature_unsupported`.
        """
        self._require_active()
        bare = self._own_session(session)
        async with self._lock:
            if reviewer is not None:
                target = self._resolve_runtime(reviewer)
                peer = self.links.peers.get(target) if target is not None else None
                if peer is None or not self.links.linked(peer.key, trio.current_time()):
                    raise Refused(f"feature_unsupported: runtime {reviewer} is not linked")
                if "reviews" not in peer.card.features:
                    raise Refused(f"feature_unsupported: runtime {reviewer} does not take reviews")
                reviewer = peer.key
            await self._ensure_session(bare, {"client": "mcp" if bare.startswith(BOARD_PREFIX) else "cli"})
            review = new_review_id()
            body: dict[str, Any] = {
                "kind": "review_requested",
                "review": review,
                "session": bare,
                "subject": subject,
                "scope": scope,
            }
            body |= {k: v for k, v in (("issue", issue), ("reviewer", reviewer)) if v is not None}
            return await self._write(body, f"{self.stream}/{review}")

    async def review_answer(self, *, request: str, session: str, verdict: str, note: str | None) -> Written:
        """`mesh.review.answer`: not by the asking session; not on a withdrawn request.

        Raises:
            NotFound: no such request.
            Refused: not active; own request; withdrawn.
        """
        self._require_active()
        bare = self._own_session(session)
        async with self._lock:
            review = self._review(request)
            if review.session == f"{self.stream}/{bare}":
                raise Refused(f"refused: session {bare} asked for review {request} and cannot answer it")
            if review.state == "withdrawn":
                raise Refused(f"refused: review {request} was withdrawn")
            await self._ensure_session(bare, {"client": "mcp" if bare.startswith(BOARD_PREFIX) else "cli"})
            body: dict[str, Any] = {"kind": "review_answered", "request": request, "session": bare, "verdict": verdict}
            if note is not None:
                body["note"] = note
            return await self._write(body, request)

    async def review_withdraw(self, *, request: str, session: str, note: str) -> Written:
        """`mesh.review.withdraw`: only a session of the asking runtime; once.

        Raises:
            NotFound: no such request.
            Refused: not active; `not_own`; already withdrawn.
        """
        self._require_active()
        bare = self._own_session(session)
        async with self._lock:
            review = self._review(request)
            asker = runtime_key(review.key.partition("/")[0])
            if asker != self.key:
                raise Refused(f"not_own: review {request} was asked by runtime {asker}")
            if review.state == "withdrawn":
                raise Refused(f"refused: review {request} is already withdrawn")
            body = {"kind": "review_withdrawn", "request": request, "session": bare, "note": note}
            return await self._write(body, request)

    # -- answers --------------------------------------------------------------------------------------

    def _resolve_runtime(self, text: str) -> str | None:
        """A runtime key from `<node>-<runtime>` or a node id alone (its first runtime)."""
        known = sorted({runtime_key(s) for s in self.journal.streams()} | set(self.links.peers) | {self.key})
        if text in known:
            return text
        for key in known:
            if key.startswith(f"{text}-") and len(text) == 32:
                return key
        return None

    def _peer_view(self, key: str, mono: float) -> PeerView | None:
        peer = self.links.peers.get(key)
        if peer is None:
            return None
        out = self.links.outbound_of(key)
        card = peer.card
        return PeerView(
            runtime=key,
            node=card.node,
            instance=card.instance,
            name=card.name,
            version=card.version,
            local=card.node == self.identity.node_id,
            trust=peer.trust,
            protocol=PROTOCOL[1],
            features=list(card.features),
            endpoints=list(card.endpoints),
            state=peer.state(mono, self.heartbeat, self.expiry),
            outbound=out is not None and out.link is not None,
            inbound=peer.inbound is not None,
            endpoint=address_text(out.address) if out is not None else peer.inbound_endpoint,
            last_exchange_ms=int((mono - peer.last_exchange) * 1000) if peer.last_exchange is not None else None,
            rtt_ms=peer.rtt_ms,
            failures=out.failures if out is not None else 0,
            last_error=out.last_error if out is not None else None,
            handshakes=peer.handshakes,
            reconnects=peer.reconnects,
            restarts=peer.restarts,
            linked_at=_stamp(self.wall() - (mono - peer.linked_at)),
        )

    def _refused_views(self, mono: float) -> list[RefusedView]:
        wall = self.wall()
        return [
            RefusedView(
                endpoint=row.endpoint,
                direction=row.direction,
                runtime=row.runtime,
                refusal=row.refusal,  # type: ignore[arg-type]
                at=_stamp(wall - (mono - row.at)),
            )
            for row in reversed(self.links.refused.values())
        ]

    def status(self) -> CooperationStatus:
        """`mesh.cooperation`."""
        mono = trio.current_time()
        counters = self.links.counters
        repo = self.repository
        return CooperationStatus(
            active=self.active,
            reason=self.reason,
            runtime=self.key,
            stream=self.stream,
            repository=RepositoryView(id=repo.id or "", basis=repo.basis or "declared", detail=repo.detail),
            protocol=list(PROTOCOL),
            features=list(FEATURES),
            heartbeat_seconds=int(self.heartbeat),
            expiry_seconds=int(self.expiry),
            endpoints=list(self.links.endpoints()),
            seeds=list(self.settings.seeds),
            peers=[v for k in sorted(self.links.peers) if (v := self._peer_view(k, mono)) is not None],
            refused=self._refused_views(mono),
            counters=CooperationCounters(
                **counters, refused_in=dict(self.links.refused_in), refused_out=dict(self.links.refused_out)
            ),
            journal=self.journal.tallies(),
            started_at=self.started_at,
        )

    def _streams(self, mono: float) -> list[StreamView]:
        return [
            StreamView(
                stream=s,
                liveness=self.journal.liveness(s, mono=mono),
                last_beat_ms=self.journal.last_beat_ms(s, mono=mono),
            )
            for s in self.journal.streams()
        ]

    def _filtered(self, f: StateFilter) -> CooperationState:
        return select(self.state(), f)

    def mesh_state(self, f: StateFilter) -> MeshStateAnswer:
        """`mesh.state`: the (filtered) fold and every stream's liveness."""
        mono = trio.current_time()
        return MeshStateAnswer(
            active=self.active, reason=self.reason, state=self._filtered(f), streams=self._streams(mono)
        )

    def _runtime_views(self, state: CooperationState, mono: float) -> dict[str, RuntimeView]:
        """Every runtime known (journal streams, links, this one), with its sessions, claims and reviews."""
        claims: dict[str, list[ClaimView]] = {}
        for claim in state.claims:
            claims.setdefault(claim.session, []).append(claim)
        reviews: dict[str, list[ReviewView]] = {}
        for review in state.reviews:
            reviews.setdefault(review.session, []).append(review)
        sessions: dict[str, list[SessionRow]] = {}
        for s in state.sessions:
            row = SessionRow(
                key=s.key, info=s.info, state=s.state, claims=claims.get(s.key, []), reviews=reviews.get(s.key, [])
            )
            sessions.setdefault(s.runtime, []).append(row)
        liveness: dict[str, tuple[Liveness, int | None]] = {}
        for stream in self.journal.streams():
            rk = runtime_key(stream)
            life = self.journal.liveness(stream, mono=mono)
            beat = self.journal.last_beat_ms(stream, mono=mono)
            held = liveness.get(rk)
            if held is None or (held[0] == "expired" and life != "expired"):
                liveness[rk] = (life, beat)
        keys = set(liveness) | set(self.links.peers) | set(sessions) | {self.key}
        out = {}
        for key in keys:
            life, beat = liveness.get(key, ("expired", None))
            life_now: Liveness = life
            if key == self.key:
                life_now, beat = "own", 0
            peer = self.links.peers.get(key)
            out[key] = RuntimeView(
                runtime=key,
                this_runtime=key == self.key,
                liveness=life_now,
                last_beat_ms=beat,
                link=peer.state(mono, self.heartbeat, self.expiry) if peer is not None else None,
                sessions=sessions.get(key, []),
            )
        return out

    def tree(self, f: StateFilter) -> PeerTree:
        """`mesh.peers`: machines, runtimes, sessions, claims; the local machine first."""
        mono = trio.current_time()
        whole = self.state()
        state = self._filtered(f)
        runtimes = self._runtime_views(state, mono)
        names = {p.card.node: p.card.name for p in self.links.peers.values()}
        names[self.identity.node_id] = self.identity.display_name
        machines: dict[str, list[RuntimeView]] = {}
        for key, view in runtimes.items():
            if f.runtime is not None and not (key == f.runtime or key.startswith(f"{f.runtime}-")):
                continue
            machines.setdefault(key.partition("-")[0], []).append(view)
        ordered = sorted(machines, key=lambda n: (n != self.identity.node_id, n))
        return PeerTree(
            active=self.active,
            reason=self.reason,
            runtime=self.key,
            repository=self.repository.id,
            machines=[
                MachineView(
                    node=node,
                    name=names.get(node, node[:8]),
                    local=node == self.identity.node_id,
                    runtimes=sorted(machines[node], key=lambda r: (not r.this_runtime, r.runtime)),
                )
                for node in ordered
            ],
            refused=self._refused_views(mono),
            digest=whole.digest,
        )

    def peer(self, runtime: str) -> PeerDetail:
        """`mesh.peer`: one runtime (a runtime key, or a node id for its first runtime)."""
        mono = trio.current_time()
        key = self._resolve_runtime(runtime)
        refused = [r for r in self._refused_views(mono) if r.runtime is None or r.runtime == key]
        if key is None:
            return PeerDetail(found=False, reason=f"no runtime {runtime} is known here", refused=refused)
        views = self._runtime_views(self.state(), mono)
        node = key.partition("-")[0]
        machine_runtimes = sorted((v for k, v in views.items() if k.startswith(f"{node}-")), key=lambda r: r.runtime)
        peer = self.links.peers.get(key)
        name = peer.card.name if peer is not None else (self.identity.display_name if key == self.key else node[:8])
        return PeerDetail(
            found=True,
            machine=MachineView(node=node, name=name, local=node == self.identity.node_id, runtimes=machine_runtimes),
            runtime=views[key],
            peer=self._peer_view(key, mono),
            refused=refused,
        )

    def events(self, after: int, limit: int, newest: bool) -> EventList:
        """`mesh.events`: events above `after` in Lamport order; `lamport` is the next page's `after`."""
        chosen = self.journal.events_after(after, limit, newest=newest)
        lamport = max(self.journal.lamport, after) if newest else chosen[-1].lamport if chosen else max(after, 0)
        return EventList(
            active=self.active, count=len(chosen), lamport=lamport, events=[_event_view(e) for e in chosen]
        )

    async def verify(self) -> MeshVerifyReport:
        """`mesh.verify`: live checks, then one timed round with every peer this runtime dials."""
        mono = trio.current_time()
        tallies = self.journal.tallies()
        own_beat = self.journal.last_beat_ms(self.stream, mono=mono)
        endpoints = self.links.endpoints()
        only_loopback = all(e.startswith("127.") for e in endpoints)
        bad = {
            c: n
            for c, n in self.links.refused_out.items() | self.links.refused_in.items()
            if c in ("untrusted", "protocol_unsupported", "signature") and n
        }
        connected = [k for k in self.links.peers if self.links.linked(k, mono)]
        checks = [
            DoctorCheck(check="cooperation", ok=True, detail=f"running since {self.started_at}"),
            DoctorCheck(check="repository", ok=True, detail=f"{self.repository.id} ({self.repository.detail})"),
            DoctorCheck(
                check="endpoints",
                ok=True,
                detail=", ".join(endpoints) or "none",
                impact="only loopback is advertised: runtimes on other machines cannot dial this one"
                if only_loopback
                else None,
            ),
            _check(
                "heartbeat",
                own_beat is not None and own_beat <= (2 * self.heartbeat + 1) * 1000,
                f"own beat {own_beat} ms old" if own_beat is not None else "no own beat yet",
                "peers will read this runtime's claims as expired",
                "check that the server's event loop is not blocked",
            ),
            _check(
                "journal",
                tallies.pending == 0,
                f"{tallies.events} events in {tallies.streams} streams, {tallies.pending} pending",
                "events wait for a gap to be filled",
                "wait for the next rounds; a peer holding the missing events must be reachable",
            ),
            _check(
                "refusals",
                not bad,
                ", ".join(f"{c} {n}" for c, n in sorted(bad.items())) or "none that matter",
                "some runtimes cannot link with this one",
                "compare trust allowlists, versions and clocks with `svc mesh doctor` on both sides",
            ),
            _check(
                "links",
                not (self.settings.seeds and not connected),
                f"{len(connected)} linked"
                + (f", seeds {', '.join(self.settings.seeds)}" if self.settings.seeds else ""),
                "no declared seed answered: nothing replicates",
                "check the seeds' addresses, that they run `svc serve`, and `svc mesh firewall`",
            ),
        ]
        peers: list[VerifyPeer] = []
        dialed: dict[str, Outbound] = {}
        for out in self.links.outbound.values():
            held = dialed.get(out.key or out.target)
            if held is None or (held.link is None and out.link is not None):
                dialed[out.key or out.target] = out
        for out in list(dialed.values()):
            ok = await self.exchange(out) if out.link is None else True
            answered = ok and out.link is not None and await self.exchange(out, full=True)
            key = out.key or out.target
            peer = self.links.peers.get(key)
            state = peer.state(trio.current_time(), self.heartbeat, self.expiry) if peer else "connecting"
            converged = None
            if answered and out.theirs is not None:
                mine = {s: self.journal.high(s) for s in self.journal.streams()}
                converged = all(out.theirs.get(s, 0) == seq for s, seq in mine.items()) and all(
                    mine.get(s, 0) == seq for s, seq in out.theirs.items()
                )
            held_row = next((p for p in peers if p.runtime == key), None)
            if held_row is not None and (held_row.round_trip or not answered):
                continue
            if held_row is not None:
                peers.remove(held_row)
            peers.append(
                VerifyPeer(
                    runtime=key,
                    state=state,
                    dialed=True,
                    round_trip=answered,
                    rtt_ms=peer.rtt_ms if answered and peer is not None else None,
                    converged=converged,
                    detail="answered" if answered else (out.last_error or "no link"),
                )
            )
        for key in sorted(self.links.peers):
            if self.links.outbound_of(key) is None:
                peer = self.links.peers[key]
                peers.append(
                    VerifyPeer(
                        runtime=key,
                        state=peer.state(mono, self.heartbeat, self.expiry),
                        dialed=False,
                        detail="dials this runtime",
                    )
                )
        failed = any(p.dialed and not p.round_trip and p.state != "expired" for p in peers)
        return MeshVerifyReport(
            ok=all(c.ok for c in checks) and not failed,
            runtime=self.key,
            checks=checks,
            peers=peers,
            digest=self.state().digest,
        )


def _check(name: str, ok: bool, detail: str, impact: str, remediation: str) -> DoctorCheck:
    if ok:
        return DoctorCheck(check=name, ok=True, detail=detail)
    return DoctorCheck(check=name, ok=False, detail=detail, impact=impact, remediation=remediation)


def _event_view(event: Event) -> EventView:
    return EventView(
        stream=event.stream,
        seq=event.seq,
        lamport=event.lamport,
        at=event.at,
        repo=event.repo,
        pk=event.pk,
        kind=event.kind,
        body=event.body,
    )
