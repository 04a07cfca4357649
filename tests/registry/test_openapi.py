"""The OpenAPI document: valid 3.1, every extension and an example on every operation, deterministic."""

from __future__ import annotations

import json
import re
from typing import Any, get_args

from openapi_spec_validator import validate

from svc import __version__
from svc.capabilities import builtin_registry
from svc.capabilities._artifacts import DocumentId
from svc.nursery._store import new_execution_id
from svc.surfaces import DOCUMENTS, openapi_json, render_documents, render_openapi

EXTENSIONS = (
    "x-svc-id",
    "x-svc-kind",
    "x-svc-stability",
    "x-svc-provenance",
    "x-svc-benchmark",
    "x-svc-cache",
    "x-svc-effect",
)


def test_the_document_validates_as_openapi_3_1() -> None:
    document = render_openapi(builtin_registry())
    validate(document)
    assert document["openapi"] == "3.1.0"
    assert document["jsonSchemaDialect"] == "https://spec.openapis.org/oas/3.1/dialect/base"
    assert document["info"]["version"] == __version__


def test_every_operation_carries_every_extension_and_an_example() -> None:
    registry = builtin_registry()
    document = render_openapi(registry)
    operations = [(path, method, op) for path, item in document["paths"].items() for method, op in item.items()]
    assert len(operations) == sum(1 for c in registry.capabilities if c.exposure.http is not None)
    for path, method, op in operations:
        cap = registry.by_id[op["operationId"]]
        assert cap.exposure.http is not None
        assert (cap.exposure.http.path, cap.exposure.http.method.lower()) == (path, method)
        for extension in EXTENSIONS:
            assert extension in op, (op["operationId"], extension)
        assert op["x-svc-id"] == op["operationId"]
        assert ("x-svc-mcp" in op) == (cap.exposure.mcp is not None)
        assert ("x-svc-cli" in op) == bool(cap.exposure.cli)
        if cap.exposure.cli:
            assert op["x-svc-cli"] == " ".join(cap.exposure.cli)
        if method == "get":
            examples = [e for p in op["parameters"] for e in p.get("examples", {})]
            names = {e.name for e in cap.examples if e.input}
            assert names <= set(examples)
        else:
            assert op["requestBody"]["content"]["application/json"]["examples"]
        assert set(op["responses"]) >= {"200", "400", "404", "500", "default"}
        assert op["responses"]["400"]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/ErrorBody"
        }


def test_get_parameters_drop_null_from_types_and_defaults() -> None:
    document = render_openapi(builtin_registry())
    params = {p["name"]: p for p in document["paths"]["/api/v1/capabilities"]["get"]["parameters"]}
    assert params["kind"]["schema"] == {"enum": ["command", "query", "resource"], "description": "keep only this kind"}
    assert params["kind"]["required"] is False
    describe = document["paths"]["/api/v1/capability"]["get"]["parameters"]
    assert describe[0]["name"] == "id"
    assert describe[0]["required"] is True


def test_rendering_is_deterministic_and_served_bytes_equal_the_committed_copy() -> None:
    registry = builtin_registry()
    first = render_documents(registry)
    assert render_documents(registry) == first
    assert first["docs/generated/openapi.json"] == openapi_json(registry)
    manifest = json.loads(first["docs/generated/artifacts.json"])
    assert {a["path"] for a in manifest["artifacts"]} == set(first) - {"docs/generated/artifacts.json"}
    assert first["docs/generated/cli.md"].startswith(b"<!-- GENERATED FILE \xe2\x80\x94 DO NOT EDIT DIRECTLY")


def test_the_document_is_as_strict_as_the_handlers() -> None:
    """What a handler refuses, the schema excludes: a request the document allows is not refused for its shape."""
    registry = builtin_registry()
    document = render_openapi(registry)

    def parameter(path: str, name: str) -> dict[str, Any]:
        (found,) = (p for p in document["paths"][path]["get"]["parameters"] if p["name"] == name)
        schema: dict[str, Any] = found["schema"]
        return schema

    assert parameter("/api/v1/artifacts", "document")["enum"] == sorted(s.id for s in DOCUMENTS)
    assert set(get_args(DocumentId)) == {s.id for s in DOCUMENTS}
    components = document["components"]["schemas"]
    id_schemas = [
        parameter("/api/v1/executions/get", "id"),
        parameter("/api/v1/executions/events", "id"),
        components["IdInput"]["properties"]["id"],
        components["ReportInput"]["properties"]["id"],
        components["ExecutionEvent"]["properties"]["execution_id"],
    ]
    for schema in id_schemas:
        pattern = re.compile(schema["pattern"])
        assert pattern.search(new_execution_id())
        for wrong in ("", "plan.issues", "x-20261121T120000Z-0123ABCD", "x-20261121T120000Z-0123abcd0"):
            assert not pattern.search(wrong), wrong
    assert components["ExecutionEvent"]["properties"]["sequence"]["minimum"] == 1
    steps = parameter("/api/v1/executions/demonstrate", "steps")
    assert (steps["minimum"], steps["maximum"]) == (0, 2**64 - 1)
