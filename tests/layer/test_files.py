"""Atomic writes, and the removal of the temp files a killed writer leaves behind."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from svc.layer import remove_stale_temps, temp_beside, write_all, write_atomic


def _left_by_a_killed_write(directory: Path, name: str) -> Path:
    """A temp file exactly as `write_atomic` creates it, never renamed."""
    fd, tmp = temp_beside(directory / name)
    os.write(fd, b"half a record")
    os.close(fd)
    return Path(tmp)


def test_only_stale_temp_files_of_write_atomic_are_removed(tmp_path: Path) -> None:
    write_atomic(tmp_path / "I0001.yaml", b"id: I0001\n")
    stale = [_left_by_a_killed_write(tmp_path, "I0001.yaml"), _left_by_a_killed_write(tmp_path, "I0002.yaml")]
    kept = [
        tmp_path / ".I0001.yaml.swp",
        tmp_path / ".I0001.yaml.123.tmp",
        tmp_path / ".notes.ABCDEFGH.tmp",
        tmp_path / "I0003.yaml.abcdefgh.tmp",
    ]
    for path in kept:
        path.write_bytes(b"someone else's")
    (tmp_path / ".dir.abcdefgh.tmp").mkdir()
    outside = tmp_path / "outside"
    outside.write_bytes(b"not ours")
    (tmp_path / ".link.abcdefgh.tmp").symlink_to(outside)
    removed = remove_stale_temps(tmp_path, before_ns=time.time_ns() + 10**9)
    assert sorted(removed) == sorted(stale)
    assert not any(path.exists() for path in stale)
    assert all(path.exists() for path in kept)
    assert (tmp_path / ".dir.abcdefgh.tmp").is_dir()
    assert (tmp_path / ".link.abcdefgh.tmp").is_symlink()
    assert (tmp_path / "I0001.yaml").read_bytes() == b"id: I0001\n"


def test_a_temp_file_newer_than_the_running_write_is_left_alone(tmp_path: Path) -> None:
    """A temp file written after the caller's write began is another writer's, still writing."""
    began = time.time_ns()
    live = _left_by_a_killed_write(tmp_path, "I0001.yaml")
    os.utime(live, ns=(began + 10**9, began + 10**9))
    assert remove_stale_temps(tmp_path, before_ns=began) == []
    assert live.exists()


def test_a_missing_directory_has_nothing_to_remove(tmp_path: Path) -> None:
    assert remove_stale_temps(tmp_path / "absent", before_ns=time.time_ns()) == []


def test_a_temp_file_is_new_private_and_named_for_its_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "I0001.yaml"
    taken = tmp_path / ".I0001.yaml.00000000.tmp"
    taken.write_bytes(b"someone's")
    (tmp_path / ".I0001.yaml.01010101.tmp").symlink_to(tmp_path / "elsewhere")
    draws = iter([b"\0\0\0\0", b"\1\1\1\1", b"\2\2\2\2"])
    monkeypatch.setattr(os, "urandom", lambda n: next(draws))
    fd, tmp = temp_beside(target)
    os.close(fd)
    assert tmp == str(tmp_path / ".I0001.yaml.02020202.tmp"), "the taken name and the link are passed over"
    assert taken.read_bytes() == b"someone's"
    assert not (tmp_path / "elsewhere").exists()
    assert stat.S_IMODE(os.stat(tmp).st_mode) == 0o600


def test_a_temp_file_name_is_given_up_after_every_try_was_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".x.00000000.tmp").write_bytes(b"")
    monkeypatch.setattr(os, "urandom", lambda n: b"\0\0\0\0")
    with pytest.raises(FileExistsError, match="no free temp file name beside x"):
        temp_beside(tmp_path / "x")


def test_write_all_writes_every_byte_when_a_write_is_short(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.write
    calls: list[int] = []

    def short(fd: int, data: bytes | memoryview) -> int:
        calls.append(len(data))
        return real(fd, bytes(data[:3]))

    data = bytes(range(256)) * 4
    fd = os.open(tmp_path / "out", os.O_WRONLY | os.O_CREAT, 0o600)
    monkeypatch.setattr(os, "write", short)
    try:
        write_all(fd, data)
    finally:
        monkeypatch.undo()
        os.close(fd)
    assert (tmp_path / "out").read_bytes() == data
    assert len(calls) == -(-len(data) // 3)
