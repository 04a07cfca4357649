"""Benchmark of the command line: `svc plan next --json` as a process, its imports, a server's first answer.

    .venv/bin/python bench/bench_cli.py            # full run (a few minutes): both plans, 5 runs per figure
    .venv/bin/python bench/bench_cli.py --quick    # smoke run: the 1,000-issue plan only, 3 runs, no result file

One run:

1. writes the synthetic plans of `bench_plan.py` (20 milestones × 1,000 issues and 200 × 10,000) into
   temporary Git checkouts, each committed once, and waits until every record is older than the parse
   cache's racy window (a read may then store it);
2. on each plan, runs `svc --repo CHECKOUT plan next --json` as a whole process: on a first read
   (`.ai/local/cache/` removed before each run) and after a first read (the cache file it wrote present:
   every record's parse and the plan derived from them); the wall
   time of each run (median of N) and its peak RSS (`ru_maxrss` of the child, from `os.wait4`; every measured
   process is spawned by a small spawner process started first, as Linux counts a child's peak from the
   memory it was forked with, which would otherwise be this benchmark's own);
3. on each plan, in the same run, the baseline: a standalone plain-Python script (written to a temporary
   directory, run as its own process with this interpreter) that reads every milestone and issue record
   with PyYAML's C loader in one pass, derives each issue's status from its stamps, seals, evidence and
   dependencies, gates issues by their milestone's dependencies, and picks the READY issue of lowest
   (wave, priority, id) in the active milestone, else in the whole plan; timed the same way. svc's figures
   are printed as a ratio of it, and both answers (issue, active milestone) are compared;
4. runs `python -X importtime -m svc --repo CHECKOUT plan next --json` N times: the cumulative import time
   of `svc.cli` and of every import of the process (medians; the instrument slows each import), and which
   of the modules a query command must not import were imported; then, without the instrument and
   alternating 2N times, `python -c "import svc.cli"` beside Python's own start (`python -c pass`);
5. on the 10,000-issue plan (quick: the 1,000-issue plan), starts `svc --repo CHECKOUT serve --port 0` on
   127.0.0.1, polls `GET /api/v1/live` until it answers 200, then times one `GET /api/v1/plan/next`: cold
   (`.ai/local/cache/` removed before the start) and warm (the cache file written by an earlier read); with
   the warm server, N whole processes that ask it for the same answer as a command line could (read the
   lease's URL, one stdlib `http.client` GET), the figure beside deriving the answer in the process;
6. with `--peer TASK_MASTER` (the `task-master` executable of an `npm install task-master-ai`), the issue's
   peer on the 1,000-issue plan: the plan written as its `tasks.json` (one task per issue: title, objective,
   its status from the one svc derives, dependencies, priority), and
   `task-master next -f json` timed as `svc plan next` is, alternating with it, beside svc's first read;
7. with `--before SVC` (the `svc` executable of an environment holding an earlier svc: the issue's "now"
   column), that svc on both plans: `svc plan next --json` with its caches dropped before each run, alternating
   with this svc's first read, and the `-X importtime` import of its `svc.cli` (with that environment's
   interpreter), timed as svc's are; the answers are compared;
8. reads the idle CPU figures of `bench/results/idle.json` (written by `bench_idle.py`; not measured again);
9. prints the table (figure, measured, target, met) to stdout and, on a full run, writes
   `bench/results/cli.json`.

A speed target with an anchor in the issue's table is also given scaled by this run's anchor over the issue's:
met is `yes` within the issue's figure, `scaled` only within the scaled one (this machine is that much slower
than the one the target was set on), else `NO`. The most direct anchor is the issue's "now" column itself
(`--before`): the same command of the svc the targets were set against, 0.44 s on 1,000 issues, 1.84 s on
10,000, 196 ms for the import; with it, each of the three figures scales by that svc's time in this run over
its time in the table. Without it, the 1,000-issue figures scale by the peer (`task-master next` on 1,000 tasks,
1.88 s; with `--peer`), the 10,000-issue figure after a first read by the baseline (1.35 s; a full run), the
import by Python's own start (20 ms). Memory and the first request after start are not scaled.
"""

from __future__ import annotations

import argparse
import datetime as dt
import http.client
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_idle import _checkout, _environment
from bench_plan import _records_settled
from bench_procs import ServerProcess, running_server, svc_command
from svc import __version__

BENCH_DIR = Path(__file__).resolve().parent
OUTPUT = BENCH_DIR / "results" / "cli.json"
IDLE_RESULTS = BENCH_DIR / "results" / "idle.json"
SVC = Path(sys.executable).with_name("svc")
PLANS = ((20, 1_000), (200, 10_000))
#: The modules `svc plan next --json` must not import (no async runtime, no web, no MCP, no rich output).
FORBIDDEN = ("trio", "anyio", "asyncio", "quart", "hypercorn", "mcp", "jinja2", "rich", "httpx")
TARGETS = {
    "plan_next_1000_s": 0.25,
    "plan_next_1000_rss_mib": 40.0,
    "plan_next_10000_cached_s": 0.5,
    "plan_next_10000_first_over_baseline": 1.0,
    "import_svc_cli_ms": 60.0,
    "first_request_s": 1.0,
    "idle_percent_of_one_core": 0.5,
    "plan_next_1000_over_peer": 0.13,
}
#: The anchors of the issue's table, as measured on the machine the targets were set on: a speed target is also
#: judged against itself times (this run's anchor / that one), the machine's speed against that machine's.
ANCHORS = {"peer_next_1000_s": 1.88, "baseline_10000_s": 1.35, "python_start_ms": 20.0}
#: The issue's "now" column: the svc the targets were set against, on that machine (`--before` runs it here).
NOW = {"1000": 0.44, "10000": 1.84, "import": 196.0}
RUN_TIMEOUT = 300.0
LIVE_TIMEOUT = 120.0
IMPORT_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)\s*$")

