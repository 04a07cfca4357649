"""How `SvcApp` sends: the page app through the shielded `Exchange.send`, capability routes unshielded."""

from __future__ import annotations

import math
from collections.abc import MutableMapping
from typing import Any

import msgspec
import trio

from svc.api._http import SvcApp
from svc.runtime import Executor

Message = MutableMapping[str, Any]


async def deadlines_of_sends(
    executor: Executor, method: str, path: str, body: bytes = b""
) -> list[tuple[Message, float]]:
    """Every message `SvcApp` sends for one request, with the effective deadline its send ran under.

    The request runs under a finite deadline: a send inside a shield sees none (infinity).
    """
    sent: list[tuple[Message, float]] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Message) -> None:
        sent.append((message, trio.current_effective_deadline()))

    async def pages(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"page"})

    app = SvcApp(executor, pages)
    scope = {"type": "http", "method": method, "path": path, "query_string": b"", "headers": [(b"host", b"127.0.0.1")]}
    with trio.move_on_after(60):
        await app(scope, receive, send)
    return sent


async def test_a_capability_route_answers_through_unshielded_sends(demo_executor: Executor) -> None:
    sent = await deadlines_of_sends(demo_executor, "POST", "/api/v1/demo/echo", b'{"text": "hi"}')
    assert [m["type"] for m, _ in sent] == ["http.response.start", "http.response.body"]
    assert sent[0][0]["status"] == 200
    assert msgspec.json.decode(sent[1][0]["body"])["text"] == "hi"
    assert all(math.isfinite(deadline) for _, deadline in sent)


async def test_a_capability_routes_refusal_is_sent_unshielded_too(demo_executor: Executor) -> None:
    sent = await deadlines_of_sends(demo_executor, "GET", "/api/v1/demo/absent")
    assert sent[0][0]["status"] == 404
    assert all(math.isfinite(deadline) for _, deadline in sent)


async def test_the_page_app_sends_shielded(demo_executor: Executor) -> None:
    sent = await deadlines_of_sends(demo_executor, "GET", "/")
    assert [m["type"] for m, _ in sent] == ["http.response.start", "http.response.body"]
    assert all(deadline == math.inf for _, deadline in sent)
