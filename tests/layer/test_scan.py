"""`scan_repository_dir`: `read_repository_dir` that asks before opening a regular file, and opens nothing it keeps."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from svc.layer import ScannedFile, Unreadable, read_repository_dir, scan_repository_dir
from svc.layer import _read as read_module


def _yaml(name: str) -> bool:
    return name.endswith(".yaml")


@pytest.fixture
def sub(tmp_path: Path) -> Path:
    """`repo/sub` holding `a.yaml`, `b.yaml` and a file the selection skips."""
    folder = tmp_path / "repo" / "sub"
    folder.mkdir(parents=True)
    (folder / "a.yaml").write_bytes(b"id: a\n")
    (folder / "b.yaml").write_bytes(b"id: bb\n")
    (folder / "notes.txt").write_bytes(b"skipped")
    return folder


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the files the reading rule reads from an open descriptor, in order."""
    names: list[str] = []
    real = read_module._read_fd_stat

    def spy(fd: int, name: str, limit: int) -> tuple[os.stat_result, bytes]:
        names.append(name)
        return real(fd, name, limit)

    monkeypatch.setattr(read_module, "_read_fd_stat", spy)
    return names


def _scan(root: Path, folder: Path, reuse: Callable[[str, os.stat_result], bool]) -> dict[str, ScannedFile]:
    return {scanned.name: scanned for scanned in scan_repository_dir(root, folder, _yaml, reuse)}


def test_a_kept_file_is_not_opened_and_comes_with_its_lstat(sub: Path, opened: list[str]) -> None:
    asked: dict[str, os.stat_result] = {}

    def reuse(name: str, st: os.stat_result) -> bool:
        asked[name] = st
        return name == "a.yaml"

    scanned = _scan(sub.parent, sub, reuse)
    assert set(asked) == {"a.yaml", "b.yaml"}, "every selected regular file is asked about, nothing else"
    for name in ("a.yaml", "b.yaml"):
        assert (asked[name].st_ino, asked[name].st_size) == (
            os.lstat(sub / name).st_ino,
            len((sub / name).read_bytes()),
        )
    assert scanned["a.yaml"] == ScannedFile("a.yaml", asked["a.yaml"], None)
    assert opened == ["sub/b.yaml"], "the kept file is never opened"
    b = scanned["b.yaml"]
    assert b.data == b"id: bb\n"
    assert b.stat is not None
    assert (b.stat.st_ino, b.stat.st_size, b.stat.st_mtime_ns) == (
        asked["b.yaml"].st_ino,
        asked["b.yaml"].st_size,
        asked["b.yaml"].st_mtime_ns,
    )


def test_nothing_kept_reads_what_read_repository_dir_reads(sub: Path) -> None:
    os.symlink("a.yaml", sub / "alias.yaml")
    os.symlink("/etc/passwd", sub / "passwd.yaml")
    (sub / "dir.yaml").mkdir()
    root = sub.parent

    def shown(data: Any) -> Any:
        return (data.path, data.reason) if isinstance(data, Unreadable) else data

    expected = {name: shown(data) for name, data in read_repository_dir(root, sub, _yaml)}
    scanned = _scan(root, sub, lambda name, st: False)
    assert {name: shown(s.data) for name, s in scanned.items()} == expected
    assert len(expected) == 5


async def test_links_and_other_kinds_are_never_asked_about(sub: Path) -> None:
    os.symlink("a.yaml", sub / "alias.yaml")
    os.mkfifo(sub / "pipe.yaml")
    (sub / "dir.yaml").mkdir()
    (sub / "big.yaml").write_bytes(b"x" * 20)
    asked: list[str] = []

    def reuse(name: str, st: os.stat_result) -> bool:
        asked.append(name)
        return True

    def scan() -> dict[str, ScannedFile]:
        return {s.name: s for s in scan_repository_dir(sub.parent, sub, _yaml, reuse, limit=10)}

    with trio.fail_after(10):
        scanned = await trio.to_thread.run_sync(scan, abandon_on_cancel=True)
    assert sorted(asked) == ["a.yaml", "b.yaml"]
    assert scanned["alias.yaml"] == ScannedFile("alias.yaml", None, b"id: a\n"), "a link is read by its path"
    refusals = {name: s.data for name, s in scanned.items() if isinstance(s.data, Unreadable)}
    assert {name: (e.path, e.reason) for name, e in refusals.items()} == {
        "pipe.yaml": ("sub/pipe.yaml", "not a regular file (a FIFO)"),
        "dir.yaml": ("sub/dir.yaml", "not a regular file (a directory)"),
        "big.yaml": ("sub/big.yaml", "20 bytes, over the 10 bytes limit"),
    }
    assert refusals["big.yaml"].too_large
    assert all(scanned[name].stat is None for name in refusals)


def test_a_refused_or_absent_directory_raises_like_read_repository_dir(sub: Path, tmp_path: Path) -> None:
    root = sub.parent
    with pytest.raises(FileNotFoundError):
        list(scan_repository_dir(root, root / "absent", _yaml, lambda name, st: False))
    with pytest.raises(Unreadable, match="not a directory"):
        list(scan_repository_dir(root, sub / "a.yaml", _yaml, lambda name, st: False))
    os.symlink(tmp_path, root / "out")
    with pytest.raises(Unreadable, match="leaving the repository"):
        list(scan_repository_dir(root, root / "out", _yaml, lambda name, st: False))


def test_an_entry_removed_after_the_listing_is_skipped(sub: Path) -> None:
    def reuse(name: str, st: os.stat_result) -> bool:
        if name == "a.yaml":
            (sub / "b.yaml").unlink(missing_ok=True)
        else:
            (sub / "a.yaml").unlink(missing_ok=True)
        return False

    scanned = _scan(sub.parent, sub, reuse)
    assert len(scanned) == 1, "the file the other's question removed is skipped, not an error"
