"""Decoding a capability's input from each surface's raw form, with one error mapping.

Text parameters (HTTP query strings, CLI options) are coerced by the schema type of the top-level property:
integers (decimal), numbers and booleans (`true`/`false`) are parsed, everything else stays text. An unknown
or repeated parameter is invalid input, except a property that is an array: each of its values is one
parameter, coerced by the array's item type (the command line's `svc mesh claim PATH...`; a GET input has no
array, so a query string never repeats a parameter). `msgspec`'s own errors become `InvalidInput` here and nowhere else.
In JSON (a body, MCP arguments, an execution's input) a number with no fractional part is an integer, as
JSON Schema's `integer` says: `4242.0` is read as `4242` where an integer is declared.

Objects and arrays nest at most `MAX_DEPTH` levels (the input object is level 1): a deeper input is invalid
input, whatever its depth, instead of a `RecursionError` where decoding or a later encoding runs out of stack.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Any

import msgspec

from svc._errors import InvalidInput
from svc.registry._declaration import Capability
from svc.registry._text_kinds import TextKind, array_kinds, text_kinds

__all__ = [
    "MAX_DEPTH",
    "decode_json",
    "decode_text",
    "decode_value",
    "input_problems",
]

_INT = re.compile(r"^[+-]?[0-9]+$")
_AT = re.compile(r"^(?P<what>.*) - at `(?P<path>\$[^`]*)`$", re.DOTALL)
_TOP = re.compile(r"^\$\.(?P<key>[^.\[]+)")
_MISSING = re.compile(r"^Object missing required field `(?P<key>[^`]+)`$")
MAX_PROBLEMS = 5
#: How many levels of objects and arrays an input may nest, the input object itself being the first.
MAX_DEPTH = 64
_TOO_DEEP = f"the input nests objects or arrays more than {MAX_DEPTH} levels deep"
_NUMBER = re.compile(r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$")


@functools.cache
def _decoder(tp: type[msgspec.Struct]) -> msgspec.json.Decoder[Any]:
    return msgspec.json.Decoder(tp)


def decode_json(cap: Capability, body: bytes) -> msgspec.Struct:
    """Decode a JSON request body into the capability's input; no body at all means `{}`.

    Whitespace alone is not a JSON text, so it is refused like any other body that is not JSON.
    """
    if not body:
        body = b"{}"
    try:
        value: msgspec.Struct = _decode_body(cap.input, body)
    except msgspec.DecodeError as exc:
        raise InvalidInput(_message(exc, body)) from exc
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"the request body is not valid JSON: it is not UTF-8 ({exc.reason})") from exc
    except RecursionError:
        raise InvalidInput(_TOO_DEEP) from None
    return _bounded(cap.input, value)


def _decode_body(tp: type[msgspec.Struct], body: bytes) -> msgspec.Struct:
    """`body` decoded as `tp`, a whole-number float where an integer is declared read as that integer (`_convert`)."""
    try:
        value: msgspec.Struct = _decoder(tp).decode(body)
    except msgspec.ValidationError as exc:
        if _FLOAT_REFUSED not in str(exc):
            raise
    else:
        return value
    return _convert(msgspec.json.decode(body), tp)


def _convert(value: Any, tp: type[msgspec.Struct]) -> msgspec.Struct:
    """`msgspec.convert(value, tp)`, reading a float with no fractional part as an integer where one is declared.

    JSON has one kind of number, and JSON Schema's `integer` (the type the documents declare) is any number
    with a zero fractional part, so `4242.0` is an integer the document accepts; msgspec alone refuses a
    float where an int is declared. Only a refused float costs the second reading.
    """
    try:
        converted: msgspec.Struct = msgspec.convert(value, tp)
    except msgspec.ValidationError as exc:
        if _FLOAT_REFUSED not in str(exc):
            raise
    else:
        return converted
    return msgspec.convert(_whole_numbers(value), tp)


_FLOAT_REFUSED = "got `float`"


def _whole_numbers(value: Any) -> Any:
    """A copy of parsed JSON `value` with every float that is a whole number as an int (no recursion)."""
    root: list[Any] = [value]
    pending: list[tuple[list[Any] | dict[Any, Any], Any]] = [(root, 0)]
    while pending:
        parent, key = pending.pop()
        item = parent[key]
        if isinstance(item, float) and item.is_integer():
            parent[key] = int(item)
        elif isinstance(item, dict):
            parent[key] = fields = dict(item)
            pending.extend((fields, k) for k in fields)
        elif isinstance(item, list):
            parent[key] = items = list(item)
            pending.extend((items, i) for i in range(len(items)))
    return root[0]


def decode_value(cap: Capability, value: Any) -> msgspec.Struct:
    """Convert an already-parsed object (MCP arguments, a stored example) into the input."""
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise InvalidInput(f"the input of {cap.id} must be an object, got {type(value).__name__}")
    try:
        converted = _convert(value, cap.input)
    except msgspec.ValidationError as exc:
        raise InvalidInput(str(exc)) from exc
    except RecursionError:
        raise InvalidInput(_TOO_DEEP) from None
    return _bounded(cap.input, converted)


def _bounded(tp: type[msgspec.Struct], value: msgspec.Struct) -> msgspec.Struct:
    """`value`, unless an input of `tp` can nest without bound and this one nests past `MAX_DEPTH`.

    Raises:
        InvalidInput: objects or arrays more than `MAX_DEPTH` levels deep.
    """
    if not _may_nest(tp):
        return value
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if depth > MAX_DEPTH:
            raise InvalidInput(_TOO_DEEP)
        children: Iterable[Any]
        if isinstance(item, msgspec.Struct):
            children = msgspec.structs.astuple(item)
        else:
            children = item.values() if isinstance(item, dict) else item
        pending.extend((child, depth + 1) for child in children if isinstance(child, _CONTAINERS))
    return value


_CONTAINERS = (dict, list, tuple, msgspec.Struct)


@functools.cache
def _may_nest(tp: type[msgspec.Struct]) -> bool:
    """Whether an input of `tp` can nest without bound: a free-form (`Any`) value, or a Struct met twice.

    A Struct met twice may be recursive; counting it as such only costs a walk of the decoded input.
    """
    seen: set[type] = set()
    pending: list[msgspec.inspect.Type] = [msgspec.inspect.type_info(tp)]
    while pending:
        node = pending.pop()
        if isinstance(node, msgspec.inspect.AnyType):
            return True
        if isinstance(node, msgspec.inspect.StructType):
            if node.cls in seen:
                return True
            seen.add(node.cls)
        for attr in msgspec.structs.astuple(node):
            for item in attr if isinstance(attr, tuple) else (attr,):
                child = item.type if isinstance(item, msgspec.inspect.Field) else item
                if isinstance(child, msgspec.inspect.Type):
                    pending.append(child)
    return False


def input_problems(cap: Capability, value: Any) -> list[str]:
    """What is wrong with `value` as the input of `cap`: at most five problems, each prefixed by its path.

    Validation stops at the first problem, so each further one is found by validating again without the
    top-level field the last one was in; an empty list means the input is valid.
    """
    if value is None:
        value = {}
    if not isinstance(value, dict):
        return [f"$: the input of {cap.id} must be an object, got {type(value).__name__}"]
    rest = dict(value)
    problems: list[str] = []
    left_out: set[str] = set()
    while len(problems) < MAX_PROBLEMS:
        try:
            _convert(rest, cap.input)
        except msgspec.ValidationError as exc:
            text = str(exc)
        else:
            break
        missing = _MISSING.match(text)
        if missing is not None and missing["key"] in left_out:
            break  # the field left out is required: nothing more can be checked without it
        found = _AT.match(text)
        path, what = (found["path"], found["what"]) if found else ("$", text)
        problems.append(f"{path}: {what}")
        top = _TOP.match(path)
        if top is None or top["key"] not in rest:
            break
        left_out.add(top["key"])
        del rest[top["key"]]
    return problems


def decode_text(cap: Capability, items: Iterable[tuple[str, str]]) -> msgspec.Struct:
    """Decode text parameters (query string, CLI options) into the capability's input."""
    kinds = text_kinds(cap.input)
    arrays = array_kinds(cap.input)
    values: dict[str, Any] = {}
    for name, text in items:
        kind = kinds.get(name)
        if kind is None:
            known = ", ".join(sorted(kinds)) or "none"
            raise InvalidInput(f"unknown parameter '{name}' (parameters of {cap.id}: {known})")
        if name in arrays:
            values.setdefault(name, []).append(_coerce(name, arrays[name], text))
            continue
        if name in values:
            raise InvalidInput(f"parameter '{name}' is given more than once")
        values[name] = _coerce(name, kind, text)
    return decode_value(cap, values)


def _coerce(name: str, kind: TextKind, text: str) -> Any:
    if kind == "integer":
        if not _INT.match(text):
            raise InvalidInput(f"Expected `int`, got `str` - at `$.{name}` (parameter '{name}' is {text!r})")
        return int(text)
    if kind == "number":
        if not _NUMBER.match(text):
            raise InvalidInput(f"Expected `number`, got `str` - at `$.{name}` (parameter '{name}' is {text!r})")
        return float(text)
    if kind == "boolean":
        if text not in ("true", "false"):
            raise InvalidInput(f"Expected `bool` (true or false) - at `$.{name}`, got {text!r}")
        return text == "true"
    return text


def _message(exc: msgspec.DecodeError, body: bytes) -> str:
    if isinstance(exc, msgspec.ValidationError):
        if body.lstrip()[:1] != b"{":
            return f"the request body must be a JSON object: {exc}"
        return str(exc)
    return f"the request body is not valid JSON: {exc}"
