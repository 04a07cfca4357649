"""`svc run CAPABILITY`: run one execution in this process and report it to the server serving the checkout.

The execution runs in this process's own engine (actor `cli`). When a server serves the checkout, every
event is reported through `executions.report` in batches (at most 500 events and 768 KiB; an empty batch
is the heartbeat), one report in flight, re-sent from the server's `through` until acknowledged. A
`cancel_requested` answer, or Ctrl-C, cancels the execution's scope; a second Ctrl-C exits at once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
from collections import deque
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING

import msgspec
import trio

from svc._errors import SvcError
from svc.nursery import MAX_REPORT_EVENTS, Engine, Execution, RawReport
from svc.registry import ErrorBody

if TYPE_CHECKING:
    import httpx

    from svc.registry import Capability

__all__ = ["Reporter", "View", "interrupts", "run_execution"]

_log = logging.getLogger("svc.run")
BATCH_EVENTS = MAX_REPORT_EVENTS
BATCH_BYTES = 768 * 1024
LINGER_SECONDS = 0.1
HEARTBEAT_SECONDS = 5.0
GIVE_UP_SECONDS = 30.0
RUN_SECONDS = 600.0
FLUSH_SECONDS = 5.0
BACKOFF = (0.25, 0.5, 1.0, 2.0, 4.0, 5.0)
_ENCODER = msgspec.json.Encoder()


class _Receipt(msgspec.Struct, frozen=True, kw_only=True):
    """What the reporter reads of a `ReportAnswer`: where the server holds up to, and a stop request.

    Decoding only these fields keeps a reporter working whatever the server's `execution` view holds.
    """

    through: int
    cancel_requested: bool


_ANSWER = msgspec.json.Decoder(_Receipt)
_ERROR_BODY = msgspec.json.Decoder(ErrorBody)


class Reporter:
    """Reports one local execution to a server, applying its answers (cancel requests).

    The reporter keeps every event the server has not acknowledged in its own buffer (not the store's
    bounded history), so a server that falls behind is sent everything from its `through + 1` once it
    answers again.
    """

    def __init__(self, client: httpx.AsyncClient, url: str, engine: Engine, execution: Execution, cap: Capability):
        self.client = client
        self.url = url
        self.engine = engine
        self.x = execution
        self.cap = cap
        self.through = 0
        self.gave_up = False
        self.behind = False
        self._unacked: deque[str] = deque()

    def _batch(self) -> list[msgspec.Raw]:
        """The unacknowledged events from `through + 1`: at most 500 and 768 KiB (at least one event)."""
        batch: list[msgspec.Raw] = []
        size = 0
        for frame in self._unacked:
            size += len(frame)
            if len(batch) >= BATCH_EVENTS or (batch and size > BATCH_BYTES):
                break
            batch.append(msgspec.Raw(frame.encode()))
        return batch

    async def _send(self, batch: list[msgspec.Raw]) -> None:
        """One report; forgets what the server acknowledged and applies a cancel request.

        Raises:
            OSError: the server could not be reached or answered 5xx (a transport error: retry).
            msgspec.DecodeError: a 200 answer without the `ReportAnswer` fields it reads (retried the same way).
        """
        report = RawReport(
            id=self.x.id,
            capability=self.x.capability,
            title=self.x.title,
            pid=os.getpid(),
            input=self.x.input,
            cancellable=self.x.cancellable,
            events=batch,
        )
        answer = await self.client.post(
            self.url + "/api/v1/executions/report", content=_ENCODER.encode(report), timeout=10.0
        )
        if answer.status_code != 200:
            if answer.status_code >= 500:
                raise OSError(f"the server answered {answer.status_code}")
            try:
                message = _ERROR_BODY.decode(answer.content).error.message
            except msgspec.DecodeError:
                message = answer.text
            _log.warning("svc: the server refused the report: %s; no longer reporting", message)
            self.gave_up = True
            return
        data = _ANSWER.decode(answer.content)
        sent = self.through + len(batch)
        through = min(data.through, self.through + len(self._unacked))
        for _ in range(through - self.through):
            self._unacked.popleft()
        self.through = max(self.through, through)
        self.behind = self.through < sent
        if data.cancel_requested and not self.x.final and not self.x.cancel_requested:
            self.engine.cancel(self.x.id, by="server")

    async def run(self) -> None:
        """Report until the terminal event is acknowledged (or the server is given up on)."""
        subscriber, replay, _ = self.engine.store.subscribe(frozenset({self.x.id}), capacity=sys.maxsize)
        self._unacked.extend(replay)
        last_answer = last_report = trio.current_time()
        first_unsent: float | None = None
        attempt = 0
        try:
            while not self.gave_up:
                self._unacked.extend(subscriber.take())
                now = trio.current_time()
                pending = len(self._unacked)
                if self.x.final and not pending:
                    return
                if pending and first_unsent is None:
                    first_unsent = now
                due = pending > 0 and (
                    self.behind
                    or pending >= BATCH_EVENTS
                    or self.x.final
                    or now - (first_unsent or now) >= LINGER_SECONDS
                )
                if due or now - last_report >= HEARTBEAT_SECONDS:
                    last_report = now
                    try:
                        await self._send(self._batch())
                    except Exception as exc:  # transport errors, unreadable answers
                        if trio.current_time() - last_answer >= GIVE_UP_SECONDS:
                            _log.warning("svc: the server did not answer for 30 s (%s); no longer reporting", exc)
                            self.gave_up = True
                            return
                        await trio.sleep(BACKOFF[min(attempt, len(BACKOFF) - 1)])
                        attempt += 1
                        continue
                    attempt = 0
                    last_answer = trio.current_time()
                    first_unsent = None
                    continue
                wait = HEARTBEAT_SECONDS - (now - last_report)
                if first_unsent is not None:
                    wait = min(wait, LINGER_SECONDS - (now - first_unsent))
                with trio.move_on_after(max(wait, 0.0)):
                    await subscriber.wait()
        finally:
            self.engine.store.unsubscribe(subscriber)


async def interrupts(
    engine: Engine,
    execution: Execution,
    *,
    before_exit: Callable[[], None] | None = None,
    task_status: trio.TaskStatus[None],
) -> None:
    """First Ctrl-C cancels the execution (`by: cli`); a second exits at once (after `before_exit`)."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        task_status.started()
        count = 0
        async for _ in signals:
            count += 1
            if count == 1:
                with contextlib.suppress(SvcError):
                    engine.cancel(execution.id, by="cli")
                sys.stderr.write("svc: cancelling (Ctrl-C again to exit at once)\n")
                sys.stderr.flush()
            else:
                if before_exit is not None:
                    before_exit()
                sys.stderr.flush()
                os._exit(130)


