"""`artifacts.list`: the generated documents and the state of their committed copies."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import msgspec
import trio
from msgspec import Meta

from svc._errors import InvalidInput
from svc.layer import Repository, read_repository_file
from svc.registry import Cache, Declarations, Example, McpResource, Module, Registry
from svc.runtime import Context
from svc.surfaces import DOCUMENTS, MANIFEST, render_documents

MODULE = Module(
    id="artifacts",
    title="Artifacts",
    description="Documents generated from the registry (OpenAPI, registry, CLI reference) and their copies.",
)

#: The ids of `DOCUMENTS` (a test holds the two equal), so the schema lists what the handler accepts.
DocumentId = Literal["cli", "openapi", "registry"]
ArtifactFormat = Literal["json", "yaml", "markdown"]
ArtifactState = Literal["current", "stale", "missing", "present"]
Verdict = Literal["current", "unverified", "stale", "missing", "not_generated"]


class ArtifactsInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Filters of `artifacts.list`."""

    document: Annotated[DocumentId | None, Meta(description="registry, cli or openapi")] = None
    format: Annotated[ArtifactFormat | None, Meta(description="json, yaml or markdown")] = None


class DocumentView(msgspec.Struct, frozen=True, kw_only=True):
    """A generated document and its formats."""

    id: str
    schema: str
    source: str
    formats: list[str]


class ArtifactView(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One generated file: what it renders and how the committed copy compares."""

    path: str
    document: str
    format: str
    schema: str | None = None
    source: str
    bytes: int | None = None
    sha256: str | None = None
    state: ArtifactState


class ArtifactTallies(msgspec.Struct, frozen=True, kw_only=True):
    """Files per state."""

    current: int
    stale: int
    missing: int
    present: int


class ArtifactReport(msgspec.Struct, frozen=True, kw_only=True):
    """`artifacts.list`: the committed copies against what this build derives."""

    manifest: str
    present: bool
    schema: str | None
    documents: list[DocumentView]
    artifacts: list[ArtifactView]
    tallies: ArtifactTallies
    verdict: Verdict
    regenerate: str
    verify: str


class _ManifestEntry(msgspec.Struct, frozen=True):
    path: str
    document: str = ""
    format: str = ""


class _Manifest(msgspec.Struct, frozen=True):
    schema: str | None = None
    artifacts: list[_ManifestEntry] = []


def _committed_manifest(data: bytes | None) -> _Manifest | None:
    if data is None:
        return None
    try:
        return msgspec.json.decode(data, type=_Manifest)
    except msgspec.DecodeError:
        return _Manifest()


def compare(repo: Repository, registry: Registry) -> tuple[dict[str, bytes], dict[str, bytes | None]]:
    """The derived files and the committed bytes of each (None when missing)."""
    derived = render_documents(registry)
    committed = _committed_manifest(_read(repo, MANIFEST))
    listed = [e.path for e in committed.artifacts] if committed is not None else []
    on_disk: dict[str, bytes | None] = {}
    for path in [*derived, *listed]:
        on_disk[path] = _read(repo, path)
    return derived, on_disk


def _read(repo: Repository, path: str) -> bytes | None:
    """The committed bytes (the reading rule: a regular file of the checkout, at most 4 MiB), else None."""
    if ".." in path.split("/") or path.startswith("/"):
        return None
    try:
        return read_repository_file(repo.root, Path(path))
    except OSError:
        return None


def report(derived: dict[str, bytes], on_disk: dict[str, bytes | None], params: ArtifactsInput) -> ArtifactReport:
    """Build the report from the derived files and the committed copies."""
    specs = {s.id: s for s in DOCUMENTS}
    if params.document is not None and params.document not in specs:
        raise InvalidInput(f"unknown document {params.document!r} (documents: {', '.join(sorted(specs))})")
    manifest_bytes = on_disk.get(MANIFEST)
    committed_manifest = _committed_manifest(manifest_bytes)
    schema = committed_manifest.schema if committed_manifest is not None else None
    derived_manifest = msgspec.json.decode(derived[MANIFEST])
    artifacts: list[ArtifactView] = []
    for entry in derived_manifest["artifacts"]:
        spec = specs[entry["document"]]
        if params.document not in (None, spec.id) or params.format not in (None, entry["format"]):
            continue
        committed = on_disk.get(entry["path"])
        state: ArtifactState
        if committed is None:
            state = "missing"
        elif committed == derived[entry["path"]]:
            state = "current"
        else:
            state = "stale"
        artifacts.append(
            ArtifactView(
                path=entry["path"],
                document=spec.id,
                format=entry["format"],
                schema=spec.schema,
                source=spec.source,
                bytes=len(committed) if committed is not None else None,
                sha256=entry["sha256"] if state == "current" else None,
                state=state,
            )
        )
    for entry in committed_manifest.artifacts if committed_manifest is not None else ():
        if entry.path in derived or params.document not in (None, entry.document):
            continue
        if params.format not in (None, entry.format) or on_disk.get(entry.path) is None:
            continue
        artifacts.append(
            ArtifactView(
                path=entry.path,
                document=entry.document,
                format=entry.format,
                source="not derived by this build",
                bytes=len(on_disk[entry.path] or b""),
                state="present",
            )
        )
    tallies = ArtifactTallies(
        current=sum(a.state == "current" for a in artifacts),
        stale=sum(a.state == "stale" for a in artifacts),
        missing=sum(a.state == "missing" for a in artifacts),
        present=sum(a.state == "present" for a in artifacts),
    )
    verdict: Verdict
    if all(a.state == "missing" for a in artifacts) and manifest_bytes is None:
        verdict = "not_generated"
    elif tallies.missing:
        verdict = "missing"
    elif tallies.stale:
        verdict = "stale"
    elif manifest_bytes != derived[MANIFEST] and params.document is None and params.format is None:
        verdict = "unverified"
    else:
        verdict = "current"
    return ArtifactReport(
        manifest=MANIFEST,
        present=manifest_bytes is not None,
        schema=schema,
        documents=[
            DocumentView(id=s.id, schema=s.schema, source=s.source, formats=list(s.formats))
            for s in DOCUMENTS
            if params.document in (None, s.id)
        ],
        artifacts=artifacts,
        tallies=tallies,
        verdict=verdict,
        regenerate="svc generate",
        verify="svc generate --check",
    )


async def list_artifacts(ctx: Context, params: ArtifactsInput) -> ArtifactReport:
    """Compare every generated document with its committed copy."""
    runtime = ctx.runtime
    derived, on_disk = await trio.to_thread.run_sync(compare, runtime.repository, runtime.registry)
    return report(derived, on_disk, params)


declare = Declarations[Context](MODULE, source=__name__)

CAPABILITIES = (
    declare.query(
        "list",
        title="Generated documents and their committed copies",
        description=(
            "The documents rendered from the registry (OpenAPI, registry, CLI reference) in each format, and "
            "whether the copies committed under docs/generated/ are current, stale or missing."
        ),
        input=ArtifactsInput,
        output=ArtifactReport,
        handler=list_artifacts,
        examples=(
            Example(name="all", input={}),
            Example(name="registry_yaml", input={"document": "registry", "format": "yaml"}),
        ),
        http="GET /api/v1/artifacts",
        tool="svc_artifacts",
        resource=McpResource(uri="svc://artifacts", name="artifacts"),
        cli="artifacts list",
        cache=Cache(policy="process", max_entries=8, ttl_seconds=5),
    ),
)
