"""The `plan` and `mesh` topics of `/events`: what moves them, and the last view each is diffed against.

**plan.** A hook of the repository generation (run in a worker thread after the watcher saw the generation
move, so a move by another process and a hand edit alike) derives the plan with `svc.plan.read_snapshot`,
compares each issue's status, wave and blockers with the view kept from the last derivation, and publishes
`plan.changed` naming the issues that moved, before the watcher's round ends. It derives only while the topic is
followed: from its first subscriber on, and for `LINGER_SECONDS` after its last one left (so a reconnect by
cursor replays what it missed); after that the view is dropped, and the next subscriber takes a fresh one
before its `stream.ready` (raising the topic's floor: a cursor from before the pause is `truncated`).

**mesh.** A task of the supervisor nursery, started by the first subscriber of the topic and running for the
life of the process, waits for cooperation to run, then reads the fold after every exchange, write and
beat (`Cooperation.changed`): when the digest moved, `mesh.changed` carries the new digest and the claims,
sessions, reviews and handovers that changed. Where cooperation does not run there are no mesh frames.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from typing import TYPE_CHECKING

import msgspec
import trio

from svc.nursery._topics import (
    MeshChangedData,
    MeshItemChange,
    PlanChangedData,
    PlanIssueChange,
    PlanIssueFacts,
    TopicLog,
)
from svc.plan import Plan, read_snapshot

if TYPE_CHECKING:
    from svc.mesh_udp import CooperationState, Mesh
    from svc.mesh_udp._cooperation import Cooperation
    from svc.nursery import Engine
    from svc.runtime import Executor

__all__ = ["LINGER_SECONDS", "MeshTopic", "PlanTopic", "Topics", "mesh_changes", "plan_changes", "plan_facts"]

_log = logging.getLogger("svc.events")
#: How long the plan is still derived after its last subscriber left (a reconnect's replay stays complete).
LINGER_SECONDS = 60.0
PlanView = dict[str, tuple[PlanIssueFacts, list[str]]]


def plan_facts(plan: Plan) -> PlanView:
    """Each issue's compared facts (status, wave, blockers) and its dependents."""
    return {
        issue.id: (
            PlanIssueFacts(status=issue.status, wave=issue.wave, blocked_by=list(issue.blocked_by)),
            list(issue.dependents),
        )
        for issue in plan.issues
    }


def plan_changes(before: PlanView, after: PlanView) -> list[PlanIssueChange]:
    """The issues whose facts differ between two views (new and gone ones included), in id order."""
    changes: list[PlanIssueChange] = []
    for issue_id in sorted(before.keys() | after.keys()):
        old, new = before.get(issue_id), after.get(issue_id)
        old_facts, new_facts = (old[0] if old else None), (new[0] if new else None)
        if old_facts == new_facts:
            continue
        dependents = (new or old or (None, []))[1]
        changes.append(PlanIssueChange(id=issue_id, before=old_facts, after=new_facts, dependents=dependents))
    return changes


def _items(state: CooperationState) -> dict[str, dict[str, tuple[str, bytes]]]:
    """Each kind's items by key: (state, encoded view)."""
    enc = msgspec.json.encode
    return {
        "claims": {c.key: (str(c.state.state), enc(c)) for c in state.claims},
        "sessions": {s.key: (str(s.state), enc(s)) for s in state.sessions},
        "reviews": {r.key: (str(r.state), enc(r)) for r in state.reviews},
        "handovers": {h.id: ("consumed" if h.consumed_by else "published", enc(h)) for h in state.handovers},
    }


def mesh_changes(before: CooperationState | None, after: CooperationState) -> MeshChangedData:
    """The new digest and the items of each kind that were added, removed or changed, in key order."""
    old = (
        _items(before) if before is not None else {kind: {} for kind in ("claims", "sessions", "reviews", "handovers")}
    )
    new = _items(after)
    moved: dict[str, list[MeshItemChange]] = {}
    for kind, items in new.items():
        was = old[kind]
        moved[kind] = [
            MeshItemChange(
                key=key,
                before=was[key][0] if key in was else None,
                after=items[key][0] if key in items else None,
            )
            for key in sorted(was.keys() | items.keys())
            if was.get(key) != items.get(key)
        ]
    return MeshChangedData(
        digest=after.digest,
        previous=before.digest if before is not None else None,
        claims=moved["claims"],
        sessions=moved["sessions"],
        reviews=moved["reviews"],
        handovers=moved["handovers"],
    )


