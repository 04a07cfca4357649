"""Loggers that import `logging` when they first write a record.

The modules a query command imports log only on rare paths (a cache not written, a ledger line not read);
importing `logging` with them would cost every query's start the module and what it imports, for records it
seldom writes. Records keep their logger's name and their caller's place.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import logging

__all__ = ["LazyLogger", "shutdown"]


class LazyLogger:
    """`logging.getLogger(name)`, got when the first record is written through it."""

    __slots__ = ("_logger", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self._logger: logging.Logger | None = None

    def _get(self) -> logging.Logger:
        if self._logger is None:
            import logging

            self._logger = logging.getLogger(self.name)
        return self._logger

    def debug(self, msg: object, *args: object, **kwargs: Any) -> None:
        self._get().debug(msg, *args, stacklevel=2, **kwargs)

    def info(self, msg: object, *args: object, **kwargs: Any) -> None:
        self._get().info(msg, *args, stacklevel=2, **kwargs)

    def warning(self, msg: object, *args: object, **kwargs: Any) -> None:
        self._get().warning(msg, *args, stacklevel=2, **kwargs)

    def error(self, msg: object, *args: object, **kwargs: Any) -> None:
        self._get().error(msg, *args, stacklevel=2, **kwargs)


def shutdown() -> None:
    """Flush and close the handlers (`logging.shutdown`), when `logging` was imported at all."""
    imported = sys.modules.get("logging")
    if imported is not None:
        imported.shutdown()
