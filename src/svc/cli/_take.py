"""`svc plan take --start` against a serving server: the claim there, the start move here.

The claim lives in the serving server's mesh journal, and HTTP never writes the repository; so the command asks
the server to take without starting, then moves the issue to ACTIVE through this process's own executor (a
command-line caller may write the checkout). When the move is refused, a claim the take wrote is released on the
server before the refusal is shown: nothing is left half-done.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    import httpx

    from svc.registry import Capability
    from svc.runtime import Actor, Executor

__all__ = ["take_then_start"]


async def take_then_start(
    executor: Executor, client: httpx.AsyncClient, url: str, cap: Capability, params: msgspec.Struct, actor: Actor
) -> bytes:
    """Take on the server at `url` without `start`, then start the issue taken here; the answer as one body."""
    from svc.host import call_remote
    from svc.plan import PlanTake

    registry = executor.runtime.registry
    body = await call_remote(client, url, cap, msgspec.structs.replace(params, start=False))
    taken = msgspec.json.decode(body, type=PlanTake)
    if not taken.taken or taken.issue is None:
        return body
    move = registry.by_id["plan.transition"]
    try:
        started = await executor.call(
            move, executor.decode_value(move, {"issue": taken.issue.id, "transition": "start"}), actor=actor
        )
    except Exception:
        if not taken.existing and taken.claim is not None:
            release = registry.by_id["mesh.release"]
            await call_remote(client, url, release, executor.decode_value(release, {"claim": taken.claim}))
        raise
    from svc.plan import PlanTransitionResult

    result = msgspec.json.decode(started, type=PlanTransitionResult)
    return executor.encode(msgspec.structs.replace(taken, started=result))
