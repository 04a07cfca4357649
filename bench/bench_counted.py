"""Instructions per request: a server run under callgrind, its instructions counted over a timed load.

Timed throughput on a shared machine moves by ±10 % from one run to the next; the instructions a server
executes per request do not (two runs agree to within a few tenths of a percent). For a server that uses one
core, as hypercorn's trio worker does, they are the CPU work that bounds its throughput, so the floor's
instructions per request over svc's is the throughput ratio a quiet machine would show, counted rather than
timed.

The server starts under ``valgrind --tool=callgrind --instr-atstart=no`` (nothing is counted while it starts,
which is then only a few times slower). A load warms it, counting is switched on (``callgrind_control -i
on``), a second load warms the instrumented code, the counters are zeroed (``-z``), the measured load runs,
and the counters are dumped (``-d``): the dump's total over the requests the load client completed is the
figure. Needs ``valgrind`` (``apt-get install -y valgrind``) on Linux.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench_load import LoadClient, run_load
from bench_procs import ServerProcess

__all__ = ["Counted", "available", "count_instructions", "counting_command"]

#: Seconds of the load that warms the server before counting is switched on, then the instrumented code.
WARM_SECONDS = 2
INSTRUMENTED_WARM_SECONDS = 1
CONTROL_TIMEOUT = 60.0
#: How long a server under callgrind may take to start (several times its usual start).
START_TIMEOUT = 300.0
_TOTALS = re.compile(rb"^(?:totals|summary):\s*(\d+)", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Counted:
    """Instructions a server executed over a load, and the requests the load client completed."""

    instructions: int
    requests: int
    errors: int

    @property
    def per_request(self) -> float:
        """Instructions per completed request."""
        return self.instructions / self.requests if self.requests else 0.0


def available() -> bool:
    """Whether valgrind and callgrind_control are on PATH."""
    return shutil.which("valgrind") is not None and shutil.which("callgrind_control") is not None


def counting_command(argv: Sequence[str], out_dir: Path, name: str) -> list[str]:
    """`argv` under callgrind, counting nothing until switched on; its dumps go to `out_dir`."""
    out = out_dir / f"callgrind.{name}.%p"
    return ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}", *argv]


def count_instructions(
    client: LoadClient, server: ServerProcess, target: str, *, duration: int, out_dir: Path, name: str
) -> Counted:
    """Instructions per request of `server` (started with `counting_command(..., out_dir, name)`) under load.

    Raises:
        RuntimeError: callgrind wrote no dump, or one without a total.
    """
    run_load(client, server.origin, target, duration=WARM_SECONDS, script_dir=out_dir)
    _control(server.pid, "--instr=on")
    run_load(client, server.origin, target, duration=INSTRUMENTED_WARM_SECONDS, script_dir=out_dir)
    _control(server.pid, "--zero")
    load = run_load(client, server.origin, target, duration=duration, script_dir=out_dir)
    _control(server.pid, "--dump")
    dumps = sorted(out_dir.glob(f"callgrind.{name}.{server.pid}.*"), key=lambda p: p.stat().st_mtime)
    if not dumps:
        raise RuntimeError(f"callgrind wrote no dump for {name} (pid {server.pid}) in {out_dir}")
    totals = _TOTALS.search(dumps[-1].read_bytes())
    if totals is None:
        raise RuntimeError(f"callgrind's dump {dumps[-1]} has no total")
    return Counted(instructions=int(totals.group(1)), requests=load.requests, errors=load.errors)


def _control(pid: int, command: str) -> None:
    """Send a command to the callgrind of `pid` and wait for it to be carried out."""
    subprocess.run(["callgrind_control", command, str(pid)], capture_output=True, check=True, timeout=CONTROL_TIMEOUT)
