"""The plan read in a second process while a server starts (`svc.plan._prime`): a read waits for it and reuses
what it stored, a primer is started only for a large plan and once per checkout, and nothing it does or fails
to do changes an answer or outlives its block."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import trio

from svc.cli import _exit
from svc.layer import Repository
from svc.plan import _cache, _prime, _primer, read_snapshot
from svc.plan._store import Snapshot
from tests.plan.conftest import AHEAD_NS, Counts

TIMEOUT = 60
#: A primer that never ends by itself.
FOREVER = [sys.executable, "-c", "import signal; signal.pause()"]


@pytest.fixture(autouse=True)
def isolated() -> Iterator[None]:
    """Every test starts and ends with no primer registered and nothing held in memory."""
    _cache.forget()
    yield
    assert not _prime._RUNNING, "a primer outlived its test"
    _cache.forget()


async def _bounded(body: Callable[[], None]) -> None:
    """Run `body` in a worker thread, failing the test after `TIMEOUT` seconds (a primer never reaped hangs it)."""
    with trio.fail_after(TIMEOUT):
        await trio.to_thread.run_sync(body, abandon_on_cancel=True)


def _repo(root: Path) -> Repository:
    return Repository.discover(root)


def _answers(snapshot: Snapshot) -> tuple[object, ...]:
    return snapshot.plan, snapshot.records


def _fresh(root: Path) -> Snapshot:
    """A read with nothing cached, in memory or on disk."""
    _cache.forget()
    (root / ".ai" / _cache.CACHE_FILE).unlink(missing_ok=True)
    return read_snapshot(_repo(root))


class _Fake:
    """A primer process whose `wait` runs the primer's read in this process (at once, deterministic)."""

    def __init__(self, repo: Repository) -> None:
        self.repo = repo
        self.waited: list[float] = []
        self.returncode: int | None = None

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.waited.append(timeout if timeout is not None else -1.0)
            self.returncode = 0  # the primer's own read, here in this process, must not wait for itself
            assert _primer.main(_prime._command(self.repo)[3:]) == 0
        return self.returncode

    def poll(self) -> int | None:
        return self.returncode

    def kill(self) -> None:
        raise AssertionError("a primer that ended is not killed")


def _primer_of(root: Path) -> _prime._Primer:
    primer = _prime._RUNNING.get(str(root))
    assert primer is not None, "no primer was started"
    return primer


async def test_a_read_waits_for_the_primer_and_reuses_what_it_stored(
    checkout: Path, counts: Counts, monkeypatch: pytest.MonkeyPatch
) -> None:
    def body() -> None:
        want = _answers(_fresh(checkout))  # stores nothing: the files were just written
        _cache.forget()
        # The primer's read (in this process here) may store every file, as one of a settled checkout does.
        monkeypatch.setattr(_cache, "_now_ns", lambda: time.time_ns() + AHEAD_NS)
        fake = _Fake(_repo(checkout))
        _prime._RUNNING[str(checkout)] = _prime._Primer(fake)  # type: ignore[arg-type]
        counts.clear()
        got = read_snapshot(_repo(checkout))
        assert fake.waited == [_prime.PRIME_WAIT]
        primed = len(counts.parsed)
        assert primed == 9, "the primer parsed the project, two milestones and six issues"
        # The primer's read ran in this process and kept its state; a new process starts from the file alone.
        _cache.forget()
        counts.clear()
        assert _answers(read_snapshot(_repo(checkout))) == want
        assert counts.parsed == [], "the read after the primer reused its derivation"
        assert counts.derived == 0
        assert _answers(got) == want
        assert str(checkout) not in _prime._RUNNING, "a primer awaited is no longer waited for"

    await _bounded(body)


