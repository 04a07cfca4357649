"""`mesh.*` (discovery): status, identity, nodes, register, doctor and firewall; the `mesh` module itself.

The cooperation capabilities of the same module (claims, sessions, handovers, reviews, state, peers, events,
verify) are declared in `_cooperation.py`.

The mesh runs in the serving server (its `Mesh` component, started by `svc serve`); a process that does not
serve it answers from the declaration and the key file alone, and says so. Everything is experimental,
uncached, and answers problems inside a 200 body (doctor checks, firewall observations, register refusals).
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
import trio
from msgspec import Meta

from svc.mesh_udp import (
    FirewallReport,
    Mesh,
    MeshDoctorReport,
    MeshIdentity,
    MeshIdentityReport,
    MeshStatus,
    NodeList,
    RegisterAnswer,
    SystemHost,
    SystemNetwork,
    display_path,
    firewall_report,
    read_declaration,
    read_identity,
    run_doctor,
    select_interfaces,
)
from svc.registry import Benchmark, Declarations, Example, McpResource, Module, NoInput
from svc.runtime import Context, Runtime

MODULE = Module(
    id="mesh",
    title="Mesh",
    description=(
        "Runtimes of this repository on the network: this node's identity, signed UDP discovery (multicast, "
        "broadcast, rendezvous, seeds), trust, the node registry, and the doctor and firewall reports; and "
        "cooperation: signed links to trusted runtimes, one replicated journal of sessions, claims on paths, "
        "handovers and review requests, the peer tree and the folded state."
    ),
    stability="experimental",
)

#: A registration signed with the RFC 8032 test key at 2026-01-01T00:00:00Z: well formed, long stale.
EXAMPLE_ENVELOPE: dict[str, Any] = {
    "v": 2,
    "pk": "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
    "inst": "0123456789abcdef",
    "rt": "fedcba9876543210",
    "name": "vector",
    "seq": 1,
    "ts": 1767225600,
    "ep": ["192.168.1.10:7742"],
    "caps": ["rendezvous"],
    "repos": ["00000000000000000000000000000000"],
    "ver": "0.1.0",
    "sig": (
        "d37450cde746c4bb432551208d4aaeb9918520e8235ea8a1970afcce4cdb4436"
        "b8f48de920bf154677fbaa7c31b66cb691ea4fb82880a373ea40152ae12e4703"
    ),
}


class RegisterInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Input of `mesh.register`."""

    envelope: Annotated[
        dict[str, Any],
        Meta(description="a signed discovery envelope (v2), as the registering runtime's beacon wrote it"),
    ]


class FirewallInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Input of `mesh.firewall`."""

    port: Annotated[
        Annotated[int, Meta(ge=1, le=65535)] | None,
        Meta(description="the link port to admit (default: the link port range of the declaration)"),
    ] = None


async def _mesh(ctx: Context) -> Mesh:
    mesh = ctx.components.find(Mesh)
    if mesh is not None:
        return mesh
    return await trio.to_thread.run_sync(Mesh.idle, ctx.runtime.repository)


async def status(ctx: Context, params: NoInput) -> MeshStatus:
    """Whether the mesh runs here and why not; identity, providers, registry tallies, refusals."""
    return (await _mesh(ctx)).status()


def _identity_report(mesh: Mesh) -> MeshIdentityReport:
    reading = read_identity(mesh.identity_file)
    shown = display_path(mesh.identity_file)
    if reading.identity is None:
        error = reading.error if reading.state in ("broken", "no_home") else None
        return MeshIdentityReport(present=False, path=shown, error=error)
    ident = reading.identity
    running = mesh.identity is not None and mesh.identity.public_key == ident.public_key
    return MeshIdentityReport(
        present=True,
        path=shown,
        identity=MeshIdentity(
            node_id=ident.node_id,
            public_key=ident.public_key,
            display_name=ident.display_name,
            instance_id=mesh.instance if running and mesh.active else None,
        ),
        error=reading.warning,
    )


async def identity(ctx: Context, params: NoInput) -> MeshIdentityReport:
    """The public half of this node's identity; an absent key file is an answer, not an error."""
    mesh = await _mesh(ctx)
    return await trio.to_thread.run_sync(_identity_report, mesh)


async def nodes(ctx: Context, params: NoInput) -> NodeList:
    """Every runtime this one has heard of, present ones first."""
    return (await _mesh(ctx)).nodes()


async def register(ctx: Context, params: RegisterInput) -> RegisterAnswer:
    """Check an envelope like a datagram, record it when it holds, answer this node's envelope and candidates."""
    mesh = ctx.components.find(Mesh)
    if mesh is None or not mesh.active:
        return RegisterAnswer(accepted=False, refusal="not_active", candidates=[])
    return mesh.register(params.envelope)


async def doctor(ctx: Context, params: NoInput) -> MeshDoctorReport:
    """Every prerequisite of the mesh, with impact and remedy for each failure, then the server's verdict."""
    mesh = ctx.components.find(Mesh)
    network = mesh.network if mesh is not None else SystemNetwork()
    return await trio.to_thread.run_sync(
        lambda: run_doctor(ctx.runtime.repository, mesh, host=SystemHost(), interfaces=network.interfaces())
    )


