"""Benchmark cases, read from the capability registry (never listed by hand).

Every example of every capability that has an HTTP route and whose benchmark policy is not `waived` is one
case. A GET example becomes a query string (booleans as `true`/`false`, the text form svc's binding reads);
a POST example becomes a JSON body. A case answers the status its example documents (`Example.status`):
200, or the documented error (403 for a repository writer, which HTTP never runs).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

import msgspec

from svc.registry import Capability, Example, Registry

__all__ = ["Case", "cases_from_registry", "query_string"]


@dataclass(frozen=True, slots=True)
class Case:
    """One HTTP request to measure: a capability's example on its route.

    `condition` is the `when` of a `required_when` benchmark policy: prose the harness cannot establish,
    reported next to the figures. `status` is the status the example documents for the case.
    """

    capability: str
    example: str
    method: str
    path: str
    query: str
    body: bytes | None
    condition: str | None = None
    status: int = 200

    @property
    def name(self) -> str:
        """`<capability>/<example>`, unique over the registry."""
        return f"{self.capability}/{self.example}"

    @property
    def target(self) -> str:
        """The request target: the path, with the query string when there is one."""
        return f"{self.path}?{self.query}" if self.query else self.path

    @property
    def route(self) -> str:
        """`METHOD /path`, without the query string."""
        return f"{self.method} {self.path}"


def cases_from_registry(registry: Registry) -> list[Case]:
    """Every benchmark case of `registry`, in capability-id then declaration order."""
    return [
        _case(cap, example)
        for cap in registry.capabilities
        if cap.exposure.http is not None and cap.benchmark.policy != "waived"
        for example in cap.examples
    ]


def _case(cap: Capability, example: Example) -> Case:
    http = cap.exposure.http
    assert http is not None
    if http.method == "GET":
        query, body = query_string(example.input), None
    else:
        query, body = "", msgspec.json.encode(example.input)
    condition = cap.benchmark.when if cap.benchmark.policy == "required_when" else None
    return Case(
        capability=cap.id,
        example=example.name,
        method=http.method,
        path=http.path,
        query=query,
        body=body,
        condition=condition,
        status=example.status,
    )


def query_string(values: Mapping[str, Any]) -> str:
    """The query string of an example input: scalars as text, booleans as `true`/`false`, None omitted.

    Raises:
        ValueError: a value is a list, an object or another type a query string cannot carry.
    """
    return urlencode(list(_query_items(values)), quote_via=quote)


def _query_items(values: Mapping[str, Any]) -> Iterable[tuple[str, str]]:
    for name, value in values.items():
        if value is None:
            continue
        if isinstance(value, bool):
            yield name, "true" if value else "false"
        elif isinstance(value, str | int | float):
            yield name, str(value)
        else:
            raise ValueError(f"parameter {name!r}: a query string cannot carry {type(value).__name__}")
