"""The server lease `.ai/local/state/mcp/server.json`: which process serves this checkout, and where."""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec

from svc.layer._files import ensure_local_state, temp_beside, write_atomic
from svc.layer._read import read_repository_file
from svc.layer._repository import Repository

__all__ = [
    "Lease",
    "LeaseHeld",
    "acquire_lease",
    "discard_lease",
    "lease_path",
    "pid_alive",
    "publish_url",
    "read_lease",
    "release_lease",
]

SCHEMA = "svc-mcp-lease/v1"
#: The largest lease file read (a lease is a few hundred bytes).
_LEASE_LIMIT = 64 * 1024


class Executable(msgspec.Struct, frozen=True, kw_only=True):
    """The running program as the holder saw it."""

    path: str
    mtime: float
    size: int


class Lease(msgspec.Struct, frozen=True, kw_only=True):
    """A lease as written by a server (unknown keys are ignored)."""

    schema: str
    pid: int
    token: str
    root: str
    url: str | None = None
    started_at: str | None = None
    executable: Executable | None = None
    version: str | None = None


class LeaseHeld(Exception):
    """Another live process holds the lease of this checkout."""

    def __init__(self, lease: Lease) -> None:
        super().__init__(f"pid {lease.pid} already serves this repository at {lease.url or '(binding)'}")
        self.lease = lease


def lease_path(repo: Repository) -> str:
    """The lease file of `repo`, as a path string."""
    return str(repo.local_state / "mcp" / "server.json")


@contextlib.contextmanager
def _takeover_lock(repo: Repository) -> Iterator[None]:
    lock = repo.local_state / "mcp" / "server.json.lock"
    fd = os.open(lock, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def acquire_lease(repo: Repository, *, version: str, executable: Executable | None, started_at: str) -> Lease:
    """Create the lease exclusively (`url` null until bound); take over a dead holder's lease.

    The lease is written to a temporary file and hard-linked to its name, which fails when the name is
    taken: a reader never sees an empty lease, and of two processes starting at once exactly one wins.

    Raises:
        LeaseHeld: a live process holds it.
    """
    directory = ensure_local_state(repo.layer / "local") / "mcp"
    directory.mkdir(parents=True, exist_ok=True)
    os.chmod(repo.local_state, 0o700)
    pid = os.getpid()
    lease = Lease(
        schema=SCHEMA,
        pid=pid,
        token=f"{pid}-{time.time_ns():x}",
        root=str(repo.root),
        url=None,
        started_at=started_at,
        executable=executable,
        version=version,
    )
    path = directory / "server.json"
    while True:
        if _publish_exclusive(path, msgspec.json.encode(lease)):
            return lease
        with _takeover_lock(repo):
            held = read_lease(repo)
            if held is not None and pid_alive(held.pid) and held.pid != pid:
                raise LeaseHeld(held) from None
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


def _publish_exclusive(path: Path, data: bytes) -> bool:
    """Write `data` to a temporary file and link it to `path`; False when `path` already exists."""
    fd, tmp = temp_beside(path)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o600)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        return True
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def discard_lease(repo: Repository, token: str) -> bool:
    """Remove the lease if it still carries `token` (taking over a holder judged stale); True when removed.

    Runs under the takeover lock, so of several processes judging the same holder stale only the first
    removes it; the others find another lease (or none) and elect again.
    """
    with _takeover_lock(repo):
        current = read_lease(repo)
        if current is None or current.token != token:
            return False
        with contextlib.suppress(FileNotFoundError):
            (repo.local_state / "mcp" / "server.json").unlink()
        return True


def publish_url(repo: Repository, lease: Lease, url: str) -> Lease:
    """Record the bound URL in our lease (a no-op when the lease is no longer ours)."""
    bound = msgspec.structs.replace(lease, url=url)
    current = read_lease(repo)
    if current is not None and current.token == lease.token:
        write_atomic(repo.local_state / "mcp" / "server.json", msgspec.json.encode(bound), mode=0o600)
    return bound


def release_lease(repo: Repository, lease: Lease) -> None:
    """Remove the lease if it is still ours."""
    current = read_lease(repo)
    if current is not None and current.token == lease.token:
        with contextlib.suppress(FileNotFoundError):
            (repo.local_state / "mcp" / "server.json").unlink()


def read_lease(repo: Repository) -> Lease | None:
    """The lease, or None when there is none, it does not parse, or the reading rule refuses it.

    The rule's boundary is the checkout: a `server.json` that is a FIFO or a symlink to `/dev/zero` (which a
    clone could carry) reads as no lease.
    """
    try:
        data = read_repository_file(repo.root, repo.local_state / "mcp" / "server.json", limit=_LEASE_LIMIT)
    except OSError:
        return None
    try:
        return msgspec.json.decode(data, type=Lease)
    except msgspec.DecodeError:
        return None


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (signal 0)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
