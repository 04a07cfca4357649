"""The `plan.*` capabilities through the executor, over real loopback HTTP, and from the command line."""

from __future__ import annotations

import functools
import hashlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
import trio

from svc.api import serve_http
from svc.capabilities import builtin_registry
from svc.host._service import open_service
from svc.layer import Repository
from svc.plan import read_ledger
from svc.runtime import Actor, Executor
from svc.surfaces import cli_tree
from tests.conftest import make_checkout

SVC = [sys.executable, "-m", "svc"]
ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}
CLI = Actor(kind="cli")


def _fingerprint(root: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and ".git" not in path.relative_to(root).parts:
            out[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.fixture
async def plan_executor(planned: Path) -> AsyncIterator[Executor]:
    async with open_service(Repository.discover(planned), surface="cli", watch=False) as ex:
        yield ex


async def _call(ex: Executor, cap_id: str, **params: object) -> dict[str, object]:
    cap = builtin_registry().by_id[cap_id]
    body = await ex.call(cap, ex.decode_value(cap, params), actor=CLI)
    answer: dict[str, object] = msgspec.json.decode(body)
    return answer


async def test_every_read_answers_and_a_transition_drops_the_generation_cache(plan_executor: Executor) -> None:
    ex = plan_executor
    assert (await _call(ex, "plan.next"))["issue"]["id"] == "I0001"  # type: ignore[index]
    cache = ex.cache("plan.next")
    assert cache is not None
    assert len(cache) == 1
    before = ex.runtime.generation.value
    moved = await _call(ex, "plan.transition", issue="I0001", transition="start")
    assert (moved["from"], moved["to"], moved["next_ready"]) == ("READY", "ACTIVE", "I0002")
    assert ex.runtime.generation.value == before + 1
    assert (await _call(ex, "plan.next"))["issue"]["id"] == "I0002"  # type: ignore[index]
    assert (await _call(ex, "plan.issues", status="ACTIVE"))["total"] == 2
    assert (await _call(ex, "plan.status"))["counts"]["by_status"]["ACTIVE"] == 2  # type: ignore[index]
    assert (await _call(ex, "plan.roadmap"))["now"] == "M1"
    assert (await _call(ex, "plan.validate"))["valid"] is True
    waves: Any = (await _call(ex, "plan.waves"))["waves"]
    assert [w["wave"] for w in waves] == [0, 1]
    assert (await _call(ex, "plan.record", id="M2"))["kind"] == "milestone"
    model = await _call(ex, "plan.model")
    assert list(model) == [
        "project",
        "statuses",
        "milestones",
        "issues",
        "waves",
        "edges",
        "milestone_edges",
        "findings",
    ]


async def test_errors_of_the_plan_capabilities(plan_executor: Executor) -> None:
    from svc import InvalidInput, NotFound, Refused

    with pytest.raises(NotFound, match="no milestone 'M9'"):
        await _call(plan_executor, "plan.next", milestone="M9")
    with pytest.raises(InvalidInput):
        await _call(plan_executor, "plan.issues", status="PAUSED")
    with pytest.raises(InvalidInput):
        await _call(plan_executor, "plan.transition", issue="I0001", transition="start", force=True)
    with pytest.raises(InvalidInput):
        await _call(plan_executor, "plan.transition", issue="I0001", transition="finish")
    with pytest.raises(NotFound, match="no issue 'I0404'"):
        await _call(plan_executor, "plan.transition", issue="I0404", transition="start")
    with pytest.raises(Refused, match="I0004 is BLOCKED, not READY"):
        await _call(plan_executor, "plan.transition", issue="I0004", transition="start")


@pytest.fixture
async def plan_server(planned: Path, nursery: trio.Nursery) -> AsyncIterator[str]:
    async with open_service(Repository.discover(planned), surface="http", watch=False) as ex:
        shutdown = trio.Event()
        url: str = await nursery.start(functools.partial(serve_http, ex, port=0, shutdown=shutdown))
        yield url
        shutdown.set()


async def test_http_refuses_the_transition_and_leaves_every_file_untouched(planned: Path, plan_server: str) -> None:
    before = _fingerprint(planned)
    async with httpx.AsyncClient(base_url=plan_server) as http:
        for body in ({"issue": "I0001", "transition": "start"}, {"issue": "I0404", "transition": "done", "x": 1}, {}):
            r = await http.post("/api/v1/plan/transition", json=body)
            assert r.status_code == 403, r.text
            error = r.json()["error"]
            assert error["code"] == "forbidden"
            assert "svc_plan_transition" in error["message"]
            assert "svc plan " in error["message"]
        assert (await http.get("/api/v1/plan/transition")).status_code == 405
        assert (await http.get("/api/v1/plan/next")).json()["issue"]["id"] == "I0001"
        assert (await http.get("/api/v1/plan/next", params={"milestone": "nope"})).status_code == 404
        assert (await http.get("/api/v1/plan/issues", params={"status": "PAUSED"})).status_code == 400
        assert (await http.get("/api/v1/plan/record", params={"id": "I0404"})).status_code == 404
    assert _fingerprint(planned) == before
    assert not (planned / ".ai/local").exists()


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*SVC, *args], capture_output=True, cwd=cwd, env=ENV, timeout=60, check=False)


