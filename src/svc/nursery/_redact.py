"""Redaction of sensitive input values, by schema (never by field name), before anything is stored."""

from __future__ import annotations

from typing import Any

__all__ = ["REDACTED", "redact"]

REDACTED = "«redacted»"
_MAX_DEPTH = 32


def _sensitive(schema: dict[str, Any]) -> bool:
    return (
        schema.get("format") == "password" or schema.get("writeOnly") is True or schema.get("x-svc-sensitive") is True
    )


def redact(value: Any, schema: dict[str, Any], components: dict[str, Any]) -> Any:
    """A copy of `value` with every value whose schema is sensitive replaced by `«redacted»`.

    The walk follows `$ref` (into `components`), `anyOf`/`oneOf`, `items`, `properties` and
    `additionalProperties`, to depth 32.
    """
    return _walk(value, schema, components, 0)


def _resolve(schema: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    seen = 0
    while isinstance(schema.get("$ref"), str) and seen < _MAX_DEPTH:
        name = schema["$ref"].rsplit("/", 1)[-1]
        schema = {**components.get(name, {}), **{k: v for k, v in schema.items() if k != "$ref"}}
        seen += 1
    return schema


def _walk(value: Any, schema: dict[str, Any], components: dict[str, Any], depth: int) -> Any:
    if depth > _MAX_DEPTH or not isinstance(schema, dict):
        return value
    schema = _resolve(schema, components)
    if _sensitive(schema):
        return REDACTED
    for key in ("anyOf", "oneOf"):
        for member in schema.get(key, ()):
            resolved = _resolve(member, components)
            if _sensitive(resolved) and value is not None:
                return REDACTED
    if isinstance(value, dict):
        properties: dict[str, Any] = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        out = {}
        for key, item in value.items():
            sub = properties.get(key, extra if isinstance(extra, dict) else None)
            out[key] = _walk(item, sub, components, depth + 1) if sub is not None else item
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_walk(item, schema["items"], components, depth + 1) for item in value]
    return value
