"""The graphs of a checkout: nodes and edges derived from the capability registry and the object index.

Eight graphs, by id: `registry` (modules, capabilities, declaring files, projections), `layer` (the
directories objects sit in and the kinds each holds), `rules` (rule `depends_on`), `adrs` (what a decision
supersedes and puts in force), `use-cases` (what a use case runs, exercises and evidences), `why` (moments
and what answers them), `product` (features and what they are made of) and `composed` (the registry and
every object in one graph, with the references of the layer as typed edges).

Every graph is derived, none authored, and the derivation is pure: the same registry and the same index give
the same bytes (no clock, no disk). Nodes are sorted by id and edges by (source, target, kind); the first
node added with an id wins; an edge whose ends are not both present is dropped when the graph is finished;
`acyclic` is Kahn's algorithm over every node. A derivation adds at most `MAX_NODES` nodes and then marks the
graph `truncated`. A reference that names nothing the repository holds becomes an external node (`external:
true`); in the composed graph a reference that names a kind the index holds and resolves to nothing is a
finding of `unresolved_relations` instead, and no edge is drawn for it. A graph over kinds the repository
lacks is well formed and empty. The registry is passed in as plain facts (`RegistryFacts`), so this module
knows nothing of the registry package.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import quote

import msgspec

if TYPE_CHECKING:
    from svc.layer._objects import LayerObject, ObjectIndex

__all__ = [
    "GRAPH_IDS",
    "MAX_NODES",
    "CapabilityFacts",
    "Graph",
    "GraphEdge",
    "GraphInfo",
    "GraphList",
    "GraphMetadata",
    "GraphNode",
    "ModuleFacts",
    "RegistryFacts",
    "UnresolvedRelation",
    "derive_graph",
    "graph_list",
]

#: The most nodes one derivation adds; past it the graph is `truncated`.
MAX_NODES = 2000
#: The longest text (or list element) a node carries as a fact.
FACT_LIMIT = 200
#: The metadata fields a node already shows as its id, label, summary, status or kind.
_PROJECTED = frozenset({"id", "version", "kind", "title", "description", "status", "schema"})
#: The reference the layer writes for a deliberate absence: no edge and no finding.
_ABSENT = "-"
#: The summary of every external node.
_EXTERNAL = "named by the layer, not held by this repository"
#: RFC 3986 `pchar` without `%`: what an identity keeps literal.
_PCHAR = "!$&'()*+,;=:@-._~"
_I64 = 2**63

Fact = bool | int | str | list[str]


class GraphNode(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One node.

    `id` (unique in the graph), `kind` (one of the graph's `node_kinds`), `label` (what a renderer draws), `summary`
    (one line, when the source holds one), `route` (where the cockpit shows the thing), `source` (the repository-
    relative file or directory it comes from), `status` (a word of the graph's own vocabulary), `external` (true
    when the layer names it and the repository does not hold it; omitted when false) and `facts` (composed graph:
    the object's own short metadata; omitted when empty).
    """

    id: str
    kind: str
    label: str
    summary: str | None = None
    route: str | None = None
    source: str | None = None
    status: str | None = None
    external: bool = False
    facts: dict[str, Fact] = msgspec.field(default_factory=dict)


class GraphEdge(msgspec.Struct, frozen=True, kw_only=True):
    """One directed edge between two nodes of the graph; `kind` is one of the graph's `edge_kinds`."""

    source: str
    target: str
    kind: str


class GraphMetadata(msgspec.Struct, frozen=True, kw_only=True):
    """Counts and invariants.

    `nodes`, `edges`, `acyclic` (the edges form no cycle; Kahn's algorithm over every node) and `truncated` (the
    derivation stopped at 2,000 nodes).
    """

    nodes: int
    edges: int
    acyclic: bool
    truncated: bool


class UnresolvedRelation(msgspec.Struct, frozen=True, kw_only=True, order=True):
    """A reference of the layer that resolves to nothing.

    The file that declares it (`declared_in`, repository-relative), the metadata `key`, the `reference` as written
    and the `correction` to make.
    """

    declared_in: str
    key: str
    reference: str
    correction: str


