"""`objects.*`: the layer's objects (list, get) and whether the served index still matches the files (verify).

Every answer comes from the object index of the runtime (`Runtime.objects_async`): built off the event loop,
rebuilt when the repository generation moves, and while a rebuild runs the previous index answers. `objects.get`
resolves a URI the way MCP `resources/read` does: a query's resource is answered through the executor (its
`content` is byte for byte what `resources/read` serves), anything else is an object of the index.
`objects.verify` reads every file the served index was built from, one worker-thread read per file.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
import trio
from msgspec import Meta

from svc._errors import Internal, InvalidInput, NotFound, SvcError
from svc.layer import IndexDiagnostic, LayerObject, ObjectIndex, ObjectProvenance, read_repository_file
from svc.layer._required import require_layer
from svc.nursery import Engine
from svc.registry import Capability, Declarations, Example, Module, one_of
from svc.registry._registry import Registry
from svc.runtime import Context, run_declared

MODULE = Module(
    id="objects",
    title="Objects",
    description=(
        "The layer's objects (every file a source class discovers, read by its kind into svc://<kind>/<identity>), "
        "each object's metadata, provenance and content, and whether the served index still matches the files."
    ),
)

_JSON = "application/json"


class ObjectListInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Filters of `objects.list`; every filter given must hold."""

    kind: Annotated[str | None, Meta(description="keep only this kind (a kind the index holds)")] = None
    tag: Annotated[str | None, Meta(description="keep only objects carrying this tag")] = None


class ObjectSummary(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One object of the index, as `objects.list` names it.

    `uri` is `svc://<kind>/<identity>`, `id` `<kind>.<identity>`; `title` and `description` are present when
    its file names them; `path` is the repository-relative file it comes from.
    """

    uri: str
    id: str
    kind: str
    identity: str
    title: str | None = None
    description: str | None = None
    path: str


class ObjectList(msgspec.Struct, frozen=True, kw_only=True):
    """The objects that match, in URI byte order.

    `count` is the number returned (no paging); `state` is the whole index's (`ok`, or `degraded` when a file
    was left out) and `diagnostics` name each file left out or noted while building it.
    """

    count: int
    objects: list[ObjectSummary]
    state: Literal["ok", "degraded"]
    diagnostics: list[IndexDiagnostic]


class ObjectGetInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Input of `objects.get`."""

    uri: Annotated[
        str,
        Meta(description="an object's `svc://<kind>/<identity>`, or the URI of a query's resource (svc://health)"),
    ]


class DeclarativeView(
    msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, tag="declarative", tag_field="source"
):
    """An object of the layer (`source`: `declarative`).

    Its names, `metadata` (front matter or YAML mapping, keys in file order), `provenance` (path, directory,
    source class, section, size, member), `media_type` and `content` (the file's text as read; a collection
    member's item as JSON).
    """

    uri: str
    id: str
    kind: str
    identity: str
    title: str | None = None
    description: str | None = None
    metadata: dict[str, Any]
    provenance: ObjectProvenance
    media_type: str
    content: str


class BuiltinProvenance(msgspec.Struct, frozen=True, kw_only=True):
    """Where a query's resource comes from: `source` is always `builtin`; `module` is the query's module."""

    source: Literal["builtin"] = "builtin"
    module: str


class BuiltinView(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, tag="builtin", tag_field="source"):
    """A query's resource (`source`: `builtin`).

    `id` is the query's capability id, `kind` `query`, `identity` the resource name, `answer` the query's
    answer with `{}`, and `content` that answer as JSON, byte for byte what MCP `resources/read` serves.
    """

    uri: str
    id: str
    kind: Literal["query"]
    identity: str
    title: str
    description: str | None = None
    answer: Any
    provenance: BuiltinProvenance
    media_type: str
    content: str


ResourceView = one_of(DeclarativeView, BuiltinView)


class ObjectVerifyInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Input of `objects.verify`."""

    kind: Annotated[str | None, Meta(description="verify only the files of this kind's objects")] = None
    limit: (
        Annotated[
            int,
            Meta(
                ge=0,
                description="objects read at most: files are taken in URI order while the objects they carry fit "
                "(the first file always); all when absent",
            ),
        ]
        | None
    ) = None


Standing = Literal["changed", "missing", "unreadable"]
Comparison = Literal["content", "size"]


class DriftedObject(msgspec.Struct, frozen=True, kw_only=True):
    """A file that no longer matches the served index.

    `standing` is changed, missing or unreadable; `comparison` the one made (`content` for a one-object file,
    `size` for a collection file); `objects` how many objects came from it, `example_uri` one of them, and
    `detail` a sentence.
    """

    path: str
    standing: Standing
    comparison: Comparison
    objects: int
    example_uri: str
    detail: str


class VerifyReport(msgspec.Struct, frozen=True, kw_only=True):
    """What reading the index's files found.

    `files` read, of which `current` match and `drifted` do not (`current + drifted = files`); `objects` the
    files carry; `compared_by_content` files compared byte for byte (the rest by size); the index's
    `fingerprint`; `index_is_current` when nothing drifted; and one finding per drifted file.
    """

    files: int
    current: int
    drifted: int
    objects: int
    compared_by_content: int
    fingerprint: str
    index_is_current: bool
    findings: list[DriftedObject]


def _summary(obj: LayerObject) -> ObjectSummary:
    return ObjectSummary(
        uri=obj.uri,
        id=obj.id,
        kind=obj.kind,
        identity=obj.identity,
        title=obj.title,
        description=obj.description,
        path=obj.path,
    )


def _unknown_kind(index: ObjectIndex, kind: str, hint: str) -> InvalidInput:
    held = ", ".join(index.kinds) or "none"
    return InvalidInput(f"the index holds no object of kind {kind!r} (kinds held: {held}){hint}")


async def list_objects(ctx: Context, params: ObjectListInput) -> ObjectList:
    """The index's objects, filtered by kind and tag, in URI byte order (404 in a checkout without `.ai/`)."""
    require_layer(ctx.runtime.repository)
    index = await ctx.runtime.objects_async()
    if params.kind is not None and params.kind not in index.by_kind:
        raise _unknown_kind(index, params.kind, "")
    chosen = index.of_kind(params.kind) if params.kind is not None else index.objects
    if params.tag is not None:
        chosen = tuple(o for o in chosen if params.tag in o.tags)
    return ObjectList(
        count=len(chosen),
        objects=[_summary(o) for o in chosen],
        state=index.state,
        diagnostics=list(index.diagnostics),
    )


@functools.cache
def _resources(registry: Registry) -> Mapping[str, Capability]:
    """The queries the registry projects as MCP resources, by URI."""
    out: dict[str, Capability] = {}
    for cap in registry.capabilities:
        mcp = cap.exposure.mcp
        if cap.kind == "query" and mcp is not None and mcp.resource is not None:
            out[mcp.resource.uri] = cap
    return out


async def _answer(ctx: Context, cap: Capability) -> bytes:
    """The query's answer with `{}`, encoded as every surface sends it (through its cache, as MCP reads it)."""
    engine = ctx.components.find(Engine)
    if engine is not None:
        executor = engine.executor
        return await executor.call(cap, executor.decode_value(cap, {}), actor=ctx.actor)
    params = msgspec.convert({}, cap.input)
    own = Context(ctx.runtime, ctx.actor, components=ctx.components)
    return msgspec.json.encode(await run_declared(cap, params, own))


async def get_object(ctx: Context, params: ObjectGetInput) -> DeclarativeView | BuiltinView:
    """One object of the index, or a query's resource answered with `{}`."""
    cap = _resources(ctx.runtime.registry).get(params.uri)
    if cap is not None:
        try:
            body = await _answer(ctx, cap)
        except SvcError:
            raise
        except Exception as exc:
            raise Internal(f"the resource {params.uri} ({cap.id}) failed to answer") from exc
        resource = cap.exposure.mcp.resource if cap.exposure.mcp is not None else None
        return BuiltinView(
            uri=params.uri,
            id=cap.id,
            kind="query",
            identity=resource.name if resource is not None else cap.id,
            title=cap.title,
            description=cap.description or None,
            answer=msgspec.json.decode(body),
            provenance=BuiltinProvenance(module=cap.module),
            media_type=_JSON,
            content=body.decode(),
        )
    index = await ctx.runtime.objects_async()
    obj = index.get(params.uri)
    if obj is None:
        require_layer(ctx.runtime.repository)
        raise NotFound(
            f"unknown resource {params.uri!r}: no object of the index and no query's resource has this URI "
            "(objects.list names every object)"
        )
    return DeclarativeView(
        uri=obj.uri,
        id=obj.id,
        kind=obj.kind,
        identity=obj.identity,
        title=obj.title,
        description=obj.description,
        metadata=obj.metadata,
        provenance=obj.provenance,
        media_type=obj.media_type,
        content=obj.content,
    )


def _files(objects: tuple[LayerObject, ...], limit: int | None) -> list[list[LayerObject]]:
    """The files of `objects`, in URI order of their first object, taken while their objects fit `limit`."""
    grouped: dict[str, list[LayerObject]] = {}
    for obj in objects:
        grouped.setdefault(obj.path, []).append(obj)
    files = list(grouped.values())
    if limit is None:
        return files
    taken: list[list[LayerObject]] = []
    carried = 0
    for group in files:
        if taken and carried + len(group) > limit:
            break
        taken.append(group)
        carried += len(group)
    return taken


