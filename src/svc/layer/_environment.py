"""The repository environment: one snapshot of what this checkout is now, and where each fact came from.

`resolve_environment` builds a `RepositoryEnvironment` from its canonical sources and never fails: anything
that cannot be read becomes a diagnostic and an absent value.

| part | canonical source |
|---|---|
| `project` | the metadata of the installed `svc` distribution, the interpreter, svc's own commit |
| `repository` | the checkout's directory name and `.ai/manifest.yaml` (never the checkout's path: `root` is `.`) |
| `vcs` | one `git status --porcelain=v2 --branch` (`_env_vcs`) |
| `toolchains` | marker files, `--version` probes and the running interpreter (`_env_toolchains`) |
| `layer` | the object index the serving process holds, and its registry (passed in by the caller) |
| `workflows` | `just --dump --dump-format json` (`_env_workflows`) |
| `providers` | the policy's `projections[]` |
| `services` | svc's server routes, the URL of the lease `.ai/local/state/mcp/server.json`, an optional 80 ms probe |

Every subprocess (the toolchain probes and both `just` calls) starts at once and runs while `git status`
and the files are read, so a snapshot costs its slowest probe, bounded by 2 s. The only socket ever opened
is one TCP connection to the loopback address the lease names, and only when `probe_services` asks.
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import socket
import sys
import sysconfig
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit

from svc._version import __version__
from svc.layer._env_model import (
    SCHEMA,
    EnvironmentDiagnostic,
    EnvironmentProvenance,
    FieldSource,
    KindCount,
    LayerSummary,
    ProjectIdentity,
    ProviderState,
    RepositoryEnvironment,
    RepositoryIdentity,
    ServiceState,
    ToolchainState,
    VcsGit,
    VcsState,
    WorkflowCatalogue,
)
from svc.layer._env_toolchains import PROBE_SECONDS, detect_toolchains, finish_toolchains, start_probes
from svc.layer._env_vcs import STATUS_COMMAND, read_vcs
from svc.layer._env_workflows import SOURCE as WORKFLOW_SOURCE
from svc.layer._env_workflows import WORKFLOW_SECONDS, finish_workflows, start_workflows
from svc.layer._lease import SCHEMA as LEASE_SCHEMA
from svc.layer._lease import pid_alive, read_lease
from svc.layer._manifest import SCHEMA as LAYER_SCHEMA
from svc.layer._manifest import LayerReading, read_manifest
from svc.layer._read import clip, read_repository_file
from svc.layer._yaml import YamlError, load_yaml

if TYPE_CHECKING:
    from svc.layer._objects import ObjectIndex
    from svc.layer._repository import Repository

__all__ = [
    "LEASE_PATH",
    "PROBE_MS",
    "SERVICES",
    "explain_environment",
    "project_identity",
    "resolve_environment",
    "summarise_layer",
    "unavailable_layer",
]

#: The lease, repository-relative.
LEASE_PATH = ".ai/local/state/mcp/server.json"
#: The budget of the service probe, in milliseconds.
PROBE_MS = 80
#: svc's server surfaces, in the order a snapshot lists them: (id, title, path).
SERVICES: tuple[tuple[str, str, str], ...] = (
    ("cockpit", "Cockpit", "/cockpit"),
    ("docs", "Documentation", "/docs/"),
    ("swagger", "Swagger UI", "/swagger"),
    ("api", "HTTP API", "/api/v1"),
    ("openapi", "OpenAPI document", "/openapi.json"),
    ("mcp", "MCP over HTTP", "/mcp"),
    ("events", "Live events", "/events"),
    ("index", "Home page", "/"),
)
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
_POLICY_LIMIT = 1024 * 1024
_RESOLVE = "svc.environment.resolve"
_VCS = "svc.environment.vcs"
_TOOLCHAINS = "svc.environment.toolchains"
_WORKFLOWS = "svc.environment.workflows"
_PROVIDERS = "svc.environment.providers"
_SERVICES = "svc.environment.services"
_LAYER = "svc.environment.layer"


@functools.cache
def project_identity(commit: str | None) -> ProjectIdentity:
    """The identity of svc itself: its distribution's metadata, the interpreter and platform it runs on, its commit."""
    target = f"{sys.implementation.name}-{sys.version_info.major}.{sys.version_info.minor}-{sysconfig.get_platform()}"
    try:
        dist = importlib.metadata.distribution("svc")
    except importlib.metadata.PackageNotFoundError:
        return ProjectIdentity(
            name="svc", version=__version__, summary="", target=target, profile="source", commit=commit
        )
    meta = dist.metadata

    def first(key: str) -> str | None:
        values = meta.get_all(key)
        return str(values[0]) if values else None

    urls = {}
    for entry in meta.get_all("Project-URL") or ():
        label, _, url = entry.partition(",")
        urls[label.strip().lower()] = url.strip()
    repository = urls.get("repository") or urls.get("source") or urls.get("homepage") or first("Home-page")
    try:
        direct = json.loads(dist.read_text("direct_url.json") or "{}")
    except ValueError:
        direct = {}
    editable = (
        isinstance(direct, dict) and isinstance(direct.get("dir_info"), dict) and direct["dir_info"].get("editable")
    )
    return ProjectIdentity(
        name=first("Name") or "svc",
        version=first("Version") or __version__,
        summary=first("Summary") or "",
        license=first("License-Expression") or first("License") or None,
        repository=repository or None,
        target=target,
        profile="editable" if editable else "installed",
        commit=commit,
    )


