"""MCP benchmark: `tools/call` latency of svc against the SDK's own `MCPServer`, over stdio and over HTTP.

    .venv/bin/python bench/bench_mcp.py                 # 2000 calls per server and transport
    .venv/bin/python bench/bench_mcp.py --requests 300  # a quicker run

One run, all on 127.0.0.1: copy this repository's `.ai/` into a scratch Git checkout (so no server already
serving the checkout interferes), start `svc mcp --port 0` there through the SDK's stdio client (which also
binds its HTTP server and `/mcp`), and ask it once for the case, a cached query (`svc_projections`,
`capabilities.projections`, cache policy `process`). Start the baseline (`bench_mcp_baseline.py`): the SDK's
`MCPServer` with a tool of the same name and arguments answering that recorded answer, once over stdio and once
over Streamable HTTP (JSON responses, like svc's `/mcp`). Then, per transport, a warm-up and sequential calls
on one handshake-era session per server, svc and baseline taking turns call by call. The client is the SDK's
`ClientSession` for both (`send_request`, so no client-side output validation is timed). Prints p50/p99 per
server and the ratio svc/baseline, and writes `bench/results/mcp.json`. Target: ratio ≤ 1.0.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import mcp_types as types
import trio
from mcp import Client
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "results" / "mcp.json"
SERVING = re.compile(r"serving (http://127\.0\.0\.1:[0-9]+)")
TOOL = "svc_projections"
ARGUMENTS: dict[str, Any] = {"module": "mcp"}
TARGET_RATIO = 1.0
START_SECONDS = 60.0


@dataclass(frozen=True, slots=True)
class Latency:
    """Summary of one server's calls, in milliseconds."""

    calls: int
    p50_ms: float
    p99_ms: float
    mean_ms: float
    min_ms: float
    max_ms: float

    @classmethod
    def of(cls, samples: Sequence[float]) -> Latency:
        ordered = sorted(samples)
        return cls(
            calls=len(ordered),
            p50_ms=percentile(ordered, 50),
            p99_ms=percentile(ordered, 99),
            mean_ms=math.fsum(ordered) / len(ordered),
            min_ms=ordered[0],
            max_ms=ordered[-1],
        )


@dataclass(frozen=True, slots=True)
class Comparison:
    """svc and the baseline on one transport."""

    transport: str
    svc: Latency
    baseline: Latency

    @property
    def ratio_p50(self) -> float:
        return self.svc.p50_ms / self.baseline.p50_ms

    @property
    def ratio_p99(self) -> float:
        return self.svc.p99_ms / self.baseline.p99_ms


def percentile(ordered: Sequence[float], pct: float) -> float:
    """The `pct` percentile of sorted samples, interpolated between closest ranks."""
    rank = (len(ordered) - 1) * pct / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def scratch_checkout(base: Path) -> Path:
    """A Git checkout carrying a copy of this repository's `.ai/` layer (its local state left out)."""
    root = base / "checkout"
    root.mkdir()
    shutil.copytree(ROOT / ".ai", root / ".ai", ignore=shutil.ignore_patterns("local"))
    for argv in (
        ["git", "init", "-q", "-b", "main"],
        ["git", "add", "-A"],
        ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "commit", "-q", "-m", "bench"],
    ):
        subprocess.run(argv, cwd=root, check=True, capture_output=True)
    return root


def svc_script() -> str:
    script = Path(sys.executable).parent / "svc"
    return str(script)


async def wait_for_url(log: Path) -> str:
    """The URL a process logged to `log`, polled every 50 ms (at most START_SECONDS)."""
    with trio.fail_after(START_SECONDS):
        while True:
            text = await trio.Path(log).read_text(encoding="utf-8", errors="replace")
            match = SERVING.search(text)
            if match is not None:
                return match[1]
            await trio.sleep(0.05)


@asynccontextmanager
async def stdio_session(command: str, args: list[str], log: Path) -> AsyncIterator[ClientSession]:
    """An SDK client session (handshake era) on a process speaking MCP on its stdio."""
    params = StdioServerParameters(command=command, args=args, env=dict(os.environ))
    with log.open("a", encoding="utf-8") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode="legacy", cache=None) as client:
            yield client.session


@asynccontextmanager
async def http_session(url: str) -> AsyncIterator[ClientSession]:
    """An SDK client session (handshake era) on `url`/mcp."""
    async with Client(url + "/mcp", mode="legacy", cache=None) as client:
        yield client.session


async def call(session: ClientSession) -> types.CallToolResult:
    request = types.CallToolRequest(params=types.CallToolRequestParams(name=TOOL, arguments=ARGUMENTS))
    result: types.CallToolResult = await session.send_request(request, types.CallToolResult)
    return result


async def measure(
    svc: ClientSession, baseline: ClientSession, *, warmup: int, requests: int
) -> tuple[Latency, Latency]:
    """Sequential calls, svc and baseline taking turns; (svc, baseline) latencies."""
    for _ in range(warmup):
        await call(svc)
        await call(baseline)
    samples: dict[str, list[float]] = {"svc": [], "baseline": []}
    clock = time.perf_counter_ns
    for _ in range(requests):
        for name, session in (("svc", svc), ("baseline", baseline)):
            started = clock()
            await call(session)
            samples[name].append((clock() - started) / 1e6)
    return Latency.of(samples["svc"]), Latency.of(samples["baseline"])


