"""Discovery and cooperation across two network namespaces joined by a veth pair (docs/mesh.md multi-host).

The test creates both namespaces, the veth pair and their private addresses itself, runs one svc runtime
in each (a separate process, on the namespace's own interfaces), and deletes everything in `finally`. The
runtimes find each other by multicast, link (the registry's record is the dial target; each allowlists
the other's key), each claims a path, and each must hold the other's claim with an equal digest.
Datagrams go only to the test's multicast group on the veth and to the other namespace's address.
It needs root and `ip`; elsewhere it is skipped with the reason.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
import trio

from svc.mesh_udp import create_identity
from tests.mesh_udp._loopback import own_group
from tests.mesh_udp._runtimes import declare

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


@pytest.fixture
def namespaces() -> Iterator[tuple[list[str], list[str]]]:
    """Two fresh namespaces joined by a veth pair: their names and addresses."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    if shutil.which("ip") is None:
        pytest.skip("the ip command (iproute2) is not installed")
    tag = f"{random.SystemRandom().randrange(16**6):06x}"
    names = [f"svcmesh-{tag}-a", f"svcmesh-{tag}-b"]
    links = [f"svm{tag}a", f"svm{tag}b"]
    subnet = random.SystemRandom().randrange(1, 254)
    addresses = [f"10.231.{subnet}.1", f"10.231.{subnet}.2"]
    made: list[str] = []
    try:
        try:
            for name in names:
                ip("netns", "add", name)
                made.append(name)
        except subprocess.CalledProcessError as exc:
            pytest.skip(f"cannot create a network namespace here: {exc.stderr.decode().strip()}")
        ip("link", "add", links[0], "netns", names[0], "type", "veth", "peer", "name", links[1], "netns", names[1])
        for name, link, address in zip(names, links, addresses, strict=True):
            ip("-n", name, "link", "set", "lo", "up")
            ip("-n", name, "addr", "add", f"{address}/24", "dev", link)
            ip("-n", name, "link", "set", link, "up")
            ip("-n", name, "route", "add", "224.0.0.0/4", "dev", link)
        yield names, addresses
    finally:
        for name in made:
            subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30, check=False)


async def read_line(stream: trio.abc.ReceiveStream) -> bytes:
    """The first line a process writes (what it wrote before it closed, when it closed early)."""
    seen = bytearray()
    while b"\n" not in seen:
        chunk = await stream.receive_some()
        if not chunk:
            break
        seen += chunk
    return bytes(seen)


@pytest.mark.bound(90)
async def test_two_namespaces_find_each_other_by_multicast_and_cooperate(
    tmp_path: Path, namespaces: tuple[list[str], list[str]]
) -> None:
    names, addresses = namespaces
    group = own_group()
    keys = [tmp_path / f"state{index}" / "svc" / "node.json" for index in range(2)]
    allow = [create_identity(key).public_key for key in keys]
    paths = ["src/alpha", "docs/beta"]
    outputs: list[bytes] = [b"", b""]
    processes: list[trio.Process] = []

    async def run(index: int, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        checkout = tmp_path / f"ns{index}"
        checkout.mkdir()
        settings = {
            "multicast": {"group": group, "port": 47741, "interval_seconds": 1},
            "trust": {"policy": "allowlist", "allow": allow},
            "cooperation": {"heartbeat_seconds": 1, "expiry_seconds": 3},
        }
        declare(checkout, settings)
        argv = ["ip", "netns", "exec", names[index], sys.executable, "-m", "tests.mesh_udp._ns_node"]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        with (tmp_path / f"ns{index}.log").open("wb") as log:
            process = await trio.lowlevel.open_process(
                [*argv, str(checkout), str(keys[index]), "1", paths[index]],
                cwd=ROOT,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
            )
        processes.append(process)
        task_status.started()
        assert process.stdout is not None
        outputs[index] = await read_line(process.stdout)

    try:
        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                await nursery.start(run, 0)
                await nursery.start(run, 1)
            for process in processes:
                assert process.stdin is not None
                await process.stdin.aclose()
            for index, process in enumerate(processes):
                code = await process.wait()
                assert code == 0, (code, outputs[index], (tmp_path / f"ns{index}.log").read_text())
    finally:
        for process in processes:
            if process.returncode is None:
                process.kill()
        with trio.move_on_after(10) as cleanup:
            cleanup.shield = True
            for process in processes:
                await process.wait()
    answers = [msgspec.json.decode(o) for o in outputs]
    for me, other in ((0, 1), (1, 0)):
        [node] = answers[me]["nodes"]["nodes"]
        assert node["node_id"] == answers[other]["identity"]["node_id"]
        assert node["presence"] == "present"
        assert [e.split(":")[0] for e in node["endpoints"]] == [addresses[other]]
        providers = {p["id"]: p for p in answers[me]["status"]["providers"]}
        assert providers["multicast"]["detail"].startswith(f"{group}:47741 joined on {addresses[me]}")
    heard = {s["source"] for a in answers for s in a["nodes"]["nodes"][0]["sources"]}
    assert "multicast" in heard
    coops = [a["cooperation"] for a in answers]
    claims = {coops[0]["claim"], coops[1]["claim"]}
    for me, other in ((0, 1), (1, 0)):
        assert set(coops[me]["claims"]) == claims
        assert coops[me]["claims"][coops[other]["claim"]] == "held"
        [peer] = coops[me]["peers"]
        assert peer["runtime"] == coops[other]["runtime"]
        assert peer["state"] == "connected"
    assert coops[0]["digest"] == coops[1]["digest"]
    dialed = [c["peers"][0]["outbound"] for c in coops]
    assert dialed.count(True) >= 1
