"""The file layer: reading a checkout's records, and moving an issue end to end (in this process)."""

from __future__ import annotations

import gc
import subprocess
from pathlib import Path
from typing import Any

import pytest

from svc import Internal, NotFound, Refused
from svc.layer import Repository, load_yaml
from svc.plan import _cache, read_ledger, read_snapshot, seal, validation
from svc.plan import _store as store
from svc.plan._store import move_issue
from tests.plan._records import issue, yaml_bytes

AT = "2026-11-21T10:00:00Z"
ISSUES = Path(".ai/repo/project/issues")


def _move(root: Path, issue_id: str, transition: str, calls: list[int] | None = None, at: str = AT) -> Any:
    written = calls if calls is not None else []
    return move_issue(
        Repository.discover(root),
        issue_id,
        transition,
        by="svc/test",
        on_written=lambda: written.append(1),
        now=lambda: at,
    )


def test_a_checkout_reads_as_its_plan(checkout: Path) -> None:
    (checkout / ISSUES / ".I0001.yaml.123.tmp").write_bytes(b"garbage: [")
    (checkout / ISSUES / "notes.txt").write_bytes(b"not a record")
    snapshot = read_snapshot(Repository.discover(checkout))
    assert [i.id for i in snapshot.plan.issues] == ["I0001", "I0002", "I0003", "I0004", "I0005", "I0006"]
    assert snapshot.plan.project.name == "demo"
    assert validation(snapshot.plan).valid


def test_what_a_read_holds_per_issue_is_not_tracked_by_the_cyclic_collector(checkout: Path) -> None:
    (checkout / ISSUES / "I0009.yaml").write_bytes(b"id: I0009\nunknown: 1\n")  # findings too
    snapshot = read_snapshot(Repository.discover(checkout))
    plan = snapshot.plan
    assert plan.issues
    assert plan.findings
    assert plan.edges
    held = [*plan.issues, *plan.findings, *plan.edges]
    assert not any(gc.is_tracked(item) for item in held)
    record, findings = snapshot.records.issues[0], snapshot.records.findings
    assert not gc.is_tracked(_cache._Entry("I0001.yaml", 1, 2, 3, 4, b"", record, findings))


def test_a_checkout_without_a_layer_is_an_empty_plan(tmp_path: Path) -> None:
    plan = read_snapshot(Repository.discover(tmp_path)).plan
    assert (plan.issues, plan.milestones, plan.project.active_milestone) == ([], [], "")
    with pytest.raises(NotFound):
        move_issue(Repository.discover(tmp_path), "I0001", "start", by="svc/test")


def test_start_writes_the_sealed_stamp_in_place_and_appends_the_ledger(checkout: Path) -> None:
    path = checkout / ISSUES / "I0001.yaml"
    original = b"# a comment that must survive\n" + path.read_bytes().replace(b"\nslug:", b"\n# inner comment\nslug:")
    path.write_bytes(original)
    path.chmod(0o640)
    calls: list[int] = []
    result = _move(checkout, "I0001", "start", calls)
    assert calls == [1]
    assert (
        result.issue,
        result.transition,
        result.from_,
        result.to,
        result.field,
        result.at,
        result.event,
        result.next_ready,
    ) == ("I0001", "start", "READY", "ACTIVE", "started_at", AT, "plan_start", "I0002")
    written = path.read_bytes()
    assert (
        written
        == original + f"started_at: {AT}\nstarted_event: {seal('plan_start', 'I0001', AT)}\nupdated_at: {AT}\n".encode()
    )
    assert path.stat().st_mode & 0o777 == 0o640
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=checkout, capture_output=True, check=True, text=True
    ).stdout.strip()
    ledger = read_ledger(checkout / ".ai/local/state/ledger.jsonl")
    assert ledger.entries == [
        {"ts": AT, "event": "plan_start", "head": head, "branch": "main", "by": "svc/test", "issue": "I0001"}
    ]
    assert (checkout / ".ai/local/state").stat().st_mode & 0o777 == 0o700
    assert (checkout / ".ai/local/state/plan.lock").exists()


