"""Front matter as the records of `.ai/local/state/` carry it: YAML between `---` lines, read as scalar strings.

Handover and checkpoint records (docs/layer.md) are Markdown files whose front matter is computed, never
authored, and every value in it is one scalar. Readers of those records (the mesh's handover publisher,
`continuity.state`) need the same few facts: each scalar field as text, and the body after the front matter.
"""

from __future__ import annotations

from typing import Any

from svc.layer._yaml import YamlAliases, YamlError, load_yaml

__all__ = ["front_matter", "scalar_fields"]


def scalar_fields(mapping: dict[Any, Any]) -> dict[str, str]:
    """The scalar values of `mapping` as text, under their string keys.

    Booleans are `true`/`false`, numbers their usual text (timestamps are already text, see `load_yaml`);
    nulls, lists, mappings and non-string keys are left out.
    """
    fields: dict[str, str] = {}
    for key, value in mapping.items():
        if not isinstance(key, str) or isinstance(value, dict | list) or value is None:
            continue
        fields[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return fields


def front_matter(text: str) -> tuple[dict[str, str] | None, str]:
    """The front matter of `text` as scalar strings, and the body after it.

    The front matter opens with a `---` line at the very start and closes at the next `---` (or `...`) line.
    Without one the whole text is the body and the fields are None; a front matter that is not a YAML
    mapping also gives None, with the body after it.
    """
    lines = text.split("\n")
    if not lines or lines[0].rstrip("\r") != "---":
        return None, text
    for end in range(1, len(lines)):
        if lines[end].rstrip("\r") in ("---", "..."):
            break
    else:
        return None, text
    body = "\n".join(lines[end + 1 :]).lstrip("\r\n")
    try:
        data = load_yaml("\n".join(lines[1:end]))
    except (YamlError, YamlAliases, RecursionError):
        return None, body
    if not isinstance(data, dict):
        return None, body
    return scalar_fields(data), body
