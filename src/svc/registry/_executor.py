"""The one executor every surface calls: decode → cache → lock → handler under the supervisor → encode.

HTTP, MCP, the CLI and executions all come through `Executor.call`, so an answer is the same bytes
whichever surface asked, and a cached answer is shared between them.
"""

from __future__ import annotations

import logging
import secrets
from typing import Any

import msgspec
import trio

from svc._errors import Internal, SvcError
from svc.nursery import Supervisor
from svc.registry._binding import decode_json, decode_text, decode_value
from svc.registry._cache import ResultCache
from svc.registry._context import Actor, Context, Reporter
from svc.registry._declaration import Capability
from svc.registry._runtime import Runtime

__all__ = ["Executor"]

_log = logging.getLogger("svc.executor")


class Executor:
    """Runs capabilities of one runtime; build one per process."""

    def __init__(self, runtime: Runtime, supervisor: Supervisor) -> None:
        self.runtime = runtime
        self.supervisor = supervisor
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

    async def call(self, cap: Capability, params: msgspec.Struct, *, actor: Actor) -> bytes:
        """Answer `cap` for decoded `params` as encoded JSON, through the cache when it has one.

        Raises:
            SvcError: the capability's own refusal, or `Internal` (with a correlation id) for any other
                failure; the original exception is logged to stderr, never returned.
        """
        cache = self._caches.get(cap.id)
        if cache is None:
            return self.encode(await self.invoke(cap, params, Context(self.runtime, actor)))
        key = self._canonical.encode(params)
        now = trio.current_time()
        generation = self.runtime.generation.value
        body = cache.get(key, now=now, generation=generation)
        if body is None:
            body = self.encode(await self.invoke(cap, params, Context(self.runtime, actor)))
            cache.put(key, body, now=now, generation=generation)
        return body

    async def invoke(self, cap: Capability, params: msgspec.Struct, ctx: Context) -> Any:
        """Run the handler as a supervised task in its own cancel scope, bypassing any cache.

        Raises:
            SvcError: the capability's own refusal, or `Internal` with a correlation id for anything else.
        """
        try:
            return await self.supervisor.run(self.run_here, cap, params, ctx)
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
        handler = cap.handler
        if handler is None:
            raise Internal(f"{cap.id} is not executable")
        if cap.concurrency == "serial":
            async with self._locks.setdefault(cap.id, trio.Lock()):
                return await handler(ctx, params)
        return await handler(ctx, params)

    def context(self, actor: Actor, reporter: Reporter | None = None) -> Context:
        """A handler context for this runtime."""
        return Context(self.runtime, actor, reporter)
