"""The capability registry: built once from declarations, validated whole, then frozen.

`build_registry` applies every refusal rule, collects all problems and raises one `RegistryError` listing
them, so a broken declaration is a build failure of the executable, never a runtime surprise.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import msgspec

from svc.registry._declaration import Capability, Module
from svc.registry._schema import SchemaSet
from svc.registry._views import CapabilityView, ErrorBody, ExecutionFacts, Provenance, SchemaRef

__all__ = ["Registry", "RegistryError", "build_registry", "descriptor"]

_ID = re.compile(r"^[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)+$")
_TOOL = re.compile(r"^[a-z0-9_]+$")
_EXAMPLE = re.compile(r"^[a-z0-9_-]+$")
_PATH_CHARS = re.compile(r"^[A-Za-z0-9/_.-]+$")
_CLI_WORD = re.compile(r"^[a-z][a-z0-9-]*$")
_SCALARS = (
    msgspec.inspect.StrType,
    msgspec.inspect.IntType,
    msgspec.inspect.FloatType,
    msgspec.inspect.BoolType,
    msgspec.inspect.LiteralType,
    msgspec.inspect.EnumType,
    msgspec.inspect.NoneType,
)
_UNEXPOSED = ("planned", "unsupported")


class RegistryError(Exception):
    """The declarations do not form a valid registry; `problems` lists every refusal."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("invalid capability registry:\n" + "\n".join(f"- {p}" for p in problems))
        self.problems = tuple(problems)


class Registry:
    """A frozen, validated set of capabilities with the lookups every projection needs."""

    def __init__(self, modules: Sequence[Module], capabilities: Sequence[Capability]) -> None:
        self.modules: tuple[Module, ...] = tuple(sorted(modules, key=lambda m: m.id))
        self.capabilities: tuple[Capability, ...] = tuple(sorted(capabilities, key=lambda c: c.id))
        self.by_id: Mapping[str, Capability] = MappingProxyType({c.id: c for c in self.capabilities})
        self.module_by_id: Mapping[str, Module] = MappingProxyType({m.id: m for m in self.modules})
        routes: dict[tuple[str, str], Capability] = {}
        methods: dict[str, list[str]] = {}
        tools: dict[str, Capability] = {}
        resources: dict[str, Capability] = {}
        commands: dict[tuple[str, ...], Capability] = {}
        for cap in self.capabilities:
            http, mcp = cap.exposure.http, cap.exposure.mcp
            if http is not None:
                routes[(http.method, http.path)] = cap
                methods.setdefault(http.path, []).append(http.method)
            if mcp is not None and mcp.tool is not None:
                tools[mcp.tool] = cap
            if mcp is not None and mcp.resource is not None:
                resources[mcp.resource.uri] = cap
            if cap.exposure.cli:
                commands[cap.exposure.cli] = cap
        self.by_route: Mapping[tuple[str, str], Capability] = MappingProxyType(routes)
        self.methods_by_path: Mapping[str, tuple[str, ...]] = MappingProxyType(
            {path: tuple(sorted(ms)) for path, ms in methods.items()}
        )
        self.by_tool: Mapping[str, Capability] = MappingProxyType(tools)
        self.by_resource: Mapping[str, Capability] = MappingProxyType(resources)
        self.by_cli: Mapping[tuple[str, ...], Capability] = MappingProxyType(commands)
        types: list[Any] = [ErrorBody]
        for cap in self.capabilities:
            types.extend(t for t in (cap.input, cap.output) if t not in types)
        self._types = tuple(types)

    @functools.cached_property
    def schemas(self) -> SchemaSet:
        """The JSON schema components of every input and output.

        Built on first use: a command line that parses and runs one capability never needs them.
        """
        return SchemaSet(self._types)

    @functools.cached_property
    def fingerprint(self) -> str:
        """SHA-256 over every capability's id and descriptor, in id order."""
        digest = hashlib.sha256()
        for cap in self.capabilities:
            digest.update(cap.id.encode() + b"\0" + msgspec.json.encode(descriptor(self, cap)) + b"\n")
        return digest.hexdigest()

    def __len__(self) -> int:
        return len(self.capabilities)

    def get(self, capability_id: str) -> Capability | None:
        """The capability with this canonical id, or None."""
        return self.by_id.get(capability_id)

    def input_schema(self, cap: Capability) -> dict[str, Any]:
        """The component schema of the capability's input (its properties, `required`, ...)."""
        return self.schemas.resolve(self.schemas.ref(cap.input))


