"""The declaration (docs/mesh.md): defaults, refusals, dropped `http://` entries and trunk narrowing."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from svc.layer import Repository, dump_yaml
from svc.mesh_udp._declaration import MeshDeclaration, parse_declaration, parse_endpoint, read_declaration
from tests.conftest import make_checkout

KEY_A, KEY_B = "a" * 64, "b" * 64


def base(**extra: Any) -> dict[str, Any]:
    return {"schema": "mesh/v1", "kind": "mesh-declaration", "id": "lan", **extra}


def parse(data: Any) -> tuple[MeshDeclaration | None, list[str], list[str]]:
    return parse_declaration(data, stem="lan")


def test_defaults_of_mesh_md() -> None:
    decl, problems, dropped = parse(base())
    assert decl is not None
    assert problems == []
    assert dropped == []
    assert decl.enabled is False
    m = decl.multicast
    assert (m.enabled, m.group, m.port, m.ttl, m.interval_seconds) == (True, "239.255.77.77", 7741, 1, 15)
    b = decl.broadcast
    assert (b.mode, b.port, b.networks, b.interval_seconds) == ("disabled", 7741, [], 15)
    assert (decl.rendezvous.endpoints, decl.rendezvous.interval_seconds) == ([], 60)
    assert (decl.trust.policy, decl.trust.allow) == ("deny_unknown", [])
    c = decl.cooperation
    assert (c.enabled, c.port, c.heartbeat_seconds, c.expiry_seconds, c.seeds, c.repository) == (
        True,
        7742,
        5,
        30,
        [],
        None,
    )
    assert decl.tailscale.enabled is False
    assert decl.interfaces == []


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (base(schema="mesh/v2"), "schema"),
        (base(kind="other"), "kind"),
        (base(id="other"), "file name"),
        (base(unknown=1), "unknown"),
        (base(multicast={"interval_seconds": 0}), "interval_seconds"),
        (base(broadcast={"interval_seconds": 0}), "interval_seconds"),
        (base(rendezvous={"interval_seconds": 0}), "interval_seconds"),
        (base(multicast={"grop": "x"}), "grop"),
        (base(multicast={"group": "10.0.0.1"}), "multicast"),
        (base(cooperation={"heartbeat_seconds": 5, "expiry_seconds": 14}), "expiry_seconds"),
        (base(rendezvous={"endpoints": ["udp://host"]}), "udp://host"),
        (base(rendezvous={"endpoints": ["udp://h:99999"]}), "port"),
        (base(cooperation={"seeds": ["bad host:1"]}), "bad host"),
        (base(cooperation={"repository": ""}), "repository"),
        (base(cooperation={"repository": "r" * 129}), "repository"),
        (base(trust={"allow": ["xyz"]}), "allow"),
        (base(trust={"policy": "everyone"}), "policy"),
        (base(broadcast={"networks": ["10.0.0.0/33"]}), "networks"),
        (base(interfaces=["eth0"]), "interfaces"),
        ("just text", "mapping"),
    ],
)
def test_refusals(data: Any, needle: str) -> None:
    decl, problems, _ = parse(data)
    assert decl is None
    assert any(needle in p for p in problems), problems


def test_endpoints_are_normalised_and_http_entries_dropped_with_a_line() -> None:
    decl, problems, dropped = parse(
        base(
            rendezvous={"endpoints": ["udp://10.0.0.1:7742", "10.0.0.1:7742", "http://10.0.0.2:8741", "hub.lan:7000"]},
            cooperation={"seeds": ["https://x:1", "udp://127.0.0.1:7750"]},
            trust={"allow": [KEY_A.upper()]},
            broadcast={"mode": "explicit", "networks": ["192.168.1.7/24"]},
        )
    )
    assert problems == []
    assert decl is not None
    assert decl.rendezvous.endpoints == ["10.0.0.1:7742", "hub.lan:7000"]
    assert decl.cooperation.seeds == ["127.0.0.1:7750"]
    assert decl.trust.allow == [KEY_A]
    assert decl.broadcast.networks == ["192.168.1.0/24"]
    assert len(dropped) == 2
    assert all("dropped" in line for line in dropped)
    assert parse_endpoint("udp://127.0.0.1:9").loopback
    assert not parse_endpoint("h:9").loopback


def declare(root: Path, data: dict[str, Any], *, commit: bool) -> None:
    directory = root / ".ai" / "repo" / "mesh"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "lan.yaml").write_text(dump_yaml(data))
    if commit:
        run = ["git", "-C", str(root)]
        subprocess.run([*run, "add", "-A"], check=True)
        subprocess.run(
            [*run, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "mesh"], check=True
        )


def test_absent_several_and_refused_files(tmp_path: Path) -> None:
    root = make_checkout(tmp_path / "c", layer=False)
    assert read_declaration(Repository.discover(root)).state == "absent"
    declare(root, base(enabled=True), commit=False)
    (root / ".ai" / "repo" / "mesh" / "other.yaml").write_text("schema: mesh/v1\n")
    reading = read_declaration(Repository.discover(root))
    assert reading.state == "refused"
    assert "several" in reading.problems[0]
    (root / ".ai" / "repo" / "mesh" / "other.yaml").unlink()
    (root / ".ai" / "repo" / "mesh" / "lan.yaml").write_text("key: [unclosed\n")
    reading = read_declaration(Repository.discover(root))
    assert reading.state == "refused"
    assert reading.path == ".ai/repo/mesh/lan.yaml"
    assert not reading.enabled


def test_without_a_trunk_copy_tofu_falls_back_to_deny_unknown(tmp_path: Path) -> None:
    root = make_checkout(tmp_path / "c", layer=False)
    declare(root, base(enabled=True, trust={"policy": "tofu"}), commit=False)
    reading = read_declaration(Repository.discover(root))
    assert reading.state == "ok"
    assert reading.enabled
    assert reading.trunk is None
    assert reading.declaration is not None
    assert reading.declaration.trust.policy == "deny_unknown"
    assert reading.dropped == ("trust.policy tofu dropped: the trunk has no committed copy (deny_unknown applies)",)


def test_the_working_tree_narrows_the_trunk_never_widens_it(tmp_path: Path) -> None:
    root = make_checkout(tmp_path / "c", layer=False)
    trunk = base(
        enabled=False,
        trust={"policy": "deny_unknown", "allow": [KEY_A]},
        rendezvous={"endpoints": ["10.0.0.1:7742"]},
        cooperation={"seeds": ["10.0.0.2:7742"]},
        broadcast={"mode": "explicit", "networks": ["10.0.0.0/8"]},
    )
    declare(root, trunk, commit=True)
    subprocess.run(["git", "-C", str(root), "checkout", "-qb", "feature"], check=True)
    work = base(
        enabled=True,
        trust={"policy": "tofu", "allow": [KEY_A, KEY_B]},
        rendezvous={"endpoints": ["10.0.0.1:7742", "10.9.9.9:7742", "127.0.0.1:7760"]},
        cooperation={"seeds": ["10.0.0.3:7742"]},
        broadcast={"mode": "auto", "networks": ["10.0.0.0/8", "172.16.0.0/12", "127.0.0.0/8"]},
        tailscale={"enabled": True},
    )
    declare(root, work, commit=False)
    reading = read_declaration(Repository.discover(root))
    decl = reading.declaration
    assert reading.state == "ok"
    assert decl is not None
    assert reading.trunk == "refs/heads/main:.ai/repo/mesh/lan.yaml"
    assert decl.enabled is False
    assert decl.trust.policy == "deny_unknown"
    assert decl.trust.allow == [KEY_A]
    assert decl.rendezvous.endpoints == ["10.0.0.1:7742", "127.0.0.1:7760"]
    assert decl.cooperation.seeds == []
    assert decl.broadcast.mode == "explicit"
    assert decl.broadcast.networks == ["10.0.0.0/8", "127.0.0.0/8"]
    assert decl.tailscale.enabled is False
    assert len(reading.dropped) == 8, reading.dropped
    assert any(line.startswith("enabled: true dropped") for line in reading.dropped)
    assert any(KEY_B in line for line in reading.dropped)


def test_narrowing_is_kept(tmp_path: Path) -> None:
    root = make_checkout(tmp_path / "c", layer=False)
    declare(root, base(enabled=True, trust={"policy": "tofu"}, rendezvous={"endpoints": ["10.0.0.1:1"]}), commit=True)
    declare(root, base(enabled=True, trust={"policy": "deny_unknown"}), commit=False)
    reading = read_declaration(Repository.discover(root))
    assert reading.dropped == ()
    assert reading.declaration is not None
    assert reading.declaration.enabled
    assert reading.declaration.trust.policy == "deny_unknown"


def test_the_trunk_is_the_project_default_branch(tmp_path: Path) -> None:
    root = make_checkout(tmp_path / "c", layer=False)
    subprocess.run(["git", "-C", str(root), "checkout", "-qb", "trunk"], check=True)
    declare(root, base(enabled=False), commit=True)
    project = root / ".ai" / "repo" / "project"
    project.mkdir(parents=True)
    (project / "project.yaml").write_text("default_branch: trunk\n")
    declare(root, base(enabled=True), commit=False)
    reading = read_declaration(Repository.discover(root))
    assert reading.trunk == "refs/heads/trunk:.ai/repo/mesh/lan.yaml"
    assert reading.declaration is not None
    assert not reading.declaration.enabled


def test_a_declaration_svc_cannot_read_is_refused_never_followed(tmp_path: Path) -> None:
    root = make_checkout(tmp_path / "c", layer=False)
    mesh = root / ".ai" / "repo" / "mesh"
    mesh.mkdir(parents=True)
    os.symlink("/etc/passwd", mesh / "lan.yaml")
    reading = read_declaration(Repository.discover(root))
    assert (reading.state, reading.problems) == ("refused", ("cannot read: a symlink leaving the repository",))
    (mesh / "lan.yaml").unlink()
    (mesh / "lan.yaml").write_text("a: &a [1]\nb: *a\n")
    reading = read_declaration(Repository.discover(root))
    assert (reading.state, reading.problems) == ("refused", ("uses YAML aliases, which svc does not read",))
    (mesh / "lan.yaml").unlink()
    mesh.rmdir()
    os.symlink(tmp_path, mesh)
    reading = read_declaration(Repository.discover(root))
    assert (reading.state, reading.problems) == ("refused", ("cannot read: a symlink leaving the repository",))
