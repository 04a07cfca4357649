"""The capability registry: declarations, validation, the one executor, caches and rendered documents.

Imports no web, MCP or CLI library: every surface is a thin projection over what lives here.
"""

from __future__ import annotations

from svc.registry._binding import decode_json as decode_json
from svc.registry._binding import decode_text as decode_text
from svc.registry._binding import decode_value as decode_value
from svc.registry._binding import input_problems as input_problems
from svc.registry._cache import ResultCache as ResultCache
from svc.registry._cli_tree import INFRASTRUCTURE as INFRASTRUCTURE
from svc.registry._cli_tree import CliCommand as CliCommand
from svc.registry._cli_tree import CliParameter as CliParameter
from svc.registry._cli_tree import cli_tree as cli_tree
from svc.registry._cli_tree import cli_usage as cli_usage
from svc.registry._cli_tree import http_write_refusal as http_write_refusal
from svc.registry._context import Actor as Actor
from svc.registry._context import Context as Context
from svc.registry._context import Reporter as Reporter
from svc.registry._declaration import Benchmark as Benchmark
from svc.registry._declaration import Cache as Cache
from svc.registry._declaration import Capability as Capability
from svc.registry._declaration import CliPreset as CliPreset
from svc.registry._declaration import Example as Example
from svc.registry._declaration import Exposure as Exposure
from svc.registry._declaration import Hints as Hints
from svc.registry._declaration import HttpExposure as HttpExposure
from svc.registry._declaration import McpExposure as McpExposure
from svc.registry._declaration import McpResource as McpResource
from svc.registry._declaration import Module as Module
from svc.registry._declaration import NoInput as NoInput
from svc.registry._documents import DOCUMENTS as DOCUMENTS
from svc.registry._documents import GENERATED_DIR as GENERATED_DIR
from svc.registry._documents import MANIFEST as MANIFEST
from svc.registry._documents import openapi_json as openapi_json
from svc.registry._documents import render_documents as render_documents
from svc.registry._executor import Executor as Executor
from svc.registry._generation import Generation as Generation
from svc.registry._mcp_catalog import OBJECT_TEMPLATE as OBJECT_TEMPLATE
from svc.registry._mcp_catalog import PROTOCOL_VERSIONS as PROTOCOL_VERSIONS
from svc.registry._mcp_catalog import SERVED_METHODS as SERVED_METHODS
from svc.registry._mcp_catalog import SERVER_NAME as SERVER_NAME
from svc.registry._mcp_catalog import SERVER_TITLE as SERVER_TITLE
from svc.registry._mcp_catalog import McpCatalog as McpCatalog
from svc.registry._mcp_catalog import ResourceSpec as ResourceSpec
from svc.registry._mcp_catalog import ToolSpec as ToolSpec
from svc.registry._mcp_catalog import mcp_catalog as mcp_catalog
from svc.registry._openapi import render_openapi as render_openapi
from svc.registry._registry import Registry as Registry
from svc.registry._registry import RegistryError as RegistryError
from svc.registry._registry import build_registry as build_registry
from svc.registry._registry import descriptor as descriptor
from svc.registry._runtime import ExecutableStamp as ExecutableStamp
from svc.registry._runtime import McpAttachments as McpAttachments
from svc.registry._runtime import Runtime as Runtime
from svc.registry._runtime import ServerFacts as ServerFacts
from svc.registry._runtime import utc_now as utc_now
from svc.registry._views import CapabilityView as CapabilityView
from svc.registry._views import ErrorBody as ErrorBody
from svc.registry._views import ErrorDetail as ErrorDetail

__all__ = [
    "DOCUMENTS",
    "GENERATED_DIR",
    "INFRASTRUCTURE",
    "MANIFEST",
    "OBJECT_TEMPLATE",
    "PROTOCOL_VERSIONS",
    "SERVED_METHODS",
    "SERVER_NAME",
    "SERVER_TITLE",
    "Actor",
    "Benchmark",
    "Cache",
    "Capability",
    "CapabilityView",
    "CliCommand",
    "CliParameter",
    "CliPreset",
    "Context",
    "ErrorBody",
    "ErrorDetail",
    "Example",
    "ExecutableStamp",
    "Executor",
    "Exposure",
    "Generation",
    "Hints",
    "HttpExposure",
    "McpAttachments",
    "McpCatalog",
    "McpExposure",
    "McpResource",
    "Module",
    "NoInput",
    "Registry",
    "RegistryError",
    "Reporter",
    "ResourceSpec",
    "ResultCache",
    "Runtime",
    "ServerFacts",
    "ToolSpec",
    "build_registry",
    "cli_tree",
    "cli_usage",
    "decode_json",
    "decode_text",
    "decode_value",
    "descriptor",
    "http_write_refusal",
    "input_problems",
    "mcp_catalog",
    "openapi_json",
    "render_documents",
    "render_openapi",
    "utc_now",
]
