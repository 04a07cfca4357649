"""Benchmark of an idle server: the CPU `svc serve` uses while nothing happens, per layer size and watch mode.

    .venv/bin/python bench/bench_idle.py            # full run (about two minutes): 20 s idle per server
    .venv/bin/python bench/bench_idle.py --quick    # smoke run: 5 s idle per server, no result file

One run:

1. writes the synthetic plans of `bench_plan.py` (20 milestones × 1,000 issues and 200 × 10,000) into
   temporary Git checkouts, each committed once;
2. for each plan and each watch mode (`SVC_WATCH=notify`, the default, and `SVC_WATCH=poll`, the fallback)
   starts `svc --repo CHECKOUT serve --port 0` on 127.0.0.1, waits until `GET /api/v1/ready` answers 200,
   lets it settle, then reads its CPU time (user + system, every thread, from `/proc/<pid>/stat`) before and
   after an idle window in which nothing is sent to it;
3. prints every figure as JSON (percent of one core) and, on a full run, writes `bench/results/idle.json`.

Each plan's figures also give the CPU time of one full repository stamp (what poll mode recomputes
periodically, and notify mode after a change).
"""

from __future__ import annotations

import argparse
import datetime as dt
import http.client
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench_plan import generate
from bench_procs import ServerProcess, cpu_seconds, running_server, svc_command
from svc import __version__
from svc.layer import Repository
from svc.runtime._generation import repository_stamp

BENCH_DIR = Path(__file__).resolve().parent
OUTPUT = BENCH_DIR / "results" / "idle.json"
#: The most an idle server may use, in percent of one core, on any layer size (notify mode).
TARGET_PERCENT = 0.5
PLANS = ((20, 1_000), (200, 10_000))
MODES = ("notify", "poll")
READY_TIMEOUT = 120.0
#: What a server that polls logs (at start, or on falling back); a server on notifications logs nothing.
POLL_LINE = "the repository watcher polls"


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", *args],
        cwd=root,
        check=True,
        capture_output=True,
        timeout=300,
    )


def _checkout(root: Path, milestones: int, issues: int) -> Path:
    generate(root, milestones, issues)
    (root / ".gitignore").write_text(".ai/local/\n")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "synthetic plan")
    return root


@contextmanager
def _environment(**values: str) -> Iterator[None]:
    """Set environment variables for the servers started inside the block (they inherit this process's)."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _await_ready(server: ServerProcess) -> float:
    """Poll `GET /api/v1/ready` until it answers 200; the seconds it took."""
    start = time.monotonic()
    while time.monotonic() - start < READY_TIMEOUT:
        conn = http.client.HTTPConnection(server.origin.host, server.origin.port, timeout=30)
        try:
            conn.request("GET", "/api/v1/ready")
            response = conn.getresponse()
            response.read()
            if response.status == 200:
                return time.monotonic() - start
        except OSError:
            pass
        finally:
            conn.close()
        time.sleep(0.1)
    raise RuntimeError(f"{server.name} was not ready within {READY_TIMEOUT:.0f} s")


def idle(root: Path, mode: str, *, settle: float, window: float, logs: Path) -> dict[str, Any]:
    """Start a server on `root` in `mode`, wait until it is ready and settled, and measure an idle window."""
    with (
        _environment(SVC_WATCH=mode, SVC_NO_COMMIT="1"),
        running_server(f"svc-{root.name}-{mode}", svc_command(root), log_dir=logs) as server,
    ):
        ready = _await_ready(server)
        time.sleep(settle)
        before, start = cpu_seconds(server.pid), time.monotonic()
        time.sleep(window)
        after, wall = cpu_seconds(server.pid), time.monotonic() - start
        log = server.log.read_text(encoding="utf-8", errors="replace")
    if before is None or after is None:
        raise RuntimeError("the CPU time of a process is read from /proc (Linux only)")
    ran = "poll" if POLL_LINE in log else "notify"
    full = re.search(r"every file every (\d+) s", log)
    return {
        "mode": mode,
        "mode_logged": ran,
        "full_stamp_every_s": int(full.group(1)) if full else None,
        "ready_s": round(ready, 2),
        "idle_s": round(wall, 2),
        "cpu_s": round(after - before, 3),
        "percent_of_one_core": round(100 * (after - before) / wall, 3),
    }


def _stamp_ms(root: Path) -> float:
    repo = Repository.discover(root)
    repository_stamp(repo)
    start = time.process_time()
    for _ in range(3):
        repository_stamp(repo)
    return round((time.process_time() - start) / 3 * 1000, 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="5 s idle per server, and no result file")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    settle, window = (1.0, 5.0) if args.quick else (3.0, 20.0)
    result: dict[str, Any] = {
        "when": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "svc": __version__,
        "python": platform.python_version(),
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs",
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "idle_window_s": window,
        "target_percent_of_one_core": TARGET_PERCENT,
        "plans": {},
    }
    with tempfile.TemporaryDirectory(prefix="svc-bench-idle-") as tmp:
        for milestones, issues in PLANS:
            root = _checkout(Path(tmp) / f"plan-{issues}", milestones, issues)
            print(f"bench: plan of {milestones} milestones × {issues:,} issues written", file=sys.stderr)
            plan: dict[str, Any] = {"milestones": milestones, "issues": issues, "stamp_cpu_ms": _stamp_ms(root)}
            for mode in MODES:
                print(f"bench: {issues:,} issues, {mode}: {window:.0f} s idle", file=sys.stderr)
                plan[mode] = idle(root, mode, settle=settle, window=window, logs=Path(tmp))
            result["plans"][str(issues)] = plan
    result["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    notify = [p["notify"]["percent_of_one_core"] for p in result["plans"].values()]
    result["met"] = max(notify) <= TARGET_PERCENT
    text = json.dumps(result, indent=2)
    print(text)
    if not args.quick:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
