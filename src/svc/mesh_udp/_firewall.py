"""`mesh.firewall` (docs/mesh.md): what the host's firewall must admit for the mesh, and what it does.

The inbound UDP rules the mesh needs, how to admit them, what the host's firewall does now, and recent
kernel drops toward those ports. It reads the host and changes nothing.

Everything that decides is pure (`plan_rules`, `admit_commands`, `observe_ufw`, `observe_nft`,
`recent_drops`) and is tested on captured outputs; `Host` is the thin part that runs `ufw`, `nft` and
`journalctl`. Reading the firewall needs root: without it the observation is `unobservable`.

Observation limits, deliberately simple: a rule counts as present when an accepting rule covers its port,
destination and every source network; the order of rules (an earlier drop) is not evaluated.
"""

from __future__ import annotations

import ipaddress
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal, Protocol

import msgspec

from svc.mesh_udp._declaration import parse_endpoint

if TYPE_CHECKING:
    from svc.mesh_udp._declaration import MeshDeclaration
    from svc.mesh_udp._net import Interface

__all__ = [
    "WINDOW_SECONDS",
    "AdmitCommand",
    "BlockedPort",
    "FirewallObservation",
    "FirewallPlan",
    "FirewallReport",
    "FirewallRule",
    "Host",
    "SystemHost",
    "admit_commands",
    "firewall_report",
    "observe_nft",
    "observe_ufw",
    "plan_rules",
    "recent_drops",
]

