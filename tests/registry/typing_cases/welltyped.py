"""Declarations whose handlers match them: mypy strict finds nothing here (see `tests/registry/test_typing.py`)."""

from __future__ import annotations

import msgspec

from svc.registry import Declarations, Example, Module, NoInput, one_of
from svc.runtime import Context

MODULE = Module(id="welltyped", title="Well typed", description="handlers that match their declarations")


class Text(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """An input."""

    text: str


class Length(msgspec.Struct, frozen=True, kw_only=True):
    """An output."""

    length: int


class Empty(msgspec.Struct, frozen=True, kw_only=True):
    """The other member of a union output."""


async def length(ctx: Context, params: Text) -> Length:
    """Matches input `Text`, output `Length`."""
    return Length(length=len(params.text))


async def ping(ctx: Context, params: NoInput) -> Length:
    """Takes no input."""
    return Length(length=0)


async def maybe(ctx: Context, params: Text) -> Length | Empty:
    """Answers one of two Structs."""
    return Length(length=len(params.text)) if params.text else Empty()


welltyped = Declarations[Context](MODULE, source=__name__)

CAPABILITIES = (
    welltyped.query(
        "length",
        title="Length",
        description="The length of a text.",
        input=Text,
        output=Length,
        handler=length,
        examples=(Example(name="one", input={"text": "a"}),),
        http="GET /api/v1/welltyped/length",
        tool="welltyped_length",
        cli="welltyped length",
    ),
    welltyped.command(
        "ping",
        title="Ping",
        description="A command without input.",
        input=NoInput,
        output=Length,
        handler=ping,
        examples=(Example(name="ping"),),
        http="POST /api/v1/welltyped/ping",
    ),
    welltyped.query(
        "maybe",
        title="Maybe",
        description="A union output.",
        input=Text,
        output=one_of(Length, Empty),
        handler=maybe,
        examples=(Example(name="empty", input={"text": ""}),),
    ),
)
