"""Worker processes of the race and crash tests: ``python -m tests.plan._workers race|fork-server ROOT ...``.

`race ROOT ID...`: prints `ready`, waits for one line on stdin (the start signal), then tries `start` on every
id through the executor (as the CLI does) and prints one JSON object: the ids it moved and the refusals.

`fork-server ROOT`: for each line `POINT` on stdin, forks a child that makes the next move through `move_issue`
(the first open issue in id order: start, verify or done) and kills itself (SIGKILL) right before or after its
`POINT`-th `os.replace`, `os.fsync`, `os.write` or `os.unlink`, so kills land at every step of the write
sequence; it answers `killed`, `moved` (no kill: the point lies past the move) or `idle` (nothing left).
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

from svc import Refused
from svc.layer import Repository
from svc.plan import move_issue, read_snapshot


async def _race(root: Path, ids: list[str]) -> dict[str, Any]:
    from svc.capabilities import builtin_registry
    from svc.host._service import open_service
    from svc.runtime import Actor

    cap = builtin_registry().by_id["plan.transition"]
    moved: list[str] = []
    refused: list[str] = []
    async with open_service(Repository.discover(root), surface="cli", watch=False) as ex:
        print("ready", flush=True)
        await trio.to_thread.run_sync(sys.stdin.readline)
        for issue in ids:
            params = ex.decode_value(cap, {"issue": issue, "transition": "start"})
            try:
                await ex.call(cap, params, actor=Actor(kind="cli", pid=os.getpid()))
            except Refused as exc:
                refused.append(exc.message)
            else:
                moved.append(issue)
    return {"moved": moved, "refused": refused}


_NEXT_MOVE = {"READY": "start", "ACTIVE": "verify", "VERIFY": "done"}
#: The calls of a move's write sequence (pending line, record, ledger, clean-up) a kill lands next to.
_WRITES = ("replace", "fsync", "write", "unlink")


def _dying_at(point: int) -> None:
    """SIGKILL this process right before or after its `point`-th call of `_WRITES` (counted from 0)."""
    points = itertools.count()

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if next(points) == point:
                os.kill(os.getpid(), signal.SIGKILL)
            result = fn(*args, **kwargs)
            if next(points) == point:
                os.kill(os.getpid(), signal.SIGKILL)
            return result

        return wrapper

    for name in _WRITES:
        setattr(os, name, wrap(getattr(os, name)))


def _next_move(repo: Repository, point: int) -> int:
    """In a forked child: the next move of the first open issue, killed at `point`. Exit 0 moved, 3 idle."""
    todo = next(((_NEXT_MOVE[i.status], i.id) for i in read_snapshot(repo).plan.issues if i.status in _NEXT_MOVE), None)
    if todo is None:
        return 3
    _dying_at(point)
    move_issue(repo, todo[1], todo[0], by="svc/crash-test")
    return 0


def _fork_server(root: Path) -> None:
    """Per line `POINT` on stdin, fork a child that makes the next move and dies at `POINT`; answer one line:
    `killed`, `moved`, `idle` or `exit N`. Forking from this one-threaded process skips an interpreter start
    per kill, and the parse cache the children inherit stays warm."""
    repo = Repository.discover(root)
    for line in sys.stdin:
        read_snapshot(repo)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = _next_move(repo, int(line))
            except BaseException:
                traceback.print_exc()
            finally:
                sys.stderr.flush()
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL:
            answer = "killed"
        else:
            code = os.waitstatus_to_exitcode(status)
            answer = {0: "moved", 3: "idle"}.get(code, f"exit {code}")
        print(answer, flush=True)


def main(argv: list[str]) -> None:
    kind, root = argv[0], Path(argv[1])
    if kind == "race":
        print(json.dumps(trio.run(_race, root, argv[2:])), flush=True)
    else:
        _fork_server(root)


if __name__ == "__main__":
    main(sys.argv[1:])
