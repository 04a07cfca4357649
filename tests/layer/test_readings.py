"""The reading cache: a build parses only bytes it has not read before, in this process or an earlier one."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from svc.layer import ObjectIndex, Repository, _objects, _readings, stat_key
from svc.layer._files import write_atomic
from svc.layer._objects import _Builder
from svc.layer._readings import CACHE_FILE, forget
from tests.conftest import make_checkout

ISSUE = ".ai/repo/project/issues/I0001.yaml"


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The paths each build parses (read_bytes calls), cleared of readings held in memory before and after."""
    seen: list[str] = []
    original = _Builder.read_bytes

    def counting(self: _Builder, path: str, *args: object) -> object:
        seen.append(path)
        return original(self, path, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(_Builder, "read_bytes", counting)
    forget()
    yield seen
    forget()


def _build(root: Path) -> ObjectIndex:
    return ObjectIndex.build(Repository.discover(root))


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def test_a_rebuild_parses_only_the_files_whose_bytes_changed(tmp_path: Path, parsed: list[str]) -> None:
    root = make_checkout(tmp_path / "c")
    first = _build(root)
    assert len(parsed) > 20
    parsed.clear()
    issue = root / ISSUE
    issue.write_text(issue.read_text(encoding="utf-8").replace("title:", "title: Changed", 1), encoding="utf-8")
    again = _build(root)
    assert parsed == [ISSUE]
    changed = again.get("svc://issue/I0001")
    assert changed is not None
    assert (changed.title or "").startswith("Changed")
    assert [o.uri for o in again.objects] == [o.uri for o in first.objects]


def test_a_new_process_starts_from_the_cache_file_and_reads_the_same_objects(tmp_path: Path, parsed: list[str]) -> None:
    root = make_checkout(tmp_path / "c")
    first = _build(root)
    assert (root / ".ai" / CACHE_FILE).is_file()
    assert (root / ".ai/local/.gitignore").is_file()
    forget()
    parsed.clear()
    again = _build(root)
    assert parsed == []
    assert again.objects == first.objects
    assert again.diagnostics == first.diagnostics
    assert again.fingerprint == first.fingerprint


def test_the_cache_file_is_written_only_when_a_reading_changed(
    tmp_path: Path, parsed: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_checkout(tmp_path / "c")
    writes: list[Path] = []
    original = write_atomic

    def counting(path: Path, data: bytes, **kwargs: bool) -> None:
        writes.append(path)
        original(path, data, **kwargs)

    monkeypatch.setattr(_readings, "write_atomic", counting)
    _build(root)
    assert writes == [root / ".ai" / CACHE_FILE]
    forget()
    _build(root)
    _build(root)
    assert len(writes) == 1
    (root / ISSUE).write_text("id: I0001\ntitle: Rewritten\n", encoding="utf-8")
    _build(root)
    assert len(writes) == 2
    (root / ISSUE).unlink()
    _build(root)
    assert len(writes) == 3


def test_a_cache_file_git_tracks_is_never_read(tmp_path: Path, parsed: list[str]) -> None:
    root = make_checkout(tmp_path / "c")
    _build(root)
    _git(root, "add", "-f", f".ai/{CACHE_FILE}")
    forget()
    parsed.clear()
    _build(root)
    assert ISSUE in parsed


@pytest.mark.parametrize("content", [b"", b"\x93garbage", b"\x85\xa6format\x01"])
def test_a_broken_cache_file_is_a_miss_and_is_replaced(tmp_path: Path, parsed: list[str], content: bytes) -> None:
    root = make_checkout(tmp_path / "c")
    first = _build(root)
    cache = root / ".ai" / CACHE_FILE
    cache.write_bytes(content)
    forget()
    parsed.clear()
    again = _build(root)
    assert ISSUE in parsed
    assert again.objects == first.objects
    forget()
    parsed.clear()
    _build(root)
    assert parsed == []


def test_a_cache_file_of_another_kinds_file_is_a_miss(tmp_path: Path, parsed: list[str]) -> None:
    root = make_checkout(tmp_path / "c")
    _build(root)
    kinds = root / ".ai/repo/knowledge/kinds.yaml"
    kinds.parent.mkdir(parents=True, exist_ok=True)
    kinds.write_text("schema: svc-kinds/v1\ndeclared: []\nkinds: {}\n", encoding="utf-8")
    forget()
    parsed.clear()
    _build(root)
    assert ISSUE in parsed


def test_a_cache_that_cannot_be_written_leaves_the_build_whole(tmp_path: Path, parsed: list[str]) -> None:
    root = make_checkout(tmp_path / "c")
    (root / ".ai/local").mkdir(parents=True, exist_ok=True)
    (root / ".ai/local/cache").write_text("a file where the cache directory would be\n", encoding="utf-8")
    index = _build(root)
    assert index.state == "ok"
    assert index.get("svc://issue/I0001") is not None
    assert (root / ".ai/local/cache").is_file()


def test_a_symlinked_cache_file_is_not_followed_out_of_the_checkout(tmp_path: Path, parsed: list[str]) -> None:
    root = make_checkout(tmp_path / "c")
    _build(root)
    cache = root / ".ai" / CACHE_FILE
    outside = tmp_path / "elsewhere.msgpack"
    os.replace(cache, outside)
    cache.symlink_to(outside)
    forget()
    parsed.clear()
    _build(root)
    assert ISSUE in parsed


# --- kept by stat numbers ---------------------------------------------------------------------------------------


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths each build opens (`_Reader.read` calls)."""
    seen: list[str] = []
    original = _objects._Reader.read

    def counting(self: _objects._Reader, path: str) -> object:
        seen.append(path)
        return original(self, path)

    monkeypatch.setattr(_objects._Reader, "read", counting)
    return seen


@pytest.fixture
def quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    """The racy rule's clock 10 s ahead: every file the test writes is quiet enough to be kept by its numbers."""
    monkeypatch.setattr(_readings, "_now_ns", lambda: time.time_ns() + 10 * 10**9)


@pytest.mark.usefixtures("quiet")
def test_a_rebuild_opens_only_the_files_whose_stat_numbers_changed(
    tmp_path: Path, parsed: list[str], opened: list[str]
) -> None:
    root = make_checkout(tmp_path / "c")
    first = _build(root)
    assert len(opened) > 20
    opened.clear()
    parsed.clear()
    assert _build(root).objects == first.objects
    assert opened == []
    assert parsed == []
    forget()  # a new process: the same from the cache file
    assert _build(root).objects == first.objects
    assert opened == []
    issue = root / ISSUE
    issue.write_text(issue.read_text(encoding="utf-8").replace("title:", "title: Changed", 1), encoding="utf-8")
    changed = _build(root).get("svc://issue/I0001")
    assert opened == [ISSUE]
    assert parsed == [ISSUE]
    assert changed is not None
    assert (changed.title or "").startswith("Changed")


@pytest.mark.usefixtures("quiet")
@pytest.mark.parametrize("number", ["size", "mtime", "inode", "ctime"])
def test_each_stat_number_decides_whether_a_file_is_opened(
    tmp_path: Path, parsed: list[str], opened: list[str], number: str
) -> None:
    root = make_checkout(tmp_path / "c")
    issue = root / ISSUE
    _build(root)
    before = os.stat(issue)
    text = issue.read_bytes()
    if number == "size":
        issue.write_bytes(text + b"# one more line\n")
    elif number == "mtime":
        os.utime(issue, ns=(before.st_atime_ns, before.st_mtime_ns + 1))
    elif number == "inode":
        replacement = issue.with_name("replacement.tmp")
        replacement.write_bytes(text)
        os.utime(replacement, ns=(before.st_atime_ns, before.st_mtime_ns))
        os.replace(replacement, issue)
    else:
        os.chmod(issue, before.st_mode ^ 0o001)  # the ctime alone moves
    assert stat_key(os.stat(issue)) != stat_key(before)
    opened.clear()
    parsed.clear()
    _build(root)
    assert opened == [ISSUE]
    assert parsed == ([ISSUE] if number == "size" else []), "the same bytes are not parsed again"


@pytest.mark.usefixtures("quiet")
def test_an_edit_that_restores_size_and_mtime_is_caught_by_the_ctime(
    tmp_path: Path, parsed: list[str], opened: list[str]
) -> None:
    root = make_checkout(tmp_path / "c")
    issue = root / ISSUE
    text = issue.read_text(encoding="utf-8")
    edited = text.replace("title:", "title: X", 1)
    issue.write_text(edited, encoding="utf-8")  # the edit below keeps this size
    _build(root)
    before = os.stat(issue)
    issue.write_text(edited.replace("title: X", "title: Y", 1), encoding="utf-8")
    os.utime(issue, ns=(before.st_atime_ns, before.st_mtime_ns))
    opened.clear()
    changed = _build(root).get("svc://issue/I0001")
    assert opened == [ISSUE]
    assert changed is not None
    assert (changed.title or "").startswith("Y")


def test_a_file_changed_within_two_seconds_is_opened_at_every_build(
    tmp_path: Path, parsed: list[str], opened: list[str]
) -> None:
    root = make_checkout(tmp_path / "c")
    _build(root)
    count = len(opened)
    opened.clear()
    parsed.clear()
    _build(root)
    assert len(opened) == count, "files written just now are never kept by their numbers"
    assert parsed == [], "their bytes are still known"
