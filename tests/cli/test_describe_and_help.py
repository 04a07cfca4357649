"""`svc capabilities describe` shows the fields of a capability; the help of every group speaks people's words."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import asyncclick as click
import msgspec
import pytest
from asyncclick.testing import CliRunner

from svc.capabilities import builtin_registry
from svc.cli import build_cli
from svc.cli._render import render
from svc.host import open_service
from svc.layer import Repository
from svc.runtime import Actor
from svc.surfaces import cli_tree
from tests.conftest import ROOT

#: HTTP words the command line does not speak: statuses and routes.
HTTP_WORDS = re.compile(
    r"\([45]\d\d\)|\b(?:is|are) [245]\d\d\b|\b[45]\d\d when\b|\bthe 200 answer\b|\b(?:GET|POST) /|/api/v1\b"
)


async def _invoke(*args: str) -> Any:
    return await CliRunner().invoke(build_cli(), list(args), catch_exceptions=False)


async def _describe(capability: str) -> bytes:
    registry = builtin_registry()
    cap = registry.by_id["capabilities.describe"]
    async with open_service(Repository.discover(ROOT), surface="cli", watch=False) as ex:
        return await ex.call(cap, ex.decode_value(cap, {"id": capability}), actor=Actor(kind="cli", pid=1))


async def test_piped_describe_lists_every_input_field_with_its_type_default_and_constraints() -> None:
    result = await _invoke("capabilities", "describe", "executions.list")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert "#input.fields\tname\ttype\trequired\tdefault\tconstraints\tdescription" in lines
    assert (
        "input.fields\tstate\tstring | null\tno\t-\tone of cancelled, cancelling, failed, queued, running, "
        "succeeded\tkeep only this state"
    ) in lines
    assert "input.fields\tlimit\tinteger\tno\t200\t1 to 200\tat most this many, newest first" in lines
    assert "#output.fields\tname\ttype\talways\tdescription" in lines
    assert "output.fields\texecutions\tarray of ExecutionView\tyes\t-" in lines


async def test_a_required_field_and_an_array_say_so() -> None:
    result = await _invoke("capabilities", "describe", "mesh.claim")
    rows = {line.split("\t")[1]: line.split("\t") for line in result.stdout.splitlines() if line.startswith("input.")}
    scope = rows["scope"]
    assert scope[2:5] == ["array of string", "yes", "-"]
    assert scope[5].startswith("1 to 64 items; each length 1 to 1024; each matches ^(?!/)")
    described = await _invoke("capabilities", "describe", "health.live")
    assert "input.fields\t-" in described.stdout.splitlines()  # no input: an empty table, said as `-`


async def test_json_stays_the_capability_s_bytes() -> None:
    result = await _invoke("capabilities", "describe", "plan.issues", "--json")
    assert result.stdout.encode() == await _describe("plan.issues") + b"\n"
    assert b'"fields"' not in result.stdout.encode()


@pytest.mark.parametrize("width", [80, 200])
async def test_the_terminal_view_shows_each_input_field_whole(width: int) -> None:
    body = await _describe("plan.issues")
    view = render(body, capability="capabilities.describe", tty=True, width=width, color=False)
    fields = set(view.split("fields:")[1].split())
    schema = builtin_registry().input_schema(builtin_registry().by_id["plan.issues"])
    wanted = {"ACTIVE,", "VERIFY", "4294967295", *schema["properties"]}
    for prop in schema["properties"].values():
        wanted.update(prop["description"].split())
    assert wanted <= fields, (width, wanted - fields)
    assert all(len(line) <= width for line in view.splitlines())


def _groups(group: click.Group, words: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Group]]:
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            yield (*words, name), command
            yield from _groups(command, (*words, name))


def _commands(group: click.Group) -> Iterator[click.Command]:
    for command in group.commands.values():
        yield command
        if isinstance(command, click.Group):
            yield from _commands(command)


def test_every_group_is_described_in_words_and_briefly() -> None:
    groups = dict(_groups(build_cli()))
    assert {("plan",), ("mesh",), ("mesh", "review"), ("mesh", "handover"), ("artifacts",)} <= set(groups)
    for words, group in groups.items():
        assert group.help, words
        assert group.short_help, words
        for text in (group.help, group.short_help):
            assert not re.search(r"\bcommands\.?$", text), (words, text)
            assert text.rstrip(".") != " ".join(words), (words, text)
        if len(words) == 1:
            assert len(group.short_help) <= 160, (words, group.short_help)
    assert groups[("mesh", "review")].short_help == (
        "Answer a review request, ask for a review or withdraw a review request."
    )
    assert groups[("mesh",)].short_help == "Runtimes of this repository on the network."
    assert groups[("plan",)].help is not None
    assert groups[("plan",)].help.startswith("Milestones and issues of .ai/repo/project/")
    assert "`svc plan` alone answers the plan: " in groups[("plan",)].help


async def test_svc_help_lists_each_group_with_its_sentence() -> None:
    text = (await _invoke("--help")).stdout
    assert "artifacts commands" not in text
    assert "mesh commands" not in text
    flat = " ".join(text.split())
    assert "mesh Runtimes of this repository on the network." in flat
    assert "plan The plan" in flat  # `svc plan` is a command too: its title, as the generated reference lists it


def test_no_help_speaks_http_statuses_or_routes() -> None:
    texts = [(c.name, f"{c.help} {c.short_help}") for c in _commands(build_cli())]
    assert len(texts) > 60
    assert [(name, text) for name, text in texts if HTTP_WORDS.search(text)] == []


def test_every_integer_and_number_option_is_typed() -> None:
    commands = {tuple(spec.words): spec for spec in cli_tree(builtin_registry())}
    cli = build_cli()
    seen = 0
    for words, spec in commands.items():
        command: click.Command = cli
        for word in words:
            assert isinstance(command, click.Group)
            command = command.commands[word]
        typed = {p.name: p for p in command.params}
        for param in spec.parameters:
            if param.kind in ("integer", "number") and not param.choices:
                dest = param.field or param.name.lstrip("-").replace("-", "_")
                expected = click.INT if param.kind == "integer" else click.FLOAT
                assert typed[dest].type is expected, (words, param.name)
                seen += 1
    assert seen >= 5


async def test_an_error_line_speaks_commands_not_routes() -> None:
    result = await _invoke("capabilities", "describe", "no.such")
    assert result.stderr == "svc: not_found: no capability 'no.such' (see `svc capabilities list`)\n"
    assert msgspec.json.decode((await _invoke("capabilities", "describe", "health.live", "--json")).stdout)
