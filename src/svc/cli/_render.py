"""Readable output for any answer: for a terminal (`_terminal`, with rich) or as stable text for a pipe (`_plain`).

rich is imported only by the terminal view.
"""

from __future__ import annotations

import os
import shutil
from typing import TYPE_CHECKING

import msgspec

from svc.cli._plain import peer_records, plain_lines

if TYPE_CHECKING:
    from svc.registry import Registry

__all__ = ["render"]


def render(
    body: bytes,
    *,
    capability: str | None = None,
    tty: bool = False,
    width: int | None = None,
    full: bool = False,
    color: bool | None = None,
    registry: Registry | None = None,
) -> str:
    """Render an encoded JSON answer of `capability` for a person.

    `tty`: for a terminal `width` columns wide (default: the terminal's), in colour unless `color` is false or
    `NO_COLOR` is set (to any value); `full`: show every item where the terminal view summarises. Without
    `tty`: the stable piped text. `registry` (default: svc's builtin one) resolves the schemas a
    `capabilities.describe` answer names into the fields it shows (see `_describe`).
    """
    value = msgspec.json.decode(body)
    cap = capability or ""
    if cap == "capabilities.describe" and isinstance(value, dict):
        from svc.cli._describe import with_fields

        if registry is None:
            from svc.capabilities import builtin_registry

            registry = builtin_registry()
        value = with_fields(value, registry)
    if tty:
        from svc.cli._terminal import render_terminal

        columns = width or shutil.get_terminal_size((100, 24)).columns
        colour = "NO_COLOR" not in os.environ if color is None else color
        return render_terminal(value, capability=cap, width=columns, color=colour, full=full)
    if cap == "mesh.peers" and isinstance(value, dict):
        return "\n".join(peer_records(value)) + "\n"
    return "\n".join(plain_lines(value)) + "\n"
