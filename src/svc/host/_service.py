"""Assembling one process's service: registry, runtime, supervisor, executor and its components."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from svc.capabilities import builtin_registry
from svc.layer import Repository
from svc.nursery import Engine
from svc.registry import Registry
from svc.runtime import Executor, Generation, Runtime, Supervisor

if TYPE_CHECKING:
    from svc.mesh_udp import Mesh

__all__ = ["open_service"]


@asynccontextmanager
async def open_service(
    repo: Repository,
    *,
    surface: str,
    watch: bool,
    mesh: Mesh | None = None,
    registry: Registry | None = None,
) -> AsyncIterator[Executor]:
    """Yield the executor of a service over `repo`, with its execution engine (and `mesh`, when given).

    With `watch`, the repository generation is recomputed in the background (a server); without it the
    generation is pinned for the life of the process (a one-shot command). A server prepares its mesh
    (`Mesh.open`) and starts it once it serves; a one-shot command runs none. Leaving the block cancels every
    task of the supervisor.
    """
    generation = Generation(repo) if watch else Generation(repo, stamp=b"")
    runtime = Runtime(registry=registry or builtin_registry(), repository=repo, generation=generation, surface=surface)
    async with Supervisor.open() as supervisor:
        if watch:
            generation.hooks.append(runtime.warm)
            await runtime.warm_async()
            await supervisor.nursery.start(generation.watch)
        if mesh is not None:
            mesh.mcp_sessions = runtime.mcp.peers.keys
        yield Executor(runtime, supervisor, components=() if mesh is None else (mesh,), built=(Engine,))
