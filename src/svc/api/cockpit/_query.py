"""The query parameters of a cockpit page, checked: an unknown name or a repeated single value is a 400 page."""

from __future__ import annotations

from collections.abc import Collection

from quart import request

from svc._errors import InvalidInput

__all__ = ["page_args", "whole_number"]


def page_args(single: Collection[str], multiple: Collection[str] = ()) -> dict[str, str | list[str]]:
    """The request's query parameters: `single` names at most once, `multiple` any number of times.

    An empty value counts as absent (a form's "all" choice sends `kind=`). Any other name is 400.
    """
    args = request.args
    unknown = sorted(set(args.keys()) - set(single) - set(multiple))
    if unknown:
        allowed = ", ".join(sorted([*single, *multiple])) or "none"
        raise InvalidInput(f"unknown query parameter {unknown[0]!r} (this page takes: {allowed})")
    values: dict[str, str | list[str]] = {}
    for name in single:
        given = [v for v in args.getlist(name) if v != ""]
        if len(given) > 1:
            raise InvalidInput(f"the query parameter {name!r} is given {len(given)} times; give it once")
        if given:
            values[name] = given[0]
    for name in multiple:
        given = list(dict.fromkeys(v for v in args.getlist(name) if v != ""))
        if given:
            values[name] = given
    return values


def whole_number(name: str, text: str | list[str] | None, *, default: int, lowest: int, highest: int) -> int:
    """The whole number `text` of the parameter `name`, within [lowest, highest]; anything else is 400."""
    if text is None:
        return default
    if not isinstance(text, str) or not text.isascii() or not text.isdigit() or len(text) > 9:
        raise InvalidInput(f"{name} must be a whole number from {lowest} to {highest}, not {text!r}")
    value = int(text)
    if not lowest <= value <= highest:
        raise InvalidInput(f"{name} must be a whole number from {lowest} to {highest}, not {value}")
    return value
