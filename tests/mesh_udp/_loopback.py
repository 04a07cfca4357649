"""Real sockets confined to loopback: free ports and a group chosen by the test, and a network wrapper that
records every destination so a test can prove nothing left for another address."""

from __future__ import annotations

import ipaddress
import random
import socket
from typing import Any

from svc.mesh_udp import DatagramSocket, Interface, SystemNetwork

Address = tuple[str, int]


def free_udp_port() -> int:
    """A UDP port free on every address now (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("0.0.0.0", 0))
        port: int = probe.getsockname()[1]
        return port


def own_group() -> str:
    """A multicast group of the test's own, never svc's default 239.255.77.77."""
    rng = random.SystemRandom()
    return f"239.255.{rng.randrange(100, 250)}.{rng.randrange(1, 250)}"


def loopback_settings(group: str, port: int, **extra: Any) -> dict[str, Any]:
    """A declaration confined to 127.0.0.1, on the test's group and port."""
    return {"interfaces": ["127.0.0.1"], "multicast": {"group": group, "port": port, "interval_seconds": 1}, **extra}


class _Recording:
    def __init__(self, inner: DatagramSocket, seen: list[str]) -> None:
        self._inner = inner
        self._seen = seen

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def sendto(self, data: bytes, address: Address) -> None:
        self._seen.append(address[0])
        await self._inner.sendto(data, address)


class RecordingNetwork(SystemNetwork):
    """The host's network, recording every destination datagrams are sent to."""

    def __init__(self) -> None:
        self.destinations: list[str] = []

    async def bind(self, address: Address, *, shared: bool) -> DatagramSocket:
        return _Recording(await super().bind(address, shared=shared), self.destinations)

    def interfaces(self) -> list[Interface]:
        return super().interfaces()

    def only_loopback_or(self, group: str) -> bool:
        return all(
            d == group or ipaddress.IPv4Address(d) in ipaddress.IPv4Network("127.0.0.0/8") for d in self.destinations
        )