#: The baseline: a plain-Python derivation, PyYAML's C loader, one pass over the records. Standalone on purpose.
BASELINE = r'''
"""Next READY issue of a plan, in plain Python: read every record, derive the statuses, pick one."""
import hashlib
import json
import os
import sys

import yaml


class Loader(yaml.CSafeLoader):
    """The C safe loader, timestamps kept as text (the seals hash the text)."""


Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.CSafeLoader.yaml_implicit_resolvers.items()
}
DOMAIN = "svc.plan-event/v1"
CUTOFF = "2026-10-01T00:00:00Z"
MOVES = (
    ("started_at", "started_event", "plan_start"),
    ("verified_at", "verified_event", "plan_verify"),
    ("completed_at", "completed_event", "plan_done"),
)
RANK = {"p0": 0, "p1": 1, "p2": 2}


def text(value):
    if value is None:
        return ""
    if value is True or value is False:
        return "true" if value else "false"
    return str(value)


def items(value):
    if value is None:
        return []
    if not isinstance(value, list):
        return [text(value)]
    return [text(v) for v in value if v is not None]


def covers(record):
    tokens = set()
    for entry in record.get("evidence") or []:
        if isinstance(entry, dict):
            tokens.update(t for t in items(entry.get("covers")) if t)
    return tokens


def records(directory):
    out = {}
    for name in sorted(os.listdir(directory)):
        if name.endswith(".yaml"):
            with open(os.path.join(directory, name), "rb") as handle:
                data = yaml.load(handle.read(), Loader=Loader)
            if isinstance(data, dict) and text(data.get("id", name[:-5])) == name[:-5]:
                out[name[:-5]] = data
    return out


def proven(iid, record, field, seal_field, event):
    stamp = text(record.get(field))
    if not stamp:
        return False
    body = f"{DOMAIN}\n{event}\n{iid}\n{stamp}\n".encode()
    if text(record.get(seal_field)) == "sha256:" + hashlib.sha256(body).hexdigest():
        return True
    return stamp < CUTOFF and f"{field} {stamp}" in items(record.get("unsealed_stamps"))


def layers(nodes, parents):
    children = {n: [] for n in nodes}
    waiting = {n: len(parents[n]) for n in nodes}
    for n in nodes:
        for p in parents[n]:
            children[p].append(n)
    layer, current, rank = 0, sorted(n for n in nodes if not waiting[n]), {}
    while current:
        following = []
        for n in current:
            rank[n] = layer
            for c in children[n]:
                waiting[c] -= 1
                if not waiting[c]:
                    following.append(c)
        layer, current = layer + 1, sorted(following)
    return rank


def main(root):
    base = os.path.join(root, ".ai", "repo", "project")
    milestones = records(os.path.join(base, "milestones"))
    issues = {k: v for k, v in records(os.path.join(base, "issues")).items() if k not in milestones}
    done, proof, deps = {}, {}, {}
    for iid, r in issues.items():
        proof[iid] = [proven(iid, r, *move) for move in MOVES]
        have = covers(r)
        done[iid] = r.get("cancelled") is not True and proof[iid][2] and all(
            t in have for t in items(r.get("evidence_required"))
        )
        named = []
        for d in items(r.get("depends_on")):
            if d in issues and d != iid and d not in named:
                named.append(d)
        deps[iid] = named
    wave = layers(list(issues), deps)
    status = {}
    for iid, r in issues.items():
        started, verified, completed = proof[iid]
        if r.get("cancelled") is True:
            status[iid] = "CANCELLED"
        elif done[iid]:
            status[iid] = "DONE"
        elif completed or verified:
            status[iid] = "VERIFY"
        elif started:
            status[iid] = "ACTIVE"
        elif any(not done[d] for d in deps[iid]):
            status[iid] = "BLOCKED"
        else:
            status[iid] = "READY"
    requires = {}
    for mid, m in milestones.items():
        requires[mid] = []
        for d in items(m.get("depends_on")):
            if d in milestones and d != mid and d not in requires[mid]:
                requires[mid].append(d)
    mrank = layers(list(milestones), requires)
    members = {mid: [] for mid in milestones}
    for iid, r in issues.items():
        owner = text(r.get("milestone"))
        if owner in members:
            members[owner].append(iid)
    mstatus = {}
    for mid, m in milestones.items():
        tally = [status[i] for i in members[mid]]
        required = len(tally) - tally.count("CANCELLED")
        have, need = covers(m), items(m.get("evidence_required"))
        covered = all(t in have for t in need)
        if m.get("cancelled") is True:
            mstatus[mid] = "CANCELLED"
        elif text(m.get("superseded_by")):
            mstatus[mid] = "SUPERSEDED"
        elif not tally:
            mstatus[mid] = "DONE" if need and covered else "PLANNED"
        elif required and tally.count("DONE") == required:
            mstatus[mid] = "DONE" if covered else "VERIFY"
        elif {"ACTIVE", "VERIFY", "DONE"} & set(tally):
            mstatus[mid] = "ACTIVE"
        elif "READY" not in tally:
            mstatus[mid] = "BLOCKED"
        else:
            mstatus[mid] = "PLANNED"
    gated = {}
    for mid in sorted(milestones, key=lambda k: (mrank.get(k, 0), k)):
        gated[mid] = [d for d in requires[mid] if mstatus[d] != "DONE"]
        if gated[mid] and mstatus[mid] not in ("CANCELLED", "SUPERSEDED"):
            mstatus[mid] = "BLOCKED"
    for iid, r in issues.items():
        owner = text(r.get("milestone"))
        if owner in gated and gated[owner] and status[iid] not in ("CANCELLED", "DONE"):
            status[iid] = "BLOCKED"
    active = ""
    for only_active in (True, False):
        best = None
        for mid, m in milestones.items():
            if mstatus[mid] in ("DONE", "CANCELLED") or gated[mid]:
                continue
            if only_active and mstatus[mid] != "ACTIVE":
                continue
            order = m.get("order")
            key = mrank.get(mid, 0) * 1_000_000 + (order if type(order) is int else 0)
            if best is None or key < best[0]:
                best = (key, mid)
        if best is not None:
            active = best[1]
            break

    def pick(candidates):
        ready = [i for i in candidates if status[i] == "READY"]
        key = lambda i: (wave.get(i, 0), RANK.get(text(issues[i].get("priority")), 3), i)  # noqa: E731
        return min(ready, key=key, default=None)

    found = pick(i for i in issues if text(issues[i].get("milestone")) == active) if active else None
    if found is None:
        found = pick(issues)
    print(json.dumps({"issue": found, "active_milestone": active, "issues": len(issues)}))


main(sys.argv[1])
'''


