"""Parsing many records with a helper process (`svc.plan._parallel`): the same parses, whoever made them; and
the plan's msgpack decoders, made on first use, once, under a lock."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from svc.plan import _cache, _parallel
from svc.plan._load import Parsed, RecordKind, parse_record
from tests.plan._records import done, issue, yaml_bytes

BASE = ".ai/repo/project"
TIMEOUT = 60


def _files(count: int) -> list[tuple[str, bytes]]:
    """`count` issue files, some of them with problems (findings, a record left out)."""
    files = [
        (f"I{n:04d}.yaml", yaml_bytes(issue(f"I{n:04d}", **(done(f"I{n:04d}") if n % 3 == 0 else {}))))
        for n in range(count)
    ]
    files[3] = ("I0003.yaml", b"id: I0003\nunknown_key: 1\n")
    files[5] = ("I0005.yaml", b"- not a mapping\n")
    return files


def _inline(files: list[tuple[str, bytes]]) -> list[Parsed]:
    return [parse_record("issue", name, data, BASE) for name, data in files]


def _same(got: list[Parsed], want: list[Parsed]) -> None:
    """Equal parses, the authored mapping (left out of a record's equality) included."""
    assert got == want
    assert [getattr(r, "raw", None) for r, _ in got] == [getattr(r, "raw", None) for r, _ in want]


def _frames_file(tmp_path: Path, files: list[tuple[str, bytes]], tamper: Callable[[list[bytes]], list[bytes]]) -> int:
    """A descriptor of a file holding the helper's frames for `files` (changed by `tamper`), as a pipe would."""
    frames: list[bytes] = []
    _parallel._help("issue", files, BASE, frames.append)
    path = tmp_path / "frames"
    path.write_bytes(b"".join(tamper(frames)))
    return os.open(path, os.O_RDONLY)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names this process parses."""
    names: list[str] = []

    def parse(kind: RecordKind, name: str, data: bytes, base: str = BASE) -> Parsed:
        names.append(name)
        return parse_record(kind, name, data, base)

    monkeypatch.setattr(_parallel, "parse_record", parse)
    return names


def test_a_helper_that_did_everything_leaves_this_process_one_chunk(tmp_path: Path, counted: list[str]) -> None:
    files = _files(200)
    want = _inline(files)
    fd = _frames_file(tmp_path, files, lambda frames: frames)
    counted.clear()
    got = _parallel._shared("issue", files, BASE, _parallel._Helper(fd))
    os.close(fd)
    _same(got, want)
    assert counted == [name for name, _ in files[: _parallel.CHUNK]]


@pytest.mark.parametrize(
    "tamper",
    [
        pytest.param(lambda frames: [], id="nothing"),
        pytest.param(lambda frames: frames[:3], id="stopped early"),
        pytest.param(lambda frames: [frames[0], frames[2], frames[1]], id="a chunk skipped"),
        pytest.param(lambda frames: [frames[0][:-7]], id="a frame cut short"),
        pytest.param(lambda frames: [frames[0][:4] + b"\xc1" * (len(frames[0]) - 4)], id="not msgpack"),
        pytest.param(lambda frames: [frames[0][:4] + frames[1][4:]], id="the wrong chunk"),
    ],
)
def test_whatever_a_helper_sends_the_parses_are_the_same(
    tmp_path: Path, counted: list[str], tamper: Callable[[list[bytes]], list[bytes]]
) -> None:
    files = _files(200)
    want = _inline(files)
    fd = _frames_file(tmp_path, files, tamper)
    counted.clear()
    got = _parallel._shared("issue", files, BASE, _parallel._Helper(fd))
    os.close(fd)
    _same(got, want)
    assert len(counted) > _parallel.CHUNK  # the help refused was made up here


def test_the_helper_process_sends_the_parses_of_its_input(tmp_path: Path) -> None:
    files = _files(100)
    given = tmp_path / "input"
    given.write_bytes(_parallel._ENCODER.encode(("issue", BASE, files)))
    with given.open("rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-m", "svc.plan._parallel"], stdin=stdin, capture_output=True, check=True, timeout=TIMEOUT
        )
    decoder = _parallel._frames("issue")
    parsed: dict[int, Parsed] = {}
    out, firsts = done.stdout, []
    while out:
        size = int.from_bytes(out[:4], "big")
        first, parses = decoder.decode(out[4 : 4 + size])
        firsts.append(first)
        parsed.update({first + k: p for k, p in enumerate(parses)})
        out = out[4 + size :]
    assert firsts == sorted(firsts, reverse=True)  # from the back
    _same([parsed[k] for k in range(len(files))], _inline(files))


def test_many_records_are_shared_with_a_helper_and_parsed_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[subprocess.Popen[bytes]] = []
    real = subprocess.Popen

    def popen(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        process = real(*args, **kwargs)
        started.append(process)
        return process

    monkeypatch.setattr(_parallel, "SPAWN_MIN", 100)
    monkeypatch.setattr(subprocess, "Popen", popen)
    files = _files(400)
    _same(_parallel.parse_many("issue", files, BASE), _inline(files))
    assert len(started) == 1
    assert started[0].returncode is not None, "the helper is reaped before the parses are answered"
    _same(_parallel.parse_many("issue", files[:99], BASE), _inline(files[:99]))
    assert len(started) == 1, "fewer than SPAWN_MIN records are parsed here"


def test_a_helper_that_cannot_start_is_no_help(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_parallel, "SPAWN_MIN", 10)
    files = _files(60)
    for executable in ("", "/nonexistent/python"):
        monkeypatch.setattr(sys, "executable", executable)
        _same(_parallel.parse_many("issue", files, BASE), _inline(files))


def test_a_helper_without_a_temp_file_is_no_help(monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError("no temp directory")

    monkeypatch.setattr(_parallel, "SPAWN_MIN", 10)
    monkeypatch.setattr(tempfile, "TemporaryFile", refused)
    files = _files(60)
    _same(_parallel.parse_many("issue", files, BASE), _inline(files))


def _made_under(lock: Any, monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether `lock` was held at each msgspec decoder made from now on."""
    seen: list[bool] = []
    real = msgspec.msgpack.Decoder

    def made(*args: Any, **kwargs: Any) -> Any:
        seen.append(lock.locked())
        return real(*args, **kwargs)

    monkeypatch.setattr(msgspec.msgpack, "Decoder", made)
    return seen


def test_a_frame_decoder_is_made_once_and_under_its_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_parallel, "_FRAMES", {})
    seen = _made_under(_parallel._FRAMES_LOCK, monkeypatch)
    first = _parallel._frames("issue")
    assert _parallel._frames("issue") is first
    assert seen == [True]


def test_the_cache_decoders_are_made_once_and_under_their_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_cache, "_DECODERS_MADE", [])
    seen = _made_under(_cache._DECODERS_LOCK, monkeypatch)
    first = _cache._decoders()
    assert _cache._decoders() is first
    assert seen == [True] * 6
