"""One runtime's mesh: the declaration, the identity, the core and the provider tasks, and its answers.

A server (`svc serve`, `svc mcp`) prepares its mesh with `Mesh.open` (the declaration and, when it enables
the mesh, the node key and the ids), hands it to its executor as a component, and once it serves calls
`start_mesh(mesh, supervisor)`, which starts each provider as a task of the supervisor nursery in its own
cancel scope. With no declaration, or one that says `enabled: false`, nothing opens; the mesh answers why it
is off. Capabilities find it as `ctx.components.find(Mesh)`.
"""

from __future__ import annotations

import datetime as dt
import logging
import random
import time
from collections.abc import Callable, Collection
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from svc._version import __version__
from svc.layer import ensure_local_state
from svc.mesh_udp._core import Beacon, MeshCore
from svc.mesh_udp._declaration import DeclarationReading, read_declaration
from svc.mesh_udp._identity import (
    IdentityError,
    NodeIdentity,
    RepositoryIdentity,
    create_identity,
    display_path,
    identity_path,
    new_instance_id,
    repository_id,
    runtime_id,
)
from svc.mesh_udp._net import Network, SystemNetwork, broadcast_targets, link_endpoints, select_interfaces
from svc.mesh_udp._nodes import NodeEntry, NodeRegistry
from svc.mesh_udp._providers import PROVIDER_IDS, ProviderSet, ProviderSlot
from svc.mesh_udp._trust import TrustStore
from svc.mesh_udp._views import (
    DeclarationView,
    MeshIdentity,
    MeshRefusals,
    MeshStatus,
    MeshTallies,
    NodeList,
    NodeView,
    ProviderView,
    RegisterAnswer,
    SourceView,
)

if TYPE_CHECKING:
    from svc.layer import Repository
    from svc.mesh_udp._cooperation import Cooperation
    from svc.runtime import Supervisor

__all__ = ["Mesh", "start_mesh"]

_log = logging.getLogger("svc.mesh")
NOT_RUNNING = "this process does not run the mesh (it runs in the serving server: svc serve or svc mcp)"


