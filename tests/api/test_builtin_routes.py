"""Every example of every builtin HTTP operation, over a real server.

Readers and process-state commands answer 200 with a body of their declared output type. Examples waived
as `transient_state` name an execution that only exists at run time: they answer 200 once one exists. The mesh's
cooperation writes (also waived as `transient_state`) answer the status their examples declare: svc's own
checkout declares no mesh, so they are refused `not_active` (or invalid without a session).
Repository writers answer 403 over HTTP (and write nothing), directly or through `executions.start`.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import msgspec
import pytest
import trio

from svc.capabilities import builtin_registry
from svc.registry import Capability, Example
from svc.runtime import Executor
from tests.api._wire import assert_error

#: Waived examples that name an execution: they run against one started first.
NEEDS_AN_EXECUTION = frozenset({"executions.get", "executions.events", "executions.cancel"})
#: Waived examples that run as they are (a reporter's first batch creates the execution it reports).
TRANSIENT_AS_IS = frozenset({"executions.report"})
#: Waived as an external dependency: they read the host (or the network) and answer 200 whatever it holds.
EXTERNAL_AS_IS = frozenset({"mesh.firewall", "mesh.verify"})
#: Waived cooperation writes: on a server without the mesh they answer the (error) status their examples declare.
DECLARED_AS_IS = frozenset(
    {
        "mesh.claim",
        "mesh.release",
        "mesh.session.open",
        "mesh.session.close",
        "mesh.handover.publish",
        "mesh.handover.consume",
        "mesh.review.request",
        "mesh.review.answer",
        "mesh.review.withdraw",
        "plan.take",
    }
)

REGISTRY = builtin_registry()
HTTP = [c for c in REGISTRY.capabilities if c.exposure.http is not None]


def cases(chosen: list[Capability]) -> list[Any]:
    return [pytest.param(cap, ex, id=f"{cap.id}/{ex.name}") for cap in chosen for ex in cap.examples]


def waived(cap: Capability) -> bool:
    return cap.benchmark.policy == "waived"


PLAIN = [c for c in HTTP if not c.writes_repository and (not waived(c) or c.id in TRANSIENT_AS_IS | EXTERNAL_AS_IS)]
ON_AN_EXECUTION = [c for c in HTTP if c.id in NEEDS_AN_EXECUTION]
DECLARED = [c for c in HTTP if c.id in DECLARED_AS_IS]
WRITERS = [c for c in HTTP if c.writes_repository]


async def call(client: httpx.AsyncClient, cap: Capability, params: dict[str, Any]) -> httpx.Response:
    http = cap.exposure.http
    assert http is not None
    if http.method == "GET":
        return await client.get(http.path, params={name: query_text(value) for name, value in params.items()})
    return await client.post(http.path, json=params)


def query_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def layer_digest(root: Path) -> str:
    """SHA-256 over every file of `.ai/` except `.ai/local/` (path and content)."""
    digest = hashlib.sha256()
    layer = root / ".ai"
    for path in sorted(p for p in layer.rglob("*") if p.is_file()):
        rel = path.relative_to(layer).as_posix()
        if not rel.startswith("local/"):
            digest.update(rel.encode() + b"\0" + path.read_bytes() + b"\n")
    return digest.hexdigest()


def test_every_http_operation_has_examples_and_a_place_here() -> None:
    assert HTTP
    for cap in HTTP:
        assert cap.examples, cap.id
        if waived(cap) and cap.id in EXTERNAL_AS_IS:
            assert cap.benchmark.reason == "external_dependency", cap.id
        elif waived(cap):
            assert cap.benchmark.reason == "transient_state", cap.id
            assert cap.id in NEEDS_AN_EXECUTION | TRANSIENT_AS_IS | DECLARED_AS_IS, (
                f"decide how {cap.id}'s examples run here"
            )
    assert {c.id for c in PLAIN + ON_AN_EXECUTION + DECLARED + WRITERS} == {c.id for c in HTTP}
    assert {c.id for c in ON_AN_EXECUTION} == NEEDS_AN_EXECUTION


@pytest.mark.parametrize(("cap", "example"), cases(PLAIN))
async def test_every_example_answers_its_declared_status(
    client: httpx.AsyncClient, cap: Capability, example: Example
) -> None:
    r = await call(client, cap, example.input)
    assert r.headers["content-type"] == "application/json"
    if example.status == 200:
        assert r.status_code == 200, r.text
        msgspec.json.decode(r.content, type=cap.output)
    else:
        assert_error(r, example.status, {400: "invalid_input", 404: "not_found"}[example.status])


@pytest.mark.parametrize(("cap", "example"), cases(DECLARED))
async def test_every_cooperation_write_answers_its_declared_status_without_the_mesh(
    client: httpx.AsyncClient, cap: Capability, example: Example
) -> None:
    r = await call(client, cap, example.input)
    assert r.status_code == example.status, r.text
    code = {400: "invalid_input", 422: "refused"}[example.status]
    assert_error(r, example.status, code, "session is required" if example.status == 400 else "not_active: ")


@pytest.mark.parametrize(("cap", "example"), cases(ON_AN_EXECUTION))
async def test_every_example_naming_an_execution_answers_200_once_one_exists(
    client: httpx.AsyncClient, cap: Capability, example: Example
) -> None:
    start = REGISTRY.by_id["executions.start"]
    started = await call(client, start, start.examples[0].input)
    assert started.status_code == 200, started.text
    execution = started.json()["id"]
    assert "id" in example.input
    r = await call(client, cap, {**example.input, "id": execution})
    assert r.status_code == 200, r.text
    msgspec.json.decode(r.content, type=cap.output)
    # As written, the example names an execution this server never ran.
    assert_error(await call(client, cap, example.input), 404, "not_found", example.input["id"])


@pytest.mark.parametrize(("cap", "example"), cases(WRITERS))
async def test_a_repository_writer_is_403_over_http_and_writes_nothing(
    checkout_client: httpx.AsyncClient, checkout: Path, cap: Capability, example: Example
) -> None:
    before = layer_digest(checkout)
    r = await call(checkout_client, cap, example.input)
    tool = cap.exposure.mcp.tool if cap.exposure.mcp is not None else None
    assert tool is not None
    assert_error(r, 403, "forbidden", cap.id, tool, f"svc {cap.exposure.cli[0]} ")
    assert layer_digest(checkout) == before


@pytest.mark.parametrize(("cap", "example"), cases(WRITERS))
async def test_a_repository_writer_started_as_an_execution_is_403_too(
    checkout_client: httpx.AsyncClient, checkout: Path, cap: Capability, example: Example
) -> None:
    before = layer_digest(checkout)
    start = REGISTRY.by_id["executions.start"]
    r = await call(checkout_client, start, {"capability": cap.id, "input": example.input})
    tool = cap.exposure.mcp.tool if cap.exposure.mcp is not None else None
    assert tool is not None
    assert_error(r, 403, "forbidden", cap.id, tool, f"svc {cap.exposure.cli[0]} ")
    listed = (await checkout_client.get("/api/v1/executions")).json()
    assert listed["count"] == 0
    assert layer_digest(checkout) == before


@pytest.mark.parametrize("route", ["direct", "execution"])
async def test_the_plan_transition_refusal_names_the_tool_and_commands_of_the_design(
    checkout_client: httpx.AsyncClient, route: str
) -> None:
    # docs/registry.md: 403 naming the MCP tool svc_plan_transition and the CLI command
    # `svc plan start|verify|done ID`; executions.start naming plan.transition answers the same.
    cap = REGISTRY.by_id["plan.transition"]
    params = cap.examples[0].input
    if route == "direct":
        r = await call(checkout_client, cap, params)
    else:
        r = await call(checkout_client, REGISTRY.by_id["executions.start"], {"capability": cap.id, "input": params})
    assert_error(r, 403, "forbidden", "svc_plan_transition", "svc plan start|verify|done")


@pytest.mark.slow
@pytest.mark.bound(10)
async def test_a_client_that_leaves_cancels_its_direct_call(server: str, executor: Executor) -> None:
    """A direct `executions.demonstrate` of 10**12 steps (valid: `steps` is a uint64) ends with its client."""
    url = urlsplit(server)
    assert url.hostname is not None
    assert url.port is not None
    stream = await trio.open_tcp_stream(url.hostname, url.port)
    request = f"GET /api/v1/executions/demonstrate?steps={10**12} HTTP/1.1\r\nHost: {url.netloc}\r\n\r\n"
    await stream.send_all(request.encode())
    while executor.supervisor.active == 0:
        await trio.lowlevel.checkpoint()
    async with httpx.AsyncClient(base_url=server) as http:
        assert (await http.get("/api/v1/live")).status_code == 200
    await stream.aclose()
    while executor.supervisor.active:
        await trio.lowlevel.checkpoint()
