"""Real servers whose mesh cooperates, in this process: each over its own checkout, key and ports on loopback.

`serving(tmp_path, count)` starts `count` runtimes as `svc serve` runs one (the service, HTTP on 127.0.0.1
port 0, then the mesh), each declaring the others' link ports as seeds (`udp://127.0.0.1:<port>`), multicast
off, an allowlist of every runtime's key, a 1 s heartbeat and a 3 s expiry. `lease(runtime)` publishes the
server's URL in the checkout's lease, so an in-process `svc mesh ...` (CliRunner) asks that server.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import trio
from asyncclick.testing import CliRunner

from svc import __version__
from svc.api import serve_http
from svc.cli import build_cli
from svc.host._service import open_service
from svc.layer import Repository, acquire_lease, publish_url, release_lease
from svc.mesh_udp import Cooperation, Mesh, create_identity, start_mesh
from svc.runtime import Executor
from tests.conftest import make_checkout
from tests.mesh_udp._loopback import free_udp_port
from tests.mesh_udp._runtimes import declare

#: Heartbeat and expiry of the test runtimes (the expiry is the least the declaration allows: 3 heartbeats).
HEARTBEAT = 1
EXPIRY = 3


@dataclass
class Served:
    """One serving runtime: its checkout, executor, mesh and URL."""

    root: Path
    executor: Executor
    mesh: Mesh
    url: str

    @property
    def coop(self) -> Cooperation:
        coop = self.mesh.cooperation
        assert coop is not None, self.mesh.cooperation_reason()
        return coop

    @property
    def repo(self) -> Repository:
        return Repository.discover(self.root)


def settings(keys: list[str], port: int, seeds: list[int]) -> dict[str, Any]:
    """A declaration on loopback: multicast off, these keys allowed, this link port, these seeds."""
    return {
        "interfaces": ["127.0.0.1"],
        "multicast": {"enabled": False},
        "trust": {"policy": "allowlist", "allow": keys},
        "cooperation": {
            "port": port,
            "heartbeat_seconds": HEARTBEAT,
            "expiry_seconds": EXPIRY,
            "seeds": [f"udp://127.0.0.1:{p}" for p in seeds],
        },
    }


@asynccontextmanager
async def serving(tmp_path: Path, count: int, *, declared: bool = True) -> AsyncIterator[list[Served]]:
    """`count` runtimes serving their checkouts, each with its mesh started (undeclared: no mesh at all)."""
    key_files = [tmp_path / f"key{i}" / "node.json" for i in range(count)]
    keys = [create_identity(path).public_key for path in key_files]
    ports = [free_udp_port() for _ in range(count)]
    served: list[Served] = []
    async with AsyncExitStack() as stack:
        for i in range(count):
            root = make_checkout(tmp_path / f"runtime{i}")
            if declared:
                declare(root, settings(keys, ports[i], [p for j, p in enumerate(ports) if j != i]))
            repo = Repository.discover(root)
            mesh = await Mesh.open(repo, identity_file=key_files[i])
            executor = await stack.enter_async_context(open_service(repo, surface="http", watch=False, mesh=mesh))
            nursery = await stack.enter_async_context(trio.open_nursery())
            shutdown = trio.Event()
            stack.callback(shutdown.set)
            stack.callback(mesh.stop)
            url: str = await nursery.start(functools.partial(serve_http, executor, port=0, shutdown=shutdown))
            await start_mesh(mesh, executor.supervisor)
            served.append(Served(root=root, executor=executor, mesh=mesh, url=url))
        yield served


def linked(a: Cooperation, b: Cooperation) -> bool:
    """Whether `a` and `b` hold a live link to each other (in either direction)."""
    now = trio.current_time()
    return a.links.linked(b.key, now) and b.links.linked(a.key, now)


async def wait_linked(runtimes: list[Served]) -> None:
    """Until every pair of runtimes is linked."""
    coops = [r.coop for r in runtimes]
    await coops[0].wait_until(lambda: all(linked(a, b) for a in coops for b in coops if a is not b))


async def until(coop: Cooperation, predicate: Callable[[], bool]) -> None:
    """Until `predicate()` holds, re-checked at every exchange, write and beat of `coop`."""
    await coop.wait_until(predicate)


@contextmanager
def lease(runtime: Served) -> Iterator[None]:
    """The checkout's lease names this process and the runtime's URL for the block."""
    repo = runtime.repo
    held = acquire_lease(repo, version=__version__, executable=None, started_at="2026-01-01T00:00:00Z")
    held = publish_url(repo, held, runtime.url)
    try:
        yield
    finally:
        release_lease(repo, held)


async def svc(root: Path, *args: str) -> tuple[int, str, str]:
    """`svc --repo ROOT ARGS...` in this process: the exit code, stdout and stderr."""
    result = await CliRunner().invoke(build_cli(), ["--repo", str(root), *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


async def svc_json(root: Path, *args: str) -> tuple[int, Any]:
    """`svc --repo ROOT ARGS... --json`: the exit code and the decoded answer (None when nothing was printed)."""
    code, out, _ = await svc(root, *args, "--json")
    return code, msgspec.json.decode(out) if out.strip() else None
