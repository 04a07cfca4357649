"""An in-memory datagram fabric: hosts, UDP sockets, multicast groups and broadcast, with a seeded RNG that
drops, duplicates and delays. It implements `svc.mesh_udp.Network`, so the providers run on it unchanged
under the autojump clock, without a socket."""

from __future__ import annotations

import errno
import ipaddress
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field

import trio

from svc.mesh_udp import Interface

Address = tuple[str, int]


@dataclass(eq=False)
class FakeSocket:
    fabric: Fabric
    host: str
    port: int
    shared: bool
    groups: set[str] = field(default_factory=set)
    broadcast: bool = False
    closed: bool = False

    def __post_init__(self) -> None:
        self._send, self._receive = trio.open_memory_channel[tuple[bytes, Address, str | None]](math.inf)

    def local_port(self) -> int:
        return self.port

    async def sendto(self, data: bytes, address: Address) -> None:
        await trio.lowlevel.checkpoint()
        if self.closed:
            raise OSError(errno.EBADF, "closed")
        self.fabric.route(self, data, address)

    async def receive(self) -> tuple[bytes, Address, str | None]:
        return await self._receive.receive()

    def deliver(self, item: tuple[bytes, Address, str | None]) -> None:
        if not self.closed:
            self._send.send_nowait(item)

    def enable_broadcast(self) -> None:
        self.broadcast = True

    def set_multicast(self, *, ttl: int, loop: bool) -> None:
        pass

    def set_multicast_interface(self, address: str) -> None:
        if address != self.host:
            raise OSError(errno.EADDRNOTAVAIL, "not an address of this host")

    def join(self, group: str, interface: str) -> None:
        if interface != self.host:
            raise OSError(errno.EADDRNOTAVAIL, "not an address of this host")
        self.groups.add(group)

    def close(self) -> None:
        self.closed = True
        if self in self.fabric.sockets:
            self.fabric.sockets.remove(self)


class FakeNetwork:
    """One host of the fabric: a single interface `eth0` on a /24."""

    def __init__(self, fabric: Fabric, address: str) -> None:
        self.fabric = fabric
        self.address = address
        self._next_port = 40000

    def interfaces(self) -> list[Interface]:
        net = ipaddress.IPv4Network(f"{self.address}/24", strict=False)
        return [
            Interface(name="lo", address="127.0.0.1", loopback=True, multicast=False),
            Interface(name="eth0", address=self.address, netmask="255.255.255.0", broadcast=str(net.broadcast_address)),
        ]

    async def bind(self, address: Address, *, shared: bool) -> FakeSocket:
        await trio.lowlevel.checkpoint()
        port = address[1]
        if port == 0:
            self._next_port += 1
            port = self._next_port
        taken = [s for s in self.fabric.sockets if s.host == self.address and s.port == port]
        if taken and not (shared and all(s.shared for s in taken)):
            raise OSError(errno.EADDRINUSE, "Address already in use")
        sock = FakeSocket(self.fabric, self.address, port, shared)
        self.fabric.sockets.append(sock)
        return sock

    async def resolve(self, host: str, port: int) -> Address:
        await trio.lowlevel.checkpoint()
        return (host, port)


class Fabric:
    """The network every `FakeNetwork` host is on; `loss`, `duplicate` and `delay` apply per delivery."""

    def __init__(
        self, nursery: trio.Nursery, *, seed: int = 0, loss: float = 0.0, duplicate: float = 0.0, delay: float = 0.0
    ) -> None:
        self.nursery = nursery
        self.rng = random.Random(seed)
        self.loss, self.duplicate, self.delay = loss, duplicate, delay
        self.sockets: list[FakeSocket] = []
        self.delivered = 0
        self.dropped = 0
        self.sent_to: list[str] = []
        #: A partition: deliveries between two hosts for which it answers True are dropped.
        self.cut: Callable[[str, str], bool] | None = None

    def host(self, address: str) -> FakeNetwork:
        return FakeNetwork(self, address)

    def route(self, sender: FakeSocket, data: bytes, address: Address) -> None:
        ip, port = address
        self.sent_to.append(ip)
        target = ipaddress.IPv4Address(ip)
        source = (sender.host, sender.port)
        if target.is_multicast:
            receivers = [s for s in self.sockets if s.port == port and ip in s.groups]
        elif ip == "255.255.255.255" or ip.endswith(".255"):
            if not sender.broadcast:
                raise PermissionError(errno.EACCES, "Permission denied")
            receivers = [s for s in self.sockets if s.port == port and s.shared]
        else:
            on_host = [s for s in self.sockets if s.host == ip and s.port == port]
            receivers = on_host[:1]
        cut = self.cut
        if cut is not None:
            receivers = [r for r in receivers if not cut(sender.host, r.host)]
        for receiver in receivers:
            copies = 2 if self.rng.random() < self.duplicate else 1
            for _ in range(copies):
                if self.rng.random() < self.loss:
                    self.dropped += 1
                    continue
                self.delivered += 1
                item = (data, source, ip)
                if self.delay:
                    self.nursery.start_soon(self._later, receiver, item, self.rng.uniform(0, self.delay))
                else:
                    receiver.deliver(item)

    async def _later(self, receiver: FakeSocket, item: tuple[bytes, Address, str | None], seconds: float) -> None:
        await trio.sleep(seconds)
        receiver.deliver(item)

    def inject(self, data: bytes, *, source: Address, to: Address) -> None:
        """A datagram from nowhere in particular (a forger on the network)."""
        for receiver in [s for s in self.sockets if s.port == to[1] and (to[0] in s.groups or s.host == to[0])]:
            receiver.deliver((data, source, to[0]))
