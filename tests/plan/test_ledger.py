"""The ledger: declared events, the key order of docs/layer.md, appends under a lock, tolerant reads."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from svc.plan import LedgerError, append_line, declared_events, ledger_line, read_ledger


def test_the_packaged_vocabulary_declares_what_svc_writes() -> None:
    events = declared_events()
    assert {"plan_start", "plan_verify", "plan_done", "plan_evidence", "task.handed_over", "ledger.rotated"} <= set(
        events
    )
    assert events["plan_start"].requires == ("issue",)
    assert events["plan_evidence"].requires == ("issue", "covers", "type")


def test_a_line_has_the_envelope_first_then_the_payload() -> None:
    line = ledger_line(
        "plan_start", {"issue": "I0001"}, ts="2026-09-11T12:00:00Z", head="a" * 40, branch="main", by="svc/0.1.0"
    )
    assert line == (
        b'{"ts":"2026-09-11T12:00:00Z","event":"plan_start","head":"'
        + b"a" * 40
        + b'","branch":"main","by":"svc/0.1.0","issue":"I0001"}\n'
    )
    bare = ledger_line("plan_done", {"issue": "I1"}, ts="t", head=None, branch=None, by="svc/0.1.0", session="s1")
    assert list(msgspec.json.decode(bare)) == ["ts", "event", "head", "branch", "by", "session", "issue"]
    assert b'"head":"NONE","branch":"DETACHED"' in bare
    hostile = ledger_line("plan_start", {"issue": 'I1"\n{"event":"x"}'}, ts="t", head=None, branch=None, by="b")
    assert hostile.count(b"\n") == 1, "a value can never end its string or the line"


@pytest.mark.parametrize(
    ("event", "payload", "message"),
    [
        ("plan_begin", {"issue": "I1"}, "event 'plan_begin' is not declared (declared: ledger.rotated, plan_done"),
        ("plan_start", {}, "event 'plan_start' is missing the required field 'issue'"),
        ("plan_start", {"issue": "I1", "by": "me"}, "payload keys by are envelope keys"),
    ],
)
def test_refused_lines(event: str, payload: dict[str, str], message: str) -> None:
    with pytest.raises(LedgerError) as caught:
        ledger_line(event, payload, ts="t", head=None, branch=None, by="svc/0.1.0")
    assert str(caught.value).startswith(message)


def test_appends_and_tolerant_reads(tmp_path: Path) -> None:
    path = tmp_path / "local" / "state" / "ledger.jsonl"
    assert read_ledger(path).entries == []
    assert read_ledger(path).skipped == 0
    append_line(path, ledger_line("plan_start", {"issue": "I1"}, ts="t1", head=None, branch=None, by="b"))
    assert (path.stat().st_mode & 0o777, path.parent.stat().st_mode & 0o777) == (0o600, 0o700)
    with path.open("ab") as handle:
        handle.write(b'{"torn": \n\n[1, 2]\n{"ts": "t"}\n\xff\xfe\n')
    append_line(path, ledger_line("plan_done", {"issue": "I1"}, ts="t2", head=None, branch=None, by="b"))
    reading = read_ledger(path)
    assert [e["event"] for e in reading.entries] == ["plan_start", "plan_done"]
    assert reading.skipped == 4
    with pytest.raises(LedgerError):
        append_line(path, b'{"a":1}\n{"b":2}\n')


def test_a_line_torn_by_a_killed_writer_is_ended_before_the_next(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    path.write_bytes(b'{"ts":"t0","event":"plan_start","issue":"I0')
    append_line(path, ledger_line("plan_done", {"issue": "I1"}, ts="t1", head=None, branch=None, by="b"))
    reading = read_ledger(path)
    assert ([e["event"] for e in reading.entries], reading.skipped) == (["plan_done"], 1)


def test_the_ledger_is_never_written_through_a_symlink(tmp_path: Path) -> None:
    outside = tmp_path / "outside.jsonl"
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "ledger.jsonl").symlink_to(outside)
    with pytest.raises(OSError, match="symbolic links"):
        append_line(
            tmp_path / "state" / "ledger.jsonl",
            ledger_line("plan_done", {"issue": "I1"}, ts="t", head=None, branch=None, by="b"),
        )
    assert not outside.exists()
