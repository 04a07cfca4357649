"""The plan's cache (`.ai/local/cache/plan.msgpack`): what a read parses, when it reuses the stored derivation
instead of deriving, and that no answer depends on either.

A "new process" is simulated by dropping the entries held in memory (`_cache.forget`). Files a test writes are
seconds old at most, so most tests move the racy rule's clock 10 s ahead (`later`); the racy tests use the real
clock or set it to the exact boundary.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings

from svc import SvcError
from svc._version import __version__
from svc.capabilities._plan import CAPABILITIES
from svc.host._service import open_service
from svc.layer import RACY_NS, Repository
from svc.plan import (
    Plan,
    Snapshot,
    _cache,
    _parallel,
    derive,
    issue_list,
    load_records,
    next_issue,
    read_snapshot,
    record_view,
    repair_ledger,
    roadmap,
    status_report,
    validation,
    wave_report,
)
from svc.plan._load import IssueRecord, Parsed, RecordKind, parse_record
from svc.plan._pending import PENDING, write_pending
from svc.plan._seal import SEAL_SCHEMA, known_domains, seal
from svc.plan._store import LEDGER, move_issue
from svc.runtime import Actor
from tests.plan._records import issue, yaml_bytes
from tests.plan.conftest import AHEAD_NS, PROJECT, Counts
from tests.plan.test_properties import plans

CACHE = Path(".ai") / _cache.CACHE_FILE
#: The records of `small_plan()`: the project, two milestones, six issues.
ALL = {
    "project.yaml",
    "M1.yaml",
    "M2.yaml",
    *(f"I000{n}.yaml" for n in range(1, 7)),
}


@pytest.fixture(autouse=True)
def no_memory() -> Iterator[None]:
    """Every test starts, and leaves, with no entries held in memory."""
    _cache.forget()
    yield
    _cache.forget()


def _repo(root: Path) -> Repository:
    return Repository(root=root, git_dir=None, common_dir=None)


def new_process(root: Path, counts: Counts | None = None, *, exact: bool = False) -> Snapshot:
    """Read as a new process would: nothing in memory, the cache file as it is."""
    _cache.forget()
    if counts is not None:
        counts.clear()
    return read_snapshot(_repo(root), exact=exact)


def _title(snapshot: Snapshot, issue_id: str) -> str:
    return next(i.title for i in snapshot.plan.issues if i.id == issue_id)


def _status(snapshot: Snapshot, issue_id: str) -> str:
    return next(i.status for i in snapshot.plan.issues if i.id == issue_id)


def _held(root: Path) -> Any:
    return _cache._decoders().file.decode((root / CACHE).read_bytes())


def _names(root: Path) -> set[str]:
    held = _held(root)
    return {*held.project.names, *held.milestones.names, *held.issues.names}


def _issue_entries(root: Path) -> dict[str, Any]:
    """The issue entries of the cache file, decoded, by file name."""
    held = _held(root)
    decoder = msgspec.msgpack.Decoder(_cache._Entry[IssueRecord])
    return {name: decoder.decode(blob) for name, blob in zip(held.issues.names, held.issues.entries, strict=True)}


def _has_derivation(root: Path) -> bool:
    return len(_held(root).derived) > 1


def _plant(root: Path, name: str, **changes: Any) -> None:
    """Rewrite the cache file with issue `name`'s entry changed (`record` given as fields to replace).

    The derivation is dropped, so a read derives from the entries (the planted one included).
    """
    held = _held(root)
    names, keys, entries = held.issues.names, list(held.issues.keys), list(held.issues.entries)
    for n, entry in enumerate(_issue_entries(root).values()):
        if entry.name == name:
            fields = dict(changes)
            if "record" in fields:
                fields["record"] = dataclasses.replace(entry.record, **fields["record"])
            entry = msgspec.structs.replace(entry, **fields)
            keys[n] = entry.key
            entries[n] = msgspec.Raw(_cache._ENCODER.encode(entry))
    issues = _cache._Index(names=names, keys=keys, entries=entries)
    planted = msgspec.structs.replace(held, issues=issues, derived=_cache._NIL)
    (root / CACHE).write_bytes(_cache._ENCODER.encode(planted))


def _git(root: Path, *args: str) -> None:
    identity = ["-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run(["git", *identity, *args], cwd=root, check=True, capture_output=True)


# --- what a read parses ---------------------------------------------------------------------------------------


@pytest.mark.usefixtures("later")
def test_a_new_process_parses_and_opens_nothing_when_nothing_changed(checkout: Path, counts: Counts) -> None:
    first = new_process(checkout, counts)
    assert sorted(counts.parsed) == sorted(ALL)
    assert _names(checkout) == ALL
    again = new_process(checkout, counts)
    assert (counts.parsed, counts.opened) == ([], []), "every record kept by its stat, none opened"
    assert again.plan == first.plan
    assert again.records == first.records
    in_memory = read_snapshot(_repo(checkout))
    assert (counts.parsed, counts.opened) == ([], [])
    assert in_memory.plan == first.plan


@pytest.mark.usefixtures("later")
def test_an_edit_that_changes_the_size_reparses_that_file_only(checkout: Path, counts: Counts) -> None:
    new_process(checkout, counts)
    (checkout / PROJECT / "issues" / "I0002.yaml").write_bytes(yaml_bytes(issue("I0002", title="A longer title")))
    snapshot = new_process(checkout, counts)
    assert counts.parsed == ["I0002.yaml"]
    assert _title(snapshot, "I0002") == "A longer title"
    assert new_process(checkout, counts).plan == snapshot.plan
    assert counts.parsed == []


@pytest.mark.usefixtures("later")
def test_an_edit_in_place_keeping_the_size_reparses_that_file(checkout: Path, counts: Counts) -> None:
    path = checkout / PROJECT / "issues" / "I0002.yaml"
    new_process(checkout, counts)
    before = os.stat(path)
    with open(path, "r+b") as handle:
        text = handle.read()
        handle.seek(0)
        handle.write(text.replace(b"Issue I0002", b"Issue Z0002"))
    after = os.stat(path)
    assert (after.st_size, after.st_ino) == (before.st_size, before.st_ino)
    snapshot = new_process(checkout, counts)
    assert counts.parsed == ["I0002.yaml"]
    assert _title(snapshot, "I0002") == "Issue Z0002"


@pytest.mark.usefixtures("later")
def test_an_edit_that_restores_size_and_mtime_is_caught_by_the_ctime(checkout: Path, counts: Counts) -> None:
    path = checkout / PROJECT / "issues" / "I0002.yaml"
    new_process(checkout, counts)
    before = os.stat(path)
    path.write_bytes(path.read_bytes().replace(b"Issue I0002", b"Issue Z0002"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    snapshot = new_process(checkout, counts)
    assert counts.parsed == ["I0002.yaml"]
    assert _title(snapshot, "I0002") == "Issue Z0002"


@pytest.mark.usefixtures("later")
def test_a_git_checkout_of_another_version_reparses_that_file(checkout: Path, counts: Counts) -> None:
    _git(checkout, "add", "-A")
    _git(checkout, "commit", "-q", "-m", "v1")
    path = checkout / PROJECT / "issues" / "I0002.yaml"
    path.write_bytes(yaml_bytes(issue("I0002", title="Second version")))
    _git(checkout, "commit", "-q", "-am", "v2")
    assert _title(new_process(checkout, counts), "I0002") == "Second version"
    _git(checkout, "checkout", "HEAD~1", "--", str(PROJECT / "issues" / "I0002.yaml"))
    snapshot = new_process(checkout, counts)
    assert counts.parsed == ["I0002.yaml"]
    assert _title(snapshot, "I0002") == "Issue I0002"


@pytest.mark.usefixtures("later")
def test_deleted_and_added_records(checkout: Path, counts: Counts) -> None:
    new_process(checkout, counts)
    (checkout / PROJECT / "issues" / "I0006.yaml").unlink()
    (checkout / PROJECT / "issues" / "I0007.yaml").write_bytes(yaml_bytes(issue("I0007", milestone="M2")))
    snapshot = new_process(checkout, counts)
    assert counts.parsed == ["I0007.yaml"]
    assert [i.id for i in snapshot.plan.issues][-2:] == ["I0005", "I0007"]
    assert _names(checkout) == (ALL - {"I0006.yaml"}) | {"I0007.yaml"}
    (checkout / PROJECT / "issues" / "I0007.yaml").unlink()
    snapshot = new_process(checkout, counts)
    assert counts.parsed == []
    assert "I0007.yaml" not in _names(checkout), "a dropped entry alone rewrites the file"


@pytest.mark.usefixtures("later")
def test_a_symlinked_record_is_parsed_on_every_read_and_never_stored(checkout: Path, counts: Counts) -> None:
    shared = checkout / ".ai" / "repo" / "shared"
    shared.mkdir()
    (shared / "I0007.yaml").write_bytes(yaml_bytes(issue("I0007")))
    os.symlink("../../shared/I0007.yaml", checkout / PROJECT / "issues" / "I0007.yaml")
    new_process(checkout, counts)
    assert sorted(counts.parsed) == sorted({*ALL, "I0007.yaml"})
    snapshot = new_process(checkout, counts)
    assert counts.parsed == ["I0007.yaml"], "a link is read by its path, its parse is never stored"
    assert _title(snapshot, "I0007") == "Issue I0007"
    assert _names(checkout) == ALL


@pytest.mark.usefixtures("later")
def test_the_cache_file_is_not_rewritten_when_nothing_changed(checkout: Path, counts: Counts) -> None:
    new_process(checkout, counts)
    before = os.stat(checkout / CACHE)
    new_process(checkout, counts)
    read_snapshot(_repo(checkout))
    after = os.stat(checkout / CACHE)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


@pytest.mark.usefixtures("later")
def test_the_first_write_ignores_local_state_in_git(checkout: Path) -> None:
    new_process(checkout)
    assert (checkout / ".ai" / "local" / ".gitignore").is_file()
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"], cwd=checkout, capture_output=True, check=True
    )
    assert b".ai/repo/project/issues/I0001.yaml" in status.stdout
    assert b".ai/local" not in status.stdout


def _layer_findings(snapshot: Snapshot) -> list[tuple[str, str, str]]:
    return [(f.code, f.subject, f.message) for f in snapshot.plan.findings if f.code in ("unreadable", "layer")]


@pytest.mark.usefixtures("later")
@pytest.mark.parametrize("kind", ["fifo", "link out", "directory"])
def test_a_refused_project_file_is_a_finding_and_never_stored(
    checkout: Path, counts: Counts, tmp_path: Path, kind: str
) -> None:
    path = checkout / PROJECT / "project.yaml"
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
        reason = "not a regular file (a FIFO)"
    elif kind == "link out":
        (tmp_path / "project.yaml").write_bytes(b"name: elsewhere\n")
        os.symlink(tmp_path / "project.yaml", path)
        reason = "a symlink leaving the repository"
    else:
        path.mkdir()
        reason = "not a regular file (a directory)"
    for _ in range(2):
        snapshot = new_process(checkout, counts)
        assert _layer_findings(snapshot) == [
            ("unreadable", "project", f".ai/repo/project/project.yaml cannot be read ({reason}); left out")
        ]
        assert snapshot.plan.project.name == ""
        assert "project.yaml" not in counts.parsed
    assert _names(checkout) == ALL - {"project.yaml"}


@pytest.mark.usefixtures("later")
def test_a_project_directory_leaving_the_checkout_reads_project_yaml_alone(
    checkout: Path, counts: Counts, tmp_path: Path
) -> None:
    shutil.move(checkout / PROJECT, tmp_path / "elsewhere")
    os.symlink(tmp_path / "elsewhere", checkout / PROJECT)
    snapshot = new_process(checkout, counts)
    leaving = "cannot be read (a symlink leaving the repository); left out"
    assert _layer_findings(snapshot) == [
        ("unreadable", "project", f".ai/repo/project/project.yaml {leaving}"),
        ("unreadable", "layer", f".ai/repo/project/milestones {leaving}"),
        ("unreadable", "layer", f".ai/repo/project/issues {leaving}"),
    ]
    assert (counts.parsed, counts.opened) == ([], [])
    assert not (checkout / CACHE).exists()


@pytest.mark.usefixtures("later")
def test_a_project_directory_that_is_a_file_reads_as_an_empty_plan(checkout: Path, counts: Counts) -> None:
    shutil.rmtree(checkout / PROJECT)
    (checkout / PROJECT).write_bytes(b"not a directory")
    snapshot = new_process(checkout, counts)
    assert snapshot.plan.project.name == ""
    assert _layer_findings(snapshot) == [
        ("unreadable", "project", ".ai/repo/project/project.yaml cannot be read (Not a directory); left out"),
        ("unreadable", "layer", ".ai/repo/project/milestones cannot be read (Not a directory); left out"),
        ("unreadable", "layer", ".ai/repo/project/issues cannot be read (Not a directory); left out"),
    ]
    assert counts.parsed == []


# --- the racy rule --------------------------------------------------------------------------------------------


def test_a_file_changed_within_two_seconds_is_parsed_but_never_stored(checkout: Path, counts: Counts) -> None:
    new_process(checkout, counts)
    assert sorted(counts.parsed) == sorted(ALL)
    assert not (checkout / CACHE).exists(), "nothing old enough to store, nothing written"
    new_process(checkout, counts)
    assert sorted(counts.parsed) == sorted(ALL), "parsed again: a same-tick edit could have kept the stat"


def test_the_racy_rule_counts_the_ctime_too(checkout: Path, counts: Counts) -> None:
    hour_ago = time.time_ns() - 3600 * 10**9
    for path in (checkout / PROJECT).rglob("*.yaml"):
        os.utime(path, ns=(hour_ago, hour_ago))
    new_process(checkout, counts)
    assert not (checkout / CACHE).exists(), "an old mtime with a fresh ctime is still racy"


def test_the_racy_boundary_is_two_seconds(checkout: Path, counts: Counts, monkeypatch: pytest.MonkeyPatch) -> None:
    stats = [os.stat(p) for p in (checkout / PROJECT).rglob("*.yaml")]
    newest = max(max(st.st_mtime_ns, st.st_ctime_ns) for st in stats)
    monkeypatch.setattr(_cache, "_now_ns", lambda: newest + RACY_NS - 1)
    new_process(checkout, counts)
    stored = _names(checkout) if (checkout / CACHE).exists() else set()
    assert stored < ALL, "the newest file is 1 ns short of 2 s old: not stored"
    monkeypatch.setattr(_cache, "_now_ns", lambda: newest + RACY_NS)
    new_process(checkout, counts)
    assert _names(checkout) == ALL
    new_process(checkout, counts)
    assert counts.parsed == []


# --- stat or bytes: what a reuse needs ------------------------------------------------------------------------


@pytest.mark.usefixtures("later")
def test_a_query_trusts_a_matching_stat_a_move_checks_the_bytes(checkout: Path, counts: Counts) -> None:
    new_process(checkout, counts)
    _plant(checkout, "I0001.yaml", record={"title": "Planted", "cancelled": True}, digest=b"\0" * 16)
    query = new_process(checkout, counts)
    assert (_title(query, "I0001"), _status(query, "I0001")) == ("Planted", "CANCELLED"), "kept by its stat"
    assert counts.opened == []
    exact = new_process(checkout, counts, exact=True)
    assert (_title(exact, "I0001"), _status(exact, "I0001")) == ("Issue I0001", "READY")
    assert counts.parsed == ["I0001.yaml"]
    assert len(counts.opened) == len(ALL)
    assert set(exact.issue_bytes) == {f"I000{n}" for n in range(1, 7)}


@pytest.mark.usefixtures("later")
def test_a_move_never_derives_from_a_stat_matched_entry(checkout: Path, counts: Counts) -> None:
    new_process(checkout, counts)
    _plant(checkout, "I0001.yaml", record={"cancelled": True}, digest=b"\0" * 16)
    assert _status(new_process(checkout, counts), "I0001") == "CANCELLED"
    _cache.forget()
    result = move_issue(_repo(checkout), "I0001", "start", by="svc/test", now=lambda: "2026-11-21T10:00:00Z")
    assert (result.from_, result.to) == ("READY", "ACTIVE")
    counts.clear()
    assert _status(read_snapshot(_repo(checkout)), "I0001") == "ACTIVE"
    assert counts.parsed == [], "the move's own read after the write stored the record it wrote"


@pytest.mark.usefixtures("later")
def test_a_move_reuses_parses_only_for_the_same_bytes(checkout: Path, counts: Counts) -> None:
    new_process(checkout, counts)
    counts.clear()
    move_issue(_repo(checkout), "I0001", "start", by="svc/test", now=lambda: "2026-11-21T10:00:00Z")
    assert counts.parsed == ["I0001.yaml"], "before the write every digest matched; after it, the one written"
    assert len(counts.opened) == 2 * len(ALL), "both reads of a move open every record"


@pytest.mark.usefixtures("later")
@pytest.mark.parametrize("number", ["size", "mtime_ns", "ino", "ctime_ns"])
def test_each_stat_number_decides_a_reuse(checkout: Path, counts: Counts, number: str) -> None:
    new_process(checkout, counts)
    held = _issue_entries(checkout)
    _plant(checkout, "I0001.yaml", record={"title": "Planted"}, **{number: getattr(held["I0001.yaml"], number) + 1})
    snapshot = new_process(checkout, counts)
    assert _title(snapshot, "I0001") == "Issue I0001"
    assert counts.parsed == ["I0001.yaml"]
    _plant(checkout, "I0001.yaml", record={"title": "Planted"}, **{number: getattr(held["I0001.yaml"], number) + 1})
    exact = new_process(checkout, counts, exact=True)
    assert _title(exact, "I0001") == "Issue I0001", "a move wants the stat too, not only the digest"
    assert counts.parsed == ["I0001.yaml"]


# --- a cache that is not to be used ----------------------------------------------------------------------------


def _valid_cache(root: Path) -> bytes:
    new_process(root)
    return (root / CACHE).read_bytes()


@pytest.mark.usefixtures("later")
@pytest.mark.parametrize("spoil", ["garbage", "truncated", "empty", "wrong format"])
def test_a_spoiled_cache_file_is_a_miss_and_is_replaced(checkout: Path, counts: Counts, spoil: str) -> None:
    valid = _valid_cache(checkout)
    if spoil == "garbage":
        spoiled = b"\x93not msgpack at all"
    elif spoil == "truncated":
        spoiled = valid[: len(valid) // 2]
    elif spoil == "empty":
        spoiled = b""
    else:
        spoiled = _cache._ENCODER.encode(msgspec.structs.replace(_held(checkout), format=99))
    (checkout / CACHE).write_bytes(spoiled)
    expected = new_process(checkout).plan
    new_process(checkout, counts)
    assert counts.parsed == [], "the first read after the spoiling replaced the file"
    (checkout / CACHE).write_bytes(spoiled)
    snapshot = new_process(checkout, counts)
    assert sorted(counts.parsed) == sorted(ALL)
    assert snapshot.plan == expected
    assert _names(checkout) == ALL


@pytest.mark.usefixtures("later")
@pytest.mark.parametrize("what", ["__version__", "_code_stamp"])
def test_another_svc_version_or_parse_code_is_a_miss(
    checkout: Path, counts: Counts, monkeypatch: pytest.MonkeyPatch, what: str
) -> None:
    ours, theirs = (__version__, "0.0.0-another") if what == "__version__" else (_cache._code_stamp, lambda: ())
    monkeypatch.setattr(_cache, what, theirs)
    new_process(checkout, counts)
    assert _names(checkout) == ALL
    monkeypatch.setattr(_cache, what, ours)
    counts.clear()
    read_snapshot(_repo(checkout))
    assert sorted(counts.parsed) == sorted(ALL), "what memory holds is theirs too"
    monkeypatch.setattr(_cache, what, theirs)
    new_process(checkout, counts)
    assert sorted(counts.parsed) == sorted(ALL), "the file holds ours now"


@pytest.mark.usefixtures("later")
def test_a_renamed_project_directory_is_a_miss(checkout: Path, counts: Counts) -> None:
    new_process(checkout, counts)
    os.rename(checkout / PROJECT, checkout / ".ai" / "repo" / "plan2")
    (checkout / ".ai" / "manifest.yaml").write_bytes(b"schema: ai-repository/v1\nsections:\n  project: repo/plan2\n")
    snapshot = new_process(checkout, counts)
    assert sorted(counts.parsed) == sorted(ALL), "same inodes and stat numbers, but another directory"
    assert {r.path for r in snapshot.records.issues} == {f".ai/repo/plan2/issues/I000{n}.yaml" for n in range(1, 7)}


@pytest.mark.usefixtures("later")
def test_a_symlinked_cache_file_is_never_read_and_is_replaced(checkout: Path, counts: Counts) -> None:
    valid = _valid_cache(checkout)
    inside = checkout / ".ai" / "local" / "cache" / "copy.msgpack"
    inside.write_bytes(valid)
    (checkout / CACHE).unlink()
    os.symlink("copy.msgpack", checkout / CACHE)
    new_process(checkout, counts)
    assert sorted(counts.parsed) == sorted(ALL), "a link, even to a valid file inside the checkout, is a miss"
    assert not (checkout / CACHE).is_symlink()
    assert inside.read_bytes() == valid


@pytest.mark.usefixtures("later")
def test_a_cache_file_linked_out_of_the_checkout_is_a_miss(checkout: Path, counts: Counts, tmp_path: Path) -> None:
    outside = tmp_path / "outside.msgpack"
    outside.write_bytes(_valid_cache(checkout))
    (checkout / CACHE).unlink()
    os.symlink(outside, checkout / CACHE)
    new_process(checkout, counts)
    assert sorted(counts.parsed) == sorted(ALL)
    assert outside.read_bytes() != b""
    assert not (checkout / CACHE).is_symlink()


@pytest.mark.usefixtures("later")
def test_a_cache_directory_linked_out_of_the_checkout_is_neither_read_nor_written(
    checkout: Path, counts: Counts, tmp_path: Path
) -> None:
    valid = _valid_cache(checkout)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "plan.msgpack").write_bytes(valid)
    before = os.stat(elsewhere / "plan.msgpack")
    shutil.rmtree(checkout / CACHE.parent)
    os.symlink(elsewhere, checkout / CACHE.parent)
    for _ in range(2):
        new_process(checkout, counts)
        assert sorted(counts.parsed) == sorted(ALL)
    after = os.stat(elsewhere / "plan.msgpack")
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert sorted(os.listdir(elsewhere)) == ["plan.msgpack"]


@pytest.mark.usefixtures("later")
@pytest.mark.parametrize("blocker", [CACHE, CACHE.parent, Path(".ai/local")])
def test_something_in_the_way_of_the_cache_is_a_miss_never_an_error(
    checkout: Path, counts: Counts, blocker: Path
) -> None:
    expected = new_process(checkout).plan
    shutil.rmtree(checkout / ".ai" / "local")
    if blocker == CACHE:
        (checkout / blocker).mkdir(parents=True)
    else:
        (checkout / blocker).parent.mkdir(parents=True, exist_ok=True)
        (checkout / blocker).write_bytes(b"a file where a directory belongs")
    for _ in range(2):
        snapshot = new_process(checkout, counts)
        assert snapshot.plan == expected
        assert sorted(counts.parsed) == sorted(ALL)


@pytest.mark.usefixtures("later")
def test_an_entry_that_cannot_be_encoded_is_left_out(
    checkout: Path, counts: Counts, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PyYAML's pure-Python loader reads `"\\ud800"` as a lone surrogate, which msgpack cannot encode."""

    def surrogate(kind: RecordKind, name: str, data: bytes, base: str = ".ai/repo/project") -> Parsed:
        counts.parsed.append(name)
        record, findings = parse_record(kind, name, data, base)
        if isinstance(record, IssueRecord) and record.id == "I0002":
            record = dataclasses.replace(record, title="\ud800 lone")
        return record, findings

    monkeypatch.setattr(_parallel, "parse_record", surrogate)
    snapshot = new_process(checkout, counts)
    assert _title(snapshot, "I0002") == "\ud800 lone"
    assert _names(checkout) == ALL - {"I0002.yaml"}
    new_process(checkout, counts)
    assert counts.parsed == ["I0002.yaml"]