def descriptor(registry: Registry, cap: Capability) -> CapabilityView:
    """The capability as data: the `Capability` answer of `capabilities.describe`."""
    schemas = registry.schemas
    return CapabilityView(
        id=cap.id,
        module=cap.module,
        kind=cap.kind,
        title=cap.title,
        description=cap.description,
        input=SchemaRef(name=schemas.name(cap.input), schema=schemas.ref(cap.input)),
        output=SchemaRef(name=schemas.name(cap.output), schema=schemas.ref(cap.output)),
        examples=list(cap.examples),
        provenance=Provenance(source="builtin", module=cap.module),
        exposure=cap.exposure,
        availability=cap.availability,
        visibility=cap.visibility,
        stability=cap.stability,
        tags=list(cap.tags) or None,
        benchmark=cap.benchmark,
        cache=cap.cache,
        execution=ExecutionFacts(
            effect=cap.effect,
            cancellable=cap.cancellable,
            concurrency=cap.concurrency,
            confirmation=cap.confirmation,
            hints=cap.hints,
        ),
    )


def build_registry(
    modules: Iterable[Module], capabilities: Iterable[Capability], *, check_schemas: bool = True
) -> Registry:
    """Validate the declarations and freeze them into a registry.

    `check_schemas` derives the JSON schema of every input and output to refuse a type without one and two
    distinct schemas under one component name. That costs a tenth of a second or more, and a process that runs
    one command never needs the schemas: pass False only for declarations a test builds with the check (the
    builtin ones, tests/registry/test_registry.py).

    Raises:
        RegistryError: listing every refusal found (never only the first).
    """
    modules = tuple(modules)
    capabilities = tuple(capabilities)
    problems: list[str] = []
    module_ids = {m.id for m in modules}
    seen: dict[str, dict[Any, str]] = {
        "tool": {},
        "resource": {},
        "route": {},
        "cli": {},
    }

    def unique(space: str, key: Any, owner: str) -> None:
        other = seen[space].setdefault(key, owner)
        if other != owner:
            problems.append(f"{owner}: duplicate {space} {key!r} (also declared by {other})")

    ids: set[str] = set()
    for cap in capabilities:
        problems.extend(_check_capability(cap, module_ids))
        if cap.id in ids:
            problems.append(f"{cap.id}: duplicate id")
        ids.add(cap.id)
        http, mcp = cap.exposure.http, cap.exposure.mcp
        if http is not None:
            unique("route", (http.method, http.path), cap.id)
        if mcp is not None and mcp.tool is not None:
            unique("tool", mcp.tool, cap.id)
        if mcp is not None and mcp.resource is not None:
            unique("resource", mcp.resource.uri, cap.id)
        if cap.exposure.cli:
            unique("cli", " ".join(cap.exposure.cli), cap.id)
        for preset in cap.exposure.cli_presets:
            unique("cli", " ".join(preset.words), cap.id)
    if check_schemas:
        problems.extend(_check_schemas(capabilities))
    if problems:
        raise RegistryError(problems)
    return Registry(modules, capabilities)


