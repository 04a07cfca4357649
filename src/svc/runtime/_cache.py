"""Result caches: bounded, per capability, holding encoded answers so that hits are byte-identical.

Only successful query answers are stored; errors and commands never are. Eviction is FIFO per capability;
an expired TTL entry is removed on lookup; an entry of an older repository generation never hits, under
either policy (`process` differs from `generation` by its optional TTL: it also holds answers that read
svc's own state under `.ai/local/`, which moves no generation, for at most that long).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from svc.registry._declaration import Cache

__all__ = ["ResultCache"]


@dataclass(slots=True)
class _Entry:
    body: bytes
    expires: float | None
    generation: int


class ResultCache:
    """The cache of one capability under one policy."""

    def __init__(self, policy: Cache) -> None:
        self.policy = policy
        self._entries: OrderedDict[bytes, _Entry] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: bytes, *, now: float, generation: int) -> bytes | None:
        """The stored answer for `key`, or None (expired and stale entries are dropped)."""
        entry = self._entries.get(key)
        if entry is not None and (
            entry.generation != generation or (entry.expires is not None and now >= entry.expires)
        ):
            del self._entries[key]
            entry = None
        if entry is None:
            self.misses += 1
            return None
        self.hits += 1
        return entry.body

    def put(self, key: bytes, body: bytes, *, now: float, generation: int) -> None:
        """Store an answer, evicting the oldest entries past `max_entries`."""
        ttl = self.policy.ttl_seconds
        self._entries.pop(key, None)
        self._entries[key] = _Entry(body, None if ttl is None else now + ttl, generation)
        limit = self.policy.max_entries or 1
        while len(self._entries) > limit:
            self._entries.popitem(last=False)
