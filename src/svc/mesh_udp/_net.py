"""The host's IPv4 interfaces and the UDP sockets discovery uses, behind a small `Network` interface.

`SystemNetwork` is the real one (trio sockets; interfaces read with `SIOCGIFCONF` on Linux). Tests pass an
in-memory fabric with the same interface, so the providers run without a socket under the autojump clock.
Which interfaces discovery uses is decided by `select_interfaces`: the declared `interfaces` when given,
else every up, multicast-capable, non-loopback IPv4 interface, else 127.0.0.1.
"""

from __future__ import annotations

import array
import contextlib
import ipaddress
import socket
import struct
import sys
from dataclasses import dataclass
from typing import Protocol, cast

import trio

__all__ = [
    "Address",
    "DatagramSocket",
    "Interface",
    "Network",
    "SystemNetwork",
    "broadcast_targets",
    "link_endpoints",
    "read_interfaces",
    "select_interfaces",
]

Address = tuple[str, int]

_LINUX = sys.platform.startswith("linux")
_IP_PKTINFO = getattr(socket, "IP_PKTINFO", 8)
_IP_MULTICAST_ALL = 49
_SIOCGIFCONF, _SIOCGIFFLAGS, _SIOCGIFNETMASK, _SIOCGIFBRDADDR = 0x8912, 0x8913, 0x891B, 0x8919
_IFF_UP, _IFF_BROADCAST, _IFF_LOOPBACK, _IFF_MULTICAST = 0x1, 0x2, 0x8, 0x1000
_IFREQ = 40
_BRIDGES = ("docker", "br-", "virbr")
_LINK_LOCAL = ipaddress.IPv4Network("169.254.0.0/16")
LOOPBACK = "127.0.0.1"


@dataclass(frozen=True, slots=True)
class Interface:
    """One IPv4 address of an interface and what the interface can do."""

    name: str
    address: str
    netmask: str = "255.0.0.0"
    broadcast: str | None = None
    up: bool = True
    loopback: bool = False
    multicast: bool = True

    @property
    def network(self) -> ipaddress.IPv4Network:
        """The network the address is in."""
        return ipaddress.IPv4Network(f"{self.address}/{self.netmask}", strict=False)

    @property
    def bridge(self) -> bool:
        """Whether it is a container or VM bridge (advertised last)."""
        return self.name.startswith(_BRIDGES)


LOOPBACK_INTERFACE = Interface(name="lo", address=LOOPBACK, loopback=True)


def read_interfaces() -> list[Interface]:
    """Every interface with an IPv4 address (Linux; elsewhere, and on failure, an empty list)."""
    if not _LINUX:
        return []
    import fcntl

    found: list[Interface] = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        size = _IFREQ * 256
        buffer = array.array("B", bytes(size))
        pointer, _ = buffer.buffer_info()
        try:
            answer = fcntl.ioctl(probe.fileno(), _SIOCGIFCONF, struct.pack("iL", size, pointer))
        except OSError:
            return []
        used = struct.unpack("iL", answer)[0]
        raw = buffer.tobytes()[:used]
        for offset in range(0, used, _IFREQ):
            name_bytes = raw[offset : offset + 16]
            name = name_bytes.split(b"\0", 1)[0].decode(errors="replace")
            address = socket.inet_ntoa(raw[offset + 20 : offset + 24])

            def ask(request: int, name_bytes: bytes = name_bytes) -> bytes | None:
                try:
                    return fcntl.ioctl(probe.fileno(), request, name_bytes + bytes(_IFREQ - 16))
                except OSError:
                    return None

            flags_raw = ask(_SIOCGIFFLAGS)
            flags = struct.unpack("H", flags_raw[16:18])[0] if flags_raw else 0
            mask_raw = ask(_SIOCGIFNETMASK)
            brd_raw = ask(_SIOCGIFBRDADDR) if flags & _IFF_BROADCAST else None
            found.append(
                Interface(
                    name=name,
                    address=address,
                    netmask=socket.inet_ntoa(mask_raw[20:24]) if mask_raw else "255.255.255.255",
                    broadcast=socket.inet_ntoa(brd_raw[20:24]) if brd_raw else None,
                    up=bool(flags & _IFF_UP),
                    loopback=bool(flags & _IFF_LOOPBACK),
                    multicast=bool(flags & _IFF_MULTICAST),
                )
            )
    return found


def select_interfaces(every: list[Interface], wanted: list[str]) -> list[Interface]:
    """The interfaces discovery joins and sends on.

    With `wanted` (the declaration's `interfaces`), those of its addresses that are up (loopback included),
    else 127.0.0.1 alone; without, every up, multicast-capable, non-loopback interface, else 127.0.0.1.
    """
    if wanted:
        chosen = [i for i in every if i.address in wanted and i.up]
        if not chosen and LOOPBACK in wanted:
            chosen = [LOOPBACK_INTERFACE]
    else:
        chosen = [i for i in every if i.up and i.multicast and not i.loopback]
    return chosen or [LOOPBACK_INTERFACE]


def link_endpoints(interfaces: list[Interface], port: int) -> list[str]:
    """Up to 4 advertised link endpoints.

    Non-loopback, non-link-local addresses, bridges last; none gives `127.0.0.1:<port>`.
    """
    usable = [
        i
        for i in interfaces
        if not i.loopback
        and not ipaddress.IPv4Address(i.address).is_loopback
        and ipaddress.IPv4Address(i.address) not in _LINK_LOCAL
    ]
    usable.sort(key=lambda i: i.bridge)
    out: list[str] = []
    for i in usable:
        text = f"{i.address}:{port}"
        if text not in out:
            out.append(text)
    return out[:4] or [f"{LOOPBACK}:{port}"]


