"""The spec's Endpoints rows, transcribed in `spec_rows.json`, against the OpenAPI document svc serves.

Each row names a capability's method and path, MCP tool and resource, CLI words, cache, required parameters,
stability and benchmark policy; the document must say the same, and the capability must exist on every
surface the row names.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from svc.capabilities import builtin_registry
from svc.surfaces import render_openapi

ROWS: list[dict[str, Any]] = json.loads((Path(__file__).parent / "spec_rows.json").read_text(encoding="utf-8"))["rows"]


@pytest.fixture(scope="module")
def operations() -> dict[str, tuple[str, str, dict[str, Any]]]:
    document = render_openapi(builtin_registry())
    return {
        op["operationId"]: (method.upper(), path, op)
        for path, item in document["paths"].items()
        for method, op in item.items()
    }


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_the_operation_is_the_spec_row(row: dict[str, Any], operations: dict[str, tuple[str, str, Any]]) -> None:
    assert row["id"] in operations, f"{row['id']} is not served over HTTP"
    method, path, op = operations[row["id"]]
    assert (method, path) == (row["method"], row["path"])
    mcp = op.get("x-svc-mcp", {})
    assert mcp.get("tool") == row["tool"]
    assert mcp.get("resource", {}).get("uri") == row["resource"]
    if row["resource"] is not None:
        assert mcp["resource"]["name"] == row["resource"].rsplit("/", 1)[-1]
    assert op.get("x-svc-cli") == row["cli"]
    assert op["x-svc-cache"] == row["cache"]
    assert op["x-svc-stability"] == row["stability"]
    assert op["x-svc-benchmark"]["policy"] == row["benchmark"]
    assert op["x-svc-kind"] == "query"
    required = sorted(p["name"] for p in op.get("parameters", []) if p.get("required"))
    assert required == row["required"]


def test_every_row_is_one_capability_of_the_registry() -> None:
    registry = builtin_registry()
    ids = [r["id"] for r in ROWS]
    assert len(set(ids)) == len(ids) == 13
    for row in ROWS:
        cap = registry.by_id[row["id"]]
        assert cap.exposure.mcp is not None
        assert cap.exposure.mcp.tool == row["tool"]
        assert (" ".join(cap.exposure.cli) or None) == row["cli"]
