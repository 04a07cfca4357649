"""How a capability's top-level input properties are read from text (HTTP query strings, CLI options).

A property is read as an integer, a number, a boolean or text, by its schema type; an array property's items
by the array's item type.
"""

from __future__ import annotations

import functools
from typing import Literal

import msgspec

__all__ = ["TextKind", "array_kinds", "text_kinds"]

TextKind = Literal["integer", "number", "boolean", "text"]


@functools.cache
def text_kinds(tp: type[msgspec.Struct]) -> dict[str, TextKind]:
    """How each top-level property of `tp` is read from text."""
    info = msgspec.inspect.type_info(tp)
    assert isinstance(info, msgspec.inspect.StructType)
    return {fld.encode_name: _kind(fld.type) for fld in info.fields}


@functools.cache
def array_kinds(tp: type[msgspec.Struct]) -> dict[str, TextKind]:
    """The top-level properties of `tp` that are arrays (optional or not), each with how an item is read."""
    info = msgspec.inspect.type_info(tp)
    assert isinstance(info, msgspec.inspect.StructType)
    out: dict[str, TextKind] = {}
    for fld in info.fields:
        item = _array_item(fld.type)
        if item is not None:
            out[fld.encode_name] = _kind(item)
    return out


def _array_item(tp: msgspec.inspect.Type) -> msgspec.inspect.Type | None:
    """The item type of an array type (through metadata and an optional null), or None."""
    if isinstance(tp, msgspec.inspect.Metadata):
        tp = tp.type
    union = tp.types if isinstance(tp, msgspec.inspect.UnionType) else (tp,)
    members = [m.type if isinstance(m, msgspec.inspect.Metadata) else m for m in union]
    rest = [m for m in members if not isinstance(m, msgspec.inspect.NoneType)]
    if len(rest) == 1 and isinstance(rest[0], msgspec.inspect.ListType | msgspec.inspect.VarTupleType):
        return rest[0].item_type
    return None


def _kind(tp: msgspec.inspect.Type) -> TextKind:
    if isinstance(tp, msgspec.inspect.Metadata):
        tp = tp.type
    members = tp.types if isinstance(tp, msgspec.inspect.UnionType) else (tp,)
    for member in members:
        if isinstance(member, msgspec.inspect.Metadata):
            member = member.type
        if isinstance(member, msgspec.inspect.BoolType):
            return "boolean"
        if isinstance(member, msgspec.inspect.IntType):
            return "integer"
        if isinstance(member, msgspec.inspect.FloatType):
            return "number"
    return "text"
