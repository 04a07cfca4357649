"""Hand-built plan records for the tests: complete records by default, overridden field by field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from svc.layer import dump_yaml
from svc.plan import Plan, Records, derive, load_records, seal

MOVE_EVENTS = {
    "started_at": ("plan_start", "started_event"),
    "verified_at": ("plan_verify", "verified_event"),
    "completed_at": ("plan_done", "completed_event"),
}


def milestone(id: str, **fields: Any) -> dict[str, Any]:
    """A complete milestone record (no evidence required unless given)."""
    record: dict[str, Any] = {
        "id": id,
        "title": f"Milestone {id}",
        "slug": id.lower(),
        "order": 0,
        "priority": "p1",
        "problem": "a problem",
        "outcome": f"{id} is real",
        "acceptance_criteria": ["it works"],
        "validation": ["pytest"],
        "evidence_required": [],
    }
    record.update(fields)
    return {k: v for k, v in record.items() if v is not None}


def issue(id: str, milestone: str = "M1", **fields: Any) -> dict[str, Any]:
    """A complete issue record requiring the evidence token `proof`."""
    record: dict[str, Any] = {
        "id": id,
        "milestone": milestone,
        "title": f"Issue {id}",
        "slug": id.lower(),
        "priority": "p1",
        "profile": "implementation",
        "objective": "do it",
        "scope": [f"src/{id.lower()}"],
        "acceptance_criteria": ["done"],
        "validation": ["pytest"],
        "evidence_required": ["proof"],
    }
    record.update(fields)
    return {k: v for k, v in record.items() if v is not None}


def sealed(issue_id: str, *stamps: tuple[str, str]) -> dict[str, str]:
    """Stamp fields with their seals: sealed("I1", ("started_at", "2026-11-01T00:00:00Z"))."""
    out: dict[str, str] = {}
    for field, stamp in stamps:
        event, seal_field = MOVE_EVENTS[field]
        out[field] = stamp
        out[seal_field] = seal(event, issue_id, stamp)
    return out


PROOF: dict[str, Any] = {"evidence": [{"covers": "proof", "type": "test", "command": "pytest"}]}


def done(issue_id: str) -> dict[str, Any]:
    """The fields of a DONE issue: sealed start, verify and done, and its evidence."""
    return {
        **sealed(
            issue_id,
            ("started_at", "2026-11-01T10:00:00Z"),
            ("verified_at", "2026-11-01T11:00:00Z"),
            ("completed_at", "2026-11-01T12:00:00Z"),
        ),
        **PROOF,
    }


def active(issue_id: str) -> dict[str, str]:
    """The fields of an ACTIVE issue."""
    return sealed(issue_id, ("started_at", "2026-11-01T10:00:00Z"))


def yaml_bytes(record: dict[str, Any]) -> bytes:
    return dump_yaml(record).encode()


def records_of(
    milestones: list[dict[str, Any]],
    issues: list[dict[str, Any]],
    project: dict[str, Any] | None = None,
    raw: dict[str, bytes] | None = None,
) -> Records:
    """Load records given as mappings (and raw `issues/<name>` or `milestones/<name>` bytes)."""
    head = (
        project
        if project is not None
        else {"schema_version": 1, "name": "demo", "repository": "o/demo", "default_branch": "main"}
    )
    ms = [(f"{m['id']}.yaml", yaml_bytes(m)) for m in milestones]
    iss = [(f"{i['id']}.yaml", yaml_bytes(i)) for i in issues]
    for key, data in (raw or {}).items():
        folder, name = key.split("/", 1)
        (ms if folder == "milestones" else iss).append((name, data))
    return load_records(yaml_bytes(head), ms, iss)


def plan_of(milestones: list[dict[str, Any]], issues: list[dict[str, Any]], **kw: Any) -> Plan:
    return derive(records_of(milestones, issues, **kw))


def write_layer(
    root: Path, milestones: list[dict[str, Any]], issues: list[dict[str, Any]], *, name: str = "demo"
) -> Path:
    """Write a plan layer under `root/.ai/repo/project/` (replacing any records there)."""
    project = root / ".ai" / "repo" / "project"
    for sub in ("milestones", "issues"):
        folder = project / sub
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*.yaml"):
            old.unlink()
    (project / "project.yaml").write_bytes(
        yaml_bytes({"schema_version": 1, "name": name, "repository": f"o/{name}", "default_branch": "main"})
    )
    for m in milestones:
        (project / "milestones" / f"{m['id']}.yaml").write_bytes(yaml_bytes(m))
    for i in issues:
        (project / "issues" / f"{i['id']}.yaml").write_bytes(yaml_bytes(i))
    return project


def by_id(plan: Plan) -> dict[str, Any]:
    return {**{m.id: m for m in plan.milestones}, **{i.id: i for i in plan.issues}}


def codes(plan: Plan) -> list[tuple[str, str, str]]:
    return [(f.level, f.code, f.subject) for f in plan.findings]
