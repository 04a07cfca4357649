"""The MCP server in process: the SDK's own client against `build_server`, in both protocol eras.

`mode="legacy"` runs the `initialize` handshake over the SDK's in-memory streams; `mode="2026-07-28"` runs the
per-request era through the SDK's direct dispatcher. The wire itself (stdio, `/mcp`) is tested in
`tests/cli/test_mcp_process.py` and `tests/api/test_mcp_http.py`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import mcp_types as types
import msgspec
import pytest
from mcp import Client
from mcp.client.session import IncomingMessage
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from svc import __version__
from svc.api import RESOURCE_NOT_FOUND, Backend, LocalBackend, build_server
from svc.host._service import open_service
from svc.layer import Repository
from svc.runtime import Actor, Executor, Generation, Runtime, Supervisor
from svc.surfaces import PROTOCOL_VERSIONS, SERVED_METHODS, mcp_catalog
from tests.api._mcp_demo import SECRET, demo_registry

Mode = Literal["legacy", "2026-07-28"]
MODES: list[Mode] = ["legacy", "2026-07-28"]
ACTOR = Actor(kind="internal")


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> Mode:
    mode: Mode = request.param
    return mode


@pytest.fixture
async def executor(checkout: Path) -> AsyncIterator[Executor]:
    async with open_service(Repository.discover(checkout), surface="mcp", watch=False) as ex:
        yield ex


@pytest.fixture
async def demo(tmp_path: Path) -> AsyncIterator[Executor]:
    repo = Repository.discover(tmp_path)
    runtime = Runtime(registry=demo_registry(), repository=repo, generation=Generation(repo, stamp=b""), surface="mcp")
    async with Supervisor.open() as supervisor:
        yield Executor(runtime, supervisor)


@asynccontextmanager
async def connect(
    backend: Backend,
    mode: Mode,
    *,
    transport: Literal["stdio", "http"] = "stdio",
    notes: list[Any] | None = None,
) -> AsyncIterator[Client]:
    server = build_server(backend, transport=transport, peer="stdio-0123abcd", version=__version__)

    async def record(message: IncomingMessage) -> None:
        if notes is not None and not isinstance(message, Exception):
            notes.append(message)

    async with Client(server, mode=mode, message_handler=record) as client:
        yield client


async def http_bytes(executor: Executor, cid: str, **params: Any) -> bytes:
    cap = executor.runtime.registry.by_id[cid]
    return await executor.call(cap, executor.decode_value(cap, params), actor=ACTOR)


def test_the_reported_versions_are_the_sdks_newest_first() -> None:
    assert (*reversed(MODERN_PROTOCOL_VERSIONS), *reversed(HANDSHAKE_PROTOCOL_VERSIONS)) == PROTOCOL_VERSIONS


async def test_the_served_methods_are_exactly_the_registered_handlers(executor: Executor) -> None:
    server = build_server(LocalBackend(executor), transport="stdio", version=__version__)
    handled = {
        m
        for m in (
            *SERVED_METHODS,
            "prompts/list",
            "prompts/get",
            "resources/subscribe",
            "resources/unsubscribe",
            "subscriptions/listen",
            "logging/setLevel",
            "completion/complete",
        )
        if server.get_request_handler(m) is not None
    }
    assert handled | {"initialize"} == set(SERVED_METHODS)


async def test_initialize_names_svc_its_version_and_serves_tools_and_resources_only(executor: Executor) -> None:
    async with connect(LocalBackend(executor), "legacy") as client:
        assert client.protocol_version == HANDSHAKE_PROTOCOL_VERSIONS[-1]
        info = client.server_info
        assert info is not None
        assert (info.name, info.version) == ("svc", __version__)
        caps = client.server_capabilities
        assert caps.tools is not None
        assert caps.tools.list_changed is False
        assert caps.resources is not None
        assert (caps.resources.subscribe, caps.resources.list_changed) == (False, False)
        assert (caps.prompts, caps.logging, caps.completions) == (None, None, None)
        instructions = client.instructions or ""
        tools = len(mcp_catalog(executor.runtime.registry).tools)
        assert f"{tools} tools" in instructions
        assert "svc://<kind>/<identity>" in instructions
        assert "svc_plan_transition" in instructions
        assert "Your peer id: stdio-0123abcd." in instructions


async def test_tools_list_is_the_catalog_with_schemas_annotations_and_meta(executor: Executor, mode: Mode) -> None:
    catalog = mcp_catalog(executor.runtime.registry)
    async with connect(LocalBackend(executor), mode) as client:
        listed = (await client.list_tools()).tools
    assert [t.name for t in listed] == [t.name for t in catalog.tools]
    for tool, spec in zip(listed, catalog.tools, strict=True):
        assert tool.title == spec.title
        assert tool.input_schema == spec.input_schema
        assert tool.input_schema["type"] == "object"
        assert tool.output_schema == spec.output_schema
        assert tool.meta == {"svc": {"id": spec.capability, "effect": spec.effect}}
        assert tool.annotations is not None
        hints = (
            tool.annotations.read_only_hint,
            tool.annotations.destructive_hint,
            tool.annotations.idempotent_hint,
            tool.annotations.open_world_hint,
        )
        assert hints == (spec.hints.read_only, spec.hints.destructive, spec.hints.idempotent, False)
    by_name = {t.name: t for t in listed}
    assert by_name["svc_health"].annotations is not None
    assert by_name["svc_health"].annotations.read_only_hint is True
    writer = by_name["svc_plan_transition"].annotations
    assert writer is not None
    assert (writer.read_only_hint, writer.destructive_hint) == (False, True)


@pytest.mark.parametrize(
    ("tool", "cid", "arguments"),
    [
        ("svc_capability", "capabilities.describe", {"id": "health.live"}),
        ("svc_projections", "capabilities.projections", {"module": "health"}),
        ("svc_mcp", "mcp.projection", {"effect": "read"}),
        ("svc_execution_protocol", "executions.protocol", {}),
    ],
)
async def test_a_call_answers_the_http_bytes_as_text_and_as_structured_content(
    executor: Executor, mode: Mode, tool: str, cid: str, arguments: dict[str, Any]
) -> None:
    async with connect(LocalBackend(executor), mode) as client:
        await client.list_tools()
        result = await client.call_tool(tool, arguments)
    expected = await http_bytes(executor, cid, **arguments)
    assert result.is_error is False
    assert len(result.content) == 1
    content = result.content[0]
    assert isinstance(content, types.TextContent)
    assert content.text.encode() == expected
    assert result.structured_content == msgspec.json.decode(expected)


async def test_a_bad_argument_is_a_tool_error_naming_the_field(executor: Executor, mode: Mode) -> None:
    async with connect(LocalBackend(executor), mode) as client:
        wrong_type = await client.call_tool("svc_projections", {"unmet": "yes"})
        unknown = await client.call_tool("svc_mcp", {"effects": "read"})
        missing = await client.call_tool("svc_capability", {})
    for result, field in ((wrong_type, "$.unmet"), (unknown, "effects"), (missing, "id")):
        assert result.is_error is True
        text = result.content[0]
        assert isinstance(text, types.TextContent)
        assert text.text.startswith("invalid_input: ")
        assert field in text.text
        assert result.meta is not None
        assert result.meta["svc"] == {"error": {"code": "invalid_input"}}
        assert result.structured_content is None


@pytest.mark.parametrize("code", ["invalid_input", "not_found", "refused", "forbidden", "unavailable"])
async def test_a_refusal_is_a_tool_error_with_its_code(demo: Executor, mode: Mode, code: str) -> None:
    async with connect(LocalBackend(demo), mode) as client:
        result = await client.call_tool("demo_raise", {"code": code})
    assert result.is_error is True
    text = result.content[0]
    assert isinstance(text, types.TextContent)
    assert text.text.startswith(f"{code}: ")
    assert result.meta is not None
    assert result.meta["svc"] == {"error": {"code": code}}


async def test_a_crash_is_an_internal_error_with_a_correlation_id_and_no_detail(demo: Executor, mode: Mode) -> None:
    async with connect(LocalBackend(demo), mode) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("demo_crash", {})
        assert caught.value.code == types.INTERNAL_ERROR
        assert caught.value.message.startswith("internal error (correlation id c-")
        assert SECRET not in str(caught.value)
        # The session survives the failure.
        assert (await client.call_tool("demo_echo", {"count": 2})).structured_content == {"count": 2, "note": None}


async def test_an_unknown_tool_is_invalid_params(executor: Executor, mode: Mode) -> None:
    async with connect(LocalBackend(executor), mode) as client:
        with pytest.raises(MCPError) as caught:
            await client.session.call_tool("svc_nope", {})
    assert caught.value.code == types.INVALID_PARAMS
    assert "svc_nope" in caught.value.message


async def test_a_repository_writer_runs_over_stdio_and_is_forbidden_over_http(demo: Executor, mode: Mode) -> None:
    async with connect(LocalBackend(demo), mode, transport="stdio") as client:
        ran = await client.call_tool("demo_write", {})
    assert ran.is_error is False
    assert ran.structured_content == {"wrote": "the repository"}
    async with connect(LocalBackend(demo), mode, transport="http") as client:
        refused = await client.call_tool("demo_write", {})
    assert refused.is_error is True
    text = refused.content[0]
    assert isinstance(text, types.TextContent)
    assert text.text.startswith("forbidden: HTTP never writes the repository")
    assert "over stdio (`svc mcp`)" in text.text


async def test_resources_are_the_query_resources_then_the_layers_objects(executor: Executor, mode: Mode) -> None:
    catalog = mcp_catalog(executor.runtime.registry)
    objects = await executor.runtime.objects_async()
    async with connect(LocalBackend(executor), mode) as client:
        listed = (await client.list_resources()).resources
        templates = (await client.list_resource_templates()).resource_templates
    assert [r.uri for r in listed] == [r.uri for r in catalog.resources] + [o.uri for o in objects.objects]
    builtin = listed[: len(catalog.resources)]
    assert all(r.mime_type == "application/json" for r in builtin)
    assert {r.uri for r in builtin} >= {"svc://mcp", "svc://health", "svc://executions"}
    issue = next(r for r in listed if r.uri == "svc://issue/I0001")
    assert issue.mime_type == "application/yaml"
    assert issue.meta == {"svc": {"id": "issue.I0001", "kind": "issue", "path": ".ai/repo/project/issues/I0001.yaml"}}
    assert templates == []


async def test_reading_a_query_resource_answers_through_the_executor(executor: Executor, mode: Mode) -> None:
    async with connect(LocalBackend(executor), mode) as client:
        read = await client.read_resource("svc://executions/protocol")
    expected = await http_bytes(executor, "executions.protocol")
    (content,) = read.contents
    assert isinstance(content, types.TextResourceContents)
    assert (content.uri, content.mime_type) == ("svc://executions/protocol", "application/json")
    assert content.text.encode() == expected


async def test_reading_an_object_answers_its_file(executor: Executor, checkout: Path, mode: Mode) -> None:
    async with connect(LocalBackend(executor), mode) as client:
        rule = await client.read_resource("svc://rule/project.no-plan-stamp-by-hand@1")
        issue = await client.read_resource("svc://issue/I0003")
    (text,) = rule.contents
    assert isinstance(text, types.TextResourceContents)
    assert text.mime_type == "text/markdown"
    assert text.text == (checkout / ".ai/repo/rules/project/no-plan-stamp-by-hand.v1.md").read_text(encoding="utf-8")
    (yaml,) = issue.contents
    assert isinstance(yaml, types.TextResourceContents)
    assert yaml.mime_type == "application/yaml"
    assert yaml.text == (checkout / ".ai/repo/project/issues/I0003.yaml").read_text(encoding="utf-8")


async def test_an_unknown_resource_is_32002_in_the_handshake_era_and_32602_after(executor: Executor) -> None:
    for mode, code in (("legacy", RESOURCE_NOT_FOUND), ("2026-07-28", types.INVALID_PARAMS)):
        async with connect(LocalBackend(executor), mode) as client:  # type: ignore[arg-type]
            with pytest.raises(MCPError) as caught:
                await client.read_resource("svc://issue/I9999")
        assert caught.value.code == code
        assert caught.value.data == {"uri": "svc://issue/I9999"}


async def test_a_failing_query_resource_is_an_internal_error(demo: Executor, mode: Mode) -> None:
    async with connect(LocalBackend(demo), mode) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource("svc://demo/crash")
    assert caught.value.code == types.INTERNAL_ERROR
    assert SECRET not in str(caught.value)


async def test_methods_outside_the_served_set_are_method_not_found(executor: Executor, mode: Mode) -> None:
    requests: list[tuple[Any, Any]] = [
        (types.ListPromptsRequest(), types.ListPromptsResult),
        (
            types.CompleteRequest(
                params=types.CompleteRequestParams(
                    ref=types.PromptReference(name="x"), argument=types.CompletionArgument(name="a", value="b")
                )
            ),
            types.CompleteResult,
        ),
    ]
    if mode == "legacy":
        requests += [
            (types.SubscribeRequest(params=types.SubscribeRequestParams(uri="svc://mcp")), types.EmptyResult),
            (types.SetLevelRequest(params=types.SetLevelRequestParams(level="info")), types.EmptyResult),
        ]
    async with connect(LocalBackend(executor), mode) as client:
        for request, result in requests:
            with pytest.raises(MCPError) as caught:
                await client.session.send_request(request, result)
            assert caught.value.code == types.METHOD_NOT_FOUND, request


async def test_nothing_is_sent_unasked(executor: Executor, mode: Mode) -> None:
    notes: list[Any] = []
    async with connect(LocalBackend(executor), mode, notes=notes) as client:
        await client.list_tools()
        await client.call_tool("svc_executions", {})
        await client.list_resources()
        await client.read_resource("svc://health")
    assert notes == []