async def test_a_large_plan_is_read_by_a_primer_process(checkout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def body() -> None:
        want = _answers(_fresh(checkout))
        _cache.forget()
        monkeypatch.setattr(_prime, "PRIME_MIN", 6)  # the checkout's six issues
        repo = _repo(checkout)
        with _prime.priming(repo):
            primer = _primer_of(checkout)
            assert primer.process.args == _prime._command(repo)
            got = read_snapshot(repo)
            assert primer.process.returncode == 0, "the primer read the plan and ended"
        assert _answers(got) == want

    await _bounded(body)


async def test_a_smaller_plan_is_not_primed(checkout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def body() -> None:
        monkeypatch.setattr(_prime, "PRIME_MIN", 7)
        started: list[object] = []
        monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: started.append(a))
        with _prime.priming(_repo(checkout)):
            assert str(checkout) not in _prime._RUNNING
        assert started == []

    await _bounded(body)


@pytest.mark.parametrize("layer", ["absent", "no issues", "issues outside the checkout"])
def test_the_issue_files_are_counted_under_the_reading_rule(checkout: Path, tmp_path: Path, layer: str) -> None:
    issues = checkout / ".ai" / "repo" / "project" / "issues"
    assert _prime._issue_files(_repo(checkout)) == 6
    (issues / ".I0009.yaml").write_text("id: I0009\n")
    (issues / "notes.txt").write_text("not a record\n")
    assert _prime._issue_files(_repo(checkout)) == 6
    if layer == "absent":
        (checkout / ".ai").rename(checkout / "ai-elsewhere")
    elif layer == "no issues":
        for path in issues.iterdir():
            path.unlink()
        issues.rmdir()
    else:
        outside = tmp_path / "outside"
        issues.rename(outside)
        issues.symlink_to(outside)
    assert _prime._issue_files(_repo(checkout)) == 0


async def test_a_primer_that_ended_is_reaped_before_any_read(checkout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_prime, "PRIME_MIN", 1)
    monkeypatch.setattr(_prime, "_command", lambda repo: [sys.executable, "-c", "pass"])

    def body() -> None:
        with _prime.priming(_repo(checkout)):
            primer = _primer_of(checkout)
            primer.reaper.join(TIMEOUT)
            assert not primer.reaper.is_alive()
            assert primer.process.returncode == 0
            assert not Path(f"/proc/{primer.process.pid}").exists(), "no zombie is left for the first read to reap"

    await _bounded(body)


async def test_a_block_already_priming_starts_no_second_primer(checkout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def body() -> None:
        monkeypatch.setattr(_prime, "PRIME_MIN", 1)
        monkeypatch.setattr(_prime, "_command", lambda repo: FOREVER)
        repo = _repo(checkout)
        with _prime.priming(repo):
            first = _primer_of(checkout)
            with _prime.priming(repo):
                assert _primer_of(checkout) is first
            assert first.process.poll() is None, "the inner block does not end the outer block's primer"
        assert first.process.returncode == -signal.SIGKILL

    await _bounded(body)


async def test_the_end_of_its_block_kills_and_reaps_a_primer_still_running(
    checkout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def body() -> None:
        monkeypatch.setattr(_prime, "PRIME_MIN", 1)
        monkeypatch.setattr(_prime, "_command", lambda repo: FOREVER)
        with _prime.priming(_repo(checkout)):
            primer = _primer_of(checkout)
        assert primer.process.returncode == -signal.SIGKILL
        assert str(checkout) not in _prime._RUNNING

    await _bounded(body)


async def test_a_read_waits_at_most_prime_wait_then_reads_alone(
    checkout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def body() -> None:
        want = _answers(_fresh(checkout))
        _cache.forget()
        monkeypatch.setattr(_prime, "PRIME_MIN", 1)
        monkeypatch.setattr(_prime, "PRIME_WAIT", 0.0)
        monkeypatch.setattr(_prime, "_command", lambda repo: FOREVER)
        repo = _repo(checkout)
        with _prime.priming(repo):
            primer = _primer_of(checkout)
            assert _answers(read_snapshot(repo)) == want
            assert primer.process.returncode == -signal.SIGKILL, "a primer past its time is killed and reaped"
            assert str(checkout) not in _prime._RUNNING

    await _bounded(body)


@pytest.mark.parametrize(
    "command",
    [
        pytest.param([sys.executable, "-c", "raise SystemExit(3)"], id="fails"),
        pytest.param(["/nonexistent/python"], id="cannot start"),
        pytest.param([sys.executable, "-m", "svc.plan._prime", "/nonexistent", "", ""], id="another checkout"),
    ],
)
async def test_a_primer_that_does_nothing_useful_changes_no_answer(
    checkout: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    def body() -> None:
        want = _answers(_fresh(checkout))
        _cache.forget()
        monkeypatch.setattr(_prime, "PRIME_MIN", 1)
        monkeypatch.setattr(_prime, "_command", lambda repo: command)
        repo = _repo(checkout)
        with _prime.priming(repo):
            assert _answers(read_snapshot(repo)) == want

    await _bounded(body)


async def test_a_primer_has_no_standard_streams(
    checkout: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    speaks = "import sys; print('out'); print('err', file=sys.stderr); raise SystemExit(len(sys.stdin.read()))"
    monkeypatch.setattr(_prime, "PRIME_MIN", 1)
    monkeypatch.setattr(_prime, "_command", lambda repo: [sys.executable, "-c", speaks])

    def body() -> None:
        # This process's standard input holds bytes, as a serving `svc mcp`'s holds its client's requests.
        reader, writer = os.pipe()
        os.write(writer, b"a request")
        os.close(writer)
        saved = os.dup(0)
        os.dup2(reader, 0)
        os.close(reader)
        try:
            with _prime.priming(_repo(checkout)):
                primer = _primer_of(checkout)
                assert primer.process.wait(TIMEOUT) == 0, "its standard input is empty"
        finally:
            os.dup2(saved, 0)
            os.close(saved)

    await _bounded(body)
    assert capfd.readouterr() == ("", ""), "nothing of it reaches this process's output (an MCP stdio wire)"


async def test_a_serving_process_primes_its_plan(checkout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from svc.host._serve import serve_checkout

    monkeypatch.setattr(_prime, "PRIME_MIN", 1)
    monkeypatch.setattr(_prime, "_command", lambda repo: FOREVER)
    stop = trio.Event()
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            await nursery.start(
                lambda task_status: serve_checkout(
                    _repo(checkout),
                    surface="mcp",
                    port=0,
                    lease=None,
                    http=False,
                    stop=stop,
                    task_status=task_status,
                )
            )
            primer = _primer_of(checkout)
            assert primer.process.poll() is None
            stop.set()
    assert primer.process.returncode == -signal.SIGKILL, "the primer ends with the service"


async def test_svc_serve_primes_its_plan_around_the_server(checkout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from asyncclick.testing import CliRunner

    import svc.host
    from svc.cli import build_cli

    monkeypatch.setattr(_prime, "PRIME_MIN", 1)
    monkeypatch.setattr(_prime, "_command", lambda repo: FOREVER)
    monkeypatch.setattr(_exit._State, "armed", False)
    seen: list[_prime._Primer] = []

    async def serve(repo: Repository, *, port: int) -> None:
        seen.append(_primer_of(repo.root))

    monkeypatch.setattr(svc.host, "serve", serve, raising=False)
    with trio.fail_after(TIMEOUT):
        result = await CliRunner().invoke(build_cli(), ["--repo", str(checkout), "serve"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert [p.process.args for p in seen] == [FOREVER]
    assert seen[0].process.returncode == -signal.SIGKILL
