"""The command graph: every command a person can run here, from whichever program offers it.

Three origins, each read from a declaration that already exists: `executable` (svc's own command line,
derived from the registry's command tree by `svc.surfaces.executable_commands`), `tool` (a shell-tool registry
`commands.yaml` in svc's share directory, when one ships) and `workflow` (the checkout's `just` recipes, read by
`svc commands refresh` into a cache). This module holds the shapes, the exposure policy every origin shares
and the assembly: sorting, the graph-wide checks and the fingerprint. It reads nothing.

Identity: `<origin>.<path words joined by .>`, each word lower-cased and every character outside `[a-z0-9-]`
turned into `-` (`executable.plan.status`, `workflow.site-build`). Effects are ordered by consequence
(`EFFECTS`); a machine surface (MCP, HTTP) carries a command only when it is non-interactive, runnable, at most
a local mutation and backed by a capability, and every command it does not carry says why (`withheld`).
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Annotated, Literal

import msgspec
from msgspec import Meta

__all__ = [
    "EFFECTS",
    "INTERACTIVITIES",
    "MACHINE_CEILING",
    "ORIGINS",
    "PROGRAMS",
    "SCHEMA",
    "CommandArgument",
    "CommandAvailability",
    "CommandDeprecation",
    "CommandDiagnostic",
    "CommandEffect",
    "CommandExecution",
    "CommandGraph",
    "CommandGraphReport",
    "CommandIndex",
    "CommandNode",
    "CommandOrigin",
    "CommandProjections",
    "CommandProvenance",
    "CommandSummary",
    "CommandValueChoice",
    "CommandValueSource",
    "Contribution",
    "Interactivity",
    "Requirement",
    "Secrecy",
    "SourceKind",
    "assemble",
    "command_id",
    "command_index",
    "docs_route",
    "fingerprint",
    "invocation",
    "machine_verdict",
    "secrecy_of",
]

#: The schema every serialisation of the graph carries (the answer of `commands.graph` and the cache).
SCHEMA = "svc/command-graph/v1"

CommandOrigin = Literal["executable", "tool", "workflow"]
CommandEffect = Literal["read_only", "local_mutation", "repository_mutation", "network_mutation", "destructive"]
Interactivity = Literal["non_interactive", "interactive", "long_running"]
Requirement = Literal["repository", "layer", "task", "executable", "workflow_runner", "rust_toolchain", "site"]
Secrecy = Literal["public", "sensitive", "secret"]
Severity = Literal["error", "warning", "info"]
Stability = Literal["implemented", "behaviorally_verified", "experimental", "planned", "unsupported"]
SourceKind = Literal[
    "free",
    "enumerated",
    "path",
    "repository_path",
    "capability",
    "command",
    "rule",
    "object_kind",
    "branch",
    "graph",
    "moment",
    "shell",
    "secret",
]

#: The origins in graph order.
ORIGINS: tuple[CommandOrigin, ...] = ("executable", "tool", "workflow")
#: The effects in order of increasing consequence.
EFFECTS: tuple[CommandEffect, ...] = (
    "read_only",
    "local_mutation",
    "repository_mutation",
    "network_mutation",
    "destructive",
)
INTERACTIVITIES: tuple[Interactivity, ...] = ("non_interactive", "interactive", "long_running")
#: The program a person types for each origin.
PROGRAMS: dict[CommandOrigin, str] = {"executable": "svc", "tool": "svc", "workflow": "just"}
#: The strongest effect a machine surface (MCP, HTTP) carries.
MACHINE_CEILING: CommandEffect = "local_mutation"
_SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")
_NOT_ID = re.compile(r"[^a-z0-9-]")
_WORDS = re.compile(r"[a-z0-9]+")
_SECRET_WORDS = frozenset({"token", "tokens", "secret", "secrets", "password", "passwd", "apikey"})
_SENSITIVE_WORDS = frozenset({"credential", "credentials", "auth", "key", "keys"})


class CommandValueChoice(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One value an argument accepts, from the declaration."""

    value: str
    description: str | None = None


