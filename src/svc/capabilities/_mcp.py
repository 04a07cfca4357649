"""`mcp.projection`: what the MCP server serves, who is attached, and how this repository's clients reach it.

Pure: it reads the registry's MCP catalog, the object index, the attached-session counts of this process, the
tool set its `svc mcp` stdio session serves and a few client configuration files of the repository. It imports
no MCP library.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
import trio
from msgspec import Meta

from svc._errors import NotFound
from svc._version import __version__
from svc.layer import read_repository_file
from svc.registry import Declarations, Example, Hints, McpResource, Module
from svc.runtime import Context, Runtime
from svc.surfaces import OBJECT_TEMPLATE, PROTOCOL_VERSIONS, SERVED_METHODS, SERVER_NAME, SERVER_TITLE, mcp_catalog
from svc.surfaces._mcp_catalog import (
    ALL_TOOLS,
    CORE_TOOL_SET,
    SERVED_TOOL_SET,
    McpCatalog,
    ToolSet,
    UnknownToolSet,
    tool_set,
)

__all__ = ["CLIENTS", "LAUNCHER", "LAUNCHER_PATH", "client_entry", "client_standing"]

MODULE = Module(
    id="mcp",
    title="MCP",
    description="The MCP projection of the registry: tools, resources, transports and the clients that reach it.",
    stability="experimental",
)

Effect = Literal["read", "process_state", "repository_mutation"]
Standing = Literal["wired", "foreign", "absent"]

LAUNCHER_PATH = "bin/svc-mcp"
#: The launcher every repository served by svc ships; `bin/svc-mcp` of this repository is this text.
LAUNCHER = """\
#!/bin/sh
# Start svc's MCP server for this repository over stdio: `svc mcp`, from $SVC_BIN when set, else the
# checkout's own .venv, else `svc` on PATH, else `python3 -m svc`. Nothing is printed on stdout (it is the
# MCP wire); exit 12 when no svc is found. MCP clients name this file in their configuration (.mcp.json and the like).
set -eu
root=$(CDPATH='' cd -- "$(dirname -- "$0")/.." && pwd)
if [ -n "${SVC_BIN:-}" ]; then
  exec "$SVC_BIN" --repo "$root" mcp "$@"
fi
if [ -x "$root/.venv/bin/svc" ]; then
  exec "$root/.venv/bin/svc" --repo "$root" mcp "$@"
fi
if command -v svc >/dev/null 2>&1; then
  exec svc --repo "$root" mcp "$@"
fi
if command -v python3 >/dev/null 2>&1 && python3 -c 'import svc' >/dev/null 2>&1; then
  exec python3 -m svc --repo "$root" mcp "$@"
fi
echo "svc-mcp: svc is not installed (set SVC_BIN, put svc on PATH, or install it for python3)" >&2
exit 12
"""


@dataclass(frozen=True, slots=True)
class ClientKind:
    """An MCP client whose per-repository configuration svc knows how to read."""

    id: str
    title: str
    config: str
    format: Literal["json", "toml"]
    servers_key: str


CLIENTS: tuple[ClientKind, ...] = (
    ClientKind("claude-code", "Claude Code", ".mcp.json", "json", "mcpServers"),
    ClientKind("codex", "Codex", ".codex/config.toml", "toml", "mcp_servers"),
    ClientKind("cursor", "Cursor", ".cursor/mcp.json", "json", "mcpServers"),
    ClientKind("gemini", "Gemini CLI", ".gemini/settings.json", "json", "mcpServers"),
    ClientKind("vscode", "VS Code", ".vscode/mcp.json", "json", "servers"),
)


class ProjectionInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Filter of `mcp.projection`."""

    effect: Annotated[Effect | None, Meta(description="keep only the tools of this effect")] = None
    tools: Annotated[
        Annotated[str, Meta(pattern=r"^ *[A-Za-z0-9_-]+ *(, *[A-Za-z0-9_-]+ *)*$")] | None,
        Meta(
            description=(
                "a tool set (all, core, or a comma list of module ids and tool names): sized in `tool_sets` "
                "beside all and core, and passed as `--tools SET` by the client entries the findings offer; "
                "a name that is neither a module with tools nor a tool is not found"
            ),
        ),
    ] = None


