"""The registry validates itself when built: every refusal rule, all problems collected."""

from __future__ import annotations

import dataclasses
from typing import Any

import msgspec
import pytest

from svc.capabilities import builtin_capabilities, builtin_modules, builtin_registry
from svc.registry import (
    Benchmark,
    Cache,
    Capability,
    CliPreset,
    Example,
    Exposure,
    HttpExposure,
    McpExposure,
    McpResource,
    Module,
    NoInput,
    RegistryError,
    build_registry,
)
from svc.runtime import Context

MODULE = Module(id="demo", title="Demo", description="test capabilities")


class Answer(msgspec.Struct, frozen=True):
    ok: bool


class Paged(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    limit: int = 10


class Nested(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    items: list[str] = []


async def handler(ctx: Context, params: Any) -> Answer:
    return Answer(ok=True)


def cap(**overrides: Any) -> Capability:
    base: dict[str, Any] = {
        "id": "demo.thing",
        "module": "demo",
        "title": "Thing",
        "description": "a thing",
        "input": NoInput,
        "output": Answer,
        "handler": handler,
        "examples": (Example(name="one", input={}),),
        "exposure": Exposure(http=HttpExposure(method="GET", path="/api/v1/thing")),
    }
    base.update(overrides)
    return Capability(**base)


def problems(*caps: Capability) -> list[str]:
    with pytest.raises(RegistryError) as info:
        build_registry([MODULE], caps)
    return list(info.value.problems)


def test_builtin_registry_builds_and_is_frozen() -> None:
    registry = builtin_registry()
    assert len(registry) == len(builtin_capabilities())
    assert [c.id for c in registry.capabilities] == sorted(c.id for c in registry.capabilities)
    with pytest.raises(TypeError):
        registry.by_id["x"] = registry.capabilities[0]  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        registry.capabilities[0].title = "changed"  # type: ignore[misc]


class Opaque:
    """A type msgspec has no JSON schema for."""


def test_a_type_without_a_json_schema_fails_the_build() -> None:
    holder = msgspec.defstruct("Holder", [("thing", Opaque)], frozen=True)
    (found,) = problems(cap(output=holder))
    assert found.startswith("demo.thing: type ")
    assert "has no JSON schema" in found


def test_the_builtin_declarations_pass_the_schema_check_every_start_skips() -> None:
    build_registry(builtin_modules(), builtin_capabilities(), check_schemas=True)
    clash = msgspec.defstruct("Plan", [("a", int)], frozen=True)
    changed = [dataclasses.replace(c, output=clash) if c.id == "health.live" else c for c in builtin_capabilities()]
    with pytest.raises(RegistryError, match="schema 'Plan' differs"):
        build_registry(builtin_modules(), changed, check_schemas=True)


def test_a_process_builds_the_builtin_registry_without_deriving_a_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: Any, **__: Any) -> Any:
        raise AssertionError("a JSON schema was derived")

    monkeypatch.setattr(msgspec.json, "schema_components", refuse)
    registry = builtin_registry.__wrapped__()
    assert len(registry) == len(builtin_capabilities())


def test_an_operation_without_an_example_fails_the_build() -> None:
    assert problems(cap(examples=())) == ["demo.thing: no example (every operation needs at least one)"]


def test_a_builtin_capability_without_an_example_fails_the_builtin_build() -> None:
    stripped = [dataclasses.replace(c, examples=()) if c.id == "health.live" else c for c in builtin_capabilities()]
    with pytest.raises(RegistryError) as info:
        build_registry(builtin_modules(), stripped)
    assert info.value.problems == ("health.live: no example (every operation needs at least one)",)


def test_every_problem_is_collected() -> None:
    found = problems(
        cap(id="Bad Id"),
        cap(id="other.thing", exposure=Exposure(http=HttpExposure(method="GET", path="/api/v1/x"))),
        cap(id="demo.a", exposure=Exposure(http=HttpExposure(method="GET", path="/elsewhere/"))),
    )
    assert "Bad Id: bad id (expected <ns>.<local>, lowercase)" in found
    assert "other.thing: builtin namespace 'other' differs from module 'demo'" in found
    assert "demo.a: HTTP path '/elsewhere/' is not under /api/v1/" in found
    assert "demo.a: HTTP path '/elsewhere/' has a trailing or doubled '/'" in found


@pytest.mark.parametrize(
    ("declaration", "expected"),
    [
        (cap(id="demo.thing"), "demo.thing: duplicate id"),
        (cap(id="demo.other"), "demo.other: duplicate route ('GET', '/api/v1/thing') (also declared by demo.thing)"),
    ],
)
def test_duplicates_are_refused(declaration: Capability, expected: str) -> None:
    assert expected in problems(cap(), declaration)


def test_duplicate_tool_resource_and_cli_are_refused() -> None:
    exposure = Exposure(
        mcp=McpExposure(tool="svc_thing", resource=McpResource(uri="svc://thing", name="thing")), cli=("thing",)
    )
    found = problems(cap(id="demo.a", exposure=exposure), cap(id="demo.b", exposure=exposure))
    assert "demo.b: duplicate tool 'svc_thing' (also declared by demo.a)" in found
    assert "demo.b: duplicate resource 'svc://thing' (also declared by demo.a)" in found
    assert "demo.b: duplicate cli 'thing' (also declared by demo.a)" in found


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"exposure": Exposure(mcp=McpExposure(tool="Bad-Name"))}, "bad MCP tool name 'Bad-Name'"),
        (
            {"exposure": Exposure(mcp=McpExposure(resource=McpResource(uri="http://x", name="x")))},
            "MCP resource URI 'http://x' is not under svc://",
        ),
        ({"exposure": Exposure(http=HttpExposure(method="GET", path="/api/v1/a b"))}, "characters outside"),
        ({"exposure": Exposure(http=HttpExposure(method="GET", path="/api/v1//a"))}, "trailing or doubled"),
        ({"exposure": Exposure(http=HttpExposure(method="GET", path="/api/v1/a?b"))}, "characters outside"),
        ({"stability": "planned"}, "a planned capability cannot be exposed"),
        ({"stability": "unsupported"}, "a unsupported capability cannot be exposed"),
        ({"exposure": Exposure(http=HttpExposure(method="POST", path="/api/v1/thing"))}, "a query is served on GET"),
        (
            {"kind": "command", "exposure": Exposure(http=HttpExposure(method="GET", path="/api/v1/thing"))},
            "a command is served on POST",
        ),
        ({"input": Nested}, "GET input property 'items' is not a scalar"),
        (
            {
                "kind": "command",
                "exposure": Exposure(
                    http=HttpExposure(method="POST", path="/api/v1/thing"),
                    mcp=McpExposure(resource=McpResource(uri="svc://c", name="c")),
                ),
            },
            "a command cannot be an MCP resource",
        ),
        ({"handler": None}, "a query needs a handler"),
        ({"read": lambda repo, params: {}}, "a query has a handler or a read, not both"),
        ({"live": ("missing",), "read": lambda repo, params: {}}, "live field 'missing' is not a field of the input"),
        ({"live": ("missing",)}, "live fields need both a read and a handler"),
        (
            {"kind": "resource", "handler": None, "read": lambda repo, params: {}},
            "a resource has no handler, HTTP route, CLI command or tool",
        ),
        (
            {"kind": "resource", "benchmark": Benchmark(policy="waived", reason="not_executable")},
            "a resource has no handler, HTTP route, CLI command or tool",
        ),
        (
            {
                "kind": "command",
                "exposure": Exposure(http=HttpExposure(method="POST", path="/api/v1/thing")),
                "cache": Cache(policy="process", max_entries=4),
            },
            "a command is never cached",
        ),
        ({"cache": Cache(policy="process", max_entries=0)}, "cache max_entries must be positive"),
        ({"cache": Cache(policy="process", max_entries=2, ttl_seconds=0)}, "cache ttl_seconds must be positive"),
        ({"cache": Cache(policy="generation")}, "cache policy generation needs max_entries"),
        ({"examples": (Example(name="a", input={}), Example(name="a", input={}))}, "duplicate example name 'a'"),
        ({"examples": (Example(name="Bad Name", input={}),)}, "bad example name 'Bad Name'"),
        (
            {"input": Paged, "examples": (Example(name="a", input={"limit": "x"}),)},
            "example 'a' fails the input schema: Expected `int`, got `str` - at `$.limit`",
        ),
        ({"benchmark": Benchmark(policy="required_when")}, "benchmark required_when needs `when`"),
        ({"benchmark": Benchmark(policy="waived")}, "benchmark waived needs a reason"),
        ({"module": "nope", "id": "nope.thing"}, "unknown module 'nope'"),
        (
            {"exposure": Exposure(cli_presets=(CliPreset(words=("t", "x"), input={}, summary="s"),))},
            "CLI presets need the capability's own CLI words",
        ),
        (
            {"exposure": Exposure(cli=("t",), cli_presets=(CliPreset(words=("t", "x"), input={"z": 1}, summary="s"),))},
            "CLI preset 't x' sets fields the input does not have",
        ),
    ],
)
def test_refusal_rules(overrides: dict[str, Any], expected: str) -> None:
    found = problems(cap(**overrides))
    assert any(expected in p for p in found), found