def summarise_layer(index: ObjectIndex, capabilities: int) -> LayerSummary:
    """What the layer holds: objects per kind, the index's size and errors, and the registry's size."""
    counts = Counter(obj.kind for obj in index.objects)
    return LayerSummary(
        state="resolved",
        kinds=tuple(KindCount(kind=kind, count=counts[kind]) for kind in sorted(counts)),
        objects=len(index.objects),
        capabilities=capabilities,
        invalid=sum(1 for d in index.diagnostics if d.severity == "error"),
        degraded=index.state == "degraded",
    )


def unavailable_layer() -> LayerSummary:
    """A layer nothing could count: every value absent, never zero."""
    return LayerSummary(state="unavailable")


def _repository(repo: Repository, reading: LayerReading) -> RepositoryIdentity:
    sections = {name: f".ai/{path}" for name, path in sorted(reading.sections.items())} if reading.usable else {}
    return RepositoryIdentity(
        name=repo.name,
        root=".",
        layer_schema=LAYER_SCHEMA if reading.state == "ok" else None,
        sections=sections,
        local_path=".ai/local",
        linked_worktree=(repo.root / ".git").is_file(),
    )


def _manifest_facts(
    repo: Repository, reading: LayerReading, count: int
) -> tuple[FieldSource, list[EnvironmentDiagnostic]]:
    value = f"{count} section(s)"
    if reading.state == "ok":
        return FieldSource(
            field="repository.sections", value=value, source=".ai/manifest.yaml", resolver=_RESOLVE, confidence="exact"
        ), []
    if reading.state == "absent" and repo.has_layer:
        source = "svc's default sections (the layer has no .ai/manifest.yaml)"
        return FieldSource(
            field="repository.sections", value=value, source=source, resolver=_RESOLVE, confidence="exact"
        ), []
    if reading.state == "absent":
        diagnostic = EnvironmentDiagnostic(
            severity="info", code="layer_absent", message="the checkout has no .ai/ folder"
        )
        source = "no .ai/ folder"
    else:
        more = f" (and {len(reading.problems) - 1} more)" if len(reading.problems) > 1 else ""
        first = reading.problems[0] if reading.problems else ".ai/manifest.yaml is refused"
        diagnostic = EnvironmentDiagnostic(
            severity="warning", code="manifest_refused", path=".ai/manifest.yaml", message=clip(first + more)
        )
        source = ".ai/manifest.yaml, refused"
    return FieldSource(field="repository.sections", source=source, resolver=_RESOLVE, confidence="unknown"), [
        diagnostic
    ]


