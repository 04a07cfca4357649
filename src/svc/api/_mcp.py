"""The MCP projection: the SDK's low-level `Server` answering tools and resources from the registry.

One `Server` serves one transport (stdio, or `/mcp` over HTTP). Its handlers only translate: a request goes
to a `Backend`, which is either this process's executor (`LocalBackend`) or, for a bridged stdio session,
the process that serves the checkout (`svc.api.RemoteBackend`). The JSON-RPC wire, both protocol eras and
the method table are the SDK's; svc never writes the wire itself.

Served: `initialize` (handshake era), `server/discover` (2026-07-28 era), `ping`, `tools/list`,
`tools/call`, `resources/list`, `resources/read`, `resources/templates/list`. Every other method (prompts,
subscriptions, logging, completion) has no handler, so the SDK answers -32601. Nothing is sent unasked.

Errors of a call (`error_result`, the one mapping): every `SvcError` but `internal` is a tool result with
`isError` and the code in `_meta.svc.error.code`; `internal` is -32603 naming its correlation id; an unknown
tool is -32602. An unknown resource is -32002 on a handshake-era connection and -32602 (with `data.uri`) on
the 2026-07-28 era, which retired -32002.
"""

from __future__ import annotations

import base64
import logging
import secrets
from typing import TYPE_CHECKING, Any, Literal, Protocol

import mcp_types as types
import msgspec
import trio
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from svc._errors import Internal, SvcError
from svc.runtime import Actor, Executor, McpAttachments
from svc.surfaces import OBJECT_TEMPLATE, SERVER_NAME, SERVER_TITLE, ToolSpec, mcp_catalog
from svc.surfaces._mcp_catalog import ALL_TOOLS, ToolSet

if TYPE_CHECKING:
    from svc.layer import LayerObject, ObjectIndex

__all__ = [
    "BRIDGE_HEADER",
    "RESOURCE_NOT_FOUND",
    "Backend",
    "LocalBackend",
    "UnknownResource",
    "build_server",
    "error_result",
    "new_peer",
]

_log = logging.getLogger("svc.mcp")

#: Header a bridging `svc mcp` sends on `/mcp`; its value is the stdio session's peer id.
BRIDGE_HEADER = "svc-mcp-bridge"
#: Unknown resource on handshake-era connections (the 2026-07-28 era answers -32602 instead).
RESOURCE_NOT_FOUND = -32002
_PEER_KEY = "svc.peer"
_JSON = "application/json"
Transport = Literal["stdio", "http"]


class UnknownResource(Exception):
    """No resource has this URI."""

    def __init__(self, uri: str) -> None:
        super().__init__(f"unknown resource {uri!r}; resources/list names every resource")
        self.uri = uri


class Backend(Protocol):
    """Where an MCP session's requests are answered."""

    async def list_tools(self) -> types.ListToolsResult:
        """Every tool."""

    async def call_tool(self, name: str, arguments: dict[str, Any] | None, *, actor: Actor) -> types.CallToolResult:
        """Call one tool; a refusal is a result with `isError`.

        Raises:
            MCPError: unknown tool (-32602) or an internal failure (-32603).
        """

    async def list_resources(self) -> types.ListResourcesResult:
        """Every resource: the query resources, then the layer's objects."""

    async def read_resource(self, uri: str, *, actor: Actor) -> types.ReadResourceResult:
        """Read one resource.

        Raises:
            UnknownResource: no resource has this URI.
            MCPError: reading it failed.
        """

    async def instructions(self, peer: str | None) -> str:
        """The `instructions` of the handshake for a session with this peer id."""


def new_peer(transport: str) -> str:
    """A fresh peer id for one MCP session (`<transport>-<8 hex>`)."""
    return f"{transport}-{secrets.token_hex(4)}"


def error_result(exc: SvcError) -> types.CallToolResult:
    """A refusal as a tool result: `<code>: <message>`, `isError`, the code under `_meta.svc.error`.

    Raises:
        MCPError: -32603 with the message (its correlation id) when `exc` is `internal`.
    """
    if exc.code == Internal.code:
        raise MCPError(code=types.INTERNAL_ERROR, message=exc.message) from None
    return types.CallToolResult(
        content=[types.TextContent(text=f"{exc.code}: {exc.message}")],
        is_error=True,
        _meta={"svc": {"error": {"code": exc.code}}},
    )


