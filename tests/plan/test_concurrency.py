"""Moves across processes: a race on the same issues, and kills (SIGKILL) in the middle of a write."""

from __future__ import annotations

import json
import os
import random
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from svc.layer import Repository, load_yaml
from svc.plan import MOVES, read_ledger, read_snapshot, repair_ledger, seal
from tests.conftest import make_checkout
from tests.plan._records import PROOF, issue, milestone, write_layer

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(ROOT)}
WORKER = [sys.executable, "-m", "tests.plan._workers"]
COMMENT = b"# hand-written comment that every write keeps\n"
STATE = Path(".ai/local/state")
#: Kill positions cycled through: a move with a repair to make has about 24 (past them, it completes).
KILL_POINTS = 26


def _layer(tmp_path: Path, count: int, **fields: Any) -> Path:
    root = make_checkout(tmp_path / "checkout", layer=False)
    project = write_layer(root, [milestone("M1")], [issue(f"I{n:04d}", **fields) for n in range(1, count + 1)])
    for path in (project / "issues").glob("*.yaml"):
        path.write_bytes(COMMENT + path.read_bytes())
    return root


def _records(root: Path) -> dict[str, dict[str, object]]:
    out: dict[str, dict[str, object]] = {}
    for path in sorted((root / ".ai/repo/project/issues").iterdir()):
        if path.suffix != ".yaml":
            continue
        data = path.read_bytes()
        assert data.startswith(COMMENT), path.name
        record = load_yaml(data)
        assert isinstance(record, dict), path.name
        out[path.stem] = record
    return out


def _stamps_are_absent_or_sealed(records: dict[str, dict[str, object]]) -> int:
    stamps = 0
    for issue_id, record in records.items():
        for move in MOVES.values():
            stamp = record.get(move.field)
            if stamp is None:
                assert move.seal_field not in record, (issue_id, move.field)
                continue
            assert record.get(move.seal_field) == seal(move.event, issue_id, str(stamp)), (issue_id, move.field)
            stamps += 1
    return stamps


@pytest.mark.slow
def test_two_processes_starting_the_same_issues_never_lose_or_tear_a_write(tmp_path: Path) -> None:
    root = _layer(tmp_path, 50)
    ids = [f"I{n:04d}" for n in range(1, 51)]
    procs = [
        subprocess.Popen(
            [*WORKER, "race", str(root), *ids],
            cwd=ROOT,
            env=ENV,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(2)
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None
            assert proc.stdout.readline() == b"ready\n"
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write(b"go\n")
            proc.stdin.flush()
        answers = []
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err.decode()
            answers.append(json.loads(out))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    first, second = (set(a["moved"]) for a in answers)
    assert first.isdisjoint(second), "an issue was started twice"
    assert first | second == set(ids), "exactly one success per issue"
    refusals = answers[0]["refused"] + answers[1]["refused"]
    assert len(refusals) == 50
    assert all(m.endswith(" is ACTIVE, not READY") for m in refusals)
    ledger = read_ledger(root / ".ai/local/state/ledger.jsonl")
    assert ledger.skipped == 0
    assert sorted(e["issue"] for e in ledger.entries) == ids, "one ledger line per success"
    records = _records(root)
    assert _stamps_are_absent_or_sealed(records) == 50
    assert {i.status for i in read_snapshot(Repository.discover(root)).plan.issues} == {"ACTIVE"}


def _stamps(records: dict[str, dict[str, object]]) -> set[tuple[str, str, str]]:
    """(event, issue, stamp) of every stamp the records hold."""
    return {
        (move.event, issue_id, str(record[move.field]))
        for issue_id, record in records.items()
        for move in MOVES.values()
        if record.get(move.field) is not None
    }


def _agree(root: Path, *, settled: bool) -> int:
    """Records are whole, every stamp is sealed, the ledger is never ahead of a stamp nor says one twice; once
    `settled` (a command ran to its end after the last kill), every stamp has its event, no temp file or
    pending line is left, and `plan validate` reports no `ledger_gap`. Returns the number of stamps."""
    records = _records(root)
    stamps = _stamps_are_absent_or_sealed(records)
    ledger = read_ledger(root / STATE / "ledger.jsonl")
    assert ledger.skipped == 0
    events = [(e["event"], e["issue"], e["ts"]) for e in ledger.entries]
    assert len(events) == len(set(events)), "an event was appended twice"
    assert set(events) <= _stamps(records), "a ledger event is never ahead of its sealed stamp"
    if settled:
        assert set(events) == _stamps(records), "every sealed stamp has its ledger event"
        assert not list((root / ".ai/repo/project/issues").glob(".*.tmp")), "a temp file was left"
        assert not (root / STATE / "ledger.pending").exists()
        plan = read_snapshot(Repository.discover(root)).plan
        assert not [f for f in plan.findings if f.code in ("ledger_gap", "stamp_without_event")]
    return stamps


@pytest.mark.slow
def test_two_hundred_kills_across_the_write_sequence_leave_record_and_ledger_in_agreement(tmp_path: Path) -> None:
    """Each move runs in a child forked by one worker and is killed at one of the calls of its write
    sequence (the pending line, the record's temp file and rename, the ledger line, the clean-up, and the
    repair of the previous kill), cycling through every position; the next command repairs what it left."""
    root = _layer(tmp_path, 60, **PROOF)
    rng = random.Random(20261121)
    errors = (tmp_path / "worker.err").open("wb")
    server = subprocess.Popen(
        [*WORKER, "fork-server", str(root)],
        cwd=ROOT,
        env=ENV,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=errors,
    )
    assert server.stdin is not None
    assert server.stdout is not None
    deadline = time.monotonic() + 120
    kills = moved = 0
    points: list[int] = []
    try:
        while kills < 200:
            if not points:
                points = rng.sample(range(KILL_POINTS), KILL_POINTS)
            server.stdin.write(f"{points.pop()}\n".encode())
            server.stdin.flush()
            ready, _, _ = select.select([server.stdout], [], [], max(0.0, deadline - time.monotonic()))
            assert ready, f"no answer within the deadline after {kills} kills"
            answer = server.stdout.readline().decode().strip()
            assert answer in ("killed", "moved"), (answer, (tmp_path / "worker.err").read_text()[-2000:])
            kills += answer == "killed"
            moved += answer == "moved"
            _agree(root, settled=answer == "moved")
    finally:
        server.stdin.close()
        server.wait(timeout=30)
        server.stdout.close()
        errors.close()
    assert moved >= 10, "some moves ran past every kill point"
    repair_ledger(Repository.discover(root))
    stamps = _agree(root, settled=True)
    assert stamps >= 60, "the kills landed across many moves"
