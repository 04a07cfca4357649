"""Reading a large plan in a second process while a server starts, so that its first plan read is quick.

A server's start imports the web and MCP stacks and builds the object index, all on one processor; a first read
of a plan of thousands of issues with no parse cache then takes seconds more, on the first request. So a
serving process (`svc serve` before those imports, and every `serve_checkout`) enters `priming(repo)`: for a
plan of at least `PRIME_MIN` issue files it starts `python -m svc.plan._primer`, which reads the plan once on
the other processor, in one process (no parsing helper of its own), storing the parse cache and the
derivation (`_cache.py`) as any read does. Every read of the plan in the serving process first waits for a
primer of its checkout still running (`await_primer`), then reads as always: with what the primer stored, it
reuses the derivation instead of parsing every record.

The primer is an optimisation only. One that cannot start, fails, is killed, or stores nothing (every file
racy, a cache directory that cannot be written) leaves the read to do its work, with the same answer. A read
waits for it at most `PRIME_WAIT` seconds, then kills it and reads alone; a primer is reaped as soon as it
ends (a thread waits for it), and one still running when the block ends is killed. Its standard streams are
closed to it (a serving `svc mcp` speaks on its own standard output).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from svc._log import LazyLogger
from svc.layer import Repository, Unreadable, check_repository_dir
from svc.plan._where import project_directory, select_record

if TYPE_CHECKING:
    import subprocess

__all__ = ["PRIME_MIN", "PRIME_WAIT", "await_primer", "priming"]

_log = LazyLogger("svc.plan")

#: The fewest issue files a primer is started for: below, the server's own first read takes well under a second.
PRIME_MIN = 2_500
#: The longest a read waits for a running primer before it kills it and reads alone.
PRIME_WAIT = 60.0

_LOCK = threading.Lock()
#: The primer of each checkout root, from its start until a read or the end of its block reaps it.
_RUNNING: dict[str, _Primer] = {}


class _Primer:
    """One primer process, when it was started, and the thread that reaps it as soon as it ends."""

    __slots__ = ("process", "reaper", "started")

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.started = time.monotonic()
        #: Waits for the process (once started), so that one no read waited for leaves no zombie behind.
        self.reaper = threading.Thread(target=process.wait, name="svc-primer-reaper", daemon=True)

    def wait(self, timeout: float) -> None:
        """Wait until it ends, at most `timeout` seconds; past that, kill it. Reaped either way."""
        import subprocess

        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            _log.debug("svc: the plan's read in a second process took over %.0f s; it was stopped", timeout)
            return
        seconds = time.monotonic() - self.started
        if code == 0:
            _log.debug("svc: the plan was read in a second process in %.2f s", seconds)
        else:
            _log.debug("svc: the plan's read in a second process ended with %s; reads do its work", code)

    def stop(self) -> None:
        """Kill it when it still runs, and reap it."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
        self.process.wait()


@contextlib.contextmanager
def priming(repo: Repository) -> Iterator[None]:
    """Read the plan of `repo` in a second process during the block, when it has `PRIME_MIN` issue files or more.

    Inside a block already priming `repo` (the command line's, around a `serve_checkout`), nothing more starts.
    A primer still running when the block ends is killed and reaped.
    """
    primer = _start(repo)
    try:
        yield
    finally:
        if primer is not None:
            with _LOCK:
                if _RUNNING.get(str(repo.root)) is primer:
                    del _RUNNING[str(repo.root)]
            primer.stop()


def await_primer(root: Path) -> None:
    """Wait for the primer of the checkout at `root` to end, when one runs (at most `PRIME_WAIT` seconds)."""
    if not _RUNNING:
        return
    with _LOCK:
        primer = _RUNNING.get(str(root))
    if primer is None:
        return
    primer.wait(PRIME_WAIT)
    with _LOCK:
        if _RUNNING.get(str(root)) is primer:
            del _RUNNING[str(root)]


def _start(repo: Repository) -> _Primer | None:
    """The primer of `repo`, started; None when one runs already, the plan is small, or none could start."""
    key = str(repo.root)
    with _LOCK:
        if key in _RUNNING or not sys.executable or _issue_files(repo) < PRIME_MIN:
            return None
        import subprocess

        try:
            process = subprocess.Popen(
                _command(repo),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                close_fds=True,
            )
        except OSError as exc:
            _log.debug("svc: the plan's read in a second process could not start: %s", exc)
            return None
        primer = _RUNNING[key] = _Primer(process)
        primer.reaper.start()
        return primer


def _issue_files(repo: Repository) -> int:
    """How many `*.yaml` names the plan's issues directory lists (0 when it cannot be listed)."""
    try:
        directory = project_directory(repo)
        if directory is None:
            return 0
        issues = check_repository_dir(repo.root, directory / "issues")
        with os.scandir(issues) as entries:
            return sum(1 for entry in entries if select_record(entry.name))
    except (OSError, Unreadable):
        return 0


def _command(repo: Repository) -> list[str]:
    """The primer's command line: this interpreter, and the checkout's root, Git and common directories."""
    return [
        sys.executable,
        "-m",
        "svc.plan._primer",
        str(repo.root),
        str(repo.git_dir or ""),
        str(repo.common_dir or ""),
    ]
