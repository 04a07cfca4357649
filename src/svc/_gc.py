"""Pausing the cyclic garbage collector for a block that allocates many acyclic objects."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["gc_paused"]


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for the block; reference counting frees everything as usual.

    A plan's derivation, a layer's object index, a journal's fold or a page's render allocates hundreds of
    thousands of objects, none in a cycle; with the collector on, it would walk the objects made so far again
    and again, which costs more than the work, and stall every thread while it does. Already paused (another
    thread, or an enclosing block): left as it is.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