def test_two_schemas_with_one_name_and_different_content_are_refused() -> None:
    first = type("Twin", (msgspec.Struct,), {"__annotations__": {"a": int}})
    second = type("Twin", (msgspec.Struct,), {"__annotations__": {"b": str}})
    found = problems(
        cap(id="demo.a", output=first),
        cap(id="demo.b", output=second, exposure=Exposure(http=HttpExposure(method="GET", path="/api/v1/b"))),
    )
    assert "demo.b: schema 'Twin' differs from the one of demo.a" in found


def test_classification_is_derived_from_kind() -> None:
    query = cap()
    command = cap(kind="command", exposure=Exposure(http=HttpExposure(method="POST", path="/api/v1/thing")))
    writer = dataclasses.replace(command, writes_repository=True)
    assert (query.effect, command.effect, writer.effect) == ("read", "process_state", "repository_mutation")
    assert msgspec.to_builtins(query.hints) == {
        "read_only": True,
        "destructive": False,
        "idempotent": True,
        "open_world": False,
    }
    assert msgspec.to_builtins(writer.hints) == {
        "read_only": False,
        "destructive": True,
        "idempotent": False,
        "open_world": False,
    }
    assert (query.concurrency, command.concurrency) == ("unrestricted", "serial")
    assert (query.confirmation, command.confirmation) == (False, True)
    assert cap(exposure=Exposure(cli=("thing",))).visibility == "developer"
    assert cap(exposure=Exposure()).visibility == "internal"
    assert query.visibility == "public"


def test_fingerprint_changes_with_a_description() -> None:
    registry = build_registry([MODULE], [cap()])
    changed = build_registry([MODULE], [cap(description="another")])
    assert registry.fingerprint != changed.fingerprint
    assert build_registry([MODULE], [cap()]).fingerprint == registry.fingerprint
