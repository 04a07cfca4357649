"""Benchmark of `plan.take` under 8 concurrent callers: latency percentiles, beside `mesh.claim` and `plan.next`.

    .venv/bin/python bench/bench_take.py            # full run: 100 rounds of 8 callers
    .venv/bin/python bench/bench_take.py --quick    # smoke run: 10 rounds

One run:

1. writes the synthetic plan of `bench/bench_plan.py` (20 milestones × 1,000 issues, seed 7), with 16 more
   READY issues of disjoint scopes beside its first READY one, into a temporary Git checkout and declares a
   mesh whose cooperation runs on 127.0.0.1 (one runtime, no seeds, its journal a file: every write is
   fsynced), with its node key under a temporary state directory;
2. serves it in this process as `svc serve` does (the service, HTTP on 127.0.0.1 port 0, the mesh started) and
   warms the runtime's plan (one `GET /api/v1/plan/next?session=warm`: the plan is then read once per
   generation);
3. each round, 8 callers (8 sessions, one shared HTTP client) `POST /api/v1/plan/take` at once, each call timed
   from its send to its answer; the issues taken must be 8 distinct ones with 8 held claims; then the round's
   claims are released (not timed). In the same run, with the same 8 callers: `POST /api/v1/mesh/claims` (a
   journal write alone, on disjoint paths) and `GET /api/v1/plan/next?session=...` (the claim-aware read);
4. prints p50, p90, p99 and worst of each, the ratio of `plan.take`'s p50 to `mesh.claim`'s, and the race's
   counts; a full run writes `bench/results/take.json`.

Client and server share one trio loop and the machine's two cores, so the figures include the client's work.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import trio

from bench_plan import generate
from svc.api import serve_http
from svc.host._service import open_service
from svc.layer import Repository, dump_yaml, load_yaml
from svc.mesh_udp import Cooperation, Mesh, create_identity, start_mesh

OUTPUT = Path(__file__).resolve().parent / "results" / "take.json"
CALLERS = 8


def _ready_copies(root: Path, count: int) -> None:
    """Add `count` READY issues beside the plan's first READY one: its record with another id, slug and scope."""
    from svc.plan import read_snapshot

    snapshot = read_snapshot(Repository.discover(root))
    model = next(i for i in snapshot.plan.issues if i.status == "READY")
    source = root / ".ai" / "repo" / "project" / "issues" / f"{model.id}.yaml"
    record = load_yaml(source.read_text(encoding="utf-8"))
    for n in range(count):
        copy = {**record, "id": f"I9{n:03d}", "slug": f"ready-{n}", "scope": [f"bench/ready/{n}"], "depends_on": []}
        source.with_name(f"I9{n:03d}.yaml").write_text(dump_yaml(copy), encoding="utf-8")


def _checkout(root: Path, key: str) -> Path:
    generate(root, 20, 1_000)
    _ready_copies(root, 2 * CALLERS)
    (root / ".gitignore").write_text(".ai/local/\n")
    declaration = {
        "schema": "mesh/v1",
        "kind": "mesh-declaration",
        "id": "bench",
        "enabled": True,
        "interfaces": ["127.0.0.1"],
        "multicast": {"enabled": False},
        "trust": {"policy": "allowlist", "allow": [key]},
        "cooperation": {"port": 0, "repository": "bench/take"},
    }
    mesh = root / ".ai" / "repo" / "mesh"
    mesh.mkdir(parents=True)
    (mesh / "bench.yaml").write_text(dump_yaml(declaration))
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "plan"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)
    return root


