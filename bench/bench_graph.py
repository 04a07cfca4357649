"""Benchmark of the graphs: `graph.get composed` over loopback HTTP, and the derivation alone.

    .venv/bin/python bench/bench_graph.py            # full run (under a minute)
    .venv/bin/python bench/bench_graph.py --quick    # smoke run

One run, for this checkout and for a synthetic layer (deterministic, seed 7: rules chained by `depends_on`,
milestones and issues under them, 3,000 objects in all, so the composed graph reaches its 2,000-node bound):

1. derives the composed graph in process from the built index (cold: nothing cached), `--repeat` times;
2. starts `svc serve --port 0` on the checkout and asks `GET /api/v1/graph?id=composed` over one keep-alive
   loopback connection: the first answer (derived, cached for the generation) and then `--requests` more
   (answered from the generation cache), with `directories.list` beside it;

then prints the figures and writes `bench/results/graph.json`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import http.client
import json
import os
import platform
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec

from svc import __version__
from svc.capabilities import builtin_registry
from svc.capabilities._graph import registry_facts
from svc.layer import ObjectIndex, Repository, derive_graph

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
OUTPUT = BENCH_DIR / "results" / "graph.json"
MANIFEST = (REPO_DIR / ".ai" / "manifest.yaml").read_text


def generate(root: Path, rules: int, milestones: int, issues: int, *, seed: int = 7) -> Path:
    """A Git checkout at `root` with a synthetic layer of rules, milestones and issues."""
    rng = random.Random(seed)
    layer = root / ".ai"
    (layer / "repo" / "rules" / "project").mkdir(parents=True)
    (layer / "repo" / "project" / "milestones").mkdir(parents=True)
    (layer / "repo" / "project" / "issues").mkdir(parents=True)
    (layer / "manifest.yaml").write_text(MANIFEST())
    for n in range(rules):
        deps = [f"bench.r{rng.randrange(n):05d}@1" for _ in range(rng.randrange(3))] if n else []
        (layer / "repo" / "rules" / "project" / f"r{n:05d}.v1.md").write_text(
            f"---\nid: bench.r{n:05d}\nversion: 1\nkind: rule\ntitle: Rule {n}\nclass: advisory\n"
            f"depends_on: [{', '.join(deps)}]\ntags: [bench]\n---\n\nRule {n}.\n"
        )
    for k in range(milestones):
        (layer / "repo" / "project" / "milestones" / f"M{k:03d}.yaml").write_text(
            f"id: M{k:03d}\ntitle: Milestone {k}\noutcome: Outcome {k}.\n"
            + (f"depends_on: [M{k - 1:03d}]\n" if k else "")
        )
    for n in range(issues):
        deps = f"depends_on: [I{rng.randrange(n):05d}]\n" if n and rng.random() < 0.7 else ""
        (layer / "repo" / "project" / "issues" / f"I{n:05d}.yaml").write_text(
            f"id: I{n:05d}\nmilestone: M{n % milestones:03d}\ntitle: Issue {n}\nobjective: Do part {n}.\n{deps}"
        )
    run = {"cwd": root, "check": True, "capture_output": True}
    subprocess.run(["git", "init", "-q", "-b", "main"], **run)  # type: ignore[call-overload]
    subprocess.run(["git", "add", "-A"], **run)  # type: ignore[call-overload]
    subprocess.run(  # type: ignore[call-overload]
        ["git", "-c", "user.name=b", "-c", "user.email=b@example.invalid", "commit", "-q", "-m", "bench"], **run
    )
    return root


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "n": len(ordered),
        "min_ms": round(ordered[0], 3),
        "p50_ms": round(statistics.median(ordered), 3),
        "p90_ms": round(ordered[int(0.9 * (len(ordered) - 1))], 3),
        "max_ms": round(ordered[-1], 3),
    }


def derivation(root: Path, repeat: int) -> dict[str, Any]:
    """The composed graph derived in process from an index built once, `repeat` times."""
    index = ObjectIndex.build(Repository.discover(root))
    facts = registry_facts(builtin_registry())
    samples: list[float] = []
    graph = None
    for _ in range(repeat):
        start = time.perf_counter_ns()
        graph = derive_graph("composed", facts, index)
        samples.append((time.perf_counter_ns() - start) / 1e6)
    assert graph is not None
    return {
        "objects": len(index),
        "nodes": graph.metadata.nodes,
        "edges": graph.metadata.edges,
        "truncated": graph.metadata.truncated,
        "bytes": len(msgspec.json.encode(graph)),
        "derive": _summary(samples),
    }


def _serve(root: Path) -> tuple[subprocess.Popen[bytes], str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "svc", "--repo", str(root), "serve", "--port", "0"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        env=env,
    )
    assert proc.stderr is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stderr.readline().decode()
        found = re.search(r"serving (http://127\.0\.0\.1:\d+)", line)
        if found:
            return proc, found.group(1)
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise SystemExit(f"svc serve did not start for {root.name}")


def loopback(root: Path, requests: int) -> dict[str, Any]:
    """`graph.get composed` and `directories.list` over one keep-alive loopback connection."""
    proc, url = _serve(root)
    try:
        port = int(url.rsplit(":", 1)[1])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

        def get(target: str) -> float:
            start = time.perf_counter_ns()
            conn.request("GET", target)
            response = conn.getresponse()
            body = response.read()
            assert response.status == 200, (target, body[:200])
            return (time.perf_counter_ns() - start) / 1e6

        first = get("/api/v1/graph?id=composed")
        cached = [get("/api/v1/graph?id=composed") for _ in range(requests)]
        directories = [get("/api/v1/directories") for _ in range(requests)]
        conn.close()
        return {
            "graph_composed_first_ms": round(first, 3),
            "graph_composed_cached": _summary(cached),
            "directories_list": _summary(directories),
        }
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        if proc.stderr is not None:
            proc.stderr.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a smoke run")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args()
    repeat, requests = (5, 50) if args.quick else (30, 500)
    results: dict[str, Any] = {
        "when": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "version": __version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "checkouts": {},
    }
    with tempfile.TemporaryDirectory(prefix="svc-bench-graph-") as tmp:
        synthetic = generate(Path(tmp) / "synthetic", rules=1000, milestones=100, issues=1900)
        for name, root in (("this checkout", REPO_DIR), ("synthetic 3,000 objects", synthetic)):
            print(f"measuring {name} ...", file=sys.stderr)
            figures = derivation(root, repeat)
            figures.update(loopback(root, requests))
            results["checkouts"][name] = figures
    for name, figures in results["checkouts"].items():
        print(
            f"{name}: {figures['objects']} objects, composed graph {figures['nodes']} nodes / "
            f"{figures['edges']} edges ({figures['bytes']} bytes, truncated {figures['truncated']}); "
            f"derive p50 {figures['derive']['p50_ms']} ms; "
            f"over loopback first {figures['graph_composed_first_ms']} ms, "
            f"cached p50 {figures['graph_composed_cached']['p50_ms']} ms; "
            f"directories.list p50 {figures['directories_list']['p50_ms']} ms"
        )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.output.relative_to(REPO_DIR) if args.output.is_relative_to(REPO_DIR) else args.output}")


if __name__ == "__main__":
    main()
