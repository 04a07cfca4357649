"""The context every handler receives: who called, the runtime, and the progress API.

Outside an execution the progress API is silent, so every capability runs the same whether it is called
directly or watched as an execution.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Literal, Protocol

import msgspec
import trio

from svc.runtime._components import Components

if TYPE_CHECKING:
    from svc.runtime._runtime import Runtime

__all__ = ["Actor", "Context", "EventReporter", "LogStream", "Reporter", "Severity"]

ActorKind = Literal["http", "mcp", "cli", "internal"]
LogStream = Literal["stdout", "stderr", "handler"]
Severity = Literal["info", "warning", "error"]


class Actor(msgspec.Struct, frozen=True, kw_only=True):
    """Who asked: a fact recorded for audit and display, never an authorization.

    `transport` says how an MCP session reaches this process (`stdio`, or `http` for `/mcp`); a request
    that arrived over HTTP, on the API or on `/mcp`, never writes the repository.
    """

    kind: ActorKind
    peer: str | None = None
    pid: int | None = None
    transport: Literal["stdio", "http"] | None = None

    @property
    def over_http(self) -> bool:
        """Whether the request came in over the HTTP server (its API routes or `/mcp`)."""
        return self.kind == "http" or self.transport == "http"


class Reporter(Protocol):
    """What an execution records of a handler's progress."""

    def step(self, name: str, title: str) -> None:
        """A named phase starts."""

    def step_done(self, ok: bool, detail: str | None) -> None:
        """The current phase ends."""

    def progress(self, current: int, total: int | None, message: str | None) -> None:
        """How far along the work is."""

    def stream(self, kind: LogStream, message: str) -> None:
        """A line of output."""

    def diagnostic(
        self, severity: Severity, code: str, summary: str, detail: str | None, suggestion: str | None
    ) -> None:
        """A structured finding."""


class EventReporter(ABC):
    """A `Reporter` that turns each call into one execution event (`execution.step.started`, ...).

    Subclasses say where an event goes (`emit`): the execution store, or a terminal's live view.
    """

    def __init__(self) -> None:
        self._step: str | None = None

    @abstractmethod
    def emit(self, kind: str, data: dict[str, Any]) -> None:
        """Deliver one event."""

    def step(self, name: str, title: str) -> None:
        """A named phase starts."""
        self._step = name
        self.emit("execution.step.started", {"name": name, "title": title})

    def step_done(self, ok: bool, detail: str | None) -> None:
        """The current phase ends (nothing when no phase runs)."""
        if self._step is not None:
            self.emit("execution.step.completed", {"name": self._step, "ok": ok, "detail": detail})
            self._step = None

    def progress(self, current: int, total: int | None, message: str | None) -> None:
        """How far along the work is."""
        self.emit("execution.progress", {"current": current, "total": total, "message": message})

    def stream(self, kind: LogStream, message: str) -> None:
        """A line of output."""
        self.emit("execution.log", {"stream": kind, "message": message})

    def diagnostic(
        self, severity: Severity, code: str, summary: str, detail: str | None, suggestion: str | None
    ) -> None:
        """A structured finding."""
        self.emit(
            "execution.diagnostic",
            {"severity": severity, "code": code, "summary": summary, "detail": detail, "suggestion": suggestion},
        )


class Context:
    """Passed to every handler as its first argument."""

    __slots__ = ("actor", "components", "reporter", "runtime")

    def __init__(
        self,
        runtime: Runtime,
        actor: Actor,
        reporter: Reporter | None = None,
        *,
        components: Components | None = None,
    ) -> None:
        self.runtime = runtime
        self.actor = actor
        self.reporter = reporter
        #: The service's components by type (`ctx.components.get(Engine)`), handed over at construction.
        self.components = components if components is not None else Components()

    def is_reporting(self) -> bool:
        """Whether the calls below are recorded (the handler runs as an execution)."""
        return self.reporter is not None

    def step(self, name: str, title: str) -> None:
        """Enter a named phase (names are unique within one execution)."""
        if self.reporter is not None:
            self.reporter.step(name, title)

    def step_done(self, ok: bool = True, detail: str | None = None) -> None:
        """Finish the current phase."""
        if self.reporter is not None:
            self.reporter.step_done(ok, detail)

    def progress(self, current: int, total: int | None = None, message: str | None = None) -> None:
        """Report how far along the work is."""
        if self.reporter is not None:
            self.reporter.progress(current, total, message)

    def log(self, message: str) -> None:
        """A line of the handler's own output."""
        self.stream("handler", message)

    def stream(self, kind: LogStream, message: str) -> None:
        """A line of output on one of the log streams."""
        if self.reporter is not None:
            self.reporter.stream(kind, message)

    def diagnostic(
        self,
        severity: Severity,
        code: str,
        summary: str,
        *,
        detail: str | None = None,
        suggestion: str | None = None,
    ) -> None:
        """A structured finding."""
        if self.reporter is not None:
            self.reporter.diagnostic(severity, code, summary, detail, suggestion)

    async def cancelled(self) -> None:
        """A cancellation checkpoint: raises `trio.Cancelled` when the run was asked to stop."""
        await trio.lowlevel.checkpoint()
