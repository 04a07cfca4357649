"""Serving a checkout: the one sequence `svc serve` and a serving `svc mcp` share.

Open the service (registry, runtime, supervisor, executor, engine and the prepared mesh), bind HTTP, publish
the URL in the lease, start the mesh; on the way out, release the lease.
"""

from __future__ import annotations

import logging
from functools import partial

import trio

from svc._errors import Refused
from svc.api import serve_http
from svc.host._hosting import take_lease, watch_signals
from svc.host._service import open_service
from svc.layer import Lease, LeaseHeld, Repository, publish_url, release_lease
from svc.mesh_udp import Mesh, start_mesh
from svc.plan._prime import priming
from svc.runtime import Executor

__all__ = ["serve", "serve_checkout"]

_log = logging.getLogger("svc.serve")


async def serve_checkout(
    repo: Repository,
    *,
    surface: str,
    port: int,
    lease: Lease | None,
    http: bool,
    stop: trio.Event,
    announce: bool = True,
    task_status: trio.TaskStatus[Executor] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve `repo` from this process until `stop`; `task_status.started(executor)` once it serves.

    With `http`, HTTP is bound on 127.0.0.1 (`port` first), its URL written into `lease` (when this process
    holds it) and the mesh started; without, only the executor runs (a standalone MCP session). The lease is
    released when the service ends, whatever ended it. Without `announce` the bound URL is not logged here
    (the caller logs it once, with what else it serves).
    """
    try:
        mesh = await Mesh.open(repo) if http else None
        with priming(repo):
            async with open_service(repo, surface=surface, watch=True, mesh=mesh) as executor:
                executor.runtime.server.leaseholder = (lease is not None) if http else None
                if not http:
                    task_status.started(executor)
                    await stop.wait()
                    return
                async with trio.open_nursery() as nursery:
                    url = await nursery.start(
                        partial(serve_http, executor, port=port, shutdown=stop, announce=announce)
                    )
                    if lease is not None:
                        lease = await trio.to_thread.run_sync(publish_url, repo, lease, url)
                    if mesh is not None:
                        await start_mesh(mesh, executor.supervisor)
                    task_status.started(executor)
    finally:
        if lease is not None:
            release_lease(repo, lease)


async def serve(repo: Repository, *, port: int) -> None:
    """`svc serve`: hold the lease and serve `repo` until SIGINT, SIGTERM or SIGHUP (drained within a second).

    Raises:
        Refused: a live server already holds this checkout's lease.
    """
    try:
        lease = await trio.to_thread.run_sync(take_lease, repo)
    except LeaseHeld as exc:
        raise Refused(f"{exc}; use that server, or stop it before starting another") from None
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch_signals, stop)
        await nursery.start(partial(serve_checkout, repo, surface="http", port=port, lease=lease, http=True, stop=stop))
    _log.info("svc: stopped")
