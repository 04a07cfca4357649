"""The live view of `svc run` and of capability commands, its summary line, and how servers stop and log.

The terminal tests run `svc` as a subprocess whose stderr is a pseudo-terminal (`os.openpty()`), read as it
arrives; they and the server processes have wall-clock bounds, hence `slow`. The rest runs in this process.
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import re
import signal
import struct
import subprocess
import sys
import termios
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
import trio

from svc.cli._runs import call_watched
from svc.cli._watch import Watch, duration_text, summary_lines
from svc.host._run import Reporter
from svc.host._service import open_service
from svc.layer import Repository
from svc.nursery import Engine, ExecutionView
from svc.runtime import Actor, Executor
from tests.conftest import ROOT, make_checkout

SVC = [sys.executable, "-m", "svc"]
ENV = {**os.environ, "PYTHONUNBUFFERED": "1", "TERM": "xterm-256color", "COLUMNS": "100"}
START_SECONDS = 60
#: A frame of rich's live display: the line is cleared, then redrawn.
FRAME = "\r\x1b[2K"
BAR = "━"
_CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


# -- the terminal view of `svc run` --------------------------------------------------------------------


class Terminal:
    """A pseudo-terminal of 100 columns whose screen bytes are read as the program writes them."""

    def __init__(self) -> None:
        self.controller, self.terminal = os.openpty()
        fcntl.ioctl(self.terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
        self.screen = ""
        self.changed = trio.Event()
        self.closed = False

    async def read(self) -> None:
        """Read until the last writer closes the terminal (each chunk wakes `changed`)."""
        decoder = io.IncrementalNewlineDecoder(None, translate=False)
        stream = trio.lowlevel.FdStream(os.dup(self.controller))
        async with stream:
            while True:
                try:
                    chunk = await stream.receive_some(65536)
                except (trio.BrokenResourceError, OSError):  # EIO: the terminal's last writer closed it
                    chunk = b""
                if not chunk:
                    break
                self.screen += decoder.decode(chunk.decode("utf-8", errors="replace"))
                self.changed.set()
                self.changed = trio.Event()
        self.closed = True
        self.changed.set()

    async def until(self, text: str) -> str:
        """The screen as it was when `text` first appeared on it."""
        while text not in self.screen:
            assert not self.closed, self.screen
            await self.changed.wait()
        return self.screen


@asynccontextmanager
async def on_terminal(*args: str, cwd: Path, env: dict[str, str]) -> AsyncIterator[tuple[trio.Process, Terminal]]:
    term = Terminal()
    try:
        process = await trio.lowlevel.open_process(
            [*SVC, *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=term.terminal, stderr=term.terminal
        )
        os.close(term.terminal)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(term.read)
            try:
                yield process, term
            finally:
                if process.returncode is None:
                    process.kill()
                with trio.CancelScope(shield=True):
                    await process.wait()
    finally:
        os.close(term.controller)


@pytest.mark.slow
@pytest.mark.bound(180)
@pytest.mark.parametrize("colour", [True, False], ids=["colour", "NO_COLOR"])
async def test_on_a_terminal_the_bar_stays_on_screen_while_a_step_runs(tmp_path: Path, colour: bool) -> None:
    checkout = make_checkout(tmp_path / "c")
    env = ENV if colour else {**ENV, "NO_COLOR": "1"}
    run_input = json.dumps({"steps": 3, "delay_ms": 400})
    async with on_terminal("run", "executions.demonstrate", "--input", run_input, cwd=checkout, env=env) as (
        process,
        term,
    ):
        with trio.fail_after(START_SECONDS):
            await term.until("Step 1 of 3")
        with trio.fail_after(15):
            before_step_2 = await term.until("Step 2 of 3")
            code = await process.wait()
            while not term.closed:
                await term.changed.wait()
    assert code == 0, term.screen
    # While step 1 ran (after it started, before step 2 showed), the bar was drawn and redrawn in place.
    during_step_1 = before_step_2[before_step_2.index("Step 1 of 3") : before_step_2.index("Step 2 of 3")]
    frames = [_CSI.sub("", f) for f in during_step_1.split(FRAME)]
    bars = [f for f in frames if BAR in f and "Step 1 of 3" in f]
    assert len(bars) >= 2, during_step_1
    assert "1/3" not in bars[0]  # nothing done yet: the bar pulses
    shown = [_CSI.sub("", line) for line in term.screen.splitlines()]  # (\r ends a line too: each frame is one)
    for n in (1, 2, 3):
        assert shown.count(f"    step {n} of 3") == 1
        assert shown.count(f"  ✓ Step {n} of 3") == 1
    assert any(
        re.fullmatch(r"executions\.demonstrate succeeded in [0-9.]+ s \(x-[0-9TZ]+-[0-9a-f]{8}\)", s) for s in shown
    )
    assert "\x1b[?25h" in term.screen  # the cursor is shown again
    assert ("\x1b[32m" in term.screen) is colour  # green only when colour is on


@pytest.mark.slow
@pytest.mark.bound(180)
async def test_piped_svc_run_writes_plain_lines_and_a_failure_says_after_how_long_and_why(tmp_path: Path) -> None:
    checkout = make_checkout(tmp_path / "c")
    run_input = json.dumps({"steps": 2, "delay_ms": 200, "fail_at": 2})
    result = await trio.run_process(
        [*SVC, "run", "executions.demonstrate", "--input", run_input],
        cwd=checkout,
        env=ENV,
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert result.returncode == 10
    assert result.stdout == b""
    shown = result.stderr.decode().splitlines()
    assert "\x1b" not in result.stderr.decode()
    assert shown[1:] == [
        "  … Step 1 of 2",
        "    step 1 of 2",
        "  ✓ Step 1 of 2",
        "  … Step 2 of 2",
        "    step 2 of 2",
        "  ✗ Step 2 of 2: failed as asked",
        shown[-1],
    ]
    assert re.fullmatch(
        r"executions\.demonstrate failed after [0-9.]+ s: step 2 of 2 failed as asked \(x-[0-9TZ]+-[0-9a-f]{8}\)",
        shown[-1],
    ), shown[-1]


# -- the view and its summary, in process ----------------------------------------------------------------


def view(**fields: Any) -> ExecutionView:
    base: dict[str, Any] = {
        "id": "x-20261121T120000Z-0123abcd",
        "capability": "executions.demonstrate",
        "title": "Demo",
        "state": "succeeded",
        "created_at": "2026-11-21T12:00:00.000Z",
        "started_at": "2026-11-21T12:00:00.100Z",
        "finished_at": "2026-11-21T12:00:01.300Z",
        "duration_ms": 1200,
        "input": {},
        "last_sequence": 9,
        "event_count": 9,
        "events_truncated": False,
        "cancellable": True,
        "actor": {"kind": "cli", "pid": 1},
        "repository": {"name": "r", "id": "i"},
        "correlation_id": "x-20261121T120000Z-0123abcd",
        "links": {"self": "", "events": "", "cancel": "", "websocket": "", "cockpit": ""},
    }
    return msgspec.convert({**base, **fields}, ExecutionView)


def test_durations_read_as_people_say_them() -> None:
    assert [duration_text(ms) for ms in (0, 7, 99, 100, 412, 1200, 59_949, 59_950, 184_000)] == [
        "under 1 ms",
        "7 ms",
        "99 ms",
        "0.1 s",
        "0.4 s",
        "1.2 s",
        "59.9 s",
        "1 min 0 s",
        "3 min 4 s",
    ]


def test_the_summary_says_how_it_ended_after_how_long_and_why() -> None:
    x = "(x-20261121T120000Z-0123abcd)"
    assert summary_lines(view()) == [(f"executions.demonstrate succeeded in 1.2 s {x}", "good")]
    error = {"code": "internal", "message": "step 2 of 2 failed as asked", "correlation_id": "c", "suggestion": "retry"}
    failed = view(state="failed", duration_ms=0, error=error)
    assert summary_lines(failed) == [
        (f"executions.demonstrate failed after under 1 ms: step 2 of 2 failed as asked {x}", "bad"),
        ("  retry", "plain"),
    ]
    # Cancelled while queued: it never started, so the time is counted from its creation.
    queued = view(state="cancelled", started_at=None, duration_ms=None, finished_at="2026-11-21T12:00:02.500Z")
    assert summary_lines(queued) == [(f"executions.demonstrate cancelled after 2.5 s {x}", "warn")]


def test_piped_the_view_is_plain_lines_and_escapes_never_reach_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    for module in ("rich.console", "rich.progress", "rich.text"):  # piped, the view never imports rich
        monkeypatch.setitem(sys.modules, module, None)
    out = io.StringIO()
    events: list[dict[str, Any]] = [
        {"type": "execution.created", "data": {"capability": "c", "title": "T", "input": {}}},
        {"type": "execution.queued", "data": {"ahead": 2}},
        {"type": "execution.started", "data": {}},
        {"type": "execution.step.started", "data": {"name": "read", "title": "Reading \x1b[31mred\x1b[0m"}},
        {"type": "execution.progress", "data": {"current": 1, "total": 2, "message": "half"}},
        {"type": "execution.log", "data": {"stream": "stdout", "message": "a\x07line"}},
        {"type": "execution.diagnostic", "data": {"severity": "warning", "code": "w", "summary": "look"}},
        {"type": "execution.step.completed", "data": {"name": "read", "ok": False, "detail": "2 drifted"}},
        {"type": "execution.cancelling", "data": {"by": "cli"}},
        {"type": "execution.cancelled", "data": {}},
    ]
    with Watch(out) as watch:
        assert not watch.live
        for event in events:
            watch.show(event)
    assert out.getvalue().splitlines() == [
        "  queued behind 2 other executions",
        "  … Reading red",
        "    a line",
        "  warning w: look",
        "  ✗ Reading red: 2 drifted",
        "  cancelling (asked by cli)",
    ]


class _Tty(io.StringIO):
    """A captured stderr that says it is a terminal."""

    def isatty(self) -> bool:
        return True


async def test_a_capability_command_that_reports_progress_draws_it_live_and_one_that_does_not_draws_nothing(
    executor: Executor, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.delenv("NO_COLOR", raising=False)
    actor = Actor(kind="cli", pid=os.getpid())
    demonstrate = executor.runtime.registry.by_id["executions.demonstrate"]
    live = executor.runtime.registry.by_id["health.live"]

    original = sys.stderr

    async def watched(cap: Any, raw: dict[str, Any]) -> tuple[bytes, str]:
        captured = _Tty()
        sys.stderr = captured
        try:
            body = await call_watched(executor, cap, executor.decode_value(cap, raw), actor=actor)
        finally:
            sys.stderr = original
        return body, captured.getvalue()

    body, screen = await watched(demonstrate, {"steps": 2})
    assert msgspec.json.decode(body)["observed"] is True  # its context reported to the terminal
    plain = _CSI.sub("", screen)
    assert "✓ Step 1 of 2" in plain
    assert "✓ Step 2 of 2" in plain
    assert "2/2" in plain
    assert BAR in plain
    body, screen = await watched(live, {})
    assert msgspec.json.decode(body)["alive"] is True
    assert screen == ""


# -- the smaller points ----------------------------------------------------------------------------------


async def test_a_reported_execution_is_created_on_the_server_when_its_process_created_it(
    server: str, executor: Executor
) -> None:
    """The mirror's `created_at` is its `created` event's time, not the first report's arrival."""
    served = executor.components.get(Engine)
    async with (
        open_service(Repository.discover(ROOT), surface="cli", watch=False) as local,
        httpx.AsyncClient() as client,
    ):
        engine = local.components.get(Engine)
        cap = engine.find_capability("executions.demonstrate")
        x = engine.start(cap, engine.executor.decode_value(cap, {"steps": 1}), actor=Actor(kind="cli", pid=os.getpid()))
        await x.done.wait()  # the whole run happens before the first report reaches the server
        await Reporter(client, server, engine, x, cap).run()
    mirror = served.store.view(served.store.get(x.id))
    assert mirror.started_at is not None
    assert mirror.created_at <= mirror.started_at
    assert mirror.created_at == engine.store.view(x).created_at


