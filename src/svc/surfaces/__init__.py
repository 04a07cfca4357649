"""What each surface shows, rendered from the capability model: OpenAPI, the CLI tree, the MCP catalog, documents.

Pure functions of a `Registry`: no I/O, no web, MCP or CLI library. The HTTP server, the MCP server and the
command line are built from these tables, and so are the generated documents and the closure matrix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from svc import _lazy

if TYPE_CHECKING:
    from svc.surfaces._cli_tree import VERSION_OPTION as VERSION_OPTION
    from svc.surfaces._cli_tree import CliCommand as CliCommand
    from svc.surfaces._cli_tree import CliParameter as CliParameter
    from svc.surfaces._cli_tree import cli_tree as cli_tree
    from svc.surfaces._cli_tree import global_options as global_options
    from svc.surfaces._cli_tree import struct_parameters as struct_parameters
    from svc.surfaces._commands import INFRASTRUCTURE as INFRASTRUCTURE
    from svc.surfaces._commands import CommandsRefreshOptions as CommandsRefreshOptions
    from svc.surfaces._commands import GenerateOptions as GenerateOptions
    from svc.surfaces._commands import InfrastructureCommand as InfrastructureCommand
    from svc.surfaces._commands import McpOptions as McpOptions
    from svc.surfaces._commands import RepairLedgerOptions as RepairLedgerOptions
    from svc.surfaces._commands import RunOptions as RunOptions
    from svc.surfaces._commands import ServeOptions as ServeOptions
    from svc.surfaces._commands import SvcOptions as SvcOptions
    from svc.surfaces._documents import DOCUMENTS as DOCUMENTS
    from svc.surfaces._documents import GENERATED_DIR as GENERATED_DIR
    from svc.surfaces._documents import MANIFEST as MANIFEST
    from svc.surfaces._documents import openapi_json as openapi_json
    from svc.surfaces._documents import render_documents as render_documents
    from svc.surfaces._executable_commands import executable_commands as executable_commands
    from svc.surfaces._mcp_catalog import OBJECT_TEMPLATE as OBJECT_TEMPLATE
    from svc.surfaces._mcp_catalog import PROTOCOL_VERSIONS as PROTOCOL_VERSIONS
    from svc.surfaces._mcp_catalog import SERVED_METHODS as SERVED_METHODS
    from svc.surfaces._mcp_catalog import SERVER_NAME as SERVER_NAME
    from svc.surfaces._mcp_catalog import SERVER_TITLE as SERVER_TITLE
    from svc.surfaces._mcp_catalog import McpCatalog as McpCatalog
    from svc.surfaces._mcp_catalog import ResourceSpec as ResourceSpec
    from svc.surfaces._mcp_catalog import ToolSpec as ToolSpec
    from svc.surfaces._mcp_catalog import mcp_catalog as mcp_catalog
    from svc.surfaces._openapi import render_openapi as render_openapi
    from svc.surfaces._routes import SERVER_ROUTES as SERVER_ROUTES
    from svc.surfaces._routes import ServerRoute as ServerRoute
    from svc.surfaces._routes import server_route as server_route
    from svc.surfaces._surfaces import Reachable as Reachable
    from svc.surfaces._surfaces import reachable as reachable

__getattr__, __dir__ = _lazy.exports(__name__, __file__)

__all__ = [
    "DOCUMENTS",
    "GENERATED_DIR",
    "INFRASTRUCTURE",
    "MANIFEST",
    "OBJECT_TEMPLATE",
    "PROTOCOL_VERSIONS",
    "SERVED_METHODS",
    "SERVER_NAME",
    "SERVER_ROUTES",
    "SERVER_TITLE",
    "VERSION_OPTION",
    "CliCommand",
    "CliParameter",
    "CommandsRefreshOptions",
    "GenerateOptions",
    "InfrastructureCommand",
    "McpCatalog",
    "McpOptions",
    "Reachable",
    "RepairLedgerOptions",
    "ResourceSpec",
    "RunOptions",
    "ServeOptions",
    "ServerRoute",
    "SvcOptions",
    "ToolSpec",
    "cli_tree",
    "executable_commands",
    "global_options",
    "mcp_catalog",
    "openapi_json",
    "reachable",
    "render_documents",
    "render_openapi",
    "server_route",
    "struct_parameters",
]
