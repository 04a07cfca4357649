"""Following an execution of the serving server live: `svc executions follow ID` and `svc run --server`.

The follower subscribes to one execution on the server's live channel (`/events?execution=ID`, through
trio-websocket) and shows each of its events once, in sequence order, until the terminal one. The highest
sequence shown is its cursor. After a dropped connection, a `stream.lagged`, or a frame that skips a sequence,
it connects again with `after=<cursor>`: the server replays the retained events above the cursor in the same
step as it subscribes, so no event is shown twice and none is lost (unless the server no longer keeps it; then
`stream.ready` says `truncated` and the view says how many it cannot show). A connection that cannot be made
again within 30 s ends the command (`unavailable`); an execution the server no longer knows is `not_found`.

The first Ctrl-C asks the server to cancel the execution (`executions.cancel`) and goes on following until it
ends; a second stops following at once (exit 130) and leaves the execution to the server.
"""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any, Protocol

import msgspec
import trio
import trio_websocket

from svc._errors import Internal, SvcError, Unavailable, error_class
from svc.capabilities import builtin_registry
from svc.cli._watch import TERMINAL, Tone, Watch
from svc.registry import ErrorBody

if TYPE_CHECKING:
    import httpx

    from svc.nursery import ExecutionView

__all__ = ["Channel", "Connect", "Follower", "follow_remote", "open_channel"]

#: How long a lost live channel is tried again before the command gives up.
GIVE_UP_SECONDS = 30.0
#: The bound of one connection's opening handshake, and of its closing one.
CONNECT_SECONDS = 5.0
CLOSE_SECONDS = 1.0
#: Waits between attempts to connect again (the first at once); the last repeats.
BACKOFF = (0.0, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0)
#: The largest frame accepted (the server sends at most 256 KiB).
MAX_MESSAGE = 1 << 20
_ERROR_BODY = msgspec.json.Decoder(ErrorBody)


class Channel(Protocol):
    """What the follower reads of a live-channel connection."""

    async def get_message(self) -> str | bytes:
        """The next message; `trio_websocket.ConnectionClosed` once the connection is gone."""
        ...


#: Opens a connection to a live-channel URL (`ws://…/events?…`); the tests pass their own.
Connect = Callable[[str], AbstractAsyncContextManager[Channel]]


@asynccontextmanager
async def open_channel(url: str) -> AsyncIterator[Channel]:
    """A trio-websocket connection to `url`, its handshakes bounded."""
    async with trio_websocket.open_websocket_url(
        url, connect_timeout=CONNECT_SECONDS, disconnect_timeout=CLOSE_SECONDS, max_message_size=MAX_MESSAGE
    ) as ws:
        yield ws


