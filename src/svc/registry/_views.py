"""Answer shapes of the registry itself: the capability descriptor and the shared error body."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from svc.registry._declaration import Benchmark, Cache, Example, Exposure, Hints, Kind, Stability

__all__ = ["CapabilityView", "ErrorBody", "ErrorDetail", "ExecutionFacts", "Provenance", "SchemaRef"]


class ErrorDetail(msgspec.Struct, frozen=True, kw_only=True):
    """What went wrong: a stable code and a message for a person."""

    code: str
    message: str


class ErrorBody(msgspec.Struct, frozen=True, kw_only=True):
    """Every failure, on every route: `{error: {code, message}}`."""

    error: ErrorDetail


class SchemaRef(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A schema with the component name it has in the OpenAPI document."""

    name: str | None = None
    schema: dict[str, Any] = msgspec.field(default_factory=dict)


class Provenance(msgspec.Struct, frozen=True, kw_only=True):
    """Where a capability comes from."""

    source: Literal["builtin", "declarative"]
    module: str


class ExecutionFacts(msgspec.Struct, frozen=True, kw_only=True):
    """Derived execution classification."""

    effect: Literal["read", "process_state", "repository_mutation"]
    cancellable: bool
    concurrency: Literal["unrestricted", "serial"]
    confirmation: bool
    hints: Hints


class CapabilityView(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One capability as data (`capabilities.describe`)."""

    id: str
    module: str
    kind: Kind
    title: str
    description: str
    input: SchemaRef
    output: SchemaRef
    examples: list[Example]
    provenance: Provenance
    exposure: Exposure
    availability: Literal["always", "runtime"]
    visibility: Literal["public", "developer", "internal"]
    stability: Stability
    benchmark: Benchmark
    cache: Cache
    execution: ExecutionFacts
    tags: list[str] | None = None