def _check_capability(cap: Capability, module_ids: set[str]) -> list[str]:
    out: list[str] = []
    say = out.append
    if not _ID.match(cap.id):
        say(f"{cap.id}: bad id (expected <ns>.<local>, lowercase)")
    elif cap.id.split(".", 1)[0] != cap.module:
        say(f"{cap.id}: builtin namespace {cap.id.split('.', 1)[0]!r} differs from module {cap.module!r}")
    if cap.module not in module_ids:
        say(f"{cap.id}: unknown module {cap.module!r}")
    http, mcp, cli = cap.exposure.http, cap.exposure.mcp, cap.exposure.cli
    exposed = http is not None or mcp is not None or bool(cli)
    if exposed and cap.stability in _UNEXPOSED:
        say(f"{cap.id}: a {cap.stability} capability cannot be exposed")
    if http is not None:
        out.extend(_check_path(cap.id, http.path))
        if cap.kind == "query" and http.method != "GET":
            say(f"{cap.id}: a query is served on GET, not {http.method}")
        if cap.kind == "command" and http.method != "POST":
            say(f"{cap.id}: a command is served on POST, not {http.method}")
        if http.method == "GET":
            out.extend(_check_get_input(cap))
    if mcp is not None:
        if mcp.tool is not None and not _TOOL.match(mcp.tool):
            say(f"{cap.id}: bad MCP tool name {mcp.tool!r} (expected [a-z0-9_]+)")
        if mcp.resource is not None:
            if not mcp.resource.uri.startswith("svc://"):
                say(f"{cap.id}: MCP resource URI {mcp.resource.uri!r} is not under svc://")
            if cap.kind == "command":
                say(f"{cap.id}: a command cannot be an MCP resource")
    fields = {f.encode_name for f in msgspec.structs.fields(cap.input)}
    for words in (cli, *(p.words for p in cap.exposure.cli_presets)):
        for word in words:
            if not _CLI_WORD.match(word):
                say(f"{cap.id}: bad CLI word {word!r}")
    for preset in cap.exposure.cli_presets:
        if not cli:
            say(f"{cap.id}: CLI presets need the capability's own CLI words")
        if not set(preset.input) <= fields:
            say(f"{cap.id}: CLI preset {' '.join(preset.words)!r} sets fields the input does not have")
    if cap.kind == "resource":
        if cap.executable or http is not None or cli or (mcp is not None and mcp.tool):
            say(f"{cap.id}: a resource has no handler, HTTP route, CLI command or tool")
    elif cap.handler is not None and cap.read is not None and not cap.live:
        say(f"{cap.id}: a {cap.kind} has a handler or a read, not both (unless it names its live fields)")
    elif not cap.executable:
        say(f"{cap.id}: a {cap.kind} needs a handler")
    if cap.live and (cap.handler is None or cap.read is None):
        say(f"{cap.id}: live fields need both a read and a handler")
    for name in cap.live:
        if name not in fields:
            say(f"{cap.id}: live field {name!r} is not a field of the input")
    if cap.cli_verdict is not None and cap.cli_verdict not in _output_fields(cap):
        say(f"{cap.id}: cli_verdict {cap.cli_verdict!r} is not a field of the output")
    out.extend(_check_cache(cap))
    out.extend(_check_examples_and_benchmark(cap))
    return out


def _output_fields(cap: Capability) -> set[str]:
    try:
        return {f.encode_name for f in msgspec.structs.fields(cap.output)}
    except TypeError:
        return set()


def _check_path(cap_id: str, path: str) -> list[str]:
    out = []
    if not path.startswith("/api/v1/"):
        out.append(f"{cap_id}: HTTP path {path!r} is not under /api/v1/")
    if not _PATH_CHARS.match(path):
        out.append(f"{cap_id}: HTTP path {path!r} has characters outside [A-Za-z0-9/_.-]")
    if path.endswith("/") or "//" in path:
        out.append(f"{cap_id}: HTTP path {path!r} has a trailing or doubled '/'")
    return out


