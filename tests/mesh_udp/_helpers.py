"""Identities, envelopes and cores for the sans-I/O tests."""

from __future__ import annotations

import time
from typing import Any

import msgspec

from svc.mesh_udp._canonical import DOMAIN_ENVELOPE, sign_object
from svc.mesh_udp._core import Beacon, MeshCore
from svc.mesh_udp._declaration import TrustPolicy
from svc.mesh_udp._identity import NodeIdentity
from svc.mesh_udp._nodes import NodeRegistry
from svc.mesh_udp._trust import TrustStore
from svc.mesh_udp._wire import build_envelope

RFC8032_SEED = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
RFC8032_PUBLIC = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
NOW = 1_767_225_600.0


def identity(n: int, name: str | None = None) -> NodeIdentity:
    """A deterministic identity number `n`."""
    return NodeIdentity.from_seed(bytes([n]) * 32, display_name=name)


def envelope(
    ident: NodeIdentity, *, seq: int = 1, ts: float = NOW, rt: str = "a" * 16, inst: str = "1" * 16, **extra: Any
) -> dict[str, Any]:
    """A signed envelope of `ident`; `extra` fields are added before signing."""
    obj = build_envelope(
        ident.key,
        public_key=ident.public_key,
        instance=inst,
        runtime=rt,
        name=ident.display_name,
        seq=seq,
        ts=int(ts),
        endpoints=["192.168.1.10:7742"],
        capabilities=["rendezvous"],
        repositories=["0" * 32],
        version="0.1.0",
    )
    if extra:
        obj = sign_object(ident.key, DOMAIN_ENVELOPE, {**obj, **extra})
    return obj


def encode(obj: Any) -> bytes:
    return msgspec.json.encode(obj)


def core(
    ident: NodeIdentity,
    *,
    runtime: str = "b" * 16,
    policy: TrustPolicy = "deny_unknown",
    allow: tuple[str, ...] = (),
    capacity: int = 256,
) -> MeshCore:
    """A core for `ident` running the runtime `runtime`."""
    beacon = Beacon(
        ident,
        instance="9" * 16,
        runtime=runtime,
        repositories=["0" * 32],
        version="0.1.0",
        capabilities=["rendezvous"],
        endpoints=["127.0.0.1:7742"],
    )
    trust = TrustStore(policy, allow, own_key=ident.public_key)
    return MeshCore(beacon, trust, NodeRegistry(capacity=capacity))


def wall_now() -> float:
    return time.time()
