"""Loading plan records from ``(file name, bytes)`` pairs: closed key sets, scalars as text, `schema` findings.

Nothing here opens a file. The loader reads `project.yaml`, then the milestones, then the issues, each in
id byte order; every problem becomes a `schema` FAIL naming the file and the key, never an exception:

- YAML that does not parse, a document that is not a mapping, a file name that is not a record id, an `id`
  that differs from the file name, an issue id that is also a milestone id: the record is left out;
- an unknown key, a required key missing or of the wrong type: the record is kept (known keys used,
  missing lists read as empty).

Scalars are read as their text (docs/plan.md, docs/layer.md): timestamps stay as written, `cancelled` is true only
for `true`, `parallel_safe` is false only for `false`, `order` is an integer (0 when it is not one), and a
scalar where a list is expected is a one-item list. A record keeps its authored mapping (`raw`) already as text
(keys and scalars as text, null as ""), so it is plain data that survives an encoding round trip unchanged.

`parse_record` parses one file, `assemble` puts parsed files together (id order, the milestone/issue id
check); `load_records` is both.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from svc._gc import gc_paused
from svc.layer import YamlAliases, YamlError, clip, load_yaml
from svc.plan._keys import (
    ISSUE_KEYS,
    ISSUE_REQUIRED,
    MILESTONE_KEYS,
    MILESTONE_REQUIRED,
    PROJECT_KEYS,
    PROJECT_REQUIRED,
    KeyKind,
    covers_of,
    describe,
    integer,
    problem,
    text_of,
)
from svc.plan._model import PlanFinding
from svc.plan._seal import MOVES, proven

__all__ = [
    "ID_PATTERN",
    "IssueRecord",
    "MilestoneRecord",
    "Parsed",
    "ProjectRecord",
    "RecordKind",
    "Records",
    "assemble",
    "load_records",
    "parse_record",
]

#: A record id (= file name without `.yaml`): safe as a path component, free of `:` and whitespace.
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
#: The most `unknown key` findings one record gets (one more finding counts the rest).
MAX_UNKNOWN_KEYS = 20
_MOVES = tuple(MOVES.values())
_STAMP_FIELDS = tuple(move.field for move in _MOVES)
_SEAL_FIELDS = tuple(move.seal_field for move in _MOVES)


class ProjectRecord(msgspec.Struct, frozen=True):
    """`project.yaml`: the plan's header as authored (empty strings when absent)."""

    name: str = ""
    repository: str = ""
    default_branch: str = ""


@dataclass(frozen=True, slots=True)
class MilestoneRecord:
    """One milestone as its file declares it, nothing derived."""

    id: str
    path: str
    title: str
    slug: str
    order: int
    priority: str
    version: str
    cancelled: bool
    superseded_by: str
    outcome: str
    depends_on: tuple[str, ...]
    claims: tuple[str, ...]
    evidence_required: tuple[str, ...]
    covers: frozenset[str]
    raw: dict[str, Any] = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class IssueRecord:
    """One issue as its file declares it, with the two facts that depend on this record alone.

    `proven` holds each stamp (start, verify, done) when it is proven, else "" (docs/layer.md); `covered` is
    whether every `evidence_required` token is among the `covers` of the evidence entries. Both are decided
    once per record bytes, so a cached parse does not hash its seals again.
    """

    id: str
    path: str
    milestone: str
    title: str
    slug: str
    priority: str
    profile: str
    parallel_safe: bool
    cancelled: bool
    objective: str
    scope: tuple[str, ...]
    serves: tuple[str, ...]
    depends_on: tuple[str, ...]
    acceptance: int
    validation: int
    evidence_required: tuple[str, ...]
    covers: frozenset[str]
    evidence_have: int
    started_at: str
    verified_at: str
    completed_at: str
    started_event: str
    verified_event: str
    completed_event: str
    unsealed: frozenset[str]
    proven: tuple[str, str, str]
    covered: bool
    raw: dict[str, Any] = field(repr=False, compare=False)


class Records(msgspec.Struct, frozen=True):
    """Everything derivation reads: the header, the kept records in id order, and the loader's findings."""

    project: ProjectRecord = msgspec.field(default_factory=ProjectRecord)
    milestones: tuple[MilestoneRecord, ...] = ()
    issues: tuple[IssueRecord, ...] = ()
    findings: tuple[PlanFinding, ...] = ()


