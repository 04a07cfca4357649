"""The one version of svc: the executable, `info.version`, `health.live` and MCP all report it."""

from __future__ import annotations

__version__ = "0.1.0"
