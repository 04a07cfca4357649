"""Where the command graph's `tool` and `workflow` commands come from, and the cache `svc commands refresh` writes.

- `tool`: the registry `commands.yaml` in svc's share directory (`$SVC_SHARE` when set, else svc's package data
  `svc/share/`). svc ships none; a share that carries one adds its commands (`version: 1`, `commands[]`).
- `workflow`: the checkout's `just` recipes. They are read only by `refresh_command_graph` (the command
  `svc commands refresh`): `just --dump --dump-format json` once when `just` is on the PATH (no shell, 10 s),
  else the justfile's text (`svc.layer._justfile`). The whole graph is then written to
  `.ai/local/cache/command-graph/graph.json` (schema `svc/command-graph/v1`).
- A request (`load_command_graph`) never starts a process: it derives the executable and tool commands now
  and takes only the `workflow` commands (and the findings of their reading) from the cache, so a cache that
  an older svc wrote never shows commands svc no longer has. A cache that is unreadable, of another schema or
  malformed is a `workflow-cache-unreadable` warning and contributes nothing; one older than the justfile is a
  `workflow-cache-stale` finding.

Every path these findings and nodes name is repository-relative (the share's file is named
`svc/share/commands.yaml` or `SVC_SHARE/commands.yaml`); nothing absolute is served.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import msgspec

from svc.layer._command_graph import (
    SCHEMA,
    CommandArgument,
    CommandAvailability,
    CommandDiagnostic,
    CommandEffect,
    CommandExecution,
    CommandGraph,
    CommandNode,
    CommandOrigin,
    CommandProjections,
    CommandProvenance,
    CommandValueSource,
    Contribution,
    Interactivity,
    Requirement,
    assemble,
    command_id,
    docs_route,
    invocation,
    machine_verdict,
    secrecy_of,
)
from svc.layer._env_model import WorkflowDescriptor
from svc.layer._env_probe import Probe
from svc.layer._env_workflows import JUSTFILES, parse_dump
from svc.layer._files import ensure_local_state, write_atomic
from svc.layer._justfile import read_justfile
from svc.layer._read import MAX_FILE_BYTES, Unreadable, check_repository_file, clip, read_repository_file
from svc.layer._share import ShareUnavailable, read_share, share_name
from svc.layer._yaml import YamlError, load_yaml

__all__ = [
    "CACHE",
    "JUST_SECONDS",
    "PACKAGED_REGISTRY",
    "load_command_graph",
    "read_command_cache",
    "read_tool_registry",
    "read_workflows",
    "refresh_command_graph",
    "tool_nodes",
    "workflow_nodes",
]

#: The tool registry's file name in the share directory, and how nodes and findings name it.
TOOL_REGISTRY = "commands.yaml"
PACKAGED_REGISTRY = f"svc/share/{TOOL_REGISTRY}"
#: The cache the refresh writes and requests read, relative to the checkout's root.
CACHE = ".ai/local/cache/command-graph/graph.json"
#: How long `just --dump` may take.
JUST_SECONDS = 10.0
#: The command whose output the dump reading parses (the `read_by` of its nodes).
JUST_DUMP = "just --dump --dump-format json"
#: The `read_by` of recipes read from the justfile's text.
TEXT_READER = "svc commands refresh (the justfile's text)"
#: Findings of the workflow reading: written into the cache and answered from it with the recipes.
_WORKFLOW_READING = frozenset(
    {"workflow-runner-missing", "workflow-dump-failed", "workflow-source-unreadable", "alias-names-no-command"}
)
_TOOL_CLASSES: dict[str, CommandEffect] = {
    "read-only": "read_only",
    "state-mutating": "local_mutation",
    "generated-output-mutating": "repository_mutation",
}
_NO_CAPABILITY = "no capability backs it; MCP and HTTP run capabilities only"


def _finding(severity: Any, code: str, message: str, remedy: str | None = None) -> CommandDiagnostic:
    return CommandDiagnostic(severity=severity, code=code, message=clip(message), remedy=remedy)


def _projections(
    origin: CommandOrigin, path: list[str], effect: CommandEffect, interactivity: Interactivity
) -> CommandProjections:
    """The projections of a command no capability backs: its command line, its page, and why no machine has it."""
    withheld = machine_verdict(runnable=True, effect=effect, interactivity=interactivity) or _NO_CAPABILITY
    return CommandProjections(
        cli=invocation(origin, path),
        workflow="::".join(path) if origin == "workflow" else None,
        docs=docs_route(origin, path),
        withheld=withheld,
    )


# The tool registry.


def _share_registry() -> tuple[bytes | None, str, CommandDiagnostic | None]:
    """The tool registry's bytes (None when the share has none), its shown name, and why it cannot be read.

    The registry of a directory `SVC_SHARE` names is read under the reading rule (no symlink out of it, at most
    4 MiB) and shown as `SVC_SHARE/commands.yaml`; svc's packaged one as `svc/share/commands.yaml`.
    """
    try:
        data, shown = read_share(TOOL_REGISTRY, limit=MAX_FILE_BYTES)
    except ShareUnavailable as exc:
        problem = f"{exc}; no tool registry was read"
        return None, share_name(TOOL_REGISTRY), _finding("error", "tool-registry-unreadable", problem)
    except FileNotFoundError:
        return None, share_name(TOOL_REGISTRY), None
    except Unreadable as exc:
        problem = f"{share_name(TOOL_REGISTRY)} cannot be read: {exc.reason}"
        return None, share_name(TOOL_REGISTRY), _finding("error", "tool-registry-unreadable", problem)
    return data, shown, None


def _tool_interactivity(syntax: str) -> Interactivity:
    """Interactive when the synopsis reads standard input (`< body.md`); a `<placeholder>` is no redirection."""
    stripped = syntax
    while True:
        start = stripped.find("<")
        end = stripped.find(">", start + 1)
        if start < 0:
            return "non_interactive"
        between = stripped[start + 1 : end] if end >= 0 else ""
        if end < 0 or "<" in between or between[:1].isspace() or not between:
            return "interactive"
        stripped = stripped[:start] + stripped[end + 1 :]


def _text(value: Any) -> str | None:
    """A declared text on one line (at most 1,000 characters), None when it is no text or blank."""
    if not isinstance(value, str):
        return None
    return clip(" ".join(value.split()), 1000) or None


def tool_nodes(document: Any, *, declared_in: str = PACKAGED_REGISTRY) -> Contribution:
    """The commands of a parsed tool registry (`version: 1`, `commands[]`), and what is wrong with it.

    An entry with `visibility: internal` is left out; one without a string `id` is a `tool-registry-unreadable`
    error (the other entries stay). `class` gives the effect (an unknown or absent class reads as a repository
    mutation); a `syntax` reading standard input makes the command interactive.
    """
    if not isinstance(document, dict) or not isinstance(document.get("commands", []), list):
        return Contribution(
            diagnostics=(
                _finding(
                    "error",
                    "tool-registry-unreadable",
                    f"{declared_in} is not a mapping with a `commands` list",
                ),
            )
        )
    findings: list[CommandDiagnostic] = []
    version = document.get("version")
    if version != 1:
        said = "declares no version" if version is None else f"declares version {json.dumps(version, default=str)}"
        findings.append(
            _finding(
                "warning",
                "tool-registry-version",
                f"{declared_in} {said}, and svc reads version 1",
                remedy="read what svc could; check the registry against version 1",
            )
        )
    nodes: list[CommandNode] = []
    for i, entry in enumerate(document.get("commands", [])):
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str) or not entry["id"].split():
            findings.append(
                _finding("error", "tool-registry-unreadable", f"{declared_in} commands[{i}] has no string `id`")
            )
            continue
        if entry.get("visibility") == "internal":
            continue
        path = entry["id"].split()
        declared = entry.get("class")
        effect = _TOOL_CLASSES.get(declared if isinstance(declared, str) else "", "repository_mutation")
        syntax = entry.get("syntax")
        interactivity = _tool_interactivity(syntax) if isinstance(syntax, str) else "non_interactive"
        requires: list[Requirement] = []
        if entry.get("requires_repository", True) is not False:
            requires.append("repository")
        requires.append("layer")
        if entry.get("requires_task") == "required":
            requires.append("task")
        category = entry.get("category")
        nodes.append(
            CommandNode(
                id=command_id("tool", path),
                origin="tool",
                path=path,
                invocation=invocation("tool", path),
                summary=_text(entry.get("summary")) or _text(entry.get("title")) or "",
                description=_text(entry.get("note")),
                runnable=True,
                arguments=[],
                execution=CommandExecution(origin="tool", argv=path),
                effect=effect,
                interactivity=interactivity,
                stability="implemented",
                availability=CommandAvailability(available=True, requires=requires),
                group=category if isinstance(category, str) else None,
                provenance=CommandProvenance(declared_in=declared_in),
                projections=_projections("tool", path, effect, interactivity),
                entrypoint=True,
            )
        )
    return Contribution(nodes=tuple(nodes), diagnostics=tuple(findings))


def read_tool_registry() -> Contribution:
    """The tool commands of the share directory's registry (nothing when the share carries none)."""
    data, shown, problem = _share_registry()
    if problem is not None:
        return Contribution(diagnostics=(problem,))
    if data is None:
        return Contribution()
    try:
        document = load_yaml(data)
    except (YamlError, RecursionError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return Contribution(
            diagnostics=(_finding("error", "tool-registry-unreadable", f"{shown} is not YAML: {reason}"),)
        )
    return tool_nodes(document, declared_in=shown)


# The workflows.


def workflow_nodes(
    recipes: tuple[WorkflowDescriptor, ...],
    aliases: dict[str, str],
    names: frozenset[str],
    *,
    declared_in: str,
    read_by: str,
    unavailable: str | None = None,
) -> Contribution:
    """The command of each public recipe, and an `alias-names-no-command` error for an alias naming no recipe.

    A `[confirm]` recipe is destructive and interactive (it asks before it runs); every other recipe is a
    repository mutation, the strongest ordinary effect, since a recipe is arbitrary shell. The entry point of
    a group is its recipe named like the group. `unavailable` is why `just` cannot run them here.
    """
    by_target: dict[str, list[str]] = {}
    findings: list[CommandDiagnostic] = []
    public = {r.name for r in recipes}
    for alias, target in aliases.items():
        if target in public:
            by_target.setdefault(target, []).append(alias)
        elif target not in names:
            findings.append(
                CommandDiagnostic(
                    severity="error",
                    code="alias-names-no-command",
                    message=f"the alias `just {alias}` names `{target}`, which the justfile does not declare",
                    commands=[command_id("workflow", [alias])],
                    remedy="point the alias at a recipe, or remove it",
                )
            )
    nodes: list[CommandNode] = []
    for recipe in recipes:
        path = recipe.name.split()
        effect: CommandEffect = "destructive" if recipe.confirm else "repository_mutation"
        interactivity: Interactivity = "interactive" if recipe.confirm else "non_interactive"
        arguments = [
            CommandArgument(
                name=p.name,
                positional=True,
                takes_value=True,
                required=p.required,
                variadic=p.variadic,
                global_=False,
                help="",
                value_name=p.name.upper(),
                source=CommandValueSource(kind="secret" if secrecy_of(p.name) == "secret" else "free"),
                secrecy=secrecy_of(p.name),
            )
            for p in recipe.parameters
        ]
        nodes.append(
            CommandNode(
                id=command_id("workflow", path),
                origin="workflow",
                path=path,
                invocation=invocation("workflow", path),
                summary=recipe.description or f"The justfile recipe `{recipe.name}` (no doc comment).",
                runnable=True,
                arguments=arguments,
                execution=CommandExecution(origin="workflow", argv=path),
                effect=effect,
                interactivity=interactivity,
                stability="implemented",
                availability=CommandAvailability(
                    available=unavailable is None, reason=unavailable, requires=["repository", "workflow_runner"]
                ),
                group=recipe.group,
                aliases=sorted(by_target.get(recipe.name, [])),
                provenance=CommandProvenance(declared_in=declared_in, read_by=read_by),
                projections=_projections("workflow", path, effect, interactivity),
                entrypoint=recipe.group is not None and recipe.group == recipe.name,
            )
        )
    return Contribution(nodes=tuple(nodes), diagnostics=tuple(findings))


def _dump_aliases(dump: bytes) -> tuple[dict[str, str], frozenset[str]]:
    """The top-level aliases of a dump (alias → recipe; private ones left out) and every recipe name in it."""
    loaded = json.loads(dump)
    aliases: dict[str, str] = {}
    raw = loaded.get("aliases") if isinstance(loaded, dict) else None
    for name, alias in raw.items() if isinstance(raw, dict) else ():
        target = alias.get("target") if isinstance(alias, dict) else alias
        attributes = alias.get("attributes", []) if isinstance(alias, dict) else []
        private = alias.get("private") is True if isinstance(alias, dict) else False
        if isinstance(target, str) and not private and "private" not in (attributes or []):
            aliases[str(name)] = target
    recipes = loaded.get("recipes") if isinstance(loaded, dict) else None
    return aliases, frozenset(str(k) for k in recipes) if isinstance(recipes, dict) else frozenset()


def _justfile(root: Path) -> tuple[str | None, CommandDiagnostic | None]:
    """The checkout's justfile (its repository-relative name), or the finding that it cannot be read."""
    for name in JUSTFILES:
        try:
            check_repository_file(root, root / name)
        except FileNotFoundError:
            continue
        except Unreadable as exc:
            return None, _finding("warning", "workflow-source-unreadable", f"{name} is not read: {exc.reason}")
        return name, None
    return None, None


def _from_text(root: Path, name: str, unavailable: str, findings: list[CommandDiagnostic]) -> Contribution:
    reason: str | None = None
    try:
        text = read_repository_file(root, root / name).decode("utf-8")
    except Unreadable as exc:
        reason = exc.reason
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
    except UnicodeDecodeError:
        reason = "not UTF-8"
    if reason is not None:
        findings.append(_finding("warning", "workflow-source-unreadable", f"{name} is not read: {reason}"))
        return Contribution(diagnostics=tuple(findings))
    reading = read_justfile(text)
    read = workflow_nodes(
        reading.recipes,
        reading.aliases,
        reading.names,
        declared_in=name,
        read_by=TEXT_READER,
        unavailable=unavailable,
    )
    return Contribution(nodes=read.nodes, diagnostics=(*findings, *read.diagnostics))


def read_workflows(root: Path, *, search_path: str | None = None) -> Contribution:
    """The recipes of the checkout's justfile: from `just --dump` when `just` is on the PATH, else from its text.

    Starts at most one process (`just`, looked up on `search_path`, default the PATH; never through a shell,
    killed after `JUST_SECONDS`). A checkout without a justfile has no workflows.
    """
    name, problem = _justfile(root)
    if problem is not None:
        return Contribution(diagnostics=(problem,))
    if name is None:
        return Contribution()
    if shutil.which("just", path=search_path) is None:
        finding = _finding(
            "info",
            "workflow-runner-missing",
            f"`just` is not on the PATH; the recipes were read from the text of {name}",
            remedy="install `just` and run `svc commands refresh` again for its own description of the recipes",
        )
        return _from_text(root, name, "`just` is not on the PATH", [finding])
    argv = ["just", "--justfile", str(root / name), "--working-directory", str(root), "--dump", "--dump-format", "json"]
    result = Probe.start(argv, cwd=root, seconds=JUST_SECONDS, search_path=search_path).finish()
    failure: str | None = None
    if result.outcome == "timeout":
        failure = f"`{JUST_DUMP}` did not answer within {JUST_SECONDS:g} s"
    elif result.outcome != "ok":
        failure = f"`{JUST_DUMP}` failed"
    else:
        try:
            recipes, _ = parse_dump(result.stdout, None)
            aliases, names = _dump_aliases(result.stdout)
        except (ValueError, RecursionError):
            failure = f"`{JUST_DUMP}` printed no JSON object"
        else:
            return workflow_nodes(recipes, aliases, names, declared_in=name, read_by=JUST_DUMP)
    finding = _finding(
        "warning",
        "workflow-dump-failed",
        f"{failure}; the recipes were read from the text of {name}",
        remedy=f"run `just --list` to see what `just` makes of {name}",
    )
    return _from_text(root, name, f"`just` could not read {name}", [finding])


# The cache.


class _Head(msgspec.Struct):
    schema: str


class _Cached(msgspec.Struct):
    commands: list[msgspec.Raw]
    diagnostics: list[msgspec.Raw] = msgspec.field(default_factory=list)


class _NodeHead(msgspec.Struct):
    origin: str


def _unreadable_cache(reason: str, *, consequence: str = "no workflow is listed from it") -> CommandDiagnostic:
    return _finding(
        "warning",
        "workflow-cache-unreadable",
        f"{CACHE} {reason}; {consequence}",
        remedy="run `svc commands refresh` to write it again",
    )


def _staleness(root: Path, cached: list[CommandNode], written_ns: int) -> list[CommandDiagnostic]:
    """An info finding for each workflow source that is gone or changed since the cache was written."""
    sources = {n.provenance.declared_in for n in cached} | {n for n in JUSTFILES if (root / n).is_file()}
    changed: list[str] = []
    for source in sorted(sources):
        try:
            if os.stat(root / source).st_mtime_ns > written_ns:
                changed.append(f"{source} changed")
        except OSError:
            changed.append(f"{source} is gone")
    if not changed:
        return []
    return [
        _finding(
            "info",
            "workflow-cache-stale",
            f"{CACHE} is older than the workflows it lists: " + ", ".join(changed),
            remedy="run `svc commands refresh`",
        )
    ]


def read_command_cache(root: Path) -> Contribution:
    """The workflow commands (and the findings of their reading) the cache holds; nothing is started.

    Commands of other origins in the cache are left out: they are derived anew on every request.
    """
    path = root / CACHE
    try:
        data = read_repository_file(root, path)
        written_ns = os.stat(path).st_mtime_ns
    except FileNotFoundError:
        present = [n for n in JUSTFILES if (root / n).is_file()]
        if not present:
            return Contribution()
        finding = _finding(
            "info",
            "workflow-cache-absent",
            f"the checkout has {present[0]} and no {CACHE}; its recipes are not listed",
            remedy="run `svc commands refresh` to read them",
        )
        return Contribution(diagnostics=(finding,))
    except Unreadable as exc:
        return Contribution(diagnostics=(_unreadable_cache(f"cannot be read ({exc.reason})"),))
    except OSError as exc:
        return Contribution(diagnostics=(_unreadable_cache(f"cannot be read ({exc.strerror or type(exc).__name__})"),))
    try:
        head = msgspec.json.decode(data, type=_Head)
    except msgspec.DecodeError:
        return Contribution(diagnostics=(_unreadable_cache("is not a command graph (JSON with a `schema`)"),))
    if head.schema != SCHEMA:
        return Contribution(diagnostics=(_unreadable_cache(f"has schema {clip(head.schema, 80)!r}, not {SCHEMA!r}"),))
    try:
        cached = msgspec.json.decode(data, type=_Cached)
    except msgspec.DecodeError as exc:
        return Contribution(diagnostics=(_unreadable_cache(f"is malformed: {exc}"),))
    nodes: list[CommandNode] = []
    findings: list[CommandDiagnostic] = []
    for i, raw in enumerate(cached.commands):
        try:
            if msgspec.json.decode(raw, type=_NodeHead).origin != "workflow":
                continue
            node = msgspec.json.decode(raw, type=CommandNode)
        except msgspec.DecodeError as exc:
            findings.append(
                _unreadable_cache(
                    f"holds a malformed command (commands[{i}]: {exc})", consequence="that command is left out"
                )
            )
            continue
        if node.id != command_id("workflow", node.path) or not node.path:
            findings.append(
                _unreadable_cache(
                    f"holds `{clip(node.id, 80)}`, which is not the identity of its path",
                    consequence="that command is left out",
                )
            )
            continue
        if node.provenance.declared_in not in JUSTFILES:
            findings.append(
                _unreadable_cache(
                    f"holds `{node.id}`, which names no justfile of the checkout",
                    consequence="that command is left out",
                )
            )
            continue
        nodes.append(node)
    for raw in cached.diagnostics:
        try:
            diagnostic = msgspec.json.decode(raw, type=CommandDiagnostic)
        except msgspec.DecodeError:
            continue
        if diagnostic.code in _WORKFLOW_READING:
            findings.append(diagnostic)
    findings.extend(_staleness(root, nodes, written_ns))
    return Contribution(nodes=tuple(nodes), diagnostics=tuple(findings))


# The graph.


def load_command_graph(root: Path, executable: Contribution) -> CommandGraph:
    """The graph a request answers: `executable` and the tool registry as they are now, the workflows of the cache.

    Reads at most three small files (the tool registry, the cache and, for its freshness, the justfile's
    `stat`); starts no process.
    """
    return assemble(executable, read_tool_registry(), read_command_cache(root))


def refresh_command_graph(root: Path, executable: Contribution, *, search_path: str | None = None) -> CommandGraph:
    """The whole graph, the workflows read now (`read_workflows`), written atomically to the cache.

    Creates `.ai/local/` (with its `.gitignore`) when the checkout has none yet.
    """
    graph = assemble(executable, read_tool_registry(), read_workflows(root, search_path=search_path))
    ensure_local_state(root / ".ai" / "local")
    write_atomic(root / CACHE, msgspec.json.encode(graph) + b"\n")
    return graph