async def _report(reporter: Reporter, reported: trio.Event) -> None:
    try:
        await reporter.run()
    finally:
        reported.set()


#: Shows an execution while it runs (the command line's terminal view); returns when it has ended.
View = Callable[[Engine, Execution], Awaitable[None]]


async def _view(view: View, engine: Engine, execution: Execution, viewed: trio.Event) -> None:
    try:
        await view(engine, execution)
    finally:
        viewed.set()


async def run_execution(
    engine: Engine,
    cap: Capability,
    params: msgspec.Struct,
    *,
    quiet: bool,
    view: View | None = None,
    before_exit: Callable[[], None] | None = None,
) -> Execution:
    """Run one execution of `cap` here, reporting it when a server serves the checkout; wait ≤ 600 s.

    `view`, when given, runs beside the execution (a terminal view of its steps and progress) and is waited for
    (at most 5 s) once the execution ended, so that it shows the last event. `before_exit` runs before a second
    Ctrl-C ends the process at once (the view gives the terminal back).
    """
    import httpx

    from svc.host._remote import find_server
    from svc.runtime import Actor

    async with httpx.AsyncClient() as client:
        url = await find_server(engine.executor.runtime.repository, client)
        if url is None and not quiet:
            sys.stderr.write(
                "svc: no server serves this repository (start one with svc serve); nobody else can see this run\n"
            )
        execution = engine.start(cap, params, actor=Actor(kind="cli", pid=os.getpid()))
        async with trio.open_nursery() as nursery:
            await nursery.start(partial(interrupts, engine, execution, before_exit=before_exit))
            viewed = trio.Event()
            if view is not None:
                nursery.start_soon(_view, view, engine, execution, viewed)
            else:
                viewed.set()
            reported = trio.Event()
            if url is not None:
                nursery.start_soon(_report, Reporter(client, url, engine, execution, cap), reported)
            else:
                reported.set()
            with trio.move_on_after(RUN_SECONDS):
                await execution.done.wait()
            if not execution.final:
                engine.cancel(execution.id, by="cli")
                await execution.done.wait()
            with trio.move_on_after(FLUSH_SECONDS):
                await reported.wait()
                await viewed.wait()
            nursery.cancel_scope.cancel()
    return execution