@pytest.mark.slow
def test_the_command_line_moves_issues_and_validate_exits_10(planned: Path) -> None:
    assert _run("plan", "validate", cwd=planned).returncode == 0
    started = _run("plan", "start", "I0001", "--json", cwd=planned)
    assert started.returncode == 0, started.stderr
    assert msgspec.json.decode(started.stdout)["to"] == "ACTIVE"
    refused = _run("plan", "start", "I0004", cwd=planned)
    assert (refused.returncode, refused.stdout) == (10, b"")
    assert refused.stderr == b"svc: refused: I0004 is BLOCKED, not READY (waiting on I0001)\n"
    assert _run("plan", "done", "I0404", cwd=planned).returncode == 10
    assert _run("plan", "transition", "I0002", "start", "--json", cwd=planned).returncode == 0
    assert [e["event"] for e in read_ledger(planned / ".ai/local/state/ledger.jsonl").entries] == ["plan_start"] * 2
    record = planned / ".ai/repo/project/issues/I0006.yaml"
    record.write_bytes(record.read_bytes() + b"started_at: 2026-11-21T00:00:00Z\n")
    invalid = _run("plan", "validate", cwd=planned)
    assert invalid.returncode == 10
    assert b"stamp_without_event" in invalid.stdout


@pytest.mark.slow
def test_plan_reads_answer_the_same_bytes_over_http_and_the_cli(tmp_path: Path) -> None:
    checkout = make_checkout(tmp_path / "own")
    proc = subprocess.Popen([*SVC, "serve", "--port", "0"], cwd=checkout, env=ENV, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    try:
        lines = [proc.stderr.readline().decode() for _ in range(1)]
        while "svc: serving http://127.0.0.1:" not in lines[-1] and lines[-1] and len(lines) < 50:
            lines.append(proc.stderr.readline().decode())
        assert "svc: serving http://127.0.0.1:" in lines[-1], lines
        url = lines[-1].split("serving ")[1].strip()
        tree = {c.capability: c for c in cli_tree(builtin_registry()) if c.preset is None}
        compared = 0
        with httpx.Client(base_url=url) as http:
            for cap in builtin_registry().capabilities:
                if cap.module != "plan" or cap.exposure.http is None or cap.exposure.http.method != "GET":
                    continue
                for example in cap.examples:
                    over_http = http.get(cap.exposure.http.path, params=example.input)
                    assert over_http.status_code == 200, (cap.id, over_http.text)
                    args = list(tree[cap.id].words)
                    for param in tree[cap.id].parameters:
                        if param.field in example.input:
                            value = str(example.input[param.field])
                            args += [value] if param.positional else [param.name, value]
                    over_cli = _run(*args, "--json", cwd=checkout)
                    assert over_cli.returncode in ((0, 10) if cap.cli_verdict else (0,)), (cap.id, over_cli.stderr)
                    assert over_cli.stdout == over_http.content + b"\n", cap.id
                    compared += 1
        assert compared == 10
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stderr.close()
