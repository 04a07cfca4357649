"""The one executor every surface calls: admit → decode → cache → lock → handler under the supervisor → encode.

HTTP, MCP, the CLI and executions all come through `Executor.call`, so an answer is the same bytes
whichever surface asked, and a cached answer is shared between them. The write policy lives here too: a
capability that writes the repository is refused to any caller that came in over HTTP (the API routes, `/mcp`,
or an execution started there), whichever surface asks.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Iterable
from typing import Any

import msgspec
import trio

from svc._errors import Forbidden, Internal, SvcError
from svc.registry import Capability, decode_json, decode_text, decode_value
from svc.runtime._cache import ResultCache
from svc.runtime._components import Components
from svc.runtime._context import Actor, Context, Reporter
from svc.runtime._runtime import Runtime
from svc.runtime._supervisor import Supervisor

__all__ = ["ComponentFactory", "Executor", "run_declared", "write_refusal"]

#: Builds a component that needs the executor itself (the execution engine runs capabilities through it).
ComponentFactory = Callable[["Executor"], object]

_log = logging.getLogger("svc.executor")


class Executor:
    """Runs capabilities of one runtime; build one per process."""

    def __init__(
        self,
        runtime: Runtime,
        supervisor: Supervisor,
        *,
        components: Iterable[object] = (),
        built: Iterable[ComponentFactory] = (),
    ) -> None:
        """Assemble the executor with its components: `components` as given, `built` made from the executor."""
        self.runtime = runtime
        self.supervisor = supervisor
        self.components = Components([*components, *(factory(self) for factory in built)])
        self._encoder = msgspec.json.Encoder()
        self._canonical = msgspec.json.Encoder(order="sorted")
        self._caches: dict[str, ResultCache] = {
            cap.id: ResultCache(cap.cache) for cap in runtime.registry.capabilities if cap.cache.policy != "disabled"
        }
        self._locks: dict[str, trio.Lock] = {}

    decode_json = staticmethod(decode_json)
    decode_text = staticmethod(decode_text)
    decode_value = staticmethod(decode_value)

    def cache(self, capability_id: str) -> ResultCache | None:
        """The result cache of a capability (None when its policy is disabled)."""
        return self._caches.get(capability_id)

    def encode(self, value: Any) -> bytes:
        """Encode an answer exactly as every surface sends it."""
        return self._encoder.encode(value)

    @staticmethod
    def admit(cap: Capability, actor: Actor) -> None:
        """Apply the write policy: nothing that came in over HTTP writes the repository.

        Surfaces call it before decoding, so the refusal comes first; `call` and `invoke` apply it again.

        Raises:
            Forbidden: `cap` writes the repository and `actor` came in over HTTP.
        """
        if cap.writes_repository and actor.over_http:
            raise write_refusal(cap)

    async def call(self, cap: Capability, params: msgspec.Struct, *, actor: Actor, scoped: bool = True) -> bytes:
        """Answer `cap` for decoded `params` as encoded JSON, through the cache when it has one.

        `scoped=False`: the caller always ends before the service does, and the run needs no cancel scope of
        its own (`Supervisor.run`).

        Raises:
            SvcError: the capability's own refusal, or `Internal` (with a correlation id) for any other
                failure; the original exception is logged to stderr, never returned.
        """
        self.admit(cap, actor)
        cache = self._caches.get(cap.id)
        if cache is None or cap.runs_live(params, mcp=actor.kind == "mcp"):
            return self.encode(await self.invoke(cap, params, self.context(actor), scoped=scoped))
        key = self._canonical.encode(params)
        now = trio.current_time()
        generation = self.runtime.generation.value
        body = cache.get(key, now=now, generation=generation)
        if body is None:
            body = self.encode(await self.invoke(cap, params, self.context(actor), scoped=scoped))
            cache.put(key, body, now=now, generation=generation)
        return body

    async def invoke(self, cap: Capability, params: msgspec.Struct, ctx: Context, *, scoped: bool = True) -> Any:
        """Run the handler as a supervised task in its own cancel scope (see `call` for `scoped`), bypassing any cache.

        Raises:
            SvcError: the capability's own refusal, or `Internal` with a correlation id for anything else.
        """
        self.admit(cap, ctx.actor)
        try:
            return await self.supervisor.run(self.run_here, cap, params, ctx, scoped=scoped)
        except SvcError:
            raise
        except Exception as exc:
            correlation = "c-" + secrets.token_hex(4)
            _log.error("capability %s failed (correlation id %s)", cap.id, correlation, exc_info=exc)
            raise Internal(f"internal error (correlation id {correlation})") from exc

    async def run_here(self, cap: Capability, params: msgspec.Struct, ctx: Context) -> Any:
        """Run the handler in the current task (already a supervised task with its own scope).

        Commands take their capability's lock. Exceptions propagate unchanged.
        """
        if cap.concurrency == "serial":
            async with self._locks.setdefault(cap.id, trio.Lock()):
                return await run_declared(cap, params, ctx)
        return await run_declared(cap, params, ctx)

    def context(self, actor: Actor, reporter: Reporter | None = None) -> Context:
        """A handler context for this runtime."""
        return Context(self.runtime, actor, reporter, components=self.components)


async def run_declared(cap: Capability, params: msgspec.Struct, ctx: Context) -> Any:
    """Run what `cap` declares in the current task: its handler, or its read in a worker thread.

    A read that names live fields runs its handler for an input that needs the runtime (`runs_live`).

    Raises:
        Internal: `cap` declares neither.
    """
    if cap.read is not None and not cap.runs_live(params, mcp=ctx.actor.kind == "mcp"):
        return await trio.to_thread.run_sync(cap.read, ctx.runtime.repository, params)
    if cap.handler is None:
        raise Internal(f"{cap.id} is not executable")
    return await cap.handler(ctx, params)


def write_refusal(cap: Capability) -> Forbidden:
    """The refusal of a repository write asked over HTTP, naming the MCP tool and the CLI command."""
    tool = cap.exposure.mcp.tool if cap.exposure.mcp is not None else None
    via = f"the MCP tool {tool} over stdio (`svc mcp`)" if tool else "MCP over stdio (`svc mcp`)"
    usage = cap.cli_usage
    cli = f"`{usage}`" if usage else "the command line"
    return Forbidden(f"HTTP never writes the repository; {cap.id} runs through {via} or {cli}")
