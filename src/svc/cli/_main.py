"""The `svc` command line (asyncclick), built from the description of the command tree the package ships.

Arguments are parsed with no event loop. A capability declared as a read of the checkout is answered right
there (its module imported, the read called, the answer encoded as the executor encodes it); every other
capability command runs on trio through the executor of a one-shot service. Either way its options are decoded
with the same binding rules as HTTP query parameters, so `--json` prints the very bytes the HTTP route answers.
The infrastructure commands (`commands refresh`, `executions follow`, `generate`, `mcp`, `plan repair-ledger`,
`plan reseal`, `run`, `serve`) decode theirs into their options Struct and run on trio
(`svc.cli._infrastructure`). Web and MCP stacks are imported only by the commands that serve them.

Exit codes: 0 success, 1 internal failure, 2 usage, 10 refused or invalid.
"""

from __future__ import annotations

import gc
import os
import re
import sys
from collections.abc import Awaitable, Callable, Coroutine
from contextvars import ContextVar
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import asyncclick as click
import msgspec

from svc._errors import Internal, SvcError
from svc._log import LazyLogger
from svc._version import __version__
from svc.cli._shared import (
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_REFUSED,
    fail,
    repository,
)
from svc.cli._tree import CliDescription, CliEntry, describe_cli, load_description
from svc.surfaces._cli_model import VERSION_OPTION, CliParameter
from svc.surfaces._commands import (
    CommandsRefreshOptions,
    FollowOptions,
    GenerateOptions,
    McpOptions,
    RepairLedgerOptions,
    ResealOptions,
    RunOptions,
    ServeOptions,
)

if TYPE_CHECKING:
    from svc.layer import Repository
    from svc.registry import Capability, Registry
    from svc.runtime import Actor, Executor

__all__ = ["build_cli", "main"]

_log = LazyLogger("svc.cli")

#: Set while `main` parses and answers with no event loop: a command that needs one says so (`_NeedsLoop`).
_DRIVEN: ContextVar[bool] = ContextVar("svc_cli_driven", default=False)


class _NeedsLoop(Exception):
    """Raised out of the loop-less parse by a command that runs on trio: the coroutine function to run there."""

    def __init__(self, run: Callable[[], Awaitable[None]]) -> None:
        super().__init__("this command runs on trio")
        self.run = run


async def _on_trio(run: Callable[[], Awaitable[None]]) -> None:
    """Run `run` on the event loop: this one when there is one (a test's runner), else trio's, after parsing."""
    if _DRIVEN.get():
        raise _NeedsLoop(run)
    await run()


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
    shown = "" if param.default is None else f" (default: {msgspec.json.encode(param.default).decode()})"
    if param.kind == "boolean" and not param.negatable:
        return click.Option([param.name, dest], is_flag=True, default=False, help=param.help)
    if param.kind == "boolean":
        flag = param.name.removeprefix("--")
        return click.Option([f"--{flag}/--no-{flag}", dest], default=None, help=param.help + shown)
    return click.Option([param.name, dest], type=kind, default=None, metavar=param.metavar, help=param.help + shown)


#: Finds the capability a command runs, by its entry (from the registry given, or by importing its module).
_Finder = Callable[[CliEntry], "Capability"]


def _declared(entry: CliEntry) -> Capability:
    """The capability of `entry`, from the one module that declares it."""
    import importlib

    assert entry.declared_in is not None
    declared: tuple[Capability, ...] = importlib.import_module(entry.declared_in).CAPABILITIES
    return next(cap for cap in declared if cap.id == entry.capability)


def _capability_command(entry: CliEntry, find: _Finder) -> click.Command:
    fields = {p.field for p in entry.parameters if p.field is not None}
    summarised = any(p.name == "--all" and p.field is None for p in entry.parameters)
    preset = [(name, _text(value)) for name, value in (entry.preset or {}).items()]

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
        cap = find(entry)
        repo = repository(ctx)
        if entry.direct and not any(values.get(name) is not None for name in entry.live):
            if _DRIVEN.get():
                # The process ends right after this answer (`_exit`): a collection would walk every object the
                # read allocated (a tenth of a first read of 10,000 issues) to free what the exit frees anyway.
                gc.disable()
            _show(cap, repo, _answer_here(cap, repo, items), as_json=as_json, full=full)
            return
        await _on_trio(partial(_answer_on_trio, cap, repo, items, as_json=as_json, full=full))

    kind = click.Group if entry.group else click.Command
    extra: dict[str, Any] = {"invoke_without_command": True} if entry.group else {}
    params = [_click_parameter(p, typed=True) for p in entry.parameters]
    return kind(entry.words[-1], callback=run, params=params, help=entry.help, short_help=entry.short_help, **extra)


