"""What the commands of the command line share: the exit codes, the one-line failure, the checkout, the log."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, NoReturn

import asyncclick as click

from svc._errors import SvcError

if TYPE_CHECKING:
    from pathlib import Path

    from svc.layer import Repository
    from svc.registry import Registry

__all__ = [
    "EXIT_INTERNAL",
    "EXIT_OK",
    "EXIT_REFUSED",
    "EXIT_USAGE",
    "builtin_registry",
    "configure_logging",
    "fail",
    "repository",
]

#: Success, an internal failure, a usage error, a refusal or invalid input.
EXIT_OK, EXIT_INTERNAL, EXIT_USAGE, EXIT_REFUSED = 0, 1, 2, 10


def builtin_registry() -> Registry:
    """Svc's own registry (its capability modules imported now)."""
    from svc.capabilities import builtin_registry as build

    return build()


def fail(exc: SvcError) -> NoReturn:
    """End the command with `exc` as one line on stderr, in the command line's terms, and its exit code."""
    from svc.cli._terms import cli_terms

    click.echo(f"svc: {exc.code}: {cli_terms(exc.message, builtin_registry)}", err=True)
    raise SystemExit(exc.exit_code)


def repository(ctx: click.Context) -> Repository:
    """The checkout the command works on: `--repo`, else the one holding the working directory."""
    from svc.layer import Repository

    start: Path | None = ctx.find_root().params.get("repo")
    return Repository.discover(start)


def configure_logging(level: int) -> None:
    """Log svc's own records at `level` to stderr, and other libraries' (MCP SDK, hypercorn) from warnings on."""
    import logging

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(message)s")
    logging.getLogger("svc").setLevel(level)
