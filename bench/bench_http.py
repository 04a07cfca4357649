"""HTTP benchmark of svc against a floor: a bare hypercorn-trio app that answers the same bytes.

    .venv/bin/python bench/bench_http.py            # full run: 5–10 s per case, plus a minute of load
    .venv/bin/python bench/bench_http.py --quick    # smoke run: under a minute

One run: start `svc serve --port 0` on loopback; record what svc answers every benchmark case (every example
of every HTTP capability whose benchmark is not waived, read from the registry); start the floor on those
recordings; measure each case's latency (p50/p99) on both; run timed throughput loads of `GET /api/v1/live`
and `GET /api/v1/capabilities`, alternating svc and floor; print the table and the targets; write
`bench/results/latest.json`. See bench/README.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import fnmatch
import json
import os
import platform
import signal
import sys
import tempfile
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass, replace
from importlib import metadata
from pathlib import Path
from types import FrameType
from typing import Any, Literal

import bench_counted
from bench_cases import Case, cases_from_registry
from bench_floor import SERVER_HEADERS, Recorded, write_responses
from bench_load import LoadClient, choose_client, run_load
from bench_measure import fetch, measure_latency
from bench_procs import ServerProcess, cpu_seconds, floor_command, running_server, svc_command
from bench_report import (
    THROUGHPUT_ROUTES,
    CaseResult,
    RunResult,
    ServerRun,
    ThroughputResult,
    format_report,
    write_json,
)
from bench_wire import Origin
from svc import __version__ as svc_version
from svc.capabilities import builtin_registry

__all__ = ["Settings", "main", "run_benchmark"]

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
DEFAULT_OUTPUT = BENCH_DIR / "results" / "latest.json"
#: The route whose answer names the commit svc runs.
LIVE_ROUTE = "GET /api/v1/live"


@dataclass(frozen=True, slots=True)
class Settings:
    """How much to measure, with what client, over which repository."""

    mode: Literal["full", "quick"]
    warmup: int
    requests: int
    duration: int
    rounds: int
    connections: int
    client: Literal["auto", "wrk", "python"]
    repo: Path
    patterns: tuple[str, ...] = ()
    #: Seconds of the counted load per server and route (`--instructions`); 0: instructions are not counted.
    counted_seconds: int = 0

    def selects(self, case: Case) -> bool:
        """Whether the latency of `case` is measured (every case unless `--case` patterns narrow it)."""
        return not self.patterns or any(fnmatch.fnmatchcase(case.name, p) for p in self.patterns)


#: mode -> (warm-up requests, measured requests, seconds per throughput run, rounds per server)
PRESETS: dict[str, tuple[int, int, int, int]] = {"full": (200, 2000, 5, 3), "quick": (20, 200, 1, 2)}
#: mode -> seconds of the load whose instructions are counted (`--instructions`), per server and route.
COUNTED_SECONDS = {"full": 20, "quick": 3}


def parse_args(argv: Sequence[str] | None) -> tuple[Settings, Path, bool]:
    """The settings, the output path, and whether a missed target fails the run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few requests and 1 s loads: a smoke run")
    parser.add_argument("--warmup", type=int, help="unmeasured requests per case before measuring")
    parser.add_argument("--requests", type=int, help="measured sequential requests per case and server")
    parser.add_argument("--duration", type=int, help="seconds of each throughput run (whole seconds)")
    parser.add_argument("--rounds", type=int, help="throughput runs per server and route (alternating)")
    parser.add_argument("--connections", type=int, default=8, help="concurrent connections of the load")
    parser.add_argument("--client", choices=("auto", "wrk", "python"), default="auto", help="load client")
    parser.add_argument("--repo", type=Path, default=REPO_DIR, help="repository svc serves")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="where to write the JSON")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="also count instructions per request under callgrind (needs valgrind) and judge throughput on them",
    )
    parser.add_argument(
        "--case",
        dest="patterns",
        action="append",
        default=[],
        metavar="GLOB",
        help="measure latency only for cases whose name (capability/example) matches; repeatable",
    )
    args = parser.parse_args(argv)
    mode: Literal["full", "quick"] = "quick" if args.quick else "full"
    warmup, requests, duration, rounds = PRESETS[mode]
    settings = Settings(
        mode=mode,
        warmup=_at_least(0, args.warmup, warmup, "--warmup"),
        requests=_at_least(1, args.requests, requests, "--requests"),
        duration=_at_least(1, args.duration, duration, "--duration"),
        rounds=_at_least(1, args.rounds, rounds, "--rounds"),
        connections=_at_least(1, args.connections, 8, "--connections"),
        client=args.client,
        repo=args.repo.resolve(),
        patterns=tuple(args.patterns),
        counted_seconds=COUNTED_SECONDS[mode] if args.instructions else 0,
    )
    if args.instructions and not bench_counted.available():
        raise SystemExit("--instructions needs valgrind and callgrind_control (apt-get install -y valgrind)")
    return settings, args.output, args.check