def _answer_here(cap: Capability, repo: Repository, items: list[tuple[str, str]]) -> bytes:
    """The answer of a read, derived in this thread with no event loop: the bytes the executor would encode."""
    from svc.registry import decode_text

    assert cap.read is not None
    try:
        return msgspec.json.encode(cap.read(repo, decode_text(cap, items)))
    except SvcError as exc:
        fail(exc)
    except Exception as exc:
        import secrets

        correlation = "c-" + secrets.token_hex(4)
        _log.error("capability %s failed (correlation id %s)", cap.id, correlation, exc_info=exc)
        fail(Internal(f"internal error (correlation id {correlation})"))


async def _answer_on_trio(
    cap: Capability, repo: Repository, items: list[tuple[str, str]], *, as_json: bool, full: bool
) -> None:
    """Answer through the executor of a one-shot service (or the serving server, for a remote capability)."""
    from svc.cli._runs import call_watched
    from svc.host import open_service

    try:
        async with open_service(repo, surface="cli", watch=False) as executor:
            params = executor.decode_text(cap, items)
            if cap.cli_remote or cap.runs_live(params, mcp=False):
                body = await _remote_or_local(executor, cap, params)
            else:
                body = await call_watched(executor, cap, params, actor=_cli_actor())
    except SvcError as exc:
        fail(exc)
    _show(cap, repo, body, as_json=as_json, full=full)


def _show(cap: Capability, repo: Repository, body: bytes, *, as_json: bool, full: bool) -> None:
    """Print an answer (`--json`: the HTTP body's bytes), then exit 10 when its verdict field is false."""
    if as_json:
        sys.stdout.buffer.write(body + b"\n")
        sys.stdout.flush()
    else:
        from svc.cli._absence import absence_note
        from svc.cli._render import render

        view = render(body, capability=cap.id, tty=sys.stdout.isatty(), full=full)
        click.echo(view, nl=False)
        note = absence_note(cap.id, repo, body)
        if note is not None:
            click.echo(f"svc: {note}", err=True)
    if cap.cli_verdict is not None and msgspec.json.decode(body).get(cap.cli_verdict) is False:
        raise SystemExit(EXIT_REFUSED)


def _cli_actor() -> Actor:
    from svc.runtime import Actor

    return Actor(kind="cli", pid=os.getpid())


async def _remote_or_local(executor: Executor, cap: Capability, params: msgspec.Struct) -> bytes:
    """Ask the server serving this checkout; with none, answer from this process and say so."""
    import httpx

    from svc.host import NO_SERVER, call_remote, find_server

    async with httpx.AsyncClient() as client:
        url = await find_server(executor.runtime.repository, client)
        if url is not None:
            if getattr(params, "start", False) and cap.id == "plan.take":
                from svc.cli._take import take_then_start

                return await take_then_start(executor, client, url, cap, params, _cli_actor())
            return await call_remote(client, url, cap, params)
    click.echo(f"svc: {NO_SERVER}; answering from this process", err=True)
    return await executor.call(cap, params, actor=_cli_actor())


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


_Handler = Callable[[click.Context, Any], Awaitable[None]]
_AT_FIELD = re.compile(r" - at `\$\.(?P<field>\w+)`$")


def _infrastructure_command(entry: CliEntry) -> click.Command:
    """A command of the tree that is not a capability's: its values decode into its options Struct."""
    assert entry.options is not None
    options_type, name = _HANDLERS[entry.options]
    params = [_click_parameter(p, typed=True) for p in entry.parameters]

    @click.pass_context
    async def run(ctx: click.Context, /, **values: Any) -> None:
        given = {name: value for name, value in values.items() if value is not None}
        try:
            options = msgspec.convert(given, options_type)
        except msgspec.ValidationError as exc:
            raise _bad_parameter(ctx, exc) from None
        from svc.cli import _infrastructure

        handler: _Handler = getattr(_infrastructure, name)
        await _on_trio(partial(handler, ctx, options))

    return click.Command(entry.words[-1], callback=run, params=params, help=entry.help, short_help=entry.short_help)


