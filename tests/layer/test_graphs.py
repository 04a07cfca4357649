"""The graph derivations over a fixture layer: golden answers, sorting, acyclicity, truncation, empty graphs.

The golden files under `tests/layer/golden/` are the whole answers (JSON, indented) of every graph over the
fixture layer of `_graph_layer.py` and a small registry; `SVC_UPDATE_GOLDEN=1` rewrites them.
"""

from __future__ import annotations

import os
from pathlib import Path

import msgspec
import pytest

from svc.layer import (
    GRAPH_IDS,
    CapabilityFacts,
    Graph,
    ModuleFacts,
    ObjectIndex,
    RegistryFacts,
    Repository,
    derive_graph,
    graph_list,
)
from svc.layer._graphs import MAX_NODES, RELATIONS, facts, is_acyclic
from svc.layer._objects import LayerObject, Provenance
from tests.layer._graph_layer import empty_layer, write_graph_layer, write_why_and_product_layer

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("SVC_UPDATE_GOLDEN") == "1"

#: A registry of two modules and three capabilities, as the graphs see one.
REGISTRY = RegistryFacts(
    modules=(ModuleFacts(id="graph", title="Graphs"), ModuleFacts(id="plan", title="Plan")),
    capabilities=(
        CapabilityFacts(
            id="graph.get",
            module="graph",
            title="One graph",
            kind="query",
            source="src/svc/capabilities/_graph.py",
            mcp=True,
            http=True,
            tool="svc_graph",
        ),
        CapabilityFacts(
            id="plan.next",
            module="plan",
            title="Next issue",
            kind="query",
            source="src/svc/capabilities/_plan.py",
            mcp=True,
            http=True,
            cli=True,
            tool="svc_plan_next",
            command="plan next",
        ),
        CapabilityFacts(
            id="plan.transition",
            module="plan",
            title="Move an issue",
            kind="command",
            source="src/svc/capabilities/_plan.py",
            cli=True,
            command="plan transition",
        ),
    ),
)


def _index(root: Path) -> ObjectIndex:
    return ObjectIndex.build(Repository.discover(root))


@pytest.fixture(scope="module")
def fixture_index(tmp_path_factory: pytest.TempPathFactory) -> ObjectIndex:
    return _index(write_graph_layer(tmp_path_factory.mktemp("graphs") / "checkout"))


@pytest.fixture(scope="module")
def why_index(tmp_path_factory: pytest.TempPathFactory) -> ObjectIndex:
    return _index(write_why_and_product_layer(tmp_path_factory.mktemp("why") / "checkout"))


def _graph(graph_id: str, index: ObjectIndex, registry: RegistryFacts = REGISTRY) -> Graph:
    graph = derive_graph(graph_id, registry, index)
    assert graph is not None
    return graph


def _golden(name: str, answer: msgspec.Struct) -> None:
    text = msgspec.json.format(msgspec.json.encode(answer), indent=2).decode() + "\n"
    path = GOLDEN / f"{name}.json"
    if UPDATE:
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert text == path.read_text(), f"{name}: the answer differs from {path.name}"


@pytest.mark.parametrize("graph_id", ["registry", "layer", "rules", "adrs", "use-cases", "composed"])
def test_each_graph_over_the_fixture_layer_is_its_golden_answer(fixture_index: ObjectIndex, graph_id: str) -> None:
    _golden(f"graph-{graph_id}", _graph(graph_id, fixture_index))


@pytest.mark.parametrize("graph_id", ["why", "product"])
def test_why_and_product_over_kinds_the_repository_adds_are_their_golden_answers(
    why_index: ObjectIndex, graph_id: str
) -> None:
    _golden(f"graph-{graph_id}", _graph(graph_id, why_index))


