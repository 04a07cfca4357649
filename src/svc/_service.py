"""Assembling one process's service: registry, runtime, supervisor and executor."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

from svc.capabilities import builtin_registry
from svc.layer import Repository
from svc.nursery import Engine, Supervisor
from svc.registry import Executor, Generation, Runtime

__all__ = ["open_service"]


@asynccontextmanager
async def open_service(repo: Repository, *, surface: str, watch: bool) -> AsyncIterator[Executor]:
    """Yield the executor of a service over `repo`.

    With `watch`, the repository generation is recomputed in the background (a server); without it the
    generation is pinned for the life of the process (a one-shot command).
    """
    generation = Generation(repo) if watch else Generation(repo, stamp=b"")
    runtime = Runtime(registry=builtin_registry(), repository=repo, generation=generation, surface=surface)
    async with Supervisor.open() as supervisor:
        if watch:
            generation.hooks.append(runtime.warm)
            await trio.to_thread.run_sync(runtime.warm)
            await supervisor.nursery.start(generation.watch)
        executor = Executor(runtime, supervisor)
        runtime.engine = Engine(executor)
        yield executor
