"""Fixtures of the HTTP tests: a demo registry served for real, and a checkout with its own `docs/`.

The binding rules and the error mapping are exercised against a small demo registry declared here, whose
handlers record every call: a GET query echoing every scalar kind, a POST command echoing its body, a
repository writer, a handler that crashes and one that raises each SvcError.
"""

from __future__ import annotations

import functools
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import httpx
import msgspec
import pytest
import trio

from svc import Forbidden, InvalidInput, NotFound, Refused, SvcError, Unavailable
from svc.api import serve_http
from svc.capabilities import builtin_registry
from svc.host._service import open_service
from svc.layer import Repository
from svc.registry import Capability, Example, Exposure, HttpExposure, McpExposure, Module, Registry, build_registry
from svc.runtime import Context, Executor, Generation, Runtime, Supervisor

DEMO = Module(id="demo", title="Demo", description="Capabilities that exist only for the HTTP tests.")
SECRET = "do-not-leak-7f3a"
#: Raised by `demo.raise`, keyed by its `code` parameter.
RAISED: dict[str, SvcError] = {
    "invalid_input": InvalidInput("the demo refuses this value"),
    "not_found": NotFound("no demo object 'x-1'"),
    "forbidden": Forbidden("the demo forbids this"),
    "refused": Refused("claim_conflict: the demo is claimed by someone else"),
    "unavailable": Unavailable("the demo is stopping"),
}