def test_every_graph_is_sorted_closed_and_declares_its_vocabulary(
    fixture_index: ObjectIndex, why_index: ObjectIndex
) -> None:
    for index in (fixture_index, why_index):
        for graph_id in GRAPH_IDS:
            graph = _graph(graph_id, index)
            ids = [n.id for n in graph.nodes]
            assert ids == sorted(set(ids)), graph_id
            keys = [(e.source, e.target, e.kind) for e in graph.edges]
            assert keys == sorted(set(keys)), graph_id
            assert {e.source for e in graph.edges} | {e.target for e in graph.edges} <= set(ids), graph_id
            assert {n.kind for n in graph.nodes} <= set(graph.node_kinds), graph_id
            assert {e.kind for e in graph.edges} <= set(graph.edge_kinds), graph_id
            assert list(graph.node_kinds) == sorted(graph.node_kinds)
            assert list(graph.edge_kinds) == sorted(graph.edge_kinds)
            assert (graph.metadata.nodes, graph.metadata.edges) == (len(graph.nodes), len(graph.edges))
            assert (graph.unresolved_relations is not None) == (graph_id == "composed")
            for node in graph.nodes:
                assert node.source is None or not node.source.startswith("/"), node


def test_the_plan_appears_in_the_composed_graph_with_issues_under_their_milestone(
    fixture_index: ObjectIndex,
) -> None:
    graph = _graph("composed", fixture_index)
    edges = {(e.source, e.target, e.kind) for e in graph.edges}
    assert ("svc://issue/I1", "svc://milestone/M1", "belongs_to") in edges
    assert ("svc://issue/I2", "svc://milestone/M1", "belongs_to") in edges
    assert ("svc://issue/I2", "svc://issue/I1", "depends_on") in edges
    assert not any(s == "svc://issue/I3" and k in ("belongs_to", "depends_on") for s, _, k in edges)
    unresolved = {(u.declared_in, u.key, u.reference) for u in graph.unresolved_relations or []}
    assert unresolved == {
        (".ai/repo/adrs/0002-second.md", "related", "rule:project.nope"),
        (".ai/repo/project/issues/I3.yaml", "depends_on", "I404"),
        (".ai/repo/project/issues/I3.yaml", "milestone", "M9"),
        (".ai/repo/rules/project/b.v1.md", "depends_on", "project.gone@1"),
        (".ai/repo/use-cases/find.md", "mcp_tools", "svc_nope"),
    }


def test_a_dangling_dependency_is_an_external_node_and_a_stem_reference_resolves(
    fixture_index: ObjectIndex,
) -> None:
    graph = _graph("rules", fixture_index)
    missing = next(n for n in graph.nodes if n.id == "rule:project.gone@1")
    assert (missing.kind, missing.external) == ("missing", True)
    edges = {(e.source, e.target) for e in graph.edges}
    assert ("rule:project.b@1", "rule:project.gone@1") in edges
    assert ("rule:project.c@2", "rule:project.a@1") in edges
    assert ("rule:project.a@1", "rule:project.b@1") in edges
    assert graph.metadata.acyclic


def test_a_cycle_is_reported(tmp_path: Path) -> None:
    root = write_graph_layer(tmp_path / "cyclic")
    rule = root / ".ai/repo/rules/project/b.v1.md"
    rule.write_text(rule.read_text().replace("depends_on: [project.gone@1, '-']", "depends_on: [project.a@1]"))
    graph = _graph("rules", _index(root))
    assert graph.metadata.acyclic is False
    assert is_acyclic(["a", "b"], [("a", "b", "k")])
    assert not is_acyclic(["a", "b"], [("a", "b", "k"), ("b", "a", "k")])
    assert not is_acyclic(["a"], [("a", "a", "k")])


def test_a_graph_over_kinds_the_repository_lacks_is_well_formed_and_empty(tmp_path: Path) -> None:
    index = _index(empty_layer(tmp_path / "empty"))
    assert len(index) == 0
    for graph_id in GRAPH_IDS:
        graph = _graph(graph_id, index)
        assert graph.id == graph_id
        assert graph.title
        assert graph.description
        assert graph.node_kinds
        assert graph.edge_kinds
        assert graph.metadata.acyclic is True
        assert graph.metadata.truncated is False
        if graph_id not in ("registry", "composed"):
            assert (graph.nodes, graph.edges, graph.metadata.nodes) == ([], [], 0), graph_id
    composed = _graph("composed", index, RegistryFacts())
    assert [n.id for n in composed.nodes] == [f"projection:{p}" for p in ("cli", "cockpit", "http", "mcp")]
    assert composed.unresolved_relations == []


