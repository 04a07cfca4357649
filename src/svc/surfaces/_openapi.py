"""The OpenAPI 3.1 document, rendered from the registry (never written by hand).

Deterministic: a defined key order, no timestamps; `render_openapi` is memoised per registry, so it is
rendered once per registry build (a new build follows a change of the repository generation).
"""

from __future__ import annotations

import functools
from typing import Any

import msgspec

from svc._errors import (
    ERRORS,
    Forbidden,
    HeadersTooLarge,
    Internal,
    InvalidInput,
    NotFound,
    PayloadTooLarge,
    Refused,
    RequestTimeout,
    SvcError,
    Unavailable,
)
from svc._version import __version__
from svc.registry._declaration import Capability, Example
from svc.registry._registry import Registry
from svc.registry._schema import REF_PREFIX
from svc.surfaces._routes import SERVER_ROUTES

__all__ = ["BINDING_RULES", "render_openapi"]

DIALECT = "https://spec.openapis.org/oas/3.1/dialect/base"

BINDING_RULES: tuple[str, ...] = (
    "GET: every top-level property of the capability's input is a query parameter, coerced by the "
    "schema's type. Integers, numbers and booleans are parsed; everything else is text.",
    "POST: the input is the JSON request body (an object).",
    "An unknown parameter or unknown body field is invalid input (400 invalid_input); it is not ignored.",
    "A path that exists under another method answers 405 method_not_allowed.",
)

_ERROR_REF = {"$ref": REF_PREFIX + "ErrorBody"}


def _error(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": _ERROR_REF}}}


def _without_null(schema: dict[str, Any]) -> dict[str, Any]:
    out = dict(schema)
    if out.get("default", 0) is None:
        del out["default"]
    for key in ("anyOf", "oneOf"):
        members = out.get(key)
        if isinstance(members, list):
            rest = [m for m in members if m != {"type": "null"}]
            if len(rest) == 1:
                del out[key]
                out = {**rest[0], **out}
            else:
                out[key] = rest
    kind = out.get("type")
    if isinstance(kind, list) and "null" in kind:
        kept = [k for k in kind if k != "null"]
        out["type"] = kept[0] if len(kept) == 1 else kept
    return out


def _parameters(registry: Registry, cap: Capability) -> list[dict[str, Any]]:
    schema = registry.input_schema(cap)
    required = set(schema.get("required", ()))
    params = []
    for name, prop in schema.get("properties", {}).items():
        param: dict[str, Any] = {"name": name, "in": "query", "required": name in required}
        if "description" in prop:
            param["description"] = prop["description"]
        param["schema"] = _without_null(prop)
        # A case that sets this parameter shows under it (a null value is no query parameter at all).
        examples = {e.name: {"value": e.input[name]} for e in cap.examples if e.input.get(name) is not None}
        if examples:
            param["examples"] = examples
        params.append(param)
    return params


def _operation(registry: Registry, cap: Capability) -> dict[str, Any]:
    assert cap.exposure.http is not None
    op: dict[str, Any] = {
        "operationId": cap.id,
        "summary": cap.title,
        "description": cap.description,
        "tags": [cap.module],
    }
    if cap.exposure.http.method == "GET":
        op["parameters"] = _parameters(registry, cap)
    else:
        op["requestBody"] = {
            # A blank body is read as `{}`: it is a complete request exactly when no field is required.
            "required": any(f.required for f in msgspec.structs.fields(cap.input)),
            "content": {
                "application/json": {
                    "schema": registry.schemas.ref(cap.input),
                    "examples": {e.name: {"value": e.input} for e in cap.examples},
                }
            },
        }
    responses: dict[str, Any] = {
        "200": {
            "description": "the answer",
            "content": {"application/json": {"schema": registry.schemas.ref(cap.output)}},
        },
    }
    # Every request may be refused by the server before its capability runs: a Host that is not loopback or a
    # foreign Origin (403, also a repository write over HTTP), a head over 16 KiB (431), and while stopping or
    # at a bound (503); a request with a body also for its size (413) and its pace (408).
    raised: list[type[SvcError]] = [InvalidInput, Forbidden, NotFound, HeadersTooLarge, Internal, Unavailable]
    if cap.exposure.http.method == "POST":
        raised += [RequestTimeout, PayloadTooLarge]
    if cap.kind == "command":
        raised.append(Refused)
    for error in raised:
        responses[str(error.status)] = _error(f"{error.code}: {error.when}")
    responses["default"] = _error("any other failure, as ErrorBody")
    op["responses"] = dict(sorted(responses.items(), key=lambda kv: (kv[0] == "default", kv[0])))
    op["x-svc-id"] = cap.id
    op["x-svc-kind"] = cap.kind
    op["x-svc-stability"] = cap.stability
    op["x-svc-provenance"] = {"source": "builtin", "module": cap.module}
    op["x-svc-benchmark"] = _plain(cap.benchmark)
    op["x-svc-cache"] = _plain(cap.cache)
    op["x-svc-effect"] = cap.effect
    if cap.exposure.mcp is not None:
        op["x-svc-mcp"] = _plain(cap.exposure.mcp)
    if cap.exposure.cli:
        op["x-svc-cli"] = " ".join(cap.exposure.cli)
    op["x-svc-examples"] = [_example(e) for e in cap.examples]
    return op


def _example(example: Example) -> dict[str, Any]:
    """One case as the operation lists it: every example, even one with no parameter or field set."""
    case: dict[str, Any] = {"name": example.name, "input": example.input}
    if example.description is not None:
        case["description"] = example.description
    case["status"] = example.status
    return case


def _plain(struct: Any) -> dict[str, Any]:
    value: dict[str, Any] = msgspec.to_builtins(struct)
    return value


@functools.lru_cache(maxsize=4)
def render_openapi(registry: Registry) -> dict[str, Any]:
    """The OpenAPI 3.1 document of `registry` (memoised; treat the result as read-only)."""
    paths: dict[str, dict[str, Any]] = {}
    for cap in registry.capabilities:
        http = cap.exposure.http
        if http is not None:
            paths.setdefault(http.path, {})[http.method.lower()] = _operation(registry, cap)
    tagged = {cap.module for cap in registry.capabilities if cap.exposure.http is not None}
    return {
        "openapi": "3.1.0",
        "jsonSchemaDialect": DIALECT,
        "info": {
            "title": "svc",
            "version": __version__,
            "description": (
                "The capability registry of a repository's AI layer (.ai/), served on 127.0.0.1. "
                "Every operation is a capability; the operationId is its canonical id, and the same "
                "capability answers over MCP and the command line where its exposure says so."
            ),
        },
        "servers": [{"url": "/"}],
        "tags": [{"name": m.id, "description": m.description} for m in registry.modules if m.id in tagged],
        "paths": dict(sorted(paths.items())),
        "components": {"schemas": registry.schemas.components},
        "x-svc": {
            "generator": f"svc {__version__}",
            "infrastructure": [{"method": r.method, "path": r.path, "purpose": r.purpose} for r in SERVER_ROUTES],
            "binding": list(BINDING_RULES),
            "errors": [{"status": e.status, "code": e.code, "when": e.when} for e in ERRORS],
        },
    }
