"""Crash consistency of a move: the pending ledger line, the `ledger_gap` finding and its repair.

A kill is simulated by a `BaseException` raised at one step of `move_issue` (nothing after it runs, the lock
is released as the kernel would release a killed holder's); the real SIGKILLs are in test_concurrency.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from svc import Internal
from svc.layer import Repository
from svc.plan import _store as store
from svc.plan import read_ledger, read_snapshot, repair_ledger, validation
from svc.plan._pending import PENDING, write_pending
from svc.plan._store import LOCK, _exclusive, move_issue

AT = "2026-11-21T10:00:00Z"
LATER = "2026-11-21T10:05:00Z"
STATE = Path(".ai/local/state")
GAP = (
    "started_at 2026-11-21T10:00:00Z is sealed but the ledger has no plan_start event for it (the move was "
    "interrupted); the next transition or `svc plan repair-ledger` appends it"
)


class Killed(BaseException):
    """The process died here."""


def _die(*_: Any, **__: Any) -> None:
    raise Killed


def _move(root: Path, issue_id: str, transition: str = "start", at: str = AT) -> Any:
    return move_issue(Repository.discover(root), issue_id, transition, by="svc/test", now=lambda: at)


def _killed_at(monkeypatch: pytest.MonkeyPatch, root: Path, step: str, issue_id: str = "I0001") -> None:
    """Run `start` on the issue and die at `step` (a name in `svc.plan._store`)."""
    with monkeypatch.context() as patch:
        patch.setattr(store, step, _die)
        with pytest.raises(Killed):
            _move(root, issue_id)


def _gaps(root: Path) -> list[tuple[str, str, str]]:
    plan = read_snapshot(Repository.discover(root)).plan
    return [(f.level, f.subject, f.message) for f in plan.findings if f.code == "ledger_gap"]


def _events(root: Path) -> list[tuple[str, str, str]]:
    return [(e["event"], e["issue"], e["ts"]) for e in read_ledger(root / STATE / "ledger.jsonl").entries]


def test_a_move_killed_before_its_ledger_line_is_a_gap_until_the_next_transition(
    checkout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _killed_at(monkeypatch, checkout, "append_line")
    assert _events(checkout) == []
    assert _gaps(checkout) == [("WARN", "I0001", GAP)]
    assert validation(read_snapshot(Repository.discover(checkout)).plan).valid, "a gap is a warning"
    assert _move(checkout, "I0002", at=LATER).to == "ACTIVE"
    assert _events(checkout) == [("plan_start", "I0001", AT), ("plan_start", "I0002", LATER)]
    assert _gaps(checkout) == []
    assert not (checkout / STATE / PENDING).exists()


def test_a_refused_transition_repairs_the_ledger_too(checkout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _killed_at(monkeypatch, checkout, "append_line")
    with pytest.raises(Exception, match="is ACTIVE, not READY"):
        _move(checkout, "I0001")
    assert _events(checkout) == [("plan_start", "I0001", AT)]


def test_repair_ledger_appends_the_line_the_move_built_once(checkout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _killed_at(monkeypatch, checkout, "append_line")
    line = (checkout / STATE / PENDING).read_bytes()
    repo = Repository.discover(checkout)
    assert repair_ledger(repo).appended == (f"plan_start I0001 {AT}",)
    assert (checkout / STATE / "ledger.jsonl").read_bytes() == line
    assert repair_ledger(repo) == store.LedgerRepair(), "idempotent"
    assert _gaps(checkout) == []


def test_a_record_never_replaced_leaves_no_gap_and_nothing_to_append(
    checkout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _killed_at(monkeypatch, checkout, "write_atomic")
    assert (checkout / STATE / PENDING).exists()
    assert _gaps(checkout) == []
    assert repair_ledger(Repository.discover(checkout)).appended == ()
    assert _events(checkout) == []
    assert not (checkout / STATE / PENDING).exists()


def test_a_line_already_appended_is_not_appended_again(checkout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _killed_at(monkeypatch, checkout, "clear_pending")
    assert _gaps(checkout) == []
    assert repair_ledger(Repository.discover(checkout)).appended == ()
    assert _events(checkout) == [("plan_start", "I0001", AT)]


def test_a_move_holding_the_lock_is_not_a_gap(checkout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _killed_at(monkeypatch, checkout, "append_line")
    with _exclusive(checkout / STATE / LOCK):
        assert _gaps(checkout) == []
    assert len(_gaps(checkout)) == 1


def test_sealed_stamps_from_elsewhere_are_not_gaps(checkout: Path) -> None:
    """I0003 and I0005 carry sealed stamps written in another checkout: this ledger never had their events."""
    assert _gaps(checkout) == []
    (checkout / STATE).mkdir(parents=True)
    assert repair_ledger(Repository.discover(checkout)) == store.LedgerRepair()
    assert _events(checkout) == []


def test_a_torn_pending_line_is_dropped(checkout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pending line is written whole before the record is touched; one cut short (even just before its LF)
    was torn by a kill before the record was replaced, and is dropped, never appended."""
    _killed_at(monkeypatch, checkout, "append_line")
    pending = checkout / STATE / PENDING
    pending.write_bytes(pending.read_bytes()[:-1])
    assert _gaps(checkout) == []
    assert repair_ledger(Repository.discover(checkout)).appended == ()
    assert not pending.exists()
    assert _events(checkout) == []


