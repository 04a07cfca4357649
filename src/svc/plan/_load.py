"""Loading plan records from ``(file name, bytes)`` pairs: closed key sets, scalars as text, `schema` findings.

Nothing here opens a file. The loader reads `project.yaml`, then the milestones, then the issues, each in
id byte order; every problem becomes a `schema` FAIL naming the file and the key, never an exception:

- YAML that does not parse, a document that is not a mapping, a file name that is not a record id, an `id`
  that differs from the file name, an issue id that is also a milestone id: the record is left out;
- an unknown key, a required key missing or of the wrong type: the record is kept (known keys used,
  missing lists read as empty).

Scalars are read as their text (PLAN.md, LAYER.md §2): timestamps stay as written, `cancelled` is true only
for `true`, `parallel_safe` is false only for `false`, `order` is an integer (0 when it is not one), and a
scalar where a list is expected is a one-item list.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from svc.layer import YamlError, load_yaml
from svc.plan._model import PlanFinding

__all__ = [
    "ID_PATTERN",
    "IssueRecord",
    "MilestoneRecord",
    "ProjectRecord",
    "RecordCache",
    "Records",
    "load_records",
    "text_of",
]

#: A record id (= file name without `.yaml`): safe as a path component, free of `:` and whitespace.
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_INT = re.compile(r"^[+-]?[0-9]+$")
_INT64 = (-(2**63), 2**63 - 1)

KeyKind = Literal["text", "int", "bool", "list", "evidence"]

PROJECT_KEYS: dict[str, KeyKind] = {
    "schema_version": "int",
    "name": "text",
    "repository": "text",
    "default_branch": "text",
}
PROJECT_REQUIRED = frozenset(PROJECT_KEYS)

MILESTONE_KEYS: dict[str, KeyKind] = {
    "id": "text",
    "title": "text",
    "slug": "text",
    "order": "int",
    "priority": "text",
    "problem": "text",
    "outcome": "text",
    "acceptance_criteria": "list",
    "validation": "list",
    "evidence_required": "list",
    "version": "text",
    "cancelled": "bool",
    "superseded_by": "text",
    "created_at": "text",
    "updated_at": "text",
    "current_state": "text",
    "desired_state": "text",
    "scope": "list",
    "non_scope": "list",
    "risks": "list",
    "depends_on": "list",
    "claims": "list",
    "evidence": "evidence",
}
MILESTONE_REQUIRED = frozenset(
    (
        "id",
        "title",
        "slug",
        "order",
        "priority",
        "problem",
        "outcome",
        "acceptance_criteria",
        "validation",
        "evidence_required",
    )
)

ISSUE_KEYS: dict[str, KeyKind] = {
    "id": "text",
    "milestone": "text",
    "title": "text",
    "slug": "text",
    "priority": "text",
    "profile": "text",
    "objective": "text",
    "scope": "list",
    "acceptance_criteria": "list",
    "validation": "list",
    "evidence_required": "list",
    "parallel_safe": "bool",
    "risk": "text",
    "owner": "text",
    "cancelled": "bool",
    "created_at": "text",
    "updated_at": "text",
    "why": "text",
    "current_state": "text",
    "desired_state": "text",
    "completion": "text",
    "non_scope": "list",
    "depends_on": "list",
    "serves": "list",
    "evidence": "evidence",
    "started_at": "text",
    "verified_at": "text",
    "completed_at": "text",
    "started_event": "text",
    "verified_event": "text",
    "completed_event": "text",
    "unsealed_stamps": "list",
}
ISSUE_REQUIRED = frozenset(
    (
        "id",
        "milestone",
        "title",
        "slug",
        "priority",
        "profile",
        "objective",
        "scope",
        "acceptance_criteria",
        "validation",
        "evidence_required",
    )
)

_KIND_WORDS: dict[KeyKind, str] = {
    "text": "text",
    "int": "an integer",
    "bool": "true or false",
    "list": "a list of text",
    "evidence": "a list of evidence entries (mappings)",
}


@dataclass(frozen=True, slots=True)
class ProjectRecord:
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
    """One issue as its file declares it, nothing derived."""

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
    raw: dict[str, Any] = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class Records:
    """Everything derivation reads: the header, the kept records in id order, and the loader's findings."""

    project: ProjectRecord = field(default_factory=ProjectRecord)
    milestones: tuple[MilestoneRecord, ...] = ()
    issues: tuple[IssueRecord, ...] = ()
    findings: tuple[PlanFinding, ...] = ()


_Parsed = tuple[Any, tuple[PlanFinding, ...]]


