"""`svc mcp`: one MCP session on stdio, answered by the one process that serves the checkout.

Election (`elect`): the first `svc mcp` of a checkout creates the lease and becomes its server: it loads the
layer, binds HTTP beside its stdio session (8741 first, `/mcp` included), publishes the URL in the lease and
logs it to stderr. A later `svc mcp` finds the lease, probes the URL and becomes a bridge: its stdio session
is answered by its own SDK `Server` whose requests are forwarded to the server's `/mcp` (one handshake-era
session, see `svc.api.RemoteBackend`), so every session shares one registry, executor and cache. Tools that
write the repository never travel over HTTP: a bridge runs them in its own process, as the command line does.

A lease is taken over when its pid is dead, its URL stays null past the bind grace, its URL does not answer
as svc for this checkout, the holder runs a replaced executable, or an older version. When the server a bridge
uses goes away, the bridge elects again on the next request (or the next keep-alive ping): it takes the lease
over and serves from its own process, or bridges to whoever won. Its stdio client notices nothing.

A server started by `svc mcp` ends when its stdio session has closed and no HTTP MCP session remains (checked
every 500 ms), or at once on SIGINT, SIGTERM or SIGHUP; the lease is removed on the way out. Exit code 0.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal, TypeVar

import httpx
import mcp_types as types
import msgspec
import trio
from packaging.version import InvalidVersion, Version

from svc._errors import Unavailable
from svc._version import __version__
from svc.api import (
    Backend,
    BackendLost,
    LocalBackend,
    RemoteBackend,
    build_server,
    claim_stdio,
    new_peer,
    serve_stdio,
)
from svc.capabilities import builtin_registry
from svc.host._hosting import Timings, executable, server_timings, watch_signals
from svc.host._remote import probe_server
from svc.host._serve import serve_checkout
from svc.host._service import open_service
from svc.layer import (
    Executable,
    Lease,
    LeaseHeld,
    Repository,
    acquire_lease,
    discard_lease,
    pid_alive,
    read_lease,
)
from svc.runtime import Actor, Executor, McpAttachments, utc_now
from svc.surfaces import mcp_catalog
from svc.surfaces._mcp_catalog import ALL_TOOLS, SERVED_TOOL_SET, ToolSet

__all__ = ["Decision", "Host", "Relay", "decide", "elect", "older", "run_mcp"]

_log = logging.getLogger("svc.mcp")
_T = TypeVar("_T")

LINGER_POLL_SECONDS = 0.5
BINDING_POLL_SECONDS = 0.1


@dataclass(frozen=True, slots=True)
class Decision:
    """What this `svc mcp` does.

    It serves the checkout, bridges to its server, waits for a holder that is binding, or takes a stale
    lease over.
    """

    role: Literal["serve", "bridge", "wait", "take_over"]
    reason: str
    url: str | None = None
    holder: Lease | None = None

    def describe(self) -> str:
        """One line for `svc mcp --inspect`."""
        where = f" {self.url}" if self.role == "bridge" else ""
        return f"{self.role.replace('_', ' ')}{where}: {self.reason}"


def older(theirs: str, ours: str) -> bool:
    """Whether version `theirs` is older than `ours` (PEP 440: `0.1.0rc1` < `0.1.0` < `0.1.1.dev1`).

    A version that does not parse is never taken for older: the lease is not taken over on a guess.
    """
    try:
        return Version(theirs) < Version(ours)
    except InvalidVersion:
        return False


def _age_seconds(lease: Lease) -> float:
    if lease.started_at is None:
        return float("inf")
    try:
        started = dt.datetime.strptime(lease.started_at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
    except ValueError:
        return float("inf")
    return (dt.datetime.now(dt.UTC) - started).total_seconds()


def _replaced(lease: Lease, ours: Executable) -> bool:
    theirs = lease.executable
    return theirs is not None and theirs.path == ours.path and (theirs.mtime, theirs.size) != (ours.mtime, ours.size)


async def decide(repo: Repository, client: httpx.AsyncClient, timings: Timings) -> Decision:
    """Read the lease and judge its holder, without taking anything.

    This is `svc mcp --inspect`, and each round of an election.
    """
    lease = read_lease(repo)
    if lease is None:
        if (repo.local_state / "mcp" / "server.json").exists():
            return Decision("take_over", "the lease does not parse")
        return Decision("serve", "no process serves this checkout")
    who = f"pid {lease.pid}"
    if not pid_alive(lease.pid):
        return Decision("take_over", f"{who} holds the lease but is not running", holder=lease)
    if _replaced(lease, executable()):
        return Decision("take_over", f"{who} runs an svc that has since been replaced on disk", holder=lease)
    if lease.version is not None and older(lease.version, __version__):
        return Decision("take_over", f"{who} runs svc {lease.version}, older than {__version__}", holder=lease)
    if lease.url is None:
        age = _age_seconds(lease)
        if age > timings.bind_grace:
            return Decision("take_over", f"{who} has not bound a port in {timings.bind_grace:g} s", holder=lease)
        return Decision("wait", f"{who} is binding its port", holder=lease)
    if await probe_server(client, lease.url, repo, seconds=timings.probe):
        return Decision("bridge", f"{who} serves this checkout", url=lease.url, holder=lease)
    return Decision("take_over", f"{lease.url} does not answer as svc for this checkout", holder=lease)


async def elect(repo: Repository, client: httpx.AsyncClient, timings: Timings) -> tuple[Lease | None, str | None]:
    """Hold the lease `(lease, None)`, or name the live server to bridge to `(None, url)`.

    Raises:
        Unavailable: no decision within the join deadline plus the bind grace (a holder kept binding).
    """
    ours = executable()
    with trio.move_on_after(timings.join + timings.bind_grace):
        while True:
            try:
                lease = await trio.to_thread.run_sync(
                    partial(acquire_lease, repo, version=__version__, executable=ours, started_at=utc_now())
                )
            except LeaseHeld:
                pass
            else:
                return lease, None
            decision = await decide(repo, client, timings)
            if decision.role == "bridge":
                return None, decision.url
            if decision.role == "take_over" and decision.holder is not None:
                _log.info("svc: taking the lease over: %s", decision.reason)
                await trio.to_thread.run_sync(discard_lease, repo, decision.holder.token)
                continue
            await trio.sleep(BINDING_POLL_SECONDS)
    holder = read_lease(repo)
    who = f"pid {holder.pid}" if holder is not None else "another process"
    raise Unavailable(f"{who} holds this checkout's lease and has not started serving; try again, or stop it")


#: The tool whose `start` the bridge runs itself (`plan.take`).
_TAKE = "svc_plan_take"


class Relay:
    """The backend of a bridged stdio session: the serving process's `/mcp`, re-elected when it goes away.

    Repository writers run on this process's own executor, never over HTTP.
    """

    def __init__(self, host: Host, current: Backend) -> None:
        self.host = host
        self.current = current
        self.writers = frozenset(mcp_catalog(builtin_registry()).writers)

    async def _relay(self, op: Callable[[Backend], Awaitable[_T]]) -> _T:
        backend = self.current
        try:
            return await op(backend)
        except BackendLost as exc:
            _log.info("svc: %s; electing again", exc)
            return await op(await self.host.reelect(backend))

    async def list_tools(self) -> types.ListToolsResult:
        """The serving process's tools."""
        return await self._relay(lambda b: b.list_tools())

    async def call_tool(self, name: str, arguments: dict[str, Any] | None, *, actor: Actor) -> types.CallToolResult:
        """Forward the call; a repository writer runs here instead, and so does the start of a take."""
        if name in self.writers and isinstance(self.current, RemoteBackend):
            local = await self.host.writer_backend()
            return await local.call_tool(name, arguments, actor=actor)
        if name == _TAKE and (arguments or {}).get("start") is True and isinstance(self.current, RemoteBackend):
            return await self._take_then_start(arguments or {}, actor)
        return await self._relay(lambda b: b.call_tool(name, arguments, actor=actor))

    async def _take_then_start(self, arguments: dict[str, Any], actor: Actor) -> types.CallToolResult:
        """`svc_plan_take` with `start`: the claim on the serving process, the start move here.

        The serving process takes without starting (the journal is its state, and `/mcp` never writes the
        repository); this process then moves the issue to ACTIVE. A refused move releases a claim the take wrote
        and answers the move's refusal.
        """
        from svc.plan import PlanTake, PlanTransitionResult

        taken = await self._relay(lambda b: b.call_tool(_TAKE, {**arguments, "start": False}, actor=actor))
        if taken.is_error or taken.structured_content is None or not taken.structured_content.get("taken"):
            return taken
        answer = msgspec.convert(taken.structured_content, PlanTake)
        assert answer.issue is not None
        local = await self.host.writer_backend()
        move = {"issue": answer.issue.id, "transition": "start"}

        async def release() -> None:
            if not answer.existing and answer.claim is not None:
                await self._relay(lambda b: b.call_tool("svc_mesh_release", {"claim": answer.claim}, actor=actor))

        try:
            started = await local.call_tool("svc_plan_transition", move, actor=actor)
        except Exception:
            await release()
            raise
        if started.is_error or started.structured_content is None:
            await release()
            return started
        result = msgspec.convert(started.structured_content, PlanTransitionResult)
        body = msgspec.json.encode(msgspec.structs.replace(answer, started=result))
        return types.CallToolResult(
            content=[types.TextContent(text=body.decode())], structured_content=msgspec.json.decode(body)
        )

    async def list_resources(self) -> types.ListResourcesResult:
        """The serving process's resources."""
        return await self._relay(lambda b: b.list_resources())

    async def read_resource(self, uri: str, *, actor: Actor) -> types.ReadResourceResult:
        """Read on the serving process."""
        return await self._relay(lambda b: b.read_resource(uri, actor=actor))

    async def instructions(self, peer: str | None) -> str:
        """The serving process's instructions for this session."""
        return await self.current.instructions(peer)


