"""The command line's own words for what a capability's description or error says in HTTP terms.

A description is written once for every surface and often names HTTP statuses ("an unknown milestone is
404", "Refused (422)") or routes ("see GET /api/v1/capabilities"). On the command line, help texts and error
lines speak of exit codes and commands instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from svc.registry import Registry

__all__ = ["cli_terms"]

_ROUTE = re.compile(r"\s*\(see (?:GET|POST|PUT|PATCH|DELETE) (?P<path>/[^\s)]+)\)")
_STATUSES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bis 400\b"), "is invalid input (exit 10)"),
    (re.compile(r"\bis 404\b"), "is not found (exit 10)"),
    (re.compile(r"\bis 500\b"), "is an internal failure (exit 1)"),
    (re.compile(r"\bare 404\b"), "are not found (exit 10)"),
    (re.compile(r"\b400 when\b"), "Invalid input (exit 10) when"),
    (re.compile(r"\b404 when\b"), "Not found (exit 10) when"),
    (re.compile(r"\b500 when\b"), "An internal failure (exit 1) when"),
    (re.compile(r"\b([Rr])efused \(4\d\d\)"), r"\1efused (exit 10)"),
    (re.compile(r"\bthe 200 answer\b"), "the answer"),
    (re.compile(r" \((?:400|403|404|409|422|500|503)\)"), ""),
)


def cli_terms(text: str, registry: Callable[[], Registry]) -> str:
    """`text` with HTTP statuses said as exit codes and a route named as the command that answers it."""

    def command(match: re.Match[str]) -> str:
        path = match["path"].split("?")[0]
        for cap in registry().capabilities:
            route = cap.exposure.http
            if route is not None and route.path == path and cap.exposure.cli:
                return f" (see `svc {' '.join(cap.exposure.cli)}`)"
        return ""

    text = _ROUTE.sub(command, text)
    for pattern, words in _STATUSES:
        text = pattern.sub(words, text)
    return text