def test_a_refused_move_changes_nothing(checkout: Path) -> None:
    path = checkout / ISSUES / "I0004.yaml"
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    calls: list[int] = []
    with pytest.raises(Refused, match=r"^I0004 is BLOCKED, not READY \(waiting on I0001\)$"):
        _move(checkout, "I0004", "start", calls)
    with pytest.raises(NotFound, match="no issue 'I0404'"):
        _move(checkout, "I0404", "start", calls)
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    assert calls == []
    assert not (checkout / ".ai/local/state/ledger.jsonl").exists()


def test_start_verify_done_end_to_end(checkout: Path) -> None:
    assert _move(checkout, "I0001", "start", at="2026-11-21T10:00:00Z").to == "ACTIVE"
    assert _move(checkout, "I0001", "verify", at="2026-11-21T10:00:01Z").to == "VERIFY"
    with pytest.raises(Refused, match="has evidence for 0 of 1 requirement"):
        _move(checkout, "I0001", "done")
    path = checkout / ISSUES / "I0001.yaml"
    path.write_bytes(path.read_bytes() + b"evidence:\n  - covers: proof\n    type: test\n")
    done = _move(checkout, "I0001", "done", at="2026-11-21T10:00:02Z")
    assert (done.from_, done.to, done.next_ready) == ("VERIFY", "DONE", "I0002")
    record = load_yaml(path.read_bytes())
    assert record["completed_at"] == "2026-11-21T10:00:02Z"
    assert record["updated_at"] == "2026-11-21T10:00:02Z"
    text = path.read_bytes().decode()
    assert text.index("completed_event:") < text.index("evidence:"), "new stamps go before evidence"
    plan = read_snapshot(Repository.discover(checkout)).plan
    assert validation(plan).valid
    assert next(i for i in plan.issues if i.id == "I0004").status == "READY", "its dependent is released"
    events = [e["event"] for e in read_ledger(checkout / ".ai/local/state/ledger.jsonl").entries]
    assert events == ["plan_start", "plan_verify", "plan_done"]


def test_done_with_part_of_the_evidence_answers_verify(checkout: Path) -> None:
    path = checkout / ISSUES / "I0003.yaml"
    record = load_yaml(path.read_bytes())
    record.update(evidence_required=["a", "b"], evidence=[{"covers": "a", "type": "test"}])
    path.write_bytes(yaml_bytes(record))
    result = _move(checkout, "I0003", "done")
    assert (result.from_, result.to) == ("ACTIVE", "VERIFY")
    plan = read_snapshot(Repository.discover(checkout)).plan
    assert [(f.code, f.subject) for f in plan.findings] == [("evidence_missing", "I0003")]


def test_a_ledger_that_cannot_be_appended_leaves_the_move_standing(checkout: Path) -> None:
    (checkout / ".ai/local/state/ledger.jsonl").mkdir(parents=True)
    with pytest.raises(
        Internal,
        match=r"I0001 moved \(started_at .* is sealed in .*I0001.yaml\) but the ledger "
        r"\.ai/local/state/ledger\.jsonl could not be appended",
    ):
        _move(checkout, "I0001", "start")
    plan = read_snapshot(Repository.discover(checkout)).plan
    assert next(i for i in plan.issues if i.id == "I0001").status == "ACTIVE"


def test_a_failed_write_changes_nothing(checkout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(path: Path, data: bytes) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store, "write_atomic", refuse)
    path = checkout / ISSUES / "I0001.yaml"
    before = path.read_bytes()
    calls: list[int] = []
    with pytest.raises(Internal, match=r"cannot write .*I0001\.yaml: No space left on device; nothing was changed"):
        _move(checkout, "I0001", "start", calls)
    assert (path.read_bytes(), calls) == (before, [])
    assert not (checkout / ".ai/local/state/ledger.jsonl").exists()


def test_issue_record_helper_round_trips() -> None:
    assert load_yaml(yaml_bytes(issue("I1")))["id"] == "I1"