WINDOW_SECONDS = 300
LINK_SPAN = 16
_PRIVATE = [ipaddress.IPv4Network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10")]
_SOCKETFILTERFW = "/usr/libexec/ApplicationFirewall/socketfilterfw"

Backend = Literal["ufw", "nftables", "application_firewall", "none"]
Role = Literal["multicast", "broadcast", "hub", "link"]
ObservationState = Literal["no_backend", "inactive", "present", "missing", "unobservable"]


class FirewallRule(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One inbound UDP rule the mesh needs: to `port` (through `port_end` for a range) from `sources`."""

    role: Role
    protocol: Literal["udp"] = "udp"
    port: int
    port_end: int | None = None
    destination: str | None = None
    sources: list[str]
    reason: str


class FirewallPlan(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What the rules are computed from, and the rules."""

    local_addresses: list[str]
    networks: list[str]
    hub_ports: list[int]
    rules: list[FirewallRule]


class AdmitCommand(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A command that admits one rule: its argv and the same as one shell-quoted line."""

    rule: str
    argv: list[str]
    line: str


class FirewallObservation(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What the firewall does now: `no_backend`, `inactive`, `present`, `missing` or `unobservable`."""

    state: ObservationState
    detail: str
    missing: list[str] | None = None


class BlockedPort(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Kernel drops toward one needed port within the window."""

    port: int
    count: int
    last: str | None = None


class FirewallReport(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """`mesh.firewall`: `ok` when no needed rule is observed missing and no drop was logged."""

    ok: bool
    platform: str
    backend: Backend
    plan: FirewallPlan
    commands: list[AdmitCommand]
    observation: FirewallObservation
    window_seconds: int
    verdict: str
    executable: str | None = None
    blocked_recently: list[BlockedPort] | None = None


class Host(Protocol):
    """The host as the firewall report reads it."""

    def system(self) -> str:
        """`linux`, `darwin`, ..."""
        ...

    def which(self, name: str) -> str | None:
        """The path of an executable on PATH, or None."""
        ...

    def is_root(self) -> bool:
        """Whether this process runs as root."""
        ...

    def run(self, argv: list[str]) -> tuple[int, str]:
        """Run a command; its exit status and standard output (an unrunnable command answers 127)."""
        ...


class SystemHost:
    """This machine."""

    def system(self) -> str:
        """The operating system's name, lowercase."""
        return platform.system().lower()

    def which(self, name: str) -> str | None:
        """`shutil.which`, also looking in the sbin directories a user's PATH may lack."""
        extra = os.pathsep.join(["/usr/sbin", "/sbin", "/usr/local/sbin"])
        return shutil.which(name) or shutil.which(name, path=extra)

    def is_root(self) -> bool:
        """Whether the effective user is root."""
        return hasattr(os, "geteuid") and os.geteuid() == 0

    def run(self, argv: list[str]) -> tuple[int, str]:
        """Run `argv` with a 10 s bound, no shell, stdin closed."""
        try:
            done = subprocess.run(argv, capture_output=True, stdin=subprocess.DEVNULL, timeout=10, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return 127, ""
        return done.returncode, done.stdout.decode("utf-8", "replace")


def _enclosing(address: ipaddress.IPv4Address) -> ipaddress.IPv4Network | None:
    if address in _PRIVATE[2]:
        return ipaddress.IPv4Network(f"{address}/24", strict=False)
    return next((net for net in _PRIVATE if address in net), None)


def _literal(host: str) -> ipaddress.IPv4Address | None:
    try:
        return ipaddress.IPv4Address(host)
    except ValueError:
        return None


def plan_rules(
    declaration: MeshDeclaration | None,
    interfaces: list[Interface],
    *,
    port: int | None = None,
    link_port: int | None = None,
) -> FirewallPlan:
    """The inbound rules a declaration needs on this machine (none when the mesh is off).

    Networks are the private ranges enclosing every address in the endpoints and seeds (10/8, 172.16/12,
    192.168.c/24, 100.64/10), else this machine's own private networks; public addresses never.
    """
    local = [i.address for i in interfaces if not i.loopback and not ipaddress.IPv4Address(i.address).is_loopback]
    if declaration is None or not declaration.enabled:
        return FirewallPlan(local_addresses=local, networks=[], hub_ports=[], rules=[])
    peers = [parse_endpoint(e) for e in (*declaration.rendezvous.endpoints, *declaration.cooperation.seeds)]
    enclosing = [_enclosing(a) for e in peers if (a := _literal(e.host)) is not None and not a.is_loopback]
    found = [n for n in enclosing if n is not None]
    if not found:
        for i in interfaces:
            network = i.network
            if not i.loopback and any(network.subnet_of(p) for p in _PRIVATE):
                found.append(network)
    networks = [str(n) for n in dict.fromkeys(found)]
    hub_ports = sorted({e.port for e in peers[: len(declaration.rendezvous.endpoints)] if e.host in local})
    rules: list[FirewallRule] = []
    multicast = declaration.multicast
    if multicast.enabled:
        rules.append(
            FirewallRule(
                role="multicast",
                port=multicast.port,
                destination=multicast.group,
                sources=networks,
                reason=f"discovery announcements to the group {multicast.group}",
            )
        )
    broadcast = declaration.broadcast
    if broadcast.mode != "disabled":
        rules.append(
            FirewallRule(role="broadcast", port=broadcast.port, sources=networks, reason="broadcast announcements")
        )
    rules += [
        FirewallRule(role="hub", port=p, sources=networks, reason="registrations with this machine's hub")
        for p in hub_ports
    ]
    first = port if port is not None else link_port if link_port is not None else declaration.cooperation.port
    if first:
        single = port is not None or link_port is not None
        rules.append(
            FirewallRule(
                role="link",
                port=first,
                port_end=None if single else min(first + LINK_SPAN - 1, 65535),
                sources=networks,
                reason="the link socket: registrations, answers to first sightings, cooperation links",
            )
        )
    return FirewallPlan(local_addresses=local, networks=networks, hub_ports=hub_ports, rules=rules)


def _port_text(rule: FirewallRule, separator: str) -> str:
    return f"{rule.port}{separator}{rule.port_end}" if rule.port_end is not None else str(rule.port)


def admit_commands(
    backend: Backend, plan: FirewallPlan, *, nft_chain: tuple[str, str, str] = ("inet", "filter", "input")
) -> list[AdmitCommand]:
    """The commands (to run as root) that admit every rule of `plan` with `backend`; none for `none`."""
    out: list[AdmitCommand] = []

    def add(role: str, argv: list[str]) -> None:
        out.append(AdmitCommand(rule=role, argv=argv, line=shlex.join(argv)))

    if backend == "application_firewall":
        add("all", [_SOCKETFILTERFW, "--add", sys.executable])
        add("all", [_SOCKETFILTERFW, "--unblockapp", sys.executable])
        return out
    for rule in plan.rules:
        comment = f"svc mesh: {rule.role}"
        for source in rule.sources:
            if backend == "ufw":
                argv = ["ufw", "allow", "proto", "udp", "from", source, "to", rule.destination or "any"]
                add(rule.role, [*argv, "port", _port_text(rule, ":"), "comment", comment])
            elif backend == "nftables":
                family, table, chain = nft_chain
                argv = ["nft", "insert", "rule", family, table, chain, "ip", "saddr", source]
                if rule.destination:
                    argv += ["ip", "daddr", rule.destination]
                add(rule.role, [*argv, "udp", "dport", _port_text(rule, "-"), "accept", "comment", f'"{comment}"'])
    return out


def _ports(spec: str) -> set[int] | None:
    """The ports of a port spec (`7741`, `7742:7757`, `7742-7757`, `{ 1, 2 }`, `1,2`); None if unreadable."""
    out: set[int] = set()
    for part in re.split(r"[,\s{}]+", spec.strip()):
        if not part:
            continue
        bounds = re.fullmatch(r"(\d+)(?:[:-](\d+))?", part)
        if bounds is None:
            return None
        low, high = int(bounds[1]), int(bounds[2] or bounds[1])
        out |= set(range(low, high + 1))
    return out


def _needed_ports(rule: FirewallRule) -> set[int]:
    return set(range(rule.port, (rule.port_end or rule.port) + 1))


def _covers(source: str, allowed: str | None) -> bool:
    if allowed is None or allowed.lower() in ("anywhere", "any", "0.0.0.0/0"):
        return True
    try:
        return ipaddress.IPv4Network(source).subnet_of(ipaddress.IPv4Network(allowed, strict=False))
    except (ValueError, TypeError):
        return False


def _missing(rules: Iterable[FirewallRule], allows: list[tuple[set[int] | None, str | None, str | None]]) -> list[str]:
    """Roles of `rules` some source of which no allow `(ports or None=all, destination, source)` covers."""
    missing = []
    for rule in rules:
        needed = _needed_ports(rule)
        for source in rule.sources or ["0.0.0.0/0"]:
            if not any(
                (ports is None or needed <= ports)
                and (dest is None or dest == rule.destination)
                and _covers(source, src)
                for ports, dest, src in allows
            ):
                missing.append(rule.role)
                break
    return list(dict.fromkeys(missing))


_UFW_ROW = re.compile(r"^(?P<to>.+?)\s{2,}(?P<action>(?:ALLOW|DENY|REJECT|LIMIT)(?: IN| OUT| FWD)?)\s{2,}(?P<src>.+?)$")


def observe_ufw(output: str, plan: FirewallPlan) -> FirewallObservation:
    """Read `ufw status verbose`: inactive, or which needed rules are present."""
    if re.search(r"^Status:\s*inactive", output, re.M):
        return FirewallObservation(state="inactive", detail="ufw is inactive: nothing is filtered")
    if not re.search(r"^Status:\s*active", output, re.M):
        return FirewallObservation(state="unobservable", detail="ufw status could not be read")
    if re.search(r"^Default:\s*allow \(incoming\)", output, re.M):
        return FirewallObservation(state="present", detail="ufw allows incoming traffic by default")
    allows: list[tuple[set[int] | None, str | None, str | None]] = []
    for line in output.splitlines():
        row = _UFW_ROW.match(line.split("#", 1)[0].rstrip())
        if row is None or "(v6)" in line or not row["action"].startswith(("ALLOW", "LIMIT")):
            continue
        if row["action"].endswith(("OUT", "FWD")):
            continue
        to = row["to"].split()
        dest = to[0] if len(to) == 2 or (len(to) == 1 and "/" not in to[0] and _literal(to[0])) else None
        port_part = to[-1] if len(to) == 2 or dest is None else ""
        spec, _, proto = port_part.partition("/")
        if proto and proto != "udp":
            continue
        ports = _ports(spec) if spec and spec != "Anywhere" else None
        if spec and spec != "Anywhere" and ports is None:
            continue
        allows.append((ports, dest, row["src"].strip()))
    return _verdict(plan, allows, "ufw")


def _verdict(
    plan: FirewallPlan, allows: list[tuple[set[int] | None, str | None, str | None]], front: str
) -> FirewallObservation:
    missing = _missing(plan.rules, allows)
    if missing:
        return FirewallObservation(
            state="missing", detail=f"{front} does not admit: {', '.join(missing)}", missing=missing
        )
    return FirewallObservation(state="present", detail=f"{front} admits every needed rule")


_NFT_TABLE = re.compile(r"^\s*table\s+(\S+)\s+(\S+)\s*\{")
_NFT_CHAIN = re.compile(r"^\s*chain\s+(\S+)\s*\{")


def observe_nft(output: str, plan: FirewallPlan) -> tuple[FirewallObservation, tuple[str, str, str] | None]:
    """Read `nft list ruleset`: the observation and the first input-hook chain (`family, table, chain`)."""
    table: tuple[str, str] | None = None
    chain: str | None = None
    hooked: dict[tuple[str, str, str], list[str]] = {}
    policies: dict[tuple[str, str, str], str] = {}
    for line in output.splitlines():
        if (m := _NFT_TABLE.match(line)) is not None:
            table, chain = (m[1], m[2]), None
            continue
        if (m := _NFT_CHAIN.match(line)) is not None and table is not None:
            chain = m[1]
            continue
        if table is None or chain is None:
            continue
        key = (*table, chain)
        if "hook input" in line:
            hooked.setdefault(key, [])
            policy = re.search(r"policy\s+(\w+)", line)
            policies[key] = policy[1] if policy else "accept"
        elif key in hooked:
            hooked[key].append(line.strip())
    if not hooked:
        return FirewallObservation(state="inactive", detail="no nftables chain hooks input: nothing is filtered"), None
    first = next(iter(hooked))
    if all(policies[k] == "accept" and not any(re.search(r"\b(drop|reject)\b", r) for r in hooked[k]) for k in hooked):
        return FirewallObservation(state="present", detail="every nftables input chain accepts by default"), first
    allows: list[tuple[set[int] | None, str | None, str | None]] = []
    for rules in hooked.values():
        for rule in rules:
            if not re.search(r"\baccept\b", rule.split(" comment ", 1)[0]):
                continue
            dport = re.search(r"udp dport (\{[^}]*\}|\S+)", rule)
            if dport is None:
                continue
            ports = _ports(dport[1])
            if ports is None:
                continue
            saddr = re.search(r"ip saddr (\S+)", rule)
            daddr = re.search(r"ip daddr (\S+)", rule)
            allows.append((ports, daddr[1] if daddr else None, saddr[1] if saddr else None))
    return _verdict(plan, allows, "nftables"), first


_DROP = re.compile(r"\[UFW BLOCK\].*?\bPROTO=UDP\b.*?\bDPT=(\d+)")


def recent_drops(journal: str, plan: FirewallPlan) -> list[BlockedPort]:
    """`[UFW BLOCK]` kernel lines toward a needed UDP port, counted per port (the last line's time kept)."""
    needed: set[int] = set()
    for rule in plan.rules:
        needed |= _needed_ports(rule)
    counts: dict[int, list[str | None]] = {}
    for line in journal.splitlines():
        m = _DROP.search(line)
        if m is None or int(m[1]) not in needed:
            continue
        stamp = line.split(" ", 1)[0] if line[:4].isdigit() else None
        counts.setdefault(int(m[1]), []).append(stamp)
    return [BlockedPort(port=p, count=len(s), last=s[-1]) for p, s in sorted(counts.items())]


def firewall_report(
    declaration: MeshDeclaration | None,
    interfaces: list[Interface],
    host: Host,
    *,
    port: int | None = None,
    link_port: int | None = None,
) -> FirewallReport:
    """The whole report: plan, backend, commands, observation and recent drops (runs commands; a thread)."""
    plan = plan_rules(declaration, interfaces, port=port, link_port=link_port)
    system = host.system()
    backend: Backend = "none"
    executable: str | None = None
    if system == "darwin":
        backend, executable = "application_firewall", _SOCKETFILTERFW
    else:
        for name, front in (("ufw", "ufw"), ("nft", "nftables")):
            executable = host.which(name)
            if executable is not None:
                backend = front  # type: ignore[assignment]
                break
    root = host.is_root()
    chain: tuple[str, str, str] | None = None
    if backend == "none":
        observation = FirewallObservation(state="no_backend", detail="no firewall front found (ufw, nft)")
    elif not root:
        observation = FirewallObservation(
            state="unobservable", detail=f"reading {backend} needs root: run `sudo svc mesh firewall`"
        )
    elif backend == "ufw":
        observation = observe_ufw(host.run([executable or "ufw", "status", "verbose"])[1], plan)
    elif backend == "nftables":
        observation, chain = observe_nft(host.run([executable or "nft", "list", "ruleset"])[1], plan)
    else:
        status, text = host.run([_SOCKETFILTERFW, "--getglobalstate"])
        observation = (
            FirewallObservation(state="inactive", detail="the application firewall is off")
            if status == 0 and "disabled" in text
            else FirewallObservation(state="unobservable", detail="the application firewall filters per application")
        )
    commands = admit_commands(backend, plan, nft_chain=chain or ("inet", "filter", "input")) if plan.rules else []
    blocked: list[BlockedPort] | None = None
    journalctl = host.which("journalctl") if system == "linux" else None
    if journalctl is not None and plan.rules:
        status, text = host.run([journalctl, "-k", "--since", f"-{WINDOW_SECONDS}s", "--no-pager", "-o", "short-iso"])
        if status == 0:
            blocked = recent_drops(text, plan)
    ok = observation.state != "missing" and not blocked
    if not plan.rules:
        verdict = "the mesh is off here: nothing to admit"
    elif observation.state == "missing":
        verdict = f"admit {', '.join(observation.missing or [])} with the commands listed"
    elif blocked:
        verdict = "the kernel dropped mesh datagrams in the last 5 minutes: admit them with the commands listed"
    elif observation.state == "unobservable":
        verdict = "the firewall could not be read; run as root to check it"
    else:
        verdict = "nothing in the firewall stands in the way"
    return FirewallReport(
        ok=ok,
        platform=system,
        backend=backend,
        executable=executable,
        plan=plan,
        commands=commands,
        observation=observation,
        window_seconds=WINDOW_SECONDS,
        blocked_recently=blocked,
        verdict=verdict,
    )
