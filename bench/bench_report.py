"""The figures of one run, the targets they are held to, the printed table and `results/latest.json`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from bench_cases import Case
from bench_counted import Counted
from bench_load import LoadResult
from bench_measure import Latency

__all__ = [
    "CaseResult",
    "RunResult",
    "ServerRun",
    "Target",
    "ThroughputResult",
    "evaluate_targets",
    "format_report",
    "to_json",
    "write_json",
]

#: Routes whose svc/floor throughput ratio is a target.
THROUGHPUT_ROUTES = ("GET /api/v1/live", "GET /api/v1/capabilities")
MIN_THROUGHPUT_RATIO = 0.9
#: The capability whose p50 latency is a target, and the bound in milliseconds.
P50_CAPABILITY = "capabilities.describe"
MAX_P50_MS = 1.0
SCHEMA = "svc-bench-http/v1"


@dataclass(frozen=True, slots=True)
class CaseResult:
    """One case: what svc answered it, and its latency on svc and on the floor."""

    case: Case
    status: int
    size: int
    svc: Latency
    floor: Latency


@dataclass(frozen=True, slots=True)
class ServerRun:
    """One timed load run on one server: what the client counted, and the CPU time the server used."""

    load: LoadResult
    cpu_seconds: float | None


@dataclass(frozen=True, slots=True)
class ThroughputResult:
    """Alternating timed runs of one route against svc and against the floor."""

    route: str
    target: str
    svc: tuple[ServerRun, ...]
    floor: tuple[ServerRun, ...]
    #: Instructions per request under callgrind (`--instructions`), or None.
    svc_counted: Counted | None = None
    floor_counted: Counted | None = None

    @property
    def svc_rps(self) -> float:
        """svc's requests per second over all its runs."""
        return _rps(self.svc)

    @property
    def floor_rps(self) -> float:
        """The floor's requests per second over all its runs."""
        return _rps(self.floor)

    @property
    def ratio(self) -> float:
        """svc / floor throughput (1.0 = as fast as a bare app returning the same bytes)."""
        return self.svc_rps / self.floor_rps if self.floor_rps else 0.0

    @property
    def svc_cpu_us(self) -> float | None:
        """Server CPU time per request of svc, in microseconds (None when it cannot be read)."""
        return _cpu_us(self.svc)

    @property
    def floor_cpu_us(self) -> float | None:
        """Server CPU time per request of the floor, in microseconds (None when it cannot be read)."""
        return _cpu_us(self.floor)

    @property
    def cpu_ratio(self) -> float | None:
        """floor / svc CPU per request: the throughput ratio a machine with a free core would show."""
        svc, floor = self.svc_cpu_us, self.floor_cpu_us
        return floor / svc if svc and floor is not None else None

    @property
    def instruction_ratio(self) -> float | None:
        """floor / svc instructions per request: the throughput ratio, counted (None when not measured)."""
        svc, floor = self.svc_counted, self.floor_counted
        if svc is None or floor is None or not svc.per_request:
            return None
        return floor.per_request / svc.per_request

    @property
    def errors(self) -> int:
        """Failed requests over every run."""
        counted = [c.errors for c in (self.svc_counted, self.floor_counted) if c is not None]
        return sum(r.load.errors for r in (*self.svc, *self.floor)) + sum(counted)


def _rps(runs: Sequence[ServerRun]) -> float:
    seconds = sum(r.load.seconds for r in runs)
    return sum(r.load.requests for r in runs) / seconds if seconds else 0.0


def _cpu_us(runs: Sequence[ServerRun]) -> float | None:
    requests = sum(r.load.requests for r in runs)
    if not requests or any(r.cpu_seconds is None for r in runs):
        return None
    return sum(r.cpu_seconds or 0.0 for r in runs) / requests * 1e6


@dataclass(frozen=True, slots=True)
class Target:
    """A target of the issue and whether this run met it."""

    name: str
    value: float
    bound: float
    compare: Literal[">=", "<="]
    unit: str

    @property
    def met(self) -> bool:
        """Whether `value` is on the right side of `bound`."""
        return self.value >= self.bound if self.compare == ">=" else self.value <= self.bound


@dataclass(frozen=True, slots=True)
class RunResult:
    """Everything one run measured, and the facts needed to compare it with another run."""

    meta: dict[str, Any]
    settings: dict[str, Any]
    cases: tuple[CaseResult, ...]
    throughput: tuple[ThroughputResult, ...]

    @property
    def targets(self) -> tuple[Target, ...]:
        """The issue's targets, evaluated on this run."""
        return evaluate_targets(self.cases, self.throughput)


