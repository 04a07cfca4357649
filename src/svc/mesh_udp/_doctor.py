"""`mesh.doctor` (docs/mesh.md): every prerequisite of the mesh, proven locally, then the server's verdict.

Checks in order: `declaration`, `identity`, `trust`, `repository`, `udp`, `multicast`, `broadcast`,
`protocol`, `link`, `firewall`, `runtime`. A failed check carries its impact and its remedy. "Off, as
declared" passes, and so does "not decided in this process" (the runtime check of a process that does not
serve the mesh). In the serving server `runtime` fails when the mesh is enabled but not active, when every
provider failed, and when cooperation is enabled but does not run. When the mesh is off the checks that need
it on (repository, sockets, firewall) pass without probing anything. The socket probes bind, join and close at
once; nothing is sent.
"""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING

from svc.mesh_udp._canonical import DOMAIN_EVENT, link_domain, sign_object, verify_object
from svc.mesh_udp._declaration import DeclarationReading, MeshDeclaration, read_declaration
from svc.mesh_udp._firewall import Host, firewall_report
from svc.mesh_udp._identity import NodeIdentity, display_path, identity_path, read_identity, repository_id
from svc.mesh_udp._net import Interface, select_interfaces
from svc.mesh_udp._views import DoctorCheck, MeshDoctorReport
from svc.mesh_udp._wire import Checked, build_envelope, check_envelope, new_nonce

if TYPE_CHECKING:
    from pathlib import Path

    from svc.layer import Repository
    from svc.mesh_udp._mesh import Mesh

__all__ = ["run_doctor"]

_OFF = "off, as declared"
_BROKEN = "svc's signatures cannot be trusted; nothing it signs or verifies holds"
_REINSTALL = "reinstall svc (its cryptography backend is broken)"


def _ok(check: str, detail: str) -> DoctorCheck:
    return DoctorCheck(check=check, ok=True, detail=detail)


def _fail(check: str, detail: str, impact: str, remediation: str) -> DoctorCheck:
    return DoctorCheck(check=check, ok=False, detail=detail, impact=impact, remediation=remediation)


def _declaration(reading: DeclarationReading) -> DoctorCheck:
    if reading.state == "absent":
        return _ok("declaration", "absent: the mesh is off (no file under .ai/repo/mesh/)")
    if reading.state == "refused":
        return _fail(
            "declaration",
            f"{reading.path}: {'; '.join(reading.problems)}",
            "the mesh stays off until the declaration holds",
            "fix the file under .ai/repo/mesh/ (exactly one, closed keys), then restart svc serve",
        )
    state = "enabled" if reading.enabled else "disabled"
    dropped = f"; dropped: {'; '.join(reading.dropped)}" if reading.dropped else ""
    return _ok("declaration", f"{reading.path} parses: {state}{dropped}")


def _identity(path: Path | None, enabled: bool) -> tuple[DoctorCheck, NodeIdentity | None]:
    reading = read_identity(path)
    shown = display_path(path)
    if reading.state == "no_home":
        return _fail(
            "identity",
            "neither XDG_STATE_HOME nor HOME is set, so there is no place for the node key",
            "no envelope can be signed; the mesh cannot start",
            "set HOME (or XDG_STATE_HOME) for the process that runs svc",
        ), None
    if reading.state == "broken":
        return _fail(
            "identity",
            f"{shown}: {reading.error}",
            "no envelope can be signed; the mesh cannot start (svc never replaces the file)",
            f"restore {shown} from a backup, or remove it deliberately to create a new node identity",
        ), None
    if reading.state == "absent":
        when = "at the next start of svc serve" if enabled else "at the first enabled start"
        return _ok("identity", f"no key yet at {shown}; created {when}"), None
    assert reading.identity is not None
    ident = reading.identity
    if reading.warning:
        return _fail(
            "identity",
            f"{shown}: {reading.warning}",
            "another user of this machine can read the node's signing key",
            f"chmod 600 {shown}",
        ), ident
    return _ok("identity", f"node {ident.node_id} ({ident.display_name}) from {shown}"), ident


def _trust(decl: MeshDeclaration | None, ident: NodeIdentity | None) -> DoctorCheck:
    if decl is None or not decl.enabled:
        return _ok("trust", _OFF)
    listed = decl.trust.allow
    needs_self = decl.trust.policy == "allowlist" or bool(listed)
    if not needs_self:
        return _ok("trust", f"policy {decl.trust.policy}; no allowlist")
    if ident is None:
        return _ok("trust", f"policy {decl.trust.policy}; no key yet to look for in the allowlist")
    if ident.public_key in listed:
        return _ok("trust", f"policy {decl.trust.policy}; this node's key is listed")
    return _fail(
        "trust",
        f"policy {decl.trust.policy}: this node's key {ident.public_key} is not in trust.allow",
        "runtimes that share this declaration do not trust this node",
        f"add {ident.public_key} to trust.allow",
    )


