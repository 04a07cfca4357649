"""The `svc` command line (asyncclick under trio), built from the registry's command tree.

Every capability command decodes its options with the same binding rules as HTTP query parameters and
runs through the executor, so `--json` prints the very bytes the HTTP route answers. Web and MCP stacks
are imported only by the commands that serve them.

Exit codes: 0 success, 1 internal failure, 2 usage, 10 refused or invalid.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

import asyncclick as click
import msgspec
import trio

from svc._errors import InvalidInput, SvcError
from svc._version import __version__
from svc.capabilities import builtin_registry
from svc.cli._render import render
from svc.layer import Repository
from svc.registry import Actor, Capability, CliCommand, CliParameter, Executor, Registry, cli_tree, input_problems

__all__ = ["build_cli", "main"]

EXIT_OK, EXIT_INTERNAL, EXIT_USAGE, EXIT_REFUSED = 0, 1, 2, 10


def _fail(exc: SvcError) -> None:
    click.echo(f"svc: {exc.code}: {exc.message}", err=True)
    raise SystemExit(exc.exit_code)


def _repository(ctx: click.Context) -> Repository:
    start: Path | None = ctx.find_root().params.get("repo")
    return Repository.discover(start)


def _configure_logging(level: int) -> None:
    """Log svc's own records at `level` to stderr, and other libraries' (MCP SDK, hypercorn) from warnings on."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(message)s")
    logging.getLogger("svc").setLevel(level)


def _click_parameter(param: CliParameter) -> click.Parameter:
    kind: Any = click.Choice(param.choices) if param.choices else click.STRING
    if param.positional:
        assert param.field is not None
        return click.Argument([param.field], type=kind, required=True, metavar=param.name)
    if param.field is None:
        return click.Option([param.name, param.name.lstrip("-").replace("-", "_")], is_flag=True, help=param.help)
    if param.kind == "boolean":
        flag = param.name.lstrip("-")
        return click.Option([f"--{flag}/--no-{flag}", param.field], default=None, help=param.help)
    shown = "" if param.default is None else f" (default: {param.default})"
    return click.Option([param.name, param.field], type=kind, default=None, help=param.help + shown)


def _capability_command(registry: Registry, spec: CliCommand, *, group: bool) -> click.Command:
    assert spec.capability is not None
    cap = registry.by_id[spec.capability]
    fields = {p.field for p in spec.parameters if p.field is not None}
    preset = [(name, _text(value)) for name, value in (spec.preset or {}).items()]

    @click.pass_context
    async def run(ctx: click.Context, /, **values: Any) -> None:
        as_json = bool(values.pop("json", False))
        if ctx.invoked_subcommand is not None:
            return
        items = preset + [
            (name, _text(value)) for name, value in values.items() if name in fields and value is not None
        ]
        from svc._service import open_service

        try:
            async with open_service(_repository(ctx), surface="cli", watch=False) as executor:
                params = executor.decode_text(cap, items)
                if cap.cli_remote:
                    body = await _remote_or_local(executor, cap, params)
                else:
                    body = await executor.call(cap, params, actor=_cli_actor())
        except SvcError as exc:
            _fail(exc)
            return
        if as_json:
            sys.stdout.buffer.write(body + b"\n")
            sys.stdout.flush()
        else:
            click.echo(render(body), nl=False)
        if cap.cli_verdict is not None and msgspec.json.decode(body).get(cap.cli_verdict) is False:
            raise SystemExit(EXIT_REFUSED)

    kind = click.Group if group else click.Command
    extra: dict[str, Any] = {"invoke_without_command": True} if group else {}
    return kind(
        spec.words[-1],
        callback=run,
        params=[_click_parameter(p) for p in spec.parameters],
        help=f"{spec.summary}.\n\n{cap.description}\n\nRuns the capability {cap.id}.",
        short_help=spec.summary,
        **extra,
    )


def _cli_actor() -> Actor:
    return Actor(kind="cli", pid=os.getpid())


async def _remote_or_local(executor: Executor, cap: Capability, params: msgspec.Struct) -> bytes:
    """Ask the server serving this checkout; with none, answer from this process and say so."""
    import httpx

    from svc.cli._remote import NO_SERVER, call_remote, find_server

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


@click.command("serve", short_help="Serve the registry over HTTP on 127.0.0.1.")
@click.option("--port", type=int, default=8741, show_default=True, help="the first port to try")
@click.pass_context
async def serve_command(ctx: click.Context, port: int) -> None:
    """Serve the registry over HTTP on 127.0.0.1 (8741 first, else the next free port).

    Logs the bound URL to stderr and prints nothing on stdout. SIGINT or SIGTERM stops it cleanly.
    """
    _configure_logging(logging.INFO)
    from svc.cli._serve import serve

    try:
        await serve(_repository(ctx), port=port)
    except SvcError as exc:
        _fail(exc)
    except OSError as exc:
        click.echo(f"svc: unavailable: cannot serve: {exc.strerror or exc}", err=True)
        raise SystemExit(EXIT_INTERNAL) from None


