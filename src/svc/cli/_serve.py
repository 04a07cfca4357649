"""`svc serve`: hold the checkout's lease and serve HTTP until SIGINT, SIGTERM or SIGHUP."""

from __future__ import annotations

from functools import partial

import trio

from svc._errors import Refused
from svc._service import open_service
from svc.api import serve_http
from svc.cli._hosting import take_lease, watch_signals
from svc.layer import Lease, LeaseHeld, Repository, publish_url, release_lease
from svc.mesh_udp import start_mesh
from svc.registry import Runtime

__all__ = ["serve"]


def _take_lease(runtime: Runtime) -> Lease | None:
    try:
        return take_lease(runtime)
    except LeaseHeld as exc:
        raise Refused(f"{exc}; use that server, or stop it before starting another") from None


async def serve(repo: Repository, *, port: int) -> None:
    """Serve `repo` until signalled; the drain after a signal takes at most about a second.

    Raises:
        Refused: a live server already holds this checkout's lease.
    """
    shutdown = trio.Event()
    async with open_service(repo, surface="http", watch=True) as executor:
        runtime = executor.runtime
        lease = _take_lease(runtime)
        runtime.server.leaseholder = lease is not None
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(watch_signals, shutdown)
                url = await nursery.start(partial(serve_http, executor, port=port, shutdown=shutdown))
                if lease is not None:
                    lease = await trio.to_thread.run_sync(publish_url, repo, lease, url)
                await start_mesh(runtime, executor.supervisor)
        finally:
            if lease is not None:
                release_lease(repo, lease)
