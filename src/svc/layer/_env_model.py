"""The shapes of `environment.status` and `environment.explain`: one snapshot of the checkout, and its provenance.

Optional fields are omitted when absent; a count nobody could take is absent, never zero. Collections have a
stable order (kinds and workflows by name, toolchains in detector order, providers in the policy's order,
services in the fixed table order, diagnostics in the order they were found), so two snapshots of one
unchanged checkout differ only in `generated_at`.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

__all__ = [
    "SCHEMA",
    "Confidence",
    "EnvironmentDiagnostic",
    "EnvironmentProvenance",
    "FieldSource",
    "KindCount",
    "LayerSummary",
    "ProjectIdentity",
    "ProviderState",
    "RepositoryEnvironment",
    "RepositoryIdentity",
    "ServiceState",
    "ToolchainState",
    "VcsGit",
    "VcsState",
    "VcsUnavailable",
    "WorkflowCatalogue",
    "WorkflowDescriptor",
    "WorkflowEntrypoint",
    "WorkflowParameter",
]

#: The schema identity a snapshot carries.
SCHEMA = "svc/repository-environment/v1"

Resolution = Literal["full", "fast"]
TierState = Literal["resolved", "cached", "unavailable"]
Confidence = Literal["exact", "cached", "unknown"]
Count = Annotated[int, Meta(ge=0)]


class ProjectIdentity(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """svc itself, from the metadata of its installed distribution.

    `name`, `version`, `summary` and `license` are the distribution's; `repository` its source URL when the
    metadata names one; `target` the interpreter and platform svc runs on (`cpython-3.11-linux-x86_64`);
    `profile` how it is installed (`editable`, `installed`, or `source` without distribution metadata);
    `commit` the commit of svc's own source tree when it runs from a checkout of itself.
    """

    name: str
    version: str
    summary: str
    license: str | None = None
    repository: str | None = None
    target: str
    profile: str
    commit: str | None = None


class RepositoryIdentity(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The checkout: its directory name (never its path), the layer's schema and sections.

    `root` is always `.`: the answer names files relative to the checkout. `layer_schema` is the manifest's
    schema when the layer reads (absent without `.ai/` or when the manifest is refused); `sections` maps each
    section to its repository-relative path (`.ai/repo/rules`), by name; `local_path` is the untracked half
    of the layer; `linked_worktree` is true when `.git` is a file (a linked work tree).
    """

    name: str
    root: str
    layer_schema: str | None = None
    sections: dict[str, str]
    local_path: str
    linked_worktree: bool


class VcsGit(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, tag="git", tag_field="state"):
    """What one `git status --porcelain=v2 --branch` says.

    `head` is absent before the first commit, `branch` when HEAD is detached (`detached` true); `upstream`,
    `ahead` and `behind` only when the branch tracks one. `staged`, `modified`, `untracked` and `conflicted`
    count entries (a rename counts once); `clean` is true when all four are zero; `changed_paths` lists the
    repository-relative paths that are not clean, sorted and de-duplicated (at most 1,000).
    """

    head: str | None = None
    branch: str | None = None
    detached: bool
    upstream: str | None = None
    ahead: Count | None = None
    behind: Count | None = None
    staged: Count
    modified: Count
    untracked: Count
    conflicted: Count
    clean: bool
    changed_paths: tuple[str, ...] = ()


class VcsUnavailable(msgspec.Struct, frozen=True, kw_only=True, tag="unavailable", tag_field="state"):
    """Git could not report on the checkout; `reason` says why."""

    reason: str


VcsState = VcsGit | VcsUnavailable