class RecordCache:
    """Parsed records keyed by (kind, file name), reused only while the file's bytes are identical.

    The bytes themselves are compared, so a hit is exactly what parsing them again would give. A load
    keeps only the names it saw, so deleted files do not linger.
    """

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str], tuple[bytes, _Parsed]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, kind: str, name: str, data: bytes) -> _Parsed | None:
        """The stored result for these exact bytes, or None."""
        entry = self._entries.get((kind, name))
        if entry is not None and entry[0] == data:
            return entry[1]
        return None

    def replace(self, entries: dict[tuple[str, str], tuple[bytes, _Parsed]]) -> None:
        """Keep exactly `entries` (the files of the latest load)."""
        self._entries = entries


def text_of(value: Any) -> str | None:
    """A YAML scalar as text (`true`/`false`, numbers as written by Python, null as ""); None otherwise."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return None


def _finding(subject: str, message: str) -> PlanFinding:
    return PlanFinding(level="FAIL", code="schema", subject=subject, message=message)


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "empty"
    return f"a {type(value).__name__}"


def _yaml_problem(exc: BaseException) -> str:
    problem = getattr(exc, "problem", None)
    if not problem:
        lines = str(exc).strip().splitlines()
        problem = lines[0] if lines else type(exc).__name__
    mark = getattr(exc, "problem_mark", None)
    if mark is not None:
        return f"{problem} (line {mark.line + 1}, column {mark.column + 1})"
    return str(problem)


def _integer(value: Any) -> int | None:
    """An integer key's value, or None when it is not an integer within 64 bits."""
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and _INT.match(value.strip()):
        number = int(value.strip())
    else:
        return None
    return number if _INT64[0] <= number <= _INT64[1] else None


def _covers(entry: dict[Any, Any]) -> tuple[list[str], bool]:
    """The non-empty `covers` tokens of one evidence entry, and whether every one of them was text."""
    covers = entry.get("covers")
    found = covers if isinstance(covers, list) else [covers]
    texts = [text_of(c) for c in found if c is not None]
    return [t for t in texts if t], all(t is not None for t in texts)


def _problem(kind: KeyKind, value: Any) -> str | None:
    """Why `value` does not fit `kind` (None when it fits, or is null)."""
    wrong = f"should be {_KIND_WORDS[kind]}, not {_describe(value)}"
    if value is None:
        return None
    if kind == "text":
        return None if text_of(value) is not None else wrong
    if kind == "bool":
        return None if isinstance(value, bool) else wrong
    if kind == "int":
        return None if _integer(value) is not None else wrong
    if kind == "list":
        if isinstance(value, list):
            odd = any(item is None or text_of(item) is None for item in value)
            return "has an item that is not text (left out)" if odd else None
        return None if text_of(value) is not None else wrong
    if not isinstance(value, list):
        return wrong
    if not all(isinstance(entry, dict) for entry in value):
        return "has an entry that is not a mapping (left out)"
    if not all(_covers(entry)[1] for entry in value):
        return "has an entry whose 'covers' is not text"
    return None


class _Reader:
    """Reads of one record's mapping; `check` reports every problem once, the reads never complain."""

    def __init__(self, subject: str, path: str, data: dict[Any, Any], keys: dict[str, KeyKind]) -> None:
        self.subject = subject
        self.path = path
        self.data = data
        self.keys = keys
        self.findings: list[PlanFinding] = []

    def check(self, required: frozenset[str]) -> None:
        """Unknown keys (file order), then each known key in table order: missing when required, or mistyped."""
        for key in self.data:
            if not isinstance(key, str) or key not in self.keys:
                self.say(f"{self.path}: unknown key {key!r}")
        for key, kind in self.keys.items():
            value = self.data.get(key)
            if value is None:
                if key in required:
                    self.say(f"{self.path}: the required key {key!r} is missing")
                continue
            problem = _problem(kind, value)
            if problem is not None:
                self.say(f"{self.path}: {key!r} {problem}")

    def say(self, message: str) -> None:
        self.findings.append(_finding(self.subject, message))

    def text(self, key: str) -> str:
        return text_of(self.data.get(key)) or ""

    def integer(self, key: str) -> int:
        return _integer(self.data.get(key)) or 0

    def items(self, key: str) -> tuple[str, ...]:
        value = self.data.get(key)
        if value is None:
            return ()
        if not isinstance(value, list):
            text = text_of(value)
            return () if text is None else (text,)
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
                texts, _ = _covers(entry)
                if texts:
                    carrying += 1
                    tokens.update(texts)
        return frozenset(tokens), carrying


def _parse(subject: str, path: str, data: bytes) -> tuple[dict[Any, Any] | None, PlanFinding | None]:
    try:
        value = load_yaml(data)
    except (YamlError, ValueError, TypeError, RecursionError) as exc:
        return None, _finding(subject, f"{path} is not YAML: {_yaml_problem(exc)}")
    if not isinstance(value, dict):
        return None, _finding(subject, f"{path} is not a mapping (it is {_describe(value)}); left out")
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
        return _finding(stem, f"{path} declares id {declared!r}, but the id is the file name {stem!r}; left out")
    return None