# --- the derivation --------------------------------------------------------------------------------------------


def _without_cache(root: Path) -> dict[str, bytes]:
    """Every answer read with no cache at all (the cache file is put back as it was)."""
    saved = (root / CACHE).read_bytes() if (root / CACHE).exists() else None
    (root / CACHE).unlink(missing_ok=True)
    _cache.forget()
    answers = _answers(read_snapshot(_repo(root)))
    (root / CACHE).unlink(missing_ok=True)
    if saved is not None:
        (root / CACHE).write_bytes(saved)
    _cache.forget()
    return answers


def _reused(root: Path, counts: Counts) -> dict[str, bytes]:
    """The answers of a new process that reuses the stored derivation (and is checked to)."""
    snapshot = new_process(root, counts)
    assert (counts.parsed, counts.opened, counts.derived) == ([], [], 0), "the derivation was not reused"
    return _answers(snapshot)


def _derived_again(root: Path, counts: Counts, parsed: list[str]) -> dict[str, bytes]:
    """The answers of a new process that must derive again, having parsed exactly `parsed`."""
    snapshot = new_process(root, counts)
    assert counts.derived == 1, "the stored derivation was reused although an input changed"
    assert sorted(counts.parsed) == sorted(parsed)
    return _answers(snapshot)


@pytest.mark.usefixtures("later")
def test_a_query_reuses_the_derivation_and_answers_the_same_bytes(checkout: Path, counts: Counts) -> None:
    expected = _without_cache(checkout)
    first = _answers(new_process(checkout, counts))
    assert counts.derived == 1
    assert _has_derivation(checkout)
    counts.clear()
    assert _answers(read_snapshot(_repo(checkout))) == expected, "from memory, after the read that derived it"
    assert (counts.parsed, counts.opened, counts.derived) == ([], [], 0)
    assert _reused(checkout, counts) == first == expected
    counts.clear()
    assert _answers(read_snapshot(_repo(checkout))) == expected, "from memory"
    assert (counts.parsed, counts.opened, counts.derived) == ([], [], 0)
    assert str(checkout) not in str(expected)


