"""The `svc` command line (asyncclick under trio), built from the registry's command tree.

Every capability command decodes its options with the same binding rules as HTTP query parameters and
runs through the executor, so `--json` prints the very bytes the HTTP route answers. The infrastructure
commands (`commands refresh`, `generate`, `mcp`, `plan repair-ledger`, `run`, `serve`) decode theirs into their
options Struct and call `svc.host`, the generators, the command-graph refresh or the plan's repair. Web and
MCP stacks are imported only by the commands that serve them.

Exit codes: 0 success, 1 internal failure, 2 usage, 10 refused or invalid.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import asyncclick as click
import msgspec
import trio

from svc._errors import SvcError
from svc._version import __version__
from svc.capabilities import builtin_registry
from svc.cli._absence import absence_note
from svc.cli._render import render
from svc.cli._runs import call_watched
from svc.cli._terms import cli_terms
from svc.layer import Repository
from svc.registry import Capability, Registry
from svc.runtime import Actor, Executor
from svc.surfaces import (
    VERSION_OPTION,
    CliCommand,
    CliParameter,
    CommandsRefreshOptions,
    GenerateOptions,
    McpOptions,
    RepairLedgerOptions,
    RunOptions,
    ServeOptions,
    cli_tree,
    global_options,
)
from svc.surfaces._commands import FollowOptions, ResealOptions

__all__ = ["build_cli", "main"]

EXIT_OK, EXIT_INTERNAL, EXIT_USAGE, EXIT_REFUSED = 0, 1, 2, 10


def _fail(exc: SvcError) -> None:
    click.echo(f"svc: {exc.code}: {cli_terms(exc.message, builtin_registry)}", err=True)
    raise SystemExit(exc.exit_code)


def _repository(ctx: click.Context) -> Repository:
    start: Path | None = ctx.find_root().params.get("repo")
    return Repository.discover(start)


def _configure_logging(level: int) -> None:
    """Log svc's own records at `level` to stderr, and other libraries' (MCP SDK, hypercorn) from warnings on."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(message)s")
    logging.getLogger("svc").setLevel(level)


def _click_parameter(param: CliParameter, *, typed: bool) -> click.Parameter:
    """The click parameter of one parameter of the command tree.

    With `typed` (every command: an infrastructure command's values then decode into its options Struct, a
    capability command's go back to text for the executor's binding rules, as an HTTP query string would)
    integers and numbers are parsed by click, so the help says INTEGER or FLOAT and a wrong one is a usage error
    (exit 2); without, every value stays text. An option's default is shown in its help and otherwise left to
    the Struct.
    """
    dest = param.field or param.name.lstrip("-").replace("-", "_")
    kind: Any = click.STRING
    if param.choices:
        kind = click.Choice(param.choices)
    elif param.kind == "directory":
        kind = click.Path(exists=True, file_okay=False, path_type=Path)
    elif typed:
        kind = {"integer": click.INT, "number": click.FLOAT}.get(param.kind, click.STRING)
    if param.positional:
        nargs = -1 if param.multiple else 1
        return click.Argument([dest], type=kind, required=param.required, metavar=param.name, nargs=nargs)
    if param.sets is not None:
        return click.Option([param.name, dest], flag_value=param.sets, default=None, help=param.help)
    if param.multiple:
        return click.Option([param.name, dest], type=kind, multiple=True, metavar=param.metavar, help=param.help)
    shown = "" if param.default is None else f" (default: {json.dumps(param.default)})"
    if param.kind == "boolean" and not param.negatable:
        return click.Option([param.name, dest], is_flag=True, default=False, help=param.help)
    if param.kind == "boolean":
        flag = param.name.removeprefix("--")
        return click.Option([f"--{flag}/--no-{flag}", dest], default=None, help=param.help + shown)
    return click.Option([param.name, dest], type=kind, default=None, metavar=param.metavar, help=param.help + shown)