def _tool(spec: ToolSpec) -> types.Tool:
    hints = spec.hints
    return types.Tool(
        name=spec.name,
        title=spec.title,
        description=spec.description,
        input_schema=spec.input_schema,
        output_schema=spec.output_schema,
        annotations=types.ToolAnnotations(
            title=spec.title,
            read_only_hint=hints.read_only,
            destructive_hint=hints.destructive,
            idempotent_hint=hints.idempotent,
            open_world_hint=hints.open_world,
        ),
        _meta={"svc": {"id": spec.capability, "effect": spec.effect}},
    )


def _object_resource(obj: LayerObject) -> types.Resource:
    return types.Resource(
        uri=obj.uri,
        name=obj.identity,
        title=obj.title,
        description=obj.description,
        mime_type=obj.media_type,
        _meta={"svc": {"id": obj.id, "kind": obj.kind, "path": obj.path}},
    )


def _contents(uri: str, mime_type: str, data: bytes) -> types.ReadResourceResult:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        blob = types.BlobResourceContents(uri=uri, mime_type=mime_type, blob=base64.b64encode(data).decode())
        return types.ReadResourceResult(contents=[blob])
    return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type=mime_type, text=text)])


class LocalBackend:
    """Answers from this process's registry through its executor and cache."""

    def __init__(self, executor: Executor) -> None:
        self.executor = executor
        self.runtime = executor.runtime
        self.catalog = mcp_catalog(self.runtime.registry)
        self._tools = types.ListToolsResult(tools=[_tool(t) for t in self.catalog.tools])
        self._builtin = [
            types.Resource(
                uri=r.uri,
                name=r.name,
                title=r.title,
                description=r.description,
                mime_type=_JSON,
                _meta={"svc": {"id": r.capability, "kind": "query"}},
            )
            for r in self.catalog.resources
        ]
        self._resources: tuple[ObjectIndex, types.ListResourcesResult] | None = None
        self._decoder = msgspec.json.Decoder()

    async def list_tools(self) -> types.ListToolsResult:
        """Every tool, built once (the registry is frozen for the life of the process)."""
        return self._tools

    async def call_tool(self, name: str, arguments: dict[str, Any] | None, *, actor: Actor) -> types.CallToolResult:
        """Decode the arguments, call the capability through the executor, answer its JSON both ways.

        Raises:
            MCPError: -32602 for an unknown tool, -32603 for an internal failure.
        """
        spec = self.catalog.tool_by_name.get(name)
        if spec is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"unknown tool {name!r}; tools/list names every tool")
        cap = self.runtime.registry.by_id[spec.capability]
        try:
            self.executor.admit(cap, actor)
            body = await self.executor.call(cap, self.executor.decode_value(cap, arguments), actor=actor)
        except SvcError as exc:
            return error_result(exc)
        value = self._decoder.decode(body)
        return types.CallToolResult(
            content=[types.TextContent(text=body.decode())],
            structured_content=value if isinstance(value, dict) else None,
        )

    async def _objects(self) -> tuple[ObjectIndex, types.ListResourcesResult]:
        index = await self.runtime.objects_async()
        cached = self._resources
        if cached is None or cached[0] is not index:
            listing = types.ListResourcesResult(resources=[*self._builtin, *map(_object_resource, index.objects)])
            cached = self._resources = (index, listing)
        return cached

    async def list_resources(self) -> types.ListResourcesResult:
        """The query resources, then the layer's objects in URI order (listed once per generation)."""
        return (await self._objects())[1]

    async def read_resource(self, uri: str, *, actor: Actor) -> types.ReadResourceResult:
        """A query resource answers through the executor; an object answers its file's content.

        Raises:
            UnknownResource: no resource has this URI.
            MCPError: -32603 when the query failed or the object's file cannot be read.
        """
        spec = self.catalog.resource_by_uri.get(uri)
        if spec is not None:
            cap = self.runtime.registry.by_id[spec.capability]
            try:
                body = await self.executor.call(cap, self.executor.decode_value(cap, {}), actor=actor)
            except SvcError as exc:
                raise MCPError(code=types.INTERNAL_ERROR, message=f"{exc.code}: {exc.message}") from None
            return _contents(uri, _JSON, body)
        index, _ = await self._objects()
        obj = index.get(uri)
        if obj is None:
            raise UnknownResource(uri)
        try:
            data = await trio.to_thread.run_sync(index.read, obj, self.runtime.repository)
        except OSError as exc:
            raise MCPError(code=types.INTERNAL_ERROR, message=f"{obj.path} cannot be read: {exc}") from None
        return _contents(uri, obj.media_type, data)

    async def instructions(self, peer: str | None) -> str:
        """Counts, the URI shape, the writers, the server's URLs and the caller's peer id."""
        index, _ = await self._objects()
        catalog = self.catalog
        lines = [
            f"svc serves the capability registry of the repository {self.runtime.repository.name!r}: "
            f"{len(catalog.tools)} tools and {len(catalog.resources) + len(index)} resources "
            f"({len(catalog.resources)} query resources, {len(index)} layer objects named {OBJECT_TEMPLATE}).",
        ]
        if catalog.writers:
            lines.append(
                f"Tools that write the repository: {', '.join(catalog.writers)} "
                "(over stdio only; MCP on /mcp never writes the repository)."
            )
        else:
            lines.append("Nothing here writes to the repository.")
        url = self.runtime.server.url
        if url is not None:
            lines.append(f"Server: {url}/ (home), {url}/swagger, {url}/openapi.json, {url}/mcp.")
        else:
            lines.append("No HTTP server runs beside this session.")
        if peer is not None:
            lines.append(f"Your peer id: {peer}.")
        return "\n".join(lines)