@pytest.mark.usefixtures("later")
def test_the_records_of_a_reused_derivation_equal_a_fresh_parse(checkout: Path, counts: Counts) -> None:
    fresh = new_process(checkout, counts).records
    reused = new_process(checkout, counts).records
    assert counts.derived == 0
    assert [type(r) for r in reused.issues] != [IssueRecord] * len(reused.issues), "issue records decoded lazily"
    assert reused == fresh
    assert [r.title for r in reused.issues] == [r.title for r in fresh.issues]
    assert all(isinstance(r, IssueRecord) for r in reused.issues)
    assert hash(reused.issues[0]) == hash(fresh.issues[0])
    assert [dataclasses.astuple(r) for r in reused.issues] == [dataclasses.astuple(r) for r in fresh.issues]
    assert {r.raw["title"] for r in reused.issues} == {r.raw["title"] for r in fresh.issues}


@pytest.mark.usefixtures("later")
@pytest.mark.parametrize("how", ["size", "same size and mtime", "new file", "deleted file", "project", "milestone"])
def test_any_record_change_derives_again(checkout: Path, counts: Counts, how: str) -> None:
    new_process(checkout, counts)
    issues = checkout / PROJECT / "issues"
    parsed: list[str] = []
    if how == "size":
        (issues / "I0002.yaml").write_bytes(yaml_bytes(issue("I0002", title="A longer title", priority="p0")))
        parsed = ["I0002.yaml"]
    elif how == "same size and mtime":
        path = issues / "I0001.yaml"
        before = os.stat(path)
        path.write_bytes(path.read_bytes().replace(b"Issue I0001", b"Issue Z0001"))
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        parsed = ["I0001.yaml"]
    elif how == "new file":
        (issues / "I0007.yaml").write_bytes(yaml_bytes(issue("I0007", milestone="M1", priority="p0")))
        parsed = ["I0007.yaml"]
    elif how == "deleted file":
        (issues / "I0001.yaml").unlink()
    elif how == "project":
        (checkout / PROJECT / "project.yaml").write_bytes(b"name: renamed\nrepository: o/r\ndefault_branch: main\n")
        parsed = ["project.yaml"]
    else:
        (checkout / PROJECT / "milestones" / "M2.yaml").unlink()
    changed = _derived_again(checkout, counts, parsed)
    assert changed == _without_cache(checkout)
    assert _reused(checkout, counts) == changed, "the new derivation was stored"


