"""The loader: closed key sets, scalars as text, and every `schema` finding (a record is kept or left out)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from svc.plan import PlanFinding, derive, load_records
from svc.plan._keys import ISSUE_KEYS, ISSUE_REQUIRED
from svc.plan._load import _authored, _Reader
from tests.plan._records import issue, milestone, records_of, yaml_bytes

BASE = ".ai/repo/project"


def _schema(subject: str, message: str) -> PlanFinding:
    return PlanFinding(level="FAIL", code="schema", subject=subject, message=message)


def test_unparseable_or_non_mapping_records_are_left_out_and_the_rest_derives() -> None:
    records = records_of(
        [milestone("M1")],
        [issue("I1"), issue("I2", depends_on=["I3", "I4"])],
        raw={
            "issues/I3.yaml": b"id: I3\ntitle: bench: a colon in a plain scalar\n",
            "issues/I4.yaml": b"- just\n- a list\n",
            "issues/I5.yaml": b"",
            "milestones/M2.yaml": b"id: [unclosed\n",
        },
    )
    assert [i.id for i in records.issues] == ["I1", "I2"]
    assert [m.id for m in records.milestones] == ["M1"]
    m2, i3, i4, i5 = records.findings
    assert (m2.subject, i3.subject) == ("M2", "I3")
    assert m2.message.startswith(f"{BASE}/milestones/M2.yaml is not YAML: ")
    assert m2.message.endswith("(line 2, column 1)")
    assert i3.message.startswith(f"{BASE}/issues/I3.yaml is not YAML: mapping values are not allowed")
    assert i3.message.endswith("(line 2, column 13)")
    assert (i4, i5) == (
        _schema("I4", f"{BASE}/issues/I4.yaml is not a mapping (it is a list); left out"),
        _schema("I5", f"{BASE}/issues/I5.yaml is not a mapping (it is empty); left out"),
    )
    plan = derive(records)
    assert [f.code for f in plan.findings] == ["schema"] * 4 + ["unknown_dependency"] * 2


def test_ids_must_be_the_file_name_and_unique_across_kinds() -> None:
    records = records_of(
        [milestone("M1"), milestone("shared")],
        [issue("shared"), issue("I2")],
        raw={
            "issues/I9.yaml": yaml_bytes(issue("I1")),
            "issues/bad name.yaml": yaml_bytes(issue("bad name")),
            "issues/README.md": b"# not a record\n",
        },
    )
    assert [i.id for i in records.issues] == ["I2"]
    assert [(f.subject, f.message) for f in records.findings] == [
        ("I9", f"{BASE}/issues/I9.yaml declares id 'I1', but the id is the file name 'I9'; left out"),
        (
            "bad name",
            f"{BASE}/issues/bad name.yaml: the file name is not a record id (letters, digits, '.', '_' and "
            "'-', starting with a letter or digit); left out",
        ),
        ("shared", f"{BASE}/issues/shared.yaml: the issue id 'shared' is also a milestone id; left out"),
    ]


def test_unknown_missing_and_mistyped_keys_are_reported_and_the_record_is_kept() -> None:
    bad_issue = issue(
        "I1",
        status="READY",
        owner={"name": "x"},
        scope={"a": 1},
        depends_on="I2",
        evidence=["not a mapping", {"covers": "proof"}],
        parallel_safe="no",
    )
    del bad_issue["title"]
    bad_milestone = milestone("M1", order="ten", active_milestone="M1", cancelled="true")
    records = records_of([bad_milestone], [bad_issue, issue("I2")])
    assert [(f.subject, f.message.removeprefix(f"{BASE}/")) for f in records.findings] == [
        ("M1", "milestones/M1.yaml: unknown key 'active_milestone'"),
        ("M1", "milestones/M1.yaml: 'order' should be an integer, not a str"),
        ("M1", "milestones/M1.yaml: 'cancelled' should be true or false, not a str"),
        ("I1", "issues/I1.yaml: unknown key 'status'"),
        ("I1", "issues/I1.yaml: the required key 'title' is missing"),
        ("I1", "issues/I1.yaml: 'scope' should be a list of text, not a mapping"),
        ("I1", "issues/I1.yaml: 'parallel_safe' should be true or false, not a str"),
        ("I1", "issues/I1.yaml: 'owner' should be text, not a mapping"),
        ("I1", "issues/I1.yaml: 'evidence' has an entry that is not a mapping (left out)"),
    ]
    (m,), (i1, _) = records.milestones, records.issues
    assert (m.order, m.cancelled) == (0, False), "a quoted 'true' is not boolean true"
    assert (i1.title, i1.scope, i1.depends_on, i1.evidence_have, i1.covers) == (
        "",
        (),
        ("I2",),
        1,
        frozenset({"proof"}),
    )
    assert i1.parallel_safe is True, "parallel_safe is false only for false"


def test_scalars_are_read_as_their_text() -> None:
    text = (
        b"id: M1\ntitle: 12\nslug: m1\norder: '7'\npriority: p0\nproblem: p\noutcome: o\nversion: 0.6\n"
        b"acceptance_criteria: one line\nvalidation: [pytest]\nevidence_required: []\ncreated_at: 2026-09-04\n"
    )
    issue_text = (
        b"id: I1\nmilestone: M1\ntitle: t\nslug: s\npriority: p1\nprofile: x\nobjective: o\nscope: src\n"
        b"acceptance_criteria: [a]\nvalidation: [v]\nevidence_required: [e]\nparallel_safe: false\n"
        b"started_at: 2026-09-04T02:54:00Z\nunsealed_stamps:\n  - started_at 2026-09-04T02:54:00Z\n"
    )
    records = load_records(None, [("M1.yaml", text)], [("I1.yaml", issue_text)])
    assert records.findings == ()
    (m,), (i,) = records.milestones, records.issues
    assert (m.title, m.order, m.version) == ("12", 7, "0.6")
    assert m.raw["created_at"] == "2026-09-04", "dates stay text"
    assert (i.started_at, i.parallel_safe, i.scope) == ("2026-09-04T02:54:00Z", False, ("src",))
    assert records.project.name == ""
    assert records.project.repository == ""
    assert derive(records).issues[0].status == "ACTIVE", "the legacy stamp is excused by its exact text"


def test_project_header_and_finding_order() -> None:
    records = load_records(
        b"schema_version: 1\nname: demo\nrepository: o/demo\ndefault_branch: main\nactive_milestone: M1\n",
        [("M1.yaml", b"id: M1\n")],
        [("I1.yaml", b"[]\n")],
    )
    assert records.project.name == "demo"
    assert [f.subject for f in records.findings] == ["project"] + ["M1"] * 9 + ["I1"]
    assert records.findings[0].message == f"{BASE}/project.yaml: unknown key 'active_milestone'"


# --- the quick check: a record it passes has nothing `check` would say ---------------------------------------------

_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=3), st.floats(allow_nan=False)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["covers", "type", "x"]), inner, max_size=3)
    ),
    max_leaves=6,
)
_MAPPINGS = st.dictionaries(
    st.one_of(st.sampled_from(sorted(ISSUE_KEYS)), st.sampled_from(["extra", "Id"]), st.integers(0, 2)),
    st.one_of(st.text(max_size=3), st.lists(st.text(max_size=3), max_size=2), _VALUES),
    max_size=len(ISSUE_KEYS) + 2,
)


@settings(max_examples=400, deadline=None)
@given(_MAPPINGS, st.booleans())
def test_the_quick_check_passes_only_records_check_has_nothing_to_say_about(
    mapping: dict[Any, Any], complete: bool
) -> None:
    if complete:
        mapping = {**dict.fromkeys(ISSUE_REQUIRED, "x"), **mapping}
    reader = _Reader("I1", "p", mapping, ISSUE_KEYS)
    if reader._fitting(ISSUE_REQUIRED) is not None:
        reader.check(frozenset(ISSUE_REQUIRED))
        full = _Reader("I1", "p", mapping, ISSUE_KEYS)
        full._fitting = lambda required: None  # type: ignore[method-assign]
        full.check(ISSUE_REQUIRED)
        assert full.findings == [] == reader.findings
        assert reader.authored() == _authored(mapping)


def test_the_quick_check_passes_the_common_record_and_gives_its_authored_mapping() -> None:
    mapping = {
        **dict.fromkeys(ISSUE_REQUIRED, "x"),
        "scope": ["a", "b"],
        "parallel_safe": True,
        "evidence": [{"covers": "suite", "type": "test", "exit": 0}, {"covers": ["a", "b"]}, {"type": "note"}],
    }
    authored = _Reader("I1", "p", mapping, ISSUE_KEYS)._fitting(ISSUE_REQUIRED)
    assert authored == {
        **mapping,
        "parallel_safe": "true",
        "evidence": [{"covers": "suite", "type": "test", "exit": "0"}, {"covers": ["a", "b"]}, {"type": "note"}],
    }
    for odd in ({"extra": "x"}, {"parallel_safe": "yes"}, {"scope": ["a", 1]}, {"evidence": [{"covers": 1}]}):
        assert _Reader("I1", "p", {**mapping, **odd}, ISSUE_KEYS)._fitting(ISSUE_REQUIRED) is None, odd
    assert _Reader("I1", "p", {**mapping, "title": None}, ISSUE_KEYS)._fitting(ISSUE_REQUIRED) is None
    assert _Reader("I1", "p", {1: "x", **mapping}, ISSUE_KEYS)._fitting(ISSUE_REQUIRED) is None