class PlanTopic:
    """The `plan` topic of one runtime: the generation hook, the last derived view, the log."""

    def __init__(self, executor: Executor) -> None:
        self.runtime = executor.runtime
        self.log = TopicLog("plan")
        self.subscribers = 0
        #: When the last subscriber left (`time.monotonic`); None while one listens or before the first.
        self.idle_since: float | None = None
        self._view: PlanView | None = None
        self._lock = threading.Lock()
        self._hooked = False

    def following(self) -> bool:
        """Whether the plan is derived on a move: someone listens, or the last one left under `LINGER_SECONDS` ago."""
        idle = self.idle_since
        return self.subscribers > 0 or (idle is not None and time.monotonic() - idle < LINGER_SECONDS)

    @property
    def holding(self) -> bool:
        """Whether a view is held (the topic is followed, or will be dropped at the next move)."""
        return self._view is not None

    def _derive(self) -> PlanView:
        return plan_facts(read_snapshot(self.runtime.repository).plan)

    async def prepare(self) -> None:
        """Before a subscriber registers: hook the generation (once) and hold a view to diff against."""
        if not self._hooked:
            self._hooked = True
            # First in the round: the frame does not wait for the rebuild of the resident layer state.
            self.runtime.generation.hooks.insert(0, self.moved)
        await trio.to_thread.run_sync(self._baseline)

    def _baseline(self) -> None:
        """In a worker thread: derive the view when none is held (the first subscriber, or after a pause).

        A plan that cannot be derived now leaves no view (logged): no frame is sent until a later subscriber
        derives one, and the connection is served as usual.
        """
        with self._lock:
            if self._view is None:
                try:
                    self._view = self._derive()
                except Exception:
                    _log.exception("svc: the plan topic could not derive the plan; it sends nothing for now")
                    return
                trio.from_thread.run_sync(self.log.resumed)

    def moved(self) -> None:
        """The generation hook (a worker thread): derive, diff against the view, publish `plan.changed`."""
        with self._lock:
            if self._view is None:
                return
            if not self.following():
                self._view = None
                return
            generation = self.runtime.generation.value
            view = self._derive()
            changes = plan_changes(self._view, view)
            self._view = view
            if changes:
                data = PlanChangedData(generation=generation, issues=changes)
                trio.from_thread.run_sync(self.log.publish, "plan.changed", data)

    def joined(self) -> None:
        """One more subscriber (on the event loop)."""
        self.subscribers += 1
        self.idle_since = None

    def left(self) -> None:
        """One subscriber fewer (on the event loop)."""
        self.subscribers -= 1
        if self.subscribers == 0:
            self.idle_since = time.monotonic()


class MeshTopic:
    """The `mesh` topic of one runtime: the follower task and the last state seen."""

    def __init__(self, executor: Executor) -> None:
        self.executor = executor
        self.log = TopicLog("mesh")
        self._last: CooperationState | None = None
        self._started = False

    def _mesh(self) -> Mesh | None:
        from svc.mesh_udp import Mesh

        return self.executor.components.find(Mesh)

    def cooperation(self) -> Cooperation | None:
        """This runtime's cooperation when it runs, else None."""
        mesh = self._mesh()
        coop = mesh.cooperation if mesh is not None else None
        return coop if coop is not None and coop.active else None

    def prepare(self) -> None:
        """Before a subscriber registers (no checkpoint): start the follower (once) and hold the state now."""
        mesh = self._mesh()
        if mesh is None:
            return
        if not self._started:
            self._started = True
            self.executor.supervisor.start_soon(self._follow, mesh, name="svc-events-mesh")
        coop = self.cooperation()
        if coop is not None and self._last is None:
            self._last = coop.state()

    async def _follow(self, mesh: Mesh) -> None:
        """Wait for cooperation, then publish `mesh.changed` whenever the fold's digest moves."""
        await mesh.wait_until(lambda: self.cooperation() is not None)
        coop = self.cooperation()
        assert coop is not None
        while True:
            if coop.active:  # a stopped cooperation sends nothing more
                try:
                    self.observe(coop.state())
                except Exception:
                    _log.exception("svc: the mesh topic could not read the cooperation state; it goes on")
            await coop.changed()

    def observe(self, state: CooperationState) -> None:
        """Publish `mesh.changed` when `state`'s digest differs from the last one seen (no checkpoint)."""
        last = self._last
        if last is not None and last.digest == state.digest:
            return
        self._last = state
        if last is not None:
            self.log.publish("mesh.changed", mesh_changes(last, state))


class Topics:
    """The topics of one runtime's live channel (one per execution engine: `Topics.of`)."""

    def __init__(self, executor: Executor) -> None:
        self.plan = PlanTopic(executor)
        self.mesh = MeshTopic(executor)

    @classmethod
    def of(cls, engine: Engine) -> Topics:
        """The topics of `engine`'s runtime, made on first use (every channel of one runtime shares them)."""
        found = _BY_ENGINE.get(engine)
        if found is None:
            found = _BY_ENGINE[engine] = cls(engine.executor)
        return found

    def log(self, topic: str) -> TopicLog:
        """The log of `plan` or `mesh`."""
        return self.plan.log if topic == "plan" else self.mesh.log


_BY_ENGINE: weakref.WeakKeyDictionary[Engine, Topics] = weakref.WeakKeyDictionary()