class _Resume(Exception):
    """The connection ended before the terminal event; connect again from the cursor."""

    def __init__(self, reason: str, *, dropped: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.dropped = dropped


def _closed(exc: trio_websocket.ConnectionClosed) -> str:
    """Why a connection closed, in a few words."""
    reason = exc.reason
    if reason is None:
        return "the connection closed"
    return f"the connection closed ({reason.code} {reason.name})" + (f": {reason.reason}" if reason.reason else "")


def _decode(message: str | bytes) -> dict[str, Any]:
    try:
        value = msgspec.json.decode(message)
    except msgspec.DecodeError:
        raise Internal("the live channel sent a frame that is not JSON") from None
    if not isinstance(value, dict):
        raise Internal("the live channel sent a frame that is not an object")
    return value


class Follower:
    """Shows every event of one execution on the server at `base_url` once, in order, until its end."""

    def __init__(
        self,
        base_url: str,
        execution_id: str,
        *,
        show: Callable[[Mapping[str, Any]], None],
        note: Callable[[str, Tone], None],
        connect: Connect = open_channel,
    ) -> None:
        self.base_url = base_url
        self.execution_id = execution_id
        self.show = show
        self.note = note
        self.connect = connect
        #: The highest sequence shown.
        self.cursor = 0
        #: The `after` each connection opened asked for, in order.
        self.afters: list[int] = []
        #: Whether the terminal event was shown (a later error while closing changes nothing).
        self.ended = False

    def target(self) -> str:
        """The live-channel URL of the execution from the cursor on."""
        scheme, _, rest = self.base_url.partition("://")
        after = f"&after={self.cursor}" if self.cursor else ""
        return f"{'wss' if scheme == 'https' else 'ws'}://{rest}/events?execution={self.execution_id}{after}"

    async def run(self) -> None:
        """Follow until the terminal event has been shown.

        Raises:
            NotFound: the server does not know the execution (any more).
            Unavailable: the live channel could not be opened again within `GIVE_UP_SECONDS`, or the server
                is shutting down.
            SvcError: the server refused the subscription otherwise.
        """
        lost_at: float | None = None
        attempt = 0
        while True:
            before = self.cursor
            try:
                async with self.connect(self.target()) as channel:
                    self.afters.append(before)
                    await self._read(channel)
                    return
            except _Resume as resume:
                reason, dropped = resume.reason, resume.dropped
            except trio_websocket.ConnectionRejected as exc:
                reason, dropped = self._refused(exc), True
            except trio_websocket.ConnectionClosed as exc:
                reason, dropped = _closed(exc), True
            except (trio_websocket.HandshakeError, OSError) as exc:
                reason, dropped = str(exc) or type(exc).__name__, True
            if self.ended:  # the connection failed while closing, after the end was shown
                return
            now = trio.current_time()
            if self.cursor > before:  # the connection moved on: a fresh drop, tried again at once
                lost_at, attempt = None, 0
            if lost_at is None:
                lost_at = now
                if dropped:
                    self.note(f"svc: the live channel dropped after event {self.cursor} ({reason}); resuming", "warn")
            elif now - lost_at >= GIVE_UP_SECONDS:
                raise Unavailable(
                    f"the live channel of {self.base_url} could not be opened again for {GIVE_UP_SECONDS:.0f} s "
                    f"({reason}); follow it again with `svc executions follow {self.execution_id}`"
                )
            await trio.sleep(BACKOFF[min(attempt, len(BACKOFF) - 1)])
            attempt += 1

    def _refused(self, exc: trio_websocket.ConnectionRejected) -> str:
        """The reason of a 5xx refusal (tried again); any other refusal is raised as the server's error."""
        try:
            error = _ERROR_BODY.decode(exc.body or b"").error
        except msgspec.DecodeError:
            error = None
        if exc.status_code >= 500:
            return error.message if error is not None else f"the server answered {exc.status_code}"
        if error is None:
            raise Internal(f"the live channel refused the subscription ({exc.status_code})")
        raise error_class(error.code)(error.message)

    async def _read(self, channel: Channel) -> None:
        """Show the events of one connection until the terminal one.

        Raises:
            _Resume: the connection ended, lagged or skipped a sequence first.
        """
        try:
            ready = _decode(await channel.get_message())
        except trio_websocket.ConnectionClosed as exc:
            raise _Resume(_closed(exc), dropped=True) from None
        if ready.get("type") != "stream.ready":
            raise Internal("the live channel did not open with stream.ready")
        truncated = bool((ready.get("data") or {}).get("truncated"))
        while True:
            try:
                frame = _decode(await channel.get_message())
            except trio_websocket.ConnectionClosed as exc:
                raise _Resume(_closed(exc), dropped=True) from None
            kind = frame.get("type")
            if kind == "stream.lagged":
                raise _Resume("the server dropped events for this connection", dropped=False)
            if kind == "stream.closing":
                reason = (frame.get("data") or {}).get("reason", "closing")
                raise Unavailable(f"the server closed the live channel ({reason}); its executions end with it")
            sequence = frame.get("sequence")
            if not isinstance(sequence, int) or frame.get("execution_id") != self.execution_id:
                continue
            if sequence <= self.cursor:
                continue  # shown before the connection dropped
            if sequence > self.cursor + 1:
                if not truncated:
                    raise _Resume(f"event {self.cursor + 1} is missing", dropped=False)
                missing = sequence - self.cursor - 1
                self.note(f"svc: {missing} earlier event{'s are' if missing != 1 else ' is'} no longer kept", "warn")
            truncated = False
            self.cursor = sequence
            self.show(frame)
            if kind in TERMINAL:
                self.ended = True
                return


async def _remote(client: httpx.AsyncClient, url: str, capability: str, execution_id: str) -> bytes:
    from svc.host import call_remote

    cap = builtin_registry().by_id[capability]
    return await call_remote(client, url, cap, msgspec.convert({"id": execution_id}, cap.input))


async def _cancel_on_interrupt(
    client: httpx.AsyncClient,
    url: str,
    execution_id: str,
    note: Callable[[str, Tone], None],
    following: trio.CancelScope,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """First Ctrl-C (or SIGTERM): ask the server to cancel; the second: stop following at once."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        task_status.started()
        count = 0
        async for _ in signals:
            count += 1
            if count > 1:
                note(f"svc: stopped following {execution_id}; the server goes on with it", "warn")
                following.cancel()
                return
            note(f"svc: asking the server to cancel {execution_id} (Ctrl-C again to stop following)", "warn")
            try:
                answer = msgspec.json.decode(await _remote(client, url, "executions.cancel", execution_id))
            except SvcError as exc:
                note(f"svc: {exc.code}: {exc.message}", "bad")
                continue
            if not answer.get("cancellable", True):
                note(f"svc: {execution_id} cannot be cancelled; it runs to its end", "warn")


async def follow_remote(
    client: httpx.AsyncClient, url: str, execution_id: str, watch: Watch | None, *, connect: Connect = open_channel
) -> ExecutionView | None:
    """Follow an execution of the server at `url` on `watch` (None: silently) until it ends.

    Answers its final view, or None when a second Ctrl-C stopped following first.

    Raises:
        SvcError: as `Follower.run`, and the server's errors when it is asked for the view.
    """
    from svc.nursery import ExecutionView

    def note(text: str, tone: Tone) -> None:
        if watch is not None:
            watch.line(text, tone)

    follower = Follower(
        url, execution_id, show=watch.show if watch is not None else (lambda _: None), note=note, connect=connect
    )
    failure: SvcError | None = None
    async with trio.open_nursery() as nursery:
        with trio.CancelScope() as following:
            await nursery.start(_cancel_on_interrupt, client, url, execution_id, note, following)
            try:
                await follower.run()
            except SvcError as exc:  # raised below, on its own rather than in the nursery's group
                failure = exc
        nursery.cancel_scope.cancel()
    if failure is not None:
        raise failure
    if following.cancelled_caught:
        return None
    return msgspec.json.decode(await _remote(client, url, "executions.get", execution_id), type=ExecutionView)
