"""The directory contracts over the fixture layer: golden reports, states, chains, and the `path` rules."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from svc import InvalidInput, NotFound
from svc.layer import ObjectIndex, Repository, directory_report
from svc.layer._directories import normalise_layer_path
from tests.layer._graph_layer import empty_layer, write_graph_layer
from tests.layer.test_graphs import _golden


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> ObjectIndex:
    root = write_graph_layer(tmp_path_factory.mktemp("directories") / "checkout")
    return ObjectIndex.build(Repository.discover(root))


def test_the_whole_tree_with_its_chains_is_the_golden_report(index: ObjectIndex) -> None:
    _golden("directories-effective", directory_report(index, effective=True))


def test_the_whole_tree_without_chains_is_the_golden_report(index: ObjectIndex) -> None:
    _golden("directories", directory_report(index))


def test_documented_exempt_and_owed_with_the_contracts_that_decided(index: ObjectIndex) -> None:
    report = directory_report(index)
    by_path = {d.path: d for d in report.directories}
    assert [d.path for d in report.directories] == sorted(by_path)
    states = {p: d.state for p, d in by_path.items()}
    assert states == {
        ".ai": "documented",
        ".ai/repo": "documented",
        ".ai/repo/adrs": "exempt",
        ".ai/repo/knowledge": "documented",
        ".ai/repo/project": "owed",
        ".ai/repo/project/issues": "owed",
        ".ai/repo/project/milestones": "owed",
        ".ai/repo/rules": "documented",
        ".ai/repo/rules/project": "exempt",
        ".ai/repo/use-cases": "owed",
    }
    adrs = by_path[".ai/repo/adrs"]
    assert (adrs.exempted_by, adrs.requires_contract, adrs.governed_by) == (".ai/README.md", True, None)
    project_rules = by_path[".ai/repo/rules/project"]
    assert (project_rules.requires_contract, project_rules.governed_by) == (False, ".ai/repo/rules/README.md")
    assert project_rules.exempted_by is None
    assert (by_path[".ai/repo/project"].objects, by_path[".ai/repo/project/issues"].objects) == (0, 3)
    assert by_path[".ai"].parent is None
    assert by_path[".ai"].children == [".ai/repo"]
    assert by_path[".ai/repo/rules"].contract is not None
    rules = by_path[".ai/repo/rules"].contract
    assert rules is not None
    assert (rules.id, rules.path, rules.scope, rules.composition, rules.order) == (
        "ai.repo.rules",
        ".ai/repo/rules/README.md",
        "subtree",
        "replace",
        5,
    )
    assert (rules.children_require_contract, rules.audience, rules.providers) == (False, ["human", "agent"], ["*"])
    root = by_path[".ai"].contract
    assert root is not None
    assert (root.children_exempt, root.tracks, root.status) == ([".ai/repo/adrs"], ["docs/guide.md"], "active")
    assert all(not d.effective for d in report.directories)
    assert (report.root, report.tallies.directories) == (".ai", 10)
    assert (report.tallies.documented, report.tallies.exempt, report.tallies.owed) == (4, 2, 4)


def test_the_chain_is_least_specific_first_and_a_replace_drops_what_it_supersedes(index: ObjectIndex) -> None:
    (issues,) = directory_report(index, path=".ai/repo/project/issues").directories
    assert [(e.id, e.depth, e.local) for e in issues.effective] == [
        ("ai", 0, False),
        ("ai.repo", 1, False),
        ("ai.repo.knowledge", 3, False),
    ]
    assert issues.effective[2].reason == "a declared path, .ai/repo/project/issues (scope explicit)"
    (rules,) = directory_report(index, path=".ai/repo/rules/project").directories
    assert [e.id for e in rules.effective] == ["ai", "ai.repo.rules"]
    (own,) = directory_report(index, path=".ai/repo").directories
    assert [(e.id, e.local, e.reason) for e in own.effective] == [
        ("ai", False, "an ancestor (scope subtree)"),
        ("ai.repo", True, "the target directory (scope subtree)"),
    ]


def test_filters_narrow_the_answer_and_never_the_tallies(index: ObjectIndex) -> None:
    whole = directory_report(index).tallies
    owed = directory_report(index, state="owed")
    assert [d.path for d in owed.directories] == [
        ".ai/repo/project",
        ".ai/repo/project/issues",
        ".ai/repo/project/milestones",
        ".ai/repo/use-cases",
    ]
    assert owed.tallies == whole
    assert directory_report(index, path=".ai/repo/rules", state="owed").directories == []
    assert directory_report(index, path=".ai/repo/rules", state="owed").tallies == whole


@pytest.mark.parametrize(
    ("raw", "normal"),
    [
        (".ai/repo/rules", ".ai/repo/rules"),
        ("./.ai/repo/rules/", ".ai/repo/rules"),
        (".ai//repo/./rules", ".ai/repo/rules"),
        (".ai", ".ai"),
        (".ai/", ".ai"),
    ],
)
def test_a_path_is_normalised(index: ObjectIndex, raw: str, normal: str) -> None:
    assert normalise_layer_path(raw) == normal
    (node,) = directory_report(index, path=raw).directories
    assert node.path == normal
    assert node.effective


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ("/etc", "not absolute"),
        ("/tmp/checkout/.ai/repo", "not absolute"),
        ("C:/x/.ai", "not absolute"),
        ("~/.ai", "not absolute"),
        (".ai/../etc", "'..'"),
        ("../.ai", "'..'"),
        (".ai\\repo", "forward slashes"),
        ("docs", "outside .ai"),
        (".", "outside .ai"),
        (".aix/repo", "outside .ai"),
        ("", "empty"),
    ],
)
def test_a_path_outside_the_layer_is_invalid(index: ObjectIndex, raw: str, fragment: str) -> None:
    with pytest.raises(InvalidInput, match=fragment) as caught:
        directory_report(index, path=raw)
    assert "/tmp/" not in str(caught.value)


def test_a_directory_the_index_knows_nothing_under_is_not_found(index: ObjectIndex) -> None:
    with pytest.raises(NotFound, match=re.escape("no directory '.ai/repo/nowhere'")):
        directory_report(index, path=".ai/repo/nowhere/")


def test_an_empty_layer_has_no_directories(tmp_path: Path) -> None:
    index = ObjectIndex.build(Repository.discover(empty_layer(tmp_path / "empty")))
    report = directory_report(index, effective=True)
    assert (report.directories, report.tallies.directories, report.tallies.owed) == ([], 0, 0)
    with pytest.raises(NotFound):
        directory_report(index, path=".ai")
