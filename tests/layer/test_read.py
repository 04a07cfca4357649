"""The reading rule: regular files of the checkout only, never through a symlink leaving it, at most 4 MiB.

Anything that could block (a FIFO) is read in a worker thread abandoned on cancel, so a regression fails the
test's bound instead of hanging the run.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from svc.layer import (
    MAX_FILE_BYTES,
    Unreadable,
    YamlAliases,
    check_repository_dir,
    clip,
    load_yaml,
    read_repository_dir,
    read_repository_file,
)
from svc.layer._read import _read_fd

#: 530 bytes of ten-fold aliases over eight levels: about 10^8 nodes once expanded.
ALIAS_BOMB = (
    "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
    + "".join(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 9))
    + "id: *a8\n"
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "plain.yaml").write_bytes(b"id: x\n")
    (tmp_path / "outside.txt").write_bytes(b"secret\n")
    return root


async def _off_loop(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run a read that must not block in a thread, abandoned when the test's bound cancels it."""
    return await trio.to_thread.run_sync(lambda: fn(*args, **kwargs), abandon_on_cancel=True)


def _refusal(root: Path, path: Path, **kwargs: Any) -> Unreadable:
    with pytest.raises(Unreadable) as caught:
        read_repository_file(root, path, **kwargs)
    return caught.value


def test_a_regular_file_and_a_symlink_inside_the_checkout_are_read(repo: Path) -> None:
    os.symlink("plain.yaml", repo / "sub" / "alias.yaml")
    assert read_repository_file(repo, Path("sub/plain.yaml")) == b"id: x\n"
    assert read_repository_file(repo, repo / "sub" / "alias.yaml") == b"id: x\n"
    with pytest.raises(FileNotFoundError):
        read_repository_file(repo, Path("sub/missing.yaml"))


@pytest.mark.parametrize("target", ["/etc/passwd", "/dev/zero", "../../outside.txt"])
def test_a_symlink_leaving_the_checkout_is_never_followed(repo: Path, target: str) -> None:
    os.symlink(target, repo / "sub" / "leak.yaml")
    refused = _refusal(repo, Path("sub/leak.yaml"))
    assert (refused.path, refused.reason) == ("sub/leak.yaml", "a symlink leaving the repository")
    assert str(refused) == "sub/leak.yaml: a symlink leaving the repository"


def test_a_directory_symlinked_out_of_the_checkout_is_not_a_way_out(repo: Path, tmp_path: Path) -> None:
    os.symlink(tmp_path, repo / "out")
    assert _refusal(repo, Path("out/outside.txt")).reason == "a symlink leaving the repository"
    with pytest.raises(Unreadable, match="leaving the repository"):
        check_repository_dir(repo, repo / "out")


def test_loops_dangling_links_and_directories_are_named(repo: Path) -> None:
    os.symlink("b.yaml", repo / "a.yaml")
    os.symlink("a.yaml", repo / "b.yaml")
    os.symlink("nowhere", repo / "dangling.yaml")
    (repo / "dir.yaml").mkdir()
    assert _refusal(repo, Path("a.yaml")).reason == "a symlink loop"
    assert _refusal(repo, Path("dangling.yaml")).reason == "a dangling symlink"
    assert _refusal(repo, Path("dir.yaml")).reason == "not a regular file (a directory)"


async def test_a_fifo_is_refused_without_being_opened(repo: Path) -> None:
    os.mkfifo(repo / "sub" / "pipe.yaml")
    with pytest.raises(Unreadable) as caught:
        await _off_loop(read_repository_file, repo, Path("sub/pipe.yaml"))
    assert caught.value.reason == "not a regular file (a FIFO)"


async def test_an_open_descriptor_that_is_no_regular_file_is_refused_before_any_read() -> None:
    read_end, write_end = os.pipe()
    try:
        with pytest.raises(Unreadable, match="a FIFO"):
            await _off_loop(_read_fd, read_end, "pipe", 10)
    finally:
        os.close(read_end)
        os.close(write_end)


def test_a_file_over_the_limit_is_refused_by_its_size_before_it_is_read(repo: Path) -> None:
    with open(repo / "big.md", "wb") as handle:
        handle.truncate(12 * 1024 * 1024)
    refused = _refusal(repo, Path("big.md"))
    assert refused.reason == "12.0 MiB, over the 4 MiB limit"
    assert refused.too_large
    (repo / "eleven").write_bytes(b"x" * 11)
    assert _refusal(repo, Path("eleven"), limit=10).reason == "11 bytes, over the 10 bytes limit"
    assert read_repository_file(repo, Path("eleven"), limit=11) == b"x" * 11
    assert MAX_FILE_BYTES == 4 * 1024 * 1024


def test_no_more_than_the_limit_is_read_from_a_file_whose_size_says_less() -> None:
    # /proc files say size 0 and hold more: only the read bound stops them.
    proc = Path(f"/proc/{os.getpid()}")
    refused = _refusal(proc, proc / "status", limit=10)
    assert refused.reason == "grew over the 10 bytes limit while read"
    assert refused.too_large


async def test_a_directory_is_read_entry_by_entry_with_each_refusal_named(repo: Path) -> None:
    sub = repo / "sub"
    os.mkfifo(sub / "pipe.yaml")
    os.symlink("/etc/passwd", sub / "passwd.yaml")
    os.symlink("plain.yaml", sub / "alias.yaml")
    (sub / "dir.yaml").mkdir()
    (sub / "notes.txt").write_bytes(b"skipped")
    entries = await _off_loop(lambda: dict(read_repository_dir(repo, sub, lambda n: n.endswith(".yaml"))))
    assert entries.pop("plain.yaml") == entries.pop("alias.yaml") == b"id: x\n"
    assert {name: (e.path, e.reason) for name, e in entries.items()} == {
        "pipe.yaml": ("sub/pipe.yaml", "not a regular file (a FIFO)"),
        "passwd.yaml": ("sub/passwd.yaml", "a symlink leaving the repository"),
        "dir.yaml": ("sub/dir.yaml", "not a regular file (a directory)"),
    }
    with pytest.raises(FileNotFoundError):
        list(read_repository_dir(repo, repo / "absent", lambda _: True))
    with pytest.raises(Unreadable, match="not a directory"):
        list(read_repository_dir(repo, sub / "plain.yaml", lambda _: True))


def test_clip_bounds_a_message_with_an_ellipsis() -> None:
    assert clip("short") == "short"
    cut = clip("x" * 10_000)
    assert len(cut) == 400
    assert cut.endswith("…")


def test_yaml_aliases_are_refused_fast_without_expansion() -> None:
    assert len(ALIAS_BOMB) < 600
    started = time.perf_counter()
    with pytest.raises(YamlAliases, match="uses YAML aliases, which svc does not read"):
        load_yaml(ALIAS_BOMB)
    with pytest.raises(YamlAliases):
        load_yaml(ALIAS_BOMB.encode())
    assert time.perf_counter() - started < 1.0
    assert load_yaml('a: "*x"\nb: &anchor 2\nc: [1, 2]\n') == {"a": "*x", "b": 2, "c": [1, 2]}