def _percentiles(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    return {"p50_ms": at(0.5), "p90_ms": at(0.9), "p99_ms": at(0.99), "max_ms": ordered[-1] * 1000}


async def _round(call: Callable[[int], Awaitable[dict[str, Any]]], times: list[float]) -> list[dict[str, Any]]:
    answers: list[dict[str, Any]] = []

    async def one(n: int) -> None:
        began = time.perf_counter()
        answers.append(await call(n))
        times.append(time.perf_counter() - began)

    async with trio.open_nursery() as callers:
        for n in range(CALLERS):
            callers.start_soon(one, n)
    return answers


async def _release_all(coop: Cooperation) -> None:
    for claim in coop.state().claims:
        if claim.state.state in ("held", "conflicted"):
            await coop.release(claim.key)


def _answer(response: httpx.Response) -> dict[str, Any]:
    if response.status_code != 200:
        raise SystemExit(f"{response.request.url}: {response.status_code} {response.text}")
    body: dict[str, Any] = response.json()
    return body


async def _measure(root: Path, key_file: Path, rounds: int) -> dict[str, Any]:
    repo = Repository.discover(root)
    mesh = await Mesh.open(repo, identity_file=key_file)
    figures: dict[str, list[float]] = {"plan.take": [], "mesh.claim": [], "plan.next (session)": []}
    counts: Counter[str] = Counter()
    async with open_service(repo, surface="http", watch=False, mesh=mesh) as executor, trio.open_nursery() as nursery:
        shutdown = trio.Event()
        url: str = await nursery.start(functools.partial(serve_http, executor, port=0, shutdown=shutdown))
        await start_mesh(mesh, executor.supervisor)
        coop = mesh.cooperation
        if coop is None:
            raise SystemExit(f"cooperation does not run: {mesh.cooperation_reason()}")
        async with httpx.AsyncClient(base_url=url, timeout=60) as http:
            _answer(await http.get("/api/v1/plan/next", params={"session": "warm"}))
            for r in range(rounds):

                async def take(n: int, r: int = r) -> dict[str, Any]:
                    return _answer(await http.post("/api/v1/plan/take", json={"session": f"t{r}-{n}"}))

                answers = await _round(take, figures["plan.take"])
                issues = {a["issue"]["id"] for a in answers if a["taken"]}
                held = [c for c in coop.state().claims if c.state.state == "held"]
                counts.update(taken=len(issues), nothing=sum(1 for a in answers if not a["taken"]))
                if len(issues) != CALLERS or len(held) != CALLERS:
                    raise SystemExit(f"round {r}: {len(issues)} distinct issues, {len(held)} held claims")

                async def next_(n: int, r: int = r) -> dict[str, Any]:
                    return _answer(await http.get("/api/v1/plan/next", params={"session": f"n{r}-{n}"}))

                await _round(next_, figures["plan.next (session)"])
                await _release_all(coop)

                async def claim(n: int, r: int = r) -> dict[str, Any]:
                    body = {"scope": [f"bench/{r}/{n}"], "session": f"c{r}-{n}"}
                    return _answer(await http.post("/api/v1/mesh/claims", json=body))

                await _round(claim, figures["mesh.claim"])
                await _release_all(coop)
        shutdown.set()
        mesh.stop()
        nursery.cancel_scope.cancel()
    results = {name: _percentiles(times) for name, times in figures.items()}
    ratio = statistics.median(figures["plan.take"]) / statistics.median(figures["mesh.claim"])
    return {"figures": results, "take_vs_claim_p50": ratio, "counts": dict(counts), "rounds": rounds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10 rounds, no result file")
    args = parser.parse_args()
    rounds = 10 if args.quick else 100
    with tempfile.TemporaryDirectory(prefix="svc-bench-take-") as tmp:
        base = Path(tmp)
        os.environ["XDG_STATE_HOME"] = str(base / "state")
        key_file = base / "key" / "node.json"
        root = _checkout(base / "checkout", create_identity(key_file).public_key)
        result = trio.run(_measure, root, key_file, rounds)
    print(f"plan.take under {CALLERS} concurrent callers, {rounds} rounds (1,000-issue plan, journal fsynced)")
    print(f"{'operation':<22}{'p50 ms':>9}{'p90 ms':>9}{'p99 ms':>9}{'max ms':>9}")
    for name, figure in result["figures"].items():
        print(
            f"{name:<22}{figure['p50_ms']:>9.1f}{figure['p90_ms']:>9.1f}{figure['p99_ms']:>9.1f}{figure['max_ms']:>9.1f}"
        )
    print(f"plan.take p50 / mesh.claim p50: {result['take_vs_claim_p50']:.2f}")
    counts = result["counts"]
    print(
        f"race: {counts.get('taken', 0)} issues taken, all distinct per round; {counts.get('nothing', 0)} nothing left"
    )
    if not args.quick:
        OUTPUT.parent.mkdir(parents=True, exist_ok=True)
        OUTPUT.write_text(json.dumps({"python": sys.version.split()[0], **result}, indent=2) + "\n")
        print(f"wrote {OUTPUT.relative_to(Path.cwd()) if OUTPUT.is_relative_to(Path.cwd()) else OUTPUT}")


if __name__ == "__main__":
    main()
