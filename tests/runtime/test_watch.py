"""The repository watcher moves the generation on real changes, in notify mode and in poll mode.

These tests use real time (notifications need it) and never sleep: each waits, under the test's
`trio.fail_after` bound, for a hook the watcher runs after the generation moved.
"""

from __future__ import annotations

import logging
import subprocess
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from svc.host._service import open_service
from svc.layer import Repository
from svc.runtime import Generation
from svc.runtime import _generation as generation_module
from svc.runtime._generation import WatchMode, _choose_mode, _filesystem, _Tree, repository_stamp
from tests.conftest import make_checkout

MODES: tuple[WatchMode, ...] = ("notify", "poll")
#: A burst of this many writes is one step of the generation, give or take a batch split by the scheduler.
BURST, BURST_STEPS = 200, 3
SOURCES = """\
version: 1
sources:
  - {id: guide, kind: document, pathspec: ':(glob)docs/**/*.md'}
  - {id: top, kind: document, pathspec: ':(glob)*.md'}
  - {id: policy, kind: policy, pathspec: ':(glob).ai/repo/policy.yaml'}
"""


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def _checkout(path: Path) -> Path:
    """A Git checkout with a small layer (a manifest, a policy, `sources.yaml`) and one commit."""
    (path / ".ai" / "repo" / "knowledge").mkdir(parents=True)
    (path / ".ai" / "manifest.yaml").write_text("schema: ai-repository/v1\n")
    (path / ".ai" / "repo" / "policy.yaml").write_text("version: 1\n")
    (path / ".ai" / "repo" / "knowledge" / "sources.yaml").write_text(SOURCES)
    (path / "docs").mkdir()
    (path / "docs" / "guide.md").write_text("# Guide\n")
    (path / ".gitignore").write_text(".ai/local/\n")
    return make_checkout(path, layer=False)


class Moves:
    """A hook that counts the generation's moves; a test waits for the next one."""

    def __init__(self) -> None:
        self.count = 0
        self._seen = trio.Event()

    def hook(self) -> None:
        """Run by the watcher in a worker thread after the generation moved."""
        trio.from_thread.run_sync(self._moved)

    def _moved(self) -> None:
        self.count += 1
        self._seen.set()
        self._seen = trio.Event()

    async def reach(self, count: int) -> None:
        """Wait until the generation moved `count` times in all."""
        while self.count < count:
            await self._seen.wait()


@asynccontextmanager
async def watching(root: Path, mode: WatchMode) -> AsyncIterator[tuple[Generation, Moves]]:
    """A generation of the checkout at `root` (stamped now) with its watcher running in `mode`."""
    generation = Generation(Repository.discover(root), mode=mode)
    moves = Moves()
    generation.hooks.append(moves.hook)
    async with trio.open_nursery() as nursery:
        await nursery.start(generation.watch)
        assert generation.running == mode
        yield generation, moves
        nursery.cancel_scope.cancel()


async def _moves_on(root: Path, mode: WatchMode, change: Callable[[], object]) -> Generation:
    async with watching(root, mode) as (generation, moves):
        change()
        await moves.reach(1)
        return generation


@pytest.fixture
def slow_full_stamp(monkeypatch: pytest.MonkeyPatch) -> None:
    """Poll mode stamps every file once an hour: what it sees in a test, its directory check saw."""
    monkeypatch.setattr(generation_module, "FULL_SECONDS", 3600.0)


@pytest.mark.parametrize("mode", MODES)
async def test_a_new_file_moves_the_generation(tmp_path: Path, mode: WatchMode, slow_full_stamp: None) -> None:
    root = _checkout(tmp_path / "c")
    generation = await _moves_on(root, mode, lambda: (root / ".ai" / "repo" / "new.yaml").write_text("x: 1\n"))
    assert generation.value == 1


@pytest.mark.parametrize("mode", MODES)
async def test_a_deleted_file_moves_the_generation(tmp_path: Path, mode: WatchMode, slow_full_stamp: None) -> None:
    root = _checkout(tmp_path / "c")
    await _moves_on(root, mode, (root / ".ai" / "repo" / "policy.yaml").unlink)


