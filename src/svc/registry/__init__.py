"""The capability model: declarations, the typed builder, validation and the frozen registry.

Imports no web, MCP or CLI library and nothing of svc above it: the runtime runs this model, the surfaces
render it, and every capability module declares itself through it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from svc import _lazy

if TYPE_CHECKING:
    from svc.registry._binding import MAX_DEPTH as MAX_DEPTH
    from svc.registry._binding import decode_json as decode_json
    from svc.registry._binding import decode_text as decode_text
    from svc.registry._binding import decode_value as decode_value
    from svc.registry._binding import input_problems as input_problems
    from svc.registry._builder import Declarations as Declarations
    from svc.registry._builder import one_of as one_of
    from svc.registry._declaration import BENCHMARKED as BENCHMARKED
    from svc.registry._declaration import NO_CACHE as NO_CACHE
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
    from svc.registry._registry import Registry as Registry
    from svc.registry._registry import RegistryError as RegistryError
    from svc.registry._registry import build_registry as build_registry
    from svc.registry._registry import descriptor as descriptor
    from svc.registry._views import CapabilityView as CapabilityView
    from svc.registry._views import ErrorBody as ErrorBody
    from svc.registry._views import ErrorDetail as ErrorDetail

__getattr__, __dir__ = _lazy.exports(__name__, __file__)

__all__ = [
    "BENCHMARKED",
    "MAX_DEPTH",
    "NO_CACHE",
    "Benchmark",
    "Cache",
    "Capability",
    "CapabilityView",
    "CliPreset",
    "Declarations",
    "ErrorBody",
    "ErrorDetail",
    "Example",
    "Exposure",
    "Hints",
    "HttpExposure",
    "McpExposure",
    "McpResource",
    "Module",
    "NoInput",
    "Registry",
    "RegistryError",
    "build_registry",
    "decode_json",
    "decode_text",
    "decode_value",
    "descriptor",
    "input_problems",
    "one_of",
]
