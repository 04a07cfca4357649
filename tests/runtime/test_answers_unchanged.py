"""Every plan query answers the same bytes with the caches and notifications on and off.

A served executor (the repository watcher in notify or poll mode, generation-cached answers, the parse cache
file and its memory) is compared with a read that parses every record from its bytes (no cache file, nothing in
memory), before and after an edit of the plan. The edit must show in every answer once the generation moved.
A process's read that reuses the derivation the cache file stores answers the same bytes too, and so does one
after the file was torn or deleted, or a record was edited.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

from svc._errors import SvcError
from svc.capabilities._plan import CAPABILITIES
from svc.host._service import open_service
from svc.layer import Repository
from svc.plan import Plan, Records, _cache, _store, derive
from svc.registry import Capability, decode_value
from svc.runtime import Actor, Executor
from svc.runtime._generation import WatchMode
from tests.conftest import make_checkout
from tests.runtime.test_watch import Moves

CACHE = Path(".ai") / _cache.CACHE_FILE
NEW_ISSUE = """\
id: I9999
milestone: {milestone}
title: An issue written while the server runs
slug: written-while-serving
priority: p0
profile: implementation
parallel_safe: true
objective: "Take first."
why: "It outranks every other ready issue."
scope:
  - src/svc/new_part
depends_on: []
acceptance_criteria:
  - "it holds"
validation:
  - "pytest"
evidence_required:
  - suite
created_at: 2026-11-26
updated_at: 2026-11-26
"""


def _cases(repo: Repository) -> list[tuple[Capability, dict[str, Any]]]:
    """Every plan query (a declared read) with no input, per milestone where it filters by one, and `plan.record`
    for a few ids."""
    queries = [c for c in CAPABILITIES if c.read is not None]
    milestones = sorted(p.stem for p in (repo.root / ".ai/repo/project/milestones").glob("*.yaml"))
    cases: list[tuple[Capability, dict[str, Any]]] = []
    for cap in queries:
        if cap.id == "plan.record":
            cases += [(cap, {"id": record}) for record in (*milestones[:3], "I0001", "I0002", "I9999")]
            continue
        cases.append((cap, {}))
        if "milestone" in cap.input.__struct_fields__:
            cases += [(cap, {"milestone": m}) for m in milestones]
    cases += [(c, {"status": "READY"}) for c in queries if c.id == "plan.issues"]
    return cases


def _outcome(body: Any) -> bytes:
    return body if isinstance(body, bytes) else f"{type(body).__name__}: {body}".encode()


def _parsed_from_bytes(repo: Repository, cases: list[tuple[Capability, dict[str, Any]]]) -> dict[str, bytes]:
    """Each case's answer with no parse cache at all: every record parsed from its bytes."""
    return _each_a_new_process(repo, cases, cached=False)


def _each_a_new_process(
    repo: Repository, cases: list[tuple[Capability, dict[str, Any]]], *, cached: bool = True
) -> dict[str, bytes]:
    """Each case's answer read as a new command line process reads it: nothing in memory, the cache file as it
    is (`cached`) or none at all."""
    out: dict[str, bytes] = {}
    for cap, given in cases:
        _cache.forget()
        if not cached:
            (repo.root / CACHE).unlink(missing_ok=True)
        assert cap.read is not None
        try:
            out[f"{cap.id} {given}"] = msgspec.json.encode(cap.read(repo, decode_value(cap, given)))
        except SvcError as exc:
            out[f"{cap.id} {given}"] = _outcome(exc)
    return out


async def _served(executor: Executor, cases: list[tuple[Capability, dict[str, Any]]]) -> dict[str, bytes]:
    """Each case's answer through the executor: the generation cache, the parse cache file and its memory."""
    actor = Actor(kind="http", pid=os.getpid())
    out: dict[str, bytes] = {}
    for cap, given in cases:
        try:
            out[f"{cap.id} {given}"] = await executor.call(cap, decode_value(cap, given), actor=actor)
        except SvcError as exc:
            out[f"{cap.id} {given}"] = _outcome(exc)
    return out


@pytest.mark.parametrize("mode", ["notify", "poll"])
async def test_every_plan_answer_is_the_same_with_caches_and_notifications_on_and_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: WatchMode
) -> None:
    monkeypatch.setenv("SVC_WATCH", mode)
    root = make_checkout(tmp_path / "checkout")
    repo = Repository.discover(root)
    cases = _cases(repo)
    with trio.fail_after(120):
        fresh_before = await trio.to_thread.run_sync(_parsed_from_bytes, repo, cases)
        async with open_service(repo, surface="http", watch=True) as executor:
            assert executor.runtime.generation.running == mode
            moves = Moves()
            executor.runtime.generation.hooks.append(moves.hook)
            before = await _served(executor, cases)
            again = await _served(executor, cases)
            assert before == again == fresh_before
            new = NEW_ISSUE.format(milestone=_next_milestone(before))
            (root / ".ai/repo/project/issues/I9999.yaml").write_text(new)
            await moves.reach(1)
            after = await _served(executor, cases)
        fresh_after = await trio.to_thread.run_sync(_parsed_from_bytes, repo, cases)
    assert after == fresh_after
    assert after != before
    changed = {key for key in after if after[key] != before[key]}
    assert {"plan.model {}", "plan.issues {}", "plan.status {}", "plan.validate {}"} <= changed
    assert after["plan.record {'id': 'I9999'}"].startswith(b"{")
    assert before["plan.record {'id': 'I9999'}"].startswith(b"NotFound")
    (root / ".ai/repo/project/issues/I9999.yaml").unlink()
    assert await trio.to_thread.run_sync(_parsed_from_bytes, repo, cases) == before


def _next_milestone(answers: dict[str, bytes]) -> str:
    """The milestone of the issue `plan.next` answered (the new issue joins it)."""
    issue = msgspec.json.decode(answers["plan.next {}"])["issue"]
    return str(issue["milestone"])


def _derivations(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the plans the reads derive (one element per derivation)."""
    counted: list[int] = []

    def counting(records: Records, **kw: Any) -> Plan:
        counted.append(1)
        return derive(records, **kw)

    monkeypatch.setattr(_store, "derive", counting)
    return counted


def test_every_plan_answer_is_the_same_from_the_stored_derivation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_cache, "_now_ns", lambda: time.time_ns() + 10 * 10**9)
    root = make_checkout(tmp_path / "checkout")
    repo = Repository.discover(root)
    cases = _cases(repo)
    fresh = _parsed_from_bytes(repo, cases)
    assert (root / CACHE).is_file(), "the last read from bytes stored the entries and the derivation"
    derived = _derivations(monkeypatch)
    assert _each_a_new_process(repo, cases) == fresh
    assert derived == [], "every read reused the stored derivation"
    cache = root / CACHE
    cache.write_bytes(cache.read_bytes()[: cache.stat().st_size // 2])
    assert _each_a_new_process(repo, cases) == fresh
    assert len(derived) == 1, "a torn file is a miss; the read after it replaced the file"
    cache.unlink()
    derived.clear()
    assert _each_a_new_process(repo, cases) == fresh
    assert len(derived) == 1
    issue = next((root / ".ai/repo/project/issues").glob("*.yaml"))
    issue.write_bytes(issue.read_bytes().replace(b"title: ", b"title: Edited ", 1))
    derived.clear()
    edited = _each_a_new_process(repo, cases)
    assert len(derived) == 1
    assert edited == _parsed_from_bytes(repo, cases)
    assert edited != fresh
    assert str(root) not in str(edited)