def _firewall(runtime: Runtime, mesh: Mesh | None, port: int | None) -> FirewallReport:
    reading = mesh.reading if mesh is not None else read_declaration(runtime.repository)
    decl = reading.declaration
    network = mesh.network if mesh is not None else SystemNetwork()
    interfaces = select_interfaces(network.interfaces(), decl.interfaces if decl is not None else [])
    link_port = mesh.providers.link_port if mesh is not None and mesh.providers is not None else None
    return firewall_report(decl, interfaces, SystemHost(), port=port, link_port=link_port)


async def firewall(ctx: Context, params: FirewallInput) -> FirewallReport:
    """The inbound rules the mesh needs, how to admit them, what the firewall does now, recent drops."""
    return await trio.to_thread.run_sync(_firewall, ctx.runtime, ctx.components.find(Mesh), params.port)


declare = Declarations[Context](MODULE, source=__name__)

CAPABILITIES = (
    declare.query(
        "status",
        title="Mesh status",
        description=(
            "Whether the mesh runs in this server and, if not, why; this node's public identity; each discovery "
            "provider with its state and datagrams sent and received; registry tallies; refused datagrams by "
            "reason."
        ),
        input=NoInput,
        output=MeshStatus,
        handler=status,
        examples=(Example(name="status", input={}),),
        http="GET /api/v1/mesh",
        tool="svc_mesh",
        resource=McpResource(uri="svc://mesh", name="mesh"),
        cli="mesh status",
        stability="experimental",
        cli_remote=True,
    ),
    declare.query(
        "identity",
        title="Node identity",
        description=(
            "The public half of this node's identity (node id, public key, display name) and where its key file "
            "is; the signing key appears nowhere. An absent key file is an answer, not an error."
        ),
        input=NoInput,
        output=MeshIdentityReport,
        handler=identity,
        examples=(Example(name="identity", input={}),),
        http="GET /api/v1/mesh/identity",
        tool="svc_mesh_identity",
        cli="mesh identity",
        stability="experimental",
        cli_remote=True,
    ),
    declare.query(
        "nodes",
        title="Discovered nodes",
        description=(
            "Every runtime heard of, present ones first: trust, presence, endpoints (the sender's own address "
            "first), capabilities, repositories, versions, and through which sources and when it was heard."
        ),
        input=NoInput,
        output=NodeList,
        handler=nodes,
        examples=(Example(name="nodes", input={}),),
        http="GET /api/v1/mesh/nodes",
        tool="svc_mesh_nodes",
        cli="mesh nodes",
        stability="experimental",
        cli_remote=True,
    ),
    declare.command(
        "register",
        title="Register with this hub",
        description=(
            "Verify an envelope like a datagram (size, shape, version, bounds, staleness, signature, trust), "
            "record it as a rendezvous observation when it holds, and answer this node's envelope plus up to 32 "
            "present candidates, each verifiable on its own signature. Registration grants nothing and changes "
            "only this process's memory."
        ),
        input=RegisterInput,
        output=RegisterAnswer,
        handler=register,
        examples=(Example(name="stale_envelope", input={"envelope": EXAMPLE_ENVELOPE}),),
        http="POST /api/v1/mesh/register",
        tool="svc_mesh_register",
        stability="experimental",
    ),
    declare.query(
        "doctor",
        title="Mesh doctor",
        description=(
            "Prove the mesh's prerequisites here: the declaration parses, the identity loads and is on any "
            "allowlist, the repository has an id, the link port binds, the multicast group joins, broadcast is "
            "allowed, both protocols sign and verify, the firewall admits the mesh; then the server's verdict. "
            "Each failed check carries its impact and remedy; the command line exits 10 when one fails."
        ),
        input=NoInput,
        output=MeshDoctorReport,
        handler=doctor,
        examples=(Example(name="doctor", input={}),),
        http="GET /api/v1/mesh/doctor",
        tool="svc_mesh_doctor",
        cli="mesh doctor",
        stability="experimental",
        cli_verdict="ok",
        cli_remote=True,
    ),
    declare.query(
        "firewall",
        title="Mesh firewall",
        description=(
            "The inbound UDP rules the mesh needs (multicast, broadcast, hub and link ports, from the private "
            "networks of the declared peers or of this machine), the firewall front (ufw, nftables or none), "
            "commands that admit each rule, what the firewall does now (unobservable without root), and kernel "
            "drops toward those ports in the last 5 minutes. Reads the host and changes nothing; the command "
            "line exits 10 when a rule is missing or a drop was logged."
        ),
        input=FirewallInput,
        output=FirewallReport,
        handler=firewall,
        examples=(Example(name="declared", input={}), Example(name="link_port", input={"port": 7742})),
        http="GET /api/v1/mesh/firewall",
        tool="svc_mesh_firewall",
        cli="mesh firewall",
        benchmark=Benchmark(policy="waived", reason="external_dependency"),
        stability="experimental",
        cli_verdict="ok",
    ),
)