def test_a_ledger_that_cannot_take_the_line_keeps_it_pending_and_stops_the_next_move(
    checkout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _killed_at(monkeypatch, checkout, "append_line")
    (checkout / STATE / "ledger.jsonl").mkdir()
    with pytest.raises(Internal, match=r"^cannot repair the ledger: the ledger line an interrupted move left in "):
        repair_ledger(Repository.discover(checkout))
    issue = checkout / ".ai/repo/project/issues/I0002.yaml"
    before = issue.read_bytes()
    with pytest.raises(Internal, match=r"^cannot move I0002: .*; nothing was changed$"):
        _move(checkout, "I0002", at=LATER)
    assert issue.read_bytes() == before
    assert (checkout / STATE / PENDING).exists()
    (checkout / STATE / "ledger.jsonl").rmdir()
    assert repair_ledger(Repository.discover(checkout)).appended == (f"plan_start I0001 {AT}",)


def test_without_a_plan_layer_nothing_is_repaired_or_created(tmp_path: Path) -> None:
    assert repair_ledger(Repository.discover(tmp_path)) == store.LedgerRepair()
    assert not (tmp_path / ".ai").exists()


def test_the_next_command_removes_the_temp_files_of_killed_writes(checkout: Path) -> None:
    issues = checkout / ".ai/repo/project/issues"
    stale = [issues / ".I0001.yaml.abcd_123.tmp", issues / ".I0002.yaml.zz99zz99.tmp"]
    for path in stale:
        path.write_bytes(b"half a record")
    other = issues / ".I0001.yaml.swp"
    other.write_bytes(b"an editor's")
    _move(checkout, "I0002")
    assert not any(path.exists() for path in stale)
    assert other.exists()
    stale[0].write_bytes(b"half a record")
    repair = repair_ledger(Repository.discover(checkout))
    assert repair.removed == (".ai/repo/project/issues/.I0001.yaml.abcd_123.tmp",)
    assert not stale[0].exists()


def test_state_files_are_never_written_through_a_symlink(checkout: Path) -> None:
    state = checkout / STATE
    state.mkdir(parents=True)
    outside = checkout.parent / "outside"
    (state / LOCK).symlink_to(outside)
    issue = checkout / ".ai/repo/project/issues/I0001.yaml"
    before = issue.read_bytes()
    with pytest.raises(Internal, match=r"^cannot take the plan lock plan\.lock: .*; nothing was changed$"):
        _move(checkout, "I0001")
    assert issue.read_bytes() == before
    (state / LOCK).unlink()
    (state / PENDING).symlink_to(outside)
    with pytest.raises(OSError, match="symbolic links"):
        write_pending(state, b"{}\n")
    assert _move(checkout, "I0001").to == "ACTIVE", "settling drops the link, never follows it"
    assert not outside.exists()
    assert not (state / PENDING).exists()


def test_nothing_is_written_or_removed_outside_the_checkout(checkout: Path) -> None:
    """A checkout can commit `.ai/local` or `issues/` as a symlink to a directory elsewhere."""
    elsewhere = checkout.parent / "elsewhere"
    elsewhere.mkdir()
    stale = elsewhere / ".I0001.yaml.abcdefgh.tmp"
    stale.write_bytes(b"someone's")
    (checkout / ".ai/local").symlink_to(elsewhere)
    with pytest.raises(Internal, match=r"^\.ai/local/state resolves outside the checkout"):
        _move(checkout, "I0001")
    assert sorted(p.name for p in elsewhere.iterdir()) == [stale.name]
    (checkout / ".ai/local").unlink()
    (checkout / STATE).mkdir(parents=True)
    issues = checkout / ".ai/repo/project/issues"
    issues.rename(checkout / "moved")
    issues.symlink_to(elsewhere)
    assert repair_ledger(Repository.discover(checkout)) == store.LedgerRepair()
    assert stale.exists()
