"""Three runtimes on real loopback sockets find each other by multicast (loop on), broadcast, a rendezvous
and seeds alone; a stopped one turns absent after the presence window. Sockets, groups and ports are the
test's own and nothing is sent beyond 127.0.0.0/8 (or the test's group, joined on 127.0.0.1 only)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from svc.mesh_udp import Mesh
from tests.mesh_udp._loopback import RecordingNetwork, free_udp_port, loopback_settings, own_group
from tests.mesh_udp._runtimes import knows_all, open_mesh, present

pytestmark = pytest.mark.slow


async def start_all(
    tmp_path: Path, nursery: trio.Nursery, settings: list[dict[str, Any]]
) -> tuple[list[Mesh], RecordingNetwork]:
    network = RecordingNetwork()
    meshes = []
    for i, extra in enumerate(settings):
        mesh = open_mesh(tmp_path, f"r{i}", network, extra, seed=i)
        await mesh.start(nursery)
        meshes.append(mesh)
    return meshes, network


async def all_know_each_other(meshes: list[Mesh]) -> None:
    for mesh in meshes:
        await mesh.wait_until(lambda m=mesh: len(present(m)) == len(meshes) - 1)  # type: ignore[misc]
    assert knows_all(meshes)


def sources(mesh: Mesh) -> set[str]:
    return {s.source for n in mesh.nodes().nodes for s in n.sources}


async def test_by_multicast_with_loop(tmp_path: Path, nursery: trio.Nursery) -> None:
    group, port = own_group(), free_udp_port()
    meshes, network = await start_all(tmp_path, nursery, [loopback_settings(group, port)] * 3)
    await all_know_each_other(meshes)
    assert "multicast" in sources(meshes[0])
    status = meshes[0].status()
    providers = {p.id: p for p in status.providers}
    assert providers["multicast"].state == "running"
    assert providers["multicast"].detail is not None
    assert providers["multicast"].detail.startswith(f"{group}:{port} joined on 127.0.0.1")
    node = meshes[0].nodes().nodes[0]
    assert node.endpoints[0].startswith("127.0.0.1:")
    assert network.only_loopback_or(group)
    for mesh in meshes:
        mesh.stop()


async def test_by_broadcast_to_127_255_255_255(tmp_path: Path, nursery: trio.Nursery) -> None:
    group, port = own_group(), free_udp_port()
    settings = loopback_settings(
        group, port, broadcast={"mode": "explicit", "networks": ["127.0.0.0/8"], "port": port, "interval_seconds": 1}
    )
    settings["multicast"]["enabled"] = False
    meshes, network = await start_all(tmp_path, nursery, [settings] * 3)
    await all_know_each_other(meshes)
    assert "broadcast" in sources(meshes[0])
    assert "127.255.255.255" in network.destinations
    assert network.only_loopback_or(group)
    for mesh in meshes:
        mesh.stop()


async def test_through_a_rendezvous(tmp_path: Path, nursery: trio.Nursery) -> None:
    group, port, hub_port = own_group(), free_udp_port(), free_udp_port()
    off: dict[str, Any] = {"enabled": False, "group": group, "port": port}
    hub = {"interfaces": ["127.0.0.1"], "multicast": off, "cooperation": {"port": hub_port}}
    member = {
        "interfaces": ["127.0.0.1"],
        "multicast": off,
        "rendezvous": {"endpoints": [f"udp://127.0.0.1:{hub_port}"], "interval_seconds": 1},
    }
    meshes, network = await start_all(tmp_path, nursery, [hub, member, member])
    await all_know_each_other(meshes)
    assert sources(meshes[1]) <= {"rendezvous"}
    assert network.only_loopback_or(group)
    for mesh in meshes:
        mesh.stop()


async def test_by_seeds_alone(tmp_path: Path, nursery: trio.Nursery) -> None:
    group, port = own_group(), free_udp_port()
    ports = [free_udp_port() for _ in range(3)]
    settings = [
        {
            "interfaces": ["127.0.0.1"],
            "multicast": {"enabled": False, "group": group, "port": port},
            "rendezvous": {"interval_seconds": 1},
            "cooperation": {"port": mine, "seeds": [f"127.0.0.1:{p}" for p in ports if p != mine]},
        }
        for mine in ports
    ]
    meshes, network = await start_all(tmp_path, nursery, settings)
    await all_know_each_other(meshes)
    assert "seed" in sources(meshes[2])
    assert network.only_loopback_or(group)
    for mesh in meshes:
        mesh.stop()


@pytest.mark.bound(600)
async def test_a_stopped_runtime_turns_absent_after_the_presence_window(
    tmp_path: Path, nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    group, port = own_group(), free_udp_port()
    meshes, _ = await start_all(tmp_path, nursery, [loopback_settings(group, port)] * 3)
    await all_know_each_other(meshes)
    gone = meshes[2].identity
    assert gone is not None
    meshes[2].stop()
    stopped = trio.current_time()
    await meshes[0].wait_until(lambda: gone.display_name not in present(meshes[0]))
    assert trio.current_time() - stopped <= 60.0 + 0.01
    assert present(meshes[0]) == {meshes[1].identity.display_name}  # type: ignore[union-attr]
    [absent] = [n for n in meshes[0].nodes().nodes if n.presence == "absent"]
    assert absent.display_name == gone.display_name
    for mesh in meshes[:2]:
        mesh.stop()
