"""Latency of one case: sequential requests on a single keep-alive connection per server, after a warm-up.

Each sample is the wall time from sending the request to having read the last byte of its response, taken
with `time.perf_counter_ns` in this process (the servers run in others).
"""

from __future__ import annotations

import math
import time
from collections.abc import MutableMapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

from bench_cases import Case
from bench_wire import Connection, Origin, Response, build_request

__all__ = ["Latency", "fetch", "in_process_get", "measure_latency", "percentile"]


@dataclass(frozen=True, slots=True)
class Latency:
    """Summary of a latency run, in milliseconds; `unexpected` counts answers of another status."""

    requests: int
    p50_ms: float
    p99_ms: float
    mean_ms: float
    min_ms: float
    max_ms: float
    unexpected: int = 0

    @classmethod
    def of(cls, samples_ms: Sequence[float], *, unexpected: int = 0) -> Latency:
        """Summarise samples (at least one)."""
        ordered = sorted(samples_ms)
        return cls(
            requests=len(ordered),
            p50_ms=percentile(ordered, 50),
            p99_ms=percentile(ordered, 99),
            mean_ms=math.fsum(ordered) / len(ordered),
            min_ms=ordered[0],
            max_ms=ordered[-1],
            unexpected=unexpected,
        )


def percentile(ordered: Sequence[float], pct: float) -> float:
    """The `pct` percentile of sorted samples, interpolated linearly between closest ranks.

    Raises:
        ValueError: no sample.
    """
    if not ordered:
        raise ValueError("no sample")
    rank = (len(ordered) - 1) * pct / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def fetch(origin: Origin, case: Case) -> Response:
    """One request of `case` on a fresh connection: what the server answers it."""
    with Connection(origin) as conn:
        return conn.exchange(build_request(origin, case.method, case.target, case.body))


@dataclass(slots=True)
class _Probe:
    """One server's connection, its request bytes and the samples taken so far."""

    conn: Connection
    request: bytes
    status: int
    samples: list[float] = field(default_factory=list)
    unexpected: int = 0

    def send(self, *, timed: bool) -> None:
        self.conn.reopen_if_closing()
        start = time.perf_counter_ns()
        response = self.conn.exchange(self.request)
        elapsed = (time.perf_counter_ns() - start) / 1e6
        if timed:
            self.samples.append(elapsed)
            self.unexpected += response.status != self.status


def measure_latency(origins: Sequence[Origin], case: Case, *, warmup: int, requests: int, status: int) -> list[Latency]:
    """Latency of `case` on each server, one keep-alive connection per server.

    Each connection first sends `warmup` requests, then `requests` measured ones. The servers take turns
    request by request, so that noise from the rest of the machine falls on all of them alike. When a
    server closes its connection (hypercorn does after 1000 requests), the new one is opened untimed.
    Answers whose status is not `status` are counted in `Latency.unexpected`.
    """
    with ExitStack() as stack:
        probes = [
            _Probe(
                conn=stack.enter_context(Connection(origin)),
                request=build_request(origin, case.method, case.target, case.body),
                status=status,
            )
            for origin in origins
        ]
        for number in range(warmup + requests):
            for probe in probes:
                probe.send(timed=number >= warmup)
    return [Latency.of(p.samples, unexpected=p.unexpected) for p in probes]


async def in_process_get(executor: Any, path: str, requests: int) -> list[float]:
    """`GET path` through svc's HTTP application in this process, no socket: one call to warm it, then
    `requests` timed calls; the milliseconds of each. Every answer must be 200."""
    from svc.api._http import SvcApp

    async def pages(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("no page is asked")

    app = SvcApp(executor, pages)
    scope = {
        "type": "http",
        "method": "GET",
        "path": path,
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1:8741")],
    }
    status: list[int] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])

    await app(dict(scope), receive, send)
    samples = []
    for _ in range(requests):
        start = time.perf_counter_ns()
        await app(dict(scope), receive, send)
        samples.append((time.perf_counter_ns() - start) / 1e6)
    assert set(status) == {200}, status
    return samples
