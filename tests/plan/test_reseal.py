"""`svc plan reseal`: stamps sealed under another tool's seal domain re-sealed with svc's, one move at a time."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from asyncclick.testing import CliRunner

from svc._errors import Internal, InvalidInput
from svc.cli import build_cli
from svc.layer import Repository, write_atomic
from svc.plan import (
    SEAL_SCHEMA,
    _store,
    known_domains,
    next_issue,
    read_ledger,
    read_snapshot,
    repair_ledger,
    reseal,
    seal,
    validation,
)
from tests.conftest import SHARED_CORPUS, make_checkout
from tests.plan._records import issue, milestone, sealed, write_layer

#: The seal domain of the other tool that wrote the corpus.
OTHER = "majordomus.plan-event/v1"
#: The corpus's issues sealed under it, with the stamps each carries.
SEALED_ELSEWHERE = {"I0837": 3, "I1403": 3, "I2096": 2, "I2097": 2, "I2293": 1}
STAMPS = ("started_at", "verified_at", "completed_at")
LEDGER = ".ai/local/state/ledger.jsonl"


async def svc(*args: str) -> Any:
    return await CliRunner().invoke(build_cli(), list(args), catch_exceptions=False)


def digests(root: Path) -> dict[str, str]:
    """Every file's digest, the parse cache left out (any read may refresh it; it changes no answer)."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.relative_to(root).as_posix().startswith(".ai/local/cache/")
    }


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A private copy of the shared corpus (these tests write it)."""
    if not (SHARED_CORPUS / ".ai" / "repo" / "project").is_dir():
        pytest.skip(f"the shared corpus is not at {SHARED_CORPUS}")
    root = tmp_path / "reference-layer"
    shutil.copytree(SHARED_CORPUS, root, ignore=shutil.ignore_patterns("local"))
    for path in (root, *root.rglob("*")):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return root


def _repo(root: Path) -> Repository:
    return Repository.discover(root)


async def test_the_dry_run_lists_every_stamp_and_changes_nothing(corpus: Path) -> None:
    read_snapshot(_repo(corpus))
    before = digests(corpus)
    result = await svc("--repo", str(corpus), "plan", "reseal", "--domain", OTHER)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    planned = [line for line in lines if line.startswith("would re-seal")]
    assert Counter(line.split()[2] for line in planned) == SEALED_ELSEWHERE
    assert "would re-seal  I0837 started_at 2026-10-08T10:33:54Z  (.ai/repo/project/issues/I0837.yaml)" in lines
    assert lines[-2] == (
        f"reseal: 11 stamps of 5 issues are sealed under {OTHER}; nothing was written (run again with --write "
        "to re-seal them)"
    )
    assert lines[-1].startswith("reseal: ")
    assert "without a seal left as written" in lines[-1]
    assert digests(corpus) == before
    assert not (corpus / LEDGER).exists()


async def test_write_reseals_the_five_issues_with_one_ledger_event_per_stamp(corpus: Path) -> None:
    repo = _repo(corpus)
    before = read_snapshot(repo)
    assert {f.subject for f in before.plan.findings if f.code == "stamp_without_event"} >= set(SEALED_ELSEWHERE)
    untouched = {r.id: r for r in before.records.issues if r.id not in SEALED_ELSEWHERE}
    result = await svc("--repo", str(corpus), "plan", "reseal", "--domain", OTHER, "--write")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-2] == (
        "reseal: 11 stamps of 5 issues re-sealed with svc's seal, one ledger event each"
    )
    after = read_snapshot(repo)
    records = {r.id: r for r in after.records.issues}
    statuses = {i.id: i for i in after.plan.issues}
    for issue_id, count in SEALED_ELSEWHERE.items():
        record = records[issue_id]
        stamps = (record.started_at, record.verified_at, record.completed_at)
        assert record.proven == stamps
        assert sum(bool(s) for s in stamps) == count
        for field, stamp in zip(STAMPS, stamps, strict=True):
            if stamp:
                assert getattr(record, field.replace("_at", "_event")) == seal(
                    {"started_at": "plan_start", "verified_at": "plan_verify", "completed_at": "plan_done"}[field],
                    issue_id,
                    stamp,
                )
        expected = "DONE" if record.completed_at and record.covered else "VERIFY" if record.verified_at else "ACTIVE"
        status = statuses[issue_id]
        assert status.status == expected or any(b.startswith("milestone:") for b in status.blocked_by), issue_id
    assert not {f.subject for f in after.plan.findings if f.code == "stamp_without_event"} & set(SEALED_ELSEWHERE)
    assert {r.id: r for r in after.records.issues if r.id not in SEALED_ELSEWHERE} == untouched
    entries = read_ledger(corpus / LEDGER).entries
    assert len(entries) == 11
    assert Counter(e["issue"] for e in entries) == SEALED_ELSEWHERE
    for entry in entries:
        record = records[entry["issue"]]
        field = {"plan_start": "started_at", "plan_verify": "verified_at", "plan_done": "completed_at"}[entry["event"]]
        assert entry["ts"] == getattr(record, field)
        assert (entry["resealed_from"], entry["head"], entry["branch"]) == (OTHER, "NONE", "DETACHED")
    assert statuses["I0010"].status == "READY"
    answer = next_issue(after.plan, statuses["I0010"].milestone, after.records)
    assert answer.issue is not None
    assert answer.issue.id == "I0010"
    assert [s.reason for s in answer.unproven_stamps] == ["unsealed"] * 3
    assert any(note.startswith("I0010 is READY although its record carries started_at") for note in answer.notes)
    again = await svc("--repo", str(corpus), "plan", "reseal", "--domain", OTHER, "--write")
    assert again.exit_code == 0
    assert f"reseal: no stamp is sealed under {OTHER}; nothing to do" in again.stdout
    assert len(read_ledger(corpus / LEDGER).entries) == 11


def _small(tmp_path: Path) -> Path:
    """I0001 sealed under the other domain (start and verify), I0002 carrying a seal nothing proves."""
    root = make_checkout(tmp_path / "small", layer=False)
    started, verified = "2026-11-01T10:00:00Z", "2026-11-01T11:00:00Z"
    write_layer(
        root,
        [milestone("M1")],
        [
            issue(
                "I0001",
                started_at=started,
                started_event=seal("plan_start", "I0001", started, domain=OTHER),
                verified_at=verified,
                verified_event=seal("plan_verify", "I0001", verified, domain=OTHER),
            ),
            issue("I0002", started_at=started, started_event="sha256:" + "0" * 64),
            issue("I0003", **sealed("I0003", ("started_at", started))),
        ],
    )
    return root


async def test_a_seal_proving_under_neither_domain_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    root = _small(tmp_path)
    record = root / ".ai/repo/project/issues/I0002.yaml"
    text = record.read_bytes()
    result = await svc("--repo", str(root), "plan", "reseal", "--domain", OTHER, "--write")
    assert result.exit_code == 10
    assert (
        "refused        I0002 started_at 2026-11-01T10:00:00Z: its started_event seals it under neither "
        f"{OTHER} nor svc's {SEAL_SCHEMA}"
    ) in result.stdout.splitlines()
    assert record.read_bytes() == text
    assert [(e["issue"], e["event"]) for e in read_ledger(root / LEDGER).entries] == [
        ("I0001", "plan_start"),
        ("I0001", "plan_verify"),
    ]
    statuses = {i.id: i.status for i in read_snapshot(_repo(root)).plan.issues}
    assert statuses == {"I0001": "VERIFY", "I0002": "READY", "I0003": "ACTIVE"}


def test_each_record_is_replaced_under_the_plan_lock_by_an_atomic_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _small(tmp_path)
    record = root / ".ai/repo/project/issues/I0001.yaml"
    # Held open, the replaced file keeps its inode: a freed inode number may be given to the new file.
    original = record.open("rb")
    inode = os.fstat(original.fileno()).st_ino
    held: list[bool] = []

    def probing(path: Path, data: bytes) -> None:
        fd = os.open(root / ".ai/local/state/plan.lock", os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            held.append(True)
        else:
            held.append(False)
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
        write_atomic(path, data)

    monkeypatch.setattr(_store, "write_atomic", probing)
    done = reseal(_repo(root), OTHER, write=True, by="svc/test")
    assert [s.describe() for s in done.resealed] == [
        "I0001 started_at 2026-11-01T10:00:00Z",
        "I0001 verified_at 2026-11-01T11:00:00Z",
    ]
    assert held == [True, True]
    assert record.stat().st_ino != inode
    original.close()
    assert sorted(p.name for p in record.parent.iterdir()) == ["I0001.yaml", "I0002.yaml", "I0003.yaml"]


def test_a_failed_write_changes_nothing_and_leaves_no_pending_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _small(tmp_path)
    record = root / ".ai/repo/project/issues/I0001.yaml"
    text = record.read_bytes()

    def failing(path: Path, data: bytes) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_store, "write_atomic", failing)
    with pytest.raises(Internal, match="I0001 started_at 2026-11-01T10:00:00Z was not re-sealed"):
        reseal(_repo(root), OTHER, write=True, by="svc/test")
    assert record.read_bytes() == text
    assert not (root / ".ai/local/state/ledger.pending").exists()
    assert not (root / LEDGER).exists()


def test_a_resealing_killed_before_its_ledger_line_is_repaired_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Killed(BaseException):
        pass

    def die(*_: object) -> None:
        raise Killed

    root = _small(tmp_path)
    with monkeypatch.context() as patch:
        patch.setattr(_store, "append_line", die)
        with pytest.raises(Killed):
            reseal(_repo(root), OTHER, write=True, by="svc/test")
    plan = read_snapshot(_repo(root)).plan
    assert [(f.code, f.subject) for f in plan.findings if f.code == "ledger_gap"] == [("ledger_gap", "I0001")]
    repaired = repair_ledger(_repo(root))
    assert repaired.appended == ("plan_start I0001 2026-11-01T10:00:00Z",)
    done = reseal(_repo(root), OTHER, write=True, by="svc/test")
    assert [s.describe() for s in done.resealed] == ["I0001 verified_at 2026-11-01T11:00:00Z"]
    events = [(e["event"], e["ts"]) for e in read_ledger(root / LEDGER).entries]
    assert events == [("plan_start", "2026-11-01T10:00:00Z"), ("plan_verify", "2026-11-01T11:00:00Z")]
    assert validation(read_snapshot(_repo(root)).plan, code="ledger_gap").findings == []


@pytest.mark.parametrize(
    ("domain", "message"),
    [
        (SEAL_SCHEMA, f"{SEAL_SCHEMA} is svc's own seal domain"),
        ("two words", "is not 1 to 128 printable ASCII characters"),
        ("", "is not 1 to 128 printable ASCII characters"),
    ],
)
async def test_a_domain_that_cannot_seal_is_invalid_input(tmp_path: Path, domain: str, message: str) -> None:
    root = _small(tmp_path)
    with pytest.raises(InvalidInput, match=message):
        reseal(_repo(root), domain, write=True, by="svc/test")
    result = await svc("--repo", str(root), "plan", "reseal", "--domain", domain)
    assert result.exit_code == 10
    assert result.stderr.startswith("svc: invalid_input: ")
    assert result.stderr.count("\n") == 1
    assert not (root / ".ai/local/state").exists()


async def test_reseal_without_a_domain_is_a_usage_error(tmp_path: Path) -> None:
    root = _small(tmp_path)
    result = await svc("--repo", str(root), "plan", "reseal")
    assert result.exit_code == 2
    assert "--domain" in result.stderr
    assert OTHER in result.stderr


def test_the_domains_svc_recognises_are_its_share_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_checkout(tmp_path / "mine", layer=False)
    stamp = "2026-11-02T09:00:00Z"
    mine = "mine.plan-event/v2"
    write_layer(
        root,
        [milestone("M1")],
        [issue("I0001", started_at=stamp, started_event=seal("plan_start", "I0001", stamp, domain=mine))],
    )

    def message() -> str:
        plan = read_snapshot(_repo(root)).plan
        return next(f.message for f in plan.findings if f.code == "stamp_without_event")

    assert known_domains() == (OTHER,)
    assert "is absent or does not seal it" in message()
    share = tmp_path / "share"
    (share / "plan").mkdir(parents=True)
    (share / "plan" / "seal-domains.yaml").write_text(
        f"domains: [{mine}, {SEAL_SCHEMA}, 'two words', 7, {mine}]\n", encoding="utf-8"
    )
    monkeypatch.setenv("SVC_SHARE", str(share))
    assert known_domains() == (mine,)
    assert message() == (
        f"started_at {stamp} has no plan_start event: started_event seals it under the domain {mine}, not svc's; "
        f"`svc plan reseal --domain {mine}` re-seals it"
    )
    monkeypatch.setenv("SVC_SHARE", str(tmp_path))
    assert known_domains() == ()
    assert "is absent or does not seal it" in message()
