"""Capability declarations: data, declared once, read by every projection.

A capability is an id, a kind, an input and an output msgspec Struct, named examples, an exposure (HTTP,
MCP, CLI), a cache and a benchmark policy, and a plain async handler ``(ctx, params) -> result``.
Classification (effect, hints, visibility, ...) is derived from these facts, never declared.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from svc.registry._text_kinds import array_kinds

__all__ = [
    "BENCHMARKED",
    "NO_CACHE",
    "Benchmark",
    "Cache",
    "Capability",
    "CliPreset",
    "Example",
    "Exposure",
    "Handler",
    "Hints",
    "HttpExposure",
    "Kind",
    "McpExposure",
    "McpResource",
    "Module",
    "NoInput",
    "Reader",
    "Stability",
]

Kind = Literal["query", "command", "resource"]
Stability = Literal["implemented", "behaviorally_verified", "experimental", "planned", "unsupported"]
Effect = Literal["read", "process_state", "repository_mutation"]

#: A handler as the registry stores it; `Declarations` checks each one against its Structs before erasing it.
Handler = Callable[[Any, Any], Awaitable[Any]]
#: A read as the registry stores it: a plain function ``(repository, params) -> output`` of the checkout alone.
Reader = Callable[[Any, Any], Any]


class NoInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The input of a capability that takes no parameter."""


