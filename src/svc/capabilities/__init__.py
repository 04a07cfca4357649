"""The builtin capabilities, one module per spec group: declaration and handler, nothing else."""

from __future__ import annotations

import functools
import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from types import ModuleType

    from svc.registry import Capability, Module, Registry

__all__ = ["builtin_capabilities", "builtin_modules", "builtin_registry"]

#: The module of each spec group, in the registry's order; the mesh's cooperation is declared in the `mesh` module.
_GROUPS = (
    "_artifacts",
    "_introspection",
    "_executions",
    "_health",
    "_release",
    "_plan",
    "_mcp",
    "_mesh",
    "_commands",
    "_continuity",
    "_deploy",
    "_design",
    "_graph",
    "_directories",
    "_distribution",
    "_objects",
    "_environment",
)
_DECLARING = (*_GROUPS, "_cooperation")


def _modules(names: tuple[str, ...]) -> list[ModuleType]:
    """The declaring modules, imported now (a command that runs one capability imports its module alone)."""
    return [importlib.import_module(f"{__name__}.{name}") for name in names]


def builtin_modules() -> tuple[Module, ...]:
    """The module of every builtin group."""
    return tuple(group.MODULE for group in _modules(_GROUPS))


def builtin_capabilities() -> tuple[Capability, ...]:
    """Every builtin capability declaration."""
    return tuple(cap for group in _modules(_DECLARING) for cap in group.CAPABILITIES)


@functools.cache
def builtin_registry() -> Registry:
    """The validated, frozen registry of the builtin capabilities (built once per process).

    Their schemas are checked by the test suite (the same build with `check_schemas`), not at every start.
    """
    from svc.registry import build_registry

    return build_registry(builtin_modules(), builtin_capabilities(), check_schemas=False)
