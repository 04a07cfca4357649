"""Worker processes of the race and crash tests: ``python -m tests.plan._workers race|crash ROOT ...``.

`race ROOT ID...`: prints `ready`, waits for one line on stdin (the start signal), then tries `start` on every
id through the executor (as the CLI does) and prints one JSON object: the ids it moved and the refusals.

`crash ROOT SEED`: moves every issue start → verify → done through `move_issue` (each move only on the issues
not yet past it), printing one line after each move; with a seeded probability it kills itself (SIGKILL) right
before or after an `os.replace`, `os.fsync` or `os.write`, so a kill lands inside the write sequence, not only
between moves.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

from svc import Refused


async def _race(root: Path, ids: list[str]) -> dict[str, Any]:
    from svc.capabilities import builtin_registry
    from svc.host._service import open_service
    from svc.layer import Repository
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


def _suicidal(rng: random.Random, chance: float, fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if rng.random() < chance:
            os.kill(os.getpid(), signal.SIGKILL)
        result = fn(*args, **kwargs)
        if rng.random() < chance:
            os.kill(os.getpid(), signal.SIGKILL)
        return result

    return wrapper


def _crash(root: Path, seed: int) -> None:
    from svc.layer import Repository
    from svc.plan import move_issue, read_snapshot

    rng = random.Random(seed)
    repo = Repository.discover(root)
    for name in ("replace", "fsync", "write"):
        setattr(os, name, _suicidal(rng, 0.03, getattr(os, name)))
    for move, before in (("start", "READY"), ("verify", "ACTIVE"), ("done", "VERIFY")):
        for issue in read_snapshot(repo).plan.issues:
            if issue.status != before:
                continue
            try:
                move_issue(repo, issue.id, move, by="svc/crash-test")
            except Refused:
                continue
            print(f"{move} {issue.id}", flush=True)
    print("finished", flush=True)


def main(argv: list[str]) -> None:
    kind, root = argv[0], Path(argv[1])
    if kind == "race":
        print(json.dumps(trio.run(_race, root, argv[2:])), flush=True)
    else:
        _crash(root, int(argv[2]))


if __name__ == "__main__":
    main(sys.argv[1:])
