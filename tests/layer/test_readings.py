"""The reading cache: a build parses only bytes it has not read before, in this process or an earlier one."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from svc.layer import ObjectIndex, Repository, _readings
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