def _rule(n: int) -> LayerObject:
    path = f".ai/repo/rules/r{n:05}.md"
    return LayerObject(
        uri=f"svc://rule/r{n:05}@1",
        id=f"rule.r{n:05}@1",
        kind="rule",
        identity=f"r{n:05}@1",
        title=f"Rule {n}",
        metadata={"id": f"r{n:05}", "version": 1, "depends_on": [f"r{n + 1:05}@1"]},
        provenance=Provenance(path=path, directory=".ai/repo/rules", source_class="rule", bytes=10),
        media_type="text/markdown",
    )


def test_a_derivation_stops_at_2000_nodes_and_says_so() -> None:
    index = ObjectIndex([_rule(n) for n in range(MAX_NODES + 500)])
    for graph_id in ("rules", "composed"):
        graph = _graph(graph_id, index)
        assert graph.metadata.nodes == MAX_NODES, graph_id
        assert graph.metadata.truncated is True, graph_id
        assert graph.metadata.acyclic is True, graph_id
        present = {n.id for n in graph.nodes}
        assert all(e.source in present and e.target in present for e in graph.edges)
    small = _graph("rules", ObjectIndex([_rule(n) for n in range(10)]))
    assert small.metadata.truncated is False
    assert small.metadata.nodes == 11  # ten rules and the one the last depends on, held by nobody


def test_the_same_index_gives_the_same_bytes(fixture_index: ObjectIndex) -> None:
    for graph_id in GRAPH_IDS:
        first = msgspec.json.encode(_graph(graph_id, fixture_index))
        assert msgspec.json.encode(_graph(graph_id, fixture_index)) == first
    reversed_index = ObjectIndex(reversed(fixture_index.objects))
    assert msgspec.json.encode(_graph("composed", reversed_index)) == msgspec.json.encode(
        _graph("composed", fixture_index)
    )


def test_facts_keep_short_scalars_and_whole_short_lists_only() -> None:
    metadata = {
        "id": "x",
        "title": "t",
        "status": "s",
        "class": "blocking",
        "order": 3,
        "weight": 1.5,
        "flag": True,
        "long": "x" * 201,
        "paths": ["a", "b"],
        "mixed": ["a", 1, True],
        "broken": ["a", {"b": 1}],
        "nested": {"a": 1},
        "huge": 2**70,
    }
    assert facts(metadata) == {
        "class": "blocking",
        "flag": True,
        "mixed": ["a", "1", "true"],
        "order": 3,
        "paths": ["a", "b"],
    }


def test_the_list_names_every_graph_in_order_without_deriving() -> None:
    listed = graph_list()
    assert [g.id for g in listed.graphs] == list(GRAPH_IDS)
    assert GRAPH_IDS == ("registry", "layer", "rules", "adrs", "use-cases", "why", "product", "composed")
    assert listed.count == 8
    assert derive_graph("nope", REGISTRY, ObjectIndex([])) is None


def test_the_relations_table_carries_the_plan() -> None:
    plan = {(r.kinds, r.field, r.edge, r.kind) for r in RELATIONS if r.kinds in (("issue",), ("milestone",))}
    assert plan == {
        (("issue",), "milestone", "belongs_to", "milestone"),
        (("issue",), "depends_on", "depends_on", "issue"),
        (("milestone",), "depends_on", "depends_on", "milestone"),
        (("milestone",), "claims", "evidences", "claim"),
    }


def test_the_reference_corpus_composes_with_its_dangling_references_as_findings(corpus_copy: Path) -> None:
    index = _index(corpus_copy)
    graph = _graph("composed", index, RegistryFacts())
    assert graph.metadata.truncated is False
    belongs = [e for e in graph.edges if e.kind == "belongs_to"]
    assert len(belongs) > 300
    assert all(e.source.startswith("svc://issue/") and e.target.startswith("svc://milestone/") for e in belongs)
    missing = {u.reference for u in graph.unresolved_relations or [] if u.key == "milestone"}
    assert {"M001", "M002"} <= missing
    for graph_id in GRAPH_IDS:
        assert _graph(graph_id, index).metadata.nodes <= MAX_NODES