def _repository(repo: Repository, decl: MeshDeclaration | None) -> DoctorCheck:
    if decl is None or not decl.enabled:
        return _ok("repository", _OFF)
    found = repository_id(repo.root, decl.cooperation.repository)
    if found.id is None:
        return _fail(
            "repository",
            found.detail,
            "runtimes of this repository cannot be matched (envelopes carry no repository id)",
            "declare cooperation.repository, or unshallow the clone (git fetch --unshallow)",
        )
    return _ok("repository", f"{found.id} ({found.detail})")


def _udp(decl: MeshDeclaration | None, mesh: Mesh | None) -> DoctorCheck:
    if decl is None or not decl.enabled:
        return _ok("udp", _OFF)
    if mesh is not None and mesh.providers is not None and mesh.providers.link is not None:
        return _ok("udp", f"the link socket is bound on 0.0.0.0:{mesh.providers.link_port}")
    first = decl.cooperation.port
    ports = [0] if first == 0 else list(range(first, min(first + 16, 65536)))
    errors: list[str] = []
    for port in ports:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            try:
                probe.bind(("0.0.0.0", port))
            except OSError as exc:
                errors.append(exc.strerror or str(exc))
                continue
            return _ok("udp", f"0.0.0.0:{probe.getsockname()[1]} can be bound for the link socket")
    return _fail(
        "udp",
        f"none of the ports {ports[0]}-{ports[-1]} can be bound ({errors[-1] if errors else 'no port'})",
        "no link socket: no announcement, registration or answer leaves this runtime",
        "free a port in that range, or set cooperation.port (0 = any free port)",
    )


def _multicast(decl: MeshDeclaration | None, interfaces: list[Interface]) -> DoctorCheck:
    if decl is None or not decl.enabled:
        return _ok("multicast", _OFF)
    settings = decl.multicast
    if not settings.enabled:
        return _ok("multicast", "disabled in the declaration")
    impact = "runtimes on this network are not found by multicast"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if hasattr(socket, "SO_REUSEPORT"):
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            probe.bind(("0.0.0.0", settings.port))
        except OSError as exc:
            return _fail(
                "multicast",
                f"0.0.0.0:{settings.port} cannot be bound ({exc.strerror or exc}): "
                "another program holds the port without sharing it",
                impact,
                f"free UDP port {settings.port} (or change multicast.port), or use seeds or rendezvous",
            )
        joined, refused = [], []
        for interface in interfaces:
            try:
                membership = socket.inet_aton(settings.group) + socket.inet_aton(interface.address)
                probe.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, membership)
                joined.append(interface.address)
            except OSError as exc:
                refused.append(f"{interface.address}: {exc.strerror or exc}")
    if not joined:
        return _fail(
            "multicast",
            f"joining {settings.group} failed on every interface ({'; '.join(refused)})",
            impact,
            "use seeds or rendezvous, or declare interfaces that carry multicast",
        )
    extra = f"; refused on {'; '.join(refused)}" if refused else ""
    return _ok("multicast", f"{settings.group}:{settings.port} joined on {', '.join(joined)}{extra}")


def _broadcast(decl: MeshDeclaration | None) -> DoctorCheck:
    if decl is None or not decl.enabled:
        return _ok("broadcast", _OFF)
    if decl.broadcast.mode == "disabled":
        return _ok("broadcast", "disabled in the declaration")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
        except OSError as exc:
            return _fail(
                "broadcast",
                f"SO_BROADCAST refused: {exc.strerror or exc}",
                "broadcast announcements cannot be sent",
                "use multicast, seeds or rendezvous",
            )
    return _ok("broadcast", f"SO_BROADCAST allowed ({decl.broadcast.mode})")


def _protocol() -> DoctorCheck:
    ident = NodeIdentity.generate()
    env = build_envelope(
        ident.key,
        public_key=ident.public_key,
        instance="0" * 16,
        runtime="0" * 16,
        name="doctor",
        seq=1,
        ts=0,
        endpoints=[],
        capabilities=[],
        repositories=[],
        version="doctor",
    )
    good = isinstance(check_envelope(env, now=0, size=0), Checked)
    tampered = isinstance(check_envelope({**env, "seq": 2}, now=0, size=0), Checked)
    event = sign_object(
        ident.key,
        DOMAIN_EVENT,
        {"v": 1, "stream": "s", "seq": 1, "lamport": 1, "at": 0, "repo": "r", "pk": ident.public_key, "body": {}},
    )
    event_ok = verify_object(ident.public_key, DOMAIN_EVENT, event)
    event_tampered = verify_object(ident.public_key, DOMAIN_EVENT, {**event, "seq": 2})
    if good and event_ok and not tampered and not event_tampered:
        return _ok("protocol", "an envelope and a journal event sign and verify; tampered copies are refused")
    return _fail(
        "protocol", "in-memory sign/verify of an envelope or an event gave a wrong answer", _BROKEN, _REINSTALL
    )


