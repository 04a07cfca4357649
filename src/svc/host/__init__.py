"""Processes: assembling a service, serving a checkout, the lease election of `svc mcp`, bridging, signals.

`open_service` builds one process's executor with its components (the execution engine, the mesh);
`serve_checkout` is the one serving sequence of `svc serve` and a serving `svc mcp`. The command line only
parses and renders; everything that holds a lease, binds a port or reports to another process lives here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from svc import _lazy

if TYPE_CHECKING:
    from svc.host._hosting import Timings as Timings
    from svc.host._hosting import server_timings as server_timings
    from svc.host._hosting import take_lease as take_lease
    from svc.host._hosting import watch_signals as watch_signals
    from svc.host._mcp import Decision as Decision
    from svc.host._mcp import decide as decide
    from svc.host._mcp import elect as elect
    from svc.host._mcp import older as older
    from svc.host._mcp import run_mcp as run_mcp
    from svc.host._remote import NO_SERVER as NO_SERVER
    from svc.host._remote import call_remote as call_remote
    from svc.host._remote import find_server as find_server
    from svc.host._remote import probe_server as probe_server
    from svc.host._run import run_execution as run_execution
    from svc.host._serve import serve as serve
    from svc.host._serve import serve_checkout as serve_checkout
    from svc.host._service import open_service as open_service

__all__ = [
    "NO_SERVER",
    "Decision",
    "Timings",
    "call_remote",
    "decide",
    "elect",
    "find_server",
    "older",
    "open_service",
    "probe_server",
    "run_execution",
    "run_mcp",
    "serve",
    "serve_checkout",
    "server_timings",
    "take_lease",
    "watch_signals",
]


__getattr__, __dir__ = _lazy.exports(__name__, __file__)
