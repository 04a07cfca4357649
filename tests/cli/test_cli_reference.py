"""docs/generated/cli.md against the real command line: every command, argument and option, with its help.

Both are derived from the command tree, but nothing here relies on that: the real click tree (`build_cli()`) is
walked, and what `svc COMMAND --help` prints for each command (its summary, its arguments in the usage line, each
option's names and help text) is compared with what the committed reference lists for it, both ways. An option
added to the CLI without `svc generate`, or one the reference lists and the CLI lacks, is a difference. The root's
options are compared with the reference's global options.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import asyncclick as click
from asyncclick.testing import CliRunner

from svc.cli import build_cli

REFERENCE = Path(__file__).resolve().parents[2] / "docs/generated/cli.md"
_CELL_SEPARATOR = re.compile(r"(?<!\\)\|")


@dataclass(frozen=True, slots=True)
class Listed:
    """One parameter as a help page or the reference shows it."""

    names: tuple[str, ...]
    positional: bool
    help: str
    choices: str = ""


@dataclass(slots=True)
class Page:
    """One command: its one-line summary and its parameters, in order."""

    summary: str
    parameters: list[Listed]


Words = tuple[str, ...]


def _cells(line: str) -> list[str]:
    return [cell.strip().replace("\\|", "|") for cell in _CELL_SEPARATOR.split(line.strip())[1:-1]]


def _documented(cells: list[str]) -> Listed:
    """A row `| names | kind | default | help |`; what `--help` prints is the help and then the default."""
    assert len(cells) == 4, f"a parameter row of the reference is not four cells: {cells}"
    names, kind, default, help_text = cells
    positional = names.endswith("(required)")
    shown = "" if positional or not default else f" (default: {default.strip('`')})"
    return Listed(
        names=tuple(re.findall(r"`([^`]+)`", names)),
        positional=positional,
        help="" if positional else help_text + shown,
        choices=kind if "|" in kind else "",
    )


def read_reference(text: str) -> dict[Words, Page]:
    """The reference's pages: `()` for the global options, else each `## svc WORDS` section."""
    pages: dict[Words, Page] = {(): Page(summary="", parameters=[])}
    summaries: dict[Words, str] = {}
    current: Words = ()
    table = ""
    for line in text.splitlines():
        if line.startswith("## svc "):
            current = tuple(line.removeprefix("## svc ").split())
            assert current not in pages, f"two sections for svc {' '.join(current)}"
            pages[current] = Page(summary="", parameters=[])
        elif line.startswith("| parameter |") or line.startswith("| command |"):
            table = line.split("|")[1].strip()
        elif line.startswith("| `") and table == "command":
            command, _runs, summary = _cells(line)
            summaries[tuple(command.strip("`").removeprefix("svc ").split())] = summary
        elif line.startswith("| `") and table == "parameter":
            pages[current].parameters.append(_documented(_cells(line)))
    assert set(summaries) == set(pages) - {()}, "the command table and the sections list different commands"
    for named, summary in summaries.items():
        pages[named].summary = summary
    return pages


def _context(command: click.Command, parent: click.Context | None, name: str) -> click.Context:
    settings = command.context_settings if parent is None else {}
    return click.Context(command, parent=parent, info_name=name, **settings)


def walk(cli: click.Group) -> Iterator[tuple[Words, click.Command, click.Context]]:
    """Every command of the real tree with the context `--help` would print it in, the root first."""
    stack: list[tuple[Words, click.Command, click.Context]] = [((), cli, _context(cli, None, "svc"))]
    while stack:
        words, command, ctx = stack.pop()
        yield words, command, ctx
        if isinstance(command, click.Group):
            for name in reversed(command.list_commands(ctx)):
                sub = command.get_command(ctx, name)
                assert sub is not None
                stack.append(((*words, name), sub, _context(sub, ctx, name)))


def printed(command: click.Command, ctx: click.Context) -> list[Listed]:
    """The arguments (usage line) and options (with the help text) that `--help` prints, `--help` aside."""
    out: list[Listed] = []
    for param in command.get_params(ctx):
        if isinstance(param, click.Argument):
            out.append(Listed(names=(param.make_metavar(ctx),), positional=True, help=""))
        elif isinstance(param, click.Option) and not set(param.opts) & set(ctx.help_option_names):
            record = param.get_help_record(ctx)
            assert record is not None, param.opts
            choices = "|".join(map(str, param.type.choices)) if isinstance(param.type, click.Choice) else ""
            out.append(
                Listed(names=(*param.opts, *param.secondary_opts), positional=False, help=record[1], choices=choices)
            )
    return out


