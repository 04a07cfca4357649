"""The `svc mcp` election in process: how a lease is judged, taken over, or bridged to."""

from __future__ import annotations

import functools
import os
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import msgspec
import pytest
import trio

from svc._version import __version__
from svc.api import serve_http
from svc.host._hosting import Timings, server_timings
from svc.host._mcp import decide, elect
from svc.host._service import open_service
from svc.layer import Executable, Lease, LeaseHeld, Repository, acquire_lease, discard_lease, read_lease
from svc.runtime import ExecutableStamp

TIMINGS = Timings(bind_grace=15.0, probe=2.0, join=5.0)
#: A process that is alive and is not this one (init): a lease naming it is held by someone else.
LIVE_PID = 1


def write_lease(repo: Repository, **fields: object) -> Lease:
    stamp = ExecutableStamp.read()
    values: dict[str, object] = {
        "schema": "svc-mcp-lease/v1",
        "pid": LIVE_PID,
        "token": "t-1",
        "root": str(repo.root),
        "url": None,
        "started_at": "2999-01-01T00:00:00Z",
        "executable": {"path": stamp.path, "mtime": stamp.mtime, "size": stamp.size},
        "version": __version__,
    }
    values.update(fields)
    path = repo.local_state / "mcp" / "server.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(msgspec.json.encode(values))
    lease = read_lease(repo)
    assert lease is not None
    return lease


def dead_pid() -> int:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid


def free_url() -> str:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture
def repo(checkout: Path) -> Repository:
    return Repository.discover(checkout)


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


@pytest.fixture
async def live_server(repo: Repository, nursery: trio.Nursery) -> AsyncIterator[str]:
    """A real server of the checkout on port 0, as its leaseholder."""
    async with open_service(repo, surface="mcp", watch=False) as executor:
        executor.runtime.server.leaseholder = True
        shutdown = trio.Event()
        url: str = await nursery.start(functools.partial(serve_http, executor, port=0, shutdown=shutdown))
        yield url
        shutdown.set()


async def test_no_lease_means_serve(repo: Repository, http: httpx.AsyncClient) -> None:
    decision = await decide(repo, http, TIMINGS)
    assert (decision.role, decision.reason) == ("serve", "no process serves this checkout")


async def test_a_dead_holder_is_taken_over(repo: Repository, http: httpx.AsyncClient) -> None:
    pid = dead_pid()
    write_lease(repo, pid=pid, url="http://127.0.0.1:1")
    decision = await decide(repo, http, TIMINGS)
    assert decision.role == "take_over"
    assert decision.reason == f"pid {pid} holds the lease but is not running"
    lease, url = await elect(repo, http, TIMINGS)
    assert url is None
    assert lease is not None
    assert lease.pid == os.getpid()
    assert lease.token != "t-1"


async def test_a_live_holder_whose_url_does_not_answer_is_taken_over(repo: Repository, http: httpx.AsyncClient) -> None:
    dead = free_url()
    write_lease(repo, url=dead)
    decision = await decide(repo, http, TIMINGS)
    assert (decision.role, decision.reason) == ("take_over", f"{dead} does not answer as svc for this checkout")
    lease, url = await elect(repo, http, TIMINGS)
    assert url is None
    assert lease is not None
    assert lease.token != "t-1"
    current = read_lease(repo)
    assert current is not None
    assert current.token == lease.token


async def test_a_holder_still_binding_is_waited_for_until_the_grace_ends(
    repo: Repository, http: httpx.AsyncClient
) -> None:
    write_lease(repo, url=None, started_at="2999-01-01T00:00:00Z")
    assert (await decide(repo, http, TIMINGS)).role == "wait"
    write_lease(repo, url=None, started_at="2000-01-01T00:00:00Z")
    late = await decide(repo, http, TIMINGS)
    assert (late.role, late.reason) == ("take_over", f"pid {LIVE_PID} has not bound a port in 15 s")


async def test_a_replaced_executable_or_an_older_version_is_taken_over(
    repo: Repository, http: httpx.AsyncClient
) -> None:
    stamp = ExecutableStamp.read()
    write_lease(repo, executable={"path": stamp.path, "mtime": stamp.mtime - 1, "size": stamp.size})
    assert (await decide(repo, http, TIMINGS)).reason.endswith("runs an svc that has since been replaced on disk")
    write_lease(repo, version="0.0.1")
    assert (await decide(repo, http, TIMINGS)).reason.endswith(f"runs svc 0.0.1, older than {__version__}")
    write_lease(repo, version=f"{__version__}rc1")  # a pre-release of this very version is older (PEP 440)
    assert (await decide(repo, http, TIMINGS)).reason.endswith(f"runs svc {__version__}rc1, older than {__version__}")


async def test_a_live_server_of_the_checkout_is_bridged_to(
    repo: Repository, http: httpx.AsyncClient, live_server: str
) -> None:
    write_lease(repo, url=live_server)
    decision = await decide(repo, http, TIMINGS)
    assert (decision.role, decision.url) == ("bridge", live_server)
    assert decision.describe() == f"bridge {live_server}: pid {LIVE_PID} serves this checkout"
    assert await elect(repo, http, TIMINGS) == (None, live_server)
    current = read_lease(repo)
    assert current is not None
    assert current.token == "t-1"


async def test_a_server_of_another_checkout_is_not_bridged_to(
    tmp_path: Path, http: httpx.AsyncClient, live_server: str
) -> None:
    other = Repository.discover(tmp_path / "other")
    (tmp_path / "other" / ".ai").mkdir(parents=True)
    write_lease(other, url=live_server)
    assert (await decide(other, http, TIMINGS)).role == "take_over"


def test_discard_removes_only_the_lease_it_judged(repo: Repository) -> None:
    write_lease(repo, token="t-2")
    assert discard_lease(repo, "t-1") is False
    assert read_lease(repo) is not None
    assert discard_lease(repo, "t-2") is True
    assert read_lease(repo) is None
    assert discard_lease(repo, "t-2") is False


def test_the_lease_is_published_whole_and_exclusively(repo: Repository) -> None:
    executable = Executable(path="/x", mtime=1.0, size=2)
    first = acquire_lease(repo, version=__version__, executable=executable, started_at="2026-01-01T00:00:00Z")
    assert read_lease(repo) == first
    write_lease(repo, pid=1, token="init")  # pid 1 is alive: a live holder
    with pytest.raises(LeaseHeld):
        acquire_lease(repo, version=__version__, executable=executable, started_at="2026-01-01T00:00:00Z")
    leftovers = [p.name for p in (repo.local_state / "mcp").iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_the_policy_overrides_the_timings(tmp_path: Path) -> None:
    root = tmp_path / "policy"
    (root / ".ai/repo").mkdir(parents=True)
    (root / ".ai/repo/policy.yaml").write_text("server:\n  probe_seconds: 0.5\n  join_seconds: 3\n", "utf-8")
    timings = server_timings(Repository.discover(root))
    assert (timings.probe, timings.join, timings.bind_grace) == (0.5, 3.0, 15.0)
    assert server_timings(Repository.discover(tmp_path)) == Timings()