def _vcs_facts(vcs: VcsState) -> tuple[list[FieldSource], list[EnvironmentDiagnostic]]:
    if not isinstance(vcs, VcsGit):
        diagnostic = EnvironmentDiagnostic(
            severity="warning", code="vcs_unavailable", message=f"version control could not be read: {vcs.reason}"
        )
        return [
            FieldSource(
                field="vcs.branch", source=f"{STATUS_COMMAND}: {vcs.reason}", resolver=_VCS, confidence="unknown"
            )
        ], [diagnostic]
    facts = [
        FieldSource(field="vcs.branch", value=vcs.branch, source=STATUS_COMMAND, resolver=_VCS, confidence="exact"),
        FieldSource(
            field="vcs.clean", value=str(vcs.clean).lower(), source=STATUS_COMMAND, resolver=_VCS, confidence="exact"
        ),
    ]
    if vcs.ahead is not None and vcs.behind is not None:
        facts.append(
            FieldSource(
                field="vcs.ahead_behind",
                value=f"{vcs.ahead}/{vcs.behind}",
                source=STATUS_COMMAND,
                resolver=_VCS,
                confidence="exact",
            )
        )
    else:
        facts.append(
            FieldSource(
                field="vcs.ahead_behind", source="the branch tracks no upstream", resolver=_VCS, confidence="unknown"
            )
        )
    return facts, []


def _layer_facts(layer: LayerSummary) -> tuple[list[FieldSource], list[EnvironmentDiagnostic]]:
    if layer.state == "unavailable":
        diagnostic = EnvironmentDiagnostic(
            severity="warning", code="layer_unavailable", message="the object index could not be had in time; try again"
        )
        source = "the object index was not available"
        return [FieldSource(field="layer.objects", source=source, resolver=_LAYER, confidence="unknown")], [diagnostic]
    facts = [
        FieldSource(
            field="layer.objects",
            value=str(layer.objects),
            source="the object index this process serves",
            resolver=_LAYER,
            confidence="exact",
        ),
        FieldSource(
            field="layer.capabilities",
            value=str(layer.capabilities),
            source="the capability registry this process serves",
            resolver=_LAYER,
            confidence="exact",
        ),
    ]
    diagnostics: list[EnvironmentDiagnostic] = []
    if layer.degraded:
        diagnostics.append(
            EnvironmentDiagnostic(
                severity="warning",
                code="layer_degraded",
                message=f"{layer.invalid or 0} error diagnostic(s) in the object index; objects.list names them",
            )
        )
    return facts, diagnostics


def _toolchain_facts(toolchains: list[ToolchainState]) -> list[FieldSource]:
    facts = [
        FieldSource(
            field="toolchains",
            value=f"{len(toolchains)} declared",
            source="the marker file of each toolchain, and its own --version (Python: the running interpreter)",
            resolver=_TOOLCHAINS,
            confidence="exact",
        )
    ]
    for t in toolchains:
        facts.append(
            FieldSource(
                field=f"toolchains.{t.id}.declared",
                value=t.declared,
                source=t.declared_by,
                resolver=_TOOLCHAINS,
                confidence="exact",
            )
        )
        how = (
            "the running interpreter"
            if t.id == "python"
            else f"{_PROBES.get(t.id, t.id)}, bounded to {PROBE_SECONDS:g} s"
        )
        facts.append(
            FieldSource(
                field=f"toolchains.{t.id}.installed",
                value=t.installed,
                source=how,
                resolver=_TOOLCHAINS,
                confidence="exact" if t.installed is not None or t.availability == "missing" else "unknown",
            )
        )
    return facts


_PROBES = {
    "node": "node --version",
    "rust": "rustc --version",
    "go": "go version",
    "just": "just --version",
    "elixir": "elixir --version",
    "deno": "deno --version",
}


def _workflow_fact(catalogue: WorkflowCatalogue) -> FieldSource:
    if catalogue.state == "unavailable":
        return FieldSource(
            field="workflows",
            source="no workflow runner answered for this checkout",
            resolver=_WORKFLOWS,
            confidence="unknown",
        )
    return FieldSource(
        field="workflows",
        value=f"{len(catalogue.workflows)} workflow(s)",
        source=catalogue.source or WORKFLOW_SOURCE,
        resolver=_WORKFLOWS,
        confidence="exact",
    )


def _safe_target(target: str) -> bool:
    path = Path(target)
    return bool(target) and not path.is_absolute() and ".." not in path.parts and "\\" not in target