def _is_container(command: click.Command) -> bool:
    """A group that only holds commands (`svc mesh`), as opposed to a command that is also a group (`svc plan`)."""
    return isinstance(command, click.Group) and command.callback is None


def differences(cli: click.Group, reference: str) -> list[str]:
    """Every way the reference and the real CLI disagree, one line each (nothing when they agree)."""
    pages = read_reference(reference)
    found: list[str] = []
    real: set[Words] = set()
    for words, command, ctx in walk(cli):
        where = "svc " + " ".join(words) if words else "svc (global options)"
        shown = printed(command, ctx)
        if _is_container(command):
            if shown:
                found.append(f"{where}: a group of commands with parameters of its own: {shown}")
            continue
        real.add(words)
        page = pages.get(words)
        if page is None:
            found.append(f"{where}: not in the reference")
            continue
        if words and page.summary != command.get_short_help_str(limit=10_000):
            found.append(f"{where}: summary {command.get_short_help_str(limit=10_000)!r}, reference {page.summary!r}")
        arguments = [p.names for p in shown if p.positional]
        listed = [p.names for p in page.parameters if p.positional]
        if arguments != listed:
            found.append(f"{where}: arguments {arguments}, reference {listed}")
        options = {p.names[0]: p for p in shown if not p.positional}
        documented = {p.names[0]: p for p in page.parameters if not p.positional}
        for name in sorted(options.keys() - documented.keys()):
            found.append(f"{where}: option {name} is not in the reference")
        for name in sorted(documented.keys() - options.keys()):
            found.append(f"{where}: the reference lists {name}, which the command does not have")
        for name in sorted(options.keys() & documented.keys()):
            if options[name] != documented[name]:
                found.append(f"{where}: option {name} prints {options[name]}, reference {documented[name]}")
    for words in sorted(pages.keys() - real):
        found.append(f"svc {' '.join(words)}: in the reference, not a command")
    return found


def test_the_reference_lists_exactly_the_real_commands_and_options() -> None:
    assert differences(build_cli(), REFERENCE.read_text()) == []


def test_the_reference_covers_the_infrastructure_options() -> None:
    pages = read_reference(REFERENCE.read_text())
    names = {words: {n for p in page.parameters for n in p.names} for words, page in pages.items()}
    assert {"--version", "--repo"} <= names[()]
    assert {"CAPABILITY", "--input", "--json", "--quiet"} <= names[("run",)]
    assert {"--port"} <= names[("serve",)]
    assert {"--port", "--standalone", "--inspect"} <= names[("mcp",)]
    assert {"--check"} <= names[("generate",)]
    helps = {p.names[0]: p.help for p in pages[("run",)].parameters}
    assert helps["--json"] == "print the final ExecutionView as JSON"
    assert {p.names[0]: p.help for p in pages[("health", "live")].parameters} == {
        "--json": "print the answer as JSON (the HTTP body's bytes)"
    }


def test_an_option_added_without_regenerating_is_a_difference() -> None:
    cli = build_cli()
    serve = cli.commands["serve"]
    serve.params.append(click.Option(["--bind"], help="the address to bind"))
    assert differences(cli, REFERENCE.read_text()) == ["svc serve: option --bind is not in the reference"]


def test_an_option_only_the_reference_lists_is_a_difference() -> None:
    text = REFERENCE.read_text()
    row = (
        "| `--check` | boolean |  | re-derive every document, write nothing, list what is stale and exit 10 if any is |"
    )
    assert row in text
    doctored = text.replace(row, row + "\n| `--force` | boolean |  | write even when unchanged |")
    assert differences(build_cli(), doctored) == [
        "svc generate: the reference lists --force, which the command does not have"
    ]
    changed = text.replace(row, row.replace("list what is stale", "list what is new"))
    assert [d.split(" prints ")[0] for d in differences(build_cli(), changed)] == ["svc generate: option --check"]


async def test_each_help_page_prints_what_the_reference_lists() -> None:
    cli = build_cli()
    pages = read_reference(REFERENCE.read_text())
    runner = CliRunner()
    checked = 0
    for words, command, _ctx in walk(cli):
        if _is_container(command):
            continue
        result = await runner.invoke(cli, [*words, "--help"], catch_exceptions=False)
        assert result.exit_code == 0, (words, result.output)
        page = " ".join(result.output.split())
        usage = page.split(" Options: ")[0]
        for param in pages[words].parameters:
            if param.positional:
                assert param.names[0] in usage, (words, param)
            else:
                assert " / ".join(param.names) in page, (words, param)
                assert " ".join(param.help.split()) in page, (words, param)
        checked += 1
    assert checked == len(pages)
