"""Benchmark of the execution plane: start→completed latency, live fan-out, cancel latency, memory at the bounds.

    .venv/bin/python bench/bench_executions.py            # full run (about four minutes on 2 CPUs)
    .venv/bin/python bench/bench_executions.py --quick    # smoke run

One run:

1. makes a temporary checkout carrying this repository's `.ai/` layer (so no lease of a running server is in the
   way) and starts `svc --repo CHECKOUT serve --port 0` as a subprocess on 127.0.0.1;
2. **start→completed**: with one WebSocket on `/events` open, `POST /api/v1/executions/start` of a zero-step
   `executions.demonstrate` on a keep-alive connection, timed until the client holds `execution.completed`
   (sequential, after a warm-up);
3. **fan-out**: 50 WebSocket subscribers on `/events?execution=<id>` of one execution that emits 10,000 events.
   The events arrive the way `svc run` reports them: `POST /api/v1/executions/report` batches of 500 for a
   mirror id, one report in flight. Two passes: *paced* (the next batch goes once every subscriber holds the
   previous one: the delivery rate the channel sustains with nothing dropped) and *unpaced* (the next batch
   goes as soon as the report is answered, as a reporter does: drops show as `stream.lagged`). Delay is from
   sending the batch's report to a subscriber holding the event. The 50 subscribers are lean wsproto
   readers in this one process, which competes with the server for the CPU;
4. **cancel latency**: a one-step demonstrate with `delay_ms` 10000; once its log line is seen (it is in the
   delay), `POST /api/v1/executions/cancel`, timed until the client holds `execution.cancelled`;
5. **memory**: in a fresh process, the store filled to its bounds (200 executions × 2,000 events) through
   `Engine.report`, VmRSS before and after: once with typical log lines (about 40 characters), once with
   every log line at `max_log_chars` (2,000 characters, the worst case);

then prints the figures against the targets and writes `bench/results/executions.json`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import msgspec
import trio
import trio_websocket
from wsproto import ConnectionType, WSConnection
from wsproto.events import CloseConnection, Ping, Request, TextMessage

from bench_procs import cpu_seconds, running_server, svc_command
from svc import __version__
from svc.nursery import Engine, new_execution_id

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
OUTPUT = BENCH_DIR / "results" / "executions.json"
TARGETS = {"fanout_events_per_s": 20_000.0, "cancel_p99_ms": 50.0}
SUBSCRIBERS = 50
FANOUT_EVENTS = 10_000
BATCH = 500
STORE_EXECUTIONS = 200
STORE_EVENTS = 2000
TERMINAL = frozenset({"execution.completed", "execution.failed", "execution.cancelled"})


class Frame(msgspec.Struct):
    """The fields of a live-channel frame the bench looks at."""

    type: str
    execution_id: str | None = None
    sequence: int | None = None
    data: Any = None


_frame = msgspec.json.Decoder(Frame)


def log(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


def percentile(values: list[float], q: float) -> float:
    """The `q`-th percentile (0..100), nearest rank."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def summary(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "p50": percentile(values, 50),
        "p90": percentile(values, 90),
        "p99": percentile(values, 99),
        "mean": statistics.fmean(values),
        "min": min(values),
        "max": max(values),
    }


# -- the server --------------------------------------------------------------------------------------