def check_equivalent(svc: types.CallToolResult, baseline: types.CallToolResult) -> None:
    """Both servers answer the same structured content, successfully."""
    if svc.is_error or baseline.is_error or svc.structured_content != baseline.structured_content:
        raise SystemExit("bench_mcp: the baseline does not answer what svc answers; the comparison is void")


def report(results: list[Comparison]) -> str:
    lines = [
        f"tools/call {TOOL} {json.dumps(ARGUMENTS)} (a cached query), sequential calls on one session",
        "",
        f"{'transport':<10} {'server':<9} {'p50 ms':>8} {'p99 ms':>8} {'mean ms':>8}",
    ]
    for r in results:
        for name, lat in (("svc", r.svc), ("baseline", r.baseline)):
            lines.append(f"{r.transport:<10} {name:<9} {lat.p50_ms:>8.3f} {lat.p99_ms:>8.3f} {lat.mean_ms:>8.3f}")
    lines.append("")
    for r in results:
        verdict = "met" if r.ratio_p50 <= TARGET_RATIO else "MISSED"
        lines.append(
            f"{r.transport}: svc/baseline p50 {r.ratio_p50:.2f}, p99 {r.ratio_p99:.2f} "
            f"(target p50 ≤ {TARGET_RATIO:.1f}: {verdict})"
        )
    return "\n".join(lines)


async def run(args: argparse.Namespace) -> list[Comparison]:
    with tempfile.TemporaryDirectory(prefix="svc-bench-mcp-") as scratch:
        base = Path(scratch)
        repo = args.repo or scratch_checkout(base)
        async with AsyncExitStack() as stack:
            svc_log = base / "svc.log"
            print("starting svc mcp ...", file=sys.stderr)
            svc = await stack.enter_async_context(
                stdio_session(svc_script(), ["--repo", str(repo), "mcp", "--port", "0"], svc_log)
            )
            svc_url = await wait_for_url(svc_log)
            answer = await call(svc)
            if answer.is_error or not isinstance(answer.structured_content, dict):
                raise SystemExit(f"bench_mcp: svc did not answer the case: {answer.content}")
            recorded = base / "answer.json"
            recorded.write_text(json.dumps(answer.structured_content), encoding="utf-8")
            baseline_args = [str(BENCH / "bench_mcp_baseline.py"), "--answer", str(recorded), "--name", TOOL]
            print("starting the MCPServer baseline (stdio and HTTP) ...", file=sys.stderr)
            baseline = await stack.enter_async_context(
                stdio_session(sys.executable, [*baseline_args, "--transport", "stdio"], base / "baseline-stdio.log")
            )
            http_log = base / "baseline-http.log"
            process = await trio.to_thread.run_sync(
                _start, [sys.executable, *baseline_args, "--transport", "http"], http_log
            )
            stack.callback(_stop, process)
            baseline_url = await wait_for_url(http_log)
            svc_http = await stack.enter_async_context(http_session(svc_url))
            baseline_http = await stack.enter_async_context(http_session(baseline_url))
            check_equivalent(await call(svc), await call(baseline))
            check_equivalent(await call(svc_http), await call(baseline_http))
            results = []
            for transport, pair in (("stdio", (svc, baseline)), ("http", (svc_http, baseline_http))):
                print(f"measuring {transport}: {args.requests} calls per server ...", file=sys.stderr)
                ours, theirs = await measure(*pair, warmup=args.warmup, requests=args.requests)
                results.append(Comparison(transport, ours, theirs))
            return results


def _start(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("w", encoding="utf-8") as errlog:
        return subprocess.Popen(argv, stderr=errlog, stdout=subprocess.DEVNULL)


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--requests", type=int, default=2000, help="measured calls per server and transport")
    parser.add_argument("--warmup", type=int, default=200, help="calls per server before measuring")
    parser.add_argument("--repo", type=Path, default=None, help="serve this checkout instead of a scratch copy")
    parser.add_argument("--output", type=Path, default=RESULTS, help="where to write the JSON figures")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)
    results = trio.run(run, args)
    print(report(results))
    document = {
        "schema": "svc/bench-mcp/v1",
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "case": {"tool": TOOL, "arguments": ARGUMENTS, "capability": "capabilities.projections", "cache": "process"},
        "settings": {"requests": args.requests, "warmup": args.warmup, "era": "2025-11-25 (handshake)"},
        "target": {"ratio_p50_at_most": TARGET_RATIO},
        "results": [
            {**asdict(r), "ratio_p50": r.ratio_p50, "ratio_p99": r.ratio_p99, "met": r.ratio_p50 <= TARGET_RATIO}
            for r in results
        ],
        "versions": {
            "python": platform.python_version(),
            "mcp": metadata.version("mcp"),
            "hypercorn": metadata.version("hypercorn"),
            "svc": metadata.version("svc"),
        },
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {args.output}", file=sys.stderr)
    if args.check and not all(r.ratio_p50 <= TARGET_RATIO for r in results):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