#: The three kinds of record file: `project.yaml`, a milestone, an issue.
RecordKind = Literal["project", "milestone", "issue"]
#: What parsing one record file gives: the record (None when it is left out) and its findings.
Parsed = tuple[ProjectRecord | MilestoneRecord | IssueRecord | None, tuple[PlanFinding, ...]]


def _finding(subject: str, message: str) -> PlanFinding:
    return PlanFinding(level="FAIL", code="schema", subject=clip(subject), message=clip(message))


def _yaml_problem(exc: BaseException) -> str:
    problem = getattr(exc, "problem", None)
    if not problem:
        lines = str(exc).strip().splitlines()
        problem = lines[0] if lines else type(exc).__name__
    mark = getattr(exc, "problem_mark", None)
    if mark is not None:
        return f"{problem} (line {mark.line + 1}, column {mark.column + 1})"
    return str(problem)


class _Reader:
    """Reads of one record's mapping; `check` reports every problem once, the reads never complain."""

    def __init__(self, subject: str, path: str, data: dict[Any, Any], keys: dict[str, KeyKind]) -> None:
        self.subject = subject
        self.path = path
        self.data = data
        self.keys = keys
        self.findings: list[PlanFinding] = []
        self._fitted: dict[str, Any] | None = None

    def check(self, required: frozenset[str]) -> None:
        """Unknown keys (file order), then each known key in table order: missing when required, or mistyped."""
        self._fitted = self._fitting(required)
        if self._fitted is not None:
            return
        unknown = [key for key in self.data if not isinstance(key, str) or key not in self.keys]
        for key in unknown[:MAX_UNKNOWN_KEYS]:
            self.say(f"{self.path}: unknown key {clip(repr(key))}")
        if len(unknown) > MAX_UNKNOWN_KEYS:
            self.say(f"{self.path}: {len(unknown) - MAX_UNKNOWN_KEYS} more unknown keys")
        for key, kind in self.keys.items():
            value = self.data.get(key)
            if value is None:
                if key in required:
                    self.say(f"{self.path}: the required key {key!r} is missing")
                continue
            wrong = problem(kind, value)
            if wrong is not None:
                self.say(f"{self.path}: {key!r} {wrong}")

    def _fitting(self, required: frozenset[str]) -> dict[str, Any] | None:
        """The authored mapping when `check` has nothing to say, decided for the common record only (else None).

        Every required key is present and every key known; a text key holds text, a list key text or a list of
        text, a bool key a boolean, an evidence key a list of mappings whose `covers` is absent, text or a list
        of text. Its lists of text are the mapping's own (nothing else holds them).
        """
        data, keys = self.data, self.keys
        if not required <= data.keys():
            return None
        authored: dict[str, Any] = {}
        for key, value in data.items():
            kind = keys.get(key)
            kind_of_value = type(value)
            if kind_of_value is str:
                if kind != "text" and kind != "list":
                    return None
            elif kind_of_value is list:
                if kind == "list":
                    for item in value:
                        if type(item) is not str:
                            return None
                elif kind == "evidence" and all(type(entry) is dict and _plain_covers(entry) for entry in value):
                    value = _as_text(value)
                else:
                    return None
            elif kind_of_value is bool and kind == "bool":
                value = "true" if value else "false"
            else:
                return None
            authored[key] = value
        return authored

    def authored(self) -> dict[str, Any]:
        """The record's mapping as text, what `plan.record` shows as `record` (after `check`)."""
        return self._fitted if self._fitted is not None else _authored(self.data)

    def say(self, message: str) -> None:
        self.findings.append(_finding(self.subject, message))

    def text(self, key: str) -> str:
        value = self.data.get(key)
        return value if type(value) is str else (text_of(value) or "")

    def integer(self, key: str) -> int:
        return integer(self.data.get(key)) or 0

    def items(self, key: str) -> tuple[str, ...]:
        value = self.data.get(key)
        if value is None:
            return ()
        if not isinstance(value, list):
            text = text_of(value)
            return () if text is None else (text,)
        if all(type(item) is str for item in value):
            return tuple(value)
        return tuple(t for t in (text_of(v) for v in value if v is not None) if t is not None)

    def evidence(self, key: str) -> tuple[frozenset[str], int]:
        """The `covers` tokens of the evidence entries, and how many entries carry one."""
        value = self.data.get(key)
        if not isinstance(value, list):
            return frozenset(), 0
        tokens: set[str] = set()
        carrying = 0
        for entry in value:
            if isinstance(entry, dict):
                texts, _ = covers_of(entry)
                if texts:
                    carrying += 1
                    tokens.update(texts)
        return frozenset(tokens), carrying