class McpServerIdentity(msgspec.Struct, frozen=True, kw_only=True):
    """Who the server says it is (`serverInfo`)."""

    name: str
    title: str
    version: str


class McpTransportEntry(msgspec.Struct, frozen=True, kw_only=True):
    """A transport and the sessions attached through it now."""

    id: Literal["stdio", "http"]
    reached_by: str
    attached: int


class McpServing(msgspec.Struct, frozen=True, kw_only=True):
    """What the server answers; any other method is answered -32601."""

    methods: list[str]
    tools: bool
    resources: bool
    prompts: bool
    notifications: bool


class McpToolEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One tool: its capability, effect and hints."""

    name: str
    capability: str
    module: str
    title: str
    effect: Effect
    hints: Hints


_TOKENS = (
    "estimated tokens of the tools/list answer holding these tools: the UTF-8 bytes of the compact JSON array of "
    "the tools as listed, divided by 4 and rounded up"
)


class McpToolSetServed(msgspec.Struct, frozen=True, kw_only=True):
    """The tool set the answering process's `svc mcp` stdio session serves (`svc mcp --tools`)."""

    set: Annotated[str, Meta(description="all, core, or the comma list of module ids and tool names given")]
    tools: Annotated[list[str], Meta(description="the tool names of the set, in registry order")]
    tool_count: int
    tokens: Annotated[int, Meta(description=_TOKENS)]


class McpToolSetSize(msgspec.Struct, frozen=True, kw_only=True):
    """How large the tool listing of one tool set is."""

    set: str
    tool_count: int
    tokens: Annotated[int, Meta(description=_TOKENS)]


class McpEffectCount(msgspec.Struct, frozen=True, kw_only=True):
    """How many tools have one effect."""

    effect: Effect
    tools: int


class McpResourceSummary(msgspec.Struct, frozen=True, kw_only=True):
    """The resources: query resources of the registry and objects of the layer."""

    builtin: int
    objects: int
    template: str


class McpClient(msgspec.Struct, frozen=True, kw_only=True):
    """An MCP client's configuration file in this repository and whether it reaches svc."""

    id: str
    title: str
    config: str
    standing: Standing


class McpFinding(msgspec.Struct, frozen=True, kw_only=True):
    """Something to do, with the exact change that does it."""

    code: str
    message: str
    remedy: str


class McpProjection(msgspec.Struct, frozen=True, kw_only=True):
    """`mcp.projection`: the MCP server as the registry projects it; empty `findings` means nothing to do."""

    server: McpServerIdentity
    protocol_versions: list[str]
    transports: list[McpTransportEntry]
    serving: McpServing
    tool_count: int
    tools: list[McpToolEntry]
    tool_set: Annotated[
        McpToolSetServed,
        Meta(
            description=(
                "the tool set the stdio session of the answering process serves: `all` unless it is an "
                "`svc mcp --tools SET` (`/mcp` serves every tool; a bridging `svc mcp` applies its own set)"
            )
        ),
    ]
    tool_sets: Annotated[
        list[McpToolSetSize],
        Meta(description="the sizes of `all`, `core` and the set named by the `tools` input, in that order"),
    ]
    effects: list[McpEffectCount]
    writers: list[str]
    resources: McpResourceSummary
    launcher_in_repository: bool
    clients: list[McpClient]
    findings: list[McpFinding]


_EFFECTS: tuple[Effect, ...] = ("read", "process_state", "repository_mutation")


def _names_launcher(entry: Any) -> bool:
    """Whether one server entry of a client configuration starts svc's MCP server."""
    if not isinstance(entry, dict):
        return False
    command = entry.get("command")
    if not isinstance(command, str):
        return False
    raw_args = entry.get("args")
    args = [str(a) for a in raw_args] if isinstance(raw_args, list) else []
    if command == LAUNCHER_PATH or command.endswith("/svc-mcp"):
        return True
    if command == "svc" or command.endswith("/svc"):
        if args[:2] and args[0] == "--repo":
            args = args[2:]
        return args[:1] == ["mcp"]
    return False


