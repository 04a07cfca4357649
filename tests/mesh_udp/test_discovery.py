"""Discovery on the in-memory fabric, under the autojump clock: the providers run unchanged, no socket."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

from svc.mesh_udp import Mesh
from tests.mesh_udp._fabric import Fabric
from tests.mesh_udp._helpers import envelope, identity
from tests.mesh_udp._runtimes import declare, knows_all, open_mesh, present

NO_MULTICAST: dict[str, Any] = {"multicast": {"enabled": False}}


async def start_all(
    tmp_path: Path, nursery: trio.Nursery, fabric: Fabric, settings: list[dict[str, Any]]
) -> list[Mesh]:
    meshes = []
    for i, extra in enumerate(settings):
        mesh = open_mesh(tmp_path, f"r{i}", fabric.host(f"10.0.0.{i + 1}"), extra, seed=i)
        await mesh.start(nursery)
        meshes.append(mesh)
    return meshes


async def all_know_each_other(meshes: list[Mesh]) -> None:
    for mesh in meshes:
        await mesh.wait_until(lambda m=mesh: len(present(m)) == len(meshes) - 1)  # type: ignore[misc]
    assert knows_all(meshes)


def sources(mesh: Mesh) -> set[str]:
    return {s.source for n in mesh.nodes().nodes for s in n.sources}


async def test_three_runtimes_find_each_other_by_multicast(
    tmp_path: Path, nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    fabric = Fabric(nursery)
    meshes = await start_all(tmp_path, nursery, fabric, [{}, {}, {}])
    await all_know_each_other(meshes)
    status = meshes[0].status()
    providers = {p.id: p for p in status.providers}
    assert status.active
    assert providers["link"].state == "running"
    assert providers["multicast"].state == "running"
    assert providers["multicast"].sent >= 1
    assert providers["broadcast"].state == "stopped"
    assert status.tallies.nodes == 2
    assert status.tallies.present == 2
    assert status.refusals.self_heard >= 1
    assert status.trust_policy == "deny_unknown"
    node = meshes[0].nodes().nodes[0]
    assert node.trust.state == "observed"
    assert node.endpoints[0].startswith("10.0.0.")
    assert node.repositories == [meshes[0].repository.id]  # type: ignore[union-attr]
    assert {"multicast"} <= sources(meshes[0])
    assert set(fabric.sent_to) <= {"239.255.77.77", "10.0.0.1", "10.0.0.2", "10.0.0.3"}


async def test_three_runtimes_find_each_other_by_broadcast(
    tmp_path: Path, nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    fabric = Fabric(nursery)
    settings = {**NO_MULTICAST, "broadcast": {"mode": "explicit", "networks": ["10.0.0.0/24"]}}
    meshes = await start_all(tmp_path, nursery, fabric, [settings] * 3)
    await all_know_each_other(meshes)
    assert "broadcast" in sources(meshes[0])
    providers = {p.id: p for p in meshes[0].status().providers}
    assert providers["broadcast"].state == "running"
    assert providers["multicast"].state == "stopped"
    assert set(fabric.sent_to) <= {"10.0.0.255", "10.0.0.1", "10.0.0.2", "10.0.0.3"}


async def test_three_runtimes_find_each_other_through_a_rendezvous_hub(
    tmp_path: Path, nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    fabric = Fabric(nursery)
    hub = {**NO_MULTICAST, "cooperation": {"port": 7742}}
    member = {**NO_MULTICAST, "rendezvous": {"endpoints": ["udp://10.0.0.1:7742"], "interval_seconds": 5}}
    meshes = await start_all(tmp_path, nursery, fabric, [hub, member, member])
    await all_know_each_other(meshes)
    status = meshes[1].status()
    providers = {p.id: p for p in status.providers}
    assert providers["rendezvous"].state == "running"
    assert providers["rendezvous"].detail is not None
    assert providers["rendezvous"].detail.startswith("1 of 1 answered")
    assert sources(meshes[1]) == {"rendezvous"}
    paths = {s.path for n in meshes[1].nodes().nodes for s in n.sources}
    assert "10.0.0.1:7742" in paths


async def test_three_runtimes_find_each_other_by_seeds_alone(
    tmp_path: Path, nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    fabric = Fabric(nursery)
    hosts = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
    settings = [
        {**NO_MULTICAST, "cooperation": {"port": 7742, "seeds": [f"{h}:7742" for h in hosts if h != me]}}
        for me in hosts
    ]
    meshes = await start_all(tmp_path, nursery, fabric, settings)
    await all_know_each_other(meshes)
    assert sources(meshes[2]) == {"seed"}
    assert sources(meshes[0]) <= {"seed", "rendezvous"}
    assert {p.id: p.state for p in meshes[0].status().providers}["seeds"] == "running"


@pytest.mark.bound(3000)
async def test_a_stopped_runtime_is_absent_after_the_presence_window_then_expires(
    tmp_path: Path, nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    fabric = Fabric(nursery)
    meshes = await start_all(tmp_path, nursery, fabric, [{}, {}, {}])
    await all_know_each_other(meshes)
    gone = meshes[2]
    assert gone.identity is not None
    name = gone.identity.display_name
    gone.stop()
    stopped_at = trio.current_time()
    await meshes[0].wait_until(lambda: name not in present(meshes[0]))
    waited = trio.current_time() - stopped_at
    assert 60 - 17 - 1 <= waited <= 60.0 + 0.01
    [entry] = [n for n in meshes[0].nodes().nodes if n.display_name == name]
    assert entry.presence == "absent"
    assert meshes[0].status().tallies.present == 1
    await meshes[0].wait_until(lambda: meshes[0].status().tallies.nodes == 1)
    assert trio.current_time() - stopped_at >= 900 - 17
    assert meshes[0].status().tallies.expired == 1
    assert present(meshes[0]) == {meshes[1].identity.display_name}  # type: ignore[union-attr]


@pytest.mark.bound(600)
async def test_discovery_holds_under_loss_duplication_and_delay(
    tmp_path: Path, nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    fabric = Fabric(nursery, seed=7, loss=0.3, duplicate=0.2, delay=0.5)
    meshes = await start_all(tmp_path, nursery, fabric, [{}, {}, {}, {}, {}])
    await all_know_each_other(meshes)
    assert fabric.dropped > 0


async def test_a_restarted_runtime_counts_a_restart_and_providers_restart_alone(
    tmp_path: Path, nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    fabric = Fabric(nursery)
    meshes = await start_all(tmp_path, nursery, fabric, [{}, {}])
    await all_know_each_other(meshes)
    await meshes[0].restart("multicast")
    assert {p.id: p.state for p in meshes[0].status().providers}["multicast"] == "running"
    meshes[1].stop()
    again = open_mesh(tmp_path, "r1", fabric.host("10.0.0.2"), {}, seed=9)
    await again.start(nursery)
    await meshes[0].wait_until(lambda: any(n.restarts == 1 for n in meshes[0].nodes().nodes))
    [node] = meshes[0].nodes().nodes
    assert node.instance_id == again.instance
    assert node.presence == "present"


async def test_forged_and_oversized_datagrams_are_counted_by_reason(
    tmp_path: Path, nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    fabric = Fabric(nursery)
    [mesh] = await start_all(tmp_path, nursery, fabric, [{}])
    group = ("239.255.77.77", 7741)
    other = identity(5)
    now = trio.current_time()
    forged = {**envelope(other, ts=mesh.wall()), "name": "mallory"}
    fabric.inject(msgspec.json.encode(forged), source=("10.0.0.9", 4000), to=group)
    fabric.inject(b"x" * 1300, source=("10.0.0.9", 4000), to=group)
    fabric.inject(b"{nope", source=("10.0.0.9", 4000), to=group)
    fabric.inject(msgspec.json.encode(envelope(other, ts=mesh.wall() - 3600)), source=("10.0.0.9", 4000), to=group)
    await trio.testing.wait_all_tasks_blocked()
    refusals = mesh.status().refusals
    assert (refusals.signature, refusals.oversized, refusals.malformed, refusals.stale) == (1, 1, 1, 1)
    assert mesh.nodes().count == 0
    assert trio.current_time() == now
    assert {p.id: p.received for p in mesh.status().providers}["multicast"] >= 4


async def test_a_disabled_or_absent_declaration_opens_nothing(tmp_path: Path, nursery: trio.Nursery) -> None:
    fabric = Fabric(nursery)
    root = tmp_path / "off"
    root.mkdir()
    declare(root, {"enabled": False})
    from svc.layer import Repository

    mesh = Mesh.prepare(
        Repository.discover(root), identity_file=tmp_path / "k" / "node.json", network=fabric.host("10.0.0.1")
    )
    await mesh.start(nursery)
    assert fabric.sockets == []
    assert not (tmp_path / "k").exists()
    status = mesh.status()
    assert not status.active
    assert status.reason == "off, as declared (enabled: false)"
    assert {p.state for p in status.providers} == {"stopped"}
    absent = Mesh.prepare(Repository.discover(tmp_path / "k2"), identity_file=None, network=fabric.host("10.0.0.2"))
    assert absent.reason == "off: no declaration under .ai/repo/mesh/"
    assert absent.register({}).refusal == "not_active"


async def test_online_tailnet_peers_are_rendezvous_endpoints(
    tmp_path: Path, nursery: trio.Nursery, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools = tmp_path / "bin"
    tools.mkdir()
    status = {
        "Peer": {
            "a": {"Online": True, "TailscaleIPs": ["10.0.0.1", "fd7a:115c:a1e0::1"]},
            "b": {"Online": False, "TailscaleIPs": ["10.0.0.7"]},
        }
    }
    (tools / "tailscale").write_text(f"#!/bin/sh\ncat <<'EOF'\n{msgspec.json.encode(status).decode()}\nEOF\n")
    (tools / "tailscale").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}:{os.environ.get('PATH', '')}")
    fabric = Fabric(nursery)
    hub = {**NO_MULTICAST, "cooperation": {"port": 7742}}
    member = {**NO_MULTICAST, "tailscale": {"enabled": True}}
    meshes = await start_all(tmp_path, nursery, fabric, [hub, member])
    await all_know_each_other(meshes)
    assert sources(meshes[1]) == {"tailscale"}
    provider = {p.id: p for p in meshes[1].status().providers}["tailscale"]
    assert provider.state == "running"
    assert provider.sent >= 1
    for mesh in meshes:
        mesh.stop()


async def test_without_the_tailscale_cli_the_provider_is_stopped(
    tmp_path: Path, nursery: trio.Nursery, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    fabric = Fabric(nursery)
    [mesh] = await start_all(tmp_path, nursery, fabric, [{"tailscale": {"enabled": True}}])
    provider = {p.id: p for p in mesh.status().providers}["tailscale"]
    assert (provider.state, provider.detail) == ("stopped", "no tailscale CLI on PATH")
    mesh.stop()
