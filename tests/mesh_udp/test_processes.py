"""Three real `svc serve` processes cooperating on loopback, asked over HTTP.

Each process serves its own checkout with its own key (a temporary XDG_STATE_HOME) and declares the same
repository, a 1 s heartbeat, multicast off, its own link port and the two others as seeds
(`udp://127.0.0.1:<port>`, ports chosen by the test), and an allowlist of the three keys. They link; a
claim written on one is held by the two others within two heartbeats of its answer; an exclusive claim
meeting it is refused on another runtime; and all three fold the same digest. Nothing is sent beyond
127.0.0.1.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from svc.mesh_udp import create_identity
from tests.conftest import make_checkout
from tests.mesh_udp._loopback import free_udp_port, own_group
from tests.mesh_udp._runtimes import declare

pytestmark = pytest.mark.slow

HEARTBEAT = 1.0
#: What polling over HTTP and a fold add to "within two heartbeats".
MARGIN = 0.5
#: A round that goes unanswered (a busy machine running the whole suite beside three servers) is repaired by
#: the next one: the bound allows one such round, the answer timeout of the link protocol.
ONE_LOST_ROUND = 2.0
COUNT = 3
SERVING = re.compile(rb"svc: serving (http://127\.0\.0\.1:\d+)")


@dataclass
class Served:
    """One `svc serve` process: its URL once it serves, and everything it wrote to stderr."""

    process: trio.Process
    stderr: bytearray = field(default_factory=bytearray)
    ready: trio.Event = field(default_factory=trio.Event)
    url: str = ""

    def log(self) -> str:
        return self.stderr.decode(errors="replace")


async def drain(served: Served) -> None:
    """Keep reading the process's stderr (so it never blocks on a full pipe); note when it serves the mesh."""
    assert served.process.stderr is not None
    async for chunk in served.process.stderr:
        served.stderr += chunk
        found = SERVING.search(served.stderr)
        if found is not None and b"svc: mesh: node" in served.stderr and not served.ready.is_set():
            served.url = found.group(1).decode()
            served.ready.set()


def settings(group: str, mport: int, ports: list[int], me: int, allow: list[str]) -> dict[str, Any]:
    return {
        "interfaces": ["127.0.0.1"],
        "multicast": {"enabled": False, "group": group, "port": mport},
        "trust": {"policy": "allowlist", "allow": allow},
        "cooperation": {
            "port": ports[me],
            "seeds": [f"udp://127.0.0.1:{port}" for port in ports if port != ports[me]],
            "heartbeat_seconds": int(HEARTBEAT),
            "expiry_seconds": int(3 * HEARTBEAT),
        },
    }


@pytest.fixture
async def runtimes(tmp_path: Path, nursery: trio.Nursery) -> AsyncIterator[list[Served]]:
    """Three `svc serve` processes of three checkouts of one repository, each serving its mesh."""
    group, mport = own_group(), free_udp_port()
    ports = [free_udp_port() for _ in range(COUNT)]
    states = [tmp_path / f"home{i}" / "state" for i in range(COUNT)]
    allow = [create_identity(state / "svc" / "node.json").public_key for state in states]
    started: list[Served] = []
    try:
        for i, state in enumerate(states):
            root = make_checkout(tmp_path / f"checkout{i}")
            declare(root, settings(group, mport, ports, i, allow))
            env = {**os.environ, "HOME": str(state.parent), "XDG_STATE_HOME": str(state), "PYTHONUNBUFFERED": "1"}
            argv = [sys.executable, "-m", "svc", "--repo", str(root), "serve", "--port", "0"]
            process = await trio.lowlevel.open_process(
                argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
            )
            started.append(Served(process=process))
            nursery.start_soon(drain, started[-1])
        for served in started:
            with trio.move_on_after(20):
                await served.ready.wait()
            assert served.ready.is_set(), served.log()
        yield started
    finally:
        with trio.move_on_after(15) as cleanup:
            cleanup.shield = True
            for served in started:
                served.process.terminate()
            for served in started:
                with trio.move_on_after(5):
                    await served.process.wait()
                if served.process.returncode is None:
                    served.process.kill()
                    await served.process.wait()


async def until(predicate: Callable[[], Awaitable[bool]], *, seconds: float, step: float = 0.05) -> float:
    """Poll the awaitable predicate until it holds (real processes, the real clock); answers when it did."""
    with trio.fail_after(seconds):
        while True:
            if await predicate():
                return trio.current_time()
            await trio.sleep(step)


async def test_three_processes_link_replicate_a_claim_refuse_a_conflict_and_agree(runtimes: list[Served]) -> None:
    clients = [httpx.AsyncClient(base_url=served.url, timeout=5) for served in runtimes]
    try:

        async def linked() -> bool:
            for http in clients:
                status = (await http.get("/api/v1/mesh/cooperation")).json()
                assert status["active"] is True, status
                connected = [p for p in status["peers"] if p["state"] == "connected" and p["failures"] == 0]
                if len(connected) != COUNT - 1:
                    return False
            return True

        await until(linked, seconds=15)
        keys = [(await http.get("/api/v1/mesh/cooperation")).json()["runtime"] for http in clients]
        assert len(set(keys)) == COUNT

        answer = await clients[0].post(
            "/api/v1/mesh/claims", json={"scope": ["src/shared/"], "session": "alpha", "intent": "rework it"}
        )
        assert answer.status_code == 200, answer.text
        written = answer.json()
        answered = trio.current_time()
        assert written["durability"] == "synced"

        async def states() -> list[dict[str, Any]]:
            return [(await http.get("/api/v1/mesh/state")).json() for http in clients]

        def claim_of(state: dict[str, Any]) -> dict[str, Any] | None:
            return next((c for c in state["state"]["claims"] if c["key"] == written["key"]), None)

        for http in clients[1:]:

            async def holds(http: httpx.AsyncClient = http) -> bool:
                return claim_of((await http.get("/api/v1/mesh/state")).json()) is not None

            arrived = await until(holds, seconds=10, step=0.02)
            assert arrived - answered <= 2 * HEARTBEAT + ONE_LOST_ROUND + MARGIN

        conflicting = await clients[1].post(
            "/api/v1/mesh/claims", json={"scope": ["src/shared/module.py"], "session": "beta"}
        )
        assert conflicting.status_code == 422, conflicting.text
        assert "claim_conflict" in conflicting.text
        assert written["key"] in conflicting.text
        status = (await clients[1].get("/api/v1/mesh/cooperation")).json()
        assert status["counters"]["claims_refused"] == 1

        async def one_digest() -> bool:
            return len({s["state"]["digest"] for s in await states()}) == 1

        await until(one_digest, seconds=5)
        for state in await states():
            claim = claim_of(state)
            assert claim is not None
            assert claim["state"] == {"state": "held"}
            assert claim["runtime"] == keys[0]
            assert [c["key"] for c in state["state"]["claims"]] == [written["key"]]
            assert {s["liveness"] for s in state["streams"]} <= {"own", "live"}
    finally:
        for http in clients:
            await http.aclose()
