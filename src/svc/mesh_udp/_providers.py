"""The discovery providers as trio tasks (docs/mesh.md): thin socket loops around `MeshCore`.

Each provider is a task of the supervisor nursery in its own cancel scope, handed back through
`task_status.started(scope)` once it is bound (or has failed), so it can be restarted alone. A provider
that fails (a port taken, a join refused) reports `failed` with the reason and is retried with a growing
delay; a provider with nothing to do reports `stopped`.

- `link`: the runtime's own socket on `0.0.0.0:<cooperation.port>` (next free up to +15; 0 = ephemeral),
  no `SO_REUSEPORT`. Every unicast datagram and every announcement leaves from it.
- `multicast`: a shared socket on `0.0.0.0:<port>` that joined the group on each selected interface;
  announcements go out through each interface (`IP_MULTICAST_IF`) at start, then every interval + 0-2 s.
- `broadcast`: announcements to the directed (and, in `auto`, limited) broadcast addresses; it listens on
  its own shared socket only when the multicast socket does not already listen on that port.
- `rendezvous`, `seeds`, `tailscale`: `register` with each endpoint from the link socket, an answer within
  5 s; a failure backs off interval × 2^failures, at most × 8.
"""

from __future__ import annotations

import logging
import random
import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Final

import msgspec
import trio

from svc.mesh_udp._wire import new_nonce

if TYPE_CHECKING:
    from svc.mesh_udp._core import Handled, MeshCore
    from svc.mesh_udp._declaration import MeshDeclaration
    from svc.mesh_udp._net import Address, DatagramSocket, Interface, Network
    from svc.mesh_udp._views import ProviderState

__all__ = ["PROVIDER_IDS", "ProviderSet", "ProviderSlot"]

_log = logging.getLogger("svc.mesh")

PROVIDER_IDS: Final = ("link", "multicast", "broadcast", "rendezvous", "seeds", "tailscale")
ANSWER_SECONDS: Final = 5.0
RETRY_SECONDS: Final = 5.0
RETRY_MAX_SECONDS: Final = 300.0
LINK_PORT_SPAN: Final = 16
JITTER_SECONDS: Final = 2.0
TAILSCALE_PORT: Final = 7742

Ready = Callable[[str], None]


@dataclass(slots=True)
class ProviderSlot:
    """One provider's reported state, its counters, and the cancel scope of its current task."""

    id: str
    state: ProviderState = "stopped"
    detail: str | None = "not started"
    sent: int = 0
    received: int = 0
    scope: trio.CancelScope | None = None
    done: trio.Event = field(default_factory=trio.Event)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


