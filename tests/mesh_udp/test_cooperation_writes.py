"""Writes of one runtime with a journal file: the write lock, durability, reload, and refusals.

These run on trio's real clock: the journal file is written from worker threads.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import trio

from svc._errors import InvalidInput, NotFound, Refused
from svc.mesh_udp import Mesh
from svc.mesh_udp._cooperation import Cooperation
from tests.mesh_udp._fabric import Fabric
from tests.mesh_udp._runtimes import open_mesh

SOLO = {"multicast": {"enabled": False}}


async def solo(tmp_path: Path, nursery: trio.Nursery, *, name: str = "r0") -> tuple[Mesh, Cooperation]:
    mesh = open_mesh(tmp_path, name, Fabric(nursery).host("10.0.0.1"), SOLO, journal=True)
    await mesh.start(nursery)
    assert mesh.cooperation is not None, mesh.cooperation_reason()
    return mesh, mesh.cooperation


async def test_concurrent_exclusive_claims_on_one_scope_admit_exactly_one(
    tmp_path: Path, nursery: trio.Nursery
) -> None:
    _mesh, coop = await solo(tmp_path, nursery)
    outcomes: list[str] = []

    async def claim(session: str) -> None:
        try:
            await coop.claim(scope=["src/"], session=session, peer=None)
            outcomes.append("held")
        except Refused as refused:
            outcomes.append(str(refused).split(":")[0])

    async with trio.open_nursery() as inner:
        for session in ("a", "b", "c"):
            inner.start_soon(claim, session)
    assert sorted(outcomes) == ["claim_conflict", "claim_conflict", "held"]
    seqs = [e.seq for e in coop.journal.ordered() if e.stream == coop.stream]
    assert seqs == list(range(1, len(seqs) + 1))


async def test_writes_are_synced_and_reload_in_a_new_instance(tmp_path: Path, nursery: trio.Nursery) -> None:
    mesh, coop = await solo(tmp_path, nursery)
    written = await coop.claim(scope=["docs/"], session="s", peer=None)
    assert written.durability == "synced"
    journal = tmp_path / "r0" / ".ai" / "local" / "state" / "mesh" / "journal.jsonl"
    lines = journal.read_bytes().splitlines()
    assert len(lines) == 2
    assert written.event.encode().split(b"/")[0] in lines[1]
    assert (tmp_path / "r0" / ".ai" / "local" / ".gitignore").exists()
    mesh.stop()
    again, coop2 = await solo(tmp_path, nursery)
    assert coop2.stream != coop.stream
    claims = {c.key: c for c in coop2.state().claims}
    assert claims[written.key].state.state == "expired"
    assert again.cooperation is coop2


async def test_a_failed_file_write_answers_not_durable_and_keeps_the_event(
    tmp_path: Path, nursery: trio.Nursery, monkeypatch: pytest.MonkeyPatch
) -> None:
    _mesh, coop = await solo(tmp_path, nursery)
    assert coop.store is not None

    def full(raws: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(coop.store, "append", full)
    written = await coop.claim(scope=["x"], session="s", peer=None)
    assert written.durability == "not_durable"
    assert written.key in {c.key for c in coop.state().claims}


async def test_a_memory_journal_answers_memory(tmp_path: Path, nursery: trio.Nursery) -> None:
    mesh = open_mesh(tmp_path, "m", Fabric(nursery).host("10.0.0.1"), SOLO)
    await mesh.start(nursery)
    assert mesh.cooperation is not None
    written = await mesh.cooperation.session_open({"session": "s", "client": "test"})
    assert written.durability == "memory"
    assert written.key == f"{mesh.cooperation.stream}/s"


async def test_write_refusals(tmp_path: Path, nursery: trio.Nursery) -> None:
    mesh, coop = await solo(tmp_path, nursery)
    with pytest.raises(InvalidInput):
        await coop.claim(scope=["x"], session=None, peer=None)
    board = await coop.claim(scope=["x"], session=None, peer="stdio-0000aaaa")
    assert f"{coop.stream}/board-stdio-0000aaaa" in {s.key for s in coop.state().sessions}
    with pytest.raises(NotFound):
        await coop.release(f"{coop.stream}/c-000000000000")
    other = f"{'0' * 32}-{'1' * 16}-{'2' * 16}"
    with pytest.raises(Refused, match="not_own"):
        await coop.claim(scope=["y"], session=f"{other}/s", peer=None)
    await coop.release(board.key)
    with pytest.raises(Refused, match="not live"):
        await coop.release(board.key)
    with pytest.raises(NotFound):
        await coop.session_close("nobody")
    await coop.session_close("board-stdio-0000aaaa")
    with pytest.raises(Refused, match="closed"):
        await coop.session_close("board-stdio-0000aaaa")
    with pytest.raises(InvalidInput, match="out of bounds"):
        await coop.session_open({"session": "s"})
    mesh.stop()
    with pytest.raises(Refused, match="not_active: stopped"):
        await coop.session_open({"session": "s"})


async def test_mcp_sessions_are_projected_and_their_claims_end_with_them(tmp_path: Path, nursery: trio.Nursery) -> None:
    mesh, coop = await solo(tmp_path, nursery)
    attached = {"http-12345678"}
    coop.sessions = lambda: attached
    await coop.beat()
    key = f"{coop.stream}/board-http-12345678"
    assert {s.key: s.state for s in coop.state().sessions}[key] == "active"
    claim = await coop.claim(scope=["src/"], session=None, peer="http-12345678")
    attached.clear()
    await coop.beat()
    assert {s.key: s.state for s in coop.state().sessions}[key] == "closed"
    standing = {c.key: c.state for c in coop.state().claims}[claim.key]
    assert standing.state == "expired"
    assert standing.detail == "its session closed"
    assert mesh.active


async def test_compaction_and_appends_never_touch_the_file_at_once(
    tmp_path: Path, nursery: trio.Nursery, monkeypatch: pytest.MonkeyPatch
) -> None:
    _mesh, coop = await solo(tmp_path, nursery)
    store = coop.store
    assert store is not None
    busy: list[str] = []
    overlapped: list[str] = []
    release_rewrite = threading.Event()
    rewriting = trio.Event()

    def rewrite(raws: object) -> None:
        busy.append("rewrite")
        trio.from_thread.run_sync(rewriting.set)
        release_rewrite.wait(10)
        busy.remove("rewrite")

    def append(raws: object) -> None:
        if busy:
            overlapped.append("append during " + busy[0])

    monkeypatch.setattr(store, "rewrite", rewrite)
    monkeypatch.setattr(store, "append", append)
    monkeypatch.setattr(store, "save_tombstones", lambda tombstones: None)
    monkeypatch.setattr(coop.journal, "compact", lambda **kw: ["a-dropped-stream"])
    async with trio.open_nursery() as inner:
        inner.start_soon(coop._compact, trio.current_time())
        await rewriting.wait()
        inner.start_soon(coop.session_open, {"session": "during", "client": "test"})
        coop.on_received([{"stream": "received"}])
        await trio.testing.wait_all_tasks_blocked()
        release_rewrite.set()
    assert overlapped == []
