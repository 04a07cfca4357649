"""Leaving the process at once after a server it ran (`svc serve`, `svc mcp`) has stopped, or a read answered.

Once the server has stopped there is nothing left to clean up, but the interpreter's own teardown still
collects every module of the web and MCP stacks one by one, which takes most of a second (two on a loaded
machine) after the server said it stopped. A process that served flushes its output, closes its log handlers
and ends with `os._exit` instead. So does a command answered with no event loop (a read of the checkout, help,
a usage error): it started no thread and holds nothing open, and its teardown would collect the derived plan
object by object (a sixth of `svc plan next` on 1,000 issues). Every other command ends as usual.
"""

from __future__ import annotations

import contextlib
import os
import sys

from svc._log import shutdown as shutdown_logging

__all__ = ["arm", "leave_if_armed"]


class _State:
    armed = False


def arm() -> None:
    """Make the process leave at once when the command ends (a command that serves calls it first)."""
    _State.armed = True


def _exit_code(code: object) -> int:
    """The process exit code of a `SystemExit` code, as the interpreter reads it."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    sys.stderr.write(f"{code}\n")
    return 1


def leave_if_armed(code: object) -> None:
    """End the process now with the exit code of `SystemExit(code)`, if armed; otherwise return."""
    if not _State.armed:
        return
    status = _exit_code(code)
    shutdown_logging()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe or stream: nothing more can reach it
            stream.flush()
    os._exit(status)
