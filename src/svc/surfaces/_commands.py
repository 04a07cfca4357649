"""The infrastructure commands of `svc` and the global options, declared once.

The commands are `commands refresh`, `executions follow`, `generate`, `mcp`, `plan repair-ledger`, `plan reseal`,
`run` and `serve`.

Each command's options are one msgspec Struct: the command tree derives its parameters from it (as capability
commands derive theirs from their input Struct), the command line parses into it, and the generated reference
is rendered from the same tree. A field's `Meta(description=...)` is its help; `Meta(extra=...)` may add a
`metavar` and, for an existing directory, `kind: directory`.
"""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

__all__ = [
    "INFRASTRUCTURE",
    "CommandsRefreshOptions",
    "FollowOptions",
    "GenerateOptions",
    "InfrastructureCommand",
    "McpOptions",
    "RepairLedgerOptions",
    "ResealOptions",
    "RunOptions",
    "ServeOptions",
    "SvcOptions",
]

_Port = Annotated[int, Meta(ge=0, le=65535)]


class SvcOptions(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The options of `svc` itself, given before the command."""

    repo: Annotated[
        str | None,
        Meta(
            description="the checkout to work on (default: the one containing the working directory)",
            extra={"kind": "directory"},
        ),
    ] = None


class CommandsRefreshOptions(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Options of `svc commands refresh` (none: it reads every source of the command graph, once)."""


class GenerateOptions(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Options of `svc generate`."""

    check: Annotated[
        bool,
        Meta(description="re-derive every document, write nothing, list what is stale and exit 10 if any is"),
    ] = False


class McpOptions(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Options of `svc mcp`."""

    port: Annotated[_Port, Meta(description="the first port to try when serving HTTP")] = 8741
    standalone: Annotated[
        bool, Meta(description="serve stdio only, from this process: no lease, no HTTP server, no bridge")
    ] = False
    inspect: Annotated[
        bool,
        Meta(description="print what this invocation would do (serve, bridge, wait, take over) and why, then exit"),
    ] = False
    tools: Annotated[
        str,
        Meta(
            description=(
                "the tools this stdio session lists and may call: all, core (the plan, mesh claim and release, "
                "health, capabilities), or a comma list of module ids and tool names"
            ),
            extra={"metavar": "SET"},
        ),
    ] = "all"


class RepairLedgerOptions(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Options of `svc plan repair-ledger` (none: it repairs what an interrupted move left, and only that)."""


class ResealOptions(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Options of `svc plan reseal` (`--domain` is required; it is an option so that the command reads as it acts)."""

    domain: Annotated[
        str | None,
        Meta(
            description="the seal domain the stamps were sealed under (required), e.g. other.plan-event/v1",
            extra={"metavar": "DOMAIN"},
        ),
    ] = None
    write: Annotated[
        bool, Meta(description="re-seal and append the ledger events; without it, print what would change")
    ] = False


class RunOptions(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Options of `svc run`."""

    capability: Annotated[str, Meta(description="canonical id of the capability to run")]
    input: Annotated[
        str | None,
        Meta(description="the capability's input, a JSON object ({} when omitted)", extra={"metavar": "JSON"}),
    ] = None
    json: Annotated[bool, Meta(description="print the final ExecutionView as JSON")] = False
    quiet: Annotated[
        bool,
        Meta(
            description=(
                "print no progress, summary or output, only errors that keep the run from starting; "
                "the exit code tells how it ended"
            )
        ),
    ] = False
    server: Annotated[
        bool,
        Meta(
            description=(
                "start the execution in the server serving this checkout (executions.start) and follow it there, "
                "instead of running it in this process"
            )
        ),
    ] = False


class FollowOptions(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Options of `svc executions follow`."""

    id: Annotated[
        str, Meta(description="the execution to follow, as `executions list` shows it", extra={"metavar": "ID"})
    ]
    json: Annotated[bool, Meta(description="show nothing while it runs; print the final ExecutionView as JSON")] = False
    quiet: Annotated[
        bool, Meta(description="print no progress, summary or output, only errors; the exit code tells how it ended")
    ] = False


class ServeOptions(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Options of `svc serve`."""

    port: Annotated[_Port, Meta(description="the first port to try")] = 8741


class InfrastructureCommand(msgspec.Struct, frozen=True):
    """A command that is not a capability: its words, one-line summary, longer help and options Struct.

    `capability` names the capability the command projects onto the command line, if any (`svc run` is the
    command-line projection of `executions.start`); the command is in a registry's tree only when the
    registry has that capability.
    """

    words: tuple[str, ...]
    summary: str
    help: str
    options: type[msgspec.Struct]
    capability: str | None = None


INFRASTRUCTURE: tuple[InfrastructureCommand, ...] = (
    InfrastructureCommand(
        words=("commands", "refresh"),
        summary="Read the checkout's workflows (its justfile recipes) and write the command-graph cache.",
        help=(
            "Builds the whole command graph: svc's own commands, the share's tool registry and the recipes of "
            "the checkout's justfile, described by `just --dump --dump-format json` when `just` is on the PATH "
            "(run once, 10 s at most, never through a shell) or read from the justfile's text otherwise. Writes "
            "it atomically to .ai/local/cache/command-graph/graph.json, where commands.list, commands.get and "
            "commands.graph take the recipes from (they never run `just`). Prints what it wrote; exit 0."
        ),
        options=CommandsRefreshOptions,
    ),
    InfrastructureCommand(
        words=("generate",),
        summary="Write the generated documents under docs/generated/ (or, with --check, compare them).",
        help=(
            "Each file is written atomically, and only when its bytes changed. With --check nothing is written: "
            "every document is rendered in memory and compared byte for byte with its committed copy, one line "
            "per file, and the command exits 10 when any is stale or missing."
        ),
        options=GenerateOptions,
    ),
    InfrastructureCommand(
        words=("mcp",),
        summary=(
            "Serve MCP on stdio: the first in a checkout also serves HTTP (8741 first) and holds the lease, "
            "later ones bridge to it."
        ),
        help=(
            "The first `svc mcp` of a checkout serves it: it holds the lease, binds HTTP on 127.0.0.1 (`/mcp` "
            "included) beside its stdio session and logs the URL to stderr. A later one bridges its stdio session "
            "to that server. Nothing but the protocol is written on stdout. Closing stdin ends the session (a "
            "server stays while HTTP MCP sessions remain); SIGINT or SIGTERM ends it at once, with exit 0."
        ),
        options=McpOptions,
    ),
    InfrastructureCommand(
        words=("plan", "repair-ledger"),
        summary="Append the ledger line an interrupted move left out, and remove the temp files of killed writes.",
        help=(
            "Maintenance after a crash, under the plan lock: removes the temp files killed writes left beside "
            "the issue records, and appends the ledger event of a move whose record holds the sealed stamp but "
            "whose ledger line was never written (the `ledger_gap` finding of `svc plan validate`), exactly "
            "as the move built it. Prints one line per change; exit 0. A second run changes nothing. The next "
            "transition does the same before its own move."
        ),
        options=RepairLedgerOptions,
    ),
    InfrastructureCommand(
        words=("plan", "reseal"),
        summary="Re-seal with svc's seal the stamps another tool of this format sealed under its own domain.",
        help=(
            "Migration of a layer written by another tool: every unproven stamp whose seal proves under "
            "--domain is re-sealed with svc's seal (the `stamp_without_event` findings of `svc plan validate` "
            "name the domain). A dry run by default: prints what it would change and writes nothing. With "
            "--write, under the plan lock, each stamp's seal field alone is replaced atomically and the stamp's "
            "event is appended to the ledger, one line per stamp. A stamp whose seal proves under neither "
            "domain is refused and left as it is; stamps without a seal are left alone. Exit 0, or 10 when a "
            "stamp was refused."
        ),
        options=ResealOptions,
    ),
    InfrastructureCommand(
        words=("run",),
        summary="Run a capability as an execution in this process, reported to the server serving the checkout.",
        help=(
            "When a server serves this checkout, every event is reported to it, so the run shows in "
            "`executions list` and on /events. On a terminal a progress bar and the current step stay on screen "
            "while it runs, the steps and log lines printed above them, then one line says how it ended and "
            "after how long. With --server the execution runs in that server instead, started with "
            "executions.start and followed as `svc executions follow` does. Ctrl-C cancels the run; a second "
            "Ctrl-C exits at once. Exit 0 when it succeeded, 10 when it failed, was cancelled or refused."
        ),
        options=RunOptions,
        capability="executions.start",
    ),
    InfrastructureCommand(
        words=("executions", "follow"),
        summary="Follow an execution of the serving server live, until it ends.",
        help=(
            "Subscribes to the execution on the server's live channel (/events) and shows each of its events "
            "once, in order: on a terminal, a progress bar and the current step with the steps and log lines "
            "above them; piped, one line each. A dropped connection is opened again from the last event shown, "
            "so no event is shown twice and none is lost. Ends with one line saying how the execution ended, and "
            "its answer. Ctrl-C asks the server to cancel the execution and goes on following until it ends; a "
            "second Ctrl-C stops following at once (exit 130). Exit 0 when it succeeded, 10 when it failed or "
            "was cancelled, or when no server knows it."
        ),
        options=FollowOptions,
    ),
    InfrastructureCommand(
        words=("serve",),
        summary="Serve the registry over HTTP on 127.0.0.1 (8741 first, else the next free port).",
        help=(
            "Holds the checkout's lease, logs the bound URL to stderr and prints nothing on stdout. Refused "
            "(exit 10) when a live server already holds the lease. SIGINT or SIGTERM stops it cleanly."
        ),
        options=ServeOptions,
    ),
)
