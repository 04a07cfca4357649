"""Decoding a capability's input from each surface's raw form, with one error mapping.

Text parameters (HTTP query strings, CLI options) are coerced by the schema type of the top-level property:
integers (decimal), numbers and booleans (`true`/`false`) are parsed, everything else stays text. An unknown
or repeated parameter is invalid input. `msgspec`'s own errors become `InvalidInput` here and nowhere else.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Any, Literal

import msgspec

from svc._errors import InvalidInput
from svc.registry._declaration import Capability

__all__ = ["decode_json", "decode_text", "decode_value", "input_problems", "text_kinds"]

TextKind = Literal["integer", "number", "boolean", "text"]
_INT = re.compile(r"^[+-]?[0-9]+$")
_AT = re.compile(r"^(?P<what>.*) - at `(?P<path>\$[^`]*)`$", re.DOTALL)
_TOP = re.compile(r"^\$\.(?P<key>[^.\[]+)")
_MISSING = re.compile(r"^Object missing required field `(?P<key>[^`]+)`$")
MAX_PROBLEMS = 5
_NUMBER = re.compile(r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$")


@functools.cache
def _decoder(tp: type[msgspec.Struct]) -> msgspec.json.Decoder[Any]:
    return msgspec.json.Decoder(tp)


@functools.cache
def text_kinds(tp: type[msgspec.Struct]) -> dict[str, TextKind]:
    """How each top-level property of `tp` is read from text."""
    info = msgspec.inspect.type_info(tp)
    assert isinstance(info, msgspec.inspect.StructType)
    return {fld.encode_name: _kind(fld.type) for fld in info.fields}


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


def decode_json(cap: Capability, body: bytes) -> msgspec.Struct:
    """Decode a JSON request body (blank means `{}`) into the capability's input."""
    if not body.strip():
        body = b"{}"
    try:
        value: msgspec.Struct = _decoder(cap.input).decode(body)
    except msgspec.DecodeError as exc:
        raise InvalidInput(_message(exc, body)) from exc
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"the request body is not valid JSON: it is not UTF-8 ({exc.reason})") from exc
    return value


def decode_value(cap: Capability, value: Any) -> msgspec.Struct:
    """Convert an already-parsed object (MCP arguments, a stored example) into the input."""
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise InvalidInput(f"the input of {cap.id} must be an object, got {type(value).__name__}")
    try:
        return msgspec.convert(value, cap.input)
    except msgspec.ValidationError as exc:
        raise InvalidInput(str(exc)) from exc


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
            msgspec.convert(rest, cap.input)
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
    values: dict[str, Any] = {}
    for name, text in items:
        kind = kinds.get(name)
        if kind is None:
            known = ", ".join(sorted(kinds)) or "none"
            raise InvalidInput(f"unknown parameter '{name}' (parameters of {cap.id}: {known})")
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