class Probe(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Every scalar kind a query parameter can have."""

    count: int = 0
    ratio: float = 1.0
    flag: bool = False
    mode: Literal["fast", "slow"] = "fast"
    note: str | None = None


class Note(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The body of the demo commands."""

    text: str = ""
    tags: list[str] = msgspec.field(default_factory=list)
    size: int = 0


class Crash(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Input of `demo.crash`."""


class Raise(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Which SvcError `demo.raise` raises."""

    code: Literal["invalid_input", "not_found", "forbidden", "refused", "unavailable"] = "not_found"


class HandlerRuns:
    """What the demo handlers were called with, in order (capability id, decoded input)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, msgspec.Struct]] = []

    def ids(self) -> list[str]:
        return [cid for cid, _ in self.calls]


def demo_capabilities(runs: HandlerRuns) -> tuple[Capability, ...]:
    """The demo declarations; every handler records its call in `runs`."""

    async def probe(ctx: Context, params: Probe) -> Probe:
        runs.calls.append(("demo.probe", params))
        return params

    async def echo(ctx: Context, params: Note) -> Note:
        runs.calls.append(("demo.echo", params))
        return params

    async def write(ctx: Context, params: Note) -> Note:
        runs.calls.append(("demo.write", params))
        return params

    async def crash(ctx: Context, params: Crash) -> Crash:
        runs.calls.append(("demo.crash", params))
        raise RuntimeError(f"handler exploded: {SECRET}")

    async def raise_(ctx: Context, params: Raise) -> Raise:
        runs.calls.append(("demo.raise", params))
        raise RAISED[params.code]

    def declare(
        cid: str,
        handler: Callable[[Context, Any], Awaitable[Any]],
        input: type[msgspec.Struct],
        method: Literal["GET", "POST"],
        *,
        writes_repository: bool = False,
        mcp: McpExposure | None = None,
        cli: tuple[str, ...] = (),
    ) -> Capability:
        return Capability(
            id=f"demo.{cid}",
            module="demo",
            title=f"Demo {cid}",
            description=f"The demo capability {cid}.",
            input=input,
            output=input,
            handler=handler,
            examples=(Example(name="plain", input={}),),
            kind="query" if method == "GET" else "command",
            exposure=Exposure(http=HttpExposure(method=method, path=f"/api/v1/demo/{cid}"), mcp=mcp, cli=cli),
            writes_repository=writes_repository,
        )

    return (
        declare("probe", probe, Probe, "GET"),
        declare("echo", echo, Note, "POST"),
        declare("crash", crash, Crash, "GET"),
        declare("raise", raise_, Raise, "GET"),
        declare(
            "write",
            write,
            Note,
            "POST",
            writes_repository=True,
            mcp=McpExposure(tool="svc_demo_write"),
            cli=("demo", "write"),
        ),
    )


@asynccontextmanager
async def open_executor(registry: Registry, root: Path) -> AsyncIterator[Executor]:
    """An executor of `registry` over the checkout at `root`, generation pinned."""
    repo = Repository.discover(root)
    runtime = Runtime(registry=registry, repository=repo, generation=Generation(repo, stamp=b""), surface="http")
    async with Supervisor.open() as supervisor:
        yield Executor(runtime, supervisor)


@asynccontextmanager
async def serving(executor: Executor, nursery: trio.Nursery) -> AsyncIterator[str]:
    """Serve `executor` on 127.0.0.1 port 0 for the block; yields the URL."""
    shutdown = trio.Event()
    url: str = await nursery.start(functools.partial(serve_http, executor, port=0, shutdown=shutdown))
    try:
        yield url
    finally:
        shutdown.set()


@pytest.fixture
def handler_runs() -> HandlerRuns:
    """The record of every demo handler call of the test."""
    return HandlerRuns()


@pytest.fixture
def demo_registry(handler_runs: HandlerRuns) -> Registry:
    """The demo registry, its handlers recording into `handler_runs`."""
    return build_registry([DEMO], demo_capabilities(handler_runs))


@pytest.fixture
async def demo_executor(demo_registry: Registry, tmp_path: Path) -> AsyncIterator[Executor]:
    """The demo registry's executor over an empty directory."""
    async with open_executor(demo_registry, tmp_path / "empty") as executor:
        yield executor


@pytest.fixture
async def demo_server(demo_executor: Executor, nursery: trio.Nursery) -> AsyncIterator[str]:
    """A real server of the demo registry on 127.0.0.1; yields its URL."""
    async with serving(demo_executor, nursery) as url:
        yield url


@pytest.fixture
async def demo_client(demo_server: str) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client bound to the demo server."""
    async with httpx.AsyncClient(base_url=demo_server) as http:
        yield http


@pytest.fixture
def docs_checkout(tmp_path: Path) -> Path:
    """A checkout (no Git) with its own `docs/`, a secret beside it, and symlinks in and out of `docs/`."""
    root = tmp_path / "docs-checkout"
    docs = root / "docs"
    (docs / "guide").mkdir(parents=True)
    (root / "pyproject.toml").write_text(f'[project]\nname = "{SECRET}"\n', encoding="utf-8")
    (root / "secret.md").write_text(f"# Secret\n\n{SECRET}\n", encoding="utf-8")
    (docs / "README.md").write_text("# Handbook\n\nSee [the guide](guide/usage.md).\n", encoding="utf-8")
    (docs / "guide" / "usage.md").write_text(
        "# Usage\n\n"
        "Run `svc serve`.\n\n"
        "<script>alert('owned')</script>\n\n"
        'Inline <img src=x onerror="alert(1)"> too.\n\n'
        "| a | b |\n|---|---|\n| 1 | 2 |\n",
        encoding="utf-8",
    )
    (docs / "notes.txt").write_text("plain notes\n", encoding="utf-8")
    os.symlink(Path("guide") / "usage.md", docs / "alias.md")
    os.symlink(Path("..") / "secret.md", docs / "leak.md")
    os.symlink(Path(".."), docs / "up")
    os.symlink(root / "pyproject.toml", docs / "absolute.toml")
    return root


@pytest.fixture
async def docs_server(docs_checkout: Path, nursery: trio.Nursery) -> AsyncIterator[str]:
    """A real server of the builtin registry over `docs_checkout`; yields its URL."""
    async with open_executor(builtin_registry(), docs_checkout) as executor, serving(executor, nursery) as url:
        yield url


@pytest.fixture
async def docs_client(docs_server: str) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client bound to the docs server."""
    async with httpx.AsyncClient(base_url=docs_server) as http:
        yield http


@pytest.fixture
async def checkout_server(checkout: Path, nursery: trio.Nursery) -> AsyncIterator[str]:
    """A real server of the builtin service over a disposable Git checkout of svc's layer; yields its URL."""
    async with (
        open_service(Repository.discover(checkout), surface="http", watch=False) as executor,
        serving(executor, nursery) as url,
    ):
        yield url


@pytest.fixture
async def checkout_client(checkout_server: str) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client bound to the checkout server."""
    async with httpx.AsyncClient(base_url=checkout_server) as http:
        yield http
