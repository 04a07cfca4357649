"""`/mcp`: MCP over Streamable HTTP, the SDK's session manager mounted beside the app.

The session manager runs as its own supervised task (`serve`); the ASGI endpoint hands it each request under
`/mcp` after the app's own loopback checks. Its transport security is set explicitly: DNS-rebinding protection
on, hosts `127.0.0.1:*` and `localhost:*`, origins `http://127.0.0.1:*` and `http://localhost:*` (a manager
built without settings would have the protection off). Answers are JSON (`json_response`): svc sends no
notification, so a response never needs to be a stream. Handshake-era sessions carry `Mcp-Session-Id` and are
attached until the client deletes them, they idle out, or the server stops; 2026-07-28 requests are single
exchanges.

The SDK's own body bound answers in plain text, and from Content-Length before it reads anything; it is set
out of reach (`SDK_BODY_BOUND`), so the request's `Exchange` refuses a body over `MAX_BODY` first, as the
ErrorBody every route answers.
"""

from __future__ import annotations

import logging

import trio
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from svc._errors import Unavailable
from svc._version import __version__
from svc.api._http import Receive, Scope, Send, send_error
from svc.api._mcp import LocalBackend, build_server
from svc.runtime import Executor

__all__ = ["SDK_BODY_BOUND", "SECURITY", "SESSION_IDLE_SECONDS", "McpEndpoint"]

_log = logging.getLogger("svc.mcp")

SECURITY = TransportSecuritySettings(
    enable_dns_rebinding_protection=True,
    allowed_hosts=["127.0.0.1:*", "localhost:*"],
    allowed_origins=["http://127.0.0.1:*", "http://localhost:*"],
)
#: The SDK's body bound, beyond any body the exchange lets through (it refuses past `MAX_BODY`).
SDK_BODY_BOUND = 2**62
#: A session with no request for this long is closed (a bridge pings every 20 s).
SESSION_IDLE_SECONDS = 30 * 60.0


class McpEndpoint:
    """The ASGI app of `/mcp` and the task that runs its session manager."""

    def __init__(self, executor: Executor) -> None:
        runtime = executor.runtime
        self.backend = LocalBackend(executor)
        self.server = build_server(self.backend, transport="http", attachments=runtime.mcp, version=__version__)
        self.manager = StreamableHTTPSessionManager(
            app=self.server,
            json_response=True,
            security_settings=SECURITY,
            max_request_body_size=SDK_BODY_BOUND,
            session_idle_timeout=SESSION_IDLE_SECONDS,
        )
        self._running = False
        self._stop = trio.Event()

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run the session manager until `stop()`; its sessions end with it."""
        async with self.manager.run():
            self._running = True
            task_status.started()
            try:
                await self._stop.wait()
            finally:
                self._running = False

    def stop(self) -> None:
        """End every session and refuse further requests (503)."""
        self._stop.set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """One HTTP request under `/mcp` (`DeferredMcp`, which mounts it, refuses a WebSocket upgrade)."""
        if not self._running:
            await send_error(send, Unavailable("the MCP endpoint is stopping"))
            return
        await self.manager.handle_request(scope, receive, send)