def _plain_covers(entry: dict[Any, Any]) -> bool:
    """Whether an evidence entry's `covers` is absent, text, or a list of text."""
    covers = entry.get("covers")
    return covers is None or type(covers) is str or (type(covers) is list and all(type(c) is str for c in covers))


def _as_text(value: Any) -> Any:
    """`value` with every mapping key and scalar as its text (null as ""), lists and mappings kept."""
    kind = type(value)
    if kind is str:
        return value
    if kind is dict:
        return _authored(value)
    if kind is list:
        return [item if type(item) is str else _as_text(item) for item in value]
    text = text_of(value)
    return str(value) if text is None else text


def _authored(mapping: dict[Any, Any]) -> dict[str, Any]:
    """A record's authored mapping as text: what `plan.record` shows as `record`."""
    return {
        key if type(key) is str else str(key): value if type(value) is str else _as_text(value)
        for key, value in mapping.items()
    }


def _parse(subject: str, path: str, data: bytes) -> tuple[dict[Any, Any] | None, PlanFinding | None]:
    try:
        value = load_yaml(data)
    except YamlAliases:
        return None, _finding(subject, f"{path} uses YAML aliases, which svc does not read; left out")
    except (YamlError, ValueError, TypeError, RecursionError) as exc:
        return None, _finding(subject, f"{path} is not YAML: {_yaml_problem(exc)}")
    if not isinstance(value, dict):
        return None, _finding(subject, f"{path} is not a mapping (it is {describe(value)}); left out")
    return value, None


def _id_problem(stem: str, path: str, data: dict[Any, Any]) -> PlanFinding | None:
    if not ID_PATTERN.match(stem):
        return _finding(
            stem,
            f"{path}: the file name is not a record id (letters, digits, '.', '_' and '-', starting with a "
            "letter or digit); left out",
        )
    declared = data.get("id")
    if declared is not None and text_of(declared) != stem:
        return _finding(
            stem, f"{path} declares id {clip(repr(declared), 100)}, but the id is the file name {stem!r}; left out"
        )
    return None


def _project(path: str, data: bytes) -> Parsed:
    mapping, problem = _parse("project", path, data)
    if mapping is None:
        return ProjectRecord(), (problem,) if problem else ()
    read = _Reader("project", path, mapping, PROJECT_KEYS)
    read.check(PROJECT_REQUIRED)
    record = ProjectRecord(
        name=read.text("name"), repository=read.text("repository"), default_branch=read.text("default_branch")
    )
    return record, tuple(read.findings)


def _milestone(stem: str, path: str, data: bytes) -> Parsed:
    mapping, problem = _parse(stem, path, data)
    if mapping is None:
        return None, (problem,) if problem else ()
    id_problem = _id_problem(stem, path, mapping)
    if id_problem is not None:
        return None, (id_problem,)
    read = _Reader(stem, path, mapping, MILESTONE_KEYS)
    read.check(MILESTONE_REQUIRED)
    covers, _ = read.evidence("evidence")
    record = MilestoneRecord(
        id=stem,
        path=path,
        title=read.text("title"),
        slug=read.text("slug"),
        order=read.integer("order"),
        priority=read.text("priority"),
        version=read.text("version"),
        cancelled=read.data.get("cancelled") is True,
        superseded_by=read.text("superseded_by"),
        outcome=read.text("outcome"),
        depends_on=read.items("depends_on"),
        claims=read.items("claims"),
        evidence_required=read.items("evidence_required"),
        covers=covers,
        raw=read.authored(),
    )
    return record, tuple(read.findings)


