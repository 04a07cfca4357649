"""The executions pages: every execution this server remembers, and one page per execution, live.

`GET /cockpit/executions` lists `executions.list` newest first, filtered by `state` and `capability` (a GET
form). `GET /cockpit/executions/<id>` shows `executions.get` (state, capability, actor, times, progress, steps,
diagnostics, error, output, input) and the log lines of `executions.events` (the newest 500 events). Both pages
are live and follow `/events` (every execution, or the one shown), so a running execution moves without a
reload; the page of a cancellable execution that has not ended carries the cancel button `cockpit.js` posts.
"""

from __future__ import annotations

import typing
from typing import Any

from quart import Response, request
from quart_trio import QuartTrio

from svc._errors import InvalidInput
from svc.api.cockpit._render import Cockpit
from svc.nursery import FINAL
from svc.nursery._events import ExecutionState

__all__ = ["duration_text", "routes"]

#: Every state an execution can be in, in the order the filter offers them.
STATES: tuple[str, ...] = typing.get_args(ExecutionState)
#: The most events the page of one execution reads (the bound of `executions.events`).
EVENT_PAGE = 500
#: The query parameters of the list page.
_LIST_PARAMETERS = ("state", "capability")


def duration_text(ms: int | None) -> str | None:
    """A duration in milliseconds as a person reads it (`850 ms`, `4.2 s`, `3 min 5 s`, `2 h 4 min`)."""
    if ms is None:
        return None
    if ms < 1000:
        return f"{ms} ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def _time_text(stamp: str | None) -> str | None:
    """An RFC 3339 UTC stamp with a space for the `T` (easier to read, same value)."""
    return stamp.replace("T", " ") if stamp else None


def _query(allowed: tuple[str, ...]) -> dict[str, str]:
    """The page's query parameters: each at most once and known, empty ones dropped.

    Raises:
        InvalidInput: an unknown or repeated parameter.
    """
    values: dict[str, str] = {}
    for name in request.args:
        if name not in allowed:
            raise InvalidInput(f"unknown query parameter {name!r}; this page takes {', '.join(allowed)}")
        given = request.args.getlist(name)
        if len(given) > 1:
            raise InvalidInput(f"query parameter {name!r} given {len(given)} times; give it once")
        if given[0] != "":
            values[name] = given[0]
    return values


def _actor_text(actor: dict[str, Any]) -> str:
    """Who started an execution: its surface, and the peer or process when known."""
    text = str(actor["kind"])
    if actor.get("peer"):
        text += f" ({actor['peer']})"
    elif actor.get("pid") is not None:
        text += f" (pid {actor['pid']})"
    return text


def _log_lines(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The log lines among `events` (`execution.log`: the stream and the text), oldest first."""
    return [
        {
            "sequence": e["sequence"],
            "timestamp": e["timestamp"],
            "stream": e["data"]["stream"],
            "message": e["data"]["message"],
        }
        for e in events
        if e["type"] == "execution.log"
    ]


def routes(app: QuartTrio, cockpit: Cockpit) -> None:
    """`GET /cockpit/executions` and `GET /cockpit/executions/<id>`."""
    helpers: dict[str, Any] = {"duration": duration_text, "when": _time_text, "actor_text": _actor_text}

    @app.get("/cockpit/executions")
    async def executions_page() -> Response:
        unchanged = cockpit.unchanged()
        if unchanged is not None:
            return unchanged
        chosen = _query(_LIST_PARAMETERS)
        state = chosen.get("state")
        if state is not None and state not in STATES:
            raise InvalidInput(f"state {state!r} is no execution state; choose one of {', '.join(STATES)}")
        capability = chosen.get("capability")
        if capability is not None and cockpit.registry.get(capability) is None:
            raise InvalidInput(f"capability {capability!r} is not in this registry")
        answer = await cockpit.ask("executions.list", {**chosen, "limit": 200})
        capabilities = sorted(
            {c.id for c in cockpit.registry.capabilities if c.kind != "resource"}
            | {x["capability"] for x in answer["executions"]}
        )
        return cockpit.render(
            "executions.html",
            section="executions",
            title="Executions",
            live=True,
            follow="*",
            listing=answer,
            states=STATES,
            capabilities=capabilities,
            chosen=chosen,
            **helpers,
        )

    @app.get("/cockpit/executions/<execution_id>")
    async def execution_page(execution_id: str) -> Response:
        unchanged = cockpit.unchanged()
        if unchanged is not None:
            return unchanged
        _query(())
        execution = await cockpit.ask("executions.get", {"id": execution_id})
        after = max(0, execution["last_sequence"] - EVENT_PAGE)
        history = await cockpit.ask("executions.events", {"id": execution_id, "after": after, "limit": EVENT_PAGE})
        events: list[dict[str, Any]] = history["events"]
        first_shown = events[0]["sequence"] if events else execution["last_sequence"] + 1
        # Events older than the page, whether past its window or dropped by the store's bound.
        unshown = max(0, first_shown - 1)
        final = execution["state"] in FINAL
        return cockpit.render(
            "execution.html",
            section="executions",
            title=f"Execution {execution['id']}",
            live=True,
            follow=execution["id"],
            x=execution,
            events=events,
            logs=_log_lines(events),
            unshown=unshown,
            dropped=execution["events_truncated"],
            final=final,
            can_cancel=execution["cancellable"] and execution["state"] in ("queued", "running"),
            **helpers,
        )
