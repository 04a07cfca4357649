"""The repository watcher survives any failure of one round, and the layer state is built off the loop.

The watcher's rounds and hooks run in worker threads; these tests drive `refresh` and `watch` directly, with
the autojump clock where only trio waits are involved. `test_watch.py` tests the watcher on real changes.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

import pytest
import trio
import trio.testing

from svc import Unavailable
from svc.capabilities import builtin_registry
from svc.layer import ObjectIndex, Repository
from svc.runtime import Generation, Runtime
from svc.runtime import _generation as generation_module
from svc.runtime._generation import repository_stamp
from svc.runtime._runtime import BUILD_SECONDS


def _changed(repo: Repository) -> Generation:
    """A generation whose next `refresh` sees a change (its stamp is stale)."""
    return Generation(repo, stamp=b"stale")


async def test_a_hook_that_raises_is_logged_and_the_next_hook_still_runs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="svc.runtime")
    generation = _changed(Repository.discover(tmp_path))
    ran: list[str] = []

    def boom() -> None:
        ran.append("boom")
        raise MemoryError("a /dev/zero read ran out of memory")

    generation.hooks += [boom, lambda: ran.append("next")]
    assert await generation.refresh() is True
    assert ran == ["boom", "next"]
    assert "a rebuild after a repository change failed" in caplog.text
    (tmp_path / "x").write_text("changed")  # nothing under .ai/: the stamp does not move
    assert await generation.refresh() is False


@pytest.mark.bound(2 * generation_module.HOOK_SECONDS)
async def test_a_hook_that_hangs_is_waited_for_at_most_its_deadline(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="svc.runtime")
    release = threading.Event()
    try:
        started = trio.current_time()
        await generation_module._run_hook(lambda: release.wait(60))
        assert trio.current_time() - started == pytest.approx(generation_module.HOOK_SECONDS)
        assert "took over 30 s" in caplog.text
    finally:
        release.set()


async def test_the_polling_watcher_goes_on_after_a_failed_round(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    generation = Generation(Repository.discover(tmp_path), stamp=b"", mode="poll")
    rounds: list[int] = []
    third = trio.Event()

    async def refresh() -> bool:
        rounds.append(len(rounds))
        if len(rounds) == 1:
            raise OSError("the stamp could not be computed")
        if len(rounds) == 3:
            third.set()
        return False

    monkeypatch.setattr(generation, "refresh", refresh)
    async with trio.open_nursery() as nursery:
        await nursery.start(generation.watch)
        assert generation.watched
        await third.wait()
        nursery.cancel_scope.cancel()
    assert rounds == [0, 1, 2]


async def test_warm_builds_once_at_a_time_and_resident_never_builds(tmp_path: Path) -> None:
    repo = Repository.discover(tmp_path)
    runtime = Runtime(registry=builtin_registry(), repository=repo, generation=Generation(repo, stamp=b""))
    assert runtime.resident() is None
    assert runtime._index is None
    assert runtime._building.acquire()
    try:
        runtime.warm()  # another build holds the lock: returns at once, builds nothing
        assert runtime.resident() is None
    finally:
        runtime._building.release()
    assert await runtime.warm_async() is True
    resident = runtime.resident()
    assert resident is not None
    runtime.generation.bump()
    assert runtime.resident() == resident
    assert runtime._index is not None
    assert runtime._index[0] == 0


async def test_a_derived_value_is_built_once_per_generation_by_one_caller_at_a_time(tmp_path: Path) -> None:
    repo = Repository.discover(tmp_path)
    runtime = Runtime(registry=builtin_registry(), repository=repo, generation=Generation(repo, stamp=b""))
    builds: list[int] = []
    building = threading.Event()
    release = threading.Event()

    def build(seen: Repository) -> int:
        assert seen is repo
        assert runtime._deriving.locked(), "a build runs under the lock the other callers wait on"
        builds.append(runtime.generation.value)
        building.set()
        release.wait(10)
        return len(builds)

    async with trio.open_nursery() as nursery:
        answers: list[int] = []

        async def ask() -> None:
            answers.append(await trio.to_thread.run_sync(runtime.derived, build))

        for _ in range(4):
            nursery.start_soon(ask)
        await trio.to_thread.run_sync(building.wait, 10)
        await trio.testing.wait_all_tasks_blocked()
        release.set()
    assert (builds, answers) == ([0], [1, 1, 1, 1])
    assert runtime.derived(build) == 1
    runtime.generation.bump()
    assert runtime.derived(build) == 2
    assert builds == [0, 1]


def test_an_ai_folder_leaving_the_checkout_is_never_walked(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "c"
    root.mkdir()
    os.symlink(outside, root / ".ai")
    repo = Repository.discover(root)
    before = repository_stamp(repo)
    (outside / "file.yaml").write_text("changed")
    assert repository_stamp(repo) == before


@pytest.mark.bound(4 * BUILD_SECONDS)
async def test_builds_are_waited_for_at_most_their_deadline(
    tmp_path: Path, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = Repository.discover(tmp_path)
    runtime = Runtime(registry=builtin_registry(), repository=repo, generation=Generation(repo, stamp=b""))
    release = threading.Event()

    def stuck(_: Repository) -> None:
        release.wait(60)

    monkeypatch.setattr(ObjectIndex, "build", stuck)
    try:
        started = trio.current_time()
        with pytest.raises(Unavailable, match="not discovered within 30 s"):
            await runtime.objects_async()
        assert await runtime.warm_async() is False
        assert trio.current_time() - started == pytest.approx(2 * BUILD_SECONDS)
    finally:
        release.set()