def broadcast_targets(mode: str, interfaces: list[Interface], networks: list[str], *, restricted: bool) -> list[str]:
    """Where broadcast announcements go.

    `auto`: the limited broadcast (unless the interfaces are restricted) and each interface's directed
    broadcast; `explicit`: the directed broadcasts of `networks`; `disabled`: nowhere.
    """
    out: list[str] = []
    if mode == "auto":
        if not restricted:
            out.append("255.255.255.255")
        for i in interfaces:
            out.append(i.broadcast or str(i.network.broadcast_address))
    elif mode == "explicit":
        out += [str(ipaddress.IPv4Network(n).broadcast_address) for n in networks]
    return list(dict.fromkeys(out))


class DatagramSocket(Protocol):
    """A bound UDP socket, as the providers use it."""

    def local_port(self) -> int:
        """The port it is bound to."""
        ...

    async def sendto(self, data: bytes, address: Address) -> None:
        """Send one datagram.

        Raises:
            OSError: the kernel refused it (no route, permission, ...).
        """
        ...

    async def receive(self) -> tuple[bytes, Address, str | None]:
        """The next datagram, its source, and its destination address when known."""
        ...

    def enable_broadcast(self) -> None:
        """Allow sending to broadcast addresses (`SO_BROADCAST`)."""
        ...

    def set_multicast(self, *, ttl: int, loop: bool) -> None:
        """Multicast TTL and loopback of sent datagrams."""
        ...

    def set_multicast_interface(self, address: str) -> None:
        """The interface multicast datagrams leave by (`IP_MULTICAST_IF`)."""
        ...

    def join(self, group: str, interface: str) -> None:
        """Join `group` on the interface of `interface` (`IP_ADD_MEMBERSHIP`)."""
        ...

    def close(self) -> None:
        """Close the socket."""
        ...


class Network(Protocol):
    """What discovery needs from the host: its interfaces and bound UDP sockets."""

    def interfaces(self) -> list[Interface]:
        """Every IPv4 interface."""
        ...

    async def bind(self, address: Address, *, shared: bool) -> DatagramSocket:
        """A UDP socket bound to `address`; `shared` sets `SO_REUSEADDR` + `SO_REUSEPORT`.

        Raises:
            OSError: the address cannot be bound.
        """
        ...

    async def resolve(self, host: str, port: int) -> Address:
        """The IPv4 address of `host`.

        Raises:
            OSError: it does not resolve.
        """
        ...


class _TrioDatagram:
    """A trio UDP socket (destination addresses read through `IP_PKTINFO` on shared sockets)."""

    def __init__(self, sock: trio.socket.SocketType, *, pktinfo: bool) -> None:
        self._sock = sock
        self._pktinfo = pktinfo

    def local_port(self) -> int:
        port: int = self._sock.getsockname()[1]
        return port

    async def sendto(self, data: bytes, address: Address) -> None:
        await self._sock.sendto(data, address)

    async def receive(self) -> tuple[bytes, Address, str | None]:
        if not self._pktinfo:
            data, source = await self._sock.recvfrom(65535)
            return data, (source[0], source[1]), None
        data, ancillary, _flags, sender = await self._sock.recvmsg(65535, socket.CMSG_SPACE(12))
        destination = None
        for level, kind, cdata in ancillary:
            if level == socket.IPPROTO_IP and kind == _IP_PKTINFO and len(cdata) >= 12:
                destination = socket.inet_ntoa(cdata[8:12])
        host, port = cast("tuple[str, int]", sender)
        return data, (host, port), destination

    def enable_broadcast(self) -> None:
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)

    def set_multicast(self, *, ttl: int, loop: bool) -> None:
        self._sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, ttl)
        self._sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1 if loop else 0)

    def set_multicast_interface(self, address: str) -> None:
        self._sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(address))

    def join(self, group: str, interface: str) -> None:
        membership = socket.inet_aton(group) + socket.inet_aton(interface)
        self._sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, membership)

    def close(self) -> None:
        self._sock.close()


class SystemNetwork:
    """The host's own network."""

    def interfaces(self) -> list[Interface]:
        """Every IPv4 interface of the host."""
        return read_interfaces()

    async def bind(self, address: Address, *, shared: bool) -> DatagramSocket:
        """A trio UDP socket bound to `address`.

        Raises:
            OSError: the address cannot be bound.
        """
        sock = trio.socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            if shared:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if hasattr(socket, "SO_REUSEPORT"):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
                if _LINUX:
                    with contextlib.suppress(OSError):
                        sock.setsockopt(socket.IPPROTO_IP, _IP_MULTICAST_ALL, 0)
                    sock.setsockopt(socket.IPPROTO_IP, _IP_PKTINFO, 1)
            await sock.bind(address)
        except BaseException:
            sock.close()
            raise
        return _TrioDatagram(sock, pktinfo=shared and _LINUX)

    async def resolve(self, host: str, port: int) -> Address:
        """The first IPv4 address of `host`.

        Raises:
            OSError: it does not resolve.
        """
        try:
            ipaddress.IPv4Address(host)
            return (host, port)
        except ValueError:
            pass
        infos = await trio.socket.getaddrinfo(host, port, family=socket.AF_INET, type=socket.SOCK_DGRAM)
        if not infos:
            raise OSError(f"{host} has no IPv4 address")
        sockaddr = infos[0][4]
        return (str(sockaddr[0]), int(sockaddr[1]))
