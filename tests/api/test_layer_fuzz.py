"""Fuzz: random bytes and random YAML as layer files; the server keeps answering, fast and in bounded memory.

Hypothesis runs in a worker thread against a real server of this process (127.0.0.1, port 0) over a
checkout of svc's layer. Each example writes its files, moves the generation (as the watcher would), asks
`plan/validate` (always a 200 answer, findings bounded) and rebuilds the resident layer state, while a trio
task probes `/api/v1/live` the whole time: every probe answers within 100 ms, and the process's peak resident
memory (`VmHWM`, reset through `/proc/self/clear_refs` first) grows by less than a bound. tracemalloc is not
used: it slows every allocation enough to distort the 100 ms measure.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from svc.host._service import open_service
from svc.layer import Repository, dump_yaml
from svc.runtime import Executor
from tests.api.conftest import serving
from tests.api.test_hostile_layer import LIVE_SECONDS, live_latency
from tests.layer.test_read import ALIAS_BOMB

pytestmark = pytest.mark.slow

#: How much the process's peak resident memory may grow over the fuzzing (server and fuzzer together).
PEAK_GROWTH_KIB = 256 * 1024
#: Layer files the fuzzer writes (repository-relative).
TARGETS = (
    ".ai/manifest.yaml",
    ".ai/repo/policy.yaml",
    ".ai/repo/scope.yaml",
    ".ai/repo/knowledge/sources.yaml",
    ".ai/repo/project/project.yaml",
    ".ai/repo/project/milestones/M9.yaml",
    ".ai/repo/project/issues/I9001.yaml",
    ".ai/repo/project/issues/I9002.yaml",
    ".ai/repo/rules/fuzz.md",
)

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=40)
keys = st.sampled_from(["id", "title", "milestone", "depends_on", "evidence", "sources", "schema", "x"]) | st.text(
    max_size=12
)
structures = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(keys, inner, max_size=6),
    max_leaves=30,
)
yaml_texts = structures.map(lambda value: dump_yaml(value).encode())
#: Shapes a hand-made layer may take that a dump never produces: aliases, deep nesting, front matter.
crafted = st.sampled_from(
    [
        b"a: &a [1, 2]\nb: *a\n",
        ALIAS_BOMB.encode(),
        b"[" * 5000 + b"]" * 5000,
        b"- " * 2000 + b"x\n",
        b"---\nid: r\nversion: 1\n---\n# a" + b"#" * 20_000 + b"x\n",
        b"id: I9001\n" + b"k: v\n" * 2000,
        b"\xff\xfe\x00garbage",
        b"? [a, b]\n: c\n",
    ]
)
contents = st.binary(max_size=2000) | yaml_texts | crafted
layers = st.dictionaries(st.sampled_from(TARGETS), contents, min_size=1, max_size=len(TARGETS))


async def _probe_live(http: httpx.AsyncClient, done: trio.Event, worst: list[float]) -> None:
    while not done.is_set():
        worst.append(await live_latency(http))
        await trio.sleep(0.02)


def _fuzz(executor: Executor, url: str, root: Path) -> None:
    """Run the hypothesis examples (blocking: called in a worker thread while the server runs)."""
    runtime = executor.runtime

    @settings(max_examples=30, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(layer=layers)
    def example(layer: dict[str, bytes]) -> None:
        for rel, data in layer.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        trio.from_thread.run_sync(runtime.generation.bump)
        with httpx.Client(base_url=url) as http:
            validate = http.get("/api/v1/plan/validate")
            assert validate.status_code == 200, validate.text[:300]
            answer: dict[str, Any] = validate.json()
            assert all(len(f["message"]) <= 400 for f in answer["findings"])
            runtime.warm()
            assert http.get("/api/v1/ready").status_code == 200

    example()


def _memory_kib(field: str) -> int:
    """A `kB` field of `/proc/self/status` (`VmRSS`, `VmHWM`)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/self/status")


def _reset_peak() -> int:
    """Reset the peak resident memory to the current one (Linux `clear_refs`); that value, in KiB."""
    Path("/proc/self/clear_refs").write_text("5")
    return _memory_kib("VmHWM")


@pytest.fixture
def frozen_heap() -> Iterator[None]:
    """Keep the test harness's own objects (pytest, hypothesis) out of the collector's full passes.

    A server process holds none of them; left in, a full collection of this process stalls every thread for
    longer than the bound measured here.
    """
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@pytest.mark.bound(240)
@pytest.mark.usefixtures("frozen_heap")
async def test_random_layer_files_never_stall_crash_or_bloat_the_server(checkout: Path) -> None:
    async with (
        open_service(Repository.discover(checkout), surface="http", watch=False) as executor,
        trio.open_nursery() as nursery,
        serving(executor, nursery) as url,
        httpx.AsyncClient(base_url=url) as http,
        trio.open_nursery() as probes,
    ):
        done = trio.Event()
        worst: list[float] = []
        probes.start_soon(_probe_live, http, done, worst)
        baseline = _reset_peak()
        try:
            await trio.to_thread.run_sync(functools.partial(_fuzz, executor, url, checkout), abandon_on_cancel=True)
        finally:
            done.set()
        growth = _memory_kib("VmHWM") - baseline
    assert len(worst) > 10
    assert max(worst) < LIVE_SECONDS, sorted(worst)[-5:]
    assert growth < PEAK_GROWTH_KIB
