"""Benchmark of the layer's object index: building it over 10,000 objects, and `objects.list` over it.

    .venv/bin/python bench/bench_layer.py            # full run
    .venv/bin/python bench/bench_layer.py --quick    # smoke run (1,000 objects, fewer requests)

One run:

1. writes a synthetic layer of 10,000 objects into a temporary Git checkout (svc's own manifest and sources:
   5,000 rules with front matter and 5,000 issue records), all tracked, and waits until every file is older
   than the reading cache's racy window (a build may then keep it unopened by its stat numbers, as it keeps
   the files of any checkout not edited in the last two seconds);
2. measures `ObjectIndex.build` (discovery with one `git ls-files`, every file read), the median of 5 runs
   each of: the first build (nothing read before: every file parsed and validated), a new process's build
   (the reading cache `.ai/local/cache/objects.msgpack` on disk, nothing in memory: what `svc serve`
   costs at start; target at most 1 s), and a rebuild (readings in memory, none changed: what a
   generation change costs);
3. measures `GET /api/v1/objects` server side (the HTTP application called in-process, the index resident):
   p50 target under 50 ms; then end to end over loopback against `svc serve` (one keep-alive connection);
4. runs `svc capabilities list --json` as a whole process (the index is not built for it);

then prints the figures and writes `bench/results/layer.json`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import http.client
import json
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

from bench_measure import in_process_get
from bench_plan import _records_settled
from svc import __version__
from svc.host._service import open_service
from svc.layer import ObjectIndex, Repository
from svc.layer._readings import CACHE_FILE, forget

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
OUTPUT = BENCH_DIR / "results" / "layer.json"
TARGETS = {"build_ms": 1000.0, "list_server_p50_ms": 50.0}


def write_layer(root: Path, objects: int) -> None:
    """svc's manifest and sources, then `objects` files: half rules (Markdown), half issues (YAML)."""
    root.mkdir(parents=True)
    shutil.copytree(REPO_DIR / ".ai", root / ".ai", ignore=shutil.ignore_patterns("local", "project", "rules"))
    rules = root / ".ai/repo/rules/bench"
    issues = root / ".ai/repo/project/issues"
    rules.mkdir(parents=True)
    issues.mkdir(parents=True)
    for n in range(objects // 2):
        (rules / f"r{n:05d}.v1.md").write_text(
            f"---\nid: bench.r{n:05d}\nversion: 1\ntitle: Rule {n}\ndescription: rule number {n}\n"
            f"tags: [bench, t{n % 10}]\ndepends_on: [bench.r{max(n - 1, 0):05d}@1]\n---\n\n# Rule {n}\n\nBody.\n",
            encoding="utf-8",
        )
    for n in range(objects - objects // 2):
        (issues / f"I{n:05d}.yaml").write_text(
            f"id: I{n:05d}\nmilestone: m{n % 20}\ntitle: Issue {n}\nobjective: do thing {n}\ndepends_on: []\n",
            encoding="utf-8",
        )
    run = {"cwd": root, "check": True, "capture_output": True}
    subprocess.run(["git", "init", "-q", "-b", "main"], **run)  # type: ignore[call-overload]
    subprocess.run(["git", "add", "-A"], **run)  # type: ignore[call-overload]


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "n": len(samples),
        "p50_ms": round(statistics.median(ordered), 3),
        "p95_ms": round(ordered[int(len(ordered) * 0.95) - 1], 3),
        "max_ms": round(ordered[-1], 3),
    }


def build(root: Path, runs: int, *, held: str) -> dict[str, Any]:
    """`ObjectIndex.build` holding no earlier readings (`first`), those of the cache file (`file`) or of memory."""
    repo = Repository.discover(root)
    samples = []
    index = ObjectIndex.build(repo)
    for _ in range(runs):
        if held != "memory":
            forget()
        if held == "first":
            (repo.layer / CACHE_FILE).unlink()
        del index  # the old index is freed before the clock starts, not inside the measurement
        gc.collect()
        start = time.perf_counter_ns()
        index = ObjectIndex.build(repo)
        samples.append((time.perf_counter_ns() - start) / 1e6)
    return {"objects": len(index), "state": index.state, "diagnostics": len(index.diagnostics), **_summary(samples)}


async def _server_side(root: Path, requests: int) -> dict[str, float]:
    """`GET /api/v1/objects` through the HTTP application in this process (the index built first)."""
    async with open_service(Repository.discover(root), surface="http", watch=False) as ex:
        await ex.runtime.objects_async()
        return _summary(await in_process_get(ex, "/api/v1/objects", requests))


def over_http(root: Path, requests: int, log: Path) -> dict[str, Any]:
    """`GET /api/v1/objects` end to end against `svc serve` on one keep-alive connection."""
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "svc", "--repo", str(root), "serve", "--port", "0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=sink,
        )
    try:
        deadline = time.monotonic() + 60
        url = None
        while url is None and time.monotonic() < deadline and proc.poll() is None:
            found = re.search(rb"serving (http://127\.0\.0\.1:\d+)", log.read_bytes())
            url = found.group(1).decode() if found else None
            time.sleep(0.05)
        if url is None:
            raise RuntimeError(f"svc serve did not start:\n{log.read_text()[-2000:]}")
        host, port = url.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=120)
        samples = []
        for k in range(requests + 1):
            start = time.perf_counter_ns()
            conn.request("GET", "/api/v1/objects")
            response = conn.getresponse()
            response.read()
            assert response.status == 200, response.status
            if k:
                samples.append((time.perf_counter_ns() - start) / 1e6)
        conn.close()
        return _summary(samples)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def whole_process(args: list[str], runs: int) -> dict[str, float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter_ns()
        subprocess.run([sys.executable, "-m", "svc", *args], cwd=REPO_DIR, check=True, capture_output=True)
        samples.append((time.perf_counter_ns() - start) / 1e6)
    return _summary(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 1,000 objects, fewer requests")
    quick = parser.parse_args().quick
    objects, requests, runs = (1000, 20, 2) if quick else (10_000, 200, 5)
    with tempfile.TemporaryDirectory(prefix="svc-bench-layer-") as tmp:
        root = Path(tmp) / "checkout"
        write_layer(root, objects)
        _records_settled(root)
        figures: dict[str, Any] = {
            "build_first": build(root, runs, held="first"),
            "build_start": build(root, runs, held="file"),
            "build_rebuild": build(root, runs, held="memory"),
        }
        figures["list_server"] = trio.run(_server_side, root, requests)
        figures["list_http"] = over_http(root, requests, Path(tmp) / "serve.log")
    figures["capabilities_list_process"] = whole_process(["capabilities", "list", "--json"], 3 if quick else 10)
    verdicts = {
        "build_ms": figures["build_start"]["p50_ms"] <= TARGETS["build_ms"],
        "list_server_p50_ms": figures["list_server"]["p50_ms"] < TARGETS["list_server_p50_ms"],
    }
    result = {
        "svc": __version__,
        "at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "python": platform.python_version(),
        "quick": quick,
        "objects": objects,
        "targets": TARGETS,
        "met": verdicts,
        "figures": figures,
    }
    print(json.dumps(result, indent=2))
    if not quick:
        OUTPUT.parent.mkdir(exist_ok=True)
        OUTPUT.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