class ToolchainState(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A toolchain the checkout declares, and what is installed for it.

    `declared` is the version the marker file asks for (absent when it asks for none), `declared_by` that
    file (repository-relative); `installed` the version found here. `availability`: `installed`, `missing`
    (not on the PATH), `unknown` (it did not answer in time, or its answer had no version) or `mismatch`
    (installed, and not the declared version).
    """

    id: str
    title: str
    declared: str | None = None
    declared_by: str
    installed: str | None = None
    availability: Literal["installed", "missing", "unknown", "mismatch"]


class KindCount(msgspec.Struct, frozen=True, kw_only=True):
    """How many objects of one kind the index holds."""

    kind: str
    count: Count


class LayerSummary(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What the layer holds, from the object index this process serves and its registry.

    `state` is `resolved` (counted now) or `unavailable` (the index could not be had: the counts are then
    absent, never zero). `kinds` counts objects per kind, by kind; `objects` is the index's size,
    `capabilities` the registry's; `invalid` counts the index's error diagnostics and `degraded` says
    whether it has any.
    """

    state: TierState
    kinds: tuple[KindCount, ...] = ()
    objects: Count | None = None
    capabilities: Count | None = None
    invalid: Count | None = None
    degraded: bool | None = None


class WorkflowParameter(msgspec.Struct, frozen=True, kw_only=True):
    """A parameter of a workflow: `variadic` for `*args`/`+args`, `required` without a default and not `*`."""

    name: str
    variadic: bool
    required: bool


class WorkflowDescriptor(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A public recipe of the checkout's justfile, as `just` describes it.

    `name` is what a person types after `just` (`<module> <recipe>` in a module, whose path is `namespace`);
    `description` its doc comment, `group` its `[group]`, `parameters` in order, `dependencies` the recipes it
    runs first, `confirm` whether it asks before running.
    """

    name: str
    namespace: str | None = None
    description: str | None = None
    group: str | None = None
    parameters: tuple[WorkflowParameter, ...] = ()
    dependencies: tuple[str, ...] = ()
    confirm: bool


class WorkflowEntrypoint(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The entry point of a group: the public recipe named like the group, and the command that runs it."""

    group: str
    workflow: str
    command: str
    description: str | None = None


class WorkflowCatalogue(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The workflows a person can run here: `resolved` from `just` (`source` names the command), else `unavailable`.

    `workflows` are in natural order by name; `entrypoints` one per group, groups in declared order then the
    rest by name.
    """

    state: TierState
    source: str | None = None
    workflows: tuple[WorkflowDescriptor, ...] = ()
    entrypoints: tuple[WorkflowEntrypoint, ...] = ()


class ProviderState(msgspec.Struct, frozen=True, kw_only=True):
    """A provider projection the policy declares (`projections[]`).

    `id` is its provider, `target` the repository-relative file it renders to, `always_loaded` whether the
    provider loads that file into every context. `state` is `absent` when the file is not there and
    `unknown` otherwise: svc renders no provider templates, so it cannot say `current` or `stale`.
    """

    id: str
    target: str
    state: Literal["current", "stale", "absent", "unknown"]
    always_loaded: bool


class ServiceState(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A surface of svc's server for this checkout: its path, its URL while a server holds the lease.

    `availability` is `available` (the probe connected), `not_running` (no server holds the lease, or the
    address refused), or `unknown` (not probed, or the probe ran out of time).
    """

    id: str
    title: str
    path: str
    url: str | None = None
    availability: Literal["available", "not_running", "unknown"]


class EnvironmentDiagnostic(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Something that went wrong or is worth knowing: `path` names the repository-relative file it concerns."""

    severity: Literal["info", "warning", "error"]
    code: str
    path: str | None = None
    message: str


class FieldSource(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Where one field of the snapshot came from.

    `field` is dotted (`vcs.branch`); `value` the value as a person reads it (absent when nothing resolved);
    `source` what decided it (a file, a command, the distribution metadata); `resolver` the part of svc that
    read it; `confidence` `exact` (read now from its canonical source), `cached` or `unknown`.
    """

    field: str
    value: str | None = None
    source: str
    resolver: str
    confidence: Confidence


class RepositoryEnvironment(msgspec.Struct, frozen=True, kw_only=True):
    """One snapshot of what this checkout is now, with the provenance of every field.

    `schema` is `svc/repository-environment/v1`; `generated_at` when it was taken (RFC 3339 UTC);
    `resolution` `full` (a served call reads everything). `project` is svc itself, `repository` the
    checkout, `vcs` what Git says (tagged by `state`), `toolchains` what the checkout declares and what is
    installed, `layer` what the object index holds, `workflows` what `just` offers, `providers` the policy's
    projections, `services` svc's surfaces for this checkout, `diagnostics` every problem met (the snapshot
    never fails), `provenance` where each field came from.
    """

    schema: str
    generated_at: str
    resolution: Resolution
    project: ProjectIdentity
    repository: RepositoryIdentity
    vcs: VcsState
    toolchains: tuple[ToolchainState, ...]
    layer: LayerSummary
    workflows: WorkflowCatalogue
    providers: tuple[ProviderState, ...]
    services: tuple[ServiceState, ...]
    diagnostics: tuple[EnvironmentDiagnostic, ...]
    provenance: tuple[FieldSource, ...]


class EnvironmentProvenance(msgspec.Struct, frozen=True, kw_only=True):
    """The provenance of the snapshot's fields: all of them, or those under one dotted field."""

    resolution: Resolution
    fields: tuple[FieldSource, ...]
