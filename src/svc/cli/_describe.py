"""The fields of a capability, for the readable view of `svc capabilities describe`.

The answer of `capabilities.describe` names its input and output schemas by reference only
(`#/components/schemas/<Name>`), as the OpenAPI document does. For a person, the view adds to each a `fields`
table resolved from the registry's schema components: for the input every property (name, type, whether it is
required or its default, its constraints and enum values, its description), for the output its top-level
properties (name, type, whether always present, description). `--json` never carries these: it answers the
capability's bytes.
"""

from __future__ import annotations

from typing import Any

import msgspec

from svc.registry import Registry
from svc.registry._schema import REF_PREFIX

__all__ = ["with_fields"]


def with_fields(answer: dict[str, Any], registry: Registry) -> dict[str, Any]:
    """`answer` (a `capabilities.describe` answer) with `input.fields` and `output.fields` resolved.

    An answer whose schemas the registry does not hold (another registry's capability) is returned as it is.
    """
    components = registry.schemas.components
    out = dict(answer)
    for part, full in (("input", True), ("output", False)):
        described = answer.get(part)
        if not isinstance(described, dict) or not isinstance(described.get("schema"), dict):
            continue
        schema = _resolve(described["schema"], components)
        if schema is None:
            continue
        out[part] = {**described, "fields": _fields(schema, components, full=full)}
    return out


def _resolve(schema: dict[str, Any], components: dict[str, Any]) -> dict[str, Any] | None:
    ref = schema.get("$ref")
    if not isinstance(ref, str):
        return schema
    found = components.get(ref.removeprefix(REF_PREFIX)) if ref.startswith(REF_PREFIX) else None
    return found if isinstance(found, dict) else None


def _fields(schema: dict[str, Any], components: dict[str, Any], *, full: bool) -> list[dict[str, Any]]:
    """One row per property, in the schema's order."""
    required = set(schema.get("required") or ())
    rows: list[dict[str, Any]] = []
    for name, prop in (schema.get("properties") or {}).items():
        kind, constraints = _type(prop, components)
        row: dict[str, Any] = {"name": name, "type": kind}
        if full:
            row["required"] = name in required
            row["default"] = _default(prop) if name not in required else None
            row["constraints"] = "; ".join(constraints) or None
        else:
            row["always"] = name in required
        row["description"] = prop.get("description")
        rows.append(row)
    return rows


def _default(prop: dict[str, Any]) -> str | None:
    """The default as JSON, none when absent or null (an absent optional value)."""
    if "default" not in prop or prop["default"] is None:
        return None
    return msgspec.json.encode(prop["default"]).decode()


def _type(schema: dict[str, Any], components: dict[str, Any]) -> tuple[str, list[str]]:
    """The type of a schema in words (`integer`, `string | null`, `array of PlanIssue`) and its constraints."""
    ref = schema.get("$ref")
    if isinstance(ref, str):
        name = ref.removeprefix(REF_PREFIX)
        target = components.get(name)
        if isinstance(target, dict) and "enum" in target:
            return name, [_one_of(target["enum"])]
        return name, []
    if "anyOf" in schema:
        kinds: list[str] = []
        constraints: list[str] = []
        for option in schema["anyOf"]:
            kind, more = _type(option, components)
            kinds.append(kind)
            constraints.extend(more)
        kinds.sort(key=lambda kind: kind == "null")
        return " | ".join(dict.fromkeys(kinds)), constraints
    if "enum" in schema:
        values = schema["enum"]
        kind = "string" if all(isinstance(v, str) for v in values) else "value"
        return kind, [_one_of(values)]
    if "const" in schema:
        return "constant", [f"always {msgspec.json.encode(schema['const']).decode()}"]
    declared = schema.get("type")
    if isinstance(declared, list):
        return " | ".join(map(str, declared)), _bounds(schema)
    if declared == "array":
        items = schema.get("items")
        inner, more = _type(items, components) if isinstance(items, dict) else ("any", [])
        return f"array of {inner}", [*_count(schema), *(f"each {c}" for c in more)]
    if declared == "object" and isinstance(schema.get("additionalProperties"), dict):
        inner, more = _type(schema["additionalProperties"], components)
        return f"map of {inner}", [f"each {c}" for c in more]
    return str(declared or "any"), _bounds(schema)


def _one_of(values: list[Any]) -> str:
    return "one of " + ", ".join(v if isinstance(v, str) else msgspec.json.encode(v).decode() for v in values)


def _range(low: Any, high: Any, unit: str = "") -> list[str]:
    if low is not None and high is not None:
        return [f"{unit}{low} to {high}"]
    if low is not None:
        return [f"{unit}at least {low}"]
    if high is not None:
        return [f"{unit}at most {high}"]
    return []


def _count(schema: dict[str, Any]) -> list[str]:
    low, high = schema.get("minItems"), schema.get("maxItems")
    return [f"{text} items" for text in _range(low, high)]


def _bounds(schema: dict[str, Any]) -> list[str]:
    """Numeric bounds, lengths, pattern and format of a scalar schema."""
    out = _range(schema.get("minimum"), schema.get("maximum"))
    if "exclusiveMinimum" in schema:
        out.append(f"above {schema['exclusiveMinimum']}")
    if "exclusiveMaximum" in schema:
        out.append(f"below {schema['exclusiveMaximum']}")
    out += _range(schema.get("minLength"), schema.get("maxLength"), "length ")
    if "pattern" in schema:
        out.append(f"matches {schema['pattern']}")
    if "format" in schema:
        out.append(f"format {schema['format']}")
    return out
