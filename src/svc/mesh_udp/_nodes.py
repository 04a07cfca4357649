"""The node registry (docs/mesh.md): every other runtime this one has heard of, bounded, in memory.

Keyed by (node, runtime); at most 256 entries. When full, the least recently seen entry that is not
allowlisted is evicted; when every entry is allowlisted the newcomer is dropped. Both count as `evicted`.
An entry is present while seen less than 60 s ago and removed after 15 min unseen (`expired`). An envelope of the
instance already held with a `seq` not above the last is `replayed` (ignored, except that a source not yet
listed is noted when the `seq` is equal: one envelope heard by several providers); an envelope of a new
instance counts a restart, and a late envelope of an instance already replaced is a replay too.

Times: `wall` is Unix seconds (what answers show), `mono` trio's clock (what presence and expiry use).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import msgspec

if TYPE_CHECKING:
    from svc.mesh_udp._trust import TrustState
    from svc.mesh_udp._wire import Checked, Envelope

__all__ = [
    "CAPACITY",
    "EXPIRY_SECONDS",
    "MAX_CANDIDATES",
    "PRESENCE_SECONDS",
    "NodeEntry",
    "NodeRegistry",
    "Observation",
    "Sighting",
]

CAPACITY = 256
PRESENCE_SECONDS = 60.0
EXPIRY_SECONDS = 900.0
MAX_CANDIDATES = 32
_RETIRED_KEPT = 8


@dataclass(slots=True)
class Sighting:
    """Where an entry was last heard through one source (`multicast`, `rendezvous`, ...)."""

    source: str
    path: str
    at: float


@dataclass(slots=True)
class NodeEntry:
    """One runtime of one node: its last accepted envelope (as read and as received) and what was learnt."""

    node_id: str
    envelope: Envelope
    raw: dict[str, Any]
    trust: TrustState
    endpoints: list[str]
    first_seen: float
    last_seen: float
    last_mono: float
    allowlisted: bool = False
    restarts: int = 0
    sources: dict[str, Sighting] = field(default_factory=dict)
    retired: list[str] = field(default_factory=list)

    @property
    def key(self) -> tuple[str, str]:
        """(node, runtime)."""
        return (self.node_id, self.envelope.rt)

    @property
    def runtime(self) -> str:
        """The runtime id."""
        return self.envelope.rt

    @property
    def instance_id(self) -> str:
        """The instance id of the last accepted envelope."""
        return self.envelope.inst

    @property
    def seq(self) -> int:
        """The highest `seq` accepted from that instance."""
        return self.envelope.seq

    @property
    def public_key(self) -> str:
        """The node's public key."""
        return self.envelope.pk

    @property
    def display_name(self) -> str:
        """The name it announces."""
        return self.envelope.name

    def present(self, mono: float, window: float = PRESENCE_SECONDS) -> bool:
        """Whether it was seen less than the presence window ago."""
        return mono - self.last_mono < window


class Observation(msgspec.Struct, frozen=True, kw_only=True):
    """What the registry did with a checked envelope; `fresh` marks a new runtime or a new instance."""

    outcome: Literal["accepted", "replayed", "evicted"]
    entry: NodeEntry | None = None
    fresh: bool = False


def _endpoints(origin: str | None, advertised: list[str]) -> list[str]:
    out = [origin] if origin else []
    out += [e for e in advertised if e not in out]
    return out


