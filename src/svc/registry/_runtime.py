"""The runtime: what one svc process knows while it serves (registry, checkout, generation, server facts)."""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from svc._version import __version__
from svc.layer import LayerIndex, Repository
from svc.registry._generation import Generation
from svc.registry._registry import Registry

if TYPE_CHECKING:
    from svc.nursery import Engine

__all__ = ["ExecutableStamp", "Runtime", "ServerFacts", "utc_now"]


def utc_now() -> str:
    """Now as RFC 3339 UTC with whole seconds (`2026-11-21T12:00:00Z`)."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True)
class ExecutableStamp:
    """The installed svc package as it was when the process started."""

    path: str
    mtime: float
    size: int

    @classmethod
    def read(cls) -> ExecutableStamp:
        """Stamp the package's version file (an upgrade or reinstall replaces it)."""
        path = Path(__file__).resolve().parent.parent / "_version.py"
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
    engine: Engine | None = None

    _index: tuple[int, LayerIndex] | None = None

    def index(self) -> LayerIndex:
        """The layer index of the current generation (rebuilt when the generation moved)."""
        current = self.generation.value
        if self._index is None or self._index[0] != current:
            self._index = (current, LayerIndex.build(self.repository))
        return self._index[1]

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