class CommandValueSource(msgspec.Struct, frozen=True, kw_only=True):
    """Where the values of an argument come from, when something here knows the set."""

    kind: Annotated[
        SourceKind,
        Meta(
            description=(
                "free (the caller types a value), enumerated (the declaration's `values`), path, repository_path, "
                "capability, command, rule, object_kind, branch, graph, moment, shell, or secret (never suggested)"
            )
        ),
    ]


class CommandArgument(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One argument of a command, as its declaration gives it plus what is inferred from it."""

    name: Annotated[str, Meta(description="the argument's id (the input field it sets, snake_case)")]
    long: Annotated[str | None, Meta(description="the option's long name, without the dashes")] = None
    short: Annotated[str | None, Meta(description="the option's one-letter name, without the dash")] = None
    positional: bool
    takes_value: Annotated[bool, Meta(description="false for a flag")]
    required: bool
    variadic: Annotated[bool, Meta(description="takes any number of values (one per item)")]
    global_: Annotated[bool, Meta(description="an option of `svc` itself, given before the command words")] = (
        msgspec.field(name="global")
    )
    help: str
    value_name: Annotated[str | None, Meta(description="the placeholder, e.g. `PATH`")] = None
    values: list[CommandValueChoice] = msgspec.field(default_factory=list)
    defaults: Annotated[list[str], Meta(description="the defaults, as text")] = msgspec.field(default_factory=list)
    source: CommandValueSource
    secrecy: Annotated[Secrecy, Meta(description="public, sensitive (shown, never logged) or secret")]


class CommandExecution(msgspec.Struct, frozen=True, kw_only=True):
    """How a command is run: the program of its origin and the words before the caller's own."""

    origin: CommandOrigin
    argv: list[str]


class CommandAvailability(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Whether the command can run here, why not when it cannot, and what it needs."""

    available: bool
    reason: str | None = None
    requires: list[Requirement] = msgspec.field(default_factory=list)


class CommandDeprecation(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A command that is no longer the name to use."""

    reason: str
    replaced_by: str | None = None


class CommandProvenance(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Where a command is declared (a repository-relative file), who read it, and the capability it runs."""

    declared_in: str
    read_by: str | None = None
    capability: str | None = None


class CommandProjections(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Where a command appears: the command line, its recipe, MCP, HTTP, the cockpit and its documentation page."""

    cli: Annotated[str | None, Meta(description="the command line, as typed")] = None
    workflow: Annotated[str | None, Meta(description="the recipe name (workflows only)")] = None
    mcp: Annotated[str | None, Meta(description="the MCP tool that runs it")] = None
    http: Annotated[str | None, Meta(description="the HTTP route that runs it, `METHOD /path`")] = None
    cockpit: str | None = None
    docs: Annotated[str, Meta(description="the documentation page's path")]
    withheld: Annotated[str | None, Meta(description="why neither MCP nor HTTP carries it")] = None


class CommandNode(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One command, from whichever program offers it."""

    id: Annotated[str, Meta(description="`<origin>.<path words joined by .>`")]
    origin: CommandOrigin
    path: Annotated[list[str], Meta(description="the words after the program's name")]
    invocation: Annotated[str, Meta(description="the command line a person types, without arguments")]
    summary: str
    description: str | None = None
    runnable: Annotated[bool, Meta(description="false for a command that only groups the ones under it")]
    arguments: list[CommandArgument]
    execution: CommandExecution
    effect: CommandEffect
    interactivity: Interactivity
    stability: Stability
    availability: CommandAvailability
    group: str | None = None
    tags: list[str] = msgspec.field(default_factory=list)
    aliases: list[str] = msgspec.field(default_factory=list)
    deprecation: CommandDeprecation | None = None
    provenance: CommandProvenance
    projections: CommandProjections
    entrypoint: Annotated[bool | None, Meta(description="whether it is the entry point of its group")] = None


class CommandDiagnostic(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One finding of the build: a stable code, what is wrong, the commands it is about and what to do."""

    severity: Severity
    code: str
    message: str
    commands: list[str] = msgspec.field(default_factory=list)
    remedy: str | None = None


class CommandGraph(msgspec.Struct, frozen=True, kw_only=True):
    """Every command, sorted by origin then path, with the fingerprint of their content and the build's findings."""

    schema: str
    fingerprint: Annotated[str, Meta(description="16 hex digits of SHA-256 over the schema and every command")]
    commands: list[CommandNode]
    diagnostics: Annotated[
        list[CommandDiagnostic], Meta(description="sorted by severity (error, warning, info), code, message")
    ]


class CommandGraphReport(msgspec.Struct, frozen=True, kw_only=True):
    """The answer of `commands.graph`: the graph and the number of its error diagnostics."""

    graph: CommandGraph
    errors: int


class CommandSummary(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One command of `commands.list`."""

    id: str
    invocation: str
    summary: str
    origin: CommandOrigin
    effect: CommandEffect
    group: str | None = None
    projections: CommandProjections


class CommandIndex(msgspec.Struct, frozen=True, kw_only=True):
    """The answer of `commands.list`: the commands that pass the filters, in graph order."""

    schema: str
    fingerprint: str
    total: Annotated[int, Meta(description="the number of commands in the graph, before filtering")]
    commands: list[CommandSummary]


@dataclass(frozen=True, slots=True)
class Contribution:
    """What one origin's reader produced: its nodes (any order) and its findings."""

    nodes: tuple[CommandNode, ...] = ()
    diagnostics: tuple[CommandDiagnostic, ...] = ()


def command_id(origin: CommandOrigin, path: Sequence[str]) -> str:
    """The canonical identity of the command `path` of `origin` (`executable.plan.status`)."""
    return ".".join([origin, *(_NOT_ID.sub("-", word.lower()) for word in path)])


def invocation(origin: CommandOrigin, path: Sequence[str]) -> str:
    """The command line a person types for `path`, without arguments (`svc plan status`)."""
    return " ".join([PROGRAMS[origin], *path])


def docs_route(origin: CommandOrigin, path: Sequence[str]) -> str:
    """The page of a command: `/docs/cli/<a>/<b>/`, `/commands/<a-b>/` for a tool, `/docs/commands/` for a recipe."""
    if origin == "executable":
        return "/docs/cli/" + "".join(f"{word}/" for word in path)
    if origin == "tool":
        return "/commands/" + "-".join(path) + "/"
    return "/docs/commands/"


def machine_verdict(*, runnable: bool, effect: CommandEffect, interactivity: Interactivity) -> str | None:
    """Why no machine surface may carry a command of this kind (None: one may, when a capability backs it)."""
    if interactivity == "interactive":
        return "asks the person something; a request/response surface would hang"
    if interactivity == "long_running":
        return "serves until it is stopped; a request/response surface cannot carry it"
    if EFFECTS.index(effect) > EFFECTS.index(MACHINE_CEILING):
        return f"effect {effect} is above the machine ceiling {MACHINE_CEILING}"
    if not runnable:
        return "groups other commands; nothing to execute"
    return None


def secrecy_of(name: str, value_name: str | None = None) -> Secrecy:
    """How openly a value may be handled, from the argument's name and placeholder (whole words only).

    `token`, `secret`, `password`, `passwd`, `apikey` or `api` followed by `key` make a secret; `credential`,
    `auth` or `key` a sensitive value; anything else is public.
    """
    words = _WORDS.findall(f"{name} {value_name or ''}".lower())
    pairs = {f"{a}{b}" for a, b in itertools.pairwise(words)}
    if _SECRET_WORDS.intersection(words) or "apikey" in pairs:
        return "secret"
    if _SENSITIVE_WORDS.intersection(words):
        return "sensitive"
    return "public"


def fingerprint(nodes: Iterable[CommandNode]) -> str:
    """16 hex digits of SHA-256 over the schema followed by each node's compact JSON (field order), in order."""
    digest = hashlib.sha256(SCHEMA.encode())
    encoder = msgspec.json.Encoder()
    for node in nodes:
        digest.update(encoder.encode(node))
    return digest.hexdigest()[:16]


def _order(node: CommandNode) -> tuple[int, list[str]]:
    return ORIGINS.index(node.origin), node.path


def _diagnostic_order(d: CommandDiagnostic) -> tuple[int, str, str]:
    return _SEVERITIES.index(d.severity), d.code, d.message


def _validate(nodes: Sequence[CommandNode]) -> list[CommandDiagnostic]:
    """The graph-wide checks.

    One node per identity, one node per MCP tool, no command executed through another origin's program, no
    secret with a value source that would suggest it.
    """
    out: list[CommandDiagnostic] = []
    for cid, count in sorted(Counter(n.id for n in nodes).items()):
        if count > 1:
            out.append(
                CommandDiagnostic(
                    severity="error",
                    code="duplicate-command-id",
                    message=f"{count} commands claim the identity `{cid}`",
                    commands=[cid],
                    remedy="rename one of them (identities lower-case each word and turn other characters into `-`)",
                )
            )
    tools: dict[str, list[str]] = {}
    for node in nodes:
        if node.projections.mcp is not None:
            tools.setdefault(node.projections.mcp, []).append(node.id)
    for tool, ids in sorted(tools.items()):
        if len(ids) > 1:
            out.append(
                CommandDiagnostic(
                    severity="error",
                    code="duplicate-mcp-projection",
                    message=f"the MCP tool `{tool}` is claimed by {len(ids)} commands",
                    commands=ids,
                )
            )
    for node in nodes:
        if node.execution.origin != node.origin:
            out.append(
                CommandDiagnostic(
                    severity="error",
                    code="execution-cycle",
                    message=f"`{node.invocation}` is a {node.origin} command executed through the "
                    f"{node.execution.origin} program",
                    commands=[node.id],
                )
            )
        for arg in node.arguments:
            if arg.secrecy == "secret" and arg.source.kind not in ("free", "secret"):
                out.append(
                    CommandDiagnostic(
                        severity="error",
                        code="secret-is-suggestible",
                        message=f"`{node.invocation}` takes `{arg.name}`, a secret whose value source "
                        f"({arg.source.kind}) would enumerate it",
                        commands=[node.id],
                    )
                )
    return out


def assemble(*contributions: Contribution) -> CommandGraph:
    """The graph of the contributions.

    Nodes sorted by origin then path, the graph-wide checks added, the diagnostics sorted by severity, code and
    message, and the fingerprint over the sorted nodes.
    """
    nodes = sorted((n for c in contributions for n in c.nodes), key=_order)
    diagnostics = [d for c in contributions for d in c.diagnostics]
    diagnostics.extend(_validate(nodes))
    diagnostics.sort(key=_diagnostic_order)
    return CommandGraph(schema=SCHEMA, fingerprint=fingerprint(nodes), commands=nodes, diagnostics=diagnostics)


def command_index(
    graph: CommandGraph,
    *,
    origin: CommandOrigin | None = None,
    effect: CommandEffect | None = None,
    search: str | None = None,
) -> CommandIndex:
    """The commands of `graph` of `origin`, at most `effect`, whose text holds `search` (case-insensitively).

    The text searched is the invocation, the summary, each tag and the id, lower-cased and joined by spaces.
    """
    ceiling = EFFECTS.index(effect) if effect is not None else len(EFFECTS)
    needle = search.lower() if search is not None else None
    kept = [
        CommandSummary(
            id=n.id,
            invocation=n.invocation,
            summary=n.summary,
            origin=n.origin,
            effect=n.effect,
            group=n.group,
            projections=n.projections,
        )
        for n in graph.commands
        if (origin is None or n.origin == origin)
        and EFFECTS.index(n.effect) <= ceiling
        and (needle is None or needle in " ".join([n.invocation, n.summary, *n.tags, n.id]).lower())
    ]
    return CommandIndex(schema=graph.schema, fingerprint=graph.fingerprint, total=len(graph.commands), commands=kept)