@contextmanager
def temporary_checkout() -> Iterator[Path]:
    """A Git checkout (one commit) carrying this repository's `.ai/` layer, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="svc-bench-exec-") as tmp:
        root = Path(tmp) / "checkout"
        root.mkdir()
        shutil.copytree(REPO_DIR / ".ai", root / ".ai", ignore=shutil.ignore_patterns("local"))
        git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
        for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "bench"]):
            subprocess.run([*git, *args], cwd=root, check=True, capture_output=True)
        yield root


def ws_url(url: str, path: str) -> str:
    return url.replace("http://", "ws://", 1) + path


# -- 1. start→completed ------------------------------------------------------------------------------


async def bench_start_to_completed(url: str, *, samples: int, warmup: int) -> dict[str, Any]:
    arrivals: dict[str, float] = {}
    arrived = trio.Event()
    async with (
        httpx.AsyncClient(base_url=url) as http,
        trio_websocket.open_websocket_url(ws_url(url, "/events"), message_queue_size=1024) as ws,
        trio.open_nursery() as nursery,
    ):
        assert _frame.decode(await ws.get_message()).type == "stream.ready"

        async def read() -> None:
            nonlocal arrived
            while True:
                frame = _frame.decode(await ws.get_message())
                if frame.type == "execution.completed" and frame.execution_id is not None:
                    arrivals[frame.execution_id] = time.perf_counter()
                    arrived.set()
                    arrived = trio.Event()

        nursery.start_soon(read)
        body = msgspec.json.encode({"capability": "executions.demonstrate", "input": {"steps": 0}})
        total: list[float] = []
        answered: list[float] = []
        for n in range(warmup + samples):
            began = time.perf_counter()
            r = await http.post("/api/v1/executions/start", content=body)
            replied = time.perf_counter()
            assert r.status_code == 200, r.text
            execution_id = r.json()["id"]
            while execution_id not in arrivals:
                await arrived.wait()
            if n >= warmup:
                total.append((arrivals.pop(execution_id) - began) * 1000)
                answered.append((replied - began) * 1000)
        live: list[float] = []
        for _ in range(samples):
            began = time.perf_counter()
            r = await http.get("/api/v1/live")
            live.append((time.perf_counter() - began) * 1000)
        nursery.cancel_scope.cancel()
    return {
        "start_to_completed_ms": summary(total),
        "start_answer_ms": summary(answered),
        "baseline_get_live_ms": summary(live),
    }


# -- 2. fan-out --------------------------------------------------------------------------------------


def reporter_batches(execution_id: str, pid: int, total: int) -> list[list[dict[str, Any]]]:
    """`total` events of one run as its reporting process numbers them, in report-sized batches."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"

    def event(seq: int, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        return {
            "schema_version": "1",
            "event_id": f"{execution_id}#{seq}",
            "execution_id": execution_id,
            "sequence": seq,
            "timestamp": stamp,
            "type": kind,
            "data": data,
        }

    events = [
        event(1, "execution.created", {"capability": "executions.demonstrate", "title": "Bench", "input": {}}),
        event(2, "execution.queued", {"ahead": 0}),
        event(3, "execution.started", {}),
    ]
    for seq in range(4, total):
        events.append(event(seq, "execution.log", {"stream": "stdout", "message": f"bench line {seq} of {total}"}))
    events.append(event(total, "execution.completed", {"output": {"steps": 0, "elapsed_ms": 0, "observed": True}}))
    head, rest = events[:3], events[3:]
    return [head, *[rest[i : i + BATCH] for i in range(0, len(rest), BATCH)]]


def report_body(execution_id: str, pid: int, events: list[dict[str, Any]]) -> bytes:
    return msgspec.json.encode(
        {
            "id": execution_id,
            "capability": "executions.demonstrate",
            "title": "Bench",
            "pid": pid,
            "input": {},
            "cancellable": True,
            "events": events,
        }
    )


class Subscriber:
    """One subscriber's tally: when each sequence arrived, and what was dropped."""

    def __init__(self) -> None:
        self.arrived: dict[int, float] = {}
        self.dropped = 0
        self.last = 0
        self.progress = trio.Event()

    def note(self, frame: Frame, now: float) -> None:
        if frame.type == "stream.lagged":
            self.dropped += frame.data["dropped"]
        elif frame.sequence is not None:
            self.arrived[frame.sequence] = now
            self.last = frame.sequence
        self.progress.set()
        self.progress = trio.Event()


def own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def lean_subscriber(url: str, path: str, tally: Subscriber, total: int, ready: trio.Semaphore) -> None:
    """A WebSocket reader that does as little as a client can: wsproto over a socket, one decode per frame.

    It stands for the subscribers' side so that the figure is the server's rate, not a client library's.
    """
    host, port = url.removeprefix("http://").split(":")
    stream = await trio.open_tcp_stream(host, int(port))
    async with stream:
        ws = WSConnection(ConnectionType.CLIENT)
        await stream.send_all(ws.send(Request(host=f"{host}:{port}", target=path)))
        opened = False
        partial: list[str] = []
        while tally.last < total and len(tally.arrived) + tally.dropped < total - 3:
            data = await stream.receive_some(1 << 20)
            if not data:
                raise RuntimeError("the server closed a subscriber")
            now = time.perf_counter()
            ws.receive_data(data)
            for event in ws.events():
                if isinstance(event, TextMessage):
                    if not event.message_finished:
                        partial.append(event.data)
                        continue
                    frame = _frame.decode("".join([*partial, event.data]))
                    partial.clear()
                    if frame.type == "stream.ready":
                        opened = True
                        ready.release()
                    else:
                        tally.note(frame, now)
                elif isinstance(event, Ping):
                    await stream.send_all(ws.send(event.response()))
            if not opened:
                continue
        tally.last = total
        tally.progress.set()
        await stream.send_all(ws.send(CloseConnection(code=1000)))


async def fanout_pass(url: str, pid: int, *, paced: bool, subscribers: int, total: int) -> dict[str, Any]:
    execution_id = new_execution_id()
    reporter = os.getpid()
    batches = reporter_batches(execution_id, reporter, total)
    bodies = [report_body(execution_id, reporter, batch) for batch in batches]
    firsts = [batch[0]["sequence"] for batch in batches]
    sent_at: list[float] = []
    tallies = [Subscriber() for _ in range(subscribers)]
    async with httpx.AsyncClient(base_url=url) as http, trio.open_nursery() as nursery:
        r = await http.post("/api/v1/executions/report", content=bodies[0])
        assert r.status_code == 200, r.text
        ready = trio.Semaphore(0)
        path = f"/events?execution={execution_id}&after={firsts[1] - 1}"
        for tally in tallies:
            nursery.start_soon(lean_subscriber, url, path, tally, total, ready)
        for _ in tallies:
            await ready.acquire()
        began = time.perf_counter()
        server_cpu, client_cpu = cpu_seconds(pid), own_cpu_seconds()
        for index, body in enumerate(bodies[1:], start=1):
            sent_at.append(time.perf_counter())
            r = await http.post("/api/v1/executions/report", content=body)
            assert r.status_code == 200, r.text
            assert r.json()["applied"] == len(batches[index]), r.text
            if paced:
                through = batches[index][-1]["sequence"]
                for tally in tallies:
                    while tally.last < through and tally.last < total:
                        await tally.progress.wait()
        with trio.fail_after(120):
            for tally in tallies:
                while tally.last < total:
                    await tally.progress.wait()
        ended = max(max(t.arrived.values(), default=began) for t in tallies)
        server_cpu_end, client_cpu = cpu_seconds(pid), own_cpu_seconds() - client_cpu
    delivered = sum(len(t.arrived) for t in tallies)
    dropped = sum(t.dropped for t in tallies)
    delays: list[float] = []
    for tally in tallies:
        for seq, at in tally.arrived.items():
            batch = (seq - firsts[1]) // BATCH  # the report (after the first) that carried `seq`
            delays.append((at - sent_at[batch]) * 1000)
    seconds = ended - began
    return {
        "paced": paced,
        "events": total - 3,
        "subscribers": subscribers,
        "delivered": delivered,
        "dropped": dropped,
        "complete_subscribers": sum(1 for t in tallies if t.dropped == 0),
        "seconds": seconds,
        "delivered_per_s": delivered / seconds,
        "events_per_s_per_subscriber": (total - 3) / seconds,
        "delay_ms": summary(delays),
        "server_cpu_us_per_delivery": (
            (server_cpu_end - server_cpu) / delivered * 1e6
            if server_cpu is not None and server_cpu_end is not None
            else None
        ),
        "client_cpu_us_per_delivery": client_cpu / delivered * 1e6,
    }


# -- 3. cancel latency -------------------------------------------------------------------------------


async def bench_cancel(url: str, *, samples: int) -> dict[str, Any]:
    latencies: list[float] = []
    answers: list[float] = []
    seen: dict[tuple[str, str], float] = {}
    changed = trio.Event()
    async with (
        httpx.AsyncClient(base_url=url) as http,
        trio_websocket.open_websocket_url(ws_url(url, "/events"), message_queue_size=1024) as ws,
        trio.open_nursery() as nursery,
    ):
        await ws.get_message()

        async def read() -> None:
            nonlocal changed
            while True:
                frame = _frame.decode(await ws.get_message())
                if frame.execution_id is not None:
                    seen[(frame.execution_id, frame.type)] = time.perf_counter()
                    changed.set()
                    changed = trio.Event()

        async def reached(execution_id: str, kind: str) -> float:
            while (execution_id, kind) not in seen:
                await changed.wait()
            return seen[(execution_id, kind)]

        nursery.start_soon(read)
        body = msgspec.json.encode({"capability": "executions.demonstrate", "input": {"steps": 1, "delay_ms": 10000}})
        for _ in range(samples):
            r = await http.post("/api/v1/executions/start", content=body)
            execution_id = r.json()["id"]
            await reached(execution_id, "execution.log")  # the log line comes right before the delay
            asked = time.perf_counter()
            answer = await http.post("/api/v1/executions/cancel", content=msgspec.json.encode({"id": execution_id}))
            answered = time.perf_counter()
            assert answer.json()["outcome"] == "requested", answer.text
            done = await reached(execution_id, "execution.cancelled")
            latencies.append((done - asked) * 1000)
            answers.append((answered - asked) * 1000)
        nursery.cancel_scope.cancel()
    return {"cancel_to_cancelled_ms": summary(latencies), "cancel_answer_ms": summary(answers)}


# -- 4. memory with the store at its bounds (run in a fresh process) ---------------------------------


def vm_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


async def fill_store(message_chars: int) -> dict[str, Any]:
    import gc

    from svc.host._service import open_service
    from svc.layer import Repository
    from svc.nursery import ExecutionEvent, new_execution_id

    gc.collect()
    async with open_service(Repository.discover(REPO_DIR), surface="http", watch=False) as executor:
        engine = executor.components.get(Engine)
        cap = engine.find_capability("executions.demonstrate")
        gc.collect()
        before = vm_kib("VmRSS")
        began = time.perf_counter()
        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        for n in range(STORE_EXECUTIONS):
            execution_id = new_execution_id()[:-8] + f"{n:08x}"

            def event(seq: int, kind: str, data: dict[str, Any], execution_id: str = execution_id) -> ExecutionEvent:
                return ExecutionEvent(
                    schema_version="1",
                    event_id=f"{execution_id}#{seq}",
                    execution_id=execution_id,
                    sequence=seq,
                    timestamp=stamp,
                    type=kind,
                    data=data,
                )

            events = [
                event(1, "execution.created", {"capability": cap.id, "title": cap.title, "input": {}}),
                event(2, "execution.queued", {"ahead": 0}),
                event(3, "execution.started", {}),
            ]
            for seq in range(4, STORE_EVENTS):
                line = f"execution {n} line {seq} "
                text = (line * (message_chars // len(line) + 1))[:message_chars]
                events.append(event(seq, "execution.log", {"stream": "stdout", "message": text}))
            events.append(event(STORE_EVENTS, "execution.completed", {"output": {"steps": 0}}))
            for i in range(0, len(events), BATCH):
                engine.report(
                    execution_id=execution_id,
                    cap=cap,
                    title=cap.title,
                    pid=4242,
                    input={},
                    events=events[i : i + BATCH],
                )
            del events
        gc.collect()
        after = vm_kib("VmRSS")
        store = engine.store
        held = sum(len(x.events) for x in store)
        assert len(store) == STORE_EXECUTIONS, len(store)
        assert held == STORE_EXECUTIONS * STORE_EVENTS, held
        return {
            "message_chars": message_chars,
            "executions": len(store),
            "events_held": held,
            "rss_before_mib": before / 1024,
            "rss_after_mib": after / 1024,
            "rss_delta_mib": (after - before) / 1024,
            "bytes_per_event": (after - before) * 1024 / held,
            "peak_rss_mib": vm_kib("VmHWM") / 1024,
            "fill_seconds": time.perf_counter() - began,
        }


def measure_memory(message_chars: int) -> dict[str, Any]:
    """Run `fill_store` in a fresh interpreter so that nothing else sits in its heap."""
    result = subprocess.run(
        [sys.executable, __file__, "--memory-child", str(message_chars)],
        capture_output=True,
        check=True,
        timeout=900,
        env={**os.environ, "SVC_NO_COMMIT": "1"},
    )
    figures: dict[str, Any] = json.loads(result.stdout)
    return figures


# -- the run -----------------------------------------------------------------------------------------


async def bench_server(url: str, pid: int, quick: bool) -> dict[str, Any]:
    log("start→completed latency")
    latency = await bench_start_to_completed(url, samples=60 if quick else 300, warmup=10 if quick else 30)
    log(f"fan-out: {FANOUT_EVENTS:,} events to {SUBSCRIBERS} subscribers, paced")
    paced = await fanout_pass(url, pid, paced=True, subscribers=SUBSCRIBERS, total=FANOUT_EVENTS)
    log("fan-out, unpaced")
    unpaced = await fanout_pass(url, pid, paced=False, subscribers=SUBSCRIBERS, total=FANOUT_EVENTS)
    log("cancel latency")
    cancel = await bench_cancel(url, samples=10 if quick else 40)
    return {**latency, "fanout_paced": paced, "fanout_unpaced": unpaced, **cancel}


def report(figures: dict[str, Any]) -> str:
    lat, ans, live = figures["start_to_completed_ms"], figures["start_answer_ms"], figures["baseline_get_live_ms"]
    paced, unpaced = figures["fanout_paced"], figures["fanout_unpaced"]
    cancel = figures["cancel_to_cancelled_ms"]
    rate = paced["delivered_per_s"]
    lines = [
        "Execution plane benchmark (svc serve subprocess on 127.0.0.1; clients in this process)",
        "",
        f"1. start→completed, zero-step demonstrate over HTTP (n={lat['n']}): p50 {lat['p50']:.2f} ms, "
        f"p99 {lat['p99']:.2f} ms, mean {lat['mean']:.2f} ms",
        f"   (start answered: p50 {ans['p50']:.2f} ms; GET /api/v1/live on the same client: p50 {live['p50']:.2f} ms)",
        f"2. fan-out, {paced['events']:,} events × {paced['subscribers']} WebSocket subscribers, reported in "
        f"batches of {BATCH}:",
    ]
    for name, run in (("paced  ", paced), ("unpaced", unpaced)):
        d = run["delay_ms"]
        lines.append(
            f"   {name}: {run['delivered_per_s']:,.0f} events/s delivered ({run['events_per_s_per_subscriber']:,.0f}"
            f"/s per subscriber), {run['seconds']:.2f} s, delay p50 {d['p50']:.1f} ms p99 {d['p99']:.1f} ms, "
            f"dropped {run['dropped']:,} ({run['complete_subscribers']}/{run['subscribers']} subscribers complete)"
        )
        lines.append(
            f"            CPU per delivered event: server {run['server_cpu_us_per_delivery'] or 0:.0f} µs, "
            f"this client {run['client_cpu_us_per_delivery']:.0f} µs"
        )
    lines.append(
        f"   target ≥ {TARGETS['fanout_events_per_s']:,.0f} events/s delivered (paced): "
        f"{'met' if rate >= TARGETS['fanout_events_per_s'] else 'MISSED'}"
    )
    lines.append(
        f"3. cancel mid-delay → cancelled (n={cancel['n']}): p50 {cancel['p50']:.2f} ms, p99 {cancel['p99']:.2f} ms, "
        f"max {cancel['max']:.2f} ms; target p99 ≤ {TARGETS['cancel_p99_ms']:.0f} ms: "
        f"{'met' if cancel['p99'] <= TARGETS['cancel_p99_ms'] else 'MISSED'}"
    )
    lines.append(f"4. RSS with the store at its bounds ({STORE_EXECUTIONS} executions × {STORE_EVENTS:,} events):")
    for mem in figures["memory"]:
        lines.append(
            f"   log lines of {mem['message_chars']:>4} chars: {mem['rss_before_mib']:.0f} → {mem['rss_after_mib']:.0f}"
            f" MiB (+{mem['rss_delta_mib']:.0f} MiB, {mem['bytes_per_event']:,.0f} B/event, filled in "
            f"{mem['fill_seconds']:.1f} s)"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer samples, typical-size memory pass only")
    parser.add_argument("--output", type=Path, default=OUTPUT, help="where to write the JSON figures")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--memory-child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory_child is not None:
        print(json.dumps(trio.run(fill_store, args.memory_child)))
        return 0

    load = os.getloadavg()
    with (
        tempfile.TemporaryDirectory(prefix="svc-bench-logs-") as logs,
        temporary_checkout() as checkout,
        running_server("svc", svc_command(checkout), log_dir=Path(logs)) as server,
    ):
        log(f"serving {server.origin.url} (pid {server.pid}) over {checkout}")
        figures = trio.run(bench_server, server.origin.url, server.pid, args.quick)
    log("memory at the store bounds (fresh processes)")
    figures["memory"] = [measure_memory(40)] + ([] if args.quick else [measure_memory(2000)])
    print(report(figures))
    met = {
        "fanout_events_per_s": figures["fanout_paced"]["delivered_per_s"] >= TARGETS["fanout_events_per_s"],
        "cancel_p99_ms": figures["cancel_to_cancelled_ms"]["p99"] <= TARGETS["cancel_p99_ms"],
    }
    document = {
        "benchmark": "executions",
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "svc_version": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average_at_start": load,
        "quick": args.quick,
        "settings": {
            "subscribers": SUBSCRIBERS,
            "fanout_events": FANOUT_EVENTS,
            "report_batch": BATCH,
            "store": {"executions": STORE_EXECUTIONS, "events": STORE_EVENTS},
            "clients": "httpx, trio_websocket and lean wsproto subscribers in the bench process; svc serve subprocess",
        },
        "targets": TARGETS,
        "met": met,
        "figures": figures,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    log(f"wrote {args.output}")
    return 1 if args.check and not all(met.values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