@pytest.mark.parametrize("mode", MODES)
async def test_a_file_edited_in_place_moves_the_generation(
    tmp_path: Path, mode: WatchMode, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(generation_module, "FULL_SECONDS", 0.5)  # poll mode sees it by the full stamp
    root = _checkout(tmp_path / "c")
    policy = root / ".ai" / "repo" / "policy.yaml"
    await _moves_on(root, mode, lambda: policy.write_text("version: 2\n# edited in place\n"))


async def test_in_poll_mode_an_edit_in_place_is_seen_by_the_full_stamp_alone(tmp_path: Path) -> None:
    root = _checkout(tmp_path / "c")
    tree = _Tree.of(Repository.discover(root))
    probes = tree.probes()
    before, stamp = generation_module._signature(probes), tree.stamp()
    (root / ".ai" / "repo" / "policy.yaml").write_text("version: 2\n")
    assert generation_module._signature(probes) == before  # no directory moved...
    assert tree.stamp() != stamp  # ...the stamp did
    (root / ".ai" / "repo" / "other.yaml").write_text("x: 1\n")
    assert generation_module._signature(probes) != before


@pytest.mark.parametrize("mode", MODES)
async def test_checking_out_another_branch_moves_the_generation(
    tmp_path: Path, mode: WatchMode, slow_full_stamp: None
) -> None:
    root = _checkout(tmp_path / "c")
    _git(root, "checkout", "-q", "-b", "other")
    _git(root, "commit", "-q", "--allow-empty", "-m", "other")
    _git(root, "checkout", "-q", "main")
    await _moves_on(root, mode, lambda: _git(root, "checkout", "-q", "other"))


@pytest.mark.parametrize("mode", MODES)
async def test_a_pull_moves_the_generation(tmp_path: Path, mode: WatchMode, slow_full_stamp: None) -> None:
    origin = _checkout(tmp_path / "origin")
    _git(tmp_path, "clone", "-q", "--bare", str(origin), "origin.git")
    _git(tmp_path, "clone", "-q", "origin.git", "work")
    _git(tmp_path, "clone", "-q", "origin.git", "other")
    other = tmp_path / "other"
    _git(other, "commit", "-q", "--allow-empty", "-m", "a commit that changes no file")
    _git(other, "push", "-q", "origin", "HEAD")
    work = tmp_path / "work"
    generation = await _moves_on(work, mode, lambda: _git(work, "pull", "-q", "--ff-only"))
    assert generation.value == 1


@pytest.mark.parametrize("mode", MODES)
async def test_an_edit_of_a_source_outside_the_layer_moves_the_generation(
    tmp_path: Path, mode: WatchMode, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(generation_module, "FULL_SECONDS", 0.5)
    root = _checkout(tmp_path / "c")
    await _moves_on(root, mode, lambda: (root / "docs" / "guide.md").write_text("# Guide, edited\n"))


async def test_the_stamp_covers_the_sources_outside_the_layer_and_nothing_else(tmp_path: Path) -> None:
    root = _checkout(tmp_path / "c")
    (root / "docs" / "deep" / "er").mkdir(parents=True)
    (root / "sub").mkdir()
    repo = Repository.discover(root)
    changes: list[tuple[Path, bool]] = [
        (root / "docs" / "deep" / "er" / "page.md", True),  # docs/**/*.md
        (root / "README.md", True),  # *.md
        (root / "sub" / "README.md", False),  # *.md is one segment deep
        (root / "docs" / "notes.txt", False),
        (root / ".ai" / "local" / "state.json", False),
    ]
    for path, moves in changes:
        before = repository_stamp(repo)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("changed\n")
        assert (repository_stamp(repo) != before) is moves, path


def test_notifications_that_cannot_move_the_stamp_are_dropped(tmp_path: Path) -> None:
    root = _checkout(tmp_path / "c")
    tree = _Tree.of(Repository.discover(root))
    kept = [".ai/repo/policy.yaml", ".ai", ".ai/repo", ".git/HEAD", ".git/index", ".git/refs/heads/main"]
    kept += [".git/packed-refs", ".git/logs/HEAD", "docs/a/b.md", "docs", "README.md"]
    dropped = [".ai/local", ".ai/local/state/x.json", ".git/objects/ab/cdef", ".git/index.lock", ".git/FETCH_HEAD"]
    dropped += ["src/main.py", "sub/README.md", "docs/.venv/x.md", "docs/__pycache__/x.md", "node_modules/a.md"]
    assert [p for p in kept if not tree.matters(str(root / p))] == []
    assert [p for p in dropped if tree.matters(str(root / p))] == []
    assert not tree.matters(str(tmp_path / "elsewhere" / "x.md"))


@pytest.mark.parametrize("mode", MODES)
async def test_a_change_under_ai_local_never_moves_the_generation(tmp_path: Path, mode: WatchMode) -> None:
    root = _checkout(tmp_path / "c")
    local = root / ".ai" / "local" / "state"
    local.mkdir(parents=True)
    async with watching(root, mode) as (generation, moves):
        for n in range(20):
            (local / f"run-{n}.json").write_text("{}")
        (root / ".ai" / "repo" / "marker.yaml").write_text("x: 1\n")
        await moves.reach(1)
        assert generation.value == 1
        assert generation._stamp == repository_stamp(generation.repo)


async def test_a_burst_of_writes_is_one_step_of_the_generation(tmp_path: Path) -> None:
    root = _checkout(tmp_path / "c")
    issues = root / ".ai" / "repo" / "project" / "issues"
    issues.mkdir(parents=True)
    async with watching(root, "notify") as (generation, moves):
        for n in range(BURST):
            (issues / f"I{n:04d}.yaml").write_text(f"id: I{n:04d}\n")
        while generation._stamp != repository_stamp(generation.repo):
            await moves.reach(moves.count + 1)
        assert 1 <= generation.value <= BURST_STEPS


async def test_the_watcher_outlives_a_hook_that_raises(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="svc.runtime")
    root = _checkout(tmp_path / "c")
    calls: list[int] = []

    def boom() -> None:
        calls.append(len(calls))
        if len(calls) == 1:
            raise MemoryError("a rebuild ran out of memory")

    async with watching(root, "notify") as (generation, moves):
        generation.hooks.insert(0, boom)
        (root / ".ai" / "repo" / "one.yaml").write_text("x: 1\n")
        await moves.reach(1)
        (root / ".ai" / "repo" / "two.yaml").write_text("x: 2\n")
        await moves.reach(2)
    assert calls == [0, 1]
    assert "a rebuild after a repository change failed" in caplog.text


async def test_the_watcher_outlives_a_round_that_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="svc.runtime")
    root = _checkout(tmp_path / "c")
    generation = Generation(Repository.discover(root))
    rounds = trio.Event()
    calls: list[int] = []
    refresh = generation.refresh

    async def flaky() -> bool:
        calls.append(len(calls))
        if len(calls) == 1:
            raise OSError("the stamp could not be computed")
        changed = await refresh()
        if changed:
            rounds.set()
        return changed

    monkeypatch.setattr(generation, "refresh", flaky)
    async with trio.open_nursery() as nursery:
        await nursery.start(generation.watch)
        (root / ".ai" / "repo" / "one.yaml").write_text("x: 1\n")
        await rounds.wait()
        nursery.cancel_scope.cancel()
    assert generation.running == "notify"
    assert "could not compute a generation" in caplog.text


async def test_notifications_that_cannot_start_fall_back_to_polling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, slow_full_stamp: None
) -> None:
    caplog.set_level(logging.INFO, logger="svc.runtime")

    def refuse(roots: list[str]) -> Any:
        raise OSError(28, "inotify watch limit reached")

    monkeypatch.setattr(generation_module, "_open_notify", refuse)
    root = _checkout(tmp_path / "c")
    generation = await _moves_on(root, "poll", lambda: (root / ".ai" / "repo" / "new.yaml").write_text("x\n"))
    assert generation.running == "poll"
    generation = Generation(Repository.discover(root))
    async with trio.open_nursery() as nursery:
        await nursery.start(generation.watch)
        nursery.cancel_scope.cancel()
    assert generation.running == "poll"
    assert "file notifications failed (OSError: [Errno 28] inotify watch limit reached)" in caplog.text
    assert "the repository watcher polls directories every 0.5 s" in caplog.text


