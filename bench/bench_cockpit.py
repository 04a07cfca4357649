"""Benchmark of the cockpit's pages in a real headless Chromium on the 10,000-issue synthetic plan.

    .venv/bin/python bench/bench_cockpit.py            # full run (about a minute)
    .venv/bin/python bench/bench_cockpit.py --quick    # smoke run

One run:

1. writes the synthetic plan of `bench_plan.py` (200 milestones × 10,000 issues, seed 7) in a temporary
   checkout, with this repository's `.ai/` layer's other sections beside it, and starts
   `svc --repo CHECKOUT serve --port 0` on 127.0.0.1;
2. opens each page once (the first view: the plan derived and its cache filled), then loads it `--loads` times
   (5), each in a fresh browser context (nothing cached by the browser), and reads the time to first paint from
   the page's own Paint Timing entries (`first-contentful-paint`, else `first-paint`); the median is compared
   with the target (1 s), beside the load event and the HTML's size;
3. measures the server's CPU per page view: utime + stime of the server process (`/proc/<pid>/stat`) before
   and after `--views` views of each page (the HTML, its stylesheets and scripts: what a browser asks), divided
   by the views;

then prints the figures beside the targets and writes `bench/results/cockpit.json`. Chromium is Debian's
(`/usr/bin/chromium`, or `SVC_CHROMIUM`), driven by Playwright's Python API; nothing is downloaded.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, sync_playwright

import bench_procs
from bench_plan import generate
from bench_procs import cpu_seconds, running_server, svc_command
from svc import __version__

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
OUTPUT = BENCH_DIR / "results" / "cockpit.json"
CHROMIUM = Path(os.environ.get("SVC_CHROMIUM") or "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"]
#: The pages measured: the registry and the plan board.
PAGES = ("/cockpit", "/cockpit/plan")
TARGETS = {"first_paint_p50_ms": 1000.0}
#: Paint Timing of the page: first-contentful-paint, else first-paint, else None (milliseconds from navigation).
PAINT = """() => {
  const entry = performance.getEntriesByName("first-contentful-paint")[0]
    || performance.getEntriesByName("first-paint")[0];
  const nav = performance.getEntriesByType("navigation")[0];
  return {
    paint: entry ? entry.startTime : null,
    load: nav ? nav.loadEventEnd : null,
    response_end: nav ? nav.responseEnd : null,
    html_bytes: nav ? nav.transferSize : null,
  };
}"""
#: How long one page may take to load in the bench, in milliseconds.
LOAD_MS = 120_000
#: How long `svc serve` may take to log its URL: it indexes the 10,000 records' layer first.
START_SECONDS = 300.0


def checkout(root: Path) -> Path:
    """A checkout whose plan is the 10,000-issue synthetic one, the rest of this repository's layer beside it."""
    generate(root, 200, 10_000)
    layer = REPO_DIR / ".ai"
    for entry in layer.iterdir():
        if entry.name in ("local", "repo"):
            continue
        copy = shutil.copytree if entry.is_dir() else shutil.copy2
        copy(entry, root / ".ai" / entry.name)
    for entry in (layer / "repo").iterdir():
        if entry.name != "project":
            (shutil.copytree if entry.is_dir() else shutil.copy2)(entry, root / ".ai" / "repo" / entry.name)
    return root


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "n": len(ordered),
        "min_ms": round(ordered[0], 1),
        "p50_ms": round(statistics.median(ordered), 1),
        "max_ms": round(ordered[-1], 1),
    }