def _providers(
    repo: Repository, reading: LayerReading
) -> tuple[list[ProviderState], FieldSource, list[EnvironmentDiagnostic]]:
    rel = f".ai/{reading.sections.get('policy', 'repo/policy.yaml')}" if reading.usable else ".ai/repo/policy.yaml"
    source = f"{rel}, projections[]"
    diagnostics: list[EnvironmentDiagnostic] = []
    try:
        policy = load_yaml(read_repository_file(repo.root, Path(rel), limit=_POLICY_LIMIT))
    except FileNotFoundError:
        policy = None
    except OSError as exc:
        reason = getattr(exc, "reason", None) or exc.strerror or type(exc).__name__
        diagnostics.append(
            EnvironmentDiagnostic(
                severity="warning", code="policy_unreadable", path=rel, message=clip(f"{rel}: {reason}")
            )
        )
        policy = None
    except (YamlError, ValueError, TypeError, RecursionError):
        diagnostics.append(
            EnvironmentDiagnostic(severity="warning", code="policy_unreadable", path=rel, message=f"{rel} is not YAML")
        )
        policy = None
    entries = policy.get("projections") if isinstance(policy, dict) else None
    providers: list[ProviderState] = []
    for i, entry in enumerate(entries if isinstance(entries, list) else ()):
        ident = entry.get("provider", entry.get("id")) if isinstance(entry, dict) else None
        target = entry.get("target") if isinstance(entry, dict) else None
        if not (isinstance(ident, str) and isinstance(target, str) and _safe_target(target)):
            diagnostics.append(
                EnvironmentDiagnostic(
                    severity="warning",
                    code="projection_invalid",
                    path=rel,
                    message=f"projections[{i}] needs a provider and a repository-relative target",
                )
            )
            continue
        assert isinstance(entry, dict)
        present = (repo.root / target).exists() or (repo.root / target).is_symlink()
        state: Literal["absent", "unknown"] = "unknown" if present else "absent"
        providers.append(
            ProviderState(id=ident, target=target, state=state, always_loaded=entry.get("always_loaded") is True)
        )
        if not present:
            diagnostics.append(
                EnvironmentDiagnostic(
                    severity="warning",
                    code="projection_stale",
                    path=target,
                    message=f"{target} is missing: the policy projects {ident} there",
                )
            )
    fact = FieldSource(
        field="providers",
        value=f"{len(providers)} projection(s)",
        source=source,
        resolver=_PROVIDERS,
        confidence="exact",
    )
    return providers, fact, diagnostics


def _probe(host: str, port: int) -> Literal["available", "not_running", "unknown"]:
    try:
        with socket.create_connection((host, port), timeout=PROBE_MS / 1000):
            return "available"
    except TimeoutError:
        return "unknown"
    except OSError:
        return "not_running"


def _services(repo: Repository, probe: bool) -> tuple[list[ServiceState], FieldSource, list[EnvironmentDiagnostic]]:
    lease = read_lease(repo)
    base: str | None = None
    diagnostics: list[EnvironmentDiagnostic] = []
    if lease is not None and lease.schema == LEASE_SCHEMA and lease.url:
        if pid_alive(lease.pid):
            base = lease.url.rstrip("/")
        else:
            diagnostics.append(
                EnvironmentDiagnostic(
                    severity="info",
                    code="lease_stale",
                    path=LEASE_PATH,
                    message=f"the lease names pid {lease.pid}, which is not running",
                )
            )
    if base is None:
        services = [ServiceState(id=i, title=t, path=p, availability="not_running") for i, t, p in SERVICES]
        fact = FieldSource(
            field="services.url",
            source=f"no server holds the lease at {LEASE_PATH}",
            resolver=_SERVICES,
            confidence="unknown",
        )
        return services, fact, diagnostics
    availability: Literal["available", "not_running", "unknown"] = "unknown"
    parts = urlsplit(base)
    if probe:
        host = parts.hostname or ""
        try:
            port = parts.port or 80
        except ValueError:
            port = 0
        if host in _LOOPBACK and port:
            availability = _probe(host, port)
        else:
            diagnostics.append(
                EnvironmentDiagnostic(
                    severity="warning",
                    code="lease_not_loopback",
                    path=LEASE_PATH,
                    message="the lease's URL is not a loopback address; svc does not probe it",
                )
            )
    services = [ServiceState(id=i, title=t, path=p, url=base + p, availability=availability) for i, t, p in SERVICES]
    fact = FieldSource(field="services.url", value=base, source=LEASE_PATH, resolver=_SERVICES, confidence="exact")
    return services, fact, diagnostics


