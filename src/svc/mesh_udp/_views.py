"""The answer shapes of the discovery capabilities (docs/mesh.md, §15): plain msgspec Structs.

Optional fields are omitted when empty. Additions beside docs/mesh.md's shapes: `MeshStatus` carries the
runtime id, the repository id, the link port and the declaration as read (with its dropped items), and
the refusal `rejected` (a key whose node id is bound to another key); `RegisterAnswer` carries this node's
own envelope.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from svc.mesh_udp._trust import TrustState

__all__ = [
    "DeclarationView",
    "DoctorCheck",
    "MeshDoctorReport",
    "MeshIdentity",
    "MeshIdentityReport",
    "MeshRefusals",
    "MeshStatus",
    "MeshTallies",
    "NodeList",
    "NodeView",
    "ProviderView",
    "RegisterAnswer",
    "SourceView",
]

ProviderState = Literal["running", "failed", "stopped"]


class ProviderView(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One discovery provider: its state, why, and datagrams sent and received."""

    id: str
    state: ProviderState
    sent: int
    received: int
    detail: str | None = None


class MeshIdentity(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The public half of this node's identity (the signing key appears nowhere)."""

    node_id: str
    public_key: str
    display_name: str
    instance_id: str | None = None


class MeshTallies(msgspec.Struct, frozen=True, kw_only=True):
    """Registry tallies.

    Entries held, trusted and present now; envelopes accepted and replayed, entries expired and evicted,
    since start.
    """

    nodes: int = 0
    trusted: int = 0
    present: int = 0
    accepted: int = 0
    replayed: int = 0
    expired: int = 0
    evicted: int = 0


class MeshRefusals(msgspec.Struct, frozen=True, kw_only=True):
    """Refused datagrams and envelopes, by reason, since start.

    Beside docs/mesh.md's reasons: `rejected` (a key whose node id is bound to another key) and `unexpected` (a
    link message nobody waits for: an unsolicited `register-answer`, or a cooperation message while
    cooperation does not run).
    """

    oversized: int = 0
    malformed: int = 0
    version: int = 0
    bounds: int = 0
    stale: int = 0
    signature: int = 0
    self_heard: int = 0
    rejected: int = 0
    unexpected: int = 0


class DeclarationView(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The declaration as read: its path, whether it enables the mesh, the trunk copy, dropped items."""

    path: str
    id: str
    enabled: bool
    trunk: str | None = None
    dropped: list[str] = msgspec.field(default_factory=list)


class MeshStatus(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """`mesh.status`: whether the mesh runs here and why not, this node, providers, registry, refusals."""

    active: bool
    providers: list[ProviderView]
    tallies: MeshTallies
    refusals: MeshRefusals
    reason: str | None = None
    identity: MeshIdentity | None = None
    runtime: str | None = None
    repository: str | None = None
    link_port: int | None = None
    trust_policy: str | None = None
    declaration: DeclarationView | None = None
    started_at: str | None = None


class MeshIdentityReport(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """`mesh.identity`: where the key file is (home as `~`), whether it holds a key, its public half."""

    present: bool
    path: str | None = None
    identity: MeshIdentity | None = None
    error: str | None = None


class SourceView(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Through which provider, from where and when a node was last heard."""

    source: str
    path: str
    at: str


class NodeView(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One runtime of another node, as last heard."""

    node_id: str
    runtime: str
    public_key: str
    display_name: str
    instance_id: str
    trust: TrustState
    presence: Literal["present", "absent"]
    endpoints: list[str]
    capabilities: list[str]
    repositories: list[str]
    protocol_version: int
    version: str
    sources: list[SourceView]
    first_seen: str
    last_seen: str
    restarts: int


class NodeList(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """`mesh.nodes`: the registry, present runtimes first, then by node and runtime."""

    count: int
    nodes: list[NodeView]


class RegisterAnswer(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """`mesh.register`: whether the envelope was recorded, why not, this node's envelope and candidates.

    Each envelope is the object as received and verifies on its own signature.
    """

    accepted: bool
    candidates: list[dict[str, Any]]
    refusal: str | None = None
    envelope: dict[str, Any] | None = None


class DoctorCheck(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One prerequisite: whether it holds, what was found, and when it fails the impact and the remedy."""

    check: str
    ok: bool
    detail: str
    impact: str | None = None
    remediation: str | None = None


class MeshDoctorReport(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """`mesh.doctor`: every check in docs/mesh.md's order; `ok` when none fails."""

    ok: bool
    checks: list[DoctorCheck]