class Host:
    """One `svc mcp` process: what answers its stdio session, and the server it may run."""

    def __init__(
        self, repo: Repository, *, port: int, timings: Timings, nursery: trio.Nursery, stop: trio.Event
    ) -> None:
        self.repo = repo
        self.port = port
        self.timings = timings
        self.nursery = nursery
        self.stop = stop
        self.peer = new_peer("stdio")
        self.executor: Executor | None = None
        self.remote: RemoteBackend | None = None
        self.relay: Relay | None = None
        self._writer: LocalBackend | None = None
        self._lock = trio.Lock()
        self._writer_lock = trio.Lock()
        self._http = httpx.AsyncClient()
        self._stdio_open = True

    @property
    def attachments(self) -> McpAttachments | None:
        """The session counts of this process's runtime, when it serves."""
        return self.executor.runtime.mcp if self.executor is not None else None

    def _serving(self, executor: Executor) -> None:
        """This process serves the checkout now; its own stdio session counts as attached while open."""
        self.executor = executor
        if self._stdio_open:
            executor.runtime.mcp.attach("stdio", self.peer)

    def stdio_closed(self) -> None:
        """The stdio session ended."""
        if self._stdio_open and self.executor is not None:
            self.executor.runtime.mcp.detach("stdio", self.peer)
        self._stdio_open = False

    async def start(self, *, standalone: bool) -> Backend:
        """Decide what answers the stdio session, and start it."""
        if standalone:
            return LocalBackend(await self.nursery.start(self._serve, None, False))
        if not self.repo.has_layer:
            _log.info("svc: this checkout has no .ai/ folder; serving without a lease")
            return LocalBackend(await self.nursery.start(self._serve, None, True))
        lease, url = await elect(self.repo, self._http, self.timings)
        if url is None:
            return LocalBackend(await self.nursery.start(self._serve, lease, True))
        remote = await self._bridge(url)
        self.relay = Relay(self, remote)
        return self.relay

    async def _bridge(self, url: str) -> RemoteBackend:
        remote = RemoteBackend(url, self.peer, probe_seconds=self.timings.probe)
        await self.nursery.start(remote.run)
        self.remote = remote
        self.nursery.start_soon(self._watch, remote)
        _log.info("svc: bridging this stdio session to %s/mcp (that process serves this checkout)", url)
        return remote

    async def _watch(self, remote: RemoteBackend) -> None:
        """Elect again as soon as a bridged server is noticed gone, not only at the next request."""
        await remote.lost.wait()
        if not self.stop.is_set() and self.relay is not None and self.relay.current is remote:
            with trio.move_on_after(self.timings.join + self.timings.bind_grace):
                await self.reelect(remote)

    async def reelect(self, lost: Backend) -> Backend:
        """Replace a lost backend: serve the checkout here, or bridge to whoever serves it now."""
        relay = self.relay
        assert relay is not None
        async with self._lock:
            if relay.current is not lost:
                return relay.current
            if isinstance(lost, RemoteBackend):
                lost.close()
            while True:
                lease, url = await elect(self.repo, self._http, self.timings)
                if url is None:
                    backend: Backend = LocalBackend(await self.nursery.start(self._serve, lease, True))
                    break
                try:
                    backend = await self._bridge(url)
                    break
                except BackendLost as exc:
                    _log.info("svc: %s", exc)
                    await trio.sleep(BINDING_POLL_SECONDS)
            relay.current = backend
            return backend

    async def writer_backend(self) -> LocalBackend:
        """This process's own executor, for tools that write the repository (opened on first use)."""
        async with self._writer_lock:
            if self._writer is None:
                executor = self.executor or await self.nursery.start(self._local_service)
                self._writer = LocalBackend(executor)
            return self._writer

    async def _local_service(self, *, task_status: trio.TaskStatus[Executor] = trio.TASK_STATUS_IGNORED) -> None:
        async with open_service(self.repo, surface="mcp", watch=False) as executor:
            task_status.started(executor)
            await self.stop.wait()

    async def _serve(
        self, lease: Lease | None, http: bool, *, task_status: trio.TaskStatus[Executor] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Serve the checkout from this process until `stop`: the executor, and HTTP unless standalone."""
        executor: Executor = await self.nursery.start(
            partial(
                serve_checkout,
                self.repo,
                surface="mcp",
                port=self.port,
                lease=lease,
                http=http,
                stop=self.stop,
                announce=False,
            )
        )
        self._serving(executor)
        url = executor.runtime.server.url
        if url is not None:
            catalog = mcp_catalog(executor.runtime.registry)
            # The one line naming the URL (serve_checkout did not announce it), once the lease holds it.
            _log.info(
                "svc: serving %s — MCP on stdio and on HTTP at /mcp, %d tools, %d query resources",
                url,
                len(catalog.tools),
                len(catalog.resources),
            )
        task_status.started(executor)

    async def linger(self) -> None:
        """After the stdio session closed: keep serving while HTTP MCP sessions remain attached."""
        attachments = self.attachments
        if attachments is None:
            return
        while True:
            if self.stop.is_set() or attachments.bridged + attachments.http == 0:
                return
            await trio.sleep(LINGER_POLL_SECONDS)

    async def aclose(self) -> None:
        """End the bridge session, if any, and the probe client."""
        if self.remote is not None:
            self.remote.close()
        await self._http.aclose()


async def run_mcp(repo: Repository, *, port: int, standalone: bool, tools: ToolSet | None = None) -> None:
    """Serve one MCP session on this process's stdin and stdout (see the module docstring).

    `tools` is the tool set of the stdio session (`svc mcp --tools`), applied whether this process serves
    the checkout or bridges to the process that does; `mcp.projection` answered by this process reports it.
    `/mcp` serves every tool: each bridge applies its own session's set.

    Raises:
        Unavailable: no decision could be reached (a lease holder kept binding past the deadlines).
        OSError: no port could be bound.
    """
    served = SERVED_TOOL_SET.set(tools)
    try:
        await _run_mcp(repo, port=port, standalone=standalone, tools=tools)
    except BaseExceptionGroup as group:
        raise _single(group) from None
    finally:
        SERVED_TOOL_SET.reset(served)


def _single(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one error a failed run ended with (a group of several stays a group)."""
    leaves: list[BaseException] = []

    def walk(exc: BaseException) -> None:
        if isinstance(exc, BaseExceptionGroup):
            for inner in exc.exceptions:
                walk(inner)
        else:
            leaves.append(exc)

    walk(group)
    return leaves[0] if len(leaves) == 1 else group


async def _run_mcp(repo: Repository, *, port: int, standalone: bool, tools: ToolSet | None) -> None:
    timings = server_timings(repo)
    if tools is not None and tools.set != ALL_TOOLS:
        _log.info(
            "svc: this stdio session serves the tool set %s: %d tools, about %d tokens of tool listing",
            tools.set,
            len(tools.tools),
            tools.tokens,
        )
    stop = trio.Event()
    with claim_stdio() as (wire_in, wire_out):
        reader, writer = trio.lowlevel.FdStream(wire_in), trio.lowlevel.FdStream(wire_out)
        async with reader, writer, trio.open_nursery() as nursery:
            signals = trio.CancelScope()

            async def on_signal() -> None:
                with signals:
                    await watch_signals(stop)

            nursery.start_soon(on_signal)
            host = Host(repo, port=port, timings=timings, nursery=nursery, stop=stop)
            try:
                with trio.CancelScope() as session:
                    nursery.start_soon(_cancel_when, stop, session)
                    backend = await host.start(standalone=standalone)
                    server = build_server(backend, transport="stdio", peer=host.peer, version=__version__, tools=tools)
                    try:
                        await serve_stdio(server, reader, writer)
                    finally:
                        host.stdio_closed()
                    await host.linger()
            finally:
                stop.set()
                signals.cancel()
                with trio.CancelScope(shield=True), trio.move_on_after(timings.probe):
                    await host.aclose()


async def _cancel_when(event: trio.Event, scope: trio.CancelScope) -> None:
    await event.wait()
    scope.cancel()
