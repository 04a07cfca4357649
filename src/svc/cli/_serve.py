"""`svc serve`: the HTTP server until SIGINT or SIGTERM."""

from __future__ import annotations

import signal

import trio

from svc._service import open_service
from svc.api import serve_http
from svc.layer import Repository

__all__ = ["serve"]


async def _on_signal(shutdown: trio.Event) -> None:
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            shutdown.set()
            return


async def serve(repo: Repository, *, port: int) -> None:
    """Serve `repo` until signalled; the drain after a signal takes at most about a second."""
    shutdown = trio.Event()
    async with open_service(repo, surface="http", watch=True) as executor, trio.open_nursery() as nursery:
        nursery.start_soon(_on_signal, shutdown)
        await serve_http(executor, port=port, shutdown=shutdown)
        nursery.cancel_scope.cancel()
