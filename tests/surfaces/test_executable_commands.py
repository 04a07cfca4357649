"""svc's own commands in the command graph: exactly the commands of the click tree, with their semantics."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import asyncclick as click
import msgspec
import pytest

from svc.capabilities import builtin_capabilities, builtin_modules, builtin_registry
from svc.cli import build_cli
from svc.layer._command_graph import CommandNode, assemble
from svc.registry import Capability, Example, Exposure, HttpExposure, McpExposure, Module, NoInput, build_registry
from svc.surfaces import _executable_commands, cli_tree, executable_commands
from svc.surfaces._executable_commands import Binding, Semantics


def walk(group: click.Group, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    """Every command under `group` (groups included), with its words."""
    for name, command in group.commands.items():
        words = (*path, name)
        yield words, command
        if isinstance(command, click.Group):
            yield from walk(command, words)


def nodes() -> dict[tuple[str, ...], CommandNode]:
    return {tuple(n.path): n for n in executable_commands(builtin_registry()).nodes}


def test_the_graph_has_every_command_of_the_click_tree_and_nothing_else() -> None:
    tree = dict(walk(build_cli()))
    graph = nodes()
    assert set(graph) == set(tree)
    assert ("commands", "refresh") in graph
    for words, command in tree.items():
        node = graph[words]
        assert node.runnable == (command.callback is not None), words
        assert node.invocation == "svc " + " ".join(words)
        options = {opt for p in command.params if isinstance(p, click.Option) for opt in p.opts if opt != "--help"}
        declared = {f"--{a.long}" for a in node.arguments if a.long is not None and not a.global_}
        assert declared == options, words
        positionals = [p.human_readable_name for p in command.params if isinstance(p, click.Argument)]
        assert [a.value_name for a in node.arguments if a.positional] == [p.removesuffix("...") for p in positionals]
    root_options = {opt for p in build_cli().params for opt in p.opts} - {"--version", "--help", "-h"}
    assert all({f"--{a.long}" for a in n.arguments if a.global_} == root_options for n in graph.values())


def test_effects_follow_the_capability_or_the_semantics_table() -> None:
    graph = nodes()
    effect = {words: (n.effect, n.interactivity) for words, n in graph.items()}
    assert effect[("plan", "status")] == ("read_only", "non_interactive")
    assert effect[("plan", "transition")] == ("repository_mutation", "non_interactive")
    assert effect[("plan", "start")] == ("repository_mutation", "non_interactive")
    assert effect[("executions", "cancel")] == ("local_mutation", "non_interactive")
    assert effect[("run",)] == ("local_mutation", "non_interactive")
    assert effect[("serve",)] == ("local_mutation", "long_running")
    assert effect[("mcp",)] == ("repository_mutation", "long_running")
    assert effect[("generate",)] == ("repository_mutation", "non_interactive")
    assert effect[("plan", "repair-ledger")] == ("local_mutation", "non_interactive")
    assert effect[("commands", "refresh")] == ("local_mutation", "non_interactive")
    assert graph[("capabilities", "list")].availability.requires == ["repository"]
    assert graph[("plan", "status")].availability.requires == ["repository", "layer"]


def test_projections_follow_the_exposure_policy() -> None:
    graph = nodes()
    status = graph[("plan", "status")].projections
    assert (status.mcp, status.http, status.cockpit, status.withheld) == (
        "svc_plan_status",
        "GET /api/v1/plan/status",
        "/cockpit/commands",
        None,
    )
    assert status.docs == "/docs/cli/plan/status/"
    assert graph[("executions", "cancel")].projections.http == "POST /api/v1/executions/cancel"
    assert graph[("run",)].projections.mcp == "svc_execution_start"
    withheld = {words: n.projections.withheld for words, n in graph.items()}
    assert withheld[("mesh",)] == "groups other commands; nothing to execute"
    assert withheld[("serve",)] == "serves until it is stopped; a request/response surface cannot carry it"
    assert withheld[("plan", "start")] == "effect repository_mutation is above the machine ceiling local_mutation"
    assert withheld[("plan", "repair-ledger")] == "no capability backs it; MCP and HTTP run capabilities only"
    for node in graph.values():
        carried = node.projections.mcp is not None or node.projections.http is not None
        assert carried != (node.projections.withheld is not None), node.id


def test_arguments_carry_their_sources_and_the_global_options() -> None:
    graph = nodes()
    describe = {a.name: a for a in graph[("capabilities", "describe")].arguments}
    assert describe["id"].source.kind == "capability"
    assert (describe["repo"].global_, describe["repo"].source.kind, describe["repo"].value_name) == (
        True,
        "path",
        "REPO",
    )
    claim = {a.name: a for a in graph[("mesh", "claim")].arguments}
    assert (claim["scope"].source.kind, claim["scope"].variadic, claim["scope"].value_name) == (
        "repository_path",
        True,
        "PATH",
    )
    assert (claim["advisory"].takes_value, claim["advisory"].long) == (False, "advisory")
    listing = {a.name: a for a in graph[("capabilities", "list")].arguments}
    assert listing["kind"].source.kind == "enumerated"
    assert [v.value for v in listing["kind"].values] == ["command", "query", "resource"]
    events = {a.name: a for a in graph[("executions", "events")].arguments}
    assert events["limit"].defaults == ["500"]
    assert graph[("mesh", "release")].arguments[0].secrecy == "sensitive"  # `KEY`: a key is sensitive


def test_the_svc_graph_has_no_diagnostic() -> None:
    assert executable_commands(builtin_registry()).diagnostics == ()
    assert assemble(executable_commands(builtin_registry())).diagnostics == []


def _with_one_more_command() -> Any:
    async def handler(ctx: Any, params: NoInput) -> dict[str, str]:
        return {}

    extra = Capability(
        id="extra.hello",
        module="extra",
        title="Say hello",
        description="d",
        input=NoInput,
        output=dict[str, str],
        handler=handler,
        examples=(Example(name="a"),),
        exposure=Exposure(
            http=HttpExposure(method="GET", path="/api/v1/extra/hello"),
            mcp=McpExposure(tool="svc_extra_hello"),
            cli=("extra", "hello"),
        ),
    )
    module = Module(id="extra", title="Extra", description="An extra module.")
    return build_registry((*builtin_modules(), module), (*builtin_capabilities(), extra))


def test_the_fingerprint_is_stable_and_changes_with_a_command() -> None:
    first = assemble(executable_commands(builtin_registry()))
    again = assemble(_executable_commands.executable_commands.__wrapped__(builtin_registry()))
    assert first.fingerprint == again.fingerprint
    assert msgspec.json.encode(first) == msgspec.json.encode(again)
    grown = assemble(executable_commands(_with_one_more_command()))
    assert grown.fingerprint != first.fingerprint
    added = {n.id for n in grown.commands} - {n.id for n in first.commands}
    assert added == {"executable.extra", "executable.extra.hello"}


def test_a_stale_semantics_entry_or_binding_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        _executable_commands,
        "SEMANTICS",
        (*_executable_commands.SEMANTICS, Semantics(("gone",), "read_only", "non_interactive", ())),
    )
    monkeypatch.setattr(
        _executable_commands, "BINDINGS", (*_executable_commands.BINDINGS, Binding(("plan", "next"), "nope", "rule"))
    )
    found = _executable_commands.executable_commands.__wrapped__(builtin_registry()).diagnostics
    assert [(d.code, d.message) for d in found] == [
        ("semantics-names-no-command", "the command semantics name `svc gone`, which the command line lacks"),
        (
            "semantics-names-no-command",
            "the value bindings name the argument `nope` of `svc plan next`, which the command line lacks",
        ),
    ]


def test_a_capability_whose_words_name_no_command_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    real = cli_tree
    monkeypatch.setattr(
        _executable_commands, "cli_tree", lambda registry: [c for c in real(registry) if c.words != ["plan", "next"]]
    )
    found = _executable_commands.executable_commands.__wrapped__(builtin_registry()).diagnostics
    assert [(d.severity, d.code, d.message) for d in found] == [
        (
            "error",
            "capability-names-no-command",
            "capability `plan.next` is exposed as `svc plan next`, which the command line lacks",
        )
    ]
