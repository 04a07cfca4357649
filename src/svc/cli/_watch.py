"""The terminal view of an execution: its steps and log lines, a live progress bar, and a closing summary line.

One view shows the events of `svc run` (read from this process's own store), of `svc executions follow` and
`svc run --server` (read from the server's live channel), and what a capability command reports while it runs
(its context's steps and progress). On a terminal (stderr a TTY whose `TERM` is not `dumb`), the bar and the
current step are rich's live display, redrawn in place while the work runs, and every finished step, log line
and diagnostic is printed above it; anywhere else each is one plain line and no bar is drawn. rich is imported
only when a terminal is drawn. Every text shown is sanitised (no escape sequence or control character reaches
the terminal).
"""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TextIO

import msgspec

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID

    from svc.nursery import Engine, Execution, ExecutionView

__all__ = ["Watch", "duration_text", "show_local", "summary_lines"]

#: How often the live display is redrawn (the spinner and the elapsed time move while nothing is reported).
REFRESH_PER_SECOND = 10
#: The longest text of one shown line (a log line is cut with `…` beyond it).
MAX_TEXT = 2000
TERMINAL = frozenset({"execution.completed", "execution.failed", "execution.cancelled"})
Tone = Literal["plain", "good", "bad", "warn", "dim"]
_STYLES: dict[Tone, str] = {"plain": "", "good": "green", "bad": "red", "warn": "yellow", "dim": "dim"}
_SEVERITY_TONE: dict[str, Tone] = {"error": "bad", "warning": "warn", "info": "plain"}


def _text(value: Any) -> str:
    """`value` as one printable line: escape sequences removed, control characters replaced, cut at `MAX_TEXT`."""
    from svc.nursery._events import sanitize

    return sanitize(str(value), MAX_TEXT)


class Watch:
    """Shows one execution (or one capability call) on `stream`: live on a terminal, plain lines elsewhere.

    Use it as a context manager: the live display starts on entry (or, with `lazy`, at the first event
    shown, so that work which reports nothing draws nothing) and stops on exit, whatever ended the block.
    """

    def __init__(self, stream: TextIO | None = None, *, live: bool | None = None, lazy: bool = False) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self._want_live = self.stream.isatty() if live is None else live
        self._lazy = lazy
        self._progress: Progress | None = None
        #: The terminal once drawn on: lines after the live display keep their colour.
        self._console: Console | None = None
        self._task: TaskID | None = None
        self._entered = False
        self._started = False
        self._label = ""
        self._step: str | None = None
        self._titles: dict[str, str] = {}

    @property
    def live(self) -> bool:
        """Whether the live display is drawn (a terminal rich can redraw in place)."""
        return self._progress is not None

    def __enter__(self) -> Watch:
        self._entered = True
        if not self._lazy:
            self._start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()

    def _start(self) -> None:
        if self._started:
            return
        self._started = True
        if not self._want_live:
            return
        from rich.console import Console
        from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        console = Console(file=self.stream, highlight=False)
        if not console.is_interactive:  # TERM=dumb: rich cannot redraw in place
            return
        self._console = console
        self._progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}", markup=False),
            BarColumn(),
            TextColumn("{task.fields[count]}", markup=False),
            TimeElapsedColumn(),
            TextColumn("{task.fields[message]}", markup=False),
            console=console,
            transient=True,
            refresh_per_second=REFRESH_PER_SECOND,
            redirect_stdout=False,
            redirect_stderr=True,
        )
        self._task = self._progress.add_task(self._label or "starting", total=None, count="", message="")
        self._progress.start()

    def stop(self) -> None:
        """Stop the live display (it leaves the screen); later lines are printed under it. Idempotent."""
        progress, self._progress = self._progress, None
        if progress is not None:
            progress.stop()

    # -- what is shown ----------------------------------------------------------------------------------

    def line(self, text: str, tone: Tone = "plain") -> None:
        """One line above the live display (or on its own, plainly); `text` is shown as it is."""
        if self._entered and not self._started:
            self._start()
        if self._console is not None:
            from rich.text import Text

            # While live, rich prints the line above the display and redraws the display under it.
            self._console.print(Text(text, style=_STYLES[tone]), soft_wrap=True)
        else:
            self.stream.write(text + "\n")
            self.stream.flush()

    def _describe(self, description: str) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, description=description, refresh=True)

    def show(self, event: Mapping[str, Any]) -> None:
        """Show one execution event (decoded JSON, the envelope of the protocol)."""
        kind = event.get("type")
        data: Mapping[str, Any] = event.get("data") or {}
        if self._entered and not self._started:
            self._start()
        if kind == "execution.created":
            self._label = _text(data.get("title") or data.get("capability") or "")
            self._describe(self._label)
        elif kind == "execution.queued":
            ahead = int(data.get("ahead") or 0)
            if ahead:
                self.line(f"  queued behind {ahead} other execution{'s' if ahead != 1 else ''}", "dim")
                self._describe("queued")
        elif kind == "execution.started":
            self._describe(self._step or self._label)
        elif kind == "execution.step.started":
            name, title = _text(data.get("name", "")), _text(data.get("title", ""))
            self._titles[name] = title
            self._step = title
            if self._progress is None:
                self.line(f"  … {title}")
            self._describe(title)
        elif kind == "execution.step.completed":
            name = _text(data.get("name", ""))
            ok = bool(data.get("ok"))
            detail = data.get("detail")
            shown = self._titles.pop(name, name)
            self.line(
                f"  {'✓' if ok else '✗'} {shown}" + (f": {_text(detail)}" if detail else ""), "good" if ok else "bad"
            )
            self._step = None
            self._describe(self._label)
        elif kind == "execution.progress":
            self._progress_to(data)
        elif kind == "execution.log":
            self.line(f"    {_text(data.get('message', ''))}", "dim" if data.get("stream") == "handler" else "plain")
        elif kind == "execution.diagnostic":
            severity = str(data.get("severity", "info"))
            text = f"  {severity} {_text(data.get('code', ''))}: {_text(data.get('summary', ''))}"
            self.line(text, _SEVERITY_TONE.get(severity, "plain"))
        elif kind == "execution.cancelling":
            self.line(f"  cancelling (asked by {_text(data.get('by', 'someone'))})", "warn")
            self._describe("cancelling")
        elif kind in TERMINAL:
            self.stop()

    def _progress_to(self, data: Mapping[str, Any]) -> None:
        if self._progress is None or self._task is None:
            return
        current = int(data.get("current") or 0)
        total = data.get("total")
        message = _text(data.get("message") or "")
        if isinstance(total, int) and total > 0:
            self._progress.update(
                self._task, total=total, completed=min(current, total), count=f"{current}/{total}", message=message
            )
        else:
            self._progress.update(self._task, count=str(current), message=message)
        self._progress.refresh()

    def finish(self, view: ExecutionView) -> None:
        """Stop the live display and print the summary line of the execution's end."""
        self.stop()
        for text, tone in summary_lines(view):
            self.line(text, tone)