class Example(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A named case: an OpenAPI example and a benchmark case.

    `status` is what the case answers over HTTP on a server of svc's own checkout: 200, or the documented
    error (403 for a repository writer, which HTTP never runs).
    """

    name: str
    input: dict[str, Any] = msgspec.field(default_factory=dict)
    description: str | None = None
    status: int = 200


class HttpExposure(msgspec.Struct, frozen=True, kw_only=True):
    """The HTTP route of a capability."""

    method: Literal["GET", "POST"]
    path: str


class McpResource(msgspec.Struct, frozen=True, kw_only=True):
    """An MCP resource a query answers."""

    uri: str
    name: str


class McpExposure(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The MCP tool (and optional resource) of a capability."""

    tool: str | None = None
    resource: McpResource | None = None


class CliPreset(msgspec.Struct, frozen=True, kw_only=True):
    """Extra CLI words that run the capability with some input fields fixed (`svc plan start ID`)."""

    words: tuple[str, ...]
    input: dict[str, Any]
    summary: str


class Exposure(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Where a capability is reachable."""

    http: HttpExposure | None = None
    mcp: McpExposure | None = None
    cli: tuple[str, ...] = ()
    cli_presets: tuple[CliPreset, ...] = ()


class Cache(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Result cache policy: `disabled`, `process` (bounded, optional TTL) or `generation`.

    `policy` has no default, so it is written on every operation (`x-svc-cache.policy`).
    """

    policy: Literal["disabled", "process", "generation"]
    max_entries: int | None = None
    ttl_seconds: float | None = None


class Benchmark(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Benchmark policy: whether the capability's examples are benchmark cases.

    `policy` has no default, so it is written on every operation (`x-svc-benchmark.policy`).
    """

    policy: Literal["required", "required_when", "waived"]
    when: str | None = None
    reason: Literal["not_executable", "destructive", "external_dependency", "transient_state"] | None = None


#: The defaults: no result cache, and every example is a benchmark case.
NO_CACHE = Cache(policy="disabled")
BENCHMARKED = Benchmark(policy="required")


class Hints(msgspec.Struct, frozen=True, kw_only=True):
    """MCP tool hints, derived from the effect."""

    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool


class Module(msgspec.Struct, frozen=True, kw_only=True):
    """A group of capabilities: a spec group such as `plan` or `health`."""

    id: str
    title: str
    description: str
    stability: Stability = "implemented"


@dataclass(frozen=True, slots=True, kw_only=True)
class Capability:
    """One declared capability.

    The handler is a plain async function ``(ctx, params) -> output``; `params` is an instance of `input`,
    the result an instance of `output`. A query that only reads the checkout declares a `read` instead, a plain
    function ``(repository, params) -> output``: the executor runs it in a worker thread, and the command line
    calls it directly, with no event loop. `source_path` is the repository-relative file that declares it.
    `cli_verdict` names a boolean field of the output: when the answer carries it false, the command line
    exits 10 (a report whose verdict is a failure, such as an invalid plan). `cli_remote` marks a
    capability whose state lives in the serving server (executions): its command asks that server.

    A read may also declare a handler for the inputs it cannot answer from the checkout alone: `live` names
    the input fields that need the serving runtime's state (a mesh `session`). An input that sets one of them,
    or that an MCP session sends (it stands for its own session), runs the handler and is never cached; any
    other runs the read (`runs_live`). The command line answers the read with no event loop and asks the
    serving server for the rest.
    """

    id: str
    module: str
    title: str
    description: str
    input: type[msgspec.Struct]
    output: type[Any]
    handler: Handler | None
    examples: tuple[Example, ...]
    read: Reader | None = None
    kind: Kind = "query"
    tags: tuple[str, ...] = ()
    stability: Stability = "implemented"
    exposure: Exposure = field(default_factory=Exposure)
    cache: Cache = field(default_factory=lambda: NO_CACHE)
    benchmark: Benchmark = field(default_factory=lambda: BENCHMARKED)
    cancellable: bool = False
    writes_repository: bool = False
    cli_verdict: str | None = None
    cli_remote: bool = False
    live: tuple[str, ...] = ()
    source_path: str = ""

    def runs_live(self, params: msgspec.Struct, *, mcp: bool) -> bool:
        """Whether `params` needs the runtime's live state (the handler of a read that declares `live`)."""
        if not self.live:
            return False
        return mcp or any(getattr(params, name, None) is not None for name in self.live)

    @property
    def executable(self) -> bool:
        """Whether there is something to run: a handler or a read."""
        return self.handler is not None or self.read is not None

    @property
    def effect(self) -> Effect:
        """Derived: queries and resources read; commands change process state or the repository."""
        if self.kind != "command":
            return "read"
        return "repository_mutation" if self.writes_repository else "process_state"

    @property
    def hints(self) -> Hints:
        """Derived MCP hints; no handler is open-world."""
        effect = self.effect
        if effect == "read":
            return Hints(read_only=True, destructive=False, idempotent=True, open_world=False)
        if effect == "process_state":
            return Hints(read_only=False, destructive=False, idempotent=False, open_world=False)
        return Hints(read_only=False, destructive=True, idempotent=False, open_world=False)

    @property
    def availability(self) -> Literal["always", "runtime"]:
        """Resources are always there; everything else needs the runtime."""
        return "always" if self.kind == "resource" else "runtime"

    @property
    def visibility(self) -> Literal["public", "developer", "internal"]:
        """Public over MCP or HTTP, developer on the CLI alone, else internal."""
        if self.exposure.http is not None or self.exposure.mcp is not None:
            return "public"
        return "developer" if self.exposure.cli else "internal"

    @property
    def concurrency(self) -> Literal["unrestricted", "serial"]:
        """Reads run unrestricted; commands are serial per capability."""
        return "unrestricted" if self.effect == "read" else "serial"

    @property
    def confirmation(self) -> bool:
        """Whether a client should confirm before calling (anything that is not a read)."""
        return self.effect != "read"

    @property
    def cli_usage(self) -> str | None:
        """How a person runs it on the command line (`svc plan start|verify|done ISSUE`), or None."""
        presets = self.exposure.cli_presets
        fixed = set(presets[0].input) if presets else set()
        arrays = array_kinds(self.input)
        info = msgspec.inspect.type_info(self.input)
        assert isinstance(info, msgspec.inspect.StructType)
        names = []
        for fld in info.fields:
            if not fld.required or fld.encode_name in fixed:
                continue
            extra = (fld.type.extra or {}) if isinstance(fld.type, msgspec.inspect.Metadata) else {}
            name = str(extra.get("metavar", fld.encode_name.upper()))
            names.append(name + ("..." if fld.encode_name in arrays else ""))
        if presets:
            words = [*presets[0].words[:-1], "|".join(p.words[-1] for p in presets)]
        elif self.exposure.cli:
            words = list(self.exposure.cli)
        else:
            return None
        return "svc " + " ".join([*words, *names])

    @property
    def cli_text(self) -> str | None:
        """The CLI words joined by a space, or None when the CLI does not expose it."""
        return " ".join(self.exposure.cli) if self.exposure.cli else None
