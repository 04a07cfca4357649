"""`mesh.firewall` on captured ufw, nftables and kernel-log outputs (fixtures), and `unobservable` without
root: the report reads the host and changes nothing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import msgspec
import pytest

from svc.mesh_udp import Interface, MeshDeclaration
from svc.mesh_udp._firewall import (
    admit_commands,
    firewall_report,
    observe_nft,
    observe_ufw,
    plan_rules,
    recent_drops,
)
from tests.mesh_udp._runtimes import declare

FIXTURES = Path(__file__).parent / "fixtures"
LAN = Interface(name="eth0", address="192.168.1.10", netmask="255.255.255.0", broadcast="192.168.1.255")
PUBLIC = Interface(name="eth1", address="203.0.113.7", netmask="255.255.255.0")
LO = Interface(name="lo", address="127.0.0.1", loopback=True, multicast=False)


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def decl(**changes: object) -> MeshDeclaration:
    data = msgspec.to_builtins(MeshDeclaration.defaults("lan"))
    for key, value in changes.items():
        data[key] = {**data[key], **value} if isinstance(value, dict) else value
    return msgspec.convert(data, MeshDeclaration)


class FakeHost:
    """A host whose commands answer captured outputs; running anything else fails the test."""

    def __init__(
        self, *, root: bool, tools: dict[str, str], outputs: dict[str, tuple[int, str]], system: str = "linux"
    ):
        self.root, self.tools, self.outputs, self._system = root, tools, outputs, system
        self.ran: list[list[str]] = []

    def system(self) -> str:
        return self._system

    def which(self, name: str) -> str | None:
        return self.tools.get(name)

    def is_root(self) -> bool:
        return self.root

    def run(self, argv: list[str]) -> tuple[int, str]:
        self.ran.append(argv)
        key = Path(argv[0]).name
        assert key in self.outputs, argv
        return self.outputs[key]


def test_plan_from_the_machines_own_private_networks() -> None:
    plan = plan_rules(decl(), [LO, LAN, PUBLIC])
    assert plan.local_addresses == ["192.168.1.10", "203.0.113.7"]
    assert plan.networks == ["192.168.1.0/24"]
    assert [(r.role, r.port, r.port_end, r.destination) for r in plan.rules] == [
        ("multicast", 7741, None, "239.255.77.77"),
        ("link", 7742, 7757, None),
    ]
    assert all(r.sources == ["192.168.1.0/24"] and r.protocol == "udp" for r in plan.rules)


def test_plan_from_declared_peers_hubs_on_this_machine_and_the_port_input() -> None:
    d = decl(
        rendezvous={"endpoints": ["192.168.1.10:7800", "10.1.2.3:7742", "hub.example:7742"]},
        cooperation={"seeds": ["172.20.0.5:7742", "100.64.1.1:7742", "198.51.100.1:7742", "127.0.0.1:7742"]},
        broadcast={"mode": "auto"},
    )
    plan = plan_rules(d, [LAN], port=9000)
    assert plan.networks == ["192.168.1.0/24", "10.0.0.0/8", "172.16.0.0/12", "100.64.0.0/10"]
    assert plan.hub_ports == [7800]
    assert [(r.role, r.port, r.port_end) for r in plan.rules] == [
        ("multicast", 7741, None),
        ("broadcast", 7741, None),
        ("hub", 7800, None),
        ("link", 9000, None),
    ]
    assert plan_rules(decl(enabled=False), [LAN]).rules == []
    assert plan_rules(None, [LAN]).rules == []


def test_ufw_and_nftables_admit_commands_as_argv_and_one_quoted_line() -> None:
    plan = plan_rules(decl(), [LAN])
    ufw = admit_commands("ufw", plan)
    assert [c.argv for c in ufw] == [
        [
            "ufw",
            "allow",
            "proto",
            "udp",
            "from",
            "192.168.1.0/24",
            "to",
            "239.255.77.77",
            "port",
            "7741",
            "comment",
            "svc mesh: multicast",
        ],
        [
            "ufw",
            "allow",
            "proto",
            "udp",
            "from",
            "192.168.1.0/24",
            "to",
            "any",
            "port",
            "7742:7757",
            "comment",
            "svc mesh: link",
        ],
    ]
    assert ufw[0].line == (
        "ufw allow proto udp from 192.168.1.0/24 to 239.255.77.77 port 7741 comment 'svc mesh: multicast'"
    )
    nft = admit_commands("nftables", plan, nft_chain=("ip", "firewall", "inbound"))
    assert nft[1].argv == [
        "nft",
        "insert",
        "rule",
        "ip",
        "firewall",
        "inbound",
        "ip",
        "saddr",
        "192.168.1.0/24",
        "udp",
        "dport",
        "7742-7757",
        "accept",
        "comment",
        '"svc mesh: link"',
    ]
    assert nft[1].line.endswith("""accept comment '"svc mesh: link"'""")
    assert admit_commands("none", plan) == []


def test_ufw_observations() -> None:
    plan = plan_rules(decl(), [LAN])
    missing = observe_ufw(fixture("ufw_missing.txt"), plan)
    assert (missing.state, missing.missing) == ("missing", ["link"])
    assert observe_ufw(fixture("ufw_present.txt"), plan).state == "present"
    assert observe_ufw(fixture("ufw_inactive.txt"), plan).state == "inactive"
    assert observe_ufw(fixture("ufw_default_allow.txt"), plan).state == "present"
    assert observe_ufw("ERROR: You need to be root to run this script\n", plan).state == "unobservable"


def test_nftables_observations_and_the_chain_commands_go_to() -> None:
    plan = plan_rules(decl(), [LAN])
    missing, chain = observe_nft(fixture("nft_missing.txt"), plan)
    assert (missing.state, missing.missing, chain) == ("missing", ["link"], ("inet", "filter", "input"))
    present, chain = observe_nft(fixture("nft_present.txt"), plan)
    assert (present.state, chain) == ("present", ("ip", "firewall", "inbound"))
    assert observe_nft(fixture("nft_accept.txt"), plan)[0].state == "present"
    assert observe_nft(fixture("nft_empty.txt"), plan)[0].state == "inactive"


def test_recent_ufw_drops_toward_needed_udp_ports() -> None:
    plan = plan_rules(decl(), [LAN])
    drops = recent_drops(fixture("journal_ufw_block.txt"), plan)
    assert [(d.port, d.count, d.last) for d in drops] == [
        (7741, 2, "2026-01-01T12:00:16+0000"),
        (7743, 1, "2026-01-01T12:00:20+0000"),
    ]


def test_the_report_as_root_with_ufw_reads_status_and_the_kernel_log() -> None:
    host = FakeHost(
        root=True,
        tools={"ufw": "/usr/sbin/ufw", "journalctl": "/usr/bin/journalctl"},
        outputs={"ufw": (0, fixture("ufw_missing.txt")), "journalctl": (0, fixture("journal_ufw_block.txt"))},
    )
    report = firewall_report(decl(), [LAN], host)
    assert report.ok is False
    assert (report.backend, report.executable, report.platform) == ("ufw", "/usr/sbin/ufw", "linux")
    assert report.observation.state == "missing"
    assert report.blocked_recently is not None
    assert [b.port for b in report.blocked_recently] == [7741, 7743]
    assert report.window_seconds == 300
    assert [c.rule for c in report.commands] == ["multicast", "link"]
    assert host.ran == [
        ["/usr/sbin/ufw", "status", "verbose"],
        ["/usr/bin/journalctl", "-k", "--since", "-300s", "--no-pager", "-o", "short-iso"],
    ]
    quiet = FakeHost(
        root=True,
        tools={"nft": "/usr/sbin/nft", "journalctl": "/usr/bin/journalctl"},
        outputs={"nft": (0, fixture("nft_present.txt")), "journalctl": (0, "")},
    )
    report = firewall_report(decl(), [LAN], quiet)
    assert report.ok is True
    assert report.backend == "nftables"
    assert report.blocked_recently == []
    assert report.commands[0].argv[3:6] == ["ip", "firewall", "inbound"]


def test_the_report_without_root_is_unobservable_and_runs_no_firewall_command() -> None:
    host = FakeHost(root=False, tools={"ufw": "/usr/sbin/ufw"}, outputs={})
    report = firewall_report(decl(), [LAN], host)
    assert report.observation.state == "unobservable"
    assert "root" in report.observation.detail
    assert report.ok is True
    assert report.commands
    assert host.ran == []
    none = firewall_report(decl(), [LAN], FakeHost(root=True, tools={}, outputs={}))
    assert (none.backend, none.observation.state, none.commands) == ("none", "no_backend", [])


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to drop to nobody")
def test_svc_mesh_firewall_as_an_unprivileged_user_reports_unobservable() -> None:
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv is not installed: cannot run svc as another user")
    base = Path(tempfile.mkdtemp(prefix="svc-firewall-"))  # pytest's own tmp directory is private to root
    try:
        os.chmod(base, 0o755)
        root = base / "checkout"
        root.mkdir()
        declare(root, {})
        tools = base / "bin"
        tools.mkdir()
        canary = base / "ran"
        (tools / "ufw").write_text(f"#!/bin/sh\ntouch {canary}\nexit 1\n")
        (tools / "ufw").chmod(0o755)
        env = {"PATH": f"{tools}:/usr/bin:/bin", "HOME": str(base), "XDG_STATE_HOME": str(base / "state")}
        drop = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
        svc = [sys.executable, "-m", "svc", "--repo", str(root), "mesh", "firewall", "--json"]
        done = subprocess.run([*drop, *svc], capture_output=True, env=env, timeout=60, check=False)
        assert done.returncode == 0, done.stderr.decode()
        report = msgspec.json.decode(done.stdout)
        assert report["backend"] == "ufw"
        assert report["observation"]["state"] == "unobservable"
        assert not canary.exists()
    finally:
        shutil.rmtree(base)