def _issue(stem: str, path: str, data: bytes) -> Parsed:
    mapping, problem = _parse(stem, path, data)
    if mapping is None:
        return None, (problem,) if problem else ()
    id_problem = _id_problem(stem, path, mapping)
    if id_problem is not None:
        return None, (id_problem,)
    read = _Reader(stem, path, mapping, ISSUE_KEYS)
    read.check(ISSUE_REQUIRED)
    covers, carrying = read.evidence("evidence")
    required = read.items("evidence_required")
    unsealed = frozenset(read.items("unsealed_stamps"))
    stamps = [read.text(field) for field in _STAMP_FIELDS]
    seals = [read.text(field) for field in _SEAL_FIELDS]
    proof = [
        stamp if not stamp or proven(move, stem, stamp, sealed_by, unsealed) else ""
        for move, stamp, sealed_by in zip(_MOVES, stamps, seals, strict=True)
    ]
    record = IssueRecord(
        id=stem,
        path=path,
        milestone=read.text("milestone"),
        title=read.text("title"),
        slug=read.text("slug"),
        priority=read.text("priority"),
        profile=read.text("profile"),
        parallel_safe=read.data.get("parallel_safe") is not False,
        cancelled=read.data.get("cancelled") is True,
        objective=read.text("objective"),
        scope=read.items("scope"),
        serves=read.items("serves"),
        depends_on=read.items("depends_on"),
        acceptance=len(read.items("acceptance_criteria")),
        validation=len(read.items("validation")),
        evidence_required=required,
        covers=covers,
        evidence_have=carrying,
        started_at=stamps[0],
        verified_at=stamps[1],
        completed_at=stamps[2],
        started_event=seals[0],
        verified_event=seals[1],
        completed_event=seals[2],
        unsealed=unsealed,
        proven=(proof[0], proof[1], proof[2]),
        covered=all(token in covers for token in required),
        raw=read.authored(),
    )
    return record, tuple(read.findings)


def parse_record(kind: RecordKind, name: str, data: bytes, base: str = ".ai/repo/project") -> Parsed:
    """Parse one record file: `name` is its file name, `base` the repository-relative project directory.

    A pure function of its arguments (the parse cache relies on it): the record, or None when it is left out,
    and the findings about it, in order.
    """
    if kind == "project":
        return _project(f"{base}/project.yaml", data)
    stem = name[: -len(".yaml")] if name.endswith(".yaml") else name
    if kind == "milestone":
        return _milestone(stem, f"{base}/milestones/{name}", data)
    return _issue(stem, f"{base}/issues/{name}", data)


def _in_id_order(files: Iterable[tuple[str, Parsed]]) -> list[tuple[str, Parsed]]:
    """The `*.yaml` files of a directory in stem byte order (UTF-8 order is code point order)."""
    return sorted((item for item in files if item[0].endswith(".yaml")), key=lambda item: item[0][: -len(".yaml")])


def assemble(
    project: Parsed | None, milestones: Iterable[tuple[str, Parsed]], issues: Iterable[tuple[str, Parsed]]
) -> Records:
    """The records of parsed files: `(file name, parsed)` per directory, names not ending in `.yaml` ignored.

    Milestones then issues, each in id order, the findings in that order; an issue whose id is also a
    milestone's is left out with a finding.
    """
    findings: list[PlanFinding] = []
    header = ProjectRecord()
    if project is not None:
        record, found = project
        if isinstance(record, ProjectRecord):
            header = record
        findings.extend(found)
    kept_milestones: list[MilestoneRecord] = []
    for _, (record, found) in _in_id_order(milestones):
        findings.extend(found)
        if isinstance(record, MilestoneRecord):
            kept_milestones.append(record)
    milestone_ids = {m.id for m in kept_milestones}
    kept_issues: list[IssueRecord] = []
    for _, (record, found) in _in_id_order(issues):
        findings.extend(found)
        if not isinstance(record, IssueRecord):
            continue
        if record.id in milestone_ids:
            findings.append(
                _finding(record.id, f"{record.path}: the issue id {record.id!r} is also a milestone id; left out")
            )
            continue
        kept_issues.append(record)
    return Records(
        project=header,
        milestones=tuple(kept_milestones),
        issues=tuple(kept_issues),
        findings=tuple(findings),
    )


def load_records(
    project: bytes | None,
    milestones: Iterable[tuple[str, bytes]],
    issues: Iterable[tuple[str, bytes]],
    *,
    base: str = ".ai/repo/project",
) -> Records:
    """Parse and check every record; `base` is the repository-relative project directory.

    `milestones` and `issues` are ``(file name, bytes)`` pairs of each directory; names that do not end in
    `.yaml` are ignored. `project` is the bytes of `project.yaml` (None when it is absent: empty header).
    """
    with gc_paused():
        return _load(project, milestones, issues, base)


def _load(
    project: bytes | None,
    milestones: Iterable[tuple[str, bytes]],
    issues: Iterable[tuple[str, bytes]],
    base: str,
) -> Records:
    header = None if project is None else parse_record("project", "project.yaml", project, base)
    ms = [(name, parse_record("milestone", name, data, base)) for name, data in milestones if name.endswith(".yaml")]
    iss = [(name, parse_record("issue", name, data, base)) for name, data in issues if name.endswith(".yaml")]
    return assemble(header, ms, iss)