async def test_notifications_that_stop_fall_back_to_polling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, slow_full_stamp: None
) -> None:
    caplog.set_level(logging.WARNING, logger="svc.runtime")

    class Overflowed:
        def __enter__(self) -> Overflowed:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

        def watch(self, *args: object) -> set[tuple[int, str]]:
            raise RuntimeError("the notification queue overflowed")

    monkeypatch.setattr(generation_module, "_open_notify", lambda roots: Overflowed())
    root = _checkout(tmp_path / "c")
    generation = Generation(Repository.discover(root), mode="notify")
    moves = Moves()
    generation.hooks.append(moves.hook)
    polling = trio.Event()
    poll = generation._poll

    async def poll_seen(started: Callable[[], None]) -> None:
        polling.set()
        await poll(started)

    monkeypatch.setattr(generation, "_poll", poll_seen)
    async with trio.open_nursery() as nursery:
        await nursery.start(generation.watch)
        await polling.wait()
        (root / ".ai" / "repo" / "new.yaml").write_text("x\n")
        await moves.reach(1)
        nursery.cancel_scope.cancel()
    assert generation.running == "poll"
    assert "file notifications failed (RuntimeError: the notification queue overflowed)" in caplog.text


def test_the_mode_comes_from_the_constructor_then_svc_watch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(generation_module, "_filesystem", lambda path: "ext4")
    monkeypatch.setenv("SVC_WATCH", "poll")
    assert _choose_mode(None, tmp_path) == ("poll", None)
    assert _choose_mode("notify", tmp_path) == ("notify", None)
    monkeypatch.setenv("SVC_WATCH", "notify")
    assert _choose_mode(None, tmp_path) == ("notify", None)
    assert _choose_mode("poll", tmp_path) == ("poll", None)
    monkeypatch.setenv("SVC_WATCH", "inotify")
    assert _choose_mode(None, tmp_path) == ("notify", None)
    assert "SVC_WATCH='inotify' is not one of notify, poll" in caplog.text