def client_standing(runtime: Runtime, client: ClientKind) -> Standing:
    """`wired` (the file parses and a server entry starts svc), `foreign` (any other file), `absent`."""
    try:
        raw = read_repository_file(runtime.repository.root, Path(client.config))
    except FileNotFoundError:
        return "absent"
    except OSError:
        return "foreign"
    try:
        data = tomllib.loads(raw.decode()) if client.format == "toml" else json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return "foreign"
    servers = data.get(client.servers_key) if isinstance(data, dict) else None
    if isinstance(servers, dict) and any(_names_launcher(entry) for entry in servers.values()):
        return "wired"
    return "foreign"


def client_entry(client: ClientKind, tools: str | None = None) -> str:
    """The exact entry that wires `client` to the launcher, as it is written in its file.

    With `tools`, a tool set other than `all`, the entry passes the launcher `--tools SET` in its `args`.
    """
    args = ["--tools", tools] if tools is not None and tools != ALL_TOOLS else []
    if client.format == "toml":
        line = f"args = {json.dumps(args)}\n" if args else ""
        return f'[mcp_servers.svc]\ncommand = "{LAUNCHER_PATH}"\n{line}'
    entry: dict[str, Any] = {"type": "stdio"} if client.servers_key == "servers" else {}
    entry["command"] = LAUNCHER_PATH
    if args:
        entry["args"] = args
    return json.dumps({client.servers_key: {"svc": entry}}, indent=2) + "\n"


def _findings(launcher: bool, clients: list[McpClient], tools: str | None = None) -> list[McpFinding]:
    out: list[McpFinding] = []
    if not launcher:
        out.append(
            McpFinding(
                code="mcp_launcher_missing",
                message=f"{LAUNCHER_PATH} is not in this repository, so a client configuration has no launcher "
                "that travels with the checkout",
                remedy=f"create {LAUNCHER_PATH} (mode 0755) with this content:\n{LAUNCHER}",
            )
        )
    if not any(c.standing == "wired" for c in clients):
        first = CLIENTS[0]
        out.append(
            McpFinding(
                code="mcp_no_client_configured",
                message="no MCP client configuration of this repository starts svc",
                remedy=f"create {first.config} with this content:\n{client_entry(first, tools)}"
                + "".join(f"or {k.config} with:\n{client_entry(k, tools)}" for k in CLIENTS[1:]),
            )
        )
    kinds = {k.id: k for k in CLIENTS}
    for client in clients:
        if client.standing == "foreign":
            kind = kinds[client.id]
            out.append(
                McpFinding(
                    code="mcp_client_config_foreign",
                    message=f"{client.config} ({client.title}) exists but none of its servers starts svc",
                    remedy=f"add this entry to {client.config} (merge it with the servers already there):\n"
                    + client_entry(kind, tools),
                )
            )
    return out


def _standings(runtime: Runtime) -> tuple[bool, list[McpClient]]:
    """Whether the launcher is present, and each client's standing (file reads: run it in a worker thread)."""
    launcher = (runtime.repository.root / LAUNCHER_PATH).is_file()
    clients = [
        McpClient(id=k.id, title=k.title, config=k.config, standing=client_standing(runtime, k)) for k in CLIENTS
    ]
    return launcher, clients


def _asked(catalog: McpCatalog, spec: str | None) -> ToolSet | None:
    """The tool set the `tools` input names, if any.

    Raises:
        NotFound: it names something that is neither a module with tools nor a tool.
    """
    if spec is None:
        return None
    try:
        return tool_set(catalog, spec)
    except UnknownToolSet as exc:
        raise NotFound(f"tools: {exc}") from None