def evaluate_targets(cases: Sequence[CaseResult], throughput: Sequence[ThroughputResult]) -> tuple[Target, ...]:
    """The issue's targets: svc/floor throughput ratios, and the p50 of `capabilities.describe`.

    A throughput ratio is judged on the instructions per request when they were counted (the same ratio,
    free of the machine's noise), else on the timed requests per second.
    """
    targets = [_throughput_target(t) for t in throughput]
    targets += [
        Target(name=f"{c.case.name} p50", value=c.svc.p50_ms, bound=MAX_P50_MS, compare="<=", unit="ms")
        for c in cases
        if c.case.capability == P50_CAPABILITY
    ]
    return tuple(targets)


def _throughput_target(result: ThroughputResult) -> Target:
    counted = result.instruction_ratio
    if counted is None:
        name, value = f"{result.route} throughput svc/floor", result.ratio
    else:
        name, value = f"{result.route} throughput svc/floor (instructions per request)", counted
    return Target(name=name, value=value, bound=MIN_THROUGHPUT_RATIO, compare=">=", unit="× floor")


def format_report(run: RunResult) -> str:
    """The human-readable report: the latency table, the throughput lines and the targets."""
    sections = [_header(run), _case_table(run.cases), _notes(run.cases), _throughput(run), _targets(run)]
    return "\n\n".join("\n".join(lines) for lines in sections if lines)


def _header(run: RunResult) -> list[str]:
    meta, settings = run.meta, run.settings
    return [
        f"svc {meta['svc_version']} ({meta['svc_commit'] or 'no commit'}) on {meta['platform']}, "
        f"Python {meta['python']}, hypercorn {meta['hypercorn']}, {meta['cpus']} CPUs",
        f"{meta['date']}; load average {meta['loadavg'][0]:.2f} at start, {meta['loadavg_end'][0]:.2f} at end "
        "(both servers and the load client share the machine: a busy one blurs the figures)",
        f"mode {settings['mode']}: latency {settings['warmup']} warm-up + {settings['requests']} requests "
        "per case on one keep-alive connection",
    ]


def _case_table(cases: Sequence[CaseResult]) -> list[str]:
    head = ("case", "method", "path", "status", "bytes", "p50 ms", "p99 ms", "floor p50", "floor p99")
    rows = [
        (
            c.case.name,
            c.case.method,
            c.case.target,
            str(c.status),
            str(c.size),
            f"{c.svc.p50_ms:.3f}",
            f"{c.svc.p99_ms:.3f}",
            f"{c.floor.p50_ms:.3f}",
            f"{c.floor.p99_ms:.3f}",
        )
        for c in cases
    ]
    widths = [max(len(row[i]) for row in (head, *rows)) for i in range(len(head))]
    numeric = {3, 4, 5, 6, 7, 8}

    def line(row: Sequence[str]) -> str:
        cells = (
            cell.rjust(w) if i in numeric else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        )
        return "  ".join(cells).rstrip()

    return [line(head), line(["-" * w for w in widths]), *(line(row) for row in rows)]


def _notes(cases: Sequence[CaseResult]) -> list[str]:
    failing = [c for c in cases if c.status != c.case.status]
    drifting = [c for c in cases if c.svc.unexpected or c.floor.unexpected]
    conditional = [c for c in cases if c.case.condition]
    lines = []
    if failing:
        lines.append("note: these examples do not answer the status they document here:")
        lines += [
            f"  {c.case.name}: {c.case.method} {c.case.target} -> {c.status} (documented {c.case.status})"
            for c in failing
        ]
    if conditional:
        lines.append("note: these cases are required only under a condition this run does not establish:")
        lines += [f"  {c.case.name}: {c.case.condition}" for c in conditional]
    if drifting:
        lines.append("note: these cases answered another status than when recorded during the measurement:")
        lines += [
            f"  {c.case.name}: svc {c.svc.unexpected}, floor {c.floor.unexpected} of {c.svc.requests} requests"
            for c in drifting
        ]
    return lines