def view(browser: Browser, url: str) -> dict[str, Any]:
    """Load `url` in a fresh context (empty cache) until its load event; its paint and navigation timings."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        response = page.goto(url, wait_until="load", timeout=LOAD_MS)
        if response is None or response.status != 200:
            raise RuntimeError(f"{url} answered {response.status if response else 'nothing'}")
        # The paint entry is recorded at the first frame after the content; wait for one frame at most.
        page.wait_for_function(
            "() => performance.getEntriesByType('paint').length > 0 || document.visibilityState !== 'visible'",
            timeout=10_000,
        )
        timings: dict[str, Any] = page.evaluate(PAINT)
        return timings
    finally:
        context.close()


def measure(browser: Browser, base: str, pid: int, loads: int, views: int) -> dict[str, Any]:
    """First paint (median of `loads`) and the server's CPU per view (over `views`) of every page."""
    result: dict[str, Any] = {}
    for path in PAGES:
        url = base + path
        first = view(browser, url)
        samples = [view(browser, url) for _ in range(loads)]
        paints = [s["paint"] for s in samples if s["paint"] is not None]
        if len(paints) != len(samples):
            raise RuntimeError(f"{path}: the browser recorded no paint on {len(samples) - len(paints)} load(s)")
        before = cpu_seconds(pid)
        for _ in range(views):
            view(browser, url)
        after = cpu_seconds(pid)
        cpu = None if before is None or after is None else round((after - before) * 1000 / views, 1)
        result[path] = {
            "first_view": {k: round(v, 1) if isinstance(v, float) else v for k, v in first.items()},
            "first_paint": _summary(paints),
            "load_event": _summary([s["load"] for s in samples]),
            "html_bytes": samples[-1]["html_bytes"],
            "server_cpu_ms_per_view": cpu,
            "views": views,
        }
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer views")
    parser.add_argument("--loads", type=int, default=5, help="loads per page for the first-paint median")
    parser.add_argument("--views", type=int, default=20, help="page views per page for the server's CPU")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    views = 5 if args.quick else args.views
    if not CHROMIUM.is_file():
        print(f"bench: no Chromium at {CHROMIUM}: apt-get install chromium (or set SVC_CHROMIUM)", file=sys.stderr)
        return 2
    result: dict[str, Any] = {
        "when": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "svc": __version__,
        "python": platform.python_version(),
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs",
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "targets": TARGETS,
        "plan": "synthetic: 200 milestones × 10,000 issues",
    }
    bench_procs.START_TIMEOUT = max(bench_procs.START_TIMEOUT, START_SECONDS)
    with tempfile.TemporaryDirectory(prefix="svc-bench-cockpit-") as tmp:
        root = checkout(Path(tmp) / "big")
        print("bench: synthetic plan of 200 milestones × 10,000 issues written", file=sys.stderr)
        started = time.perf_counter()
        with (
            running_server("svc", svc_command(root), log_dir=Path(tmp)) as server,
            sync_playwright() as driver,
        ):
            browser = driver.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, timeout=60_000)
            result["chromium"] = browser.version
            result["server_start_s"] = round(time.perf_counter() - started, 1)
            print(f"bench: svc serve up after {result['server_start_s']} s", file=sys.stderr)
            try:
                result["pages"] = measure(browser, server.origin.url, server.pid, args.loads, views)
            finally:
                browser.close()
    result["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    result["met"] = {
        path: figures["first_paint"]["p50_ms"] <= TARGETS["first_paint_p50_ms"]
        for path, figures in result["pages"].items()
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    _report(result)
    return 0


def _report(r: dict[str, Any]) -> None:
    lines = [
        f"cockpit benchmark — svc {r['svc']}, Python {r['python']}, Chromium {r['chromium']}, {r['machine']}, "
        f"load average {r['load_average_at_start'][0]} at start, {r['load_average_at_end'][0]} at end",
        f"plan: {r['plan']}",
        "",
        f"{'page':<16} {'first paint p50':>16} {'target':>8} {'met':>4} {'min':>8} {'max':>8} "
        f"{'load p50':>9} {'first view':>11} {'HTML':>10} {'server CPU/view':>16}",
    ]
    target = r["targets"]["first_paint_p50_ms"]
    for path, f in r["pages"].items():
        paint = f["first_paint"]
        first = f["first_view"]["paint"]
        cpu = f["server_cpu_ms_per_view"]
        lines.append(
            f"{path:<16} {paint['p50_ms']:>13.1f} ms {target:>5.0f} ms {'yes' if r['met'][path] else 'NO':>4} "
            f"{paint['min_ms']:>5.1f} ms {paint['max_ms']:>5.1f} ms {f['load_event']['p50_ms']:>6.1f} ms "
            f"{(f'{first:.1f} ms' if first is not None else '—'):>11} {f['html_bytes'] or 0:>8,} B "
            f"{(f'{cpu:.1f} ms' if cpu is not None else '—'):>16}"
        )
    lines += [
        "",
        "first paint: Paint Timing's first-contentful-paint of a load in a fresh browser context (no cache), median "
        "of the loads; first view: the page's first load after the server started (the plan derived then);",
        "server CPU/view: the server process's utime+stime over the views (the HTML and its assets), per view.",
    ]
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
