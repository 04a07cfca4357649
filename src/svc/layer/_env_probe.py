"""Short subprocesses run side by side: each started at once, each given the same deadline.

`Probe.start` resolves the program on the PATH (None when it is not there) and starts it in the checkout
with no standard input; `Probe.finish` waits for it until its deadline and kills its process group past that. Started
together and finished one after another, N probes cost the slowest one, not their sum, and no thread.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["Probe", "ProbeResult"]

#: The most output kept from one probe.
_OUTPUT_LIMIT = 4 * 1024 * 1024
#: How long a probe is waited for past its deadline (a process that has exited is read within it).
_GRACE = 0.05


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """How a probe ended: `ok` (exit 0), `failed` (another exit or it could not start), `timeout`, `missing`."""

    outcome: Literal["ok", "failed", "timeout", "missing"]
    stdout: bytes = b""
    stderr: bytes = b""


class Probe:
    """One started subprocess (or the fact that its program is not on the PATH)."""

    __slots__ = ("_deadline", "_early", "_process", "command")

    def __init__(
        self, command: str, process: subprocess.Popen[bytes] | None, deadline: float, early: ProbeResult | None
    ):
        self.command = command
        self._process = process
        self._deadline = deadline
        self._early = early

    @classmethod
    def start(cls, argv: list[str], *, cwd: Path, seconds: float, search_path: str | None = None) -> Probe:
        """Start `argv` (its program looked up on `search_path`, default the PATH), due within `seconds`."""
        command = " ".join(argv)
        deadline = time.monotonic() + seconds
        program = shutil.which(argv[0], path=search_path)
        if program is None:
            return cls(command, None, deadline, ProbeResult("missing"))
        try:
            process = subprocess.Popen(
                [program, *argv[1:]],
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError:
            return cls(command, None, deadline, ProbeResult("failed"))
        return cls(command, process, deadline, None)

    def finish(self) -> ProbeResult:
        """Wait for the process until its deadline (killing it past that); its outcome and output."""
        if self._early is not None or self._process is None:
            return self._early or ProbeResult("failed")
        process = self._process
        try:
            out, err = process.communicate(timeout=max(_GRACE, self._deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            # Its whole process group: a wrapper's children would otherwise hold the pipes open.
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.communicate(timeout=1.0)
            self._early = ProbeResult("timeout")
            return self._early
        ok = process.returncode == 0
        self._early = ProbeResult("ok" if ok else "failed", out[:_OUTPUT_LIMIT], err[:_OUTPUT_LIMIT])
        return self._early