def _at_least(low: int, given: int | None, default: int, flag: str) -> int:
    value = default if given is None else given
    if value < low:
        raise SystemExit(f"{flag} must be at least {low}")
    return value


def progress(message: str) -> None:
    """A progress line on stderr (the report itself goes to stdout)."""
    print(f"bench: {message}", file=sys.stderr, flush=True)


def record(origin: Origin, cases: Sequence[Case]) -> dict[str, Recorded]:
    """What svc answers each case (status, headers but Date, body), by case name.

    A case answering another status than its example documents is warned about (and listed in the report).
    """
    recorded: dict[str, Recorded] = {}
    for case in cases:
        response = fetch(origin, case)
        headers = tuple((k, v) for k, v in response.headers if k not in SERVER_HEADERS)
        recording = Recorded(
            method=case.method,
            path=case.path,
            query=case.query,
            status=response.status,
            headers=headers,
            body=response.body,
        )
        recorded[case.name] = recording
        if response.status != case.status:
            progress(
                f"warning: {case.name} answered {response.status}, not its documented {case.status}: "
                f"{response.body[:200]!r}"
            )
    return recorded


def check_parity(origin: Origin, cases: Sequence[Case], recorded: dict[str, Recorded]) -> None:
    """Make sure the floor answers every case with svc's status and body bytes.

    Raises:
        RuntimeError: the floor answers a case differently (a harness bug: the comparison would be unfair).
    """
    for case in cases:
        expected = recorded[case.name]
        got = fetch(origin, case)
        if (got.status, got.body) != (expected.status, expected.body):
            raise RuntimeError(f"the floor answers {case.target} with {got.status}, not svc's bytes")


def measure_cases(
    svc: Origin,
    floor: Origin,
    cases: Sequence[Case],
    recorded: dict[str, Recorded],
    settings: Settings,
) -> list[CaseResult]:
    """Latency of every case on svc and on the floor (requests alternate between the two)."""
    results = []
    for number, case in enumerate(cases, 1):
        progress(f"latency {number}/{len(cases)}: {case.name} ({case.method} {case.target})")
        recording = recorded[case.name]
        status = recording.status
        on_svc, on_floor = measure_latency(
            (svc, floor), case, warmup=settings.warmup, requests=settings.requests, status=status
        )
        results.append(CaseResult(case=case, status=status, size=len(recording.body), svc=on_svc, floor=on_floor))
    return results


def throughput_case(cases: Sequence[Case], route: str) -> Case:
    """The case a throughput route is loaded with: its example without parameters, else its first.

    Raises:
        LookupError: no case has this route (the registry no longer declares it).
    """
    matching = [c for c in cases if c.route == route]
    if not matching:
        raise LookupError(f"no benchmark case is {route}")
    return next((c for c in matching if not c.query), matching[0])


def measure_throughput(
    client: LoadClient, servers: dict[str, ServerProcess], case: Case, s: Settings, script_dir: Path
) -> ThroughputResult:
    """Alternate timed runs of `case` on svc and on the floor, `s.rounds` of each."""
    runs: dict[str, list[ServerRun]] = {name: [] for name in servers}
    for round_number in range(1, s.rounds + 1):
        for name, server in servers.items():
            run = timed_run(client, server, case, s.duration, script_dir)
            runs[name].append(run)
            progress(f"throughput {case.route} round {round_number}/{s.rounds} {name}: {run.load.rps:,.0f} req/s")
    return ThroughputResult(route=case.route, target=case.target, svc=tuple(runs["svc"]), floor=tuple(runs["floor"]))


