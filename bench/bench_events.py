"""Benchmark of `plan.changed` on `/events`: the time from an issue file's write to the frame on the channel.

    .venv/bin/python bench/bench_events.py            # full run: 1,000 and 10,000 issues, 40 writes each
    .venv/bin/python bench/bench_events.py --quick    # smoke run: 1,000 issues, 10 writes

One run, per plan size:

1. writes the synthetic plan of `bench/bench_plan.py` (20 milestones × 1,000 issues, 200 × 10,000; seed 7) into
   a temporary Git checkout;
2. serves it in this process as `svc serve` does (the service with its repository watcher, HTTP on 127.0.0.1
   port 0) and opens `/events?topic=plan` with trio-websocket;
3. picks two READY issues A and B, then, `--writes` times: rewrites A's record by hand (adding `depends_on: [B]`,
   then restoring the original bytes, alternately: A moves READY → BLOCKED → READY), and measures from just
   before the write to the `plan.changed` frame naming A; a pause of `PAUSE_SECONDS` separates two writes, so
   each is its own watcher round;
4. prints the median, 90th percentile and worst, and the watcher's mode (`notify` or `poll`).

The figure includes the watcher's batching of notifications (a batch ends `STEP_MS` after the last change), the
stamp of the checkout, the warm-up of the resident layer state, the plan's derivation (`read_snapshot`, which
reparses only the record that changed) and the diff. Client and server share one trio loop here.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec
import trio
import trio_websocket

from bench_plan import generate
from svc.api import serve_http
from svc.host._service import open_service
from svc.layer import Repository, dump_yaml, load_yaml
from svc.plan import read_snapshot
from svc.runtime import Executor

#: Between two writes: longer than the watcher's least time between rounds, so each write is one round.
PAUSE_SECONDS = 0.4
#: The bound of one wait for a frame.
FRAME_SECONDS = 60.0


def _checkout(root: Path, milestones: int, issues: int) -> Path:
    generate(root, milestones, issues)
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.email=b@e", "-c", "user.name=bench", "commit", "-qm", "plan"],
    ):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
    return root


def _pair(root: Path) -> tuple[str, str]:
    ready = [i.id for i in read_snapshot(Repository.discover(root)).plan.issues if i.status == "READY"]
    if len(ready) < 2:
        raise SystemExit(f"the synthetic plan has {len(ready)} READY issues; two are needed")
    return ready[0], ready[1]


async def _frame(ws: trio_websocket.WebSocketConnection) -> dict[str, Any]:
    with trio.fail_after(FRAME_SECONDS):
        decoded: dict[str, Any] = msgspec.json.decode(await ws.get_message())
    return decoded


async def _measure(root: Path, writes: int) -> dict[str, Any]:
    moved, blocker = _pair(root)
    record = root / ".ai/repo/project/issues" / f"{moved}.yaml"
    original = record.read_bytes()
    fields = load_yaml(original)
    fields["depends_on"] = [*fields.get("depends_on", []), blocker]
    blocked = dump_yaml(fields).encode()
    samples: list[float] = []
    async with (
        open_service(Repository.discover(root), surface="http", watch=True) as executor,
        trio.open_nursery() as nursery,
    ):
        shutdown = trio.Event()
        url: str = await nursery.start(
            functools.partial(serve_http, executor, port=0, shutdown=shutdown, announce=False)
        )
        async with trio_websocket.open_websocket_url(url.replace("http://", "ws://") + "/events?topic=plan") as ws:
            ready = await _frame(ws)
            assert ready["type"] == "stream.ready", ready
            for n in range(writes):
                await trio.sleep(PAUSE_SECONDS)
                started = time.perf_counter()
                record.write_bytes(blocked if n % 2 == 0 else original)
                while True:
                    frame = await _frame(ws)
                    if frame["type"] == "plan.changed" and any(i["id"] == moved for i in frame["data"]["issues"]):
                        break
                samples.append((time.perf_counter() - started) * 1000)
        record.write_bytes(original)
        mode = _mode(executor)
        shutdown.set()
    ordered = sorted(samples)
    return {
        "writes": len(samples),
        "mode": mode,
        "p50_ms": round(statistics.median(ordered), 1),
        "p90_ms": round(ordered[max(0, int(len(ordered) * 0.9) - 1)], 1),
        "max_ms": round(ordered[-1], 1),
    }


def _mode(executor: Executor) -> str:
    return executor.runtime.generation.running or "none"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 issues and 10 writes only")
    parser.add_argument("--writes", type=int, default=None, help="writes per plan size (default 40, quick 10)")
    parser.add_argument("--output", type=Path, default=None, help="also write the figures as JSON here")
    args = parser.parse_args()
    writes = args.writes or (10 if args.quick else 40)
    sizes = [(20, 1_000)] if args.quick else [(20, 1_000), (200, 10_000)]
    results: list[dict[str, Any]] = []
    for milestones, issues in sizes:
        with tempfile.TemporaryDirectory(prefix="svc-bench-events-") as tmp:
            root = _checkout(Path(tmp) / "checkout", milestones, issues)
            print(f"measuring {issues} issues, {writes} writes …", file=sys.stderr)
            figures = trio.run(_measure, root, writes)
            results.append({"issues": issues, **figures})
    print("plan.changed latency, file write → frame on /events?topic=plan")
    print(f"{'issues':>8} {'writes':>7} {'mode':>7} {'p50 ms':>8} {'p90 ms':>8} {'max ms':>8}")
    for r in results:
        print(f"{r['issues']:>8} {r['writes']:>7} {r['mode']:>7} {r['p50_ms']:>8} {r['p90_ms']:>8} {r['max_ms']:>8}")
    if args.output is not None:
        args.output.write_text(json.dumps({"plan_changed": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
