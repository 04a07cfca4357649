"""The builtin capabilities, one module per spec group: declaration and handler, nothing else."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from svc.capabilities import (
    _artifacts,
    _commands,
    _continuity,
    _cooperation,
    _deploy,
    _design,
    _directories,
    _distribution,
    _environment,
    _executions,
    _graph,
    _health,
    _introspection,
    _mcp,
    _mesh,
    _objects,
    _plan,
    _release,
)
from svc.registry import build_registry as _build_registry

if TYPE_CHECKING:
    from svc.registry import Capability, Module, Registry

__all__ = ["builtin_capabilities", "builtin_modules", "builtin_registry"]

_GROUPS = (
    _artifacts,
    _introspection,
    _executions,
    _health,
    _release,
    _plan,
    _mcp,
    _mesh,
    _commands,
    _continuity,
    _deploy,
    _design,
    _graph,
    _directories,
    _distribution,
    _objects,
    _environment,
)
#: Every module that declares capabilities: the groups, and the mesh's cooperation (declared in the `mesh` module).
_DECLARING = (*_GROUPS, _cooperation)


def builtin_modules() -> tuple[Module, ...]:
    """The module of every builtin group."""
    return tuple(group.MODULE for group in _GROUPS)


def builtin_capabilities() -> tuple[Capability, ...]:
    """Every builtin capability declaration."""
    return tuple(cap for group in _DECLARING for cap in group.CAPABILITIES)


@functools.cache
def builtin_registry() -> Registry:
    """The validated, frozen registry of the builtin capabilities (built once per process).

    Their schemas are checked by the test suite (the same build with `check_schemas`), not at every start.
    """
    return _build_registry(builtin_modules(), builtin_capabilities(), check_schemas=False)
