"""The mesh declaration `.ai/repo/mesh/<id>.yaml` (docs/mesh.md).

Closed keys, defaults, refusals, and trunk narrowing.

Exactly one declaration file; none means the mesh is off (not an error); several, or one that does not
parse, is a declaration failure and the mesh stays off. The working tree's file may narrow the copy
committed on the trunk, never widen it: each widening item is dropped with one report line.

svc's own keys beside docs/mesh.md's: `cooperation.port` (the link socket's first port) and `interfaces` (the
IPv4 addresses whose interfaces discovery joins and sends on; empty = every up interface).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from svc.layer import (
    Repository,
    Unreadable,
    YamlAliases,
    YamlError,
    check_repository_dir,
    clip,
    load_yaml,
    read_repository_file,
    run_git,
)

__all__ = [
    "DECLARATION_DIR",
    "BroadcastSettings",
    "CooperationSettings",
    "DeclarationReading",
    "Endpoint",
    "MeshDeclaration",
    "MulticastSettings",
    "RendezvousSettings",
    "TailscaleSettings",
    "TrustSettings",
    "narrow",
    "parse_declaration",
    "parse_endpoint",
    "read_declaration",
]

DECLARATION_DIR = ".ai/repo/mesh"
SCHEMA = "mesh/v1"
KIND = "mesh-declaration"

Port = Annotated[int, Meta(ge=1, le=65535)]
Interval = Annotated[int, Meta(ge=1, description="seconds; 0 is refused")]
TrustPolicy = Literal["deny_unknown", "allowlist", "tofu"]
BroadcastMode = Literal["disabled", "auto", "explicit"]

_HOST = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*")
_HEX64 = re.compile(r"[0-9a-fA-F]{64}")
_LOOPBACK = ipaddress.IPv4Network("127.0.0.0/8")
_POLICY_RANK: dict[str, int] = {"allowlist": 0, "deny_unknown": 1, "tofu": 2}
_MODE_RANK: dict[str, int] = {"disabled": 0, "explicit": 1, "auto": 2}


class MulticastSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`multicast`: the group announcements go to."""

    enabled: bool = True
    group: str = "239.255.77.77"
    port: Port = 7741
    ttl: Annotated[int, Meta(ge=0, le=255)] = 1
    interval_seconds: Interval = 15


class BroadcastSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`broadcast`: `disabled`, `auto` (every interface) or `explicit` (the directed broadcasts of `networks`)."""

    mode: BroadcastMode = "disabled"
    port: Port = 7741
    networks: list[str] = msgspec.field(default_factory=list)
    interval_seconds: Interval = 15


class RendezvousSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`rendezvous`: hubs to register with (`udp://host:port`)."""

    endpoints: list[str] = msgspec.field(default_factory=list)
    interval_seconds: Interval = 60


class TrustSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`trust`: the policy for keys not in `allow` (64-hex public keys)."""

    policy: TrustPolicy = "deny_unknown"
    allow: list[str] = msgspec.field(default_factory=list)


class CooperationSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`cooperation`: links, journal and claims (a later part); `port` is the link socket's first port."""

    enabled: bool = True
    port: Annotated[int, Meta(ge=0, le=65535)] = 7742
    heartbeat_seconds: Interval = 5
    expiry_seconds: Interval = 30
    seeds: list[str] = msgspec.field(default_factory=list)
    repository: str | None = None


class TailscaleSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`tailscale`: online tailnet peers as rendezvous endpoints."""

    enabled: bool = False


class MeshDeclaration(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One parsed, validated declaration (lists normalised: endpoints as `host:port`, keys lowercase)."""

    schema: str
    kind: str
    id: str
    enabled: bool = False
    interfaces: list[str] = msgspec.field(default_factory=list)
    multicast: MulticastSettings = msgspec.field(default_factory=MulticastSettings)
    broadcast: BroadcastSettings = msgspec.field(default_factory=BroadcastSettings)
    rendezvous: RendezvousSettings = msgspec.field(default_factory=RendezvousSettings)
    trust: TrustSettings = msgspec.field(default_factory=TrustSettings)
    cooperation: CooperationSettings = msgspec.field(default_factory=CooperationSettings)
    tailscale: TailscaleSettings = msgspec.field(default_factory=TailscaleSettings)

    @classmethod
    def defaults(cls, id: str = "mesh", *, enabled: bool = True) -> MeshDeclaration:
        """A declaration with every default (tests and the doctor's in-memory probes)."""
        return cls(schema=SCHEMA, kind=KIND, id=id, enabled=enabled)


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A `host:port` UDP endpoint."""

    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def loopback(self) -> bool:
        """Whether the host is a loopback address or `localhost`."""
        return self.host == "localhost" or _is_loopback(self.host)


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.IPv4Address(host) in _LOOPBACK
    except ValueError:
        return False


def parse_endpoint(text: str) -> Endpoint:
    """`udp://host:port` or `host:port` (host an IPv4 address or a DNS name).

    Raises:
        ValueError: anything else, named in the message.
    """
    rest = text[len("udp://") :] if text.startswith("udp://") else text
    host, sep, port_text = rest.rpartition(":")
    if not sep or not host or "/" in rest or not port_text.isdigit():
        raise ValueError(f"{text!r} is not udp://host:port")
    port = int(port_text)
    if not 1 <= port <= 65535:
        raise ValueError(f"{text!r}: port {port} is outside 1-65535")
    if not _HOST.fullmatch(host):
        raise ValueError(f"{text!r}: {host!r} is not an IPv4 address or host name")
    return Endpoint(host=host, port=port)


@dataclass(frozen=True, slots=True)
class DeclarationReading:
    """The declaration as read now: `absent`, `ok` (with the declaration) or `refused` (with the problems).

    `dropped` lists one report line per item dropped (an `http://` entry, a widening of the trunk's copy);
    `trunk` names the trunk copy compared against (`<ref>:<path>`), None when there is none.
    """

    state: Literal["absent", "ok", "refused"]
    path: str | None = None
    declaration: MeshDeclaration | None = None
    problems: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    trunk: str | None = None

    @property
    def enabled(self) -> bool:
        """Whether the mesh is declared on (and the declaration holds)."""
        return self.declaration is not None and self.declaration.enabled


def _endpoints(values: list[str], where: str, problems: list[str], dropped: list[str]) -> list[str]:
    out: list[str] = []
    for value in values:
        if value.startswith(("http://", "https://")):
            dropped.append(f"{where}: {value} dropped (an HTTP link is the reference implementation's TCP form)")
            continue
        try:
            endpoint = str(parse_endpoint(value))
        except ValueError as exc:
            problems.append(f"{where}: {exc}")
            continue
        if endpoint not in out:
            out.append(endpoint)
    return out


def parse_declaration(data: Any, *, stem: str) -> tuple[MeshDeclaration | None, list[str], list[str]]:
    """Validate the YAML data of `<stem>.yaml`: the declaration (or None), its problems, and dropped items."""
    problems: list[str] = []
    dropped: list[str] = []
    if not isinstance(data, dict):
        return None, ["the declaration is not a mapping"], []
    try:
        decl = msgspec.convert(data, MeshDeclaration)
    except msgspec.ValidationError as exc:
        return None, [str(exc)], []
    if decl.schema != SCHEMA:
        problems.append(f"schema is {decl.schema!r}, expected {SCHEMA!r}")
    if decl.kind != KIND:
        problems.append(f"kind is {decl.kind!r}, expected {KIND!r}")
    if decl.id != stem:
        problems.append(f"id {decl.id!r} differs from the file name {stem!r}")
    try:
        group = ipaddress.IPv4Address(decl.multicast.group)
        if not group.is_multicast:
            problems.append(f"multicast.group {decl.multicast.group} is not an IPv4 multicast address")
    except ValueError:
        problems.append(f"multicast.group {decl.multicast.group!r} is not an IPv4 address")
    networks: list[str] = []
    for net in decl.broadcast.networks:
        try:
            networks.append(str(ipaddress.IPv4Network(net, strict=False)))
        except ValueError:
            problems.append(f"broadcast.networks: {net!r} is not an IPv4 CIDR network")
    interfaces: list[str] = []
    for address in decl.interfaces:
        try:
            interfaces.append(str(ipaddress.IPv4Address(address)))
        except ValueError:
            problems.append(f"interfaces: {address!r} is not an IPv4 address")
    endpoints = _endpoints(decl.rendezvous.endpoints, "rendezvous.endpoints", problems, dropped)
    seeds = _endpoints(decl.cooperation.seeds, "cooperation.seeds", problems, dropped)
    allow: list[str] = []
    for key in decl.trust.allow:
        if not _HEX64.fullmatch(key):
            problems.append(f"trust.allow: {key!r} is not a 64-hex public key")
        elif key.lower() not in allow:
            allow.append(key.lower())
    coop = decl.cooperation
    if coop.expiry_seconds < 3 * coop.heartbeat_seconds:
        problems.append(
            f"cooperation.expiry_seconds ({coop.expiry_seconds}) is below 3 × heartbeat_seconds "
            f"({coop.heartbeat_seconds})"
        )
    if coop.repository is not None and not 1 <= len(coop.repository) <= 128:
        problems.append("cooperation.repository must be 1 to 128 characters")
    if problems:
        return None, problems, dropped
    decl = msgspec.structs.replace(
        decl,
        interfaces=interfaces,
        broadcast=msgspec.structs.replace(decl.broadcast, networks=networks),
        rendezvous=msgspec.structs.replace(decl.rendezvous, endpoints=endpoints),
        trust=msgspec.structs.replace(decl.trust, allow=allow),
        cooperation=msgspec.structs.replace(coop, seeds=seeds),
    )
    return decl, [], dropped


def _loopback_entry(kind: str, value: str) -> bool:
    if kind == "networks":
        return ipaddress.IPv4Network(value).subnet_of(_LOOPBACK)
    if kind == "interfaces":
        return _is_loopback(value)
    if kind in ("endpoints", "seeds"):
        return parse_endpoint(value).loopback
    return False


def narrow(work: MeshDeclaration, trunk: MeshDeclaration | None) -> tuple[MeshDeclaration, list[str]]:
    """`work` narrowed to what `trunk` allows, with one report line per dropped item.

    Without a trunk copy only `tofu` falls back to `deny_unknown`.
    """
    lines: list[str] = []
    if trunk is None:
        if work.trust.policy == "tofu":
            lines.append("trust.policy tofu dropped: the trunk has no committed copy (deny_unknown applies)")
            work = msgspec.structs.replace(work, trust=msgspec.structs.replace(work.trust, policy="deny_unknown"))
        return work, lines
    enabled = work.enabled
    if work.enabled and not trunk.enabled:
        lines.append("enabled: true dropped: the trunk declares the mesh off")
        enabled = False
    policy = work.trust.policy
    if _POLICY_RANK[policy] > _POLICY_RANK[trunk.trust.policy]:
        lines.append(f"trust.policy {policy} dropped: looser than the trunk's {trunk.trust.policy}")
        policy = trunk.trust.policy
    multicast = work.multicast
    if multicast.enabled and not trunk.multicast.enabled:
        lines.append("multicast.enabled: true dropped: the trunk has multicast off")
        multicast = msgspec.structs.replace(multicast, enabled=False)
    mode = work.broadcast.mode
    if _MODE_RANK[mode] > _MODE_RANK[trunk.broadcast.mode]:
        lines.append(f"broadcast.mode {mode} dropped: wider than the trunk's {trunk.broadcast.mode}")
        mode = trunk.broadcast.mode
    tailscale = work.tailscale
    if tailscale.enabled and not trunk.tailscale.enabled:
        lines.append("tailscale.enabled: true dropped: the trunk has it off")
        tailscale = TailscaleSettings(enabled=False)

    def keep(kind: str, where: str, values: list[str], allowed: list[str], *, empty_is_all: bool = False) -> list[str]:
        if empty_is_all and not allowed:
            return values
        kept = []
        for value in values:
            if value in allowed or _loopback_entry(kind, value):
                kept.append(value)
            else:
                lines.append(f"{where}: {value} dropped: the trunk's copy does not list it")
        return kept

    return (
        msgspec.structs.replace(
            work,
            enabled=enabled,
            interfaces=keep("interfaces", "interfaces", work.interfaces, trunk.interfaces, empty_is_all=True),
            multicast=multicast,
            broadcast=msgspec.structs.replace(
                work.broadcast,
                mode=mode,
                networks=keep("networks", "broadcast.networks", work.broadcast.networks, trunk.broadcast.networks),
            ),
            rendezvous=msgspec.structs.replace(
                work.rendezvous,
                endpoints=keep(
                    "endpoints", "rendezvous.endpoints", work.rendezvous.endpoints, trunk.rendezvous.endpoints
                ),
            ),
            trust=msgspec.structs.replace(
                work.trust,
                policy=policy,
                allow=keep("allow", "trust.allow", work.trust.allow, trunk.trust.allow),
            ),
            cooperation=msgspec.structs.replace(
                work.cooperation,
                seeds=keep("seeds", "cooperation.seeds", work.cooperation.seeds, trunk.cooperation.seeds),
            ),
            tailscale=tailscale,
        ),
        lines,
    )


def _git(root: Path, *args: str) -> str | None:
    out = run_git(root, *args, timeout=30)
    return out.decode("utf-8", "replace") if out is not None else None


def _trunk_ref(repo: Repository) -> str | None:
    """The trunk's ref: `default_branch` of project.yaml, else origin/HEAD's branch, else main, else master."""
    candidates: list[str] = []
    try:
        project = load_yaml(read_repository_file(repo.root, repo.layer / "repo" / "project" / "project.yaml"))
        if isinstance(project, dict) and isinstance(project.get("default_branch"), str):
            candidates.append(project["default_branch"])
    except (OSError, YamlError, ValueError, RecursionError):
        pass
    origin = _git(repo.root, "symbolic-ref", "-q", "--short", "refs/remotes/origin/HEAD")
    if origin and origin.strip().startswith("origin/"):
        candidates.append(origin.strip().removeprefix("origin/"))
    candidates += ["main", "master"]
    for branch in candidates:
        for ref in (f"refs/heads/{branch}", f"refs/remotes/origin/{branch}"):
            if _git(repo.root, "rev-parse", "--verify", "-q", ref) is not None:
                return ref
    return None


def _trunk_copy(repo: Repository, rel: str, stem: str) -> tuple[str | None, MeshDeclaration | None, list[str]]:
    if repo.git_dir is None:
        return None, None, []
    ref = _trunk_ref(repo)
    if ref is None:
        return None, None, []
    text = _git(repo.root, "show", f"{ref}:{rel}")
    if text is None:
        return None, None, []
    where = f"{ref}:{rel}"
    try:
        data = load_yaml(text)
    except YamlError:
        return where, None, [f"the trunk's copy {where} is not YAML; compared as if absent"]
    decl, problems, _ = parse_declaration(data, stem=stem)
    if decl is None:
        return where, None, [f"the trunk's copy {where} is refused ({problems[0]}); compared as if absent"]
    return where, decl, []


def read_declaration(repo: Repository) -> DeclarationReading:
    """Read, validate and narrow the checkout's mesh declaration (runs `git`; call from a worker thread)."""
    directory = repo.root / DECLARATION_DIR
    try:
        check_repository_dir(repo.root, directory)
    except FileNotFoundError:
        return DeclarationReading(state="absent")
    except Unreadable as exc:
        return DeclarationReading(state="refused", path=DECLARATION_DIR, problems=(f"cannot read: {exc.reason}",))
    files = sorted(directory.glob("*.yaml"))
    if not files:
        return DeclarationReading(state="absent")
    names = [repo.relative(p) for p in files]
    if len(files) > 1:
        return DeclarationReading(
            state="refused",
            path=names[0],
            problems=(f"several declarations ({', '.join(names)}); exactly one is allowed",),
        )
    path, rel = files[0], names[0]
    try:
        data = load_yaml(read_repository_file(repo.root, path))
    except Unreadable as exc:
        return DeclarationReading(state="refused", path=rel, problems=(f"cannot read: {exc.reason}",))
    except OSError as exc:
        return DeclarationReading(state="refused", path=rel, problems=(f"cannot read: {exc.strerror or exc}",))
    except YamlAliases:
        return DeclarationReading(state="refused", path=rel, problems=("uses YAML aliases, which svc does not read",))
    except (YamlError, ValueError, RecursionError) as exc:
        return DeclarationReading(state="refused", path=rel, problems=(clip(f"not YAML: {exc}"),))
    decl, problems, dropped = parse_declaration(data, stem=path.stem)
    if decl is None:
        return DeclarationReading(
            state="refused", path=rel, problems=tuple(map(clip, problems[:20])), dropped=tuple(map(clip, dropped[:20]))
        )
    trunk_where, trunk, notes = _trunk_copy(repo, rel, path.stem)
    decl, lines = narrow(decl, trunk)
    return DeclarationReading(
        state="ok",
        path=rel,
        declaration=decl,
        dropped=(*dropped, *notes, *lines),
        trunk=trunk_where if trunk is not None else None,
    )
