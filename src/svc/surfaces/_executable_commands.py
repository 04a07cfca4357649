"""svc's own command line as command-graph nodes (origin `executable`), derived from the registry's command tree.

The CLI is built from `cli_tree(registry)` and the global options (`global_options()`); this is a second
reading of the same tree, so the graph lists exactly the commands `svc` has: every runnable command, and a
grouping-only node for each word prefix that is not itself a command (`svc mesh`, `svc mesh review`).

What the tree cannot say is added here, once:

- the **effect** of a command backed by a capability is its capability's (query or resource: `read_only`;
  command: `local_mutation`, or `repository_mutation` when it writes the checkout, as `plan.transition`);
  any other command's effect, its interactivity and what it requires come from `SEMANTICS`, the most specific
  entry whose path is a prefix of the command's (default: read-only, non-interactive, needs a repository with
  a layer);
- where an argument's values come from, when a registry here knows them (`BINDINGS`); otherwise it is
  inferred from the declaration (choices: enumerated; a directory, a `PATH`/`DIR`/`FILE`/`OUT` placeholder
  or the names `repo`, `out`, `path`: a path; `BRANCH`/`branch`/`base`: a branch; `SHELL`/`shell`: a shell);
- the projections: the MCP tool and HTTP route of the capability behind the command, when the exposure policy
  lets a machine carry it.

A `SEMANTICS` or `BINDINGS` entry naming a command or argument the tree lacks is a `semantics-names-no-command`
error, and a capability whose CLI words name no command a `capability-names-no-command` error.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from svc.layer._command_graph import (
    CommandArgument,
    CommandAvailability,
    CommandDiagnostic,
    CommandEffect,
    CommandExecution,
    CommandNode,
    CommandProjections,
    CommandProvenance,
    CommandValueChoice,
    CommandValueSource,
    Contribution,
    Interactivity,
    Requirement,
    SourceKind,
    command_id,
    docs_route,
    invocation,
    machine_verdict,
    secrecy_of,
)
from svc.registry._declaration import Capability
from svc.registry._registry import Registry
from svc.surfaces._cli_tree import VERSION_OPTION, CliCommand, CliParameter, cli_tree, global_options
from svc.surfaces._commands import InfrastructureCommand

__all__ = ["BINDINGS", "SEMANTICS", "Binding", "Semantics", "executable_commands"]

#: Where svc's infrastructure commands are declared (repository-relative, as a capability's `source_path`).
_INFRASTRUCTURE_SOURCE = "src/" + InfrastructureCommand.__module__.replace(".", "/") + ".py"
_EFFECTS: dict[str, CommandEffect] = {
    "read": "read_only",
    "process_state": "local_mutation",
    "repository_mutation": "repository_mutation",
}
_PATH_PLACEHOLDERS = frozenset({"PATH", "DIR", "FILE", "OUT"})


@dataclass(frozen=True, slots=True)
class Semantics:
    """What running the commands under `path` does, beyond what their declaration says."""

    path: tuple[str, ...]
    effect: CommandEffect
    interactivity: Interactivity
    requires: tuple[Requirement, ...]


@dataclass(frozen=True, slots=True)
class Binding:
    """Where the values of one argument of one command come from."""

    path: tuple[str, ...]
    argument: str
    source: SourceKind


_DEFAULT = Semantics((), "read_only", "non_interactive", ("repository", "layer"))

#: Every command path that departs from the default (read-only, non-interactive, a repository with a layer).
#: A capability's own effect wins over an entry's.
SEMANTICS: tuple[Semantics, ...] = (
    # The registry alone: no layer needed.
    Semantics(("capabilities",), "read_only", "non_interactive", ("repository",)),
    # Writes the command-graph cache under .ai/local/.
    Semantics(("commands", "refresh"), "local_mutation", "non_interactive", ("repository",)),
    # Follows a serving server's execution until it ends; Ctrl-C cancels it there (process state).
    Semantics(("executions", "follow"), "local_mutation", "long_running", ("repository",)),
    # Writes docs/generated/ (tracked files).
    Semantics(("generate",), "repository_mutation", "non_interactive", ("repository",)),
    # Serves MCP on stdio until stopped; a stdio session may run tools that write the checkout.
    Semantics(("mcp",), "repository_mutation", "long_running", ("repository", "layer")),
    # Appends to the ledger under .ai/local/state/ and removes temp files there.
    Semantics(("plan", "repair-ledger"), "local_mutation", "non_interactive", ("repository", "layer")),
    # Rewrites the seal fields of issue records (tracked files) and appends ledger events.
    Semantics(("plan", "reseal"), "repository_mutation", "non_interactive", ("repository", "layer")),
    # Reads CHANGELOG.md: no layer needed.
    Semantics(("release",), "read_only", "non_interactive", ("repository",)),
    # Serves HTTP until stopped, holding the lease under .ai/local/; HTTP never writes the checkout.
    Semantics(("serve",), "local_mutation", "long_running", ("repository", "layer")),
)

#: Every argument whose values a registry of svc knows.
BINDINGS: tuple[Binding, ...] = (
    Binding(("capabilities", "describe"), "id", "capability"),
    Binding(("executions", "list"), "capability", "capability"),
    Binding(("mesh", "claim"), "scope", "repository_path"),
    Binding(("mesh", "review", "request"), "scope", "repository_path"),
    Binding(("run",), "capability", "capability"),
)


def _semantics(path: tuple[str, ...]) -> Semantics:
    """The most specific entry whose path is a prefix of `path`, else the default."""
    best = _DEFAULT
    for entry in SEMANTICS:
        if path[: len(entry.path)] == entry.path and len(entry.path) > len(best.path):
            best = entry
    return best


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _argument(param: CliParameter, path: tuple[str, ...], *, is_global: bool = False) -> CommandArgument:
    """One parameter of the tree as an argument of the graph, its value source and secrecy inferred."""
    flag = param.name.removeprefix("--")
    takes_value = param.positional or (param.kind != "boolean" and param.sets is None)
    if param.positional:
        name = param.field or param.name.lower()
        value_name: str | None = param.name.removesuffix("...")
    else:
        name = param.sets or param.field or flag.replace("-", "_")
        value_name = (param.metavar or name.upper()) if takes_value else None
    defaults: list[str] = []
    if takes_value and param.default is not None:
        items = param.default if isinstance(param.default, list) else [param.default]
        defaults = [_text(item) for item in items]
    secrecy = secrecy_of(name, value_name)
    return CommandArgument(
        name=name,
        long=None if param.positional else flag,
        positional=param.positional,
        takes_value=takes_value,
        required=param.required,
        variadic=param.multiple,
        global_=is_global,
        help=param.help,
        value_name=value_name,
        values=[CommandValueChoice(value=choice) for choice in param.choices or ()],
        defaults=defaults,
        source=CommandValueSource(kind="secret" if secrecy == "secret" else _source(param, path, name, value_name)),
        secrecy=secrecy,
    )


def _source(param: CliParameter, path: tuple[str, ...], name: str, value_name: str | None) -> SourceKind:
    """Where the values of an argument come from: the declaration first, then a binding, then its names."""
    if not (param.positional or (param.kind != "boolean" and param.sets is None)):
        return "free"
    if param.choices:
        return "enumerated"
    bound = next((b.source for b in BINDINGS if b.path == path and b.argument == name), None)
    if bound is not None:
        return bound
    placeholder = (value_name or "").upper()
    if param.kind == "directory" or placeholder in _PATH_PLACEHOLDERS or name in ("repo", "out", "path"):
        return "path"
    if placeholder == "BRANCH" or name in ("branch", "base"):
        return "branch"
    if placeholder == "SHELL" or name == "shell":
        return "shell"
    return "free"


def _projections(
    path: tuple[str, ...],
    *,
    runnable: bool,
    effect: CommandEffect,
    interactivity: Interactivity,
    capability: Capability | None,
    preset_of: tuple[str, ...] | None,
) -> CommandProjections:
    """Where the command appears.

    Always on the command line and its page; on MCP and HTTP when the policy lets a machine carry it and its
    capability declares them.
    """
    withheld = machine_verdict(runnable=runnable, effect=effect, interactivity=interactivity)
    mcp = http = None
    if withheld is None:
        if capability is None:
            withheld = "no capability backs it; MCP and HTTP run capabilities only"
        elif preset_of is not None:
            withheld = f"runs `svc {' '.join(preset_of)}` with part of its input fixed; MCP and HTTP carry that one"
        else:
            exposure = capability.exposure
            mcp = exposure.mcp.tool if exposure.mcp is not None else None
            http = f"{exposure.http.method} {exposure.http.path}" if exposure.http is not None else None
            if mcp is None and http is None:
                withheld = f"its capability {capability.id} declares no MCP tool and no HTTP route"
    return CommandProjections(
        cli=invocation("executable", path),
        mcp=mcp,
        http=http,
        cockpit="/cockpit/commands" if http is not None else None,
        docs=docs_route("executable", path),
        withheld=withheld,
    )


def _node(
    path: tuple[str, ...],
    *,
    summary: str,
    description: str | None,
    runnable: bool,
    arguments: list[CommandArgument],
    capability: Capability | None,
    declared_in: str,
    preset_of: tuple[str, ...] | None = None,
) -> CommandNode:
    semantics = _semantics(path)
    effect = _EFFECTS[capability.effect] if capability is not None else semantics.effect
    words = list(path)
    return CommandNode(
        id=command_id("executable", words),
        origin="executable",
        path=words,
        invocation=invocation("executable", words),
        summary=summary,
        description=description,
        runnable=runnable,
        arguments=arguments,
        execution=CommandExecution(origin="executable", argv=words),
        effect=effect,
        interactivity=semantics.interactivity,
        stability=capability.stability if capability is not None else "implemented",
        availability=CommandAvailability(available=True, requires=list(semantics.requires)),
        group=words[0],
        tags=list(capability.tags) if capability is not None else [],
        provenance=CommandProvenance(
            declared_in=declared_in, capability=capability.id if capability is not None else None
        ),
        projections=_projections(
            path,
            runnable=runnable,
            effect=effect,
            interactivity=semantics.interactivity,
            capability=capability,
            preset_of=preset_of,
        ),
        entrypoint=len(words) == 1,
    )


def _command(registry: Registry, spec: CliCommand, globals_: list[CliParameter]) -> CommandNode:
    path = tuple(spec.words)
    cap = registry.by_id.get(spec.capability) if spec.capability is not None else None
    arguments = [_argument(p, path) for p in spec.parameters]
    arguments += [_argument(p, path, is_global=True) for p in globals_]
    if spec.options is not None:
        return _node(
            path,
            summary=spec.summary,
            description=spec.help or None,
            runnable=True,
            arguments=arguments,
            capability=cap,
            declared_in=_INFRASTRUCTURE_SOURCE,
        )
    assert cap is not None
    preset_of = cap.exposure.cli if spec.preset is not None and cap.exposure.cli else None
    return _node(
        path,
        summary=spec.summary,
        description=cap.description,
        runnable=True,
        arguments=arguments,
        capability=cap,
        declared_in=cap.source_path,
        preset_of=preset_of,
    )


def _group(
    registry: Registry, path: tuple[str, ...], globals_: list[CliParameter], commands: list[CommandNode]
) -> CommandNode:
    """A grouping-only command: its module's title and description at the top, declared where its first command is."""
    module = registry.module_by_id.get(path[0]) if len(path) == 1 else None
    first = min((n for n in commands if tuple(n.path[: len(path)]) == path), key=lambda n: n.path)
    return _node(
        path,
        summary=module.title if module is not None else f"The {' '.join(path)} commands",
        description=module.description if module is not None else None,
        runnable=False,
        arguments=[_argument(p, path, is_global=True) for p in globals_],
        capability=None,
        declared_in=first.provenance.declared_in,
    )