def _size(tools: ToolSet) -> McpToolSetSize:
    return McpToolSetSize(set=tools.set, tool_count=len(tools.tools), tokens=tools.tokens)


def _tool_sets(catalog: McpCatalog, asked: ToolSet | None) -> tuple[McpToolSetServed, list[McpToolSetSize]]:
    """The set this process's stdio session serves, and the sizes of `all`, `core` and the set asked for."""
    everything = tool_set(catalog, ALL_TOOLS)
    served = SERVED_TOOL_SET.get() or everything
    sizes = [_size(everything), _size(tool_set(catalog, CORE_TOOL_SET))]
    if asked is not None and asked.set not in (ALL_TOOLS, CORE_TOOL_SET):
        sizes.append(_size(asked))
    entry = McpToolSetServed(
        set=served.set, tools=list(served.tools), tool_count=len(served.tools), tokens=served.tokens
    )
    return entry, sizes


async def projection(ctx: Context, params: ProjectionInput) -> McpProjection:
    """The MCP projection of this process's registry, sessions and repository.

    Raises:
        NotFound: the `tools` input names something that is neither a module with tools nor a tool.
    """
    runtime = ctx.runtime
    catalog = mcp_catalog(runtime.registry)
    asked = _asked(catalog, params.tools)
    served, sizes = _tool_sets(catalog, asked)
    objects = await runtime.objects_async()
    attached = runtime.mcp
    launcher, clients = await trio.to_thread.run_sync(_standings, runtime)
    return McpProjection(
        server=McpServerIdentity(name=SERVER_NAME, title=SERVER_TITLE, version=__version__),
        protocol_versions=list(PROTOCOL_VERSIONS),
        transports=[
            McpTransportEntry(id="stdio", reached_by="svc mcp", attached=attached.stdio + attached.bridged),
            McpTransportEntry(id="http", reached_by="/mcp", attached=attached.http),
        ],
        serving=McpServing(
            methods=list(SERVED_METHODS), tools=True, resources=True, prompts=False, notifications=False
        ),
        tool_count=len(catalog.tools),
        tools=[
            McpToolEntry(
                name=t.name, capability=t.capability, module=t.module, title=t.title, effect=t.effect, hints=t.hints
            )
            for t in catalog.tools
            if params.effect is None or t.effect == params.effect
        ],
        tool_set=served,
        tool_sets=sizes,
        effects=[
            McpEffectCount(effect=e, tools=n) for e in _EFFECTS if (n := sum(1 for t in catalog.tools if t.effect == e))
        ],
        writers=list(catalog.writers),
        resources=McpResourceSummary(builtin=len(catalog.resources), objects=len(objects), template=OBJECT_TEMPLATE),
        launcher_in_repository=launcher,
        clients=clients,
        findings=_findings(launcher, clients, asked.set if asked is not None else None),
    )


declare = Declarations[Context](MODULE, source=__name__)

CAPABILITIES = (
    declare.query(
        "projection",
        title="MCP projection",
        description=(
            "What the MCP server serves and to whom: server identity, accepted protocol versions (newest "
            "first), transports with the sessions attached now, the served methods, every tool with its "
            "effect and hints (filtered by `effect`), the tools that write the repository, the resources, "
            "the tool set the answering process's `svc mcp` stdio session serves and the sizes in tokens (an "
            "estimate) of `all`, `core` and the set named by `tools`, whether the repository ships "
            "bin/svc-mcp, the standing of each MCP client's configuration, and findings with the exact change "
            "that resolves each (a client entry passes `--tools SET` when `tools` names a set)."
        ),
        input=ProjectionInput,
        output=McpProjection,
        handler=projection,
        examples=(
            Example(name="all", input={}, description="every tool"),
            Example(name="writers", input={"effect": "repository_mutation"}, description="the repository writers"),
            Example(name="core", input={"tools": "core"}, description="the core tool set, sized beside all"),
        ),
        http="GET /api/v1/mcp",
        tool="svc_mcp",
        resource=McpResource(uri="svc://mcp", name="mcp"),
        stability="experimental",
    ),
)
