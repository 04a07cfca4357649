"""The supervisor nursery: every handler run is a task of it, each under its own cancel scope.

A caller awaits `Supervisor.run`; the work runs as a child task of the supervisor, not of the caller. When
the caller is cancelled (a client went away), the run's own scope is cancelled and the caller waits a short,
shielded moment for it to unwind. When the supervisor closes (shutdown), every run is cancelled at once.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import trio

from svc._errors import Unavailable

__all__ = ["Supervisor"]

T = TypeVar("T")
_log = logging.getLogger("svc.nursery")

#: How long a cancelled caller waits for its run to unwind before leaving it to the supervisor.
UNWIND_SECONDS = 1.0


class Supervisor:
    """Owns the nursery in which handlers run; create it with `Supervisor.open()`."""

    def __init__(self, nursery: trio.Nursery) -> None:
        self._nursery = nursery
        self._closing = False
        self.active = 0

    @classmethod
    @asynccontextmanager
    async def open(cls) -> AsyncIterator[Supervisor]:
        """Open a supervisor; leaving the block cancels every run still going.

        An exception raised by the block leaves as itself, not wrapped in an exception group.
        """
        try:
            async with trio.open_nursery() as nursery:
                supervisor = cls(nursery)
                try:
                    yield supervisor
                finally:
                    supervisor._closing = True
                    nursery.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            if len(group.exceptions) == 1:
                raise group.exceptions[0] from None
            raise

    @property
    def nursery(self) -> trio.Nursery:
        """The supervisor nursery, for long-lived tasks (watchers, executions)."""
        return self._nursery

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: Any, name: str | None = None) -> None:
        """Start a background task under the supervisor."""
        self._nursery.start_soon(fn, *args, name=name)

    async def run(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Run `fn(*args)` as a supervised task in its own cancel scope and return its result.

        Raises:
            Unavailable: the supervisor is closing and takes no new work, or closed during the run.
            Exception: whatever `fn` raised, re-raised in the caller.
        """
        if self._closing:
            raise Unavailable("the service is stopping")
        scope = trio.CancelScope()
        done = trio.Event()
        outcome: list[Any] = []
        failure: list[BaseException] = []

        async def task() -> None:
            self.active += 1
            try:
                with scope:
                    try:
                        outcome.append(await fn(*args))
                    except trio.Cancelled:
                        raise
                    except Exception as exc:
                        failure.append(exc)
            finally:
                self.active -= 1
                done.set()

        self._nursery.start_soon(task)
        try:
            await done.wait()
        except trio.Cancelled:
            scope.cancel()
            with trio.move_on_after(UNWIND_SECONDS, shield=True) as unwind:
                await done.wait()
            if unwind.cancelled_caught:
                _log.warning("a cancelled run did not unwind within %.1f s", UNWIND_SECONDS)
            raise
        if failure:
            raise failure[0]
        if not outcome:
            raise Unavailable("the service stopped before the call finished")
        result: T = outcome[0]
        return result
