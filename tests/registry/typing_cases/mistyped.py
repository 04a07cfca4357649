"""Handlers that do not match their declarations: mypy strict reports each `# expect-error` line, no other.

Checked by `tests/registry/test_typing.py`; never imported by the test suite.
"""

from __future__ import annotations

import msgspec

from svc.registry import Declarations, Example, Module, one_of
from svc.runtime import Context, Runtime

MODULE = Module(id="mistyped", title="Mistyped", description="handlers that do not match their declarations")


class Text(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The declared input."""

    text: str


class Number(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Another input."""

    number: int


class Length(msgspec.Struct, frozen=True, kw_only=True):
    """The declared output."""

    length: int


class Words(msgspec.Struct, frozen=True, kw_only=True):
    """Another output."""

    words: int


async def counts_words(ctx: Context, params: Text) -> Words:
    """Wrong output: answers `Words`, declared `Length`."""
    return Words(words=len(params.text.split()))


async def takes_number(ctx: Context, params: Number) -> Length:
    """Wrong input: takes `Number`, declared `Text`."""
    return Length(length=params.number)


async def takes_runtime(ctx: Runtime, params: Text) -> Length:
    """Wrong context: takes the `Runtime`, declared `Context`."""
    return Length(length=len(params.text))


async def answers_outside_the_union(ctx: Context, params: Text) -> Words:
    """Wrong member: answers `Words`, declared one of `Length` or `Number`."""
    return Words(words=1)


mistyped = Declarations[Context](MODULE, source=__name__)

CAPABILITIES = (
    mistyped.query(
        "output",
        title="Wrong output",
        description="The handler answers another Struct.",
        input=Text,
        output=Length,
        handler=counts_words,  # expect-error
        examples=(Example(name="one", input={"text": "a"}),),
    ),
    mistyped.query(
        "input",
        title="Wrong input",
        description="The handler takes another Struct.",
        input=Text,
        output=Length,
        handler=takes_number,  # expect-error
        examples=(Example(name="one", input={"text": "a"}),),
    ),
    mistyped.command(
        "context",
        title="Wrong context",
        description="The handler takes another context.",
        input=Text,
        output=Length,
        handler=takes_runtime,  # expect-error
        examples=(Example(name="one", input={"text": "a"}),),
    ),
    mistyped.query(
        "union",
        title="Wrong member of a union",
        description="The handler answers a Struct outside the declared union.",
        input=Text,
        output=one_of(Length, Number),
        handler=answers_outside_the_union,  # expect-error
        examples=(Example(name="one", input={"text": "a"}),),
    ),
)
