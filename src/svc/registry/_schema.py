"""JSON Schemas from msgspec Structs: the one source of every surface's schema.

Components are emitted with `$ref`s of the form ``#/components/schemas/<Name>`` (the OpenAPI shape). A
standalone schema (MCP `inputSchema`, the registry document) inlines the referenced components under
`$defs` so it is complete on its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

__all__ = ["REF_PREFIX", "SchemaSet", "standalone"]

REF_PREFIX = "#/components/schemas/"


class SchemaSet:
    """The components of a set of types, and each type's own reference schema."""

    def __init__(self, types: Iterable[Any]) -> None:
        self.types: tuple[Any, ...] = tuple(types)
        refs, components = msgspec.json.schema_components(self.types, ref_template=REF_PREFIX + "{name}")
        # A JSON round trip makes every value plain JSON (a `()` default becomes `[]`), as in the document.
        plain = msgspec.json.decode(msgspec.json.encode([refs, dict(sorted(components.items()))]))
        self.refs: dict[Any, dict[str, Any]] = dict(zip(self.types, plain[0], strict=True))
        self.components: dict[str, Any] = plain[1]

    def ref(self, tp: Any) -> dict[str, Any]:
        """The schema of `tp` as it appears in a document (usually a `$ref`)."""
        return self.refs[tp]

    def name(self, tp: Any) -> str | None:
        """The component name of `tp`, or None when it is not a named component."""
        ref = self.refs[tp].get("$ref")
        return ref[len(REF_PREFIX) :] if isinstance(ref, str) else None

    def resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        """Follow one `$ref` (if any) to the component it names."""
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith(REF_PREFIX):
            resolved: dict[str, Any] = self.components[ref[len(REF_PREFIX) :]]
            return resolved
        return schema


def standalone(schemas: SchemaSet, tp: Any) -> dict[str, Any]:
    """A self-contained schema for `tp`: its component inlined, dependencies under `$defs`."""
    root = schemas.resolve(schemas.ref(tp))
    needed: dict[str, Any] = {}
    _collect(root, schemas.components, needed)
    own = schemas.name(tp)
    if own is not None:
        needed.pop(own, None)
    out: dict[str, Any] = _rewrite(root)
    if needed:
        out = {**out, "$defs": {name: _rewrite(needed[name]) for name in sorted(needed)}}
    return out


def _collect(node: Any, components: dict[str, Any], seen: dict[str, Any]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(REF_PREFIX):
            name = ref[len(REF_PREFIX) :]
            if name not in seen:
                seen[name] = components[name]
                _collect(components[name], components, seen)
        for value in node.values():
            _collect(value, components, seen)
    elif isinstance(node, list):
        for value in node:
            _collect(value, components, seen)


def _rewrite(node: Any) -> Any:
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str) and value.startswith(REF_PREFIX):
                out[key] = "#/$defs/" + value[len(REF_PREFIX) :]
            else:
                out[key] = _rewrite(value)
        return out
    if isinstance(node, list):
        return [_rewrite(value) for value in node]
    return node