@click.command("mcp", short_help="Serve MCP on stdio (the first in a checkout also serves HTTP).")
@click.option("--port", type=int, default=8741, show_default=True, help="the first port to try when serving HTTP")
@click.option("--standalone", is_flag=True, help="serve stdio only, from this process: no lease, no HTTP, no bridge")
@click.option("--inspect", is_flag=True, help="print what this invocation would do and why, then exit")
@click.pass_context
async def mcp_command(ctx: click.Context, port: int, standalone: bool, inspect: bool) -> None:
    """Serve MCP on stdio for this checkout.

    The first `svc mcp` of a checkout serves it: it holds the lease, binds HTTP on 127.0.0.1 (8741 first,
    `/mcp` included) beside its stdio session and logs the URL to stderr. A later one bridges its stdio
    session to that server. Nothing but the protocol is written on stdout. Closing stdin ends the session
    (a server stays while HTTP MCP sessions remain); SIGINT or SIGTERM ends it at once, with exit 0.
    """
    _configure_logging(logging.INFO)
    repo = _repository(ctx)
    if inspect:
        import httpx

        from svc.cli._hosting import server_timings
        from svc.cli._mcp import decide

        async with httpx.AsyncClient() as client:
            decision = await decide(repo, client, server_timings(repo))
        click.echo(decision.describe())
        return
    from svc.cli._mcp import run_mcp

    try:
        await run_mcp(repo, port=port, standalone=standalone)
    except SvcError as exc:
        _fail(exc)
    except OSError as exc:
        click.echo(f"svc: unavailable: cannot serve: {exc.strerror or exc}", err=True)
        raise SystemExit(EXIT_INTERNAL) from None


@click.command("generate", short_help="Write (or --check) the documents under docs/generated/.")
@click.option("--check", is_flag=True, help="re-derive every document, write nothing, exit 10 if any is stale")
@click.pass_context
async def generate_command(ctx: click.Context, check: bool) -> None:
    """Write the generated documents under docs/generated/, or compare them with --check."""
    from svc.cli._generate import check_documents, write_documents

    repo = _repository(ctx)
    registry = builtin_registry()
    if check:
        stale = await trio.to_thread.run_sync(check_documents, repo, registry, click.echo)
        raise SystemExit(EXIT_REFUSED if stale else EXIT_OK)
    await trio.to_thread.run_sync(write_documents, repo, registry, click.echo)


@click.command("run", short_help="Run a capability as an execution, reported to the serving server.")
@click.argument("capability")
@click.option("--input", "input_json", default=None, metavar="JSON", help="the capability's input, a JSON object")
@click.option("--json", "as_json", is_flag=True, help="print the final ExecutionView as JSON")
@click.option("--quiet", is_flag=True, help="print only errors")
@click.pass_context
async def run_command(ctx: click.Context, capability: str, input_json: str | None, as_json: bool, quiet: bool) -> None:
    """Run CAPABILITY as an execution in this process (the CLI projection of executions.start).

    When a server serves this checkout, every event is reported to it, so the run shows in
    `executions list` and on /events. Ctrl-C cancels the run; a second Ctrl-C exits at once.
    Exit 0 when it succeeded, 10 when it failed, was cancelled or refused.
    """
    from svc._service import open_service
    from svc.cli._run import run_execution

    try:
        raw = msgspec.json.decode(input_json) if input_json else {}
        async with open_service(_repository(ctx), surface="cli", watch=False) as executor:
            engine = executor.runtime.engine
            assert engine is not None
            cap = engine.find_capability(capability)
            problems = input_problems(cap, raw)
            if problems:
                raise InvalidInput(f"input of {cap.id}: " + "; ".join(problems))
            params = executor.decode_value(cap, raw)
            execution = await run_execution(engine, cap, params, quiet=quiet, show=not (quiet or as_json))
            view = engine.store.view(execution)
    except msgspec.DecodeError as exc:
        _fail(InvalidInput(f"--input is not JSON: {exc}"))
        return
    except SvcError as exc:
        _fail(exc)
        return
    if as_json:
        sys.stdout.buffer.write(msgspec.json.encode(view) + b"\n")
        sys.stdout.flush()
    elif not quiet:
        took = f" in {view.duration_ms} ms" if view.duration_ms is not None else ""
        click.echo(f"{view.capability} {view.state}{took} ({view.id})", err=True)
        if view.error is not None:
            click.echo(f"svc: {view.error.code}: {view.error.message}", err=True)
        if view.output is not None:
            click.echo(render(msgspec.json.encode(view.output)), nl=False)
    if view.state != "succeeded":
        raise SystemExit(EXIT_REFUSED)


_INFRASTRUCTURE: dict[tuple[str, ...], click.Command] = {
    ("run",): run_command,
    ("serve",): serve_command,
    ("mcp",): mcp_command,
    ("generate",): generate_command,
}


def build_cli(registry: Registry | None = None) -> click.Group:
    """The `svc` command group with every command of the registry's command tree."""
    registry = registry or builtin_registry()

    @click.group(context_settings={"help_option_names": ["-h", "--help"]})
    @click.version_option(__version__, "--version", prog_name="svc", message="%(prog)s %(version)s")
    @click.option(
        "--repo",
        type=click.Path(exists=True, file_okay=False, path_type=Path),
        default=None,
        help="the checkout to work on (default: the one containing the working directory)",
    )
    async def svc(repo: Path | None) -> None:
        """svc: the capability registry of a repository's AI layer, over HTTP, MCP and this command line.

        Exit codes: 0 success, 1 internal failure, 2 usage, 10 refused or invalid.
        """

    tree = cli_tree(registry)
    prefixes = {tuple(c.words[:i]) for c in tree for i in range(1, len(c.words))}
    for spec in tree:
        parent = svc
        for word in spec.words[:-1]:
            found = parent.commands.get(word)
            if not isinstance(found, click.Group):
                found = click.Group(word, help=f"{word} commands")
                parent.add_command(found)
            parent = found
        command = _INFRASTRUCTURE.get(tuple(spec.words)) or _capability_command(
            registry, spec, group=tuple(spec.words) in prefixes
        )
        parent.add_command(command, spec.words[-1])
    return svc


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the CLI on trio."""
    build_cli()(args=argv, prog_name="svc", _anyio_backend="trio")