def resolve_environment(
    repo: Repository,
    *,
    layer: LayerSummary,
    commit: str | None,
    now: str,
    probe_services: bool = False,
    manifest: LayerReading | None = None,
    search_path: str | None = None,
    probe_seconds: float = PROBE_SECONDS,
    workflow_seconds: float = WORKFLOW_SECONDS,
) -> RepositoryEnvironment:
    """The snapshot of `repo` now (blocking: run it in a worker thread). Never raises for what it reads.

    `layer` is what the caller's object index and registry hold (`summarise_layer`, or `unavailable_layer`);
    `commit` svc's own commit; `now` the RFC 3339 stamp of the snapshot; `manifest` the caller's reading of
    `.ai/manifest.yaml` (read here when None). `search_path` replaces the PATH the probes are looked up on.
    """
    detected = detect_toolchains(repo)
    probes = start_probes(repo, detected, seconds=probe_seconds, search_path=search_path)
    workflow_probes = start_workflows(repo, seconds=workflow_seconds, search_path=search_path)

    reading = manifest if manifest is not None else read_manifest(repo)
    project = project_identity(commit)
    repository = _repository(repo, reading)
    provenance: list[FieldSource] = [
        FieldSource(
            field="project.version",
            value=project.version,
            source="the metadata of the installed svc distribution",
            resolver=_RESOLVE,
            confidence="exact",
        ),
        FieldSource(
            field="project.summary",
            value=project.summary,
            source="the metadata of the installed svc distribution",
            resolver=_RESOLVE,
            confidence="exact",
        ),
        FieldSource(
            field="project.commit",
            value=commit,
            source="HEAD of svc's own source tree" if commit else "svc does not run from a checkout of its own source",
            resolver=_RESOLVE,
            confidence="exact" if commit else "unknown",
        ),
        FieldSource(
            field="repository.name",
            value=repository.name,
            source="the directory name of the checkout",
            resolver=_RESOLVE,
            confidence="exact",
        ),
    ]
    diagnostics: list[EnvironmentDiagnostic] = []
    sections_fact, found = _manifest_facts(repo, reading, len(repository.sections))
    provenance.append(sections_fact)
    diagnostics.extend(found)

    vcs = read_vcs(repo)
    facts, found = _vcs_facts(vcs)
    provenance.extend(facts)
    diagnostics.extend(found)

    facts, found = _layer_facts(layer)
    provenance.extend(facts)
    diagnostics.extend(found)

    providers, provider_fact, provider_diagnostics = _providers(repo, reading)
    services, service_fact, service_diagnostics = _services(repo, probe_services)

    workflows, found = finish_workflows(workflow_probes)
    provenance.append(_workflow_fact(workflows))
    diagnostics.extend(found)

    toolchains, found = finish_toolchains(detected, probes)
    provenance.extend(_toolchain_facts(toolchains))
    diagnostics.extend(found)

    provenance.append(provider_fact)
    diagnostics.extend(provider_diagnostics)
    provenance.append(service_fact)
    diagnostics.extend(service_diagnostics)

    return RepositoryEnvironment(
        schema=SCHEMA,
        generated_at=now,
        resolution="full",
        project=project,
        repository=repository,
        vcs=vcs,
        toolchains=tuple(toolchains),
        layer=layer,
        workflows=workflows,
        providers=tuple(providers),
        services=tuple(services),
        diagnostics=tuple(diagnostics),
        provenance=tuple(provenance),
    )


def explain_environment(environment: RepositoryEnvironment, field: str | None) -> EnvironmentProvenance | None:
    """The provenance of every field, or of those equal to `field` or under it (`vcs` → `vcs.*`); None for none."""
    fields = tuple(
        f for f in environment.provenance if field is None or f.field == field or f.field.startswith(f"{field}.")
    )
    if field is not None and not fields:
        return None
    return EnvironmentProvenance(resolution=environment.resolution, fields=fields)
