"""The runtime: what one svc process knows while it serves (registry, checkout, generation, server facts)."""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass, field
from pathlib import Path

import trio

from svc._version import __version__
from svc.layer import LayerIndex, LayerReading, ObjectIndex, Repository, read_manifest
from svc.registry._registry import Registry
from svc.runtime._generation import Generation

__all__ = ["ExecutableStamp", "McpAttachments", "Runtime", "ServerFacts", "utc_now"]


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

    def attach(self, transport: str) -> None:
        """One more session on `transport` (`stdio`, `bridged` or `http`)."""
        setattr(self, transport, getattr(self, transport) + 1)

    def detach(self, transport: str) -> None:
        """One session fewer on `transport`."""
        setattr(self, transport, max(0, getattr(self, transport) - 1))


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

    def index(self) -> LayerIndex:
        """The layer index of the current generation (rebuilt when the generation moved)."""
        current = self.generation.value
        if self._index is None or self._index[0] != current:
            self._index = (current, LayerIndex.build(self.repository))
        return self._index[1]

    _manifest: tuple[int, LayerReading] | None = None

    def manifest(self) -> LayerReading:
        """The manifest reading of the current generation (re-read when the generation moved)."""
        current = self.generation.value
        if self._manifest is None or self._manifest[0] != current:
            self._manifest = (current, read_manifest(self.repository))
        return self._manifest[1]

    def warm(self) -> None:
        """Build the resident layer state of the current generation (call it from a worker thread)."""
        self.manifest()
        self.index()
        self.objects()

    def objects(self) -> ObjectIndex:
        """The objects of the layer as of the current generation (rediscovered when it moved).

        Discovery runs `git ls-files` once per generation; call `objects_async` from a task.
        """
        current = self.generation.value
        if self._objects is None or self._objects[0] != current:
            self._objects = (current, ObjectIndex.build(self.repository))
        return self._objects[1]

    async def objects_async(self) -> ObjectIndex:
        """`objects()`, discovering in a worker thread when the generation moved."""
        current = self.generation.value
        if self._objects is not None and self._objects[0] == current:
            return self._objects[1]
        index = await trio.to_thread.run_sync(ObjectIndex.build, self.repository)
        self._objects = (current, index)
        return index

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
