"""The command tree's data: a command and its parameters, with nothing to derive them (see `_cli_tree`).

Its own module so that the command line, built from the description the package ships, loads these two
Structs and not the machinery that derives them from the registry.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

__all__ = ["VERSION_OPTION", "CliCommand", "CliParameter", "ParameterKind"]

ParameterKind = Literal["integer", "number", "boolean", "text", "directory"]


class CliParameter(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One argument or option of a command.

    `negatable` booleans are `--name/--no-name`; other booleans are switches, off unless given; a switch with
    `sets` sets its field to that value. A `multiple` parameter takes one value per item of an array field
    (a positional one takes one or more).
    """

    name: str
    field: str | None = None
    kind: ParameterKind = "text"
    positional: bool = False
    required: bool = False
    negatable: bool = False
    multiple: bool = False
    sets: str | None = None
    choices: list[str] | None = None
    default: Any = None
    metavar: str | None = None
    help: str = ""


class CliCommand(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A runnable command: its words, what it does, and the capability it runs (if any).

    An infrastructure command names its options Struct in `options` and says more in `help`; its
    `capability` is the one it projects onto the command line.
    """

    words: list[str]
    summary: str
    help: str = ""
    capability: str | None = None
    options: str | None = None
    preset: dict[str, Any] | None = None
    parameters: list[CliParameter] = msgspec.field(default_factory=list)


VERSION_OPTION = CliParameter(name="--version", kind="boolean", help="print the version and exit")
