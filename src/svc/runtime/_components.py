"""The components of one service (the execution engine, the mesh, ...), handed over at construction.

The runtime never names a component's type: the process that assembles a service (`svc.host`) passes them to
the executor, and a handler finds one by its type (`ctx.components.get(Engine)`), typed as that class.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from svc._errors import Unavailable

__all__ = ["Components"]

T = TypeVar("T")


class Components:
    """A frozen set of objects, one per type, found by the class asked for (or a base of it)."""

    __slots__ = ("_items",)

    def __init__(self, items: Iterable[object] = ()) -> None:
        self._items: tuple[object, ...] = tuple(items)
        kinds = [type(item) for item in self._items]
        if len(set(kinds)) != len(kinds):
            raise ValueError("two components of one type")

    def __iter__(self) -> Iterable[object]:
        return iter(self._items)

    def find(self, kind: type[T]) -> T | None:
        """The component that is a `kind`, or None when this service has none."""
        for item in self._items:
            if isinstance(item, kind):
                return item
        return None

    def get(self, kind: type[T]) -> T:
        """The component that is a `kind`.

        Raises:
            Unavailable: this service runs without one (a one-shot command has no mesh, say).
        """
        item = self.find(kind)
        if item is None:
            raise Unavailable(f"this process runs no {kind.__name__.lower()}")
        return item