def test_a_record_edited_within_two_seconds_derives_on_every_read_until_it_is_quiet(
    checkout: Path, counts: Counts, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_cache, "_now_ns", lambda: time.time_ns() + AHEAD_NS)
    new_process(checkout, counts)
    assert _has_derivation(checkout)
    path = checkout / PROJECT / "issues" / "I0002.yaml"
    path.write_bytes(path.read_bytes().replace(b"Issue I0002", b"Issue Y0002"))
    edited = os.stat(path)
    monkeypatch.setattr(_cache, "_now_ns", lambda: max(edited.st_mtime_ns, edited.st_ctime_ns) + RACY_NS - 1)
    for _ in range(2):
        racy = _derived_again(checkout, counts, ["I0002.yaml"])
        assert not _has_derivation(checkout), "a derivation from a racy file is never stored"
    assert racy == _without_cache(checkout)
    assert b"Issue Y0002" in racy["plan.model"]
    monkeypatch.setattr(_cache, "_now_ns", lambda: max(edited.st_mtime_ns, edited.st_ctime_ns) + RACY_NS)
    assert _derived_again(checkout, counts, ["I0002.yaml"]) == racy
    assert _has_derivation(checkout)
    assert _reused(checkout, counts) == racy


@pytest.mark.usefixtures("later")
def test_a_pending_ledger_line_is_never_answered_from_the_derivation(checkout: Path, counts: Counts) -> None:
    move_issue(_repo(checkout), "I0001", "start", by="svc/test", now=lambda: "2026-11-21T10:00:00Z")
    clean = _answers(new_process(checkout, counts))
    assert _reused(checkout, counts) == clean
    state = checkout / ".ai" / "local" / "state"
    ledger = (state / LEDGER).read_bytes()
    line = ledger.splitlines(keepends=True)[-1]
    (state / LEDGER).write_bytes(ledger[: -len(line)])
    write_pending(state, line)
    gap = _derived_again(checkout, counts, [])
    assert gap == _without_cache(checkout)
    assert b"ledger_gap" in gap["plan.validate"]
    assert _derived_again(checkout, counts, []) == gap, "nothing is stored while a line is pending"
    repair_ledger(_repo(checkout))
    assert not (state / PENDING).exists()
    repaired = _derived_again(checkout, counts, [])
    assert repaired == clean == _without_cache(checkout)
    assert _reused(checkout, counts) == clean


