"""`continuity.state`: what this checkout's local state holds now, read in a worker thread.

The state names this machine's work (its session, task, handovers), so it is served over HTTP and MCP only,
with no command-line words. The clock is read once per call: both records are judged by that one reading.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import trio

from svc.layer import Continuity, continuity_state
from svc.registry import Cache, Declarations, Example, McpResource, Module, NoInput
from svc.runtime import Context

MODULE = Module(
    id="continuity",
    title="Continuity",
    description=(
        "What this checkout's local state holds now: the open session, the active task, the handover and the "
        "checkpoint a resuming worker would read (with divergence and freshness), blockers and tallies."
    ),
)

#: The clock `continuity.state` reads once per call (seconds since the epoch).
clock: Callable[[], float] = time.time


async def state(ctx: Context, params: NoInput) -> Continuity:
    """The continuity of this checkout, judged at one reading of the clock."""
    now = int(clock())
    return await trio.to_thread.run_sync(lambda: continuity_state(ctx.runtime.repository, now=now))


declare = Declarations[Context](MODULE, source=__name__)

CAPABILITIES = (
    declare.query(
        "state",
        title="Continuity state",
        description=(
            "Reads .ai/local/state/ (and the policy's session.freshness, and Git) and writes nothing; every "
            "absence is an answer (`present: false` without local state). The session of "
            "session-current.yaml (`foreign` when it names another checkout), the task of current.yaml, the "
            "handover and checkpoint records resolved by tier (0: this worktree and branch, 1: this branch; "
            "never wider), newest `created_at` first, each with its divergence from HEAD (exact, advanced, "
            "diverged, unknown), its freshness (fresh, aging, stale, unknown, invalid) and its Next Action, "
            "withheld when stale or invalid; the unresolved blockers of open-questions.md, the tallies and "
            "the findings. The checkout is named by its directory name, files by repository-relative paths."
        ),
        input=NoInput,
        output=Continuity,
        handler=state,
        examples=(Example(name="state"),),
        http="GET /api/v1/continuity",
        tool="svc_continuity",
        resource=McpResource(uri="svc://continuity", name="continuity"),
        cache=Cache(policy="process", max_entries=2, ttl_seconds=2),
    ),
)
