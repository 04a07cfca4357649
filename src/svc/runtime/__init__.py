"""The runtime: what runs the capability model in one process.

The executor (decode, cache, lock, handler under the supervisor, encode), the handler context, result caches,
the repository generation, the `Supervisor` primitive, and the components a service is assembled with.
Imports the model (`svc.registry`) and the checkout (`svc.layer`), never a surface or a component's package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from svc import _lazy

if TYPE_CHECKING:
    from svc.runtime._cache import ResultCache as ResultCache
    from svc.runtime._components import Components as Components
    from svc.runtime._context import Actor as Actor
    from svc.runtime._context import Context as Context
    from svc.runtime._context import EventReporter as EventReporter
    from svc.runtime._context import LogStream as LogStream
    from svc.runtime._context import Reporter as Reporter
    from svc.runtime._context import Severity as Severity
    from svc.runtime._executor import Executor as Executor
    from svc.runtime._executor import run_declared as run_declared
    from svc.runtime._generation import Generation as Generation
    from svc.runtime._runtime import ExecutableStamp as ExecutableStamp
    from svc.runtime._runtime import McpAttachments as McpAttachments
    from svc.runtime._runtime import Runtime as Runtime
    from svc.runtime._runtime import ServerFacts as ServerFacts
    from svc.runtime._runtime import utc_now as utc_now
    from svc.runtime._supervisor import Supervisor as Supervisor

__getattr__, __dir__ = _lazy.exports(__name__, __file__)

__all__ = [
    "Actor",
    "Components",
    "Context",
    "EventReporter",
    "ExecutableStamp",
    "Executor",
    "Generation",
    "LogStream",
    "McpAttachments",
    "Reporter",
    "ResultCache",
    "Runtime",
    "ServerFacts",
    "Severity",
    "Supervisor",
    "run_declared",
    "utc_now",
]
