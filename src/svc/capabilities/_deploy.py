"""`deploy.*`: the deployments the layer declares, and whether they would work.

All three read the object index of the runtime (`deployment` objects, decoded strictly by
`svc.layer.deployment_list`) in a worker thread. `deploy.check` decides them against the GET paths this
service answers (the registry's HTTP routes and the server's own routes) and the checkout's workspace; its
problems are refusals inside a 200 answer, never an HTTP error. Nothing here contacts a provider.
"""

from __future__ import annotations

import functools
from typing import Annotated

import msgspec
import trio
from msgspec import Meta

from svc._errors import NotFound
from svc.layer import DeploymentCheck, DeploymentList, DeploymentView, deployment_check, deployment_list
from svc.layer._required import require_layer
from svc.registry import Cache, Declarations, Example, McpResource, Module, NoInput, Registry
from svc.runtime import Context
from svc.surfaces import SERVER_ROUTES

MODULE = Module(
    id="deploy",
    title="Deployment",
    description=(
        "The deployments the layer declares (`.ai/repo/deployments/*.yaml`, `deployment/v1`), read strictly, and "
        "whether they would work, decided against this service's routes and the checkout's workspace. Every "
        "operation is a read; none contacts a provider."
    ),
)


class DeploymentInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Input of `deploy.get`."""

    id: Annotated[str, Meta(description="the deployment's `id`")]


@functools.lru_cache(maxsize=4)
def served_paths(registry: Registry) -> frozenset[str]:
    """Every path this service answers with GET: the registry's GET routes and the server's own routes."""
    paths = {
        cap.exposure.http.path
        for cap in registry.capabilities
        if cap.exposure.http is not None and cap.exposure.http.method == "GET"
    }
    for route in SERVER_ROUTES:
        paths.add(route.path)
        paths.add(route.path.rstrip("/") or "/")
    return frozenset(paths)


async def list_(ctx: Context, params: NoInput) -> DeploymentList:
    """Every deployment, and a refusal per deployment file that is none (404 without an `.ai/` layer)."""
    require_layer(ctx.runtime.repository)
    index = await ctx.runtime.objects_async()
    return await trio.to_thread.run_sync(deployment_list, index)


async def get(ctx: Context, params: DeploymentInput) -> DeploymentView:
    """One deployment by `id` (404 naming the known ids for any other)."""
    listed = await list_(ctx, NoInput())
    for view in listed.deployments:
        if view.id == params.id:
            return view
    known = ", ".join(v.id for v in listed.deployments)
    where = f"the deployments are {known}" if known else "the layer declares no deployment"
    raise NotFound(f"no deployment '{params.id}'; {where} (.ai/repo/deployments/*.yaml)")


async def check(ctx: Context, params: NoInput) -> DeploymentCheck:
    """Every refusal the deployments earn; problems are in the answer, never an error (but a missing layer)."""
    require_layer(ctx.runtime.repository)
    # The answer is cached for a few seconds, so it is decided on the current generation's index.
    index = await ctx.runtime.objects_async(fresh=True)
    routes = served_paths(ctx.runtime.registry)
    root = ctx.runtime.repository.root
    return await trio.to_thread.run_sync(deployment_check, index, root, routes)


declare = Declarations[Context](MODULE, source=__name__)

CAPABILITIES = (
    declare.query(
        "list",
        title="Deployments",
        description=(
            "Every deployment the layer declares, in natural order of `id`, each with its repository-relative "
            "`file`: the application, the package and binary shipped, the build inputs, the address it listens "
            "on, the health paths a platform polls, the resources, the machines, the region, the measured "
            "budgets and the provider's facts. A deployment file svc cannot read (not YAML, an unknown key, a "
            "value out of bounds, another `schema`) is listed in `unreadable` with the file, the key, the value "
            "found, the problem and the correction. A checkout without an .ai/ layer is 404."
        ),
        input=NoInput,
        output=DeploymentList,
        handler=list_,
        examples=(Example(name="default"),),
        http="GET /api/v1/deployments",
        tool="svc_deployments",
        resource=McpResource(uri="svc://deployments", name="deployments"),
        cache=Cache(policy="disabled"),
    ),
    declare.query(
        "get",
        title="One deployment",
        description=(
            "One deployment by its `id`, with the repository-relative file it was read from. An id the layer "
            "declares no readable deployment for is 404, naming the ids it does; so is any id in a checkout "
            "without an .ai/ layer."
        ),
        input=DeploymentInput,
        output=DeploymentView,
        handler=get,
        examples=(
            Example(
                name="absent",
                input={"id": "absent"},
                status=404,
                description="svc's own repository declares no deployment (it is a loopback-only tool)",
            ),
        ),
        http="GET /api/v1/deployment",
        tool="svc_deployment",
        cache=Cache(policy="disabled"),
    ),
    declare.query(
        "check",
        title="Would the deployments work",
        description=(
            "Every refusal the declared deployments earn, decided locally: the unreadable deployment files "
            "first, then per deployment a health path this service does not answer with GET, a package not in "
            "the workspace (pyproject.toml at the root or under apps/*/, apps/*/Cargo.toml) or a binary it does "
            "not produce, a build input that is absolute, climbs (`..`) or is no file or directory inside the "
            "checkout (a symlink leading out counts as none), a site path that is absolute or climbs, "
            "`min_running` above `count`, a `loopback` interface, and a Fly soft concurrency limit above the "
            "hard one. `ok` when there is none; problems are in the 200 answer. A checkout without an .ai/ layer "
            "is 404."
        ),
        input=NoInput,
        output=DeploymentCheck,
        handler=check,
        examples=(Example(name="default"),),
        http="GET /api/v1/deployments/check",
        tool="svc_deploy_check",
        cache=Cache(policy="process", max_entries=2, ttl_seconds=5),
    ),
)