def _throughput(run: RunResult) -> list[str]:
    settings = run.settings
    lines = [
        f"throughput: {settings['client']}; {settings['rounds']} × {settings['duration']} s per server, "
        "alternating svc, floor"
    ]
    for t in run.throughput:
        lines.append(
            f"  {t.route:<26} svc {t.svc_rps:>6,.0f} req/s {_spread(t.svc)}  "
            f"floor {t.floor_rps:>6,.0f} req/s {_spread(t.floor)}  svc/floor {t.ratio:.2f}"
            + (f"  ({t.errors} failed requests)" if t.errors else "")
        )
        if t.svc_cpu_us is not None and t.floor_cpu_us is not None:
            lines.append(
                f"  {'':<26} server CPU per request: svc {t.svc_cpu_us:,.0f} µs, "
                f"floor {t.floor_cpu_us:,.0f} µs  floor/svc {t.cpu_ratio:.2f}"
            )
        if t.svc_counted is not None and t.floor_counted is not None:
            lines.append(
                f"  {'':<26} instructions per request (callgrind): svc {t.svc_counted.per_request / 1e6:.3f} M, "
                f"floor {t.floor_counted.per_request / 1e6:.3f} M  floor/svc {t.instruction_ratio:.3f}"
            )
    return lines


def _spread(runs: Sequence[ServerRun]) -> str:
    """The range of the runs' req/s, to tell a real gap from noise."""
    rates = [r.load.rps for r in runs]
    return f"({min(rates):,.0f}–{max(rates):,.0f})"


def _targets(run: RunResult) -> list[str]:
    lines = ["targets:"]
    for t in run.targets:
        verdict = "met   " if t.met else "MISSED"
        lines.append(f"  [{verdict}] {t.name}: {t.value:.3f} {t.unit} (target {t.compare} {t.bound:g} {t.unit})")
    return lines


def to_json(run: RunResult) -> dict[str, Any]:
    """The JSON document of a run."""
    return {
        "schema": SCHEMA,
        **run.meta,
        "settings": run.settings,
        "cases": [_case_json(c) for c in run.cases],
        "throughput": [_throughput_json(t) for t in run.throughput],
        "targets": [_target_json(t) for t in run.targets],
        "targets_met": all(t.met for t in run.targets),
    }


def _latency_json(latency: Latency) -> dict[str, Any]:
    return {
        "requests": latency.requests,
        "p50_ms": round(latency.p50_ms, 4),
        "p99_ms": round(latency.p99_ms, 4),
        "mean_ms": round(latency.mean_ms, 4),
        "min_ms": round(latency.min_ms, 4),
        "max_ms": round(latency.max_ms, 4),
        "unexpected_status": latency.unexpected,
    }


def _case_json(result: CaseResult) -> dict[str, Any]:
    case = result.case
    return {
        "case": case.name,
        "capability": case.capability,
        "example": case.example,
        "method": case.method,
        "path": case.path,
        "target": case.target,
        "condition": case.condition,
        "status": result.status,
        "documented_status": case.status,
        "bytes": result.size,
        "svc": _latency_json(result.svc),
        "floor": _latency_json(result.floor),
    }


def _run_json(run: ServerRun) -> dict[str, Any]:
    load = run.load
    return {
        "requests": load.requests,
        "seconds": round(load.seconds, 4),
        "rps": round(load.rps, 1),
        "errors": load.errors,
        "server_cpu_seconds": None if run.cpu_seconds is None else round(run.cpu_seconds, 4),
    }


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def _throughput_json(result: ThroughputResult) -> dict[str, Any]:
    return {
        "route": result.route,
        "target": result.target,
        "svc_rps": round(result.svc_rps, 1),
        "floor_rps": round(result.floor_rps, 1),
        "ratio": round(result.ratio, 4),
        "svc_cpu_us_per_request": _round(result.svc_cpu_us, 1),
        "floor_cpu_us_per_request": _round(result.floor_cpu_us, 1),
        "cpu_ratio": _round(result.cpu_ratio, 4),
        "svc_instructions": _counted_json(result.svc_counted),
        "floor_instructions": _counted_json(result.floor_counted),
        "instruction_ratio": _round(result.instruction_ratio, 4),
        "errors": result.errors,
        "svc_runs": [_run_json(r) for r in result.svc],
        "floor_runs": [_run_json(r) for r in result.floor],
    }


def _counted_json(counted: Counted | None) -> dict[str, Any] | None:
    if counted is None:
        return None
    return {
        "instructions": counted.instructions,
        "requests": counted.requests,
        "errors": counted.errors,
        "per_request": round(counted.per_request),
    }


def _target_json(target: Target) -> dict[str, Any]:
    return {
        "name": target.name,
        "value": round(target.value, 4),
        "compare": target.compare,
        "bound": target.bound,
        "unit": target.unit,
        "met": target.met,
    }


def write_json(run: RunResult, path: Path) -> None:
    """Write the run to `path` (its folder is created when missing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(to_json(run), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