def _bad_parameter(ctx: click.Context, exc: msgspec.ValidationError) -> click.BadParameter:
    """A usage error (exit 2) naming the option whose value the options Struct refused."""
    message = str(exc)
    at = _AT_FIELD.search(message)
    param = next((p for p in ctx.command.params if at is not None and p.name == at["field"]), None)
    return click.BadParameter(_AT_FIELD.sub("", message), ctx=ctx, param=param)


#: What each infrastructure command runs (a function of `svc.cli._infrastructure`), by its options Struct's name.
_HANDLERS: dict[str, tuple[type[msgspec.Struct], str]] = {
    tp.__name__: (tp, handler)
    for tp, handler in (
        (CommandsRefreshOptions, "on_commands_refresh"),
        (FollowOptions, "on_follow"),
        (GenerateOptions, "on_generate"),
        (McpOptions, "on_mcp"),
        (RepairLedgerOptions, "on_repair_ledger"),
        (ResealOptions, "on_reseal"),
        (RunOptions, "on_run"),
        (ServeOptions, "on_serve"),
    )
}


def build_cli(registry: Registry | None = None) -> click.Group:
    """The `svc` command group: from the description the package ships, or derived from `registry` when given."""
    if registry is None:
        return _build(load_description(), _declared)
    return _build(describe_cli(registry), lambda entry: registry.by_id[entry.capability or ""])


def _build(description: CliDescription, find: _Finder) -> click.Group:
    async def root(**_: Any) -> None:
        """The options of `svc` itself are read where they are needed (`repository`)."""

    svc = click.Group(
        "svc",
        callback=root,
        help=(
            "svc: the capability registry of a repository's AI layer, over HTTP, MCP and this command line.\n\n"
            "Exit codes: 0 success, 1 internal failure, 2 usage, 10 refused or invalid."
        ),
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    for param in description.options:
        if param.name == VERSION_OPTION.name:
            version = click.version_option(
                __version__, param.name, prog_name="svc", message="%(prog)s %(version)s", help=param.help
            )
            version(svc)
        else:
            svc.params.append(_click_parameter(param, typed=True))
    groups = {tuple(g.words): g for g in description.groups}
    for entry in description.commands:
        parent = svc
        for depth, word in enumerate(entry.words[:-1], start=1):
            found = parent.commands.get(word)
            if not isinstance(found, click.Group):
                about = groups.get(tuple(entry.words[:depth]))
                found = click.Group(
                    word,
                    help=None if about is None else about.help,
                    short_help=None if about is None else about.short_help,
                )
                parent.add_command(found)
            parent = found
        command = _infrastructure_command(entry) if entry.options is not None else _capability_command(entry, find)
        parent.add_command(command, entry.words[-1])
    return svc


def main(argv: list[str] | None = None) -> None:
    """Console entry point (a process that served leaves without the teardown, `_exit`).

    The arguments are parsed with no event loop, and a read of the checkout (`svc plan next`) answers there and
    then, so such a command imports neither trio nor anything it does not read. Any other command runs on trio
    once parsed.
    """
    from svc.cli._exit import leave_if_armed

    try:
        _main(build_cli(), argv)
    except SystemExit as exc:
        leave_if_armed(exc.code)
        raise


def _main(cli: click.Group, argv: list[str] | None) -> None:
    token = _DRIVEN.set(True)
    try:
        _complete(cli.main(args=argv, prog_name="svc"))
    except _NeedsLoop as needed:
        run = needed.run
    except SystemExit:
        # Answered with no event loop (a read, help, a usage error): nothing is left to clean up, and the
        # interpreter's teardown would collect the derived plan object by object. Leave at once (`_exit`).
        from svc.cli._exit import arm

        arm()
        raise
    else:
        return
    finally:
        _DRIVEN.reset(token)
    import trio

    # What click's standalone mode does for a command it runs itself.
    try:
        trio.run(run)
    except click.ClickException as exc:
        exc.show()
        raise SystemExit(exc.exit_code) from None
    except click.exceptions.Exit as exc:
        raise SystemExit(exc.exit_code) from None
    except (EOFError, KeyboardInterrupt, click.Abort):
        click.echo(file=sys.stderr)
        click.echo("Aborted!", err=True)
        raise SystemExit(EXIT_INTERNAL) from None
    raise SystemExit(EXIT_OK)


def _complete(coro: Coroutine[Any, Any, Any]) -> None:
    """Run a coroutine that never waits (click's parse and a loop-less answer) to its end, with no event loop."""
    try:
        coro.send(None)
    except StopIteration:
        return
    coro.close()
    raise RuntimeError("the command line waited with no event loop")