class _ToolSetBackend:
    """A backend seen through a tool set: only the set's tools are listed and callable; resources pass."""

    def __init__(self, inner: Backend, tools: ToolSet) -> None:
        self.inner = inner
        self.tools = tools
        self.names = tools.names

    async def list_tools(self) -> types.ListToolsResult:
        """The inner backend's tools that are in the set, in its order."""
        listed = await self.inner.list_tools()
        return listed.model_copy(update={"tools": [t for t in listed.tools if t.name in self.names]})

    async def call_tool(self, name: str, arguments: dict[str, Any] | None, *, actor: Actor) -> types.CallToolResult:
        """Call a tool of the set; any other name is an unknown tool.

        Raises:
            MCPError: -32602 for a tool outside the set (or unknown), else whatever the inner backend raises.
        """
        if name not in self.names:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"unknown tool {name!r}: this session serves the tool set {self.tools.set!r}; "
                "tools/list names every tool of it",
            )
        return await self.inner.call_tool(name, arguments, actor=actor)

    async def list_resources(self) -> types.ListResourcesResult:
        """Every resource: a tool set leaves resources alone."""
        return await self.inner.list_resources()

    async def read_resource(self, uri: str, *, actor: Actor) -> types.ReadResourceResult:
        """Read on the inner backend."""
        return await self.inner.read_resource(uri, actor=actor)

    async def instructions(self, peer: str | None) -> str:
        """The inner backend's instructions, and the line naming the set this session serves."""
        tools = self.tools
        line = (
            f"This session serves the tool set {tools.set!r} (svc mcp --tools {tools.set}): "
            f"{len(tools.tools)} tools, about {tools.tokens} tokens of tool listing; every resource is served."
        )
        inner = await self.inner.instructions(peer)
        return f"{inner}\n{line}" if inner else line


def _connection(ctx: ServerRequestContext[Any, Any]) -> Connection | None:
    """The connection of a request.

    The SDK hands handlers no public reference to it; its `state` and `exit_stack` are the documented
    per-connection hooks, reached through the request's session.
    """
    connection = getattr(ctx.session, "_connection", None)
    return connection if isinstance(connection, Connection) else None