def _project(path: str, data: bytes) -> _Parsed:
    mapping, problem = _parse("project", path, data)
    if mapping is None:
        return ProjectRecord(), (problem,) if problem else ()
    read = _Reader("project", path, mapping, PROJECT_KEYS)
    read.check(PROJECT_REQUIRED)
    record = ProjectRecord(
        name=read.text("name"), repository=read.text("repository"), default_branch=read.text("default_branch")
    )
    return record, tuple(read.findings)


def _milestone(stem: str, path: str, data: bytes) -> _Parsed:
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
        cancelled=read.text("cancelled") == "true",
        superseded_by=read.text("superseded_by"),
        outcome=read.text("outcome"),
        depends_on=read.items("depends_on"),
        claims=read.items("claims"),
        evidence_required=read.items("evidence_required"),
        covers=covers,
        raw=mapping,
    )
    return record, tuple(read.findings)


def _issue(stem: str, path: str, data: bytes) -> _Parsed:
    mapping, problem = _parse(stem, path, data)
    if mapping is None:
        return None, (problem,) if problem else ()
    id_problem = _id_problem(stem, path, mapping)
    if id_problem is not None:
        return None, (id_problem,)
    read = _Reader(stem, path, mapping, ISSUE_KEYS)
    read.check(ISSUE_REQUIRED)
    covers, carrying = read.evidence("evidence")
    record = IssueRecord(
        id=stem,
        path=path,
        milestone=read.text("milestone"),
        title=read.text("title"),
        slug=read.text("slug"),
        priority=read.text("priority"),
        profile=read.text("profile"),
        parallel_safe=read.text("parallel_safe") != "false",
        cancelled=read.text("cancelled") == "true",
        objective=read.text("objective"),
        scope=read.items("scope"),
        serves=read.items("serves"),
        depends_on=read.items("depends_on"),
        acceptance=len(read.items("acceptance_criteria")),
        validation=len(read.items("validation")),
        evidence_required=read.items("evidence_required"),
        covers=covers,
        evidence_have=carrying,
        started_at=read.text("started_at"),
        verified_at=read.text("verified_at"),
        completed_at=read.text("completed_at"),
        started_event=read.text("started_event"),
        verified_event=read.text("verified_event"),
        completed_event=read.text("completed_event"),
        unsealed=frozenset(read.items("unsealed_stamps")),
        raw=mapping,
    )
    return record, tuple(read.findings)


def _yaml_names(files: Iterable[tuple[str, bytes]]) -> list[tuple[str, str, bytes]]:
    """(stem, file name, bytes) of the `*.yaml` files, in stem byte order (UTF-8 order is code point order)."""
    out = [(name[: -len(".yaml")], name, data) for name, data in files if name.endswith(".yaml")]
    out.sort(key=lambda item: item[0])
    return out


def load_records(
    project: bytes | None,
    milestones: Iterable[tuple[str, bytes]],
    issues: Iterable[tuple[str, bytes]],
    *,
    base: str = ".ai/repo/project",
    cache: RecordCache | None = None,
) -> Records:
    """Parse and check every record; `base` is the repository-relative project directory.

    `milestones` and `issues` are ``(file name, bytes)`` pairs of each directory; names that do not end in
    `.yaml` are ignored. `project` is the bytes of `project.yaml` (None when it is absent: empty header).
    """
    kept: dict[tuple[str, str], tuple[bytes, _Parsed]] = {}
    findings: list[PlanFinding] = []

    def parsed(kind: str, name: str, data: bytes, parse: Any, *args: Any) -> _Parsed:
        hit = cache.get(kind, name, data) if cache is not None else None
        result: _Parsed = hit if hit is not None else parse(*args)
        kept[(kind, name)] = (data, result)
        return result

    header = ProjectRecord()
    if project is not None:
        record, found = parsed("project", "project.yaml", project, _project, f"{base}/project.yaml", project)
        header = record
        findings.extend(found)
    kept_milestones: list[MilestoneRecord] = []
    for stem, name, data in _yaml_names(milestones):
        record, found = parsed("milestone", name, data, _milestone, stem, f"{base}/milestones/{name}", data)
        findings.extend(found)
        if record is not None:
            kept_milestones.append(record)
    milestone_ids = {m.id for m in kept_milestones}
    kept_issues: list[IssueRecord] = []
    for stem, name, data in _yaml_names(issues):
        record, found = parsed("issue", name, data, _issue, stem, f"{base}/issues/{name}", data)
        findings.extend(found)
        if record is None:
            continue
        if record.id in milestone_ids:
            findings.append(
                _finding(record.id, f"{record.path}: the issue id {record.id!r} is also a milestone id; left out")
            )
            continue
        kept_issues.append(record)
    if cache is not None:
        cache.replace(kept)
    return Records(
        project=header,
        milestones=tuple(kept_milestones),
        issues=tuple(kept_issues),
        findings=tuple(findings),
    )
