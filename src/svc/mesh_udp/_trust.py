"""Trust (docs/mesh.md): what a verified key is to this runtime, decided in order.

1. The node id is already bound to a different key: `rejected` (and it stays rejected).
2. The key is in `allow`: `trusted` (detail `allowlist`).
3. Policy `deny_unknown` or `allowlist`: `observed`.
4. Policy `tofu`: `trusted` (detail `tofu`), binding the node id to the key.

This node's own key is always trusted. Node ids are derived from keys, so a binding can only be
contradicted by a collision of the truncated digest; the check stands anyway, as a wall against it.
Bindings and rejections live in memory only.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from svc.mesh_udp._declaration import TrustPolicy

__all__ = ["TrustState", "TrustStore"]

TrustLevel = Literal["trusted", "observed", "rejected"]


class TrustState(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What a key is to this runtime: `trusted`, `observed` or `rejected`, and why."""

    state: TrustLevel
    detail: str | None = None


_SELF = TrustState(state="trusted", detail="self")
_ALLOW = TrustState(state="trusted", detail="allowlist")
_TOFU = TrustState(state="trusted", detail="tofu")
_OBSERVED = TrustState(state="observed", detail="policy")
_REJECTED = TrustState(state="rejected", detail="node id bound to another key")


class TrustStore:
    """The trust policy of one runtime and the node-to-key bindings it has made."""

    def __init__(self, policy: TrustPolicy, allow: list[str] | tuple[str, ...], *, own_key: str) -> None:
        self.policy: TrustPolicy = policy
        self.allow = frozenset(k.lower() for k in allow)
        self.own_key = own_key
        self._bound: dict[str, str] = {}
        self._rejected: set[tuple[str, str]] = set()

    def assess(self, node_id: str, public_key: str) -> TrustState:
        """Decide, in docs/mesh.md's order, what `public_key` (claiming `node_id`) is; binds under `tofu`."""
        if public_key == self.own_key:
            return _SELF
        bound = self._bound.get(node_id)
        if (bound is not None and bound != public_key) or (node_id, public_key) in self._rejected:
            self._rejected.add((node_id, public_key))
            return _REJECTED
        if public_key in self.allow:
            self._bound[node_id] = public_key
            return _ALLOW
        if self.policy != "tofu":
            return _OBSERVED
        self._bound[node_id] = public_key
        return _TOFU

    def bind(self, node_id: str, public_key: str) -> None:
        """Record that `node_id` is `public_key` (a binding learnt elsewhere, or a test's)."""
        self._bound.setdefault(node_id, public_key)

    def allowlisted(self, public_key: str) -> bool:
        """Whether the key is in `allow`."""
        return public_key in self.allow

    @property
    def bindings(self) -> int:
        """How many node ids are bound to a key."""
        return len(self._bound)
