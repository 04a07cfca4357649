"""Mesh discovery benchmark: one command, figures on stdout, `bench/results/mesh.json`.

1. **Check chain vs bare Ed25519.** The same signed envelopes go through `MeshCore.receive` (size, parse,
   shape, version, bounds, staleness, signature, own runtime, trust, registry) and through a bare
   `Ed25519PublicKey.verify` of their signed bytes, in alternating rounds; the figure is chain throughput
   as a ratio of bare throughput (target >= 0.8).
2. **Five runtimes on loopback.** Five runtimes start one after another on real sockets (multicast on
   127.0.0.1 with loop on, a group and port of the benchmark's own, 1 s interval); the figure is the time
   from the first start until every runtime lists the four others as present (target <= 2 s).

Everything stays on 127.0.0.1 and the benchmark's own multicast group; keys live in a temporary directory.

    .venv/bin/python bench/bench_mesh.py [--quick] [--output PATH]
"""

from __future__ import annotations

import argparse
import json
import random
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec
import trio

from svc.layer import Repository, dump_yaml
from svc.mesh_udp import DOMAIN_ENVELOPE, Beacon, Mesh, MeshCore, NodeIdentity, NodeRegistry, TrustStore, signed_bytes

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "mesh.json"
RATIO_TARGET = 0.8
DISCOVERY_TARGET_SECONDS = 2.0


def _envelopes(count: int, nodes: int, now: float, *, first_seq: int = 1) -> list[bytes]:
    identities = [NodeIdentity.from_seed(bytes([i + 1]) * 32) for i in range(nodes)]
    out = []
    for i in range(count):
        ident = identities[i % nodes]
        beacon = Beacon(
            ident,
            instance=f"{i % nodes:016x}",
            runtime="a" * 16,
            repositories=["0" * 32],
            version="0.1.0",
            capabilities=["rendezvous"],
            endpoints=["192.168.1.10:7742"],
        )
        beacon.seq = first_seq + i // nodes
        out.append(beacon.datagram(now))
    return out


NODES = 64


def _core(now: float) -> MeshCore:
    """A runtime that already knows the 64 announcing nodes (their first envelopes, seq 0, not timed): the
    timed envelopes are the steady state, periodic announcements of known peers."""
    me = NodeIdentity.from_seed(b"\xff" * 32)
    beacon = Beacon(me, instance="f" * 16, runtime="b" * 16, repositories=[], version="0.1.0", capabilities=[])
    core = MeshCore(beacon, TrustStore("deny_unknown", [], own_key=me.public_key), NodeRegistry())
    for data in _envelopes(NODES, NODES, now, first_seq=0):
        core.receive(data, source="broadcast", origin=("192.168.1.10", 7742), wall=now, mono=0.0)
    assert len(core.registry) == NODES
    return core


def _prepare_bare(datagrams: list[bytes]) -> list[tuple[Any, bytes, bytes]]:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    keys: dict[str, Ed25519PublicKey] = {}
    prepared = []
    for data in datagrams:
        obj = msgspec.json.decode(data)
        key = keys.setdefault(obj["pk"], Ed25519PublicKey.from_public_bytes(bytes.fromhex(obj["pk"])))
        prepared.append((key, bytes.fromhex(obj["sig"]), signed_bytes(DOMAIN_ENVELOPE, obj)))
    return prepared


def _round(
    datagrams: list[bytes], prepared: list[tuple[Any, bytes, bytes]], now: float, batch: int
) -> list[tuple[float, float]]:
    """One pass of every envelope through the chain and through bare verification, batch by batch in turn
    (so that the load of the rest of the machine falls on both alike); answers (chain s, bare s) per batch."""
    core = _core(now)
    origin = ("192.168.1.10", 7742)
    out = []
    for first in range(0, len(datagrams), batch):
        start = time.perf_counter()
        for i in range(first, min(first + batch, len(datagrams))):
            handled = core.receive(datagrams[i], source="broadcast", origin=origin, wall=now, mono=float(i))
            if handled.outcome is None or not handled.outcome.accepted:
                raise SystemExit(f"envelope {i} was not accepted: {handled.outcome}")
        chain = time.perf_counter() - start
        start = time.perf_counter()
        for key, signature, message in prepared[first : first + batch]:
            key.verify(signature, message)
        out.append((chain, time.perf_counter() - start))
    return out


