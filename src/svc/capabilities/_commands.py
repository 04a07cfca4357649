"""`commands.*`: the command graph, every command a person can run here, from whichever program offers it.

svc's own commands are derived from the registry's command tree (`svc.surfaces.executable_commands`), the tool
commands from the share's registry, and the checkout's workflows (its `just` recipes) from the cache that
`svc commands refresh` writes (`svc.layer._command_sources`). No request starts a process; each reads at most
three small files in a worker thread. No answer is cached: the graph is derived anew each time.
"""

from __future__ import annotations

from typing import Annotated

import msgspec
import trio
from msgspec import Meta

from svc._errors import InvalidInput, NotFound
from svc.layer._command_graph import (
    EFFECTS,
    ORIGINS,
    CommandGraph,
    CommandGraphReport,
    CommandIndex,
    CommandNode,
    command_index,
)
from svc.layer._command_sources import load_command_graph
from svc.registry import Declarations, Example, McpResource, Module, NoInput
from svc.runtime import Context
from svc.surfaces import executable_commands

MODULE = Module(
    id="commands",
    title="Command graph",
    description=(
        "Every command a person can run here, from whichever program offers it: svc's own command line, a "
        "shipped tool registry, and the checkout's justfile recipes (cached by `svc commands refresh`), each "
        "with its effect, arguments and where it is projected."
    ),
)

_ORIGINS = ", ".join(ORIGINS)
_EFFECTS = ", ".join(EFFECTS)


class CommandsInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The filters of `commands.list`; every command passes an absent one."""

    origin: Annotated[
        Annotated[str, Meta(extra_json_schema={"enum": list(ORIGINS)})] | None,
        Meta(description=f"keep only commands of this origin: {_ORIGINS}"),
    ] = None
    effect: Annotated[
        Annotated[str, Meta(extra_json_schema={"enum": list(EFFECTS)})] | None,
        Meta(description=f"keep only commands whose effect is at most this one, in the order {_EFFECTS}"),
    ] = None
    search: Annotated[
        Annotated[str, Meta(max_length=200)] | None,
        Meta(description="keep only commands whose invocation, summary, tags or id hold this text (any case)"),
    ] = None


class CommandInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Input of `commands.get`."""

    id: Annotated[
        str,
        Meta(min_length=1, max_length=300, description="the command's identity, e.g. executable.plan.status"),
    ]


async def _graph(ctx: Context) -> CommandGraph:
    """The graph of this checkout, derived now (no process started)."""
    executable = executable_commands(ctx.runtime.registry)
    return await trio.to_thread.run_sync(load_command_graph, ctx.runtime.repository.root, executable)


async def list_(ctx: Context, params: CommandsInput) -> CommandIndex:
    """The commands that pass the filters (400 naming the alternatives for an unknown origin or effect)."""
    if params.origin is not None and params.origin not in ORIGINS:
        raise InvalidInput(f"unknown origin '{params.origin}'; the origins are {_ORIGINS}")
    if params.effect is not None and params.effect not in EFFECTS:
        raise InvalidInput(f"unknown effect '{params.effect}'; the effects are, in order, {_EFFECTS}")
    graph = await _graph(ctx)
    return command_index(
        graph,
        origin=params.origin,
        effect=params.effect,
        search=params.search,
    )


async def get(ctx: Context, params: CommandInput) -> CommandNode:
    """One command by its identity (404, with the nearest identities, for any other)."""
    graph = await _graph(ctx)
    found = next((n for n in graph.commands if n.id == params.id), None)
    if found is None:
        import difflib  # only an unknown id needs it

        near = difflib.get_close_matches(params.id, [n.id for n in graph.commands], n=3)
        hint = f"; did you mean {', '.join(near)}?" if near else ""
        raise NotFound(f"no command '{params.id}' (GET /api/v1/commands lists them){hint}")
    return found


async def graph(ctx: Context, params: NoInput) -> CommandGraphReport:
    """The whole graph and the number of its error diagnostics."""
    whole = await _graph(ctx)
    return CommandGraphReport(graph=whole, errors=sum(d.severity == "error" for d in whole.diagnostics))


declare = Declarations[Context](MODULE, source=__name__)

CAPABILITIES = (
    declare.query(
        "list",
        title="The commands",
        description=(
            "Every command of the graph that passes the filters, in graph order (origin executable, tool, "
            "workflow, then path): its id, invocation, summary, origin, effect, group and projections. `origin` "
            "keeps one program's commands; `effect` is a ceiling (`read_only` keeps only commands that change "
            "nothing); `search` matches the invocation, summary, tags and id, in any case. `total` counts the "
            "whole graph. The workflows come from the cache `svc commands refresh` writes. An unknown origin or "
            "effect is 400."
        ),
        input=CommandsInput,
        output=CommandIndex,
        handler=list_,
        examples=(
            Example(name="all"),
            Example(name="read-only", input={"effect": "read_only"}),
            Example(name="one-program", input={"origin": "executable"}),
            Example(name="search", input={"search": "plan"}),
            Example(name="unknown-origin", input={"origin": "shell"}, status=400),
        ),
        http="GET /api/v1/commands",
        tool="svc_commands",
        resource=McpResource(uri="svc://commands", name="commands"),
    ),
    declare.query(
        "get",
        title="One command",
        description=(
            "One command of the graph by its identity (`<origin>.<path words joined by .>`): its path, "
            "invocation, summary and description, whether it runs or only groups others, its arguments (with "
            "their value sources and secrecy), how it is executed, its effect, interactivity, stability, "
            "availability, provenance and projections (and, when neither MCP nor HTTP carries it, why). An "
            "unknown identity is 404."
        ),
        input=CommandInput,
        output=CommandNode,
        handler=get,
        examples=(
            Example(name="plan-status", input={"id": "executable.plan.status"}),
            Example(name="grouping-only", input={"id": "executable.mesh.review"}),
            Example(name="unknown", input={"id": "executable.no-such-command"}, status=404),
        ),
        http="GET /api/v1/command",
        tool="svc_command",
    ),
    declare.query(
        "graph",
        title="The command graph",
        description=(
            "The whole command graph (schema svc/command-graph/v1): every command, sorted by origin then path, "
            "the fingerprint of their content (16 hex digits of SHA-256; the same commands give the same "
            "fingerprint), the diagnostics of the build sorted by severity, code and message, and the number of "
            "error diagnostics."
        ),
        input=NoInput,
        output=CommandGraphReport,
        handler=graph,
        examples=(Example(name="default"),),
        http="GET /api/v1/commands/graph",
        tool="svc_command_graph",
    ),
)