def duration_text(ms: int) -> str:
    """A duration for people: `under 1 ms`, `12 ms`, `1.2 s`, `3 min 4 s`."""
    if ms < 1:
        return "under 1 ms"
    if ms < 100:
        return f"{ms} ms"
    if ms < 59_950:
        return f"{ms / 1000:.1f} s"
    minutes, seconds = divmod(round(ms / 1000), 60)
    return f"{minutes} min {seconds} s"


def _millis(timestamp: str) -> int:
    return int(dt.datetime.fromisoformat(timestamp).timestamp() * 1000)


def _elapsed(view: ExecutionView) -> int | None:
    """How long the execution ran (from its start; from its creation when it never started)."""
    if view.duration_ms is not None:
        return view.duration_ms
    if view.finished_at is None:
        return None
    return max(0, _millis(view.finished_at) - _millis(view.created_at))


def summary_lines(view: ExecutionView) -> list[tuple[str, Tone]]:
    """The closing lines of an execution: how it ended, after how long, and why when it failed."""
    elapsed = _elapsed(view)
    took = duration_text(elapsed) if elapsed is not None else None
    where = f"({view.id})"
    if view.state == "succeeded":
        return [(f"{view.capability} succeeded" + (f" in {took}" if took else "") + f" {where}", "good")]
    if view.state == "failed":
        error = view.error
        why = f": {_text(error.message)}" if error is not None else ""
        lines: list[tuple[str, Tone]] = [
            (f"{view.capability} failed" + (f" after {took}" if took else "") + f"{why} {where}", "bad")
        ]
        if error is not None and error.suggestion:
            lines.append((f"  {_text(error.suggestion)}", "plain"))
        return lines
    if view.state == "cancelled":
        return [(f"{view.capability} cancelled" + (f" after {took}" if took else "") + f" {where}", "warn")]
    return [(f"{view.capability} is {view.state} {where}", "warn")]


async def show_local(engine: Engine, execution: Execution, *, watch: Watch) -> None:
    """Show an execution of this process's own engine, from its first event to its last."""
    subscriber, replay, _ = engine.store.subscribe(frozenset({execution.id}), capacity=sys.maxsize)
    try:
        for frame in replay:
            watch.show(msgspec.json.decode(frame))
        while not execution.final or subscriber.frames:
            for frame in await subscriber.next_frames():
                watch.show(msgspec.json.decode(frame))
    finally:
        engine.store.unsubscribe(subscriber)
