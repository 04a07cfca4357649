"""The runtime: what one svc process knows while it serves (registry, checkout, generation, server facts).

The resident layer state (manifest reading, layer index, object index) is built off the event loop: `warm`
runs in a worker thread (at start and after each repository change the watcher sees), one build at a time,
and the async callers wait for it at most `BUILD_SECONDS`. `resident` answers the state last built, of any
generation, without building anything.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import trio

from svc._errors import Unavailable
from svc._version import __version__
from svc.layer import LayerIndex, LayerReading, ObjectIndex, Repository, read_manifest
from svc.registry._registry import Registry
from svc.runtime._generation import Generation

_T = TypeVar("_T")

__all__ = ["BUILD_SECONDS", "ExecutableStamp", "McpAttachments", "Runtime", "ServerFacts", "utc_now"]

_log = logging.getLogger("svc.runtime")
#: How long an async caller waits for a build of the layer state (the build itself goes on in its thread).
BUILD_SECONDS = 30.0


def utc_now() -> str:
    """Now as RFC 3339 UTC with whole seconds (`2026-11-21T12:00:00Z`)."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


_VERSION_FILE = Path(__file__).resolve().parent.parent / "_version.py"


@dataclass(frozen=True, slots=True)
class ExecutableStamp:
    """The installed svc package as it was when the process started."""

    path: str
    mtime: float
    size: int

    @classmethod
    def read(cls) -> ExecutableStamp:
        """Stamp the package's version file (an upgrade or reinstall replaces it)."""
        path = _VERSION_FILE
        try:
            st = path.stat()
        except OSError:
            return cls(path=str(path), mtime=0.0, size=0)
        return cls(path=str(path), mtime=st.st_mtime, size=st.st_size)


@dataclass(slots=True)
class ServerFacts:
    """The HTTP server this process runs, if any."""

    url: str | None = None
    leaseholder: bool | None = None


@dataclass(slots=True)
class McpAttachments:
    """MCP sessions attached to this process now, by how the client reaches it.

    `stdio` counts sessions served on this process's own stdin/stdout; `bridged` counts stdio sessions of
    other `svc mcp` processes that reach this one through `/mcp`; `http` counts the other sessions on `/mcp`.
    Sessions of the 2026-07-28 era over HTTP are single requests and are never attached.
    """

    stdio: int = 0
    bridged: int = 0
    http: int = 0
    #: The peer ids of the attached sessions that have one (how many sessions hold each).
    peers: dict[str, int] = field(default_factory=dict)

    def attach(self, transport: str, peer: str | None = None) -> None:
        """One more session on `transport` (`stdio`, `bridged` or `http`), with its peer id when known."""
        setattr(self, transport, getattr(self, transport) + 1)
        if peer is not None:
            self.peers[peer] = self.peers.get(peer, 0) + 1

    def detach(self, transport: str, peer: str | None = None) -> None:
        """One session fewer on `transport`."""
        setattr(self, transport, max(0, getattr(self, transport) - 1))
        if peer is not None and peer in self.peers:
            self.peers[peer] -= 1
            if self.peers[peer] <= 0:
                del self.peers[peer]