async def process_lines(process: trio.Process, stream: trio.abc.ReceiveStream, seen: Callable[[str], bool]) -> str:
    """What `stream` carried until a line satisfied `seen`."""
    text = ""
    while not any(seen(line) for line in text.splitlines()):
        chunk = await stream.receive_some(65536)
        assert chunk, text
        text += chunk.decode()
    return text


@pytest.mark.slow
@pytest.mark.bound(120)
async def test_a_stopped_server_says_so_and_leaves_at_once(tmp_path: Path) -> None:
    checkout = make_checkout(tmp_path / "c")
    # An exit handler the interpreter's own teardown would run: a server that leaves at once never runs it.
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    marker = tmp_path / "teardown-ran"
    (hooks / "sitecustomize.py").write_text(
        f"import atexit\natexit.register(lambda: open({str(marker)!r}, 'w').close())\n", encoding="utf-8"
    )
    path = os.pathsep.join(p for p in (str(hooks), ENV.get("PYTHONPATH", "")) if p)
    process = await trio.lowlevel.open_process(
        [*SVC, "serve", "--port", "0"],
        cwd=checkout,
        env={**ENV, "PYTHONPATH": path},
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stderr is not None
        with trio.fail_after(START_SECONDS):
            text = await process_lines(process, process.stderr, lambda line: line.startswith("svc: serving http"))
        process.send_signal(signal.SIGINT)
        with trio.fail_after(10):
            text += await process_lines(process, process.stderr, lambda line: line == "svc: stopped")
            code = await process.wait()
            text += (await process.stderr.receive_some(65536)).decode()
    finally:
        if process.returncode is None:
            process.kill()
        with trio.CancelScope(shield=True):
            await process.wait()
    assert code == 0
    assert text.splitlines()[-2:] == ["svc: SIGINT received; stopping", "svc: stopped"]
    # Nothing is left to clean up: the interpreter's teardown (most of a second) is skipped.
    assert not marker.exists()


@pytest.mark.slow
@pytest.mark.bound(120)
async def test_svc_mcp_logs_its_url_once(tmp_path: Path) -> None:
    checkout = make_checkout(tmp_path / "c")
    process = await trio.lowlevel.open_process(
        [*SVC, "mcp", "--port", "0"],
        cwd=checkout,
        env=ENV,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stderr is not None
        assert process.stdin is not None
        with trio.fail_after(START_SECONDS):
            text = await process_lines(process, process.stderr, lambda line: "MCP on stdio" in line)
        await process.stdin.aclose()  # the stdio session ends; no HTTP session keeps the server
        with trio.fail_after(20):
            await process.wait()
            while chunk := await process.stderr.receive_some(65536):
                text += chunk.decode()
    finally:
        if process.returncode is None:
            process.kill()
        with trio.CancelScope(shield=True):
            await process.wait()
    urls = re.findall(r"http://127\.0\.0\.1:[0-9]+", text)
    assert len(urls) == 1, text
    assert re.search(r"svc: serving http://127\.0\.0\.1:[0-9]+ — MCP on stdio and on HTTP at /mcp, [0-9]+ tools", text)