class Graph(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A derived graph.

    `id`, `title`, `description`, `source` (what it is derived from), `node_kinds` and `edge_kinds` (each kind to
    its meaning, key-sorted), `nodes` (sorted by id), `edges` (sorted by source, target, kind), `metadata`, and for
    the composed graph alone `unresolved_relations` (the references that resolve to nothing, sorted and de-
    duplicated).
    """

    id: str
    title: str
    description: str
    source: str
    node_kinds: dict[str, str]
    edge_kinds: dict[str, str]
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    metadata: GraphMetadata
    unresolved_relations: list[UnresolvedRelation] | None = None


class GraphInfo(msgspec.Struct, frozen=True, kw_only=True):
    """One graph svc derives, described without deriving it: `id`, `title`, `description`, `source`."""

    id: str
    title: str
    description: str
    source: str


class GraphList(msgspec.Struct, frozen=True, kw_only=True):
    """Every graph `graph.get` answers (`count` of them), in a fixed order."""

    count: int
    graphs: list[GraphInfo]


@dataclass(frozen=True, slots=True)
class ModuleFacts:
    """What a graph needs of one capability module."""

    id: str
    title: str
    source: str = "builtin"


@dataclass(frozen=True, slots=True)
class CapabilityFacts:
    """What a graph needs of one capability: its id, module, title, kind, declaring file and exposures."""

    id: str
    module: str
    title: str
    kind: str
    source: str
    mcp: bool = False
    http: bool = False
    cli: bool = False
    tool: str | None = None
    command: str | None = None


@dataclass(frozen=True, slots=True)
class RegistryFacts:
    """The capability registry as plain facts: its modules and capabilities, each in id order."""

    modules: tuple[ModuleFacts, ...] = ()
    capabilities: tuple[CapabilityFacts, ...] = ()


@dataclass(frozen=True, slots=True)
class _Words:
    id: str
    title: str
    description: str
    source: str


_WORDS: tuple[_Words, ...] = (
    _Words(
        "registry",
        "Capability registry",
        "Every capability module, the capabilities it composes, the file each was declared in, and the MCP, "
        "HTTP, command-line and cockpit projections each is exposed through: svc describing itself from the "
        "registry every surface is derived from.",
        "the capability registry",
    ),
    _Words(
        "layer",
        "The shape of the layer",
        "Every directory an object of the index sits in, nested as the tree nests them, and under each the "
        "kinds of the objects it holds with how many. A directory appears exactly when something in it was "
        "read.",
        "the provenance of every object of the index",
    ),
    _Words(
        "rules",
        "Rule dependencies",
        "Every rule and the rules it declares it depends on, with the class of each. A dependency the "
        "repository does not hold is drawn as an external node rather than left out.",
        "the `depends_on` metadata of every object of kind `rule`",
    ),
    _Words(
        "adrs",
        "Decisions and what they put in force",
        "Every architecture decision, the decisions it supersedes, and the rules, claims, files and tests it "
        "names as put in force. Read backwards, the same edge answers which decision put a rule in force.",
        "the front matter of every object of kind `adr`",
    ),
    _Words(
        "use-cases",
        "Use cases and what they exercise",
        "Every use case with the commands it runs, the doctrines it exercises and the claims it is evidence "
        "for. Read backwards it answers what proves a command and what exercises a doctrine.",
        "the front matter of every object of kind `use-case`",
    ),
    _Words(
        "why",
        "Moments and what answers them",
        "Every stable moment (an operational situation the tooling answers), who recognises it, the area it "
        "falls under, and the commands, capabilities, claims, rules and use cases that answer it. Empty when "
        "the layer holds no objects of kind `moment`.",
        "the metadata of every object of kind `moment`",
    ),
    _Words(
        "product",
        "The product, composed",
        "Every public feature, the capability modules, commands and object kinds it is made of, and the "
        "surfaces those are reached through: the command line, the HTTP API, MCP, the cockpit and the "
        "documentation. Empty when the layer holds no objects of kind `feature`.",
        "the objects of kind `feature`, the capability registry and the object index",
    ),
    _Words(
        "composed",
        "Everything, composed",
        "The capability registry and every object of the layer in one graph: each module with its "
        "capabilities, each capability with the projections it is exposed through, every object under its "
        "kind, and every reference the layer's metadata carries as a typed edge (rule and plan dependencies, "
        "issues under their milestones, decisions, use cases, claims, tracked files). References that "
        "resolve to nothing are listed in `unresolved_relations`.",
        "the capability registry and every object of the index",
    ),
)
#: Every graph id, in the order `graph.list` answers them.
GRAPH_IDS: tuple[str, ...] = tuple(w.id for w in _WORDS)
_BY_ID: Mapping[str, _Words] = {w.id: w for w in _WORDS}


def graph_list() -> GraphList:
    """Every graph, described by its own words (no derivation runs)."""
    graphs = [GraphInfo(id=w.id, title=w.title, description=w.description, source=w.source) for w in _WORDS]
    return GraphList(count=len(graphs), graphs=graphs)


def derive_graph(graph_id: str, registry: RegistryFacts, index: ObjectIndex) -> Graph | None:
    """The graph `graph_id` over this registry and index; None when no graph has that id."""
    derive = _DERIVATIONS.get(graph_id)
    return None if derive is None else derive(registry, index)


# ------------------------------------------------------------------------------------------------ builder


class _Builder:
    """A graph under construction: nodes keyed by id (first wins), edges as a set, at most MAX_NODES."""

    def __init__(self, graph_id: str) -> None:
        self.words = _BY_ID[graph_id]
        self.node_kinds: dict[str, str] = {}
        self.edge_kinds: dict[str, str] = {}
        self.nodes: dict[str, GraphNode] = {}
        self.edges: set[tuple[str, str, str]] = set()
        self.truncated = False

    def kinds(self, nodes: Iterable[tuple[str, str]] = (), edges: Iterable[tuple[str, str]] = ()) -> None:
        self.node_kinds.update(nodes)
        self.edge_kinds.update(edges)

    def room(self, node_id: str) -> bool:
        """Whether a node with this id is there or could still be added (marks the graph truncated if not)."""
        if node_id in self.nodes or len(self.nodes) < MAX_NODES:
            return True
        self.truncated = True
        return False

    def node(self, node: GraphNode) -> bool:
        """Add `node` unless one with its id is there; False when the graph is full."""
        if not self.room(node.id):
            return False
        self.nodes.setdefault(node.id, node)
        return True

    def has(self, node_id: str) -> bool:
        return node_id in self.nodes

    def edge(self, source: str, target: str, kind: str) -> None:
        self.edges.add((source, target, kind))

    def external(self, kind: str, name: str, *, path: str | None = None, node_id: str | None = None) -> str:
        """An external node, `<kind>:<name>` unless named (added once; its kind declared when the graph lacks it)."""
        node_id = node_id or f"{kind}:{name}"
        if self.node(
            GraphNode(
                id=node_id,
                kind=kind,
                label=name.rsplit("/", 1)[-1] or name,
                summary=_EXTERNAL,
                source=path,
                external=True,
            )
        ):
            self.node_kinds.setdefault(kind, f"something of kind `{kind}` the layer names and the index does not hold")
        return node_id

    def finish(self, unresolved: list[UnresolvedRelation] | None = None) -> Graph:
        nodes = [self.nodes[k] for k in sorted(self.nodes)]
        edges = sorted(e for e in self.edges if e[0] in self.nodes and e[1] in self.nodes)
        words = self.words
        return Graph(
            id=words.id,
            title=words.title,
            description=words.description,
            source=words.source,
            node_kinds=dict(sorted(self.node_kinds.items())),
            edge_kinds=dict(sorted(self.edge_kinds.items())),
            nodes=nodes,
            edges=[GraphEdge(source=s, target=t, kind=k) for s, t, k in edges],
            metadata=GraphMetadata(
                nodes=len(nodes), edges=len(edges), acyclic=is_acyclic(self.nodes, edges), truncated=self.truncated
            ),
            unresolved_relations=unresolved,
        )


def is_acyclic(nodes: Iterable[str], edges: Iterable[tuple[str, str, str]]) -> bool:
    """Whether the edges form no cycle over these nodes (Kahn's algorithm)."""
    indegree: dict[str, int] = dict.fromkeys(nodes, 0)
    outgoing: dict[str, list[str]] = {}
    for source, target, _ in edges:
        outgoing.setdefault(source, []).append(target)
        indegree[target] = indegree.get(target, 0) + 1
        indegree.setdefault(source, 0)
    ready = [n for n, d in indegree.items() if d == 0]
    seen = 0
    while ready:
        current = ready.pop()
        seen += 1
        for target in outgoing.get(current, ()):
            indegree[target] -= 1
            if indegree[target] == 0:
                ready.append(target)
    return seen == len(indegree)


# ------------------------------------------------------------------------------------------------ helpers


def capability_route(cap_id: str) -> str:
    """Where the cockpit shows a capability."""
    return f"/cockpit/capabilities/{quote(cap_id, safe='')}"


def object_route(uri: str) -> str:
    """Where the cockpit shows an object."""
    return f"/cockpit/object?uri={quote(uri, safe='')}"


def _scalar(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def meta_text(obj: LayerObject, key: str) -> str | None:
    """A scalar metadata field as text (strings and integers), else None."""
    return _scalar(obj.metadata.get(key))


def meta_list(obj: LayerObject, key: str) -> list[str]:
    """A metadata field read as a list of names: a list (non-scalars skipped) or a lone scalar."""
    value = obj.metadata.get(key)
    if isinstance(value, list):
        return [s for s in map(_scalar, value) if s is not None]
    single = _scalar(value)
    return [] if single is None else [single]


def _fact(value: Any) -> Fact | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if -_I64 <= value < _I64 else None
    if isinstance(value, str):
        return value if len(value) <= FACT_LIMIT else None
    if isinstance(value, list):
        items: list[str] = []
        for item in value:
            if isinstance(item, bool):
                items.append("true" if item else "false")
            elif isinstance(item, int | float):
                items.append(str(item))
            elif isinstance(item, str) and len(item) <= FACT_LIMIT:
                items.append(item)
            else:
                return None
        return items
    return None


def facts(metadata: Mapping[str, Any]) -> dict[str, Fact]:
    """The short facts of an object's metadata, key-sorted (fields the node already shows are left out)."""
    out: dict[str, Fact] = {}
    for key in sorted(metadata):
        if key in _PROJECTED:
            continue
        fact = _fact(metadata[key])
        if fact is not None:
            out[key] = fact
    return out


def _encoded(name: str) -> str:
    return quote(name, safe="/" + _PCHAR)


class _Lookup:
    """The index read once into the lookups references need.

    By kind and identity (or identity stem), by path, and decisions by their declared `id`.
    """

    def __init__(self, index: ObjectIndex) -> None:
        self.index = index
        self.by_identity: dict[tuple[str, str], LayerObject] = {}
        self.by_stem: dict[tuple[str, str], LayerObject] = {}
        self.by_path: dict[str, LayerObject] = {}
        self.adr_by_id: dict[str, LayerObject] = {}
        for obj in index.objects:
            self.by_identity[(obj.kind, obj.identity)] = obj
            stem, at, _ = obj.identity.rpartition("@")
            if at:
                self.by_stem.setdefault((obj.kind, stem), obj)
            self.by_path.setdefault(obj.provenance.path, obj)
            if obj.kind == "adr":
                declared = meta_text(obj, "id")
                if declared is not None:
                    self.adr_by_id.setdefault(declared, obj)
        self.kinds = frozenset(index.kinds)

    def object(self, kind: str, name: str) -> LayerObject | None:
        """The object of `kind` whose identity is `name` (as written or encoded), or whose stem is."""
        for key in ((kind, name), (kind, _encoded(name))):
            found = self.by_identity.get(key) or self.by_stem.get(key)
            if found is not None:
                return found
        return None

    def path(self, path: str) -> LayerObject | None:
        return self.by_path.get(path.removeprefix("./"))


def _held(node_id: str, kind: str, label: str, obj: LayerObject) -> GraphNode:
    """A node standing for an object of the index under a graph-local id."""
    return GraphNode(
        id=node_id,
        kind=kind,
        label=label,
        summary=obj.title or obj.description,
        route=object_route(obj.uri),
        source=obj.provenance.path,
    )


# ------------------------------------------------------------------------------------------------ graphs

_PROJECTIONS = (
    ("mcp", "MCP", "the tools and resources an MCP client sees"),
    ("http", "HTTP", "the routes under /api/v1 and the OpenAPI document over them"),
    ("cli", "CLI", "the words after `svc` on the command line"),
    ("cockpit", "Cockpit", "the pages of /cockpit: one per capability"),
)


def _projections(cap: CapabilityFacts) -> Iterable[str]:
    if cap.mcp:
        yield "projection:mcp"
    if cap.http:
        yield "projection:http"
    if cap.cli:
        yield "projection:cli"
    yield "projection:cockpit"


def _capability(b: _Builder, cap: CapabilityFacts) -> str | None:
    """Add the capability's node, the edge from its module and those to its projections.

    Its node id, or None when the graph has no room left for it.
    """
    node_id = f"capability:{cap.id}"
    node = GraphNode(
        id=node_id,
        kind="capability",
        label=cap.id,
        summary=cap.title,
        route=capability_route(cap.id),
        source=cap.source or None,
        status=cap.kind,
    )
    if not b.node(node):
        return None
    b.edge(f"module:{cap.module}", node_id, "composes")
    for projection in _projections(cap):
        b.edge(node_id, projection, "projects")
    return node_id


def _registry(registry: RegistryFacts, index: ObjectIndex) -> Graph:
    b = _Builder("registry")
    b.kinds(
        nodes=(
            ("module", "a capability module"),
            ("capability", "one declared capability: a query, a command or a resource"),
            ("source", "the file a capability is declared in"),
            ("projection", "a surface the registry is projected onto, the cockpit included"),
        ),
        edges=(
            ("composes", "the module composes the capability"),
            ("declared_in", "the capability is declared in that file"),
            ("projects", "the capability is exposed through that surface"),
        ),
    )
    for module in registry.modules:
        b.node(
            GraphNode(
                id=f"module:{module.id}",
                kind="module",
                label=module.id,
                summary=module.title,
                route=f"/cockpit/capabilities?module={quote(module.id, safe='')}",
                status=module.source,
            )
        )
    for key, label, meaning in _PROJECTIONS:
        b.node(GraphNode(id=f"projection:{key}", kind="projection", label=label, summary=meaning))
    for cap in registry.capabilities:
        node_id = _capability(b, cap)
        if node_id is None:
            break
        if cap.source:
            source_id = f"source:{cap.source}"
            label = cap.source.rsplit("/", 1)[-1]
            b.node(GraphNode(id=source_id, kind="source", label=label, summary=cap.source, source=cap.source))
            b.edge(node_id, source_id, "declared_in")
    return b.finish()


def _layer(registry: RegistryFacts, index: ObjectIndex) -> Graph:
    b = _Builder("layer")
    b.kinds(
        nodes=(
            ("directory", "a directory at least one object of the index sits in, or one above it"),
            ("kind", "one kind of object under the directory that holds it"),
        ),
        edges=(
            ("contains", "the directory contains the directory"),
            ("read_as", "the directory holds objects of the kind"),
        ),
    )
    per_directory: dict[str, dict[str, int]] = {}
    for obj in index.objects:
        kinds = per_directory.setdefault(obj.provenance.directory, {})
        kinds[obj.kind] = kinds.get(obj.kind, 0) + 1
    for directory in sorted(per_directory):
        kinds = per_directory[directory]
        segments = [s for s in directory.split("/") if s and s != "."]
        for depth in range(1, len(segments) + 1):
            path = "/".join(segments[:depth])
            if not b.node(
                GraphNode(
                    id=f"directory:{path}", kind="directory", label=segments[depth - 1], summary=path, source=path
                )
            ):
                break
            if depth > 1:
                b.edge(f"directory:{'/'.join(segments[: depth - 1])}", f"directory:{path}", "contains")
        for kind in sorted(kinds):
            count = kinds[kind]
            node_id = f"kind:{directory}:{kind}"
            if not b.node(
                GraphNode(
                    id=node_id,
                    kind="kind",
                    label=kind,
                    summary=f"{count} object(s)",
                    route=f"/cockpit/objects?kind={quote(kind, safe='')}",
                    source=directory,
                )
            ):
                break
            if segments:
                b.edge(f"directory:{directory}", node_id, "read_as")
    return b.finish()


def _rules(registry: RegistryFacts, index: ObjectIndex) -> Graph:
    b = _Builder("rules")
    b.kinds(
        nodes=(
            ("rule", "a rule of the layer"),
            ("missing", "a rule named as a dependency that the index does not hold"),
        ),
        edges=(("depends_on", "the rule states it depends on the other"),),
    )
    lookup = _Lookup(index)
    rules = index.of_kind("rule")
    for obj in rules:
        b.node(
            GraphNode(
                id=f"rule:{obj.identity}",
                kind="rule",
                label=obj.identity,
                summary=obj.title,
                route=object_route(obj.uri),
                source=obj.provenance.path,
                status=meta_text(obj, "class"),
            )
        )
    for obj in rules:
        for dep in meta_list(obj, "depends_on"):
            if dep == _ABSENT:
                continue
            found = lookup.object("rule", dep)
            target = (
                f"rule:{found.identity}" if found is not None else b.external("missing", dep, node_id=f"rule:{dep}")
            )
            b.edge(f"rule:{obj.identity}", target, "depends_on")
    return b.finish()


_ADR_TARGETS = ("rule", "claim", "file", "test")


def _adrs(registry: RegistryFacts, index: ObjectIndex) -> Graph:
    b = _Builder("adrs")
    b.kinds(
        nodes=(
            ("adr", "one architecture decision record"),
            ("rule", "a rule a decision put in force"),
            ("claim", "a claim a decision backs"),
            ("file", "a file a decision names"),
            ("test", "a test a decision names"),
        ),
        edges=(
            ("supersedes", "the decision supersedes the other"),
            ("put_in_force", "the decision put the thing in force"),
        ),
    )
    lookup = _Lookup(index)
    adrs = index.of_kind("adr")
    for obj in adrs:
        b.node(
            GraphNode(
                id=f"adr:{obj.identity}",
                kind="adr",
                label=meta_text(obj, "id") or obj.identity,
                summary=obj.title,
                route=object_route(obj.uri),
                source=obj.provenance.path,
                status=meta_text(obj, "status"),
            )
        )
    for obj in adrs:
        origin = f"adr:{obj.identity}"
        for superseded in meta_list(obj, "supersedes"):
            if superseded == _ABSENT:
                continue
            found = lookup.adr_by_id.get(superseded)
            target = f"adr:{found.identity}" if found is not None else b.external("adr", superseded)
            b.edge(origin, target, "supersedes")
        for reference in meta_list(obj, "related"):
            prefix, colon, rest = reference.partition(":")
            if not colon or prefix not in _ADR_TARGETS or not rest:
                continue
            target = f"{prefix}:{rest}"
            if not b.has(target):
                held = None if prefix in ("file", "test") else lookup.object(prefix, rest)
                held = held or lookup.path(rest)
                if held is not None:
                    b.node(_held(target, prefix, rest, held))
                else:
                    b.external(prefix, rest, path=rest if prefix in ("file", "test") else None)
            b.edge(origin, target, "put_in_force")
    return b.finish()


def _use_cases(registry: RegistryFacts, index: ObjectIndex) -> Graph:
    b = _Builder("use-cases")
    b.kinds(
        nodes=(
            ("use-case", "one use case"),
            ("command", "a command the use case runs"),
            ("doctrine", "a doctrine (a rule of the layer, or a name) the use case exercises"),
            ("claim", "a claim the use case is evidence for"),
        ),
        edges=(
            ("runs", "the use case runs that command"),
            ("exercises", "the use case exercises that doctrine"),
            ("evidences", "the use case is evidence for that claim"),
        ),
    )
    lookup = _Lookup(index)
    for obj in index.of_kind("use-case"):
        origin = f"use-case:{obj.identity}"
        if not b.node(
            GraphNode(
                id=origin,
                kind="use-case",
                label=obj.identity,
                summary=obj.title,
                route=object_route(obj.uri),
                source=obj.provenance.path,
                status=meta_text(obj, "status"),
            )
        ):
            break
        for field, kind, held_as, edge in (
            ("commands", "command", None, "runs"),
            ("doctrines", "doctrine", "rule", "exercises"),
            ("claims", "claim", "claim", "evidences"),
        ):
            for name in meta_list(obj, field):
                if name == _ABSENT:
                    continue
                target = f"{kind}:{name}"
                if not b.has(target):
                    held = None if held_as is None else lookup.object(held_as, name)
                    if held is not None:
                        b.node(_held(target, kind, name, held))
                    else:
                        b.external(kind, name)
                b.edge(origin, target, edge)
    return b.finish()


_WHY_FIELDS = (
    ("audiences", "audience", "recognised_by"),
    ("areas", "area", "falls_under"),
    ("commands", "command", "answered_by"),
    ("capabilities", "capability", "answered_by"),
    ("claims", "claim", "backed_by"),
    ("doctrines", "rule", "governed_by"),
    ("use_cases", "use-case", "resolved_by"),
    ("related", "moment", "related_to"),
)


def _declared_id(obj: LayerObject) -> str:
    """The id an object declares in its metadata, else its identity (moments and features)."""
    return meta_text(obj, "id") or obj.identity


def _why(registry: RegistryFacts, index: ObjectIndex) -> Graph:
    b = _Builder("why")
    b.kinds(
        nodes=(
            ("moment", "an operational moment the tooling is an answer to"),
            ("audience", "who recognises the moment"),
            ("area", "the operational area it falls under"),
            ("command", "a command that answers it"),
            ("capability", "a capability of svc that answers it"),
            ("claim", "a claim that says what is guaranteed"),
            ("rule", "a rule that governs it"),
            ("use-case", "a use case that shows the way out"),
        ),
        edges=(
            ("recognised_by", "that audience recognises the moment"),
            ("falls_under", "the moment falls under that area"),
            ("answered_by", "that command or capability answers the moment"),
            ("backed_by", "that claim says what is guaranteed here"),
            ("governed_by", "that rule governs the moment"),
            ("resolved_by", "that use case shows the way out"),
            ("related_to", "the moment names the other as related"),
        ),
    )
    lookup = _Lookup(index)
    capabilities = {c.id: c for c in registry.capabilities}
    tools = {c.tool: c for c in registry.capabilities if c.tool}
    moments = [m for m in index.of_kind("moment") if (meta_text(m, "status") or "stable") == "stable"]
    for obj in moments:
        b.node(
            GraphNode(
                id=f"moment:{_declared_id(obj)}",
                kind="moment",
                label=obj.title or _declared_id(obj),
                summary=meta_text(obj, "summary") or obj.description,
                route=object_route(obj.uri),
                source=obj.provenance.path,
                status=meta_text(obj, "severity"),
            )
        )
    for obj in moments:
        origin = f"moment:{_declared_id(obj)}"
        for field, kind, edge in _WHY_FIELDS:
            for name in meta_list(obj, field):
                if name == _ABSENT:
                    continue
                target = f"{kind}:{name}"
                if not b.has(target):
                    if kind == "capability":
                        cap = capabilities.get(name) or tools.get(name)
                        if cap is not None:
                            b.node(
                                GraphNode(
                                    id=target,
                                    kind=kind,
                                    label=name,
                                    summary=cap.title,
                                    route=capability_route(cap.id),
                                    source=cap.source or None,
                                )
                            )
                        else:
                            b.external(kind, name)
                    else:
                        held = None if kind == "command" else lookup.object(kind, name)
                        if held is not None:
                            b.node(_held(target, kind, name, held))
                        else:
                            b.external(kind, name)
                b.edge(origin, target, edge)
    return b.finish()


_SURFACES = (
    ("cli", "Command line", None),
    ("api", "HTTP API", "/api/v1"),
    ("mcp", "MCP", "/mcp"),
    ("cockpit", "Cockpit", "/cockpit"),
    ("docs", "Documentation", "/docs/"),
)


def _product(registry: RegistryFacts, index: ObjectIndex) -> Graph:
    b = _Builder("product")
    b.kinds(
        nodes=(
            ("feature", "one public feature, as its file declares it"),
            ("module", "a capability module of svc"),
            ("command", "a command of svc's command line"),
            ("kind", "one kind of object of the layer"),
            ("surface", "an interface the product is reached through"),
        ),
        edges=(
            ("made_of", "the feature is made of that module, command or kind"),
            ("exposed_through", "the module, command or kind is reached through that surface"),
            ("related_to", "the feature names the other as related"),
        ),
    )
    features = [
        f for f in index.of_kind("feature") if meta_text(f, "visibility") not in ("internal", "private", "hidden")
    ]
    if not features:
        return b.finish()
    for key, label, route in _SURFACES:
        b.node(GraphNode(id=f"surface:{key}", kind="surface", label=label, route=route))
    modules = {m.id: m for m in registry.modules}
    by_module: dict[str, list[CapabilityFacts]] = {}
    for cap in registry.capabilities:
        by_module.setdefault(cap.module, []).append(cap)
    commands = {c.command: c for c in registry.capabilities if c.command}
    lookup = _Lookup(index)
    counts = {kind: len(index.of_kind(kind)) for kind in {*index.kinds, *index.kind_specs}}
    for obj in features:
        b.node(
            GraphNode(
                id=f"feature:{_declared_id(obj)}",
                kind="feature",
                label=obj.title or _declared_id(obj),
                summary=obj.description,
                route=object_route(obj.uri),
                source=obj.provenance.path,
                status="featured" if obj.metadata.get("featured") is True else meta_text(obj, "status"),
            )
        )
    for obj in features:
        origin = f"feature:{_declared_id(obj)}"
        for name in meta_list(obj, "modules"):
            target = f"module:{name}"
            module = modules.get(name)
            if module is None:
                b.external("module", name)
            elif b.node(GraphNode(id=target, kind="module", label=name, summary=module.title, status=module.source)):
                caps = by_module.get(name, [])
                if any(c.cli for c in caps):
                    b.edge(target, "surface:cli", "exposed_through")
                if any(c.http for c in caps):
                    b.edge(target, "surface:api", "exposed_through")
                if any(c.mcp for c in caps):
                    b.edge(target, "surface:mcp", "exposed_through")
                b.edge(target, "surface:cockpit", "exposed_through")
            b.edge(origin, target, "made_of")
        for name in meta_list(obj, "commands"):
            target = f"command:{name}"
            command = commands.get(name)
            if command is None:
                b.external("command", name)
            elif b.node(
                GraphNode(
                    id=target,
                    kind="command",
                    label=f"svc {name}",
                    summary=command.title,
                    route=capability_route(command.id),
                    source=command.source or None,
                )
            ):
                b.edge(target, "surface:cli", "exposed_through")
            b.edge(origin, target, "made_of")
        for name in meta_list(obj, "kinds"):
            target = f"kind:{name}"
            if name not in counts:
                b.external("kind", name)
            elif b.node(
                GraphNode(id=target, kind="kind", label=name, summary=f"{counts[name]} object(s) of the layer")
            ):
                b.edge(target, "surface:mcp", "exposed_through")
                b.edge(target, "surface:cockpit", "exposed_through")
            b.edge(origin, target, "made_of")
        if meta_list(obj, "docs"):
            b.edge(origin, "surface:docs", "exposed_through")
        for name in meta_list(obj, "related"):
            target = f"feature:{name}"
            if not b.has(target):
                if lookup.object("feature", name) is not None:
                    continue  # a feature that is not public stays off the graph
                b.external("feature", name)
            b.edge(origin, target, "related_to")
    return b.finish()


# ------------------------------------------------------------------------------------------------ composed

TargetRule = Literal["object", "declared_adr", "prefixed", "object_or_name", "name", "path", "mcp_tool"]


@dataclass(frozen=True, slots=True)
class Relation:
    """One reference convention of the layer.

    Objects of `kinds` (any kind when empty) name targets in the metadata `field`; each becomes an edge `edge`
    resolved by `rule` (over `kind`, with `fallback` the external kind of an unresolved name); `inverted` edges run
    from the target to the declaring object.
    """

    kinds: tuple[str, ...]
    field: str
    edge: str
    rule: TargetRule
    kind: str = ""
    fallback: str = ""
    inverted: bool = False


#: The references the composed graph draws, and the only place they are written down.
RELATIONS: tuple[Relation, ...] = (
    Relation(("rule",), "depends_on", "depends_on", "object", "rule"),
    Relation(("adr",), "supersedes", "supersedes", "declared_adr"),
    Relation(("adr",), "related", "put_in_force", "prefixed"),
    Relation(("skill",), "related", "related_to", "object", "skill"),
    Relation(("use-case",), "commands", "runs", "name", fallback="command"),
    Relation(("use-case",), "doctrines", "exercises", "object_or_name", "rule", "doctrine"),
    Relation(("use-case",), "claims", "evidences", "object", "claim"),
    Relation((), "tracks", "tracks", "path"),
    Relation(("claim",), "source", "defined_in", "path"),
    Relation(("claim",), "implementation", "implemented_by", "path"),
    Relation(("claim",), "test", "tested_by", "path"),
    Relation(("issue",), "milestone", "belongs_to", "object", "milestone"),
    Relation(("issue",), "depends_on", "depends_on", "object", "issue"),
    Relation(("milestone",), "depends_on", "depends_on", "object", "milestone"),
    Relation(("milestone",), "claims", "evidences", "object", "claim"),
    Relation(("use-case",), "applications", "serves", "object", "application"),
    Relation(("application",), "use_cases", "serves", "object", "use-case", inverted=True),
    Relation(("application",), "doctrines", "governed_by", "object_or_name", "rule", "doctrine"),
    Relation(("use-case",), "mcp_tools", "exercises", "mcp_tool"),
)

_COMPOSED_EDGES = (
    ("composes", "the module composes the capability"),
    ("projects", "the capability is exposed through that projection"),
    ("is_a", "the object is of that kind"),
    ("depends_on", "the record states it depends on the other"),
    ("supersedes", "the decision supersedes the other"),
    ("put_in_force", "the decision put the thing in force"),
    ("related_to", "the object names the other as related"),
    ("runs", "the use case runs that command"),
    ("exercises", "the use case exercises that doctrine or capability"),
    ("evidences", "the object is evidence for that claim"),
    ("tracks", "the document tracks that file"),
    ("defined_in", "the claim is defined in that file"),
    ("implemented_by", "the claim is implemented by that file"),
    ("tested_by", "the claim is proved by that test"),
    ("belongs_to", "the issue belongs to that milestone"),
    ("serves", "the use case serves that application"),
    ("governed_by", "the application is governed by that doctrine"),
)
_EXTERNAL_KINDS = {
    "file": "a file the layer names that is not an object of the index",
    "test": "a test the layer names that is not an object of the index",
    "command": "a command a use case runs",
    "doctrine": "a doctrine named by the layer that no rule of the index answers to",
}


@dataclass(frozen=True, slots=True)
class _Held:
    node_id: str


@dataclass(frozen=True, slots=True)
class _External:
    kind: str
    name: str
    path: str | None = None


@dataclass(frozen=True, slots=True)
class _Missing:
    correction: str


_Outcome = _Held | _External | _Missing


class _Resolver:
    def __init__(self, registry: RegistryFacts, lookup: _Lookup) -> None:
        self.lookup = lookup
        self.tools = {c.tool: c for c in registry.capabilities if c.tool}

    def resolve(self, rel: Relation, reference: str) -> _Outcome:
        lookup = self.lookup
        if rel.rule == "object":
            found = lookup.object(rel.kind, reference)
            if found is not None:
                return _Held(found.uri)
            return _Missing(
                f"no object of kind `{rel.kind}` has the identity `{reference}`; correct the name or add it"
            )
        if rel.rule == "declared_adr":
            adr = lookup.adr_by_id.get(reference)
            if adr is not None:
                return _Held(adr.uri)
            return _Missing(f"no decision declares the id `{reference}`; correct the name or record the decision")
        if rel.rule == "prefixed":
            return self._prefixed(reference)
        if rel.rule == "object_or_name":
            found = lookup.object(rel.kind, reference)
            return _Held(found.uri) if found is not None else _External(rel.fallback, reference)
        if rel.rule == "name":
            return _External(rel.fallback, reference)
        if rel.rule == "path":
            held = lookup.path(reference)
            return _Held(held.uri) if held is not None else _External("file", reference, reference)
        cap = self.tools.get(reference)
        if cap is not None:
            return _Held(f"capability:{cap.id}")
        return _Missing(f"no capability is exposed as the MCP tool `{reference}`; correct the name")

    def _prefixed(self, reference: str) -> _Outcome:
        prefix, colon, rest = reference.partition(":")
        if not colon or not prefix or not rest:
            return _Missing(f"`{reference}` is not `<kind>:<name>`; name the kind of what it points at")
        if prefix in ("file", "test"):
            held = self.lookup.path(rest)
            return _Held(held.uri) if held is not None else _External(prefix, rest, rest)
        found = self.lookup.object(prefix, rest)
        if found is not None:
            return _Held(found.uri)
        if prefix not in self.lookup.kinds:
            return _External(prefix, rest)
        return _Missing(f"no object of kind `{prefix}` has the identity `{rest}`; correct the reference or add it")


def _references(obj: LayerObject) -> Iterable[tuple[Relation, str]]:
    for rel in RELATIONS:
        if rel.kinds and obj.kind not in rel.kinds:
            continue
        for reference in meta_list(obj, rel.field):
            if reference != _ABSENT:
                yield rel, reference


def _composed(registry: RegistryFacts, index: ObjectIndex) -> Graph:
    b = _Builder("composed")
    b.kinds(
        nodes=(
            ("module", "a capability module of svc"),
            ("capability", "one capability, declared once and projected"),
            ("projection", "a surface a capability is exposed through"),
            ("kind", "one kind of object the index holds"),
            *_EXTERNAL_KINDS.items(),
        ),
        edges=_COMPOSED_EDGES,
    )
    b.kinds(nodes=((kind, f"an object of kind `{kind}`") for kind in index.kinds))
    for kind in index.kinds:
        b.node(GraphNode(id=f"kind:{kind}", kind="kind", label=kind, summary=f"every object of kind `{kind}`"))
    for key, _, _ in _PROJECTIONS:
        b.node(GraphNode(id=f"projection:{key}", kind="projection", label=key, summary=f"the {key} projection"))
    titles = {m.id: m.title for m in registry.modules}
    for cap in registry.capabilities:
        b.node(GraphNode(id=f"module:{cap.module}", kind="module", label=cap.module, summary=titles.get(cap.module)))
        if _capability(b, cap) is None:
            break
    for obj in index.objects:
        if not b.room(obj.uri):
            break
        b.node(
            GraphNode(
                id=obj.uri,
                kind=obj.kind,
                label=obj.identity,
                summary=obj.title or obj.description,
                route=object_route(obj.uri),
                source=obj.provenance.path,
                status=meta_text(obj, "status"),
                facts=facts(obj.metadata),
            )
        )
        b.edge(obj.uri, f"kind:{obj.kind}", "is_a")
    resolver = _Resolver(registry, _Lookup(index))
    unresolved: set[UnresolvedRelation] = set()
    for obj in index.objects:
        for rel, reference in _references(obj):
            outcome = resolver.resolve(rel, reference)
            if isinstance(outcome, _Missing):
                unresolved.add(
                    UnresolvedRelation(
                        declared_in=obj.provenance.path,
                        key=rel.field,
                        reference=reference,
                        correction=outcome.correction,
                    )
                )
                continue
            if isinstance(outcome, _External):
                target = b.external(outcome.kind, outcome.name, path=outcome.path)
            else:
                target = outcome.node_id
            if rel.inverted:
                b.edge(target, obj.uri, rel.edge)
            else:
                b.edge(obj.uri, target, rel.edge)
    return b.finish(sorted(unresolved))


_DERIVATIONS: Mapping[str, Callable[[RegistryFacts, ObjectIndex], Graph]] = {
    "registry": _registry,
    "layer": _layer,
    "rules": _rules,
    "adrs": _adrs,
    "use-cases": _use_cases,
    "why": _why,
    "product": _product,
    "composed": _composed,
}
