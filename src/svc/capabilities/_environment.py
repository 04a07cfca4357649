"""`environment.*`: one snapshot of what this checkout is now, and where each of its facts came from.

The snapshot is resolved in a worker thread (one `git status`, marker files, `--version` probes started
side by side, `just` when the checkout has a justfile, the lease); what the layer holds comes from the
object index this process serves (never rebuilt for the call when an index is held) and from its registry,
both passed to the resolver here. It never fails: every problem is a diagnostic of the answer.
"""

from __future__ import annotations

from typing import Annotated

import msgspec
import trio
from msgspec import Meta

from svc._errors import NotFound, Unavailable
from svc.layer import EnvironmentProvenance, RepositoryEnvironment
from svc.registry import Cache, Declarations, Example, McpResource, Module
from svc.runtime import Context, utc_now

MODULE = Module(
    id="environment",
    title="Environment",
    description=(
        "What this checkout is now: svc itself, the checkout and its layer sections, version control, the "
        "toolchains it declares and what is installed, what the layer holds, its workflows, the policy's "
        "provider projections and svc's services, with the provenance of every field."
    ),
)


class StatusInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Input of `environment.status`."""

    probe_services: Annotated[
        bool,
        Meta(description="connect once (80 ms budget) to the server the lease names, to say whether it answers"),
    ] = False


class ExplainInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Input of `environment.explain`."""

    field: Annotated[
        Annotated[str, Meta(min_length=1, max_length=200)] | None,
        Meta(
            description="a dotted field (`project.version`, `vcs`): that field and the fields under it; all when absent"
        ),
    ] = None


async def _resolve(ctx: Context, probe_services: bool) -> RepositoryEnvironment:
    # The resolver (subprocesses, sockets, package metadata) loads on the first call, not with the CLI.
    from svc.layer._environment import resolve_environment, summarise_layer, unavailable_layer

    runtime = ctx.runtime
    try:
        index = await runtime.objects_async()
    except Unavailable:
        layer = unavailable_layer()
    else:
        layer = summarise_layer(index, len(runtime.registry.capabilities))
    now = utc_now()

    def resolve() -> RepositoryEnvironment:
        return resolve_environment(
            runtime.repository,
            layer=layer,
            commit=runtime.commit,
            now=now,
            probe_services=probe_services,
            manifest=runtime.manifest(),
        )

    return await trio.to_thread.run_sync(resolve)


async def status(ctx: Context, params: StatusInput) -> RepositoryEnvironment:
    """The snapshot of the checkout now."""
    return await _resolve(ctx, params.probe_services)


async def explain(ctx: Context, params: ExplainInput) -> EnvironmentProvenance:
    """Where the snapshot's fields come from: all, or one dotted field and those under it (404 for none)."""
    from svc.layer._environment import explain_environment

    answer = explain_environment(await _resolve(ctx, False), params.field)
    if answer is None:
        raise NotFound(
            f"no field of the environment is {params.field!r} or under it; call without `field` to list them"
        )
    return answer


declare = Declarations[Context](MODULE, source=__name__)

CAPABILITIES = (
    declare.query(
        "status",
        title="Environment status",
        description=(
            "One snapshot of this checkout (`svc/repository-environment/v1`), resolved now and never failing: "
            "`project` (svc's distribution metadata, interpreter and commit), `repository` (its directory "
            "name, `root` `.`, the manifest's sections), `vcs` (one `git status --porcelain=v2 --branch`: "
            "branch, head, upstream, ahead/behind, staged/modified/untracked/conflicted, changed paths), "
            "`toolchains` (python, node, rust, go, just, elixir, deno: the marker file that declares each, "
            "the installed version from the running interpreter or a 1.5 s `--version` probe, and `mismatch` "
            "when it is not the declared one), `layer` (objects per kind, capabilities, index errors), "
            "`workflows` (from `just` when the checkout has a justfile), `providers` (the policy's "
            "`projections[]`), `services` (svc's surfaces at the URL the lease names; `probe_services` "
            "connects once, 80 ms budget), `diagnostics` and the `provenance` of every field. No path in it "
            "is absolute."
        ),
        input=StatusInput,
        output=RepositoryEnvironment,
        handler=status,
        examples=(
            Example(name="default"),
            Example(name="probe-services", input={"probe_services": True}),
        ),
        http="GET /api/v1/environment",
        tool="svc_environment",
        resource=McpResource(uri="svc://environment", name="environment"),
        cache=Cache(policy="process", max_entries=4, ttl_seconds=3),
    ),
    declare.query(
        "explain",
        title="Environment provenance",
        description=(
            "Where each field of `environment.status` comes from (`field`, `value`, `source`, `resolver`, "
            "`confidence` exact/cached/unknown), resolved the same way without probing services. With "
            "`field`, only that dotted field and those under it (`vcs` gives `vcs.branch`, `vcs.clean`, ...); "
            "a field nothing matches is 404."
        ),
        input=ExplainInput,
        output=EnvironmentProvenance,
        handler=explain,
        examples=(
            Example(name="all"),
            Example(name="one-field", input={"field": "project.version"}),
        ),
        http="GET /api/v1/environment/explain",
        tool="svc_environment_explain",
    ),
)