def _stamp(wall: float) -> str:
    return dt.datetime.fromtimestamp(wall, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Mesh:
    """The mesh of one runtime. Build it with `Mesh.open`, then `start` it in a nursery."""

    def __init__(
        self,
        *,
        reading: DeclarationReading,
        identity_file: Path | None,
        reason: str | None,
        identity: NodeIdentity | None = None,
        runtime: str | None = None,
        repository: RepositoryIdentity | None = None,
        network: Network | None = None,
        wall: Callable[[], float] = time.time,
        rng: random.Random | None = None,
        version: str = __version__,
        state_dir: Path | None = None,
    ) -> None:
        self.reading = reading
        self.identity_file = identity_file
        self.reason = reason
        self.identity = identity
        self.instance = new_instance_id()
        self.runtime = runtime
        self.repository = repository
        self.network: Network = network or SystemNetwork()
        self.wall = wall
        self.rng = rng or random.Random()
        self.version = version
        self.started_at: str | None = None
        self.state_dir = state_dir
        self.core: MeshCore | None = None
        self.providers: ProviderSet | None = None
        self.cooperation: Cooperation | None = None
        #: The peer ids of the MCP sessions attached to this process (each projected as a `board-<peer>` session).
        self.mcp_sessions: Callable[[], Collection[str]] = frozenset
        self._nursery: trio.Nursery | None = None
        self._sweeper: trio.CancelScope | None = None
        self._changed = trio.Event()

    @classmethod
    def prepare(
        cls,
        repo: Repository,
        *,
        identity_file: Path | bool | None = True,
        network: Network | None = None,
        wall: Callable[[], float] = time.time,
        rng: random.Random | None = None,
        journal: bool = True,
    ) -> Mesh:
        """Read the declaration and, when it enables the mesh, the identity and the repository id.

        Blocking (file reads, `git`); `Mesh.open` runs it in a worker thread. `identity_file` True means the
        key file of the environment (`$XDG_STATE_HOME/svc/node.json`). A problem never raises: the mesh is
        answered inactive with the reason. `journal` False keeps the cooperation journal in memory only.
        """
        path = identity_path() if identity_file is True else (identity_file or None)
        reading = read_declaration(repo)
        if reading.state == "absent":
            return cls(reading=reading, identity_file=path, reason="off: no declaration under .ai/repo/mesh/")
        if reading.state == "refused":
            return cls(reading=reading, identity_file=path, reason=f"declaration refused: {reading.problems[0]}")
        decl = reading.declaration
        assert decl is not None
        for line in reading.dropped:
            _log.warning("svc: mesh: %s: %s", reading.path, line)
        if not decl.enabled:
            return cls(reading=reading, identity_file=path, reason="off, as declared (enabled: false)")
        if path is None:
            return cls(reading=reading, identity_file=None, reason="identity: neither XDG_STATE_HOME nor HOME is set")
        try:
            identity = create_identity(path)
        except IdentityError as exc:
            return cls(reading=reading, identity_file=path, reason=f"identity: {exc}")
        return cls(
            reading=reading,
            identity_file=path,
            reason=None,
            identity=identity,
            runtime=runtime_id(repo.root),
            repository=repository_id(repo.root, decl.cooperation.repository),
            network=network,
            wall=wall,
            rng=rng,
            state_dir=repo.layer / "local" / "state" / "mesh" if journal else None,
        )

    @classmethod
    def idle(cls, repo: Repository) -> Mesh:
        """The mesh as a process that does not serve it sees it: the declaration and the key file's path.

        Blocking (reads the declaration, runs `git`); nothing is created or opened.
        """
        reading = read_declaration(repo)
        if reading.state == "absent":
            reason = "off: no declaration under .ai/repo/mesh/"
        elif reading.state == "refused":
            reason = f"declaration refused: {reading.problems[0]}"
        else:
            reason = NOT_RUNNING if reading.enabled else "off, as declared (enabled: false)"
        return cls(reading=reading, identity_file=identity_path(), reason=reason)

    @classmethod
    async def open(cls, repo: Repository, **options: Any) -> Mesh:
        """`Mesh.prepare` in a worker thread."""
        return await trio.to_thread.run_sync(partial(cls.prepare, repo, **options))

    @property
    def active(self) -> bool:
        """Whether the providers were started (they may still have failed)."""
        return self.providers is not None and self.reason is None

    @property
    def declared(self) -> bool:
        """Whether the declaration enables the mesh."""
        return self.reading.enabled

    async def start(self, nursery: trio.Nursery) -> None:
        """Start every provider, and the registry sweeper, as tasks of `nursery`, each in its own scope.

        Does nothing when the mesh is off or could not be prepared.
        """
        decl = self.reading.declaration
        if self.reason is not None or decl is None or self.identity is None or self.runtime is None:
            return
        if self.providers is not None:
            return
        repositories = [self.repository.id] if self.repository is not None and self.repository.id else []
        beacon = Beacon(
            self.identity,
            instance=self.instance,
            runtime=self.runtime,
            repositories=repositories,
            version=self.version,
            capabilities=["rendezvous"],
        )
        trust = TrustStore(decl.trust.policy, decl.trust.allow, own_key=self.identity.public_key)
        self.core = MeshCore(beacon, trust, NodeRegistry())
        interfaces = select_interfaces(self.network.interfaces(), decl.interfaces)
        restricted = bool(decl.interfaces)
        self.providers = ProviderSet(
            self.core,
            decl,
            self.network,
            interfaces,
            wall=self.wall,
            rng=self.rng,
            changed=self._notify,
            endpoints=lambda port: link_endpoints(interfaces, port),
            broadcast_targets=broadcast_targets(
                decl.broadcast.mode, interfaces, decl.broadcast.networks, restricted=restricted
            ),
        )
        self._nursery = nursery
        self.started_at = _stamp(self.wall())
        for pid in PROVIDER_IDS:
            await nursery.start(self.providers.supervise, self.providers.slots[pid])
        self._sweeper = await nursery.start(self._sweep)
        await self._start_cooperation(nursery)
        states = ", ".join(f"{s.id} {s.state}" for s in self.providers.slots.values())
        _log.info(
            "svc: mesh: node %s (%s), runtime %s, link port %s; %s",
            self.identity.node_id,
            self.identity.display_name,
            self.runtime,
            self.providers.link_port,
            states,
        )

    def cooperation_reason(self) -> str | None:
        """Why cooperation does not run here (None when it may: the mesh is on and has a repository id)."""
        if self.reason is not None:
            return self.reason
        decl = self.reading.declaration
        if decl is not None and not decl.cooperation.enabled:
            return "off, as declared (cooperation.enabled: false)"
        if self.repository is None or self.repository.id is None:
            detail = self.repository.detail if self.repository is not None else "no repository id"
            return f"no repository id: {detail}"
        return None

    async def _start_cooperation(self, nursery: trio.Nursery) -> None:
        decl, core, providers = self.reading.declaration, self.core, self.providers
        if self.cooperation_reason() is not None or decl is None or core is None or providers is None:
            return
        assert self.identity is not None
        assert self.runtime is not None
        assert self.repository is not None
        assert self.repository.id is not None
        identity, stream = self.identity, f"{self.identity.node_id}-{self.runtime}-{self.instance}"
        from svc.mesh_udp._cooperation import Cooperation

        state_dir = self.state_dir
        opening = partial(
            Cooperation.open_journal,
            identity,
            stream=stream,
            repository=self.repository.id,
            trust=core.trust,
            expiry=float(decl.cooperation.expiry_seconds),
            state_dir=state_dir,
        )
        if state_dir is None:
            journal = opening()
        else:
            await trio.to_thread.run_sync(ensure_local_state, state_dir.parent.parent)
            journal = await trio.to_thread.run_sync(opening)
        link_slot = providers.slots["link"]

        async def send(data: bytes, address: tuple[str, int]) -> bool:
            return await providers.send_link(data, address, link_slot)

        cooperation = Cooperation(
            identity,
            instance=self.instance,
            runtime=self.runtime,
            repository=self.repository,
            settings=decl.cooperation,
            trust=core.trust,
            registry=core.registry,
            send=send,
            resolve=self.network.resolve,
            endpoints=lambda: list(core.beacon.endpoints),
            journal=journal,
            version=self.version,
            wall=self.wall,
            sessions=lambda: self.mcp_sessions(),
        )
        core.link_handler = cooperation.on_link
        core.link_oversized = cooperation.on_oversized
        if "cooperation" not in core.beacon.capabilities:
            core.beacon.capabilities.append("cooperation")
        self.cooperation = cooperation
        await cooperation.start(nursery)
        self._notify()  # waiters on cooperation (the `mesh` topic of /events) see it run

    def stop(self) -> None:
        """Cancel every provider task, the sweeper and cooperation."""
        if self.cooperation is not None:
            self.cooperation.stop()
        if self.providers is not None:
            for slot in self.providers.slots.values():
                if slot.scope is not None:
                    slot.scope.cancel()
        if self._sweeper is not None:
            self._sweeper.cancel()

    async def restart(self, provider: str) -> None:
        """Cancel one provider's task, wait for it to close its sockets, and start a new one.

        Raises:
            KeyError: no such provider, or the mesh was not started.
        """
        if self.providers is None or self._nursery is None:
            raise KeyError(provider)
        slot = self.providers.slots[provider]
        if slot.scope is not None:
            slot.scope.cancel()
            await slot.done.wait()
        await self._nursery.start(self.providers.supervise, slot)

    async def _sweep(self, *, task_status: trio.TaskStatus[trio.CancelScope] = trio.TASK_STATUS_IGNORED) -> None:
        """Expire entries and wake waiters whenever one stops being present (a restartable timer)."""
        assert self.core is not None
        registry = self.core.registry
        with trio.CancelScope() as scope:
            task_status.started(scope)
            while True:
                now = trio.current_time()
                upcoming = registry.next_change(now)
                limit = now + registry.presence_seconds
                await trio.sleep_until(min(upcoming, limit) if upcoming is not None else limit)
                registry.sweep(trio.current_time())
                self._notify()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def wait_until(self, predicate: Callable[[], bool]) -> None:
        """Return once `predicate()` holds, re-checking after every registry change."""
        while True:
            changed = self._changed
            if predicate():
                return
            await changed.wait()

    # -- answers --------------------------------------------------------------------------------------

    def public_identity(self) -> MeshIdentity | None:
        """The public half of this node's identity, with this process's instance id."""
        if self.identity is None:
            return None
        return MeshIdentity(
            node_id=self.identity.node_id,
            public_key=self.identity.public_key,
            display_name=self.identity.display_name,
            instance_id=self.instance,
        )

    def status(self) -> MeshStatus:
        """`mesh.status`."""
        providers = self.providers
        slots = providers.slots if providers is not None else {pid: ProviderSlot(id=pid) for pid in PROVIDER_IDS}
        views = [
            ProviderView(
                id=s.id, state=s.state, detail=s.detail if providers else self.reason, sent=s.sent, received=s.received
            )
            for s in slots.values()
        ]
        core = self.core
        mono = trio.current_time() if core is not None else 0.0
        registry = core.registry if core is not None else NodeRegistry()
        tallies = MeshTallies(
            nodes=len(registry),
            trusted=sum(1 for e in registry if e.trust.state == "trusted"),
            present=len(registry.present(mono)) if core is not None else 0,
            accepted=registry.accepted,
            replayed=registry.replayed,
            expired=registry.expired,
            evicted=registry.evicted,
        )
        refusals = MeshRefusals(**(core.refusals if core is not None else {}))
        decl = self.reading.declaration
        declaration = None
        if self.reading.path is not None:
            declaration = DeclarationView(
                path=self.reading.path,
                id=decl.id if decl is not None else Path(self.reading.path).stem,
                enabled=self.reading.enabled,
                trunk=self.reading.trunk,
                dropped=list(self.reading.dropped),
            )
        return MeshStatus(
            active=self.active,
            reason=self.reason if self.reason is not None else (None if self.active else "not started"),
            identity=self.public_identity(),
            runtime=self.runtime,
            repository=self.repository.id if self.repository is not None else None,
            link_port=providers.link_port if providers is not None else None,
            trust_policy=decl.trust.policy if decl is not None and self.declared else None,
            declaration=declaration,
            providers=views,
            tallies=tallies,
            refusals=refusals,
            started_at=self.started_at,
        )

    def nodes(self) -> NodeList:
        """`mesh.nodes`: present runtimes first, then by node id and runtime."""
        if self.core is None:
            return NodeList(count=0, nodes=[])
        mono = trio.current_time()
        entries = sorted(self.core.registry, key=lambda e: (not e.present(mono), e.node_id, e.runtime))
        return NodeList(count=len(entries), nodes=[_node_view(e, mono) for e in entries])

    def register(self, envelope: Any) -> RegisterAnswer:
        """`mesh.register` from the loopback server.

        The envelope is checked like a datagram and recorded when it holds; the answer carries this node's
        envelope and the candidates.
        """
        if self.core is None:
            return RegisterAnswer(accepted=False, refusal="not_active", candidates=[])
        body = self.core.register_local(envelope, wall=self.wall(), mono=trio.current_time())
        if body["accepted"]:
            self._notify()
        return RegisterAnswer(
            accepted=body["accepted"],
            refusal=body.get("refusal"),
            envelope=body["envelope"],
            candidates=body["candidates"],
        )

    def identity_path_text(self) -> str | None:
        """The key file's path with the home directory as `~`."""
        return display_path(self.identity_file)


def _node_view(entry: NodeEntry, mono: float) -> NodeView:
    env = entry.envelope
    return NodeView(
        node_id=entry.node_id,
        runtime=env.rt,
        public_key=env.pk,
        display_name=env.name,
        instance_id=env.inst,
        trust=entry.trust,
        presence="present" if entry.present(mono) else "absent",
        endpoints=list(entry.endpoints),
        capabilities=list(env.caps),
        repositories=list(env.repos),
        protocol_version=env.v,
        version=env.ver,
        sources=[SourceView(source=s.source, path=s.path, at=_stamp(s.at)) for s in entry.sources.values()],
        first_seen=_stamp(entry.first_seen),
        last_seen=_stamp(entry.last_seen),
        restarts=entry.restarts,
    )


async def start_mesh(mesh: Mesh, supervisor: Supervisor) -> Mesh:
    """Start the providers of a prepared `mesh` under `supervisor` (or log why it stays off)."""
    if mesh.reason is not None:
        level = logging.WARNING if mesh.declared or mesh.reading.state == "refused" else logging.DEBUG
        _log.log(level, "svc: mesh: %s", mesh.reason)
        return mesh
    await mesh.start(supervisor.nursery)
    return mesh