def _capability_command(registry: Registry, spec: CliCommand, *, group: bool) -> click.Command:
    assert spec.capability is not None
    cap = registry.by_id[spec.capability]
    fields = {p.field for p in spec.parameters if p.field is not None}
    summarised = any(p.name == "--all" and p.field is None for p in spec.parameters)
    preset = [(name, _text(value)) for name, value in (spec.preset or {}).items()]

    @click.pass_context
    async def run(ctx: click.Context, /, **values: Any) -> None:
        as_json = bool(values.pop("json", False))
        full = bool(values.pop("all", False)) if summarised else False
        if ctx.invoked_subcommand is not None:
            return
        items = preset + [
            (name, _text(item))
            for name, value in values.items()
            if name in fields and value is not None
            for item in (value if isinstance(value, tuple) else (value,))
        ]
        from svc.host import open_service

        repo = _repository(ctx)
        try:
            async with open_service(repo, surface="cli", watch=False) as executor:
                params = executor.decode_text(cap, items)
                if cap.cli_remote:
                    body = await _remote_or_local(executor, cap, params)
                else:
                    body = await call_watched(executor, cap, params, actor=_cli_actor())
        except SvcError as exc:
            _fail(exc)
            return
        if as_json:
            sys.stdout.buffer.write(body + b"\n")
            sys.stdout.flush()
        else:
            view = render(body, capability=cap.id, tty=sys.stdout.isatty(), full=full, registry=registry)
            click.echo(view, nl=False)
            note = absence_note(cap.id, repo, body)
            if note is not None:
                click.echo(f"svc: {note}", err=True)
        if cap.cli_verdict is not None and msgspec.json.decode(body).get(cap.cli_verdict) is False:
            raise SystemExit(EXIT_REFUSED)

    kind = click.Group if group else click.Command
    extra: dict[str, Any] = {"invoke_without_command": True} if group else {}
    about = cli_terms(cap.description, lambda: registry)
    text = f"{spec.summary}.\n\n{about}\n\nRuns the capability {cap.id}."
    module = registry.module_by_id.get(spec.words[0]) if group and len(spec.words) == 1 else None
    if module is not None:
        # A group of its own (`svc plan`): what the group is about first, then what it answers alone. Its short
        # help stays the capability's title, as the generated reference lists it.
        alone = f"`svc {spec.words[0]}` alone answers {_lower_first(spec.summary)}: {_lower_first(about)}"
        text = f"{cli_terms(module.description, lambda: registry)}\n\n{alone}\n\nRuns the capability {cap.id}."
    return kind(
        spec.words[-1],
        callback=run,
        params=[_click_parameter(p, typed=True) for p in spec.parameters],
        help=text,
        short_help=spec.summary,
        **extra,
    )


def _lower_first(text: str) -> str:
    """`text` with its first letter in lower case, unless it starts an acronym (`MCP`)."""
    if len(text) > 1 and text[0].isupper() and not text[1].isupper():
        return text[0].lower() + text[1:]
    return text


def _short_help(description: str) -> str:
    """The first sentence of a group's description, up to its first colon: what the group is about."""
    sentence = _SENTENCE_END.split(description, maxsplit=1)[0].rstrip(".")
    head, colon, _ = sentence.partition(": ")
    return (head if colon else sentence) + "."


def _describe_groups(group: click.Group) -> None:
    """Give each group no module describes (`svc mesh review`) the words of its commands, in order."""
    for command in group.commands.values():
        if not isinstance(command, click.Group):
            continue
        _describe_groups(command)
        if command.help is not None:
            continue
        summaries = [(sub.short_help or sub.name or "").rstrip(".") for sub in command.commands.values()]
        parts = [summaries[0], *map(_lower_first, summaries[1:])]
        listed = parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} or {parts[-1]}"
        command.help = f"{listed}."
        command.short_help = f"{listed}."


def _cli_actor() -> Actor:
    return Actor(kind="cli", pid=os.getpid())


async def _remote_or_local(executor: Executor, cap: Capability, params: msgspec.Struct) -> bytes:
    """Ask the server serving this checkout; with none, answer from this process and say so."""
    import httpx

    from svc.host import NO_SERVER, call_remote, find_server

    async with httpx.AsyncClient() as client:
        url = await find_server(executor.runtime.repository, client)
        if url is not None:
            return await call_remote(client, url, cap, params)
    click.echo(f"svc: {NO_SERVER}; answering from this process", err=True)
    return await executor.call(cap, params, actor=_cli_actor())


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


_Handler = Callable[[click.Context, Any], Awaitable[None]]
#: The end of a sentence: a full stop and a space, not the one of an abbreviation (`e.g.`, `i.e.`).
_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)\.\s")
_AT_FIELD = re.compile(r" - at `\$\.(?P<field>\w+)`$")


def _infrastructure_command(spec: CliCommand) -> click.Command:
    """A command of the tree that is not a capability's: its values decode into its options Struct."""
    assert spec.options is not None
    options_type, handler = _HANDLERS[spec.options]
    params = [_click_parameter(p, typed=True) for p in spec.parameters]

    @click.pass_context
    async def run(ctx: click.Context, /, **values: Any) -> None:
        given = {name: value for name, value in values.items() if value is not None}
        try:
            options = msgspec.convert(given, options_type)
        except msgspec.ValidationError as exc:
            raise _bad_parameter(ctx, exc) from None
        await handler(ctx, options)

    projection = f"\n\nThe command-line projection of the capability {spec.capability}." if spec.capability else ""
    return click.Command(
        spec.words[-1],
        callback=run,
        params=params,
        help=f"{spec.summary}\n\n{spec.help}{projection}",
        short_help=spec.summary,
    )


