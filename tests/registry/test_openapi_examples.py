"""The OpenAPI document honest to the spec: every example of every operation, and every policy, is in it.

Spec: "Every example in that document is a benchmark case. An operation without an example is a build
failure of the executable." Every operation lists all its cases under `x-svc-examples` (an empty-input case
has no parameter to show under); GET parameters and POST bodies keep their own `examples` as well.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from openapi_spec_validator import validate

from svc.capabilities import builtin_registry
from svc.registry import Capability, Example, Exposure, HttpExposure, Module, NoInput, Registry, build_registry
from svc.runtime import Context
from svc.surfaces import render_openapi
from tests.conftest import ROOT

REGISTRY = builtin_registry()
DOCUMENT = render_openapi(REGISTRY)
OPERATIONS = [pytest.param(op, id=op["operationId"]) for item in DOCUMENT["paths"].values() for op in item.values()]


def case(example: Example) -> dict[str, Any]:
    expected: dict[str, Any] = {"name": example.name, "input": example.input}
    if example.description is not None:
        expected["description"] = example.description
    expected["status"] = example.status
    return expected


def test_every_http_capability_is_an_operation() -> None:
    assert len(OPERATIONS) == sum(1 for c in REGISTRY.capabilities if c.exposure.http is not None)


@pytest.mark.parametrize("op", OPERATIONS)
def test_every_operation_lists_every_example_in_declaration_order(op: dict[str, Any]) -> None:
    cap = REGISTRY.by_id[op["operationId"]]
    assert cap.examples
    listed = op["x-svc-examples"]
    assert listed == [case(e) for e in cap.examples]
    for entry in listed:
        assert list(entry) == [k for k in ("name", "input", "description", "status") if k in entry]
        assert 200 <= entry["status"] <= 599


@pytest.mark.parametrize("op", OPERATIONS)
def test_every_example_shows_under_each_parameter_it_sets_or_in_the_request_body(op: dict[str, Any]) -> None:
    cap = REGISTRY.by_id[op["operationId"]]
    if "parameters" in op:
        shown = {p["name"]: p.get("examples", {}) for p in op["parameters"]}
        for example in cap.examples:
            for name, value in example.input.items():
                assert shown[name][example.name] == {"value": value}, (example.name, name)
        for name, examples in shown.items():
            assert set(examples) == {e.name for e in cap.examples if e.input.get(name) is not None}
    else:
        body = op["requestBody"]["content"]["application/json"]["examples"]
        assert body == {e.name: {"value": e.input} for e in cap.examples}


def test_the_empty_input_examples_are_in_the_document() -> None:
    for capability_id in ("plan.model", "plan.next", "health.live", "mesh.status"):
        cap = REGISTRY.by_id[capability_id]
        assert cap.exposure.http is not None
        op = DOCUMENT["paths"][cap.exposure.http.path]["get"]
        assert op["x-svc-examples"], capability_id
        assert op["x-svc-examples"][0]["input"] == {}


def test_a_documented_error_status_is_in_the_document() -> None:
    op = DOCUMENT["paths"]["/api/v1/plan/transition"]["post"]
    assert {e["status"] for e in op["x-svc-examples"]} == {403}
    assert "403" in op["responses"]


@pytest.mark.parametrize("op", OPERATIONS)
def test_every_operation_carries_the_cache_and_benchmark_policy(op: dict[str, Any]) -> None:
    cap = REGISTRY.by_id[op["operationId"]]
    assert op["x-svc-cache"]["policy"] == cap.cache.policy
    assert op["x-svc-cache"]["policy"] in ("disabled", "process", "generation")
    assert op["x-svc-benchmark"]["policy"] == cap.benchmark.policy
    assert op["x-svc-benchmark"]["policy"] in ("required", "required_when", "waived")


def test_the_committed_document_carries_the_examples_and_policies() -> None:
    committed = json.loads((ROOT / "docs/generated/openapi.json").read_bytes())
    for item in committed["paths"].values():
        for op in item.values():
            assert op["x-svc-examples"], op["operationId"]
            assert "policy" in op["x-svc-cache"], op["operationId"]
            assert "policy" in op["x-svc-benchmark"], op["operationId"]


class Filter(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    limit: int = 10
    name: str | None = None
    flag: bool = False


class Answer(msgspec.Struct, frozen=True):
    ok: bool


async def answer(ctx: Context, params: Any) -> Answer:
    return Answer(ok=True)


def demo_registry() -> Registry:
    module = Module(id="demo", title="Demo", description="demo")
    return build_registry(
        [module],
        [
            Capability(
                id="demo.search",
                module="demo",
                title="Search",
                description="search",
                input=Filter,
                output=Answer,
                handler=answer,
                examples=(
                    Example(name="plain"),
                    Example(name="some", input={"limit": 3, "flag": True}, description="three, flagged"),
                    Example(name="named", input={"name": "x", "flag": False}),
                    Example(name="unnamed", input={"name": None}, status=400),
                ),
                exposure=Exposure(http=HttpExposure(method="GET", path="/api/v1/search")),
            ),
            Capability(
                id="demo.bare",
                module="demo",
                title="Bare",
                description="no parameter",
                input=NoInput,
                output=Answer,
                handler=answer,
                examples=(Example(name="bare"),),
                exposure=Exposure(http=HttpExposure(method="GET", path="/api/v1/bare")),
            ),
        ],
    )


def test_a_demo_registry_renders_every_case_and_validates() -> None:
    document = render_openapi(demo_registry())
    validate(document)
    search = document["paths"]["/api/v1/search"]["get"]
    assert search["x-svc-examples"] == [
        {"name": "plain", "input": {}, "status": 200},
        {"name": "some", "input": {"limit": 3, "flag": True}, "description": "three, flagged", "status": 200},
        {"name": "named", "input": {"name": "x", "flag": False}, "status": 200},
        {"name": "unnamed", "input": {"name": None}, "status": 400},
    ]
    params = {p["name"]: p.get("examples") for p in search["parameters"]}
    assert params == {
        "limit": {"some": {"value": 3}},
        "name": {"named": {"value": "x"}},
        "flag": {"some": {"value": True}, "named": {"value": False}},
    }
    bare = document["paths"]["/api/v1/bare"]["get"]
    assert bare["parameters"] == []
    assert bare["x-svc-examples"] == [{"name": "bare", "input": {}, "status": 200}]
