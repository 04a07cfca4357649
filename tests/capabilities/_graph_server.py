"""Fixtures of the graph and directory capability tests: the fixture layer, its service and a real server."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio

from svc.api import serve_http
from svc.host._service import open_service
from svc.layer import Repository
from svc.runtime import Executor
from tests.layer._graph_layer import write_graph_layer


@pytest.fixture
def layer_root(tmp_path: Path) -> Path:
    """A checkout carrying the graph fixture layer."""
    return write_graph_layer(tmp_path / "checkout").resolve()


@pytest.fixture
async def layer_executor(layer_root: Path) -> AsyncIterator[Executor]:
    """The service over the fixture layer, generation pinned."""
    async with open_service(Repository.discover(layer_root), surface="http", watch=False) as ex:
        yield ex


@pytest.fixture
async def layer_server(layer_executor: Executor, nursery: trio.Nursery) -> AsyncIterator[str]:
    """A real server over the fixture layer on 127.0.0.1, port 0; yields its URL."""
    shutdown = trio.Event()
    url: str = await nursery.start(functools.partial(serve_http, layer_executor, port=0, shutdown=shutdown))
    yield url
    shutdown.set()
