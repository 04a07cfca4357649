"""Moves across processes: a race on the same issues, and kills (SIGKILL) in the middle of a write."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from svc.layer import Repository, load_yaml
from svc.plan import MOVES, read_ledger, read_snapshot, seal
from tests.conftest import make_checkout
from tests.plan._records import PROOF, issue, milestone, write_layer

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(ROOT)}
WORKER = [sys.executable, "-m", "tests.plan._workers"]
COMMENT = b"# hand-written comment that every write keeps\n"


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


@pytest.mark.slow
def test_a_kill_at_any_point_leaves_every_record_whole_and_every_stamp_sealed(tmp_path: Path) -> None:
    root = _layer(tmp_path, 10, **PROOF)
    rng = random.Random(20261121)
    finished = False
    kills = 0
    for round_ in range(80):
        proc = subprocess.Popen(
            [*WORKER, "crash", str(root), str(round_)],
            cwd=ROOT,
            env=ENV,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert proc.stdout is not None
        lines: list[bytes] = []
        limit = rng.randint(1, 6)
        try:
            while len(lines) < limit:
                line = proc.stdout.readline()
                if not line:
                    break
                lines.append(line)
            if lines and lines[-1] == b"finished\n":
                finished = True
            elif proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
        finally:
            proc.wait(timeout=60)
            proc.stdout.close()
        kills += proc.returncode == -signal.SIGKILL
        records = _records(root)
        _stamps_are_absent_or_sealed(records)
        for entry in read_ledger(root / ".ai/local/state/ledger.jsonl").entries:
            field = next(m.field for m in MOVES.values() if m.event == entry["event"])
            assert records[entry["issue"]].get(field), "a ledger event is never ahead of its sealed stamp"
        if finished:
            break
    assert finished, "the moves never completed across the kills"
    assert kills >= 5
    plan = read_snapshot(Repository.discover(root)).plan
    assert {i.status for i in plan.issues} == {"DONE"}
    assert not [f for f in plan.findings if f.code == "stamp_without_event"]
    assert _stamps_are_absent_or_sealed(_records(root)) == 30
    ledger = read_ledger(root / ".ai/local/state/ledger.jsonl")
    assert ledger.skipped == 0
    assert len(ledger.entries) < 30, "some kills landed between the record's replacement and its ledger line"