@dataclass(slots=True)
class Runtime:
    """Shared state of one process; handlers reach it as `ctx.runtime`."""

    registry: Registry
    repository: Repository
    generation: Generation
    surface: str = "cli"
    started_at: str = field(default_factory=utc_now)
    executable: ExecutableStamp = field(default_factory=ExecutableStamp.read)
    server: ServerFacts = field(default_factory=ServerFacts)
    version: str = __version__
    commit: str | None = field(default_factory=lambda: _own_commit())
    mcp: McpAttachments = field(default_factory=McpAttachments)

    _index: tuple[int, LayerIndex] | None = None
    _objects: tuple[int, ObjectIndex] | None = None
    _building: threading.Lock = field(default_factory=threading.Lock)
    _objects_building: threading.Lock = field(default_factory=threading.Lock)

    def index(self) -> LayerIndex:
        """The layer index of the current generation (rebuilt when the generation moved; blocking)."""
        current = self.generation.value
        if self._index is None or self._index[0] != current:
            self._index = (current, LayerIndex.build(self.repository))
        return self._index[1]

    _manifest: tuple[int, LayerReading] | None = None
    _derived: dict[Callable[[Repository], Any], tuple[int, Any]] = field(default_factory=dict)
    _deriving: threading.Lock = field(default_factory=threading.Lock)

    def derived(self, build: Callable[[Repository], _T]) -> _T:
        """What `build` derives from the checkout, as of the current generation (rebuilt when it moved; blocking).

        One build at a time: callers of one generation wait for the build in progress and share what it built
        (the plan a claim-aware `plan.next` or a `plan.take` weighs, read once per generation).
        """
        with self._deriving:
            current = self.generation.value
            held = self._derived.get(build)
            if held is None or held[0] != current:
                held = self._derived[build] = (current, build(self.repository))
            value: _T = held[1]
            return value

    def manifest(self) -> LayerReading:
        """The manifest reading of the current generation (re-read when the generation moved; blocking)."""
        current = self.generation.value
        if self._manifest is None or self._manifest[0] != current:
            self._manifest = (current, read_manifest(self.repository))
        return self._manifest[1]

    def warm(self) -> None:
        """Build the resident layer state of the current generation (blocking: call it from a worker thread).

        One build at a time: a call while another builds returns at once, and the running build starts
        over until what it built is the current generation.
        """
        while True:
            if not self._building.acquire(blocking=False):
                return
            try:
                built = self.generation.value
                self.manifest()
                self.index()
                self.objects()
            finally:
                self._building.release()
            if self.generation.value == built:
                return

    async def warm_async(self) -> bool:
        """`warm()` in a worker thread, waited for at most `BUILD_SECONDS`; whether it finished by then.

        Past the deadline the caller goes on and the build finishes in its thread (`resident` then has it).
        """
        with trio.move_on_after(BUILD_SECONDS):
            await trio.to_thread.run_sync(self.warm, abandon_on_cancel=True)
            return True
        _log.warning("svc: building the layer state took over %.0f s; it goes on in the background", BUILD_SECONDS)
        return False

    def resident(self) -> tuple[LayerReading, LayerIndex] | None:
        """The manifest reading and layer index last built, of any generation; None before the first build.

        Never builds, never touches the disk: what `health.ready` answers from.
        """
        manifest, index = self._manifest, self._index
        if manifest is None or index is None:
            return None
        return manifest[1], index[1]

    def objects(self) -> ObjectIndex:
        """The objects of the layer as of the current generation (rediscovered when it moved).

        Discovery runs `git ls-files` once per generation; call `objects_async` from a task.
        """
        current = self.generation.value
        if self._objects is None or self._objects[0] != current:
            self._objects = (current, ObjectIndex.build(self.repository))
        return self._objects[1]

    async def objects_async(self, *, fresh: bool = False) -> ObjectIndex:
        """`objects()` without blocking the event loop.

        When the generation moved and an index of an earlier generation is held, that index answers at once
        while a worker thread builds the current one (unless `fresh`: then the caller waits for it, like the
        first build does).

        Raises:
            Unavailable: discovery did not finish within `BUILD_SECONDS`.
        """
        current = self.generation.value
        held = self._objects
        if held is not None and held[0] == current:
            return held[1]
        if held is not None and not fresh:
            self._rebuild_objects()
            return held[1]
        with trio.move_on_after(BUILD_SECONDS):
            index = await trio.to_thread.run_sync(ObjectIndex.build, self.repository, abandon_on_cancel=True)
            self._objects = (current, index)
            return index
        raise Unavailable(f"the layer's objects were not discovered within {BUILD_SECONDS:.0f} s; try again")

    def _rebuild_objects(self) -> None:
        """Build the current generation's objects in a daemon thread, unless a rebuild already runs."""
        if not self._objects_building.acquire(blocking=False):
            return

        def rebuild() -> None:
            try:
                while True:
                    built = self.generation.value
                    self._objects = (built, ObjectIndex.build(self.repository))
                    if self.generation.value == built:
                        return
            except Exception:
                _log.exception("svc: rebuilding the layer's objects failed; the previous index goes on answering")
            finally:
                self._objects_building.release()

        threading.Thread(target=rebuild, name="svc-objects", daemon=True).start()

    def stale(self) -> bool:
        """Whether the installed svc changed on disk since this process started."""
        return ExecutableStamp.read() != self.executable


def _own_commit() -> str | None:
    """The commit of the source tree svc runs from, when it runs from a checkout of itself."""
    source = Path(__file__).resolve().parent.parent
    repo = Repository.discover(source)
    if repo.git_dir is None or not (repo.root / "src" / "svc").is_dir() or os.environ.get("SVC_NO_COMMIT"):
        return None
    return repo.git().head