def _link() -> DoctorCheck:
    ident = NodeIdentity.generate()
    card = {"pk": ident.public_key, "runtime": "0" * 16, "instance": "0" * 16, "repo": "r", "name": "doctor"}
    hello = sign_object(
        ident.key,
        link_domain("hello"),
        {
            "v": 1,
            "type": "hello",
            "body": {"proto_min": 1, "proto_max": 1, "card": card, "nonce": new_nonce(), "ts": 0},
        },
    )
    ok = verify_object(ident.public_key, link_domain("hello"), hello)
    tampered = verify_object(
        ident.public_key, link_domain("hello"), {**hello, "body": {**hello["body"], "proto_max": 2}}
    )
    if ok and not tampered:
        return _ok("link", "a hello signs and verifies; a tampered hello is refused")
    return _fail("link", "in-memory sign/verify of a hello gave a wrong answer", _BROKEN, _REINSTALL)


def _firewall(decl: MeshDeclaration | None, interfaces: list[Interface], host: Host, mesh: Mesh | None) -> DoctorCheck:
    if decl is None or not decl.enabled:
        return _ok("firewall", _OFF)
    link_port = mesh.providers.link_port if mesh is not None and mesh.providers is not None else None
    report = firewall_report(decl, interfaces, host, link_port=link_port)
    if report.ok:
        return _ok("firewall", f"{report.backend}: {report.observation.detail}")
    return _fail(
        "firewall",
        f"{report.backend}: {report.verdict} ({report.observation.detail})",
        "datagrams from other machines are dropped before svc sees them",
        "; ".join(c.line for c in report.commands) or "admit the mesh's UDP ports in the firewall",
    )


def _runtime(reading: DeclarationReading, mesh: Mesh | None) -> DoctorCheck:
    if not reading.enabled:
        return _ok("runtime", _OFF)
    if mesh is None:
        return _ok(
            "runtime",
            "not decided in this process: it does not serve the mesh (run the doctor while svc serve runs "
            "for the server's verdict)",
        )
    remedy = "fix what the detail names, then restart svc serve"
    impact = "the serving server does not take part in the mesh"
    if mesh.reason is not None or mesh.providers is None:
        return _fail("runtime", f"enabled but not active: {mesh.reason or 'not started'}", impact, remedy)
    slots = list(mesh.providers.slots.values())
    if all(s.state == "failed" for s in slots if s.state != "stopped"):
        failed = "; ".join(f"{s.id}: {s.detail}" for s in slots if s.state == "failed")
        return _fail("runtime", f"every provider failed ({failed or 'none runs'})", impact, remedy)
    running = ", ".join(s.id for s in slots if s.state == "running")
    decl = reading.declaration
    if decl is not None and decl.cooperation.enabled:
        coop = mesh.cooperation
        why = mesh.cooperation_reason() if coop is None else coop.reason
        if coop is None or why is not None:
            return _fail(
                "runtime",
                f"cooperation is enabled but does not run in this server: {why or 'not started'}",
                "this runtime takes part in discovery only: no link, no claim, no handover reaches it",
                "fix what the detail names (svc mesh doctor's repository check), then restart svc serve",
            )
        return _ok("runtime", f"active in this server; providers running: {running}; cooperation running")
    return _ok("runtime", f"active in this server; providers running: {running}")


def run_doctor(repo: Repository, mesh: Mesh | None, *, host: Host, interfaces: list[Interface]) -> MeshDoctorReport:
    """Every check of docs/mesh.md (blocking: runs `git`, binds sockets; call from a worker thread).

    `mesh` is this process's mesh (None when the process does not serve it); `interfaces` the host's.
    """
    reading = read_declaration(repo)
    decl = reading.declaration
    enabled = reading.enabled
    path = mesh.identity_file if mesh is not None else identity_path()
    identity_check, ident = _identity(path, enabled)
    chosen = select_interfaces(interfaces, decl.interfaces if decl is not None else [])
    checks = [
        _declaration(reading),
        identity_check,
        _trust(decl, ident),
        _repository(repo, decl),
        _udp(decl, mesh),
        _multicast(decl, chosen),
        _broadcast(decl),
        _protocol(),
        _link(),
        _firewall(decl, chosen, host, mesh),
        _runtime(reading, mesh),
    ]
    return MeshDoctorReport(ok=all(c.ok for c in checks), checks=checks)
