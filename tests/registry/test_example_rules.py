"""REGISTRY.md §3: no query or command without an example, and an example's status is an HTTP status.

A small demo registry declared through `Declarations` builds; stripping the examples of one of its
capabilities (or giving one a status outside 200-599) makes `build_registry` refuse, naming that capability.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import msgspec
import pytest

from svc.registry import Capability, Declarations, Example, Module, NoInput, RegistryError, build_registry
from svc.runtime import Context

MODULE = Module(id="demo", title="Demo", description="a demo registry")


class Lookup(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    id: str


class Found(msgspec.Struct, frozen=True, kw_only=True):
    id: str


class Done(msgspec.Struct, frozen=True, kw_only=True):
    done: bool


async def find(ctx: Context, params: Lookup) -> Found:
    return Found(id=params.id)


async def ping(ctx: Context, params: NoInput) -> Done:
    return Done(done=True)


async def touch(ctx: Context, params: Lookup) -> Done:
    return Done(done=True)


demo = Declarations[Context](MODULE, source=__name__)
CAPABILITIES: tuple[Capability, ...] = (
    demo.query(
        "find",
        title="Find",
        description="find one thing",
        input=Lookup,
        output=Found,
        handler=find,
        examples=(Example(name="one", input={"id": "a"}), Example(name="missing", input={"id": "zz"}, status=404)),
        http="GET /api/v1/demo/find",
    ),
    demo.query(
        "ping",
        title="Ping",
        description="answer at once",
        input=NoInput,
        output=Done,
        handler=ping,
        examples=(Example(name="ping"),),
        http="GET /api/v1/demo/ping",
    ),
    demo.command(
        "touch",
        title="Touch",
        description="touch one thing",
        input=Lookup,
        output=Done,
        handler=touch,
        examples=(Example(name="touch", input={"id": "a"}),),
        http="POST /api/v1/demo/touch",
        tool="svc_demo_touch",
    ),
)


def replaced(capability_id: str, **changes: Any) -> list[Capability]:
    return [dataclasses.replace(c, **changes) if c.id == capability_id else c for c in CAPABILITIES]


def refusals(capabilities: list[Capability]) -> tuple[str, ...]:
    with pytest.raises(RegistryError) as info:
        build_registry([MODULE], capabilities)
    return info.value.problems


def test_the_demo_registry_builds() -> None:
    registry = build_registry([MODULE], CAPABILITIES)
    assert [c.id for c in registry.capabilities] == ["demo.find", "demo.ping", "demo.touch"]


@pytest.mark.parametrize("capability_id", ["demo.find", "demo.ping", "demo.touch"])
def test_removing_the_examples_of_one_capability_fails_the_build_naming_it(capability_id: str) -> None:
    problems = refusals(replaced(capability_id, examples=()))
    assert problems == (f"{capability_id}: no example (every operation needs at least one)",)
    with pytest.raises(RegistryError, match=rf"- {capability_id}: no example"):
        build_registry([MODULE], replaced(capability_id, examples=()))


def test_every_capability_without_an_example_is_named_at_once() -> None:
    stripped = [dataclasses.replace(c, examples=()) for c in CAPABILITIES]
    assert refusals(stripped) == tuple(f"{c.id}: no example (every operation needs at least one)" for c in CAPABILITIES)


@pytest.mark.parametrize("status", [0, 100, 199, 600, 1000, -1])
def test_an_example_status_outside_200_599_is_refused(status: int) -> None:
    problems = refusals(replaced("demo.ping", examples=(Example(name="ping", status=status),)))
    assert problems == (f"demo.ping: example 'ping' status {status} is not an HTTP status 200-599",)


@pytest.mark.parametrize("status", [200, 204, 403, 404, 422, 599])
def test_an_example_status_within_200_599_is_accepted(status: int) -> None:
    registry = build_registry([MODULE], replaced("demo.ping", examples=(Example(name="ping", status=status),)))
    assert registry.by_id["demo.ping"].examples[0].status == status
