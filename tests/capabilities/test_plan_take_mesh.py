"""`plan.take` raced across runtimes: 3 runtimes × 4 racers on 4 READY issues, 50 times, on the in-memory fabric.

Every runtime is a whole `Mesh` over its own checkout holding the same plan, under the autojump clock, with the
fabric dropping, duplicating and delaying datagrams. Two takes of one issue on two runtimes may both be written
before they meet; once the runtimes agree (one digest), the fold names one winner everywhere and the loser's
claim reads conflicted. A racer whose claim lost takes again (that take releases the lost claim and moves on)
until it holds an issue or is told nothing is left.
"""

from __future__ import annotations

import functools
from collections import Counter
from pathlib import Path

import pytest
import trio

from svc.capabilities._plan_claims import take_for
from svc.layer import Repository
from svc.mesh_udp import Cooperation
from svc.plan import NONE_UNCLAIMED, Snapshot, read_snapshot
from tests.capabilities.test_plan_take import RACES, plan_layer
from tests.mesh_udp._fabric import Fabric
from tests.mesh_udp.test_cooperation import claims_of, coops, linked_all, one_digest, start_runtimes, until

pytestmark = pytest.mark.bound(1800)
RUNTIMES = 3
RACERS = 4
ISSUES = 4


def settled(cs: list[Cooperation], key: str) -> bool:
    """Whether every runtime holds the claim `key` and all agree (one digest)."""
    return one_digest(cs) and all(key in claims_of(c) for c in cs)


async def racer(
    cs: list[Cooperation], coop: Cooperation, snapshot: Snapshot, session: str, counts: Counter[str]
) -> None:
    """Take until this session holds an issue everywhere, or is told nothing is left."""
    while True:
        answer, _ = await take_for(coop, snapshot, session=session, peer=None)
        counts["released"] += len(answer.released)
        if not answer.taken:
            assert answer.reason == NONE_UNCLAIMED
            counts["nothing"] += 1
            return
        key = answer.claim
        assert key is not None
        await until(cs, functools.partial(settled, cs, key))
        if claims_of(coop)[key].state.state == "held":
            counts["won"] += 1
            return
        counts["lost"] += 1


async def test_racers_on_three_runtimes_end_with_one_live_claim_per_issue(
    tmp_path: Path, nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    fabric = Fabric(nursery, seed=18, loss=0.1, duplicate=0.05, delay=0.1)
    meshes = await start_runtimes(tmp_path, nursery, fabric, RUNTIMES)
    cs = coops(meshes)
    snapshots = []
    for i in range(RUNTIMES):
        plan_layer(tmp_path / f"r{i}", ISSUES)
        snapshots.append(read_snapshot(Repository.discover(tmp_path / f"r{i}")))
    await until(cs, lambda: linked_all(cs))
    counts: Counter[str] = Counter()
    for run in range(RACES):
        async with trio.open_nursery() as racers:
            for i, (coop, snapshot) in enumerate(zip(cs, snapshots, strict=True)):
                for j in range(RACERS):
                    racers.start_soon(racer, cs, coop, snapshot, f"x{run}-{i}-{j}", counts)
        await until(cs, lambda: one_digest(cs))
        live = [c for c in cs[0].state().claims if c.state.state in ("held", "conflicted")]
        assert sorted(c.issue or "" for c in live) == [f"I{n:04d}" for n in range(1, ISSUES + 1)]
        assert all(c.state.state == "held" for c in live)
        for coop in cs:
            assert {c.key for c in coop.state().claims if c.state.state == "held"} == {c.key for c in live}
        for claim in live:
            [owner] = [c for c in cs if c.key == claim.runtime]
            await owner.release(claim.key)
        await until(cs, lambda: one_digest(cs) and not any(c.state.state == "held" for c in cs[0].state().claims))
    assert counts["won"] == RACES * ISSUES
    assert counts["nothing"] == RACES * (RUNTIMES * RACERS - ISSUES)
    assert counts["lost"] > 0
    assert counts["released"] == counts["lost"]
