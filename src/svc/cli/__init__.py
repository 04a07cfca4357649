"""The `svc` command line."""

from __future__ import annotations

from svc.cli._main import build_cli as build_cli
from svc.cli._main import main as main

__all__ = ["build_cli", "main"]
