"""The server lease `.ai/local/state/mcp/server.json`: which process serves this checkout, and where."""

from __future__ import annotations

import os

import msgspec

from svc.layer._repository import Repository

__all__ = ["Lease", "lease_path", "pid_alive", "read_lease"]


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


def lease_path(repo: Repository) -> str:
    """The lease file of `repo`, as a path string."""
    return str(repo.local_state / "mcp" / "server.json")


def read_lease(repo: Repository) -> Lease | None:
    """The lease, or None when there is none or it does not parse."""
    try:
        data = (repo.local_state / "mcp" / "server.json").read_bytes()
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
