"""What the infrastructure commands do: serve, MCP, generate, refresh the command graph, repair, reseal, run, follow.

Each takes the click context and its decoded options Struct, and runs on trio (`_main` imports this module
when one of them runs, so a query command never loads it).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from functools import partial

import asyncclick as click
import trio

from svc._errors import SvcError
from svc._version import __version__
from svc.cli._shared import (
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_REFUSED,
    builtin_registry,
    configure_logging,
    fail,
    repository,
)
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

__all__ = [
    "on_commands_refresh",
    "on_follow",
    "on_generate",
    "on_mcp",
    "on_repair_ledger",
    "on_reseal",
    "on_run",
    "on_serve",
]


async def on_serve(ctx: click.Context, options: ServeOptions) -> None:
    configure_logging(logging.INFO)
    from svc.cli._exit import arm
    from svc.plan._prime import priming

    arm()
    try:
        repo = repository(ctx)
        # Before the web stack is imported: a large plan is read on the other processor meanwhile.
        with priming(repo):
            from svc.host import serve

            await serve(repo, port=options.port)
    except SvcError as exc:
        fail(exc)
    except OSError as exc:
        click.echo(f"svc: unavailable: cannot serve: {exc.strerror or exc}", err=True)
        raise SystemExit(EXIT_INTERNAL) from None


async def on_mcp(ctx: click.Context, options: McpOptions) -> None:
    configure_logging(logging.INFO)
    from svc.cli._exit import arm

    arm()
    from svc.surfaces import mcp_catalog
    from svc.surfaces._mcp_catalog import UnknownToolSet, tool_set

    try:
        tools = tool_set(mcp_catalog(builtin_registry()), options.tools)
    except UnknownToolSet as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param_hint="'--tools'") from None
    repo = repository(ctx)
    if options.inspect:
        import httpx

        from svc.host import decide, server_timings

        async with httpx.AsyncClient() as client:
            decision = await decide(repo, client, server_timings(repo))
        click.echo(decision.describe())
        return
    from svc.host import run_mcp

    try:
        await run_mcp(repo, port=options.port, standalone=options.standalone, tools=tools)
    except SvcError as exc:
        fail(exc)
    except OSError as exc:
        click.echo(f"svc: unavailable: cannot serve: {exc.strerror or exc}", err=True)
        raise SystemExit(EXIT_INTERNAL) from None


async def on_generate(ctx: click.Context, options: GenerateOptions) -> None:
    from svc.cli._generate import check_documents, write_documents

    repo = repository(ctx)
    registry = builtin_registry()
    if options.check:
        stale = await trio.to_thread.run_sync(check_documents, repo, registry, click.echo)
        raise SystemExit(EXIT_REFUSED if stale else EXIT_OK)
    await trio.to_thread.run_sync(write_documents, repo, registry, click.echo)


async def on_commands_refresh(ctx: click.Context, options: CommandsRefreshOptions) -> None:
    from svc.layer._command_sources import CACHE, refresh_command_graph
    from svc.surfaces import executable_commands

    executable = executable_commands(builtin_registry())
    try:
        graph = await trio.to_thread.run_sync(refresh_command_graph, repository(ctx).root, executable)
    except OSError as exc:
        click.echo(f"svc: unavailable: cannot write {CACHE}: {exc.strerror or exc}", err=True)
        raise SystemExit(EXIT_INTERNAL) from None
    counts = {origin: sum(n.origin == origin for n in graph.commands) for origin in ("executable", "tool", "workflow")}
    click.echo(f"wrote {CACHE} (fingerprint {graph.fingerprint})")
    for origin, count in counts.items():
        click.echo(f"  {origin:<10} {count} command{'' if count == 1 else 's'}")
    for finding in graph.diagnostics:
        click.echo(f"  {finding.severity:<10} {finding.code}: {finding.message}")


async def on_repair_ledger(ctx: click.Context, options: RepairLedgerOptions) -> None:
    from svc.layer._required import require_layer
    from svc.plan import repair_ledger

    try:
        repo = repository(ctx)
        require_layer(repo)
        repair = await trio.to_thread.run_sync(repair_ledger, repo)
    except SvcError as exc:
        fail(exc)
    for path in repair.removed:
        click.echo(f"removed   {path}")
    for event in repair.appended:
        click.echo(f"appended  {event}")
    if not repair.removed and not repair.appended:
        click.echo("repair-ledger: the ledger agrees with the records; nothing to do")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


async def on_reseal(ctx: click.Context, options: ResealOptions) -> None:
    from svc.plan import known_domains, reseal

    if options.domain is None:
        known = ", ".join(known_domains()) or "none"
        raise click.UsageError(
            f"Missing option '--domain': the seal domain the stamps were sealed under (svc recognises: {known})",
            ctx=ctx,
        )
    run = partial(reseal, repository(ctx), options.domain, write=options.write, by=f"svc/{__version__}")
    try:
        done = await trio.to_thread.run_sync(run)
    except SvcError as exc:
        fail(exc)
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


async def on_run(ctx: click.Context, options: RunOptions) -> None:
    from svc.cli._runs import run_command

    await _exit_with(lambda: run_command(repository(ctx), options))


async def on_follow(ctx: click.Context, options: FollowOptions) -> None:
    from svc.cli._runs import follow_command

    await _exit_with(lambda: follow_command(repository(ctx), options))


async def _exit_with(command: Callable[[], Awaitable[int]]) -> None:
    """Run a command that answers its exit code and leave with that code (a refusal: one line, its own code)."""
    try:
        code = await command()
    except SvcError as exc:
        fail(exc)
    if code != EXIT_OK:
        raise SystemExit(code)
