"""What `svc serve` and `svc mcp` share: signals, the checkout's lease, and the server timings of the policy."""

from __future__ import annotations

import logging
import signal
from dataclasses import dataclass, fields

import trio

from svc._version import __version__
from svc.layer import (
    Executable,
    Lease,
    Repository,
    YamlError,
    acquire_lease,
    load_yaml,
    read_manifest,
    read_repository_file,
)
from svc.runtime import ExecutableStamp, utc_now

__all__ = ["Timings", "executable", "server_timings", "take_lease", "watch_signals"]

_log = logging.getLogger("svc.serve")


async def watch_signals(shutdown: trio.Event) -> None:
    """Set `shutdown` on the first SIGINT, SIGTERM or SIGHUP (the process then ends with exit 0)."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as signals:
        async for received in signals:
            _log.info("svc: %s received; stopping", signal.Signals(received).name)
            shutdown.set()
            return


def executable() -> Executable:
    """The running program as the lease records it."""
    stamp = ExecutableStamp.read()
    return Executable(path=stamp.path, mtime=stamp.mtime, size=stamp.size)


def take_lease(repo: Repository) -> Lease | None:
    """Hold the checkout's lease (`url` null until bound); None when the checkout has no `.ai/` folder.

    Blocking (file locks and writes): call it from a worker thread.

    Raises:
        LeaseHeld: a live process holds it.
    """
    if not repo.has_layer:
        _log.info("svc: this checkout has no .ai/ folder; serving without a lease")
        return None
    return acquire_lease(repo, version=__version__, executable=executable(), started_at=utc_now())


@dataclass(frozen=True, slots=True)
class Timings:
    """The server timings (seconds), overridable in the policy under `server:` as `<name>_seconds`."""

    bind_grace: float = 15.0
    probe: float = 2.0
    busy_grace: float = 10.0
    join: float = 20.0
    read_deadline: float = 30.0


def server_timings(repo: Repository) -> Timings:
    """The timings of `repo`'s policy (`.ai/repo/policy.yaml`, `server:`), defaults for what it leaves out."""
    reading = read_manifest(repo)
    path = repo.layer / reading.sections.get("policy", "repo/policy.yaml")
    try:
        policy = load_yaml(read_repository_file(repo.root, path))
    except (OSError, YamlError, ValueError, RecursionError):
        return Timings()
    server = policy.get("server") if isinstance(policy, dict) else None
    if not isinstance(server, dict):
        return Timings()
    values: dict[str, float] = {}
    for fld in fields(Timings):
        value = server.get(f"{fld.name}_seconds")
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            values[fld.name] = float(value)
    return Timings(**values)
