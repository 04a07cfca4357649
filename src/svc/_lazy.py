"""Package exports imported on first use, so a command imports only the modules it touches.

A package re-exports its names as the type checker reads them, in one `if TYPE_CHECKING:` block of
``from svc.<package>._<module> import Name as Name`` lines. At run time those lines are not executed: `exports`
reads them from the package's own source and answers the package's `__getattr__`, importing a name's module
the first time the name is asked for (PEP 562). The names are written once; `svc plan next` then loads the
plan's modules and not the mesh, the design system or the deployment checks that share their package.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["exports"]

_EXPORT = re.compile(r"^    from (?P<module>[\w.]+) import (?P<name>\w+) as (?P<alias>\w+)$", re.MULTILINE)


def exports(package: str, init_file: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of `package`, from the re-exports written in `init_file`.

    Raises:
        ImportError: `init_file` re-exports nothing (the block is missing or written another way).
    """
    source = Path(init_file).read_text(encoding="utf-8")
    where = {m["alias"]: (m["module"], m["name"]) for m in _EXPORT.finditer(source)}
    if not where:
        raise ImportError(f"{package} lists no re-export in {init_file}")
    namespace = importlib.import_module(package).__dict__

    def getattr_(name: str) -> Any:
        try:
            module, attribute = where[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(module), attribute)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted({*namespace, *where})

    return getattr_, dir_