def _findings(registry: Registry, paths: set[tuple[str, ...]], nodes: list[CommandNode]) -> list[CommandDiagnostic]:
    out: list[CommandDiagnostic] = []
    for entry in SEMANTICS:
        if entry.path not in paths:
            out.append(
                CommandDiagnostic(
                    severity="error",
                    code="semantics-names-no-command",
                    message=f"the command semantics name `svc {' '.join(entry.path)}`, which the command line lacks",
                    remedy="remove the entry, or restore the command it names",
                )
            )
    arguments = {(tuple(n.path), a.name) for n in nodes for a in n.arguments}
    for binding in BINDINGS:
        if (binding.path, binding.argument) not in arguments:
            out.append(
                CommandDiagnostic(
                    severity="error",
                    code="semantics-names-no-command",
                    message=f"the value bindings name the argument `{binding.argument}` of "
                    f"`svc {' '.join(binding.path)}`, which the command line lacks",
                    remedy="remove the binding, or restore the argument it names",
                )
            )
    for cap in registry.capabilities:
        for words in (cap.exposure.cli, *(p.words for p in cap.exposure.cli_presets)):
            if words and tuple(words) not in paths:
                out.append(
                    CommandDiagnostic(
                        severity="error",
                        code="capability-names-no-command",
                        message=f"capability `{cap.id}` is exposed as `svc {' '.join(words)}`, "
                        "which the command line lacks",
                        remedy="give the command line that command, or drop the CLI exposure",
                    )
                )
    return out


@functools.lru_cache(maxsize=4)
def executable_commands(registry: Registry) -> Contribution:
    """Every command of `svc` for this registry (its tree and global options), and what disagrees with it.

    Pure and computed once per registry. Global options (`--repo`) are listed on every command, marked
    `global`; `--version` and `--help` are options of the program, not arguments of a command.
    """
    tree = cli_tree(registry)
    globals_ = [p for p in global_options() if p.name != VERSION_OPTION.name]
    runnable = {tuple(c.words) for c in tree}
    prefixes = {tuple(c.words[:i]) for c in tree for i in range(1, len(c.words))} - runnable
    nodes = [_command(registry, spec, globals_) for spec in tree]
    nodes += [_group(registry, path, globals_, nodes) for path in sorted(prefixes)]
    diagnostics = _findings(registry, runnable | prefixes, nodes)
    return Contribution(nodes=tuple(nodes), diagnostics=tuple(diagnostics))
