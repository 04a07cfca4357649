"""Discovery across two network namespaces joined by a veth pair, by multicast (docs/mesh.md multi-host).

The test creates both namespaces, the veth pair and their private addresses itself, runs one svc runtime
in each (a separate process, on the namespace's own interfaces), and deletes everything in `finally`.
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


async def test_two_namespaces_find_each_other_by_multicast(
    tmp_path: Path, namespaces: tuple[list[str], list[str]]
) -> None:
    names, addresses = namespaces
    group = own_group()
    outputs: list[bytes] = [b"", b""]

    async def run(index: int) -> None:
        checkout = tmp_path / f"ns{index}"
        checkout.mkdir()
        declare(checkout, {"multicast": {"group": group, "port": 47741, "interval_seconds": 1}})
        key = tmp_path / f"state{index}" / "svc" / "node.json"
        argv = ["ip", "netns", "exec", names[index], sys.executable, "-m", "tests.mesh_udp._ns_node"]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        done = await trio.run_process(
            [*argv, str(checkout), str(key), "1"],
            cwd=ROOT,
            env=env,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
        assert done.returncode == 0, (done.stdout, done.stderr)
        outputs[index] = done.stdout

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run, 0)
            nursery.start_soon(run, 1)
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
