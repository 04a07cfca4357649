"""The execution plane: the supervisor nursery in which every handler runs under its own cancel scope."""

from __future__ import annotations

from svc.nursery._supervisor import Supervisor as Supervisor

__all__ = ["Supervisor"]
