"""Redaction of sensitive input values, by schema (never by field name), before anything is stored.

A value is sensitive when its schema has `format: password`, `writeOnly: true` or `x-svc-sensitive: true`.
The walk follows `$ref` (into the components), `anyOf`/`oneOf` (the member that fits the value), `items`,
`properties` and `additionalProperties`, to depth 32.
"""

from __future__ import annotations

from typing import Any

__all__ = ["REDACTED", "redact", "unredact"]

REDACTED = "«redacted»"
_MAX_DEPTH = 32
_JSON_TYPE: dict[type, str] = {dict: "object", list: "array"}


def redact(value: Any, schema: dict[str, Any], components: dict[str, Any]) -> Any:
    """A copy of `value` with every value whose schema is sensitive replaced by `«redacted»`."""
    return _walk(value, schema, components, 0, _redacted)


def unredact(value: Any, schema: dict[str, Any], components: dict[str, Any]) -> Any:
    """A copy of `value` in which each `«redacted»` at a sensitive place holds a stand-in its schema accepts.

    An input redacted by another process (`svc run` reports what its own store holds) can then be
    validated like any input: every other value is checked as it is, and the stand-ins never leave the
    check. A stand-in is the smallest value of the (first non-null) schema's type: its `const`, first
    `enum` value, `minimum`, or `minLength` characters.
    """
    return _walk(value, schema, components, 0, _stand_in)


def _redacted(value: Any, schema: dict[str, Any], components: dict[str, Any]) -> Any:
    return REDACTED if value is not None else None


def _sensitive(schema: dict[str, Any]) -> bool:
    return (
        schema.get("format") == "password" or schema.get("writeOnly") is True or schema.get("x-svc-sensitive") is True
    )


def _resolve(schema: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    seen = 0
    while isinstance(schema.get("$ref"), str) and seen < _MAX_DEPTH:
        name = schema["$ref"].rsplit("/", 1)[-1]
        schema = {**components.get(name, {}), **{k: v for k, v in schema.items() if k != "$ref"}}
        seen += 1
    return schema


def _members(schema: dict[str, Any], components: dict[str, Any]) -> list[dict[str, Any]]:
    return [_resolve(m, components) for key in ("anyOf", "oneOf") for m in schema.get(key, ()) if isinstance(m, dict)]


def _walk(value: Any, schema: Any, components: dict[str, Any], depth: int, at_sensitive: Any) -> Any:
    if depth > _MAX_DEPTH or not isinstance(schema, dict):
        return value
    schema = _resolve(schema, components)
    members = _members(schema, components)
    if _sensitive(schema) or any(_sensitive(m) for m in members):
        if at_sensitive is _stand_in and value != REDACTED:
            return value
        return at_sensitive(value, schema, components)
    kind = _JSON_TYPE.get(type(value))
    if kind is not None and members:
        schema = next((m for m in members if m.get("type") == kind or (kind == "object" and "properties" in m)), schema)
    if isinstance(value, dict):
        properties: dict[str, Any] = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        out = {}
        for key, item in value.items():
            sub = properties.get(key, extra if isinstance(extra, dict) else None)
            out[key] = _walk(item, sub, components, depth + 1, at_sensitive) if sub is not None else item
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_walk(item, schema["items"], components, depth + 1, at_sensitive) for item in value]
    return value


def _stand_in(value: Any, schema: dict[str, Any], components: dict[str, Any]) -> Any:
    members = [m for m in _members(schema, components) or [schema] if m.get("type") != "null"]
    if not members:
        return None
    chosen = members[0]
    if "const" in chosen:
        return chosen["const"]
    if chosen.get("enum"):
        return chosen["enum"][0]
    kind = chosen.get("type")
    if kind in ("integer", "number"):
        if "minimum" in chosen:
            return chosen["minimum"]
        if "exclusiveMinimum" in chosen:
            return chosen["exclusiveMinimum"] + 1
        return min(0, chosen.get("maximum", 0))
    if kind == "boolean":
        return False
    if kind == "array":
        return []
    if kind == "object":
        return {}
    return "x" * max(1, int(chosen.get("minLength", 1)))