def bench_chain(count: int, rounds: int, batch: int = 20) -> dict[str, Any]:
    """Chain vs bare throughput; the ratio is the median over every batch of every round (robust against
    bursts of load from the rest of the machine), the throughputs are totals."""
    now = time.time()
    datagrams = _envelopes(count, nodes=NODES, now=now)
    prepared = _prepare_bare(datagrams)
    _round(datagrams[:200], prepared[:200], now, batch)  # warm caches and imports
    batches = [pair for _ in range(rounds) for pair in _round(datagrams, prepared, now, batch)]
    chain = sum(c for c, _ in batches)
    bare = sum(b for _, b in batches)
    ratios = [b / c for c, b in batches]
    ratio = statistics.median(ratios)
    return {
        "envelopes": count * rounds,
        "batch": batch,
        "chain_per_second": round(count * rounds / chain, 1),
        "bare_verify_per_second": round(count * rounds / bare, 1),
        "ratio_median": round(ratio, 3),
        "ratio_of_totals": round(bare / chain, 3),
        "ratio_p10": round(statistics.quantiles(ratios, n=10)[0], 3),
        "target": RATIO_TARGET,
        "met": ratio >= RATIO_TARGET,
    }


def _free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("0.0.0.0", 0))
        port: int = probe.getsockname()[1]
        return port


def _declare(root: Path, group: str, port: int) -> None:
    data = {
        "schema": "mesh/v1",
        "kind": "mesh-declaration",
        "id": "bench",
        "enabled": True,
        "interfaces": ["127.0.0.1"],
        "multicast": {"group": group, "port": port, "interval_seconds": 1},
        "cooperation": {"port": 0, "repository": "bench/mesh"},
    }
    directory = root / ".ai" / "repo" / "mesh"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "bench.yaml").write_text(dump_yaml(data))


async def _discovery_trial(base: Path, runtimes: int, trial: int) -> float:
    rng = random.SystemRandom()
    group, port = f"239.255.{rng.randrange(100, 250)}.{rng.randrange(1, 250)}", _free_udp_port()
    meshes = []
    for i in range(runtimes):
        root = base / f"trial{trial}" / f"r{i}"
        root.mkdir(parents=True)
        _declare(root, group, port)
        mesh = Mesh.prepare(Repository.discover(root), identity_file=base / f"key{i}" / "node.json")
        if mesh.reason is not None:
            raise SystemExit(f"runtime {i}: {mesh.reason}")
        meshes.append(mesh)
    async with trio.open_nursery() as nursery:
        start = trio.current_time()
        for mesh in meshes:
            await mesh.start(nursery)
        for mesh in meshes:
            await mesh.wait_until(
                lambda m=mesh: sum(n.presence == "present" for n in m.nodes().nodes) == runtimes - 1  # type: ignore[misc]
            )
        elapsed = trio.current_time() - start
        nursery.cancel_scope.cancel()
    return elapsed


def bench_discovery(runtimes: int, trials: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="svc-bench-mesh-") as tmp:

        async def run() -> list[float]:
            return [await _discovery_trial(Path(tmp), runtimes, t) for t in range(trials)]

        times = trio.run(run)
    return {
        "runtimes": runtimes,
        "interval_seconds": 1,
        "trials": trials,
        "seconds_median": round(statistics.median(times), 4),
        "seconds_max": round(max(times), 4),
        "target_seconds": DISCOVERY_TARGET_SECONDS,
        "met": max(times) <= DISCOVERY_TARGET_SECONDS,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer envelopes, rounds and trials")
    parser.add_argument("--output", type=Path, default=RESULTS, help=f"where to write the figures ({RESULTS})")
    args = parser.parse_args(argv)
    count, rounds, trials = (300, 3, 3) if args.quick else (2000, 5, 10)
    print(f"check chain vs bare Ed25519: {count} envelopes x {rounds} rounds ...", file=sys.stderr)
    chain = bench_chain(count, rounds)
    print(f"five runtimes on loopback: {trials} trials ...", file=sys.stderr)
    discovery = bench_discovery(5, trials)
    result = {"check_chain": chain, "discovery": discovery}
    print(
        f"check chain  {chain['chain_per_second']:>10.1f} envelopes/s   bare verify "
        f"{chain['bare_verify_per_second']:>10.1f} /s   ratio {chain['ratio_median']:.3f} median of batches "
        f"({chain['ratio_of_totals']:.3f} of totals, p10 {chain['ratio_p10']:.3f}; target >= {RATIO_TARGET})  "
        f"{'met' if chain['met'] else 'MISSED'}"
    )
    print(
        f"discovery    5 runtimes list each other in {discovery['seconds_median'] * 1000:.1f} ms median, "
        f"{discovery['seconds_max'] * 1000:.1f} ms max over {trials} trials (target <= "
        f"{DISCOVERY_TARGET_SECONDS:.0f} s)  {'met' if discovery['met'] else 'MISSED'}"
    )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    return 0 if chain["met"] and discovery["met"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
