"""Benchmark of the plan: synthetic plans, cold derivation, `plan.next` from the generation cache, `svc plan next`.

    .venv/bin/python bench/bench_plan.py            # full run (about two minutes)
    .venv/bin/python bench/bench_plan.py --quick    # smoke run

One run:

1. generates a synthetic plan of 200 milestones × 10,000 issues (deterministic, seed 7) in a temporary
   checkout: a milestone chain with extra edges, issues chained inside their milestone with a few
   cross-milestone edges, scopes per milestone, the first 30% of milestones DONE with sealed stamps and
   evidence, a few issues ACTIVE or VERIFY;
2. measures loading (read + parse every record, no cache), the derivation alone (cold: a pure function of the
   loaded records, nothing cached), the first read (no parse cache: parses everything and writes
   `.ai/local/cache/plan.msgpack`), a new process's read with that file present (nothing in memory: the
   file decoded, every record kept by its stat), a warm read (the entries in memory, records only stat'ed,
   derived again: what any uncached plan read costs on a running server) and a move's exact read (every
   record's bytes read and hashed, parses reused);
3. measures `plan.next` answered from the generation cache: server side (the HTTP application called
   in-process with an ASGI request, after the first call filled the cache) and end to end over loopback HTTP
   against `svc serve` (one keep-alive connection);
4. runs `svc plan next --json` as a whole process on the 10,000-issue plan, with the parse cache file and
   without it (removed before each run), and on a 1,000-issue plan, beside `svc health live --json`;
5. loads and derives a copy of the reference corpus (`../shared/corpus/reference-layer`) when it is there;

Reads wait until the newest record is older than the parse cache's racy window (2 s), as records a user reads
are; a record changed within it is parsed on every read and never stored.

then prints the figures and writes `bench/results/plan.json`.
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
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

from bench_measure import in_process_get
from svc import __version__
from svc.host._service import open_service
from svc.layer import RACY_NS, Repository, read_repository_dir
from svc.plan import _cache, derive, load_records, read_snapshot, seal

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
CORPUS = REPO_DIR / ".." / "shared" / "corpus" / "reference-layer"
OUTPUT = BENCH_DIR / "results" / "plan.json"
TARGETS = {"derive_cold_ms": 250.0, "next_cached_server_p50_ms": 1.0}
STAMPS = ("2026-11-01T10:00:00Z", "2026-11-01T11:00:00Z", "2026-11-01T12:00:00Z")
MOVES = (
    ("started_at", "started_event", "plan_start"),
    ("verified_at", "verified_event", "plan_verify"),
    ("completed_at", "completed_event", "plan_done"),
)


def _q(text: str) -> str:
    """A YAML double-quoted scalar (JSON strings are valid YAML)."""
    return json.dumps(text, ensure_ascii=False)


def _block(key: str, items: list[str]) -> str:
    if not items:
        return f"{key}: []\n"
    return f"{key}:\n" + "".join(f"  - {item}\n" for item in items)


def generate(root: Path, milestones: int, issues: int, *, seed: int = 7) -> Path:
    """Write a synthetic plan under `root/.ai/repo/project/` and return `root`."""
    rng = random.Random(seed)
    project = root / ".ai" / "repo" / "project"
    (project / "milestones").mkdir(parents=True)
    (project / "issues").mkdir()
    (project / "project.yaml").write_text(
        "schema_version: 1\nname: synthetic\nrepository: bench/synthetic\ndefault_branch: main\n"
    )
    per = issues // milestones
    done_until = int(milestones * 0.3)
    ids = [f"M{k:03d}" for k in range(milestones)]
    for k, mid in enumerate(ids):
        deps = [ids[k - 1]] if k else []
        if k > 3 and rng.random() < 0.3:
            deps.append(ids[rng.randrange(0, k - 1)])
        text = (
            f"id: {mid}\ntitle: {_q(f'Milestone {k}: an outcome of the synthetic plan')}\nslug: m{k:03d}\n"
            f"order: {k}\npriority: p{rng.randrange(4)}\nproblem: {_q('Something is not yet true.')}\n"
            f"outcome: {_q(f'Outcome {k} is real and proven by its evidence.')}\n"
            + _block("acceptance_criteria", [_q("the outcome holds"), _q("the evidence is recorded")])
            + _block("validation", ["pytest"])
            + _block("evidence_required", [])
            + _block("depends_on", deps)
            + f"created_at: 2026-10-0{1 + k % 9}\nupdated_at: 2026-10-0{1 + k % 9}\n"
        )
        (project / "milestones" / f"{mid}.yaml").write_text(text)
    for n in range(issues):
        k = min(n // per, milestones - 1)
        iid = f"I{n:04d}"
        first = k * per
        deps = sorted({f"I{rng.randrange(max(first, n - 8), n):04d}" for _ in range(rng.randrange(3)) if n > first})
        if k and rng.random() < 0.05:
            deps.append(f"I{rng.randrange((k - 1) * per, first):04d}")
        scope = [f"src/m{k:03d}/part{n % 7}", f"tests/m{k:03d}/test_{n}.py"]
        if rng.random() < 0.1:
            scope.append(f"docs/m{k:03d}")
        text = (
            f"id: {iid}\nmilestone: M{k:03d}\ntitle: {_q(f'Issue {n} of milestone {k}')}\nslug: issue-{n}\n"
            f"priority: p{rng.randrange(4)}\nprofile: implementation\nparallel_safe: true\n"
            f"objective: {_q('Make one part of the outcome true, with a test that proves it, and nothing else.')}\n"
            f"why: {_q('Because the milestone needs it.')}\n"
            + _block("scope", scope)
            + _block("depends_on", deps)
            + _block("acceptance_criteria", [_q("the behaviour holds"), _q("the test fails without the change")])
            + _block("validation", [_q(f"pytest tests/m{k:03d}")])
            + _block("evidence_required", ["suite"])
            + "created_at: 2026-10-01\nupdated_at: 2026-10-01\n"
        )
        state = 3 if k < done_until else (rng.choice((0, 0, 0, 1, 2)) if k == done_until else 0)
        for (field, seal_field, event), stamp in list(zip(MOVES, STAMPS, strict=True))[:state]:
            text += f"{field}: {stamp}\n{seal_field}: {seal(event, iid, stamp)}\n"
        if state == 3:
            text += "evidence:\n  - covers: suite\n    type: test\n    command: pytest\n    result: passed\n"
        (project / "issues" / f"{iid}.yaml").write_text(text)
    return root


def _timed(fn: Callable[[], Any], repeat: int) -> dict[str, Any]:
    """Wall and CPU time (this process) of `repeat` calls: on a busy machine the CPU figure is the stable one."""
    wall, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter_ns(), time.process_time_ns()
        fn()
        cpu.append((time.process_time_ns() - start_cpu) / 1e6)
        wall.append((time.perf_counter_ns() - start) / 1e6)
    return {**_summary(wall), "cpu": _summary(cpu)}


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "n": len(ordered),
        "min_ms": round(ordered[0], 3),
        "p50_ms": round(statistics.median(ordered), 3),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 3),
        "max_ms": round(ordered[-1], 3),
    }


def _records_settled(root: Path) -> None:
    """Wait until every file of the layer is older than the racy window, so a read may keep it by its numbers."""
    newest = max(max(st.st_mtime_ns, st.st_ctime_ns) for st in (p.lstat() for p in (root / ".ai").rglob("*")))
    time.sleep(max(0.0, (newest + RACY_NS - time.time_ns()) / 1e9 + 0.05))


def derivation(root: Path, repeat: int) -> dict[str, Any]:
    """Load (cold), derive (cold), and read the plan under `root`: first, as a new process, warm, exactly."""
    directory = root / ".ai" / "repo" / "project"
    project = (directory / "project.yaml").read_bytes()
    repo = Repository(root=root, git_dir=None, common_dir=None)
    cache_file = root / ".ai" / _cache.CACHE_FILE

    def records_of(sub: str) -> list[tuple[str, bytes]]:
        listing = read_repository_dir(root, directory / sub, lambda name: name.endswith(".yaml"))
        return [(name, data) for name, data in listing if isinstance(data, bytes)]

    def load() -> Any:
        return load_records(project, records_of("milestones"), records_of("issues"))

    def first() -> None:
        _cache.forget()
        cache_file.unlink(missing_ok=True)
        read_snapshot(repo)

    def new_process() -> None:
        _cache.forget()
        read_snapshot(repo)

    load_ms = _timed(load, max(1, repeat // 4))
    records = load()
    derive_ms = _timed(lambda: derive(records), repeat)
    _records_settled(root)
    first_ms = _timed(first, max(1, repeat // 4))
    cached_ms = _timed(new_process, repeat)
    warm_ms = _timed(lambda: read_snapshot(repo), repeat)
    exact_ms = _timed(lambda: read_snapshot(repo, exact=True), repeat)
    plan = derive(records)
    return {
        "milestones": len(plan.milestones),
        "issues": len(plan.issues),
        "findings": len(plan.findings),
        "waves": len(plan.waves),
        "cache_file_bytes": cache_file.stat().st_size,
        "load_cold": load_ms,
        "derive_cold": derive_ms,
        "read_first": first_ms,
        "read_new_process_cached": cached_ms,
        "read_warm": warm_ms,
        "read_exact": exact_ms,
    }


async def _server_side(root: Path, requests: int) -> dict[str, float]:
    """`GET /api/v1/plan/next` through the HTTP application in this process (the cache filled first)."""
    async with open_service(Repository(root=root, git_dir=None, common_dir=None), surface="http", watch=False) as ex:
        return _summary(await in_process_get(ex, "/api/v1/plan/next", requests))


def _serve(root: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "svc", "--repo", str(root), "serve", "--port", "0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=sink,
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = re.search(rb"serving (http://127\.0\.0\.1:\d+)", log.read_bytes())
        if found:
            return proc, found.group(1).decode()
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"svc serve did not start:\n{log.read_text()[-2000:]}")


def over_http(root: Path, requests: int, log: Path) -> dict[str, Any]:
    """`GET /api/v1/plan/next` end to end against `svc serve` on one keep-alive connection."""
    proc, url = _serve(root, log)
    try:
        host, port = url.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=120)
        start = time.perf_counter_ns()
        conn.request("GET", "/api/v1/plan/next")
        first = conn.getresponse()
        first.read()
        first_ms = (time.perf_counter_ns() - start) / 1e6
        samples = []
        for _ in range(requests):
            start = time.perf_counter_ns()
            conn.request("GET", "/api/v1/plan/next")
            response = conn.getresponse()
            response.read()
            samples.append((time.perf_counter_ns() - start) / 1e6)
            assert response.status == 200, response.status
        conn.close()
        return {"first_request_ms": round(first_ms, 1), "cached": _summary(samples)}
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def _run_svc(root: Path, *args: str, before: Callable[[], None] = lambda: None) -> float:
    """Wall time (ms) of one `svc --repo ROOT ARGS...` process; `before` runs first, outside the timing."""
    env = {**os.environ, "SVC_NO_COMMIT": "1"}
    before()
    start = time.perf_counter_ns()
    done = subprocess.run(
        [sys.executable, "-m", "svc", "--repo", str(root), *args],
        capture_output=True,
        env=env,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode()
    return (time.perf_counter_ns() - start) / 1e6


def parse_cache_process(root: Path, runs: int) -> dict[str, Any]:
    """Wall time of `svc plan next --json` as a whole process, with the parse cache file and without it."""
    cache_file = root / ".ai" / _cache.CACHE_FILE

    def drop() -> None:
        cache_file.unlink(missing_ok=True)

    _records_settled(root)
    without = [_run_svc(root, "plan", "next", "--json", before=drop) for _ in range(runs)]
    _run_svc(root, "plan", "next", "--json")
    cached = [_run_svc(root, "plan", "next", "--json") for _ in range(runs)]
    return {"plan_next_cached": _summary(cached), "plan_next_without_cache": _summary(without)}


def whole_process(root: Path, runs: int) -> dict[str, Any]:
    """Wall time of `svc plan next --json` (and of `svc health live --json`) as whole processes."""
    _run_svc(root, "plan", "next", "--json")
    return {
        "plan_next": _summary([_run_svc(root, "plan", "next", "--json") for _ in range(runs)]),
        "health_live": _summary([_run_svc(root, "health", "live", "--json") for _ in range(runs)]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer samples")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    repeat, requests, runs = (5, 200, 3) if args.quick else (15, 2000, 10)
    result: dict[str, Any] = {
        "when": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "svc": __version__,
        "python": platform.python_version(),
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs",
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "targets": TARGETS,
    }
    with tempfile.TemporaryDirectory(prefix="svc-bench-plan-") as tmp:
        big = generate(Path(tmp) / "big", 200, 10_000)
        print("bench: synthetic plan of 200 milestones × 10,000 issues written", file=sys.stderr)
        result["synthetic_10000"] = derivation(big, repeat)
        result["next_server_side"] = trio.run(_server_side, big, requests)
        result["next_over_http"] = over_http(big, requests, Path(tmp) / "serve.log")
        result["cli_10000"] = parse_cache_process(big, 5)
        small = generate(Path(tmp) / "small", 20, 1_000)
        result["synthetic_1000"] = derivation(small, repeat)
        result["cli_1000"] = whole_process(small, runs)
        if (CORPUS / ".ai" / "repo" / "project").is_dir():
            corpus = Path(tmp) / "corpus"
            shutil.copytree(CORPUS / ".ai", corpus / ".ai", ignore=shutil.ignore_patterns("local"))
            result["corpus"] = derivation(corpus, repeat)
    result["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    big_derive = result["synthetic_10000"]["derive_cold"]["cpu"]["p50_ms"]
    server_p50 = result["next_server_side"]["p50_ms"]
    result["met"] = {
        "derive_cold_ms": big_derive <= TARGETS["derive_cold_ms"],
        "next_cached_server_p50_ms": server_p50 <= TARGETS["next_cached_server_p50_ms"],
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    _report(result)
    return 0


def _both(figure: dict[str, Any]) -> str:
    return f"p50 {figure['p50_ms']:9.1f} ms wall, {figure['cpu']['p50_ms']:9.1f} ms CPU"


def _report(r: dict[str, Any]) -> None:
    big, small = r["synthetic_10000"], r["synthetic_1000"]
    met = r["met"]
    lines = [
        f"plan benchmark — svc {r['svc']}, Python {r['python']}, {r['machine']}, "
        f"load average {r['load_average_at_start'][0]} at start, {r['load_average_at_end'][0]} at end",
        "",
        f"synthetic 10,000 issues / 200 milestones ({big['findings']} findings, {big['waves']} waves):",
        f"  {'load, cold (read + parse every record)':<45}{_both(big['load_cold'])}",
        f"  {'derivation, cold':<45}{_both(big['derive_cold'])}"
        f"   (target ≤ {TARGETS['derive_cold_ms']:.0f} ms CPU: {'met' if met['derive_cold_ms'] else 'MISSED'})",
        f"  {'read, first (parses all, writes the cache)':<45}{_both(big['read_first'])}",
        f"  {'read, new process, parse cache file present':<45}{_both(big['read_new_process_cached'])}",
        f"  {'read, warm (entries in memory, stat only)':<45}{_both(big['read_warm'])}",
        f"  {'read, exact (a move: bytes read and hashed)':<45}{_both(big['read_exact'])}",
        f"  parse cache file: {big['cache_file_bytes'] / 2**20:.1f} MiB",
        f"  `svc plan next --json`, whole process: p50 {r['cli_10000']['plan_next_cached']['p50_ms']:.0f} ms "
        f"with the parse cache, {r['cli_10000']['plan_next_without_cache']['p50_ms']:.0f} ms without",
        f"  plan.next from the generation cache, server side: p50 {r['next_server_side']['p50_ms']:.3f} ms, "
        f"p99 {r['next_server_side']['p99_ms']:.3f} ms (target p50 ≤ 1 ms: "
        f"{'met' if met['next_cached_server_p50_ms'] else 'MISSED'})",
        f"  plan.next over loopback HTTP, cached: p50 {r['next_over_http']['cached']['p50_ms']:.3f} ms, "
        f"p99 {r['next_over_http']['cached']['p99_ms']:.3f} ms "
        f"(first request {r['next_over_http']['first_request_ms']:.0f} ms)",
        "",
        "synthetic 1,000 issues / 20 milestones:",
        f"  load, cold {_both(small['load_cold'])}; derivation, cold {_both(small['derive_cold'])}",
        f"  `svc plan next --json`, whole process: p50 {r['cli_1000']['plan_next']['p50_ms']:.0f} ms "
        f"(`svc health live --json`: p50 {r['cli_1000']['health_live']['p50_ms']:.0f} ms)",
    ]
    if "corpus" in r:
        c = r["corpus"]
        lines += [
            "",
            f"reference corpus ({c['milestones']} milestones, {c['issues']} issues, {c['findings']} findings):",
            f"  load, cold {_both(c['load_cold'])}; derivation, cold {_both(c['derive_cold'])}",
            f"  read, first {_both(c['read_first'])}; new process, parse cache file present "
            f"{_both(c['read_new_process_cached'])}",
        ]
    print("\n".join(lines))


if __name__ == "__main__":
    raise SystemExit(main())
