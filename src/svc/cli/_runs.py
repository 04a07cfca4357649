"""`svc run`, `svc run --server`, `svc executions follow`, and capability commands that report progress, live.

`svc run CAPABILITY` runs the execution in this process (`svc.host.run_execution`) and shows it from its own
store. `svc run --server CAPABILITY` starts it in the server serving the checkout (`executions.start` over
HTTP, the server found through the lease) and follows it there, as `svc executions follow ID` follows any
execution of that server (`_follow`). All three end alike: the summary line on stderr and the capability's
answer on stdout, or, with `--json`, the final ExecutionView on stdout; exit 0 when the execution succeeded and
10 when it failed or was cancelled.
"""

from __future__ import annotations

import contextlib
import sys
from functools import partial
from typing import TYPE_CHECKING, Any

import msgspec

from svc._errors import InvalidInput, Unavailable
from svc.capabilities import builtin_registry
from svc.cli._render import render
from svc.cli._shared import EXIT_OK, EXIT_REFUSED
from svc.cli._watch import Watch, show_local
from svc.registry import input_problems
from svc.runtime import EventReporter

if TYPE_CHECKING:
    from svc.layer import Repository
    from svc.nursery import ExecutionView
    from svc.registry import Capability
    from svc.runtime import Actor, Executor
    from svc.surfaces import RunOptions
    from svc.surfaces._commands import FollowOptions

__all__ = ["call_watched", "follow_command", "run_command"]

#: The exit code when a second Ctrl-C stopped following (the shell's code of SIGINT).
EXIT_STOPPED = 130


def _input(text: str | None) -> dict[str, Any]:
    """The `--input` JSON object ({} when omitted).

    Raises:
        InvalidInput: not JSON, or not an object.
    """
    if not text:
        return {}
    try:
        value = msgspec.json.decode(text)
    except msgspec.DecodeError as exc:
        raise InvalidInput(f"--input is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise InvalidInput("--input must be a JSON object")
    return value


def _watch(options: RunOptions | FollowOptions) -> Watch | None:
    return None if options.quiet or options.json else Watch()


def _end(view: ExecutionView, watch: Watch | None, *, as_json: bool) -> int:
    """Print how the execution ended; its exit code."""
    if as_json:
        sys.stdout.buffer.write(msgspec.json.encode(view) + b"\n")
        sys.stdout.flush()
    elif watch is not None:
        watch.finish(view)
        if view.output is not None:
            text = render(msgspec.json.encode(view.output), capability=view.capability, tty=sys.stdout.isatty())
            sys.stdout.write(text)
            sys.stdout.flush()
    return EXIT_OK if view.state == "succeeded" else EXIT_REFUSED


async def run_command(repo: Repository, options: RunOptions) -> int:
    """`svc run`: run the execution here (or, with `--server`, in the serving server) and show it; its exit code.

    Raises:
        SvcError: the run could not start (bad input, unknown or unexecutable capability, no server for
            `--server`), or the server failed while it was followed.
    """
    raw = _input(options.input)
    if options.server:
        return await _run_on_server(repo, options, raw)
    from svc.host import open_service, run_execution
    from svc.nursery import Engine

    watch = _watch(options)
    async with open_service(repo, surface="cli", watch=False) as executor:
        engine = executor.components.get(Engine)
        cap = engine.find_capability(options.capability)
        problems = input_problems(cap, raw)
        if problems:
            raise InvalidInput(f"input of {cap.id}: " + "; ".join(problems))
        params = executor.decode_value(cap, raw)
        with watch if watch is not None else contextlib.nullcontext():
            execution = await run_execution(
                engine,
                cap,
                params,
                quiet=options.quiet,
                view=partial(show_local, watch=watch) if watch is not None else None,
                before_exit=watch.stop if watch is not None else None,
            )
        view = engine.store.view(execution)
    return _end(view, watch, as_json=options.json)


async def _run_on_server(repo: Repository, options: RunOptions, raw: dict[str, Any]) -> int:
    import httpx

    from svc.cli._follow import follow_remote
    from svc.host import NO_SERVER, call_remote, find_server
    from svc.nursery import ExecutionView

    watch = _watch(options)
    async with httpx.AsyncClient() as client:
        url = await find_server(repo, client)
        if url is None:
            raise Unavailable(f"{NO_SERVER}; `svc run --server` starts the execution there")
        start = builtin_registry().by_id["executions.start"]
        params = msgspec.convert({"capability": options.capability, "input": raw}, start.input)
        body = await call_remote(client, url, start, params)
        started = msgspec.json.decode(body, type=ExecutionView)
        with watch if watch is not None else contextlib.nullcontext():
            view = await follow_remote(client, url, started.id, watch)
    return EXIT_STOPPED if view is None else _end(view, watch, as_json=options.json)


async def follow_command(repo: Repository, options: FollowOptions) -> int:
    """`svc executions follow ID`: follow an execution of the serving server until it ends; the exit code.

    Raises:
        SvcError: a malformed id, no server, an execution the server does not know, or a lost server.
    """
    import httpx

    from svc.cli._follow import follow_remote
    from svc.host import NO_SERVER, find_server
    from svc.nursery import check_execution_id

    check_execution_id(options.id)
    watch = _watch(options)
    async with httpx.AsyncClient() as client:
        url = await find_server(repo, client)
        if url is None:
            raise Unavailable(f"{NO_SERVER}; executions live in the server that runs them")
        with watch if watch is not None else contextlib.nullcontext():
            view = await follow_remote(client, url, options.id, watch)
    return EXIT_STOPPED if view is None else _end(view, watch, as_json=options.json)


class _WatchReporter(EventReporter):
    """The progress of a capability command shown on the terminal (the handler's context reports to it).

    Diagnostics are left to the answer, which carries them.
    """

    def __init__(self, watch: Watch) -> None:
        super().__init__()
        self.watch = watch

    def emit(self, kind: str, data: dict[str, Any]) -> None:
        """Draw one event (a diagnostic is left to the answer)."""
        if kind != "execution.diagnostic":
            self.watch.show({"type": kind, "data": data})


async def call_watched(executor: Executor, cap: Capability, params: msgspec.Struct, *, actor: Actor) -> bytes:
    """Answer `cap` here; on a terminal, what its handler reports while it runs is drawn live on stderr.

    The live display starts at the handler's first report, so a capability that reports nothing draws
    nothing (and rich is not imported). On a terminal the call goes around the result cache (a one-shot
    process starts with it empty) so that the handler runs with the terminal as its reporter.
    """
    if not sys.stderr.isatty():
        return await executor.call(cap, params, actor=actor)
    with Watch(lazy=True) as watch:
        value = await executor.invoke(cap, params, executor.context(actor, _WatchReporter(watch)))
    return executor.encode(value)