def _bad_parameter(ctx: click.Context, exc: msgspec.ValidationError) -> click.BadParameter:
    """A usage error (exit 2) naming the option whose value the options Struct refused."""
    message = str(exc)
    at = _AT_FIELD.search(message)
    param = next((p for p in ctx.command.params if at is not None and p.name == at["field"]), None)
    return click.BadParameter(_AT_FIELD.sub("", message), ctx=ctx, param=param)


async def _serve(ctx: click.Context, options: ServeOptions) -> None:
    _configure_logging(logging.INFO)
    from svc.cli._exit import arm
    from svc.host import serve

    arm()
    try:
        await serve(_repository(ctx), port=options.port)
    except SvcError as exc:
        _fail(exc)
    except OSError as exc:
        click.echo(f"svc: unavailable: cannot serve: {exc.strerror or exc}", err=True)
        raise SystemExit(EXIT_INTERNAL) from None


async def _mcp(ctx: click.Context, options: McpOptions) -> None:
    _configure_logging(logging.INFO)
    from svc.cli._exit import arm

    arm()
    repo = _repository(ctx)
    if options.inspect:
        import httpx

        from svc.host import decide, server_timings

        async with httpx.AsyncClient() as client:
            decision = await decide(repo, client, server_timings(repo))
        click.echo(decision.describe())
        return
    from svc.host import run_mcp

    try:
        await run_mcp(repo, port=options.port, standalone=options.standalone)
    except SvcError as exc:
        _fail(exc)
    except OSError as exc:
        click.echo(f"svc: unavailable: cannot serve: {exc.strerror or exc}", err=True)
        raise SystemExit(EXIT_INTERNAL) from None


async def _generate(ctx: click.Context, options: GenerateOptions) -> None:
    from svc.cli._generate import check_documents, write_documents

    repo = _repository(ctx)
    registry = builtin_registry()
    if options.check:
        stale = await trio.to_thread.run_sync(check_documents, repo, registry, click.echo)
        raise SystemExit(EXIT_REFUSED if stale else EXIT_OK)
    await trio.to_thread.run_sync(write_documents, repo, registry, click.echo)


async def _commands_refresh(ctx: click.Context, options: CommandsRefreshOptions) -> None:
    from svc.layer._command_sources import CACHE, refresh_command_graph
    from svc.surfaces import executable_commands

    executable = executable_commands(builtin_registry())
    try:
        graph = await trio.to_thread.run_sync(refresh_command_graph, _repository(ctx).root, executable)
    except OSError as exc:
        click.echo(f"svc: unavailable: cannot write {CACHE}: {exc.strerror or exc}", err=True)
        raise SystemExit(EXIT_INTERNAL) from None
    counts = {origin: sum(n.origin == origin for n in graph.commands) for origin in ("executable", "tool", "workflow")}
    click.echo(f"wrote {CACHE} (fingerprint {graph.fingerprint})")
    for origin, count in counts.items():
        click.echo(f"  {origin:<10} {count} command{'' if count == 1 else 's'}")
    for finding in graph.diagnostics:
        click.echo(f"  {finding.severity:<10} {finding.code}: {finding.message}")


async def _repair_ledger(ctx: click.Context, options: RepairLedgerOptions) -> None:
    from svc.layer._required import require_layer
    from svc.plan import repair_ledger

    try:
        repo = _repository(ctx)
        require_layer(repo)
        repair = await trio.to_thread.run_sync(repair_ledger, repo)
    except SvcError as exc:
        _fail(exc)
        return
    for path in repair.removed:
        click.echo(f"removed   {path}")
    for event in repair.appended:
        click.echo(f"appended  {event}")
    if not repair.removed and not repair.appended:
        click.echo("repair-ledger: the ledger agrees with the records; nothing to do")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


