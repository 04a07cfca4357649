"""`svc serve`: hold the checkout's lease and serve HTTP until SIGINT, SIGTERM or SIGHUP."""

from __future__ import annotations

import logging
import signal
from functools import partial

import trio

from svc._errors import Refused
from svc._service import open_service
from svc.api import serve_http
from svc.layer import Executable, Lease, LeaseHeld, Repository, acquire_lease, publish_url, release_lease
from svc.registry import Runtime

__all__ = ["serve"]

_log = logging.getLogger("svc.serve")


async def _on_signal(shutdown: trio.Event) -> None:
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as signals:
        async for _ in signals:
            shutdown.set()
            return


def _take_lease(runtime: Runtime) -> Lease | None:
    repo = runtime.repository
    if not repo.has_layer:
        _log.info("svc: this checkout has no .ai/ folder; serving without a lease")
        return None
    stamp = runtime.executable
    try:
        return acquire_lease(
            repo,
            version=runtime.version,
            executable=Executable(path=stamp.path, mtime=stamp.mtime, size=stamp.size),
            started_at=runtime.started_at,
        )
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
                nursery.start_soon(_on_signal, shutdown)
                url = await nursery.start(partial(serve_http, executor, port=port, shutdown=shutdown))
                if lease is not None:
                    lease = await trio.to_thread.run_sync(publish_url, repo, lease, url)
        finally:
            if lease is not None:
                release_lease(repo, lease)
