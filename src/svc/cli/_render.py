"""Readable terminal output for any answer: scalar fields as lines, lists of records as tables."""

from __future__ import annotations

import shutil
from typing import Any

import msgspec

__all__ = ["render"]

_MAX_CELL = 60


def render(body: bytes) -> str:
    """Render an encoded JSON answer for a person."""
    value = msgspec.json.decode(body)
    lines: list[str] = []
    _render_value(value, lines, indent="")
    return "\n".join(lines) + "\n"


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list) and all(_scalar(v) for v in value):
        text = ", ".join(_cell(v) for v in value)
    elif _scalar(value):
        text = str(value)
    else:
        text = msgspec.json.encode(value).decode()
    text = " ".join(text.split())
    return text if len(text) <= _MAX_CELL else text[: _MAX_CELL - 1] + "…"


def _render_value(value: Any, lines: list[str], indent: str) -> None:
    if isinstance(value, dict):
        _render_mapping(value, lines, indent)
    elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        _table(value, lines, indent)
    else:
        lines.append(indent + _cell(value))


def _render_mapping(mapping: dict[str, Any], lines: list[str], indent: str) -> None:
    simple = {k: v for k, v in mapping.items() if _scalar(v) or (isinstance(v, list) and all(map(_scalar, v)))}
    width = max((len(k) for k in simple), default=0)
    for key, value in simple.items():
        lines.append(f"{indent}{key.ljust(width)}  {_cell(value)}")
    for key, value in mapping.items():
        if key in simple:
            continue
        lines.append("")
        lines.append(f"{indent}{key}:")
        if isinstance(value, list) and not value:
            lines.append(f"{indent}  (none)")
        elif isinstance(value, dict) and all(_scalar(v) for v in value.values()) and len(value) > 8:
            lines.append(indent + "  " + _cell(value))
        else:
            _render_value(value, lines, indent + "  ")


def _table(rows: list[dict[str, Any]], lines: list[str], indent: str) -> None:
    columns: list[str] = []
    for row in rows:
        for key, value in row.items():
            if key not in columns and (_scalar(value) or (isinstance(value, list) and all(map(_scalar, value)))):
                columns.append(key)
    budget = shutil.get_terminal_size((120, 24)).columns - len(indent)
    cells = [[_cell(row.get(c)) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    shown: list[int] = []
    used = 0
    for i, w in enumerate(widths):
        if used + w + 2 > budget and shown:
            break
        shown.append(i)
        used += w + 2
    lines.append(indent + "  ".join(columns[i].upper().ljust(widths[i]) for i in shown).rstrip())
    for row_cells in cells:
        lines.append(indent + "  ".join(row_cells[i].ljust(widths[i]) for i in shown).rstrip())