async def _reseal(ctx: click.Context, options: ResealOptions) -> None:
    from svc.plan import known_domains, reseal

    if options.domain is None:
        known = ", ".join(known_domains()) or "none"
        raise click.UsageError(
            f"Missing option '--domain': the seal domain the stamps were sealed under (svc recognises: {known})",
            ctx=ctx,
        )
    run = partial(reseal, _repository(ctx), options.domain, write=options.write, by=f"svc/{__version__}")
    try:
        done = await trio.to_thread.run_sync(run)
    except SvcError as exc:
        _fail(exc)
        return
    for path in done.removed:
        click.echo(f"removed        {path}")
    for event in done.appended:
        click.echo(f"appended       {event}")
    verb = "re-sealed    " if done.written else "would re-seal"
    for stamp in done.resealed:
        click.echo(f"{verb}  {stamp.describe()}  ({stamp.path})")
    for stamp in done.refused:
        click.echo(f"refused        {stamp.describe()}: {stamp.reason}")
    stamps = _count(len(done.resealed), "stamp")
    issues = _count(len({s.issue for s in done.resealed}), "issue")
    if not done.resealed:
        click.echo(f"reseal: no stamp is sealed under {done.domain}; nothing to do")
    elif done.written:
        click.echo(f"reseal: {stamps} of {issues} re-sealed with svc's seal, one ledger event each")
    else:
        click.echo(
            f"reseal: {stamps} of {issues} are sealed under {done.domain}; nothing was written "
            "(run again with --write to re-seal them)"
        )
    if done.refused:
        click.echo(
            f"reseal: {_count(len(done.refused), 'stamp')} refused: a seal that proves under neither "
            f"{done.domain} nor svc's domain is left as it is"
        )
    if done.unsealed:
        click.echo(
            f"reseal: {_count(done.unsealed, 'unproven stamp')} without a seal left as written "
            "(only `svc plan start|verify|done` writes a proven stamp)"
        )
    if done.refused:
        raise SystemExit(EXIT_REFUSED)


async def _run(ctx: click.Context, options: RunOptions) -> None:
    from svc.cli._runs import run_command

    try:
        code = await run_command(_repository(ctx), options)
    except SvcError as exc:
        _fail(exc)
        return
    if code != EXIT_OK:
        raise SystemExit(code)


async def _follow(ctx: click.Context, options: FollowOptions) -> None:
    from svc.cli._runs import follow_command

    try:
        code = await follow_command(_repository(ctx), options)
    except SvcError as exc:
        _fail(exc)
        return
    if code != EXIT_OK:
        raise SystemExit(code)


# What each infrastructure command does, by the name of its options Struct (`CliCommand.options`).
_HANDLERS: dict[str, tuple[type[msgspec.Struct], _Handler]] = {
    tp.__name__: (tp, handler)
    for tp, handler in (
        (CommandsRefreshOptions, _commands_refresh),
        (FollowOptions, _follow),
        (GenerateOptions, _generate),
        (McpOptions, _mcp),
        (RepairLedgerOptions, _repair_ledger),
        (ResealOptions, _reseal),
        (RunOptions, _run),
        (ServeOptions, _serve),
    )
}


def build_cli(registry: Registry | None = None) -> click.Group:
    """The `svc` command group with every command of the registry's command tree."""
    registry = registry or builtin_registry()

    async def root(**_: Any) -> None:
        """The options of `svc` itself are read where they are needed (`_repository`)."""

    svc = click.Group(
        "svc",
        callback=root,
        help=(
            "svc: the capability registry of a repository's AI layer, over HTTP, MCP and this command line.\n\n"
            "Exit codes: 0 success, 1 internal failure, 2 usage, 10 refused or invalid."
        ),
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    for param in global_options():
        if param.name == VERSION_OPTION.name:
            version = click.version_option(
                __version__, param.name, prog_name="svc", message="%(prog)s %(version)s", help=param.help
            )
            version(svc)
        else:
            svc.params.append(_click_parameter(param, typed=True))

    tree = cli_tree(registry)
    prefixes = {tuple(c.words[:i]) for c in tree for i in range(1, len(c.words))}
    for spec in tree:
        parent = svc
        for word in spec.words[:-1]:
            found = parent.commands.get(word)
            if not isinstance(found, click.Group):
                module = registry.module_by_id.get(word) if parent is svc else None
                about = None if module is None else cli_terms(module.description, lambda: registry)
                found = click.Group(word, help=about, short_help=None if about is None else _short_help(about))
                parent.add_command(found)
            parent = found
        if spec.options is not None:
            command = _infrastructure_command(spec)
        else:
            command = _capability_command(registry, spec, group=tuple(spec.words) in prefixes)
        parent.add_command(command, spec.words[-1])
    _describe_groups(svc)
    return svc


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the CLI on trio (a process that served leaves without the teardown, `_exit`)."""
    from svc.cli._exit import leave_if_armed

    try:
        build_cli()(args=argv, prog_name="svc", _anyio_backend="trio")
    except SystemExit as exc:
        leave_if_armed(exc.code)
        raise
