"""Shared fixtures: a service over a checkout, a real server on 127.0.0.1 port 0, and an HTTP client.

Every async test runs under `trio.fail_after` on trio's own clock (default 30 s; `@pytest.mark.bound(n)`).
"""

from __future__ import annotations

import functools
import inspect
import shutil
import subprocess
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from svc.api import serve_http
from svc.host._service import open_service
from svc.layer import Repository
from svc.runtime import Executor

pytest_plugins = ["tests.nursery.fixtures", "tests.capabilities._graph_server"]

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_LAYER = ROOT / ".ai"
DEFAULT_BOUND = 30.0
#: The shared corpus of a real `.ai/` layer, beside the repository (CI clones `shared/` next to it). Tests read
#: a copy (`corpus_copy`): reading a layer writes svc's caches under its `.ai/local/`.
SHARED_CORPUS = (ROOT.parent / "shared" / "corpus" / "reference-layer").resolve()


@pytest.fixture(scope="session")
def corpus_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the shared corpus for this session (skipped when the corpus is not beside the repository)."""
    if not (SHARED_CORPUS / ".ai" / "repo" / "project").is_dir():
        pytest.skip(f"the shared corpus is not at {SHARED_CORPUS} (clone shared/ beside the repository)")
    copy = tmp_path_factory.mktemp("corpus") / "reference-layer"
    shutil.copytree(SHARED_CORPUS, copy, ignore=shutil.ignore_patterns("local"))
    return copy


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "bound(seconds): the fail_after bound of an async test")


def _bounded(fn: Callable[..., Any], seconds: float) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        with trio.fail_after(seconds):
            return await fn(*args, **kwargs)

    return wrapper


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        fn = getattr(item, "obj", None)
        if isinstance(item, pytest.Function) and inspect.iscoroutinefunction(fn):
            marker = item.get_closest_marker("bound")
            item.obj = _bounded(fn, float(marker.args[0]) if marker else DEFAULT_BOUND)


def make_checkout(path: Path, *, layer: bool = True, git: bool = True) -> Path:
    """A checkout at `path`: optionally a Git repository with one commit, optionally with svc's own layer."""
    path.mkdir(parents=True, exist_ok=True)
    if layer:
        shutil.copytree(EXAMPLE_LAYER, path / ".ai", ignore=shutil.ignore_patterns("local"))
    if git:
        run = functools.partial(subprocess.run, cwd=path, check=True, capture_output=True)
        run(["git", "init", "-q", "-b", "main"])
        run(["git", "add", "-A"])
        run(
            [
                "git",
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@example.invalid",
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                "init",
            ]
        )
    return path


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary HOME and XDG_STATE_HOME, so no test reads or writes the real node key: the state directory."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / "state"))
    return home / "state"


@pytest.fixture
def planned(tmp_path: Path) -> Path:
    """A Git checkout whose plan layer holds `tests.plan.conftest.small_plan()` (and no other layer)."""
    from tests.plan._records import write_layer
    from tests.plan.conftest import small_plan

    root = make_checkout(tmp_path / "planned", layer=False)
    write_layer(root, *small_plan())
    return root


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A Git checkout carrying svc's own `.ai/` layer."""
    return make_checkout(tmp_path / "checkout")


@pytest.fixture
async def executor() -> AsyncIterator[Executor]:
    """The service over svc's own checkout, generation pinned."""
    async with open_service(Repository.discover(ROOT), surface="http", watch=False) as ex:
        yield ex


@pytest.fixture
async def server(executor: Executor, nursery: trio.Nursery) -> AsyncIterator[str]:
    """A real server on 127.0.0.1, port 0; yields its URL."""
    shutdown = trio.Event()
    url: str = await nursery.start(functools.partial(serve_http, executor, port=0, shutdown=shutdown))
    yield url
    shutdown.set()


@pytest.fixture
async def client(server: str) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client bound to the server's URL."""
    async with httpx.AsyncClient(base_url=server) as http:
        yield http