def count_route(client: LoadClient, result: ThroughputResult, case: Case, s: Settings, work: Path) -> ThroughputResult:
    """`result` with the instructions per request of svc and of the floor for `case`, each server under callgrind.

    The servers run one after the other (and after the timed runs, whose svc must have stopped: svc serves a
    repository once), so that neither shares the machine with the other.
    """
    commands = {"svc": svc_command(s.repo), "floor": floor_command(work / "responses.json")}
    counted: dict[str, bench_counted.Counted] = {}
    for name, argv in commands.items():
        command = bench_counted.counting_command(argv, work, name)
        start = bench_counted.START_TIMEOUT
        with running_server(f"{name}-callgrind", command, log_dir=work, start_timeout=start) as server:
            progress(f"instructions {case.route} {name}: counting over {s.counted_seconds} s of load")
            counted[name] = bench_counted.count_instructions(
                client, server, case.target, duration=s.counted_seconds, out_dir=work, name=name
            )
        progress(f"instructions {case.route} {name}: {counted[name].per_request / 1e6:.3f} M per request")
    return replace(result, svc_counted=counted["svc"], floor_counted=counted["floor"])


def timed_run(client: LoadClient, server: ServerProcess, case: Case, duration: int, script_dir: Path) -> ServerRun:
    """One load run on `server`, with the CPU time the server process used meanwhile."""
    before = cpu_seconds(server.pid)
    load = run_load(client, server.origin, case.target, duration=duration, script_dir=script_dir)
    after = cpu_seconds(server.pid)
    used = after - before if before is not None and after is not None else None
    return ServerRun(load=load, cpu_seconds=used)


def collect_meta(live_body: bytes) -> dict[str, Any]:
    """Date, versions and machine facts, so that two runs can be compared fairly."""
    try:
        commit = json.loads(live_body).get("commit")
    except (ValueError, AttributeError):
        commit = None
    return {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "svc_version": svc_version,
        "svc_commit": commit,
        "python": platform.python_version(),
        "hypercorn": metadata.version("hypercorn"),
        "platform": platform.platform(terse=True),
        "cpus": os.cpu_count(),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
    }


def run_benchmark(settings: Settings) -> RunResult:
    """Start both servers, measure everything, stop both servers (also on error or Ctrl-C)."""
    cases = cases_from_registry(builtin_registry())
    client = choose_client(settings.client, settings.connections)
    loads = [throughput_case(cases, route) for route in THROUGHPUT_ROUTES]
    progress(f"{len(cases)} cases from the registry; load client {client.describe()}")
    with tempfile.TemporaryDirectory(prefix="svc-bench-") as tmp, ExitStack() as stack:
        work = Path(tmp)
        svc: ServerProcess = stack.enter_context(running_server("svc", svc_command(settings.repo), log_dir=work))
        progress(f"svc serving {svc.origin.url} (pid {svc.pid})")
        recorded = record(svc.origin, cases)
        write_responses(work / "responses.json", recorded.values())
        floor = stack.enter_context(running_server("floor", floor_command(work / "responses.json"), log_dir=work))
        progress(f"floor serving {floor.origin.url} (pid {floor.pid})")
        check_parity(floor.origin, cases, recorded)
        meta = collect_meta(recorded[throughput_case(cases, LIVE_ROUTE).name].body)
        measured = [case for case in cases if settings.selects(case)]
        results = measure_cases(svc.origin, floor.origin, measured, recorded, settings)
        servers = {"svc": svc, "floor": floor}
        throughput = [measure_throughput(client, servers, case, settings, work) for case in loads]
        stack.close()  # both servers stop before any is counted: svc serves a repository once
        if settings.counted_seconds:
            pairs = zip(throughput, loads, strict=True)
            throughput = [count_route(client, result, case, settings, work) for result, case in pairs]
    details = {
        **asdict(settings),
        "repo": str(settings.repo),
        "client": client.describe(),
        "client_name": client.name,
    }
    meta["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    return RunResult(meta=meta, settings=details, cases=tuple(results), throughput=tuple(throughput))


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print the report, write the JSON; the exit status follows `--check`."""
    settings, output, check = parse_args(argv)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started with SIGINT ignored
    signal.signal(signal.SIGTERM, _terminate)
    try:
        run = run_benchmark(settings)
    except KeyboardInterrupt:
        progress("interrupted; both servers are stopped")
        return 130
    print(format_report(run))
    write_json(run, output)
    progress(f"wrote {output}")
    return 1 if check and not all(t.met for t in run.targets) else 0


if __name__ == "__main__":
    sys.exit(main())