def _standing(root: Path, group: list[LayerObject]) -> tuple[Standing, Comparison, str] | Comparison:
    """The comparison made, when the file matches; else (standing, comparison, detail). Blocking."""
    first = group[0]
    whole = first.member is None
    comparison: Comparison = "content" if whole else "size"
    try:
        data = read_repository_file(root, Path(first.path))
    except FileNotFoundError:
        return "missing", comparison, "the file is gone"
    except OSError as exc:
        return "unreadable", comparison, f"the file cannot be read ({getattr(exc, 'reason', None) or exc.strerror})"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "unreadable", comparison, "the file is no longer UTF-8 text"
    if whole:
        if text == first.content:
            return comparison
        return "changed", comparison, "the file changed since the index was built"
    if len(data) == first.provenance.bytes:
        return comparison
    return "changed", comparison, f"the file's size is no longer the recorded {first.provenance.bytes} bytes"


async def verify_objects(ctx: Context, params: ObjectVerifyInput) -> VerifyReport:
    """Read each file the served index was built from and say which ones drifted from it."""
    require_layer(ctx.runtime.repository)
    index = await ctx.runtime.objects_async()
    if params.kind is not None and params.kind not in index.by_kind:
        raise _unknown_kind(index, params.kind, "; objects.list names every object")
    chosen = index.of_kind(params.kind) if params.kind is not None else index.objects
    files = _files(chosen, params.limit)
    root = ctx.runtime.repository.root
    total = len(files)
    findings: list[DriftedObject] = []
    by_content = 0
    ctx.step("read", f"Reading {total} file(s) of the layer")
    try:
        for k, group in enumerate(files, start=1):
            await ctx.cancelled()
            outcome = await trio.to_thread.run_sync(_standing, root, group)
            comparison = outcome if isinstance(outcome, str) else outcome[1]
            by_content += comparison == "content"
            if not isinstance(outcome, str):
                standing, _, detail = outcome
                path, example = group[0].path, group[0].uri
                findings.append(
                    DriftedObject(
                        path=path,
                        standing=standing,
                        comparison=comparison,
                        objects=len(group),
                        example_uri=example,
                        detail=detail,
                    )
                )
                ctx.diagnostic(
                    "warning",
                    f"layer_file_{standing}",
                    f"{path}: {detail}",
                    detail=f"{len(group)} object(s) came from it, {example} among them",
                    suggestion="the index is rebuilt when the repository generation changes: ask again once it "
                    "has, or restart the server to reload the index",
                )
            ctx.progress(k, total, f"{k} file(s) read; last {group[0].path}")
    except trio.Cancelled:
        ctx.step_done(False, "cancelled")
        raise
    drifted = len(findings)
    ctx.step_done(not findings, f"{total - drifted} current, {drifted} drifted")
    return VerifyReport(
        files=total,
        current=total - drifted,
        drifted=drifted,
        objects=sum(len(g) for g in files),
        compared_by_content=by_content,
        fingerprint=index.fingerprint,
        index_is_current=not findings,
        findings=findings,
    )


declare = Declarations[Context](MODULE, source=__name__)

CAPABILITIES = (
    declare.query(
        "list",
        title="List the layer's objects",
        description=(
            "Every object of the layer's index in URI byte order (no paging), filtered by `kind` (a kind the "
            "index lacks is refused with the kinds it holds) and `tag`, with the index's state and the "
            "diagnostics of every file it left out. A checkout without an .ai/ layer is 404."
        ),
        input=ObjectListInput,
        output=ObjectList,
        handler=list_objects,
        examples=(
            Example(name="all", input={}, description="every object"),
            Example(name="rules", input={"kind": "rule"}, description="the rules"),
        ),
        http="GET /api/v1/objects",
        tool="svc_list",
        stability="behaviorally_verified",
    ),
    declare.query(
        "get",
        title="Get an object or a resource",
        description=(
            "One object of the layer (its metadata, provenance and content) by its svc://<kind>/<identity> URI, "
            "or a query's resource (svc://health, ...) answered with `{}`: the same resolution and the same "
            "content as MCP resources/read. An unknown URI is 404."
        ),
        input=ObjectGetInput,
        output=ResourceView,
        handler=get_object,
        examples=(
            Example(
                name="rule",
                input={"uri": "svc://rule/project.http-never-writes-the-repository@1"},
                description="one rule of svc's own layer",
            ),
            Example(name="builtin", input={"uri": "svc://executions/protocol"}, description="a query's resource"),
        ),
        http="GET /api/v1/object",
        tool="svc_get",
        stability="behaviorally_verified",
    ),
    declare.query(
        "verify",
        title="Verify the index against the files",
        description=(
            "Read every file the served index was built from (of `kind`, at most `limit` objects) and report "
            "each that changed, went missing or cannot be read: a one-object file is compared byte for byte, a "
            "collection file by size. One step, progress per file, a diagnostic per drifted file; stops when "
            "asked. Carries the index fingerprint. A checkout without an .ai/ layer is 404."
        ),
        input=ObjectVerifyInput,
        output=VerifyReport,
        handler=verify_objects,
        examples=(
            Example(name="all", input={}, description="every file"),
            Example(name="bounded", input={"limit": 25}, description="the first 25 objects' files"),
        ),
        http="GET /api/v1/objects/verify",
        tool="svc_verify_objects",
        cancellable=True,
        stability="behaviorally_verified",
    ),
)
