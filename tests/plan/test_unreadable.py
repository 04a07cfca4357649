"""A layer svc cannot read is a FAIL finding of `plan validate`, never `valid: true`; findings stay small."""

from __future__ import annotations

import os
import time
from pathlib import Path

import msgspec
import pytest
import trio

from svc.layer import Repository, Unreadable, read_manifest
from svc.layer._manifest import MAX_PROBLEMS
from svc.plan import read_ledger, read_snapshot, validation
from svc.plan._load import MAX_UNKNOWN_KEYS
from svc.plan._model import PlanValidation
from tests.layer.test_read import ALIAS_BOMB

ISSUES = Path(".ai/repo/project/issues")


def _validate(root: Path) -> PlanValidation:
    return validation(read_snapshot(Repository.discover(root)).plan)


def _failures(answer: PlanValidation) -> list[tuple[str, str, str]]:
    return [(f.code, f.subject, f.message) for f in answer.findings if f.level == "FAIL"]


def test_the_small_plan_is_valid(checkout: Path) -> None:
    assert _validate(checkout).valid


@pytest.mark.parametrize(
    ("manifest", "problem"),
    [
        (b"schema: ai-repository/v1\nsurprise: true\n", ".ai/manifest.yaml: unknown key 'surprise'"),
        (b"schema: [unclosed\n", ".ai/manifest.yaml is not YAML (line 2)"),
        (b"- a list\n", ".ai/manifest.yaml is not a mapping"),
        (b"schema: &s ai-repository/v1\nrepo: *s\n", ".ai/manifest.yaml uses YAML aliases, which svc does not read"),
    ],
)
def test_a_corrupt_manifest_fails_validation(checkout: Path, manifest: bytes, problem: str) -> None:
    (checkout / ".ai" / "manifest.yaml").write_bytes(manifest)
    answer = _validate(checkout)
    assert not answer.valid
    assert _failures(answer) == [
        ("layer", "layer", f"{problem}; the layer reads as absent, so the plan is empty"),
    ]


def test_a_manifest_symlinked_out_of_the_checkout_fails_validation(checkout: Path) -> None:
    os.symlink("/etc/passwd", checkout / ".ai" / "manifest.yaml")
    assert _failures(_validate(checkout)) == [
        (
            "layer",
            "layer",
            ".ai/manifest.yaml cannot be read: a symlink leaving the repository; the layer reads as absent, "
            "so the plan is empty",
        )
    ]


def test_unreadable_records_fail_validation_each_named_and_left_out(checkout: Path) -> None:
    issues = checkout / ISSUES
    os.symlink("I0098.yaml", issues / "I0099.yaml")
    os.symlink("I0099.yaml", issues / "I0098.yaml")
    (issues / "I0097.yaml").mkdir()
    os.mkfifo(issues / "I0096.yaml")
    os.symlink("/etc/passwd", issues / "I0095.yaml")
    (issues / "I0002.yaml").unlink()
    os.symlink("/dev/zero", issues / "I0002.yaml")
    with open(issues / "I0094.yaml", "wb") as big:
        big.truncate(5 * 1024 * 1024)
    started = time.perf_counter()
    answer = _validate(checkout)
    assert time.perf_counter() - started < 5
    assert not answer.valid
    base = ".ai/repo/project/issues"
    assert sorted(_failures(answer)) == [
        ("unreadable", "I0002", f"{base}/I0002.yaml cannot be read (a symlink leaving the repository); left out"),
        ("unreadable", "I0094", f"{base}/I0094.yaml cannot be read (5.0 MiB, over the 4 MiB limit); left out"),
        ("unreadable", "I0095", f"{base}/I0095.yaml cannot be read (a symlink leaving the repository); left out"),
        ("unreadable", "I0096", f"{base}/I0096.yaml cannot be read (not a regular file (a FIFO)); left out"),
        ("unreadable", "I0097", f"{base}/I0097.yaml cannot be read (not a regular file (a directory)); left out"),
        ("unreadable", "I0098", f"{base}/I0098.yaml cannot be read (a symlink loop); left out"),
        ("unreadable", "I0099", f"{base}/I0099.yaml cannot be read (a symlink loop); left out"),
    ]
    assert answer.issues == 5


def test_a_records_directory_leaving_the_checkout_fails_validation(checkout: Path, tmp_path: Path) -> None:
    milestones = checkout / ".ai" / "repo" / "project" / "milestones"
    outside = tmp_path / "elsewhere"
    milestones.rename(outside)
    os.symlink(outside, milestones)
    answer = _validate(checkout)
    assert answer.milestones == 0
    assert _failures(answer)[0] == (
        "unreadable",
        "layer",
        ".ai/repo/project/milestones cannot be read (a symlink leaving the repository); left out",
    )


def test_an_alias_bomb_is_a_small_finding_answered_fast(checkout: Path) -> None:
    (checkout / ISSUES / "I0001.yaml").write_text(ALIAS_BOMB)
    started = time.perf_counter()
    answer = _validate(checkout)
    assert time.perf_counter() - started < 2
    assert [f for f in _failures(answer) if f[0] == "schema"] == [
        (
            "schema",
            "I0001",
            ".ai/repo/project/issues/I0001.yaml uses YAML aliases, which svc does not read; left out",
        )
    ]
    assert len(msgspec.json.encode(answer)) < 2000


def test_findings_are_bounded_in_length_and_number(checkout: Path) -> None:
    path = checkout / ISSUES / "I0001.yaml"
    huge = "k" * 100_000
    extra = "".join(f"extra{n}: 1\n" for n in range(1000))
    path.write_text(path.read_text() + f"depends_on: [{huge}]\n? {huge}\n: 1\n" + extra)
    answer = _validate(checkout)
    mine = [f for f in answer.findings if f.subject == "I0001"]
    assert all(len(f.message) <= 400 for f in answer.findings)
    assert all(len(f.subject) <= 400 for f in answer.findings)
    unknown = [f for f in mine if "unknown key" in f.message or "more unknown keys" in f.message]
    assert len(unknown) == MAX_UNKNOWN_KEYS + 1
    assert unknown[-1].message.endswith(f": {1001 - MAX_UNKNOWN_KEYS} more unknown keys")
    assert unknown[0].message.endswith("…")
    assert any(f.code == "unknown_dependency" and f.message.endswith("…") for f in mine)


def test_a_manifest_with_many_problems_reports_twenty_and_counts_the_rest(checkout: Path) -> None:
    keys = "".join(f"k{n}: 1\n" for n in range(50))
    (checkout / ".ai" / "manifest.yaml").write_text(f"schema: ai-repository/v1\n{keys}")
    reading = read_manifest(Repository.discover(checkout))
    assert len(reading.problems) == MAX_PROBLEMS + 1
    assert reading.problems[-1] == f".ai/manifest.yaml: {50 - MAX_PROBLEMS} more problems"


async def test_a_ledger_svc_cannot_read_is_refused_not_followed(checkout: Path) -> None:
    state = checkout / ".ai" / "local" / "state"
    state.mkdir(parents=True)
    os.symlink("/dev/zero", state / "ledger.jsonl")
    with pytest.raises(Unreadable, match="a symlink leaving the repository"):
        await trio.to_thread.run_sync(read_ledger, state / "ledger.jsonl", abandon_on_cancel=True)
