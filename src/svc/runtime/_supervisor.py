"""The supervisor: the nursery of svc's long-lived tasks, and the cancel scope of every handler run.

Long-lived work (watchers, the mesh's tasks, executions) runs as tasks of the supervisor nursery, each in its
own cancel scope. A direct call (`Supervisor.run`, what `Executor.call` runs a handler with) runs in the
caller's own task, inside a cancel scope of its own that the supervisor holds while it runs: a caller that is
cancelled (a client went away) unwinds it as any trio code unwinds, and when the supervisor closes
(shutdown) it cancels every run still going and waits, shielded and at most `UNWIND_SECONDS`, for them to
end. Running in the caller's task spares each call a task spawn and two switches, a measurable part of a
small request. A caller that always ends before the supervisor closes (the HTTP server's requests) runs
without a scope of its own (`scoped=False`).
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
        #: The cancel scopes of the scoped runs going now, and how many unscoped runs are going.
        self._scopes: set[trio.CancelScope] = set()
        self._unscoped = 0
        self._drained: trio.Event | None = None

    @classmethod
    @asynccontextmanager
    async def open(cls) -> AsyncIterator[Supervisor]:
        """Open a supervisor; leaving the block cancels every task and run still going.

        The runs (in their callers' tasks) are waited for at most `UNWIND_SECONDS`; the nursery's tasks until
        they end. An exception raised by the block leaves as itself, not wrapped in an exception group.
        """
        try:
            async with trio.open_nursery() as nursery:
                supervisor = cls(nursery)
                try:
                    yield supervisor
                finally:
                    supervisor._closing = True
                    nursery.cancel_scope.cancel()
                    await supervisor._drain()
        except BaseExceptionGroup as group:
            if len(group.exceptions) == 1:
                raise group.exceptions[0] from None
            raise

    async def _drain(self) -> None:
        """Cancel every run still going and wait, shielded, at most `UNWIND_SECONDS` for them to end."""
        for scope in self._scopes:
            scope.cancel()
        if not self.active:
            return
        self._drained = trio.Event()
        with trio.move_on_after(UNWIND_SECONDS, shield=True) as waited:
            await self._drained.wait()
        if waited.cancelled_caught:
            _log.warning("%d cancelled run(s) did not unwind within %.1f s of shutdown", self.active, UNWIND_SECONDS)

    @property
    def active(self) -> int:
        """How many runs are going now."""
        return len(self._scopes) + self._unscoped

    @property
    def nursery(self) -> trio.Nursery:
        """The supervisor nursery, for long-lived tasks (watchers, executions)."""
        return self._nursery

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: Any, name: str | None = None) -> None:
        """Start a background task under the supervisor."""
        self._nursery.start_soon(fn, *args, name=name)

    async def run(self, fn: Callable[..., Awaitable[T]], *args: Any, scoped: bool = True) -> T:
        """Run `fn(*args)` in this task, in a cancel scope of its own the supervisor cancels when it closes.

        `scoped=False` is for a caller that always ends before the supervisor closes (a request of the HTTP
        server, which serves inside the service and drains its requests before the service ends): its run is
        counted and refused once the supervisor is closing, as any run, but has no scope of its own, which
        would cost a request a noticeable share of its CPU time and could never be used.

        Raises:
            Unavailable: the supervisor is closing and takes no new work, or closed during the run.
            Exception: whatever `fn` raised.
        """
        if self._closing:
            raise Unavailable("the service is stopping")
        if not scoped:
            self._unscoped += 1
            try:
                return await fn(*args)
            finally:
                self._unscoped -= 1
                self._ended()
        scope = trio.CancelScope()
        self._scopes.add(scope)
        try:
            with scope:
                return await fn(*args)
        finally:
            self._scopes.discard(scope)
            self._ended()
        raise Unavailable("the service stopped before the call finished")

    def _ended(self) -> None:
        """A run ended: the last one to end while the supervisor drains wakes the drain."""
        if not self.active and self._drained is not None:
            self._drained.set()
