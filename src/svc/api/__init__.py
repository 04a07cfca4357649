"""The projections to the outside: the HTTP app and server, its pages, and MCP over stdio and `/mcp`.

Names are imported on first use: serving HTTP does not import the MCP SDK, which the first request under `/mcp`
loads (`svc.api._deferred.DeferredMcp`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from svc import _lazy

if TYPE_CHECKING:
    from svc.api._http import MAX_BODY as MAX_BODY
    from svc.api._http import HttpLimits as HttpLimits
    from svc.api._http import SvcApp as SvcApp
    from svc.api._http import check_request as check_request
    from svc.api._http import error_response as error_response
    from svc.api._http import loopback_host as loopback_host
    from svc.api._mcp import BRIDGE_HEADER as BRIDGE_HEADER
    from svc.api._mcp import RESOURCE_NOT_FOUND as RESOURCE_NOT_FOUND
    from svc.api._mcp import Backend as Backend
    from svc.api._mcp import LocalBackend as LocalBackend
    from svc.api._mcp import UnknownResource as UnknownResource
    from svc.api._mcp import build_server as build_server
    from svc.api._mcp import error_result as error_result
    from svc.api._mcp import new_peer as new_peer
    from svc.api._mcp_http import SECURITY as SECURITY
    from svc.api._mcp_http import McpEndpoint as McpEndpoint
    from svc.api._mcp_remote import BackendLost as BackendLost
    from svc.api._mcp_remote import RemoteBackend as RemoteBackend
    from svc.api._mcp_stdio import claim_stdio as claim_stdio
    from svc.api._mcp_stdio import serve_stdio as serve_stdio
    from svc.api._pages import build_pages as build_pages
    from svc.api._pages import home_document as home_document
    from svc.api._server import DEFAULT_PORT as DEFAULT_PORT
    from svc.api._server import bind_loopback as bind_loopback
    from svc.api._server import serve_http as serve_http

__all__ = [
    "BRIDGE_HEADER",
    "DEFAULT_PORT",
    "MAX_BODY",
    "RESOURCE_NOT_FOUND",
    "SECURITY",
    "Backend",
    "BackendLost",
    "HttpLimits",
    "LocalBackend",
    "McpEndpoint",
    "RemoteBackend",
    "SvcApp",
    "UnknownResource",
    "bind_loopback",
    "build_pages",
    "build_server",
    "check_request",
    "claim_stdio",
    "error_response",
    "error_result",
    "home_document",
    "loopback_host",
    "new_peer",
    "serve_http",
    "serve_stdio",
]

__getattr__, __dir__ = _lazy.exports(__name__, __file__)