class ProviderSet:
    """The provider tasks of one runtime, sharing its core, its network and its link socket."""

    def __init__(
        self,
        core: MeshCore,
        declaration: MeshDeclaration,
        network: Network,
        interfaces: list[Interface],
        *,
        wall: Callable[[], float],
        rng: random.Random,
        changed: Callable[[], None],
        endpoints: Callable[[int], list[str]],
        broadcast_targets: list[str],
    ) -> None:
        self.core = core
        self.declaration = declaration
        self.network = network
        self.interfaces = interfaces
        self.wall = wall
        self.rng = rng
        self.changed = changed
        self.endpoints = endpoints
        self.broadcast_targets = broadcast_targets
        self.slots = {pid: ProviderSlot(id=pid) for pid in PROVIDER_IDS}
        self.link: DatagramSocket | None = None
        self.link_port: int | None = None
        self.linked = trio.Event()
        self._answers: dict[str, trio.Event] = {}
        self._send_lock = trio.Lock()
        self.bodies: dict[str, Callable[[ProviderSlot, Ready], Awaitable[None]]] = {
            "link": self._link,
            "multicast": self._multicast,
            "broadcast": self._broadcast,
            "rendezvous": self._rendezvous,
            "seeds": self._seeds,
            "tailscale": self._tailscale,
        }

    # -- supervision --------------------------------------------------------------------------------

    async def supervise(
        self, slot: ProviderSlot, *, task_status: trio.TaskStatus[trio.CancelScope] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Run one provider in its own cancel scope (handed back once bound or failed), retrying failures."""
        scope = trio.CancelScope()
        slot.scope, slot.done = scope, trio.Event()
        body = self.bodies[slot.id]
        started = False

        def ready(detail: str) -> None:
            nonlocal started
            slot.state, slot.detail = "running", detail
            if not started:
                started = True
                task_status.started(scope)

        try:
            with scope:
                failures = 0
                while True:
                    try:
                        await body(slot, ready)
                        break
                    except trio.Cancelled:
                        raise
                    except Exception as exc:
                        failures += 1
                        slot.state, slot.detail = "failed", _describe(exc)
                        _log.warning("svc: mesh: %s provider failed: %s", slot.id, slot.detail)
                        if not isinstance(exc, OSError):
                            _log.debug("svc: mesh: %s provider", slot.id, exc_info=exc)
                        if not started:
                            started = True
                            task_status.started(scope)
                    await trio.sleep(min(RETRY_SECONDS * 2 ** (failures - 1), RETRY_MAX_SECONDS))
        finally:
            if slot.state == "running":
                slot.state, slot.detail = "stopped", "stopped"
            slot.done.set()
        if not started:
            task_status.started(scope)

    def _stopped(self, slot: ProviderSlot, detail: str) -> None:
        slot.state, slot.detail = "stopped", detail

    async def _after(self, handled: Handled) -> None:
        if handled.outcome is not None and handled.outcome.accepted:
            self.changed()
        for data, address in handled.replies:
            await self.send_link(data, address, self.slots["link"])
        if handled.answered is not None:
            event = self._answers.get(handled.answered)
            if event is not None:
                event.set()

    async def send_link(self, data: bytes, address: Address, slot: ProviderSlot) -> bool:
        """Send from the link socket, counted on `slot`; False when there is no link socket or it failed."""
        link = self.link
        if link is None:
            return False
        try:
            await link.sendto(data, address)
        except OSError as exc:
            _log.debug("svc: mesh: send to %s:%s failed: %s", address[0], address[1], _describe(exc))
            return False
        slot.sent += 1
        return True

    async def _receive(self, sock: DatagramSocket, label: str) -> None:
        group = self.declaration.multicast.group
        while True:
            data, source, destination = await sock.receive()
            heard = label
            if label == "multicast" and destination is not None and destination != group:
                heard = "broadcast"
            self.slots[heard].received += 1
            handled = self.core.receive(data, source=heard, origin=source, wall=self.wall(), mono=trio.current_time())
            await self._after(handled)

    async def _announce(self, send: Callable[[bytes], Awaitable[None]], interval: int) -> None:
        while True:
            await send(self.core.beacon.datagram(self.wall()))
            await trio.sleep(interval + self.rng.uniform(0, JITTER_SECONDS))

    # -- link ---------------------------------------------------------------------------------------

    async def _bind_link(self) -> DatagramSocket:
        first = self.declaration.cooperation.port
        ports = [0] if first == 0 else [p for p in range(first, first + LINK_PORT_SPAN) if p <= 65535]
        error: OSError | None = None
        for port in ports:
            try:
                return await self.network.bind(("0.0.0.0", port), shared=False)
            except OSError as exc:
                error = exc
        raise OSError(f"ports {ports[0]}-{ports[-1]} are all taken ({_describe(error) if error else 'no port'})")

    async def _link(self, slot: ProviderSlot, ready: Ready) -> None:
        sock = await self._bind_link()
        try:
            port = sock.local_port()
            notes = []
            try:
                sock.enable_broadcast()
            except OSError as exc:
                notes.append(f"SO_BROADCAST refused: {_describe(exc)}")
            try:
                multicast = self.declaration.multicast
                sock.set_multicast(ttl=multicast.ttl, loop=True)
            except OSError as exc:
                notes.append(f"multicast options refused: {_describe(exc)}")
            self.link, self.link_port = sock, port
            self.core.beacon.endpoints = self.endpoints(port)
            self.linked.set()
            ready("; ".join([f"0.0.0.0:{port}", *notes]))
            while True:
                data, source, _ = await sock.receive()
                slot.received += 1
                handled = self.core.receive(
                    data, source="direct", origin=source, wall=self.wall(), mono=trio.current_time()
                )
                await self._after(handled)
        finally:
            self.link = None
            self.linked = trio.Event()
            sock.close()

    # -- multicast and broadcast --------------------------------------------------------------------

    async def _multicast(self, slot: ProviderSlot, ready: Ready) -> None:
        settings = self.declaration.multicast
        if not settings.enabled:
            self._stopped(slot, "disabled in the declaration")
            return
        sock = await self.network.bind(("0.0.0.0", settings.port), shared=True)
        try:
            joined, refused = [], []
            for interface in self.interfaces:
                try:
                    sock.join(settings.group, interface.address)
                    joined.append(interface.address)
                except OSError as exc:
                    refused.append(f"{interface.address}: {_describe(exc)}")
            if not joined:
                raise OSError(f"cannot join {settings.group} on any interface ({'; '.join(refused)})")
            detail = f"{settings.group}:{settings.port} joined on {', '.join(joined)}"
            ready(detail + (f"; refused on {'; '.join(refused)}" if refused else ""))
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._receive, sock, "multicast")
                nursery.start_soon(self._announce, self._send_multicast, settings.interval_seconds)
        finally:
            sock.close()

    async def _send_multicast(self, data: bytes) -> None:
        settings, slot = self.declaration.multicast, self.slots["multicast"]
        link = self.link
        if link is None:
            return
        for interface in self.interfaces:
            async with self._send_lock:
                try:
                    link.set_multicast_interface(interface.address)
                except OSError as exc:
                    _log.debug("svc: mesh: IP_MULTICAST_IF %s refused: %s", interface.address, _describe(exc))
                    continue
                await self.send_link(data, (settings.group, settings.port), slot)

    async def _broadcast(self, slot: ProviderSlot, ready: Ready) -> None:
        settings = self.declaration.broadcast
        if settings.mode == "disabled":
            self._stopped(slot, "disabled in the declaration")
            return
        if not self.broadcast_targets:
            self._stopped(slot, "no broadcast address to send to")
            return
        multicast = self.declaration.multicast
        shares = multicast.enabled and multicast.port == settings.port
        targets = ", ".join(self.broadcast_targets)
        sock = None if shares else await self.network.bind(("0.0.0.0", settings.port), shared=True)
        try:
            if sock is None:
                ready(f"to {targets}:{settings.port}; heard on the multicast socket")
            else:
                ready(f"to {targets}:{settings.port}; listening on 0.0.0.0:{settings.port}")
            async with trio.open_nursery() as nursery:
                if sock is not None:
                    nursery.start_soon(self._receive, sock, "broadcast")
                nursery.start_soon(self._announce, self._send_broadcast, settings.interval_seconds)
        finally:
            if sock is not None:
                sock.close()

    async def _send_broadcast(self, data: bytes) -> None:
        port, slot = self.declaration.broadcast.port, self.slots["broadcast"]
        for target in self.broadcast_targets:
            await self.send_link(data, (target, port), slot)

    # -- registration: rendezvous, seeds, tailscale -------------------------------------------------

    async def register_once(self, endpoint: str, *, source: str, slot: ProviderSlot) -> str | None:
        """Register with `endpoint` once; None when answered within 5 s, else why not."""
        host, _, port = endpoint.rpartition(":")
        try:
            address = await self.network.resolve(host, int(port))
        except OSError as exc:
            return f"does not resolve: {_describe(exc)}"
        nonce = new_nonce()
        event = self._answers[nonce] = trio.Event()
        try:
            data = self.core.register_request(nonce=nonce, source=source, path=endpoint, wall=self.wall())
            if not await self.send_link(data, address, slot):
                return "no link socket to send from"
            with trio.move_on_after(ANSWER_SECONDS):
                await event.wait()
        finally:
            del self._answers[nonce]
            result = self.core.forget(nonce)
        if result is None:
            return f"no answer within {ANSWER_SECONDS:.0f} s"
        slot.received += 1
        if not result.hub.accepted and result.hub.reason != "replayed":
            return f"the hub's envelope was refused: {result.hub.reason}"
        if not result.accepted:
            return f"the hub refused this runtime: {result.refusal}"
        return None

    async def _register_loop(self, endpoint: str, *, source: str, slot: ProviderSlot, states: dict[str, str]) -> None:
        interval = self.declaration.rendezvous.interval_seconds
        failures = 0
        while True:
            await self.linked.wait()
            problem = await self.register_once(endpoint, source=source, slot=slot)
            if problem is None:
                failures = 0
                states[endpoint] = "answered"
            else:
                failures += 1
                states[endpoint] = problem
            ok = sum(1 for s in states.values() if s == "answered")
            slot.detail = f"{ok} of {len(states)} answered" + "".join(
                f"; {e}: {s}" for e, s in states.items() if s != "answered"
            )
            await trio.sleep(interval * 2 ** min(failures, 3))

    async def _register_all(self, slot: ProviderSlot, ready: Ready, endpoints: list[str], source: str) -> None:
        states = dict.fromkeys(endpoints, "not yet answered")
        ready(f"{len(endpoints)} endpoint{'s' if len(endpoints) != 1 else ''}")
        async with trio.open_nursery() as nursery:
            for endpoint in endpoints:
                nursery.start_soon(partial(self._register_loop, endpoint, source=source, slot=slot, states=states))

    async def _rendezvous(self, slot: ProviderSlot, ready: Ready) -> None:
        endpoints = self.declaration.rendezvous.endpoints
        if not endpoints:
            self._stopped(slot, "no endpoint declared")
            return
        await self._register_all(slot, ready, endpoints, "rendezvous")

    async def _seeds(self, slot: ProviderSlot, ready: Ready) -> None:
        seeds = self.declaration.cooperation.seeds
        if not seeds:
            self._stopped(slot, "no seed declared")
            return
        await self._register_all(slot, ready, seeds, "seed")

    async def _tailscale(self, slot: ProviderSlot, ready: Ready) -> None:
        if not self.declaration.tailscale.enabled:
            self._stopped(slot, "disabled in the declaration")
            return
        executable = shutil.which("tailscale")
        if executable is None:
            self._stopped(slot, "no tailscale CLI on PATH")
            return
        ready("asking tailscale for online peers")
        interval = self.declaration.rendezvous.interval_seconds
        while True:
            peers = await self._tailnet_peers(executable)
            answered = 0
            for address in peers:
                problem = await self.register_once(f"{address}:{TAILSCALE_PORT}", source="tailscale", slot=slot)
                answered += problem is None
            slot.detail = f"{len(peers)} online peers, {answered} answered"
            await trio.sleep(interval)

    async def _tailnet_peers(self, executable: str) -> list[str]:
        try:
            done = await trio.run_process([executable, "status", "--json"], capture_stdout=True, check=False)
        except OSError:
            return []
        if done.returncode != 0:
            return []
        try:
            status: Any = msgspec.json.decode(done.stdout)
        except msgspec.DecodeError:
            return []
        peers = status.get("Peer") if isinstance(status, dict) else None
        out: list[str] = []
        for peer in (peers or {}).values():
            if isinstance(peer, dict) and peer.get("Online"):
                out += [ip for ip in peer.get("TailscaleIPs") or [] if isinstance(ip, str) and "." in ip][:1]
        return out