def _check_get_input(cap: Capability) -> list[str]:
    info = msgspec.inspect.type_info(cap.input)
    if not isinstance(info, msgspec.inspect.StructType):
        return [f"{cap.id}: input is not a Struct"]
    out = []
    for fld in info.fields:
        tp = fld.type.type if isinstance(fld.type, msgspec.inspect.Metadata) else fld.type
        members = tp.types if isinstance(tp, msgspec.inspect.UnionType) else (tp,)
        members = tuple(m.type if isinstance(m, msgspec.inspect.Metadata) else m for m in members)
        if not all(isinstance(m, _SCALARS) for m in members):
            out.append(f"{cap.id}: GET input property {fld.encode_name!r} is not a scalar")
    return out


def _check_cache(cap: Capability) -> list[str]:
    cache, out = cap.cache, []
    if cache.policy != "disabled" and cap.kind == "command":
        out.append(f"{cap.id}: a command is never cached")
    if cache.policy != "disabled" and cache.max_entries is None:
        out.append(f"{cap.id}: cache policy {cache.policy} needs max_entries")
    if cache.max_entries is not None and cache.max_entries <= 0:
        out.append(f"{cap.id}: cache max_entries must be positive")
    if cache.ttl_seconds is not None and cache.ttl_seconds <= 0:
        out.append(f"{cap.id}: cache ttl_seconds must be positive")
    if cache.ttl_seconds is not None and cache.policy != "process":
        out.append(f"{cap.id}: ttl_seconds applies to the process policy only")
    return out


def _check_examples_and_benchmark(cap: Capability) -> list[str]:
    out = []
    if cap.kind != "resource" and not cap.examples:
        out.append(f"{cap.id}: no example (every operation needs at least one)")
    names: set[str] = set()
    for example in cap.examples:
        if not _EXAMPLE.match(example.name):
            out.append(f"{cap.id}: bad example name {example.name!r}")
        if example.name in names:
            out.append(f"{cap.id}: duplicate example name {example.name!r}")
        names.add(example.name)
        if not 200 <= example.status <= 599:
            out.append(f"{cap.id}: example {example.name!r} status {example.status} is not an HTTP status 200-599")
        try:
            msgspec.convert(example.input, cap.input)
        except msgspec.ValidationError as exc:
            out.append(f"{cap.id}: example {example.name!r} fails the input schema: {exc}")
    bench = cap.benchmark
    if bench.policy == "required_when" and not bench.when:
        out.append(f"{cap.id}: benchmark required_when needs `when`")
    if bench.policy == "waived" and bench.reason is None:
        out.append(f"{cap.id}: benchmark waived needs a reason")
    if cap.kind == "resource" and (bench.policy != "waived" or bench.reason != "not_executable"):
        out.append(f"{cap.id}: a resource's benchmark is waived as not_executable")
    return out


def _check_schemas(capabilities: Sequence[Capability]) -> list[str]:
    """Every input and output has a JSON schema, and no two distinct schemas share a component name.

    One pass over every type settles the usual case: msgspec names a component by its class, and only a
    clash makes it spell the full import path (with dots). On a failure or a clash each capability's types
    are taken apart one by one, to name the capability at fault.
    """
    types: dict[Any, None] = {}
    for cap in capabilities:
        types.update(dict.fromkeys((cap.input, cap.output)))
    try:
        _, components = msgspec.json.schema_components(tuple(types))
    except (TypeError, ValueError, KeyError):
        return _name_schema_problems(capabilities)
    if any("." in name for name in components):
        return _name_schema_problems(capabilities)
    return []


def _name_schema_problems(capabilities: Sequence[Capability]) -> list[str]:
    by_name: dict[str, tuple[Any, bytes]] = {}
    out = []
    for cap in capabilities:
        for tp in (cap.input, cap.output):
            try:
                _, components = msgspec.json.schema_components([tp])
            except (TypeError, ValueError) as exc:
                out.append(f"{cap.id}: type {tp!r} has no JSON schema: {exc}")
                continue
            for name, schema in components.items():
                encoded = msgspec.json.encode(schema, order="sorted")
                other = by_name.setdefault(name, (cap.id, encoded))
                if other[1] != encoded:
                    out.append(f"{cap.id}: schema {name!r} differs from the one of {other[0]}")
    return sorted(set(out), key=out.index)
