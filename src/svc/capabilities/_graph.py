"""`graph.*`: the graphs of the checkout, derived from the capability registry and the object index.

The derivations are pure (`svc.layer.derive_graph`); this module hands them the registry as plain facts and
the index of the current generation, and derives in a worker thread. `graph.get` keeps 16 answers for the
process; a cached answer never outlives its repository generation, and it is always derived from the index
of the generation it is cached under (the handler waits for that index rather than answer from an older one).
"""

from __future__ import annotations

import functools
from typing import Annotated

import msgspec
import trio
from msgspec import Meta

from svc._errors import NotFound
from svc.layer import (
    GRAPH_IDS,
    CapabilityFacts,
    Graph,
    GraphList,
    ModuleFacts,
    RegistryFacts,
    derive_graph,
    graph_list,
)
from svc.layer._required import require_layer
from svc.registry import Cache, Declarations, Example, McpResource, Module, NoInput, Registry
from svc.runtime import Context

MODULE = Module(
    id="graph",
    title="Graphs",
    description=(
        "Derived graphs of the checkout: the capability registry, the shape of the layer, rule dependencies, "
        "decisions, use cases, moments, the product and everything composed (with the plan's issues under "
        "their milestones). Nodes and edges sorted, acyclicity computed, at most 2,000 nodes."
    ),
)

_IDS = ", ".join(GRAPH_IDS)


class GraphInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Input of `graph.get`."""

    id: Annotated[str, Meta(description=f"the graph: one of {_IDS}")]


@functools.lru_cache(maxsize=4)
def registry_facts(registry: Registry) -> RegistryFacts:
    """The registry as the plain facts a graph needs (computed once per registry)."""
    modules = tuple(ModuleFacts(id=m.id, title=m.title) for m in registry.modules)
    capabilities = tuple(
        CapabilityFacts(
            id=cap.id,
            module=cap.module,
            title=cap.title,
            kind=cap.kind,
            source=cap.source_path,
            mcp=cap.exposure.mcp is not None,
            http=cap.exposure.http is not None,
            cli=bool(cap.exposure.cli),
            tool=None if cap.exposure.mcp is None else cap.exposure.mcp.tool,
            command=" ".join(cap.exposure.cli) or None,
        )
        for cap in registry.capabilities
    )
    return RegistryFacts(modules=modules, capabilities=capabilities)


#: The graphs that draw svc's registry, so that they answer in a checkout without `.ai/`; every other graph is
#: drawn from the layer alone and is 404 there, since an empty graph would read as a layer holding nothing.
_OF_THE_REGISTRY = frozenset({"registry", "composed"})


async def get(ctx: Context, params: GraphInput) -> Graph:
    """One graph by id (404 naming the ids for any other, and for a graph of the layer without `.ai/`)."""
    if params.id not in GRAPH_IDS:
        raise NotFound(f"no graph '{params.id}'; the graphs are {_IDS}")
    if params.id not in _OF_THE_REGISTRY:
        require_layer(ctx.runtime.repository)
    # The answer is cached for the current generation, so it is derived from that generation's index.
    index = await ctx.runtime.objects_async(fresh=True)
    facts = registry_facts(ctx.runtime.registry)
    graph = await trio.to_thread.run_sync(derive_graph, params.id, facts, index)
    assert graph is not None
    return graph


async def list_(ctx: Context, params: NoInput) -> GraphList:
    """Every graph `graph.get` answers, described."""
    return graph_list()


declare = Declarations[Context](MODULE, source=__name__)

CAPABILITIES = (
    declare.query(
        "get",
        title="One graph",
        description=(
            "The graph `id` derived now from the registry and the object index: `node_kinds` and `edge_kinds` "
            "(each with its meaning), nodes sorted by id (each with its repository-relative source file), edges "
            "sorted by source, target and kind, and `metadata` (counts, `acyclic` by Kahn's algorithm, "
            "`truncated` past 2,000 nodes). A reference that names nothing the repository holds is an external "
            "node; the composed graph also lists `unresolved_relations`. A graph over kinds the repository lacks "
            "is empty. An unknown id is 404, and so is a graph of the layer (every one but `registry` and "
            "`composed`) in a checkout without an .ai/ layer."
        ),
        input=GraphInput,
        output=Graph,
        handler=get,
        examples=tuple(Example(name=graph_id, input={"id": graph_id}) for graph_id in GRAPH_IDS),
        http="GET /api/v1/graph",
        tool="svc_graph",
        cache=Cache(policy="process", max_entries=16),
    ),
    declare.query(
        "list",
        title="The graphs",
        description=(
            "Every graph `graph.get` answers, in a fixed order (registry, layer, rules, adrs, use-cases, why, "
            "product, composed), each with its title, description and what it is derived from."
        ),
        input=NoInput,
        output=GraphList,
        handler=list_,
        examples=(Example(name="graphs"),),
        http="GET /api/v1/graphs",
        tool="svc_graphs",
        resource=McpResource(uri="svc://graphs", name="graphs"),
    ),
)