@dataclass(frozen=True, slots=True)
class Run:
    """One finished process: wall seconds, peak RSS (MiB), exit status, stdout and stderr."""

    seconds: float
    rss_mib: float
    status: int
    stdout: bytes
    stderr: bytes


#: The spawner of the measured processes: one small process, started before this one grows. Linux counts a
#: child's peak RSS (`ru_maxrss`) from the memory it was forked with, so a child of this benchmark (which holds
#: the 10,000-issue plan it wrote) would report at least this benchmark's own peak; a child of the spawner
#: reports at least the spawner's (about 10 MiB). It times each run from spawn to reap, as `run_process` says.
SPAWNER = r"""
import json, os, subprocess, sys, time
for line in sys.stdin:
    job = json.loads(line)
    with open(job["stdout"], "wb") as out, open(job["stderr"], "wb") as err:
        start = time.perf_counter()
        process = subprocess.Popen(job["argv"], stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
    done = {"seconds": seconds, "maxrss_kib": usage.ru_maxrss, "status": os.waitstatus_to_exitcode(status)}
    print(json.dumps(done), flush=True)
"""
_spawner: subprocess.Popen[str] | None = None


def start_spawner() -> None:
    """Start the spawner (`SPAWNER`); call it before this process holds the plans it writes."""
    global _spawner
    _spawner = subprocess.Popen(
        [sys.executable, "-c", SPAWNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
    )


def stop_spawner() -> None:
    """End the spawner: its input closed, it leaves."""
    global _spawner
    if _spawner is not None:
        assert _spawner.stdin is not None
        _spawner.stdin.close()
        _spawner.wait(timeout=RUN_TIMEOUT)
        _spawner = None


def run_process(argv: list[str], *, scratch: Path) -> Run:
    """Run `argv` to completion; wall time from spawn to reap, peak RSS of that child alone (`os.wait4`).

    Spawned by the spawner when it runs (`start_spawner`), else by this process.
    """
    out_path, err_path = scratch / "stdout", scratch / "stderr"
    if _spawner is not None:
        assert _spawner.stdin is not None
        assert _spawner.stdout is not None
        job = {"argv": argv, "stdout": str(out_path), "stderr": str(err_path)}
        _spawner.stdin.write(json.dumps(job) + "\n")
        done = json.loads(_spawner.stdout.readline())
        seconds, maxrss_kib, status = done["seconds"], done["maxrss_kib"], done["status"]
    else:
        with out_path.open("wb") as out, err_path.open("wb") as err:
            start = time.perf_counter()
            process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
            _, wait_status, usage = os.wait4(process.pid, 0)
            seconds = time.perf_counter() - start
        maxrss_kib, status = usage.ru_maxrss, os.waitstatus_to_exitcode(wait_status)
    return Run(
        seconds=seconds,
        rss_mib=maxrss_kib / 1024,
        status=status,
        stdout=out_path.read_bytes(),
        stderr=err_path.read_bytes(),
    )


def _checked(run: Run, what: str) -> Run:
    if run.status != 0:
        tail = run.stderr.decode("utf-8", errors="replace")[-2000:]
        raise RuntimeError(f"{what} exited with {run.status}:\n{tail}")
    return run


def _drop_cache(root: Path) -> None:
    shutil.rmtree(root / ".ai" / "local" / "cache", ignore_errors=True)


def _cache_present(root: Path) -> bool:
    cache = root / ".ai" / "local" / "cache"
    return cache.is_dir() and any(cache.iterdir())


def _summary(runs: list[Run]) -> dict[str, Any]:
    seconds = [r.seconds for r in runs]
    rss = [r.rss_mib for r in runs]
    return {
        "n": len(runs),
        "median_s": round(statistics.median(seconds), 4),
        "min_s": round(min(seconds), 4),
        "max_s": round(max(seconds), 4),
        "peak_rss_mib_median": round(statistics.median(rss), 1),
        "peak_rss_mib_max": round(max(rss), 1),
    }


def _answer_of_svc(run: Run) -> dict[str, str]:
    answer = json.loads(run.stdout)
    issue = answer.get("issue") or {}
    return {"issue": issue.get("id") or "", "active_milestone": answer.get("active_milestone") or ""}


def _answer_of_baseline(run: Run) -> dict[str, str]:
    answer = json.loads(run.stdout)
    return {"issue": answer["issue"] or "", "active_milestone": answer["active_milestone"]}


def plan_next(root: Path, runs: int, scratch: Path, baseline: Path) -> dict[str, Any]:
    """`svc plan next --json` on a first read and after one, and the baseline, alternating run by run."""
    argv = svc_next(root)
    base_argv = [sys.executable, str(baseline), str(root)]
    first: list[Run] = []
    cached: list[Run] = []
    base: list[Run] = []
    stored = True
    _checked(run_process(base_argv, scratch=scratch), "the baseline")  # the records into the page cache
    for _ in range(runs):
        base.append(_checked(run_process(base_argv, scratch=scratch), "the baseline"))
        _drop_cache(root)
        first.append(_checked(run_process(argv, scratch=scratch), "svc plan next"))
        stored = stored and _cache_present(root)
        cached.append(_checked(run_process(argv, scratch=scratch), "svc plan next"))
    svc_answer, base_answer = _answer_of_svc(cached[-1]), _answer_of_baseline(base[-1])
    return {
        "first_read": _summary(first),
        "after_first_read": _summary(cached),
        "baseline": _summary(base),
        "parse_cache_written": stored,
        "answer_svc": svc_answer,
        "answer_baseline": base_answer,
        "answers_agree": svc_answer == base_answer,
    }


#: The packages the design card fixes that importing `svc.cli` imports (its command-line framework, its encoder).
FIXED = ("asyncclick", "msgspec")


def _imports(stderr: str) -> tuple[float | None, float, float, set[str]]:
    """The cumulative import time of `svc.cli` (ms), of the `FIXED` packages imported within it (ms), of every
    import of the process (ms), and the top-level names of every imported module."""
    svc_cli: float | None = None
    fixed: dict[str, float] = {}
    within: dict[str, float] = {}
    total = 0.0
    names: set[str] = set()
    # -X importtime prints an import after the imports it made: the FIXED packages printed since the last
    # import no other import made, up to svc.cli's line, were imported within it.
    for line in stderr.splitlines():
        match = IMPORT_LINE.match(line)
        if match is None:
            continue
        name = match.group(4)
        names.add(name.split(".")[0])
        if name in FIXED:
            within[name] = int(match.group(2)) / 1000
        if len(match.group(3)) == 1:  # an import no other import made: its time is not counted above it
            total += int(match.group(2)) / 1000
            if name == "svc.cli" and svc_cli is None:
                svc_cli, fixed = int(match.group(2)) / 1000, within
            within = {}
    return svc_cli, sum(fixed.values()), total, names


def imports(root: Path, runs: int, scratch: Path) -> dict[str, Any]:
    """`-X importtime` of `python -m svc plan next --json`: svc.cli's cumulative time, the forbidden imports."""
    argv = [sys.executable, "-X", "importtime", "-m", "svc", "--repo", str(root), "plan", "next", "--json"]
    times: list[float] = []
    fixed: list[float] = []
    totals: list[float] = []
    imported: set[str] = set()
    for _ in range(runs):
        run = _checked(run_process(argv, scratch=scratch), "python -X importtime -m svc plan next")
        svc_cli, dependencies, total, names = _imports(run.stderr.decode("utf-8", errors="replace"))
        if svc_cli is None:
            raise RuntimeError("-X importtime reported no import of svc.cli")
        times.append(svc_cli)
        fixed.append(dependencies)
        totals.append(total)
        imported |= names
    own = [t - f for t, f in zip(times, fixed, strict=True)]
    # Without the instrument (which slows every import): `import svc.cli` as a process, beside `pass`, alternating.
    start: list[float] = []
    cli: list[float] = []
    for _ in range(runs * 2):
        start.append(run_process([sys.executable, "-c", "pass"], scratch=scratch).seconds * 1000)
        cli.append(run_process([sys.executable, "-c", "import svc.cli"], scratch=scratch).seconds * 1000)
    return {
        "n": runs,
        "svc_cli_cumulative_ms_median": round(statistics.median(times), 1),
        "svc_cli_cumulative_ms": [round(t, 1) for t in times],
        "fixed_within_svc_cli_ms_median": round(statistics.median(fixed), 1),
        "svc_own_within_svc_cli_ms_median": round(statistics.median(own), 1),
        "command_imports_ms_median": round(statistics.median(totals), 1),
        "forbidden_imported": sorted(name for name in FORBIDDEN if name in imported),
        "python_start_ms_median": round(statistics.median(start), 1),
        "import_svc_cli_process_ms_median": round(statistics.median(cli), 1),
    }


def _get(server: ServerProcess, path: str) -> int:
    conn = http.client.HTTPConnection(server.origin.host, server.origin.port, timeout=LIVE_TIMEOUT)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


#: A whole process asking the serving server, as a command line could: the lease's URL, one GET, stdlib only.
LOOPBACK = r"""
import http.client, json, sys, urllib.parse
lease = json.load(open(sys.argv[1] + "/.ai/local/state/mcp/server.json"))
url = urllib.parse.urlsplit(lease["url"])
conn = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
conn.request("GET", "/api/v1/plan/next")
response = conn.getresponse()
sys.stdout.buffer.write(response.read() + b"\\n")
sys.exit(0 if response.status == 200 else 1)
"""


def first_request(root: Path, *, cold: bool, logs: Path, loopback: tuple[int, Path] | None = None) -> dict[str, Any]:
    """Start `svc serve` on `root`, wait for `/api/v1/live`, then time one `GET /api/v1/plan/next`.

    Also the time from the process's start to its serving (`/api/v1/live` answered) and to that first answer,
    what a person starting a server waits in all. With `loopback` (runs, scratch), then time that many whole
    processes asking the server (`LOOPBACK`).
    """
    if cold:
        _drop_cache(root)
    cache_at_start = _cache_present(root)
    launched = time.monotonic()
    with (
        _environment(SVC_NO_COMMIT="1"),
        running_server(f"svc-{root.name}-{'cold' if cold else 'warm'}", svc_command(root), log_dir=logs) as server,
    ):
        started = time.monotonic()
        while True:
            try:
                if _get(server, "/api/v1/live") == 200:
                    break
            except OSError:
                pass
            if time.monotonic() - started > LIVE_TIMEOUT:
                raise RuntimeError(f"{server.name} did not answer /api/v1/live within {LIVE_TIMEOUT:.0f} s")
            time.sleep(0.02)
        serving = time.monotonic()
        live = serving - started
        start = time.perf_counter()
        status = _get(server, "/api/v1/plan/next")
        seconds = time.perf_counter() - start
        answered = time.monotonic()
        asked: list[Run] = []
        if loopback is not None:
            runs, scratch = loopback
            script = scratch / "loopback_next.py"
            script.write_text(LOOPBACK, encoding="utf-8")
            for _ in range(runs):
                asked.append(_checked(run_process([sys.executable, str(script), str(root)], scratch=scratch), "asking"))
    if status != 200:
        raise RuntimeError(f"GET /api/v1/plan/next answered {status}")
    out: dict[str, Any] = {
        "cache_at_start": cache_at_start,
        "live_after_url_s": round(live, 3),
        "plan_next_s": round(seconds, 4),
        "start_to_serving_s": round(serving - launched, 3),
        "start_to_first_answer_s": round(answered - launched, 3),
    }
    if asked:
        out["asked_over_loopback"] = _summary(asked)
    return out


def idle_figures() -> dict[str, Any] | None:
    """The notify-mode figures of the last `bench_idle.py` run, or None when its result file is absent."""
    try:
        data = json.loads(IDLE_RESULTS.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    plans = {size: plan["notify"]["percent_of_one_core"] for size, plan in data.get("plans", {}).items()}
    return {"file": "bench/results/idle.json", "when": data.get("when"), "notify_percent_of_one_core": plans}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="the 1,000-issue plan only, 3 runs, no result file")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--peer", type=Path, help="the task-master executable: time `task-master next` beside svc")
    parser.add_argument(
        "--before", type=Path, help="the `svc` executable of an earlier svc's environment: time it beside this one"
    )
    args = parser.parse_args(argv)
    runs = 3 if args.quick else 5
    plans = PLANS[:1] if args.quick else PLANS
    result: dict[str, Any] = {
        "when": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "svc": __version__,
        "python": platform.python_version(),
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs",
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "runs": runs,
        "targets": TARGETS,
        "plans": {},
    }
    start_spawner()
    try:
        _measure(result, plans, runs, args.peer, args.before)
    finally:
        stop_spawner()
    result["idle"] = idle_figures()
    result["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    rows = table(result)
    result["scales"] = {key: round(value, 3) for key, value in scales(result).items()}
    result["met"] = {row[0]: row[3] for row in rows if row[3] != "—"}
    print(report(result, rows))
    if not args.quick:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(result, indent=2) + "\n")
    return 0


def _measure(
    result: dict[str, Any], plans: tuple[tuple[int, int], ...], runs: int, peer: Path | None, before: Path | None
) -> None:
    """Write the plans and measure every figure into `result` (the peer's and the earlier svc's, when given)."""
    with tempfile.TemporaryDirectory(prefix="svc-bench-cli-") as tmp:
        scratch = Path(tmp)
        baseline = scratch / "baseline_next.py"
        baseline.write_text(BASELINE, encoding="utf-8")
        roots = {}
        for milestones, issues in plans:
            roots[issues] = _checkout(scratch / f"plan-{issues}", milestones, issues)
            print(f"bench: plan of {milestones} milestones × {issues:,} issues written", file=sys.stderr)
        for root in roots.values():
            _records_settled(root)
        for issues, root in roots.items():
            print(f"bench: {issues:,} issues: svc plan next and the baseline, {runs} runs each", file=sys.stderr)
            result["plans"][str(issues)] = plan_next(root, runs, scratch, baseline)
        small, large = roots[plans[0][1]], roots[plans[-1][1]]
        if peer is not None:
            print(f"bench: {plans[0][1]:,} issues: task-master next and svc plan next, {runs} runs", file=sys.stderr)
            result["peer"] = peer_next(peer, small, runs, scratch)
        if before is not None:
            print(f"bench: the earlier svc and this one, {runs} runs on each plan", file=sys.stderr)
            result["before"] = before_figures(before, roots, runs, scratch)
        print(f"bench: -X importtime, {runs} runs", file=sys.stderr)
        result["imports"] = imports(small, runs, scratch)
        served = plans[-1][1]
        print(f"bench: first request after start, {served:,} issues, cold then warm", file=sys.stderr)
        cold = first_request(large, cold=True, logs=scratch)
        if not _cache_present(large):
            _checked(run_process(svc_next(large), scratch=scratch), "svc")
        warm = first_request(large, cold=False, logs=scratch, loopback=(runs, scratch))
        result["first_request"] = {"issues": served, "cold": cold, "warm": warm}


def svc_next(root: Path) -> list[str]:
    """`svc --repo ROOT plan next --json`, with the `svc` script of this interpreter's environment."""
    return [str(SVC), "--repo", str(root), "plan", "next", "--json"]


def beside_first_reads(argv: list[str], what: str, root: Path, runs: int, scratch: Path) -> tuple[list[Run], list[Run]]:
    """`argv` and svc's first read of `root`, alternating run by run, `root`'s caches dropped before each."""
    theirs: list[Run] = []
    ours: list[Run] = []
    for _ in range(runs):
        _drop_cache(root)
        theirs.append(_checked(run_process(argv, scratch=scratch), what))
        _drop_cache(root)
        ours.append(_checked(run_process(svc_next(root), scratch=scratch), "svc plan next"))
    return theirs, ours


#: task-master's priorities for the plan's p0 to p3.
PEER_PRIORITY = {"p0": "critical", "p1": "high", "p2": "medium", "p3": "low"}
#: task-master's statuses for svc's (READY and BLOCKED are both pending: task-master weighs the dependencies).
PEER_STATUS = {"ACTIVE": "in-progress", "VERIFY": "review", "DONE": "done", "CANCELLED": "cancelled"}


def peer_tasks(root: Path) -> dict[str, Any]:
    """The plan under `root` as task-master's `tasks.json`: one task per issue, statuses as svc derives them."""
    from svc.layer import Repository
    from svc.plan import read_snapshot

    snapshot = read_snapshot(Repository.discover(root))
    status = {issue.id: issue.status for issue in snapshot.plan.issues}
    number = {record.id: k + 1 for k, record in enumerate(snapshot.records.issues)}
    tasks = [
        {
            "id": number[record.id],
            "title": record.title,
            "description": record.objective,
            "details": f"milestone {record.milestone}; scope: {', '.join(record.scope)}",
            "testStrategy": f"{record.validation} validation command(s)",
            "status": PEER_STATUS.get(status[record.id], "pending"),
            "dependencies": [number[d] for d in record.depends_on if d in number],
            "priority": PEER_PRIORITY.get(record.priority, "medium"),
            "subtasks": [],
        }
        for record in snapshot.records.issues
    ]
    when = "2026-10-01T00:00:00.000Z"
    return {"master": {"tasks": tasks, "metadata": {"created": when, "updated": when, "description": "synthetic"}}}


def peer_next(peer: Path, root: Path, runs: int, scratch: Path) -> dict[str, Any]:
    """`task-master next -f json` on the plan of `root` as its tasks, alternating with svc's first read."""
    project = scratch / "peer"
    (project / ".taskmaster" / "tasks").mkdir(parents=True, exist_ok=True)
    (project / ".taskmaster" / "tasks" / "tasks.json").write_text(json.dumps(peer_tasks(root)), encoding="utf-8")
    version = _checked(run_process([str(peer), "--version"], scratch=scratch), "task-master").stdout.decode().strip()
    peer_argv = [str(peer), "next", "-f", "json", "-p", str(project)]
    _checked(run_process(peer_argv, scratch=scratch), "task-master next")
    theirs, ours = beside_first_reads(peer_argv, "task-master next", root, runs, scratch)
    answer = json.loads(theirs[-1].stdout).get("task") or {}
    return {"version": version, "next": _summary(theirs), "svc_first_read": _summary(ours), "answer": answer.get("id")}


def _source(python: Path) -> str:
    """Where the svc of `python`'s environment comes from: its checkout's commit, else its version."""
    where = [str(python), "-c", "import svc, pathlib; print(pathlib.Path(svc.__file__).parent, svc.__version__)"]
    directory, version = subprocess.run(where, capture_output=True, text=True, check=True).stdout.split()
    commit = subprocess.run(
        ["git", "-C", directory, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    )
    return f"svc {version}, commit {commit.stdout.strip()}" if commit.returncode == 0 else f"svc {version}"


def before_figures(before: Path, roots: dict[int, Path], runs: int, scratch: Path) -> dict[str, Any]:
    """The earlier svc `before` beside this one: `plan next` on each plan (first reads, alternating), its import.

    Its environment's interpreter (`python` beside `before`) runs its `-X importtime`.
    """
    python = before.with_name("python")
    out: dict[str, Any] = {"source": _source(python), "plans": {}}
    for issues, root in roots.items():
        theirs_argv = [str(before), "--repo", str(root), "plan", "next", "--json"]
        theirs, ours = beside_first_reads(theirs_argv, "the earlier svc plan next", root, runs, scratch)
        agree = _answer_of_svc(theirs[-1]) == _answer_of_svc(ours[-1])
        out["plans"][str(issues)] = {"next": _summary(theirs), "svc_first_read": _summary(ours), "answers_agree": agree}
    argv = [str(python), "-X", "importtime", "-m", "svc", "--repo", str(roots[min(roots)]), "plan", "next", "--json"]
    times: list[float] = []
    for _ in range(runs):
        run = _checked(run_process(argv, scratch=scratch), "the earlier svc's -X importtime")
        took = _imports(run.stderr.decode("utf-8", errors="replace"))[0]
        if took is None:
            raise RuntimeError("-X importtime reported no import of the earlier svc.cli")
        times.append(took)
    out["svc_cli_cumulative_ms_median"] = round(statistics.median(times), 1)
    return out


def _yes(ok: bool) -> str:
    return "yes" if ok else "NO"


def scales(r: dict[str, Any]) -> dict[str, float]:
    """This run's anchor over the issue's, for the anchors this run measured.

    With `--before`, the earlier svc's own figures over the issue's "now" column, for all three. Else `1000`:
    `task-master next` (with `--peer`); `10000`: the baseline on 10,000 issues (a full run); `import`: Python's
    own start.
    """
    before = r.get("before")
    if before is not None:
        out = {size: plan["next"]["median_s"] / NOW[size] for size, plan in before["plans"].items()}
        out["import"] = before["svc_cli_cumulative_ms_median"] / NOW["import"]
        return out
    out = {"import": r["imports"]["python_start_ms_median"] / ANCHORS["python_start_ms"]}
    if "peer" in r:
        out["1000"] = r["peer"]["next"]["median_s"] / ANCHORS["peer_next_1000_s"]
    if "10000" in r["plans"]:
        out["10000"] = r["plans"]["10000"]["baseline"]["median_s"] / ANCHORS["baseline_10000_s"]
    return out


def _bound(value: float, limit: float, scale: float | None, unit: str) -> tuple[str, str]:
    """The target cell and the verdict of a speed figure.

    `yes` within the issue's bound, `scaled` only within that bound times this machine's scale, else `NO`.
    """
    digits = 0 if unit == "ms" else 2
    cell = f"≤ {limit:g} {unit}"
    if scale is None:
        return cell, _yes(value <= limit)
    cell += f" ({limit * scale:.{digits}f} {unit} at {scale:.2f}×)"
    return cell, "yes" if value <= limit else "scaled" if value <= limit * scale else "NO"


def table(r: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """The rows of the report: figure, measured, target, met (yes, NO, or — when the figure has no target)."""
    rows: list[tuple[str, str, str, str]] = []
    scale = scales(r)
    for size, plan in r["plans"].items():
        n = f"{int(size):,}"
        base = plan["baseline"]["median_s"]
        for key, label in (("first_read", "first read"), ("after_first_read", "after a first read")):
            fig = plan[key]
            measured = (
                f"{fig['median_s']:.3f} s ({fig['median_s'] / base:.2f}× baseline), {fig['peak_rss_mib_max']:.0f} MiB"
            )
            if key == "after_first_read" and not plan["parse_cache_written"]:
                measured += " (no parse cache was written)"
            if size == "1000":
                mib = TARGETS["plan_next_1000_rss_mib"]
                cell, met = _bound(fig["median_s"], TARGETS["plan_next_1000_s"], scale.get(size), "s")
                if fig["peak_rss_mib_max"] > mib:
                    met = "NO"
                rows.append((f"svc plan next, {n} issues, {label}", measured, f"{cell}, ≤ {mib:.0f} MiB", met))
            elif key == "after_first_read":
                cell, met = _bound(fig["median_s"], TARGETS["plan_next_10000_cached_s"], scale.get(size), "s")
                rows.append((f"svc plan next, {n} issues, {label}", measured, cell, met))
            else:
                ok = fig["median_s"] / base <= TARGETS["plan_next_10000_first_over_baseline"]
                rows.append((f"svc plan next, {n} issues, {label}", measured, "≤ baseline", _yes(ok)))
        agree = "same answer" if plan["answers_agree"] else f"answers differ: {plan['answer_baseline']}"
        measured = f"{base:.3f} s, {plan['baseline']['peak_rss_mib_max']:.0f} MiB ({agree})"
        rows.append((f"baseline (PyYAML C loader), {n} issues", measured, "", "—"))
    peer = r.get("peer")
    if peer is not None:
        theirs, ours = peer["next"], peer["svc_first_read"]
        ratio = ours["median_s"] / theirs["median_s"]
        limit = TARGETS["plan_next_1000_over_peer"]
        rows.append(
            (
                f"task-master next (task-master-ai {peer['version']}), 1,000 tasks",
                f"{theirs['median_s']:.3f} s, {theirs['peak_rss_mib_max']:.0f} MiB",
                "",
                "—",
            )
        )
        rows.append(
            (
                "svc plan next, 1,000 issues, first read, beside it",
                f"{ours['median_s']:.3f} s ({ratio:.3f}× task-master)",
                f"≤ {limit}× task-master",
                _yes(ratio <= limit),
            )
        )
    before = r.get("before")
    if before is not None:
        for size, plan in before["plans"].items():
            theirs, ours = plan["next"], plan["svc_first_read"]
            n = f"{int(size):,}"
            agree = "same answer" if plan["answers_agree"] else "answers differ"
            measured = f"{theirs['median_s']:.3f} s, {theirs['peak_rss_mib_max']:.0f} MiB ({agree})"
            rows.append((f"the earlier svc ({before['source']}), {n} issues", measured, "", "—"))
            ratio = ours["median_s"] / theirs["median_s"]
            label = f"svc plan next, {n} issues, first read, beside the earlier svc"
            measured = f"{ours['median_s']:.3f} s ({ratio:.2f}× the earlier svc)"
            if size == "1000":
                limit = TARGETS["plan_next_1000_s"] / NOW[size]
                cell = f"≤ {limit:.2f}× (the issue's target over its now)"
                rows.append((label, measured, cell, _yes(ratio <= limit)))
            else:
                rows.append((label, measured, "", "—"))
        took = before["svc_cli_cumulative_ms_median"]
        rows.append(("import of the earlier svc.cli for svc plan next --json", f"{took:.0f} ms", "", "—"))
    imp = r["imports"]
    took = imp["svc_cli_cumulative_ms_median"]
    cell, met = _bound(took, TARGETS["import_svc_cli_ms"], scale["import"], "ms")
    rows.append(("import of svc.cli for svc plan next --json", f"{took:.0f} ms", cell, met))
    fixed, own = imp["fixed_within_svc_cli_ms_median"], imp["svc_own_within_svc_cli_ms_median"]
    label = f"  of which {' and '.join(FIXED)} (the design card's), and the rest"
    rows.append((label, f"{fixed:.0f} ms, {own:.0f} ms", "", "—"))
    forbidden = imp["forbidden_imported"]
    rows.append(("forbidden modules imported", ", ".join(forbidden) or "none", "none", _yes(not forbidden)))
    every = f"{imp['command_imports_ms_median']:.0f} ms"
    rows.append(("every import of svc plan next --json (-X importtime)", every, "", "—"))
    process = imp["import_svc_cli_process_ms_median"] - imp["python_start_ms_median"]
    rows.append(("import svc.cli as a process, less Python's start", f"{process:.0f} ms", "", "—"))
    rows.append(("Python's own start (python -c pass)", f"{imp['python_start_ms_median']:.0f} ms", "", "—"))
    first = r["first_request"]
    limit = TARGETS["first_request_s"]
    for key in ("cold", "warm"):
        fig = first[key]
        label = f"first request after start, {first['issues']:,} issues, {key}"
        rows.append((label, f"{fig['plan_next_s']:.3f} s", f"≤ {limit:.0f} s", _yes(fig["plan_next_s"] <= limit)))
        label = f"svc serve from its start to serving, then to that answer, {first['issues']:,} issues, {key}"
        rows.append((label, f"{fig['start_to_serving_s']:.2f} s, {fig['start_to_first_answer_s']:.2f} s", "", "—"))
    asked = first["warm"].get("asked_over_loopback")
    if asked is not None:
        label = f"the same answer asked of the serving server, {first['issues']:,} issues (a process, loopback)"
        local = r["plans"][str(first["issues"])]["after_first_read"]["median_s"]
        rows.append((label, f"{asked['median_s']:.3f} s (derived here: {local:.3f} s)", "", "—"))
    idle = r["idle"]
    limit = TARGETS["idle_percent_of_one_core"]
    if idle is None:
        rows.append(("idle svc serve CPU (bench_idle.py)", "no bench/results/idle.json", f"≤ {limit} %", "—"))
    else:
        for size, percent in idle["notify_percent_of_one_core"].items():
            label = f"idle svc serve CPU, {int(size):,} issues, notify"
            measured = f"{percent} % of a core (read from {idle['file']}, {idle['when']})"
            rows.append((label, measured, f"≤ {limit} %", _yes(percent <= limit)))
    return rows


def report(r: dict[str, Any], rows: list[tuple[str, str, str, str]]) -> str:
    """The printed report: a heading and the table."""
    widths = [max(len(row[k]) for row in [("figure", "measured", "target", "met"), *rows]) for k in range(4)]
    lines = [
        f"command-line benchmark — svc {r['svc']}, Python {r['python']}, {r['machine']}, median of {r['runs']} runs, "
        f"load average {r['load_average_at_start'][0]} at start, {r['load_average_at_end'][0]} at end",
        "",
    ]
    for row in [("figure", "measured", "target", "met"), tuple("-" * w for w in widths), *rows]:
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
