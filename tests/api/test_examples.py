"""Every example of every HTTP capability, sent to a real `svc serve` over a scratch copy of svc's own checkout.

An example declares the status it answers on such a server (`Example.status`): 200 with a body of the
capability's output type, or the documented error (403 for a repository writer, which HTTP never runs) as
an `ErrorBody`. One `svc --repo CLONE serve --port 0` subprocess serves the whole module; the clone is
`git clone` of this repository (its committed `.ai/` layer, CHANGELOG and generated documents). Nothing
leaves 127.0.0.1: the layer declares no mesh, and the process state directory is a scratch one.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
import trio

from svc.capabilities import builtin_registry
from svc.registry import Capability, ErrorBody, Example
from tests.conftest import ROOT

pytestmark = pytest.mark.slow

SVC = Path(sys.executable).parent / "svc"
SERVING = re.compile(r"serving (http://127\.0\.0\.1:[0-9]+)")
#: Wall-clock seconds the server may take to bind and log its URL, and to stop once terminated.
START_SECONDS = 30
STOP_SECONDS = 5
#: The trio bound of one example's request.
REQUEST_SECONDS = 20

REGISTRY = builtin_registry()
#: In capability-id then declaration order, the order svc's own projections list them; the module shares one
#: server, so an example that changes its memory (a command) only affects the cases after it.
CASES = [
    pytest.param(
        cap,
        example,
        id=f"{cap.id}/{example.name}",
    )
    for cap in REGISTRY.capabilities
    if cap.exposure.http is not None
    for example in cap.examples
]


def clone_checkout(dest: Path) -> Path:
    """A scratch clone of this repository's committed tree (layer included), on its own branch."""
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(dest)], check=True, capture_output=True)
    assert (dest / ".ai" / "repo" / "project" / "issues" / "I0001.yaml").is_file()
    return dest


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One `svc serve --port 0` over a clone for the whole module; yields its URL, then stops it."""
    with serving_clone(tmp_path_factory.mktemp("examples")) as url:
        yield url


@contextmanager
def serving_clone(scratch: Path) -> Iterator[str]:
    """`svc serve --port 0` over a clone made under `scratch` for the block; yields its URL, then stops it."""
    repo = clone_checkout(scratch / "checkout")
    log = scratch / "serve.log"
    env = {**os.environ, "XDG_STATE_HOME": str(scratch / "state")}
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [str(SVC), "--repo", str(repo), "serve", "--port", "0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env=env,
        )
    try:
        deadline = time.monotonic() + START_SECONDS
        while (match := SERVING.search(log.read_text(errors="replace"))) is None:
            assert process.poll() is None, f"svc serve exited before serving: {log.read_text(errors='replace')}"
            assert time.monotonic() < deadline, f"svc serve did not serve within {START_SECONDS} s"
            time.sleep(0.05)
        yield match[1]
    finally:
        process.terminate()
        try:
            process.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def query_text(value: Any) -> str:
    """A query parameter as svc's binding reads it: booleans as `true`/`false`, the rest as text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


async def send(url: str, cap: Capability, example: Example) -> httpx.Response:
    """The example on its route: a GET as a query string, a POST as a JSON body."""
    http = cap.exposure.http
    assert http is not None
    async with httpx.AsyncClient(base_url=url) as client:
        if http.method == "GET":
            params = {name: query_text(value) for name, value in example.input.items() if value is not None}
            return await client.get(http.path, params=params)
        return await client.post(http.path, json=example.input)


def test_every_http_capability_has_an_example_here() -> None:
    http = {c.id for c in REGISTRY.capabilities if c.exposure.http is not None}
    assert http
    assert {p.values[0].id for p in CASES} == http  # type: ignore[union-attr]


@pytest.mark.parametrize(("cap", "example"), CASES)
async def test_every_example_answers_its_declared_status(served: str, cap: Capability, example: Example) -> None:
    with trio.fail_after(REQUEST_SECONDS):
        r = await send(served, cap, example)
    assert r.status_code == example.status, r.text[:500]
    assert r.headers["content-type"] == "application/json"
    if 200 <= r.status_code < 300:
        msgspec.json.decode(r.content, type=cap.output)
    else:
        body = msgspec.json.decode(r.content, type=ErrorBody)
        assert body.error.message, r.text
        assert list(msgspec.json.decode(r.content)) == ["error"], r.text