class NodeRegistry:
    """The bounded registry with its tallies (`accepted`, `replayed`, `expired`, `evicted`)."""

    def __init__(
        self,
        *,
        capacity: int = CAPACITY,
        presence_seconds: float = PRESENCE_SECONDS,
        expiry_seconds: float = EXPIRY_SECONDS,
    ) -> None:
        self.capacity = capacity
        self.presence_seconds = presence_seconds
        self.expiry_seconds = expiry_seconds
        self._entries: dict[tuple[str, str], NodeEntry] = {}
        self.accepted = 0
        self.replayed = 0
        self.expired = 0
        self.evicted = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[NodeEntry]:
        return iter(self._entries.values())

    def get(self, node_id: str, runtime: str) -> NodeEntry | None:
        """The entry of (node, runtime), if held."""
        return self._entries.get((node_id, runtime))

    def observe(
        self,
        checked: Checked,
        trust: TrustState,
        *,
        source: str,
        path: str,
        origin: str | None,
        wall: float,
        mono: float,
        allowlisted: bool = False,
    ) -> Observation:
        """Record a checked, trusted-or-observed envelope heard through `source` at `path`.

        `origin` is the datagram's source address (`ip:port`) when it came straight from the sender's link
        socket: it ranks first among the endpoints.
        """
        env = checked.envelope
        key = (checked.node_id, env.rt)
        entry = self._entries.get(key)
        if entry is not None:
            held = entry.envelope
            if env.inst == held.inst:
                if env.seq <= held.seq:
                    if env.seq == held.seq and source not in entry.sources:
                        entry.sources[source] = Sighting(source=source, path=path, at=wall)
                    self.replayed += 1
                    return Observation(outcome="replayed", entry=entry)
                fresh = False
            elif env.inst in entry.retired:
                self.replayed += 1
                return Observation(outcome="replayed", entry=entry)
            else:
                entry.retired = [*entry.retired[-(_RETIRED_KEPT - 1) :], held.inst]
                entry.restarts += 1
                entry.sources.clear()
                fresh = True
            entry.envelope = env
            entry.raw = checked.raw
            entry.trust = trust
            entry.endpoints = _endpoints(origin, env.ep)
            entry.last_seen = wall
            entry.last_mono = mono
            entry.allowlisted = allowlisted
            sighting = entry.sources.get(source)
            if sighting is None:
                entry.sources[source] = Sighting(source=source, path=path, at=wall)
            else:
                sighting.path, sighting.at = path, wall
            self.accepted += 1
            return Observation(outcome="accepted", entry=entry, fresh=fresh)
        if len(self._entries) >= self.capacity and not self._evict_one():
            self.evicted += 1
            return Observation(outcome="evicted")
        entry = NodeEntry(
            node_id=checked.node_id,
            envelope=env,
            raw=checked.raw,
            trust=trust,
            endpoints=_endpoints(origin, env.ep),
            first_seen=wall,
            last_seen=wall,
            last_mono=mono,
            allowlisted=allowlisted,
            sources={source: Sighting(source=source, path=path, at=wall)},
        )
        self._entries[key] = entry
        self.accepted += 1
        return Observation(outcome="accepted", entry=entry, fresh=True)

    def _evict_one(self) -> bool:
        victims = [e for e in self._entries.values() if not e.allowlisted]
        if not victims:
            return False
        victim = min(victims, key=lambda e: e.last_mono)
        del self._entries[victim.key]
        self.evicted += 1
        return True

    def sweep(self, mono: float) -> int:
        """Remove entries unseen for longer than the expiry; answers how many went."""
        gone = [k for k, e in self._entries.items() if mono - e.last_mono >= self.expiry_seconds]
        for k in gone:
            del self._entries[k]
        self.expired += len(gone)
        return len(gone)

    def next_change(self, mono: float) -> float | None:
        """When the next entry stops being present or expires (trio time, always after `mono`), or None."""
        times = []
        for e in self._entries.values():
            absent_at = e.last_mono + self.presence_seconds
            expire_at = e.last_mono + self.expiry_seconds
            times.append(absent_at if absent_at > mono else max(expire_at, mono))
        return min(times, default=None)

    def present(self, mono: float) -> list[NodeEntry]:
        """Entries seen within the presence window."""
        return [e for e in self._entries.values() if e.present(mono, self.presence_seconds)]

    def candidates(self, mono: float, *, exclude: tuple[str, str] | None = None) -> list[dict[str, Any]]:
        """Up to 32 present entries' envelopes as received, most recently seen first (for `register`)."""
        chosen = sorted(
            (e for e in self.present(mono) if e.key != exclude and e.trust.state != "rejected"),
            key=lambda e: e.last_mono,
            reverse=True,
        )
        return [e.raw for e in chosen[:MAX_CANDIDATES]]
