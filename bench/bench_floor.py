"""The floor: a bare ASGI app on hypercorn's trio worker that answers recorded bytes and does nothing else.

Run as a script by the harness: ``python bench/bench_floor.py --responses FILE``. FILE (written by
`write_responses`) holds, per request (method, path, query string), the status, headers and body svc
answered. The server is configured as `svc.api.serve_http` configures svc's (a socket from
`svc.api.bind_loopback`, no access log, one-second grace, no Server header), so the difference between svc
and this floor is svc's own per-request work. It logs ``floor: serving http://127.0.0.1:<port>`` to stderr
once bound and stops on SIGINT or SIGTERM.
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import signal
import sys
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, cast

import trio
from hypercorn.config import Config
from hypercorn.trio import serve

from svc.api import bind_loopback

__all__ = ["FloorApp", "Recorded", "load_responses", "main", "write_responses"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Key = tuple[str, str, bytes]

#: Response headers hypercorn adds itself; the floor leaves them to hypercorn, as svc does.
SERVER_HEADERS = frozenset({"date", "server"})
GRACE_SECONDS = 1.0
_NOT_FOUND_BODY = b'{"error":{"code":"not_found","message":"the floor has no recording of this request"}}'


@dataclass(frozen=True, slots=True)
class Recorded:
    """One recorded answer: the request it answers and the exact response bytes svc sent."""

    method: str
    path: str
    query: str
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes

    @property
    def key(self) -> Key:
        """The lookup key of the ASGI scope this answers."""
        return self.method, self.path, self.query.encode("latin-1")

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form (the body base64-encoded)."""
        return {
            "method": self.method,
            "path": self.path,
            "query": self.query,
            "status": self.status,
            "headers": [list(pair) for pair in self.headers],
            "body": base64.b64encode(self.body).decode("ascii"),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Recorded:
        """The inverse of `to_json`."""
        return cls(
            method=data["method"],
            path=data["path"],
            query=data["query"],
            status=data["status"],
            headers=tuple((name, value) for name, value in data["headers"]),
            body=base64.b64decode(data["body"]),
        )


def write_responses(path: Path, recorded: Iterable[Recorded]) -> None:
    """Write the recordings the floor will serve."""
    path.write_text(json.dumps({"responses": [r.to_json() for r in recorded]}), encoding="utf-8")


def load_responses(path: Path) -> list[Recorded]:
    """Read recordings written by `write_responses`."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return [Recorded.from_json(item) for item in data["responses"]]


@dataclass(frozen=True, slots=True)
class _Answer:
    status: int
    headers: tuple[tuple[bytes, bytes], ...]
    body: bytes


def _answer(recorded: Recorded) -> _Answer:
    headers = tuple(
        (name.encode("latin-1"), value.encode("latin-1"))
        for name, value in recorded.headers
        if name not in SERVER_HEADERS
    )
    return _Answer(status=recorded.status, headers=headers, body=recorded.body)


_NOT_FOUND = _Answer(
    status=404,
    headers=((b"content-type", b"application/json"), (b"content-length", b"%d" % len(_NOT_FOUND_BODY))),
    body=_NOT_FOUND_BODY,
)


class FloorApp:
    """The bare ASGI app: one dictionary lookup per request, then the recorded bytes."""

    def __init__(self, recorded: Iterable[Recorded]) -> None:
        self._answers = {r.key: _answer(r) for r in recorded}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await _lifespan(receive, send)
            return
        if kind != "http":
            return
        if scope["method"] != "GET":
            await _drain(receive)
        answer = self._answers.get((scope["method"], scope["path"], scope["query_string"]), _NOT_FOUND)
        await send({"type": "http.response.start", "status": answer.status, "headers": list(answer.headers)})
        await send({"type": "http.response.body", "body": answer.body})


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def _drain(receive: Receive) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect" or not message.get("more_body", False):
            return


def floor_config(fd: int) -> Config:
    """The hypercorn configuration of `svc.api.serve_http`, bound to the listening socket `fd`."""
    config = Config()
    config.bind = [f"fd://{fd}"]
    config.graceful_timeout = GRACE_SECONDS
    config.accesslog = None
    errorlog = logging.getLogger("floor.hypercorn")
    errorlog.setLevel(logging.WARNING)
    config.errorlog = errorlog
    config.include_server_header = False
    return config


async def _on_signal(shutdown: trio.Event) -> None:
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            shutdown.set()
            return


async def serve_floor(recorded: list[Recorded], port: int) -> None:
    """Serve the recordings on 127.0.0.1 until SIGINT or SIGTERM."""
    sock = bind_loopback(port)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    config = floor_config(sock.detach())
    shutdown = trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_on_signal, shutdown)
        app = cast(Any, FloorApp(recorded))  # hypercorn types its ASGI callables narrowly
        await nursery.start(partial(serve, app, config, shutdown_trigger=shutdown.wait))
        print(f"floor: serving {url}", file=sys.stderr, flush=True)
        await shutdown.wait()
        nursery.cancel_scope.deadline = trio.current_time() + GRACE_SECONDS + 1


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and serve."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--responses", type=Path, required=True, help="recordings (JSON) to serve")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0 = any free port)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    trio.run(serve_floor, load_responses(args.responses), args.port)


if __name__ == "__main__":
    main()