def test_a_checkout_on_a_network_filesystem_is_polled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SVC_WATCH", raising=False)
    monkeypatch.setattr(generation_module, "_filesystem", lambda path: "nfs4")
    mode, reason = _choose_mode(None, tmp_path)
    assert mode == "poll"
    assert reason == "the checkout is on nfs4, which sends no notification of changes made elsewhere"


def test_the_filesystem_of_a_path_is_its_deepest_mount() -> None:
    mountinfo = (
        "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
        "40 22 0:40 / /mnt/team\\040share rw,relatime shared:20 - nfs4 server:/export rw\n"
        "41 40 0:41 / /mnt/team\\040share/local rw - tmpfs tmpfs rw\n"
        "garbage line\n"
    )
    assert _filesystem("/home/me/repo", mountinfo) == "ext4"
    assert _filesystem("/mnt/team share/repo", mountinfo) == "nfs4"
    assert _filesystem("/mnt/team share/local/repo", mountinfo) == "tmpfs"
    assert _filesystem("/mnt/team sharex/repo", mountinfo) == "ext4"
    assert _filesystem("/", "") is None


async def test_leaving_the_service_ends_the_watcher_and_its_thread(tmp_path: Path) -> None:
    root = _checkout(tmp_path / "c")
    with trio.fail_after(10):
        async with open_service(Repository.discover(root), surface="http", watch=True) as executor:
            generation = executor.runtime.generation
            assert generation.watched
            assert generation.running == "notify"
            assert generation._listening
    assert not generation._listening  # the notification thread ended before the service was left


@pytest.mark.parametrize("mode", MODES)
async def test_a_change_made_before_the_watcher_started_is_seen_when_it_starts(
    tmp_path: Path, mode: WatchMode, slow_full_stamp: None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="svc.runtime")
    root = _checkout(tmp_path / "c")
    generation = Generation(Repository.discover(root), mode=mode)
    moves = Moves()
    generation.hooks.append(moves.hook)
    (root / ".ai" / "repo" / "policy.yaml").write_text("version: 2\n")  # in place: no directory moves
    async with trio.open_nursery() as nursery:
        await nursery.start(generation.watch)
        assert generation.running == mode
        await moves.reach(1)
        nursery.cancel_scope.cancel()
    assert generation.value == 1
    expected = "runs on file notifications" if mode == "notify" else "polls directories every 0.5 s"
    assert [r.message for r in caplog.records if expected in r.message] != []


def test_a_source_directory_leaving_the_checkout_is_never_walked(tmp_path: Path) -> None:
    root = _checkout(tmp_path / "c")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "guide.md").write_text("# Outside\n")
    (root / "docs" / "guide.md").unlink()
    (root / "docs").rmdir()
    (root / "docs").symlink_to(outside)
    repo = Repository.discover(root)
    before = repository_stamp(repo)
    (outside / "guide.md").write_text("# Outside, changed\n")
    (outside / "new.md").write_text("# New\n")
    assert repository_stamp(repo) == before
    assert all(not path.startswith(str(outside)) for path in _Tree.of(repo).probes())


async def test_polling_stamps_a_costly_layer_less_often(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _checkout(tmp_path / "c")
    survey = generation_module._survey

    def costly(repo: Repository, polled: bool) -> generation_module._Survey:
        found = survey(repo, polled)
        return generation_module._Survey(found.tree, found.stamp, found.probes, found.signature, seconds=0.2)

    monkeypatch.setattr(generation_module, "_survey", costly)
    generation = Generation(Repository.discover(root), mode="poll")
    async with trio.open_nursery() as nursery:
        await nursery.start(generation.watch)
        nursery.cancel_scope.cancel()
    assert generation.full_seconds == pytest.approx(0.2 / generation_module.FULL_SHARE)
    generation = Generation(Repository.discover(root), mode="poll")
    async with trio.open_nursery() as nursery:
        monkeypatch.setattr(generation_module, "_survey", survey)
        await nursery.start(generation.watch)
        nursery.cancel_scope.cancel()
    assert generation.full_seconds == generation_module.FULL_SECONDS
