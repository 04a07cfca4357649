"""Benchmark of svc's YAML reading: every record of a 10,000-issue plan, `load_yaml` against PyYAML's C loader.

    .venv/bin/python bench/bench_yaml.py            # full run (under a minute)
    .venv/bin/python bench/bench_yaml.py --quick    # smoke run (1,000 issues)

One run:

1. writes the synthetic plan of `bench/bench_plan.py` (200 milestones × 10,000 issues, seed 7) into a
   temporary directory and reads every record's bytes into memory (`project.yaml`, milestones, issues);
2. parses all of them through `svc.layer.load_yaml` (the record reader, PyYAML for what it gives up on) and
   through a plain `yaml.load(data, Loader=yaml.CSafeLoader)`, alternately, 5 times each, and prints the
   medians (wall and CPU of this process) and their ratio;
3. prints the share of records the record reader accepted (the rest went through PyYAML), and the same for
   the reference corpus (`../shared/corpus/reference-layer`) when it is there;
4. times the plan's first read (`svc.plan.read_snapshot` with nothing cached: no parse cache in memory or on
   disk, every record read from disk and parsed, the plan derived) against a plain script that reads every
   record from disk and parses it with the C loader, median of 5 each.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from bench_plan import CORPUS, _records_settled, generate
from svc.layer import Repository, _yaml, load_yaml
from svc.plan import _cache, read_snapshot

ROUNDS = 5


def _records(root: Path) -> list[bytes]:
    """The bytes of every `.yaml` file under `root`, in path order."""
    return [path.read_bytes() for path in sorted(root.rglob("*.yaml"))]


def _accepted(documents: list[bytes]) -> int:
    """How many documents the record reader reads itself (the others go through PyYAML)."""
    count = 0
    for data in documents:
        try:
            _yaml._read_records(data)
        except _yaml._Unsure:
            continue
        count += 1
    return count


def _timed(parse: Callable[[bytes], Any], documents: list[bytes]) -> tuple[float, float]:
    """Wall and CPU milliseconds of parsing every document once."""
    start, start_cpu = time.perf_counter_ns(), time.process_time_ns()
    for data in documents:
        parse(data)
    return (time.perf_counter_ns() - start) / 1e6, (time.process_time_ns() - start_cpu) / 1e6


def _c_loader(data: bytes) -> Any:
    return yaml.load(data, Loader=yaml.CSafeLoader)


def _plan_first_read(root: Path) -> tuple[float, float]:
    """Wall and CPU milliseconds (medians) of the plan's first read, and of a plain C-loader script's read."""
    repo = Repository(root=root, git_dir=None, common_dir=None)
    cache_file = root / ".ai" / _cache.CACHE_FILE
    _records_settled(root)

    def first() -> None:
        _cache.forget()
        cache_file.unlink(missing_ok=True)
        read_snapshot(repo)

    def script() -> None:
        for path in sorted((root / ".ai").rglob("*.yaml")):
            yaml.load(path.read_bytes(), Loader=yaml.CSafeLoader)

    def wall(run: Callable[[], None]) -> float:
        start = time.perf_counter_ns()
        run()
        return (time.perf_counter_ns() - start) / 1e6

    svc_ms, c_ms = [], []
    for _ in range(ROUNDS):
        svc_ms.append(wall(first))
        c_ms.append(wall(script))
    return statistics.median(svc_ms), statistics.median(c_ms)


def main(argv: list[str] | None = None) -> int:
    """Generate the plan, time both readers, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a 1,000-issue plan instead of 10,000")
    args = parser.parse_args(argv)
    milestones, issues = (20, 1_000) if args.quick else (200, 10_000)
    if not hasattr(yaml, "CSafeLoader"):
        print("bench: PyYAML has no C loader here; nothing to compare against", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="svc-bench-yaml-") as tmp:
        root = generate(Path(tmp) / "plan", milestones, issues)
        documents = _records(root / ".ai")
        plan_ms, script_ms = _plan_first_read(root)
    for data in documents:  # both readers answer the same before either is timed
        if load_yaml(data) != yaml.load(data, Loader=_yaml._pyyaml().loader):
            print("bench: load_yaml disagrees with PyYAML on a record", file=sys.stderr)
            return 1
    svc_runs: list[tuple[float, float]] = []
    c_runs: list[tuple[float, float]] = []
    for _ in range(ROUNDS):
        svc_runs.append(_timed(load_yaml, documents))
        c_runs.append(_timed(_c_loader, documents))
    svc_wall, svc_cpu = (statistics.median(run[k] for run in svc_runs) for k in (0, 1))
    c_wall, c_cpu = (statistics.median(run[k] for run in c_runs) for k in (0, 1))
    accepted = _accepted(documents)
    lines = [
        f"YAML reading — {len(documents):,} records of a synthetic plan ({milestones} milestones × {issues:,} "
        f"issues), bytes in memory, median of {ROUNDS}:",
        f"  {'svc.layer.load_yaml':<42}{svc_wall:9.1f} ms wall, {svc_cpu:9.1f} ms CPU",
        f"  {'yaml.load(..., Loader=yaml.CSafeLoader)':<42}{c_wall:9.1f} ms wall, {c_cpu:9.1f} ms CPU",
        f"  ratio load_yaml / C loader: {svc_wall / c_wall:.3f} wall, {svc_cpu / c_cpu:.3f} CPU "
        f"({c_cpu / svc_cpu:.1f}× faster by CPU)",
        f"  record reader accepted {accepted:,} of {len(documents):,} ({100 * accepted / len(documents):.1f}%)",
        f"plan first read (nothing cached, read from disk, derived), median of {ROUNDS}: {plan_ms:.1f} ms wall; "
        f"a plain script reading every record with the C loader: {script_ms:.1f} ms wall "
        f"(ratio {plan_ms / script_ms:.3f})",
    ]
    if (CORPUS / ".ai").is_dir():
        corpus = _records(CORPUS / ".ai")
        taken = _accepted(corpus)
        lines.append(
            f"reference corpus: record reader accepted {taken} of {len(corpus)} ({100 * taken / len(corpus):.1f}%)"
        )
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
