"""A `Backend` that forwards to the process serving the checkout, over its `/mcp` (the SDK's client).

A bridging `svc mcp` answers its stdio session with its own SDK `Server`; the answers come from here: one
handshake-era Streamable HTTP session on the serving process, opened with the stdio session's peer id in
`svc-mcp-bridge` (so the server counts the session as a stdio one and names it with the same peer). Results
and JSON-RPC errors pass through unchanged. A transport failure or a lost session raises `BackendLost`, and
the caller elects again. A ping every 20 s keeps the session alive and notices a silent server.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import httpx2
import mcp_types as types
import trio
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from svc.api._mcp import BRIDGE_HEADER, RESOURCE_NOT_FOUND, UnknownResource
from svc.runtime import Actor

__all__ = ["PING_SECONDS", "BackendLost", "RemoteBackend"]

_log = logging.getLogger("svc.mcp")

PING_SECONDS = 20.0
_LOST_MESSAGES = frozenset({"Session terminated", "Session not found", "Server returned an error response"})


class BackendLost(Exception):
    """The serving process cannot be reached, or it no longer knows this session."""


def _lost(exc: MCPError) -> bool:
    return exc.code in (types.CONNECTION_CLOSED, types.REQUEST_TIMEOUT) or (
        exc.code in (types.INVALID_REQUEST, types.INTERNAL_ERROR) and exc.message in _LOST_MESSAGES
    )


class RemoteBackend:
    """The MCP session of a bridge on the serving process's `/mcp`."""

    def __init__(self, url: str, peer: str, *, probe_seconds: float = 2.0) -> None:
        self.url = url
        self.peer = peer
        self.probe_seconds = probe_seconds
        self.lost = trio.Event()
        self._client: Client | None = None
        self._closed = trio.Event()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Open the session, report started, keep it alive until `close()` or until it is lost.

        Once started this never raises: a failure sets `lost` and ends the task.

        Raises:
            BackendLost: the session could not be opened.
        """
        started = False
        http = httpx2.AsyncClient(headers={BRIDGE_HEADER: self.peer}, timeout=httpx2.Timeout(30.0, read=None))
        try:
            with trio.CancelScope() as goodbye:
                async with (
                    http,
                    Client(
                        streamable_http_client(self.url + "/mcp", http_client=http), mode="legacy", cache=None
                    ) as client,
                ):
                    self._client = client
                    task_status.started()
                    started = True
                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(self._keepalive)
                        await self._closed.wait()
                        nursery.cancel_scope.cancel()
                    # Deleting the session must not hold a shutdown up when the server stopped answering.
                    goodbye.deadline = trio.current_time() + self.probe_seconds
        except Exception as exc:
            if not started:
                raise BackendLost(f"{self.url}/mcp cannot be reached: {exc}") from exc
            _log.info("svc: the session on %s/mcp ended: %s", self.url, exc)
        finally:
            self._client = None
            self.lost.set()

    def close(self) -> None:
        """End the session (it is deleted on the server)."""
        self._closed.set()

    async def _keepalive(self) -> None:
        while True:
            await trio.sleep(PING_SECONDS)
            try:
                with trio.fail_after(self.probe_seconds):
                    await self._send(types.PingRequest(), types.EmptyResult)
            except (BackendLost, MCPError, trio.TooSlowError) as exc:
                _log.info("svc: the server at %s stopped answering (%s)", self.url, exc)
                self.lost.set()
                self._closed.set()
                return

    def _session(self) -> Any:
        client = self._client
        if client is None or self.lost.is_set():
            raise BackendLost(f"the session on {self.url}/mcp is closed")
        return client.session

    async def _send(self, request: Any, result: type[Any]) -> Any:
        try:
            return await self._session().send_request(request, result)
        except MCPError as exc:
            if _lost(exc):
                self.lost.set()
                raise BackendLost(f"{self.url}/mcp: {exc.message}") from exc
            raise
        except (httpx2.HTTPError, OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            self.lost.set()
            raise BackendLost(f"{self.url}/mcp cannot be reached: {exc}") from exc

    async def list_tools(self) -> types.ListToolsResult:
        """The serving process's tools.

        Raises:
            BackendLost: the session is lost.
        """
        result: types.ListToolsResult = await self._send(types.ListToolsRequest(), types.ListToolsResult)
        return result

    async def call_tool(self, name: str, arguments: dict[str, Any] | None, *, actor: Actor) -> types.CallToolResult:
        """Call on the serving process (which records the bridge session's peer as the actor).

        Raises:
            MCPError: the server's own JSON-RPC error, unchanged.
            BackendLost: the session is lost.
        """
        request = types.CallToolRequest(params=types.CallToolRequestParams(name=name, arguments=arguments))
        result: types.CallToolResult = await self._send(request, types.CallToolResult)
        return result

    async def list_resources(self) -> types.ListResourcesResult:
        """The serving process's resources.

        Raises:
            BackendLost: the session is lost.
        """
        result: types.ListResourcesResult = await self._send(types.ListResourcesRequest(), types.ListResourcesResult)
        return result

    async def read_resource(self, uri: str, *, actor: Actor) -> types.ReadResourceResult:
        """Read on the serving process.

        Raises:
            UnknownResource: the server knows no such resource.
            MCPError: any other error of the server, unchanged.
            BackendLost: the session is lost.
        """
        request = types.ReadResourceRequest(params=types.ReadResourceRequestParams(uri=uri))
        try:
            result: types.ReadResourceResult = await self._send(request, types.ReadResourceResult)
        except MCPError as exc:
            if exc.code == RESOURCE_NOT_FOUND:
                raise UnknownResource(uri) from None
            raise
        return result

    async def instructions(self, peer: str | None) -> str:
        """The instructions the serving process gave this session (they name the same peer)."""
        client = self._client
        return (client.instructions if client is not None else None) or ""
