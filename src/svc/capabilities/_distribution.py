"""`distribution.*`: how a project is packaged, published and installed, its releases, and what this svc is.

The answers come from the distribution model (the repository's own `distribution` object, else svc's share)
and the release records of the current generation's object index (`svc.layer.distribution_*`), derived in a
worker thread. Nothing here reaches the network. No answer is cached: each reads the records as they are.
"""

from __future__ import annotations

from typing import Annotated

import msgspec
import trio
from msgspec import Meta

from svc.layer import (
    DISTRIBUTION_TAG_PATTERN,
    BuildReport,
    DistributionReport,
    InstallabilityReport,
    ReleaseArtifactView,
    ReleasesReport,
    distribution_artifact,
    distribution_build,
    distribution_model,
    distribution_releases,
    distribution_status,
)
from svc.layer._required import require_layer
from svc.registry import Declarations, Example, Module, NoInput
from svc.runtime import Context

MODULE = Module(
    id="distribution",
    title="Distribution",
    description=(
        "How the project is packaged, published and installed: the platforms a release serves, the artifact "
        "names the one naming function derives, the install command, the releases recorded under "
        ".ai/repo/releases/, whether the published command installs, and what this svc itself is. Every answer "
        "comes from the distribution model and the release records; none reaches the network."
    ),
)

_NO_MODEL = (
    "Without a model (the repository indexes no `distribution` object and svc's share carries no "
    "distribution.yaml) it is 404; a model that breaks a rule is 500 naming the first problem."
)


class ArtifactInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Which target's artifact, for which tag."""

    target: Annotated[
        str,
        Meta(min_length=1, description="a target of the model: its id (linux-x86_64-gnu) or its platform triple"),
    ]
    tag: Annotated[
        str,
        Meta(
            pattern=DISTRIBUTION_TAG_PATTERN,
            description="the release's tag: `v` followed by a version (v0.1.0), or the literal placeholder {tag}",
        ),
    ]


async def model(ctx: Context, params: NoInput) -> DistributionReport:
    """The distribution model as a person reads it (404 without one)."""
    index = await ctx.runtime.objects_async()
    return await trio.to_thread.run_sync(distribution_model, index)


async def artifact(ctx: Context, params: ArtifactInput) -> ReleaseArtifactView:
    """The artifact a target and a tag name (404 unknown target, 400 unpublished target or malformed tag)."""
    index = await ctx.runtime.objects_async()
    return await trio.to_thread.run_sync(distribution_artifact, index, params.target, params.tag)


async def build(ctx: Context, params: NoInput) -> BuildReport:
    """What this svc is: version, platform triple, profile, commit and the model's matching target."""
    index = await ctx.runtime.objects_async()
    return await trio.to_thread.run_sync(distribution_build, index, ctx.runtime.commit)


async def releases(ctx: Context, params: NoInput) -> ReleasesReport:
    """Every release record, newest first, and the latest stable one (404 without a model, or without `.ai/`)."""
    require_layer(ctx.runtime.repository)
    index = await ctx.runtime.objects_async()
    return await trio.to_thread.run_sync(distribution_releases, index, ctx.runtime.repository.root)


async def status(ctx: Context, params: NoInput) -> InstallabilityReport:
    """Whether the published install command works, check by check, from local state alone.

    Without `.ai/` there are no release records to judge it by: 404, rather than "not installable".
    """
    require_layer(ctx.runtime.repository)
    index = await ctx.runtime.objects_async()
    return await trio.to_thread.run_sync(distribution_status, index, ctx.runtime.repository.root)


declare = Declarations[Context](MODULE, source=__name__)

CAPABILITIES = (
    declare.query(
        "model",
        title="The distribution model",
        description=(
            "The install command (with `{tag}` and `{version}` where a release's go), where an installation "
            "goes, what to run next, where the stable release's metadata is, how many targets a release "
            "publishes, and every declared target: its title, platform triple, status, the reason when it is "
            "not supported, and the artifact name it derives. " + _NO_MODEL
        ),
        input=NoInput,
        output=DistributionReport,
        handler=model,
        examples=(Example(name="default"),),
        http="GET /api/v1/distribution",
        tool="svc_distribution",
        cli="distribution show",
    ),
    declare.query(
        "artifact",
        title="The artifact of a target",
        description=(
            "The artifact file a target (id or platform triple) and a tag derive, its name without the "
            "extension, and where a release publishes it. An unknown target is 404; a target the model declares "
            "and does not publish is 400 with its reason; a tag that is neither `v` followed by a version nor the "
            "literal {tag} is 400. " + _NO_MODEL
        ),
        input=ArtifactInput,
        output=ReleaseArtifactView,
        handler=artifact,
        examples=(
            Example(name="first-published-target", input={"target": "x86_64-unknown-linux-gnu", "tag": "v0.0.0"}),
            Example(name="placeholder", input={"target": "linux-x86_64-gnu", "tag": "{tag}"}),
        ),
        http="GET /api/v1/distribution/artifact",
        tool="svc_artifact",
        cli="distribution artifact",
    ),
    declare.query(
        "build",
        title="This svc",
        description=(
            "What this svc is: the version of its package metadata, the platform triple of the interpreter it "
            "runs on (from sysconfig and the C library), `release` for an installed package or `debug` for a "
            "source checkout, the commit of its source tree (`unknown` outside one), and the model's target of "
            "that triple (null without one). Needs no model; a model that breaks a rule is 500."
        ),
        input=NoInput,
        output=BuildReport,
        handler=build,
        examples=(Example(name="default"),),
        http="GET /api/v1/distribution/build",
        tool="svc_build",
        cli="distribution build",
    ),
    declare.query(
        "releases",
        title="Recorded releases",
        description=(
            "Every release record (.ai/repo/releases/<tag>.yaml), newest version first, each with its channel, "
            "commit, publication time, whether it is yanked, how many artifacts it published and where its "
            "metadata is; and `latest`, the release an unpinned installation resolves to: the highest version "
            "among the stable records not yanked (null without one). A record that does not decode is 500 naming "
            "its path. A checkout without an .ai/ layer is 404. " + _NO_MODEL
        ),
        input=NoInput,
        output=ReleasesReport,
        handler=releases,
        examples=(Example(name="default"),),
        http="GET /api/v1/distribution/releases",
        tool="svc_releases",
        cli="distribution releases",
    ),
    declare.query(
        "status",
        title="Whether the published install works",
        description=(
            "Whether a machine that has never seen the project can install it now with the published command, "
            "from the model and the release records alone (no network): the checks `model` (a target is "
            "published), `version`, `release` (a stable record not yanked), `artifacts` (it publishes every "
            "published target), `metadata` (every record agrees with the model) and `public` (never checked "
            "here), each with what was observed and, when it fails, the cause and what to do; `installable` "
            "when none failed, and a one-line summary. A record that does not decode is 500 naming its path. "
            "A checkout without an .ai/ layer is 404. " + _NO_MODEL
        ),
        input=NoInput,
        output=InstallabilityReport,
        handler=status,
        examples=(Example(name="default"),),
        http="GET /api/v1/distribution/status",
        tool="svc_install_status",
        cli="distribution status",
    ),
)