@pytest.mark.usefixtures("later")
def test_other_seal_domains_derive_again(
    checkout: Path, counts: Counts, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    stamp = "2026-11-20T09:00:00Z"
    other = "other.plan-event/v1"
    sealed = {"started_at": stamp, "started_event": seal("plan_start", "I0001", stamp, domain=other)}
    (checkout / PROJECT / "issues" / "I0001.yaml").write_bytes(yaml_bytes(issue("I0001", **sealed)))
    share = tmp_path / "share"
    (share / "plan").mkdir(parents=True)
    (share / "plan" / "seal-domains.yaml").write_text(f"domains: [{other}]\n", encoding="utf-8")
    monkeypatch.setenv("SVC_SHARE", str(tmp_path / "empty"))
    (tmp_path / "empty").mkdir()
    before = _answers(new_process(checkout, counts))
    assert _reused(checkout, counts) == before
    monkeypatch.setenv("SVC_SHARE", str(share))
    assert known_domains() == (other,)
    after = _derived_again(checkout, counts, [])
    assert after != before
    assert other.encode() in after["plan.validate"]
    assert after == _without_cache(checkout)
    assert _reused(checkout, counts) == after
    assert SEAL_SCHEMA not in known_domains()


@pytest.mark.usefixtures("later")
@pytest.mark.parametrize("spoil", ["garbage", "truncated", "issue entries", "issue entries and an edit", "deleted"])
def test_a_spoiled_derivation_is_a_miss(checkout: Path, counts: Counts, spoil: str) -> None:
    new_process(checkout, counts)
    held = _held(checkout)
    if spoil == "deleted":
        (checkout / CACHE).unlink()
    elif spoil.startswith("issue entries"):
        entries = [msgspec.Raw(b"\x93\xa1x\x01\x02")] * len(held.issues.entries)
        issues = msgspec.structs.replace(held.issues, entries=entries)
        (checkout / CACHE).write_bytes(_cache._ENCODER.encode(msgspec.structs.replace(held, issues=issues)))
    else:
        derived = bytes(held.derived)
        spoiled = b"\x95\xa1x" if spoil == "garbage" else derived[: len(derived) // 2]
        planted = msgspec.structs.replace(held, derived=msgspec.Raw(_cache._ENCODER.encode(spoiled)))
        (checkout / CACHE).write_bytes(_cache._ENCODER.encode(planted))
    if spoil.endswith("an edit"):
        (checkout / PROJECT / "issues" / "I0002.yaml").write_bytes(yaml_bytes(issue("I0002", title="Edited")))
    expected = _without_cache(checkout)
    answers = _answers(new_process(checkout, counts))
    assert answers == expected
    if spoil == "issue entries":
        assert counts.derived == 0, "the derivation holds; each issue looked up is parsed from its file"
    elif spoil == "issue entries and an edit":
        assert sorted(counts.parsed) == sorted(f"I000{n}.yaml" for n in range(1, 7)), "each from its file"
        assert _answers(new_process(checkout, counts)) == expected
        assert sorted(counts.parsed) == sorted(f"I000{n}.yaml" for n in (1, 3, 4, 5, 6)), "the dropped, stored now"
        assert _reused(checkout, counts) == expected


@pytest.mark.usefixtures("later")
def test_a_query_trusts_a_matching_derivation_a_move_never_does(checkout: Path, counts: Counts) -> None:
    new_process(checkout, counts)
    held = _held(checkout)
    stored = msgspec.msgpack.decode(held.derived, type=_cache._Derived)
    plan = msgspec.msgpack.decode(stored.plan, type=Plan)
    planted = msgspec.structs.replace(plan, project=msgspec.structs.replace(plan.project, name="Planted"))
    derived = msgspec.structs.replace(stored, plan=msgspec.Raw(_cache._ENCODER.encode(planted)))
    (checkout / CACHE).write_bytes(
        _cache._ENCODER.encode(msgspec.structs.replace(held, derived=msgspec.Raw(_cache._ENCODER.encode(derived))))
    )
    assert new_process(checkout, counts).plan.project.name == "Planted", "kept by the records' stat numbers"
    exact = new_process(checkout, counts, exact=True)
    assert exact.plan.project.name == "demo"
    assert counts.derived == 1
    result = move_issue(_repo(checkout), "I0001", "start", by="svc/test", now=lambda: "2026-11-21T10:00:00Z")
    assert result.to == "ACTIVE"
    assert new_process(checkout, counts).plan.project.name == "demo", "the move's write derived again"


# --- nothing depends on the cache ------------------------------------------------------------------------------


def _same_record(fresh: Any, decoded: Any) -> None:
    assert type(decoded) is type(fresh)
    if fresh is None:
        return
    names = (
        fresh.__struct_fields__ if isinstance(fresh, msgspec.Struct) else [f.name for f in dataclasses.fields(fresh)]
    )
    for name in names:
        mine, theirs = getattr(fresh, name), getattr(decoded, name)
        assert (name, type(theirs), theirs) == (name, type(mine), mine)


def test_a_record_decoded_from_the_cache_equals_a_fresh_parse_field_by_field(corpus: Path) -> None:
    project = corpus / PROJECT
    files: list[tuple[RecordKind, Path]] = [("project", project / "project.yaml")]
    files += [("milestone", p) for p in sorted((project / "milestones").glob("*.yaml"))]
    files += [("issue", p) for p in sorted((project / "issues").glob("*.yaml"))]
    kept = 0
    for kind, path in files:
        record, findings = parse_record(kind, path.name, path.read_bytes())
        decoded = _roundtrip(kind, _cache._Entry(path.name, 1, 2, 3, 4, b"d" * 16, record, findings))
        _same_record(record, decoded.record)
        assert decoded.findings == findings
        kept += record is not None
    assert kept == 1 + 65 + 406


def _roundtrip(kind: RecordKind, entry: Any) -> Any:
    """`entry` through the cache file's own encoder and decoder."""
    empty: _cache._Index[msgspec.Raw] = _cache._Index(names=[], keys=[], entries=[])
    lists = {"project": empty, "milestones": empty, "issues": empty}
    one = _cache._Index(names=[entry.name], keys=[entry.key], entries=[msgspec.Raw(_cache._ENCODER.encode(entry))])
    lists[{"project": "project", "milestone": "milestones", "issue": "issues"}[kind]] = one
    data = _cache._ENCODER.encode(_cache._CacheFile(format=2, token=b"", derived=_cache._NIL, **lists))
    held = _cache._decoders().file.decode(data)
    index = next(i for i in (held.project, held.milestones, held.issues) if i.names)
    return _cache._decoders().entries[kind].decode(index.entries[0])


def _answers(snapshot: Snapshot) -> dict[str, bytes]:
    """Every plan query's answer (per milestone, and `plan.record` per id), as the surfaces encode it."""
    plan = snapshot.plan
    encode = msgspec.json.encode
    out = {
        "plan.model": encode(plan),
        "plan.issues": encode(issue_list(plan)),
        "plan.issues?status=READY": encode(issue_list(plan, status="READY")),
        "plan.next": encode(next_issue(plan)),
        "plan.next?records": encode(next_issue(plan, None, snapshot.records, known_domains())),
        "plan.roadmap": encode(roadmap(plan)),
        "plan.status": encode(status_report(plan)),
        "plan.validate": encode(validation(plan)),
        "plan.waves": encode(wave_report(plan)),
    }
    for m in plan.milestones:
        out[f"plan.issues?milestone={m.id}"] = encode(issue_list(plan, milestone=m.id))
        out[f"plan.next?milestone={m.id}"] = encode(next_issue(plan, m.id))
        out[f"plan.status?milestone={m.id}"] = encode(status_report(plan, m.id))
        out[f"plan.waves?milestone={m.id}"] = encode(wave_report(plan, m.id))
    for record_id in [m.id for m in snapshot.records.milestones] + [i.id for i in snapshot.records.issues]:
        out[f"plan.record?id={record_id}"] = encode(record_view(plan, snapshot.records, record_id))
    return out


def test_the_answers_cover_every_plan_query() -> None:
    queries = {c.id for c in CAPABILITIES if c.read is not None}
    empty = Snapshot(records=load_records(None, [], []), plan=derive(load_records(None, [], [])))
    assert {key.split("?")[0] for key in _answers(empty)} | {"plan.record"} == queries


def _loaded(root: Path, base: str = ".ai/repo/project") -> dict[str, bytes]:
    """The answers of a plan loaded straight from the files' bytes: no cache of any kind."""
    project = root / PROJECT

    def files(sub: str) -> list[tuple[str, bytes]]:
        return [(p.name, p.read_bytes()) for p in (project / sub).iterdir() if not p.name.startswith(".")]

    records = load_records((project / "project.yaml").read_bytes(), files("milestones"), files("issues"), base=base)
    return _answers(Snapshot(records=records, plan=derive(records)))


def _every_way(root: Path, counts: Counts) -> dict[str, dict[str, bytes]]:
    """The answers without the cache file, with it (a new process), from memory, after deleting it, exactly."""
    (root / CACHE).unlink(missing_ok=True)
    ways = {"without": _answers(new_process(root, counts))}
    parsed_without = len(counts.parsed)
    ways["with"] = _answers(new_process(root, counts))
    assert counts.parsed == [], "the comparison is only worth something when the cache was used"
    assert parsed_without > 0
    ways["in memory"] = _answers(read_snapshot(_repo(root)))
    (root / CACHE).unlink()
    ways["after deleting it"] = _answers(new_process(root, counts))
    ways["exact"] = _answers(new_process(root, counts, exact=True))
    ways["loaded"] = _loaded(root)
    return ways


def _all_equal(ways: dict[str, dict[str, bytes]]) -> None:
    reference = ways["without"]
    for way, answers in ways.items():
        assert answers.keys() == reference.keys(), way
        differing = [key for key in answers if answers[key] != reference[key]]
        assert differing == [], f"{way}: {differing[:5]}"


@pytest.fixture
def own_corpus(corpus: Path, tmp_path: Path) -> Path:
    """This test's own copy of the corpus's records (the test writes and deletes caches in it)."""
    root = tmp_path / "corpus"
    shutil.copytree(corpus / ".ai", root / ".ai", ignore=shutil.ignore_patterns("local"))
    return root


@pytest.mark.usefixtures("later")
def test_every_answer_is_the_same_with_and_without_the_cache_on_the_corpus(own_corpus: Path, counts: Counts) -> None:
    ways = _every_way(own_corpus, counts)
    _all_equal(ways)
    assert len(ways["with"]) > 400
    assert str(own_corpus) not in str(ways)


async def test_the_capabilities_answer_the_same_with_and_without_the_cache(
    own_corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_cache, "_now_ns", lambda: time.time_ns() + AHEAD_NS)
    cases = [(c, e.input) for c in CAPABILITIES if c.read is not None for e in c.examples]
    cases += [(c, {"id": i}) for c in CAPABILITIES if c.id == "plan.record" for i in ("M20", "I0821", "I0823")]

    async def answers() -> dict[str, bytes]:
        _cache.forget()
        out: dict[str, bytes] = {}
        async with open_service(_repo(own_corpus), surface="cli", watch=False) as ex:
            ctx = ex.context(Actor(kind="cli", pid=os.getpid()))
            for cap, given_input in cases:
                key = f"{cap.id} {given_input}"
                try:
                    out[key] = ex.encode(await ex.invoke(cap, ex.decode_value(cap, given_input), ctx))
                except SvcError as exc:
                    out[key] = f"{type(exc).__name__}: {exc}".encode()
        return out

    without = await answers()
    assert (own_corpus / CACHE).is_file()
    with_it = await answers()
    (own_corpus / CACHE).unlink()
    after_deleting = await answers()
    assert with_it == without == after_deleting
    assert any(key.startswith("plan.record") and value.startswith(b"{") for key, value in without.items())
    assert str(own_corpus).encode() not in b"".join(without.values())


def _write(project: Path, files: dict[str, bytes]) -> set[str]:
    """Make `project`'s records exactly `files` (`milestones/<n>`, `issues/<n>`); the names written or changed."""
    touched: set[str] = set()
    for sub in ("milestones", "issues"):
        folder = project / sub
        folder.mkdir(parents=True, exist_ok=True)
        for path in folder.iterdir():
            if f"{sub}/{path.name}" not in files:
                path.unlink()
    for key, data in files.items():
        path = project / key
        if not path.exists() or path.read_bytes() != data:
            path.write_bytes(data)
            touched.add(path.name)
    return touched


def _files(plan: Any) -> dict[str, bytes]:
    milestones, issues = plan
    return {**{f"milestones/{n}": d for n, d in milestones}, **{f"issues/{n}": d for n, d in issues}}


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(first=plans(), second=plans())
def test_every_answer_is_the_same_with_and_without_the_cache_on_random_plans(
    first: Any, second: Any, counts: Counts, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_cache, "_now_ns", lambda: time.time_ns() + AHEAD_NS)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        project = root / PROJECT
        project.mkdir(parents=True)
        (project / "project.yaml").write_bytes(b"name: random\nrepository: o/random\ndefault_branch: main\n")
        _write(project, _files(first))
        _all_equal(_every_way(root, counts))
        touched = _write(project, _files(second))
        snapshot = new_process(root, counts)
        assert sorted(counts.parsed) == sorted(touched), "exactly the files written since"
        assert _answers(snapshot) == _loaded(root)
        _all_equal(_every_way(root, counts))