def _bridge_peer(ctx: ServerRequestContext[Any, Any]) -> str | None:
    request = ctx.request
    headers = getattr(request, "headers", None)
    if headers is None:
        return None
    value = headers.get(BRIDGE_HEADER)
    return value if isinstance(value, str) and value else None


class _Sessions:
    """Server middleware: names each session's peer, counts attached sessions, writes the instructions."""

    def __init__(
        self,
        backend: Backend,
        transport: Transport,
        peer: str | None,
        attachments: McpAttachments | None,
    ) -> None:
        self.backend = backend
        self.transport = transport
        self.peer = peer
        self.attachments = attachments

    def peer_of(self, ctx: ServerRequestContext[Any, Any]) -> str | None:
        if self.peer is not None:
            return self.peer
        connection = _connection(ctx)
        if connection is None:
            return None
        value = connection.state.get(_PEER_KEY)
        return value if isinstance(value, str) else None

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "initialize":
            result = await call_next(ctx)
            peer = self._attach(ctx)
            if isinstance(result, dict):
                result["instructions"] = await self.backend.instructions(peer)
            return result
        if ctx.method == "server/discover":
            result = await call_next(ctx)
            if isinstance(result, dict):
                result["instructions"] = await self.backend.instructions(self.peer)
            return result
        return await call_next(ctx)

    def _attach(self, ctx: ServerRequestContext[Any, Any]) -> str | None:
        """Name the session's peer; count an HTTP session until its connection closes."""
        if self.peer is not None:
            return self.peer
        connection = _connection(ctx)
        if connection is None:
            return None
        bridged = _bridge_peer(ctx)
        peer = connection.state.get(_PEER_KEY)
        if not isinstance(peer, str):
            peer = bridged or new_peer(self.transport)
            connection.state[_PEER_KEY] = peer
            attachments = self.attachments
            if attachments is not None:
                kind = "bridged" if bridged else self.transport
                attachments.attach(kind, peer)
                connection.exit_stack.callback(attachments.detach, kind, peer)
        return peer


def build_server(
    backend: Backend,
    *,
    transport: Transport,
    peer: str | None = None,
    attachments: McpAttachments | None = None,
    version: str,
    tools: ToolSet | None = None,
) -> Server[Any]:
    """A low-level SDK `Server` for one transport.

    Args:
        backend: where requests are answered (a bridge's backend re-elects behind the same object).
        transport: `stdio` (the process's own pipe, one session) or `http` (`/mcp`, many sessions).
        peer: the peer id of every request (stdio); None mints one per HTTP session at `initialize`.
        attachments: counts the HTTP sessions attached now (stdio sessions are counted by their runner).
        version: the executable's version, reported as `serverInfo.version`.
        tools: the tool set served (`svc mcp --tools`): only its tools are listed and callable, whichever
            backend answers; None or `all` serves every tool.
    """
    if tools is not None and tools.set != ALL_TOOLS:
        backend = _ToolSetBackend(backend, tools)
    sessions = _Sessions(backend, transport, peer, attachments)

    def actor(ctx: ServerRequestContext[Any, Any]) -> Actor:
        return Actor(kind="mcp", peer=sessions.peer_of(ctx), transport=transport)

    async def on_list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return await backend.list_tools()

    async def on_call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return await backend.call_tool(params.name, params.arguments, actor=actor(ctx))

    async def on_list_resources(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return await backend.list_resources()

    async def on_read_resource(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        try:
            return await backend.read_resource(params.uri, actor=actor(ctx))
        except UnknownResource as exc:
            modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
            code = types.INVALID_PARAMS if modern else RESOURCE_NOT_FOUND
            raise MCPError(code=code, message=str(exc), data={"uri": exc.uri}) from None

    async def on_list_resource_templates(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[])

    server: Server[Any] = Server(
        SERVER_NAME,
        version=version,
        title=SERVER_TITLE,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        on_list_resources=on_list_resources,
        on_read_resource=on_read_resource,
        on_list_resource_templates=on_list_resource_templates,
    )
    # svc exports no traces: the SDK's OpenTelemetry middleware would only cost time per message.
    server.middleware = [sessions]
    return server
