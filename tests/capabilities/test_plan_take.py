"""`plan.next` for a session and `plan.take`, on real servers whose mesh cooperates, over HTTP, MCP and the CLI.

The races: 8 HTTP callers with 8 sessions take at once on one runtime, 50 times, on 8 and on 4 READY issues.
The race across runtimes runs on the in-memory fabric (`test_plan_take_mesh.py`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import mcp_types as types
import msgspec
import pytest
import trio
from mcp import Client

from svc._errors import Refused
from svc.api import LocalBackend
from svc.plan import NONE_UNCLAIMED
from tests.api.test_mcp import connect
from tests.capabilities._served import Served, lease, serving, svc, svc_json
from tests.plan._records import issue, milestone, write_layer

pytestmark = [pytest.mark.bound(120), pytest.mark.usefixtures("state")]

RACES = 50


def plan_layer(root: Path, count: int, *, unscoped: bool = False) -> None:
    """Milestone M1 and `count` READY issues I0001… of disjoint scopes `src/i000N` (the last one unscoped)."""
    issues = [issue(f"I{n:04d}", evidence_required=[]) for n in range(1, count + 1)]
    if unscoped:
        issues[-1] = issue(f"I{count:04d}", evidence_required=[], scope=None)
    write_layer(root, [milestone("M1")], issues)


@asynccontextmanager
async def planned(
    tmp_path: Path, count: int, *, declared: bool = True, unscoped: bool = False
) -> AsyncIterator[Served]:
    async with serving(tmp_path, 1, declared=declared) as [runtime]:
        plan_layer(runtime.root, count, unscoped=unscoped)
        yield runtime


async def next_(runtime: Served, **params: str) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=runtime.url) as http:
        answer = await http.get("/api/v1/plan/next", params=params)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


async def take(http: httpx.AsyncClient, **body: Any) -> httpx.Response:
    return await http.post("/api/v1/plan/take", json=body)


async def claim(runtime: Served, session: str, scope: list[str], **extra: str) -> str:
    written = await runtime.coop.claim(scope=scope, session=session, peer=None, **extra)
    return written.key


def live_claims(runtime: Served) -> list[Any]:
    return [c for c in runtime.coop.state().claims if c.state.state in ("held", "conflicted")]


# -- plan.next for a session ---------------------------------------------------------------------------------


async def test_next_for_a_session_passes_over_the_claims_of_other_sessions(tmp_path: Path) -> None:
    async with planned(tmp_path, 4) as runtime:
        stream = runtime.coop.stream
        async with httpx.AsyncClient(base_url=runtime.url) as http:
            plain = (await http.get("/api/v1/plan/next")).content
        assert msgspec.json.decode(plain)["issue"]["id"] == "I0001"
        assert {"session", "skipped"}.isdisjoint(msgspec.json.decode(plain))

        first = await claim(runtime, "other", ["src/i0001/x.py"])
        mine = await next_(runtime, session="me")
        assert mine["issue"]["id"] == "I0002"
        assert mine["session"] == f"{stream}/me"
        assert mine["skipped"] == [
            {"issue": "I0001", "claim": first, "session": f"{stream}/other", "runtime": runtime.coop.key}
        ]
        assert await next_(runtime, session=f"{stream}/me") == mine
        theirs = await next_(runtime, session="other")
        assert theirs["issue"]["id"] == "I0001"
        assert "skipped" not in theirs

        async with httpx.AsyncClient(base_url=runtime.url) as http:
            assert (await http.get("/api/v1/plan/next")).content == plain
        named = await claim(runtime, "third", ["docs/"], issue="I0002")
        skipped = (await next_(runtime, session="me"))["skipped"]
        assert [(s["issue"], s["claim"]) for s in skipped] == [("I0001", first), ("I0002", named)]

        await runtime.coop.release(first)
        assert (await next_(runtime, session="me"))["issue"]["id"] == "I0001"

        for n in (1, 3, 4):
            await claim(runtime, "other", [f"src/i000{n}"])
        none = await next_(runtime, session="me")
        assert "issue" not in none
        assert none["reason"] == NONE_UNCLAIMED
        assert [s["issue"] for s in none["skipped"]] == ["I0001", "I0002", "I0003", "I0004"]
        async with httpx.AsyncClient(base_url=runtime.url) as http:
            unknown = await http.get("/api/v1/plan/next", params={"session": "me", "milestone": "M9"})
        assert unknown.status_code == 404, unknown.text


async def test_a_session_where_cooperation_does_not_run_gets_the_plain_answer_and_a_note(tmp_path: Path) -> None:
    async with planned(tmp_path, 2, declared=False) as runtime:
        plain = await next_(runtime)
        named = await next_(runtime, session="me")
        assert named["issue"] == plain["issue"]
        assert named["notes"] == [
            "no claim was weighed: cooperation does not run here (off: no declaration under .ai/repo/mesh/)"
        ]
        assert "skipped" not in named
        assert "session" not in named


# -- plan.take -----------------------------------------------------------------------------------------------


async def test_take_claims_the_next_issue_once_per_session_and_says_when_nothing_is_left(tmp_path: Path) -> None:
    async with planned(tmp_path, 3, unscoped=True) as runtime:
        stream = runtime.coop.stream
        async with httpx.AsyncClient(base_url=runtime.url) as http:
            first = (await take(http, session="s1", intent="build it")).json()
            assert (first["taken"], first["issue"]["id"], first["scope"]) == (True, "I0001", ["src/i0001"])
            assert first["session"] == f"{stream}/s1"
            assert first["durability"] == "synced"
            [held] = live_claims(runtime)
            assert (held.key, held.issue, held.scope, held.intent, held.state.state) == (
                first["claim"],
                "I0001",
                ["src/i0001"],
                "build it",
                "held",
            )
            again = (await take(http, session="s1")).json()
            assert (again["existing"], again["claim"], again["issue"]["id"]) == (True, first["claim"], "I0001")
            assert "durability" not in again
            assert len(live_claims(runtime)) == 1

            second = (await take(http, session="s2")).json()
            assert second["issue"]["id"] == "I0002"
            assert [s["issue"] for s in second["skipped"]] == ["I0001"]
            third = (await take(http, session="s3")).json()
            assert third["scope"] == [".ai/repo/project/issues/I0003.yaml"]

            left = await take(http, session="s4")
            assert left.status_code == 200
            assert (left.json()["taken"], left.json()["reason"]) == (False, NONE_UNCLAIMED)
            assert [s["issue"] for s in left.json()["skipped"]] == ["I0001", "I0002", "I0003"]

            started = await take(http, session="s5", start=True)
            assert started.status_code == 403, started.text
            assert "HTTP never writes the repository" in started.json()["error"]["message"]
            assert (await take(http)).status_code == 400
            assert (await take(http, session="s5", milestone="M9")).status_code == 404
            assert (await take(http, session="s5", extra=1)).status_code == 400
            foreign = await take(http, session="0123456789abcdef0123456789abcdef-0123456789abcdef/s1")
            assert foreign.status_code == 422
            assert foreign.json()["error"]["message"].startswith("not_own: ")


async def test_take_over_mcp_defaults_to_the_callers_session_and_starts_over_stdio(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with planned(tmp_path, 3) as runtime:
        stream = runtime.coop.stream
        record = runtime.root / ".ai/repo/project/issues/I0001.yaml"
        async with connect(LocalBackend(runtime.executor), "legacy", transport="stdio") as client:
            await claim(runtime, "other", ["src/i0002"])
            result = await client.call_tool("svc_plan_next", {})
            assert result.structured_content is not None
            assert result.structured_content["session"] == f"{stream}/board-stdio-0123abcd"
            assert result.structured_content["issue"]["id"] == "I0001"
            assert "skipped" not in result.structured_content

            taken = await client.call_tool("svc_plan_take", {"start": True})
            answer = taken.structured_content
            assert answer is not None, taken.content
            assert (answer["issue"]["id"], answer["started"]["to"]) == ("I0001", "ACTIVE")
            assert answer["session"] == f"{stream}/board-stdio-0123abcd"
            assert "started_at:" in record.read_text(encoding="utf-8")

            after = await client.call_tool("svc_plan_next", {})
            assert after.structured_content is not None
            assert after.structured_content["issue"]["id"] == "I0003"
            assert [s["issue"] for s in after.structured_content["skipped"]] == ["I0002"]

            def refuse(*_: object, **__: object) -> None:
                raise Refused("the move is refused for this test")

            with monkeypatch.context() as patched:
                patched.setattr("svc.capabilities._plan._move", refuse)
                failed = await client.call_tool("svc_plan_take", {"start": True})
            assert failed.is_error is True
            text = failed.content[0]
            assert isinstance(text, types.TextContent)
            assert text.text == "refused: the move is refused for this test"
            lost = [c for c in runtime.coop.state().claims if c.issue == "I0003"]
            assert [c.state.state for c in lost] == ["released"]

        async with Client(runtime.url + "/mcp", mode="legacy") as http_client:
            over_http = await http_client.call_tool("svc_plan_take", {"start": True})
            assert over_http.is_error is True
            assert isinstance(over_http.content[0], types.TextContent)
            assert over_http.content[0].text.startswith("forbidden: HTTP never writes the repository")


async def test_the_command_line_asks_the_serving_server_and_starts_in_its_own_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with planned(tmp_path, 3) as runtime:
        root = runtime.root
        code, out, err = await svc(root, "plan", "next", "--session", "me", "--json")
        assert code == 0
        assert "answering from this process" in err
        assert msgspec.json.decode(out)["notes"][0].startswith("no claim was weighed: cooperation does not run here")
        with lease(runtime):
            code, taken = await svc_json(root, "plan", "take", "--session", "s1", "--start")
            assert code == 0, taken
            assert (taken["issue"]["id"], taken["started"]["to"]) == ("I0001", "ACTIVE")
            assert [c.issue for c in live_claims(runtime)] == ["I0001"]
            assert "started_at:" in (root / ".ai/repo/project/issues/I0001.yaml").read_text(encoding="utf-8")

            # The start was written by this process: a served checkout's watcher moves the server's generation
            # on that write; this server runs without one.
            runtime.executor.runtime.generation.bump()
            await claim(runtime, "other", ["src/i0002"])
            code, mine = await svc_json(root, "plan", "next", "--session", "me")
            assert code == 0
            assert (mine["issue"]["id"], [s["issue"] for s in mine["skipped"]]) == ("I0003", ["I0002"])

            def refuse(*_: object, **__: object) -> None:
                raise Refused("the move is refused for this test")

            with monkeypatch.context() as patched:
                patched.setattr("svc.capabilities._plan._move", refuse)
                code, _, err = await svc(root, "plan", "take", "--session", "s2", "--start")
            assert code != 0
            assert "the move is refused for this test" in err
            assert [c.state.state for c in runtime.coop.state().claims if c.issue == "I0003"] == ["released"]

            code, _ = await svc_json(root, "plan", "take", "--session", "s3")
            assert code == 0
            code, nothing = await svc_json(root, "plan", "take", "--session", "s4")
            assert code == 10
            assert (nothing["taken"], nothing["reason"]) == (False, NONE_UNCLAIMED)


# -- races on one runtime ------------------------------------------------------------------------------------


@pytest.mark.parametrize("ready", [8, 4])
async def test_eight_concurrent_takes_on_one_runtime_never_share_an_issue(tmp_path: Path, ready: int) -> None:
    counts: Counter[str] = Counter()
    async with planned(tmp_path, ready) as runtime:
        coop = runtime.coop
        async with httpx.AsyncClient(base_url=runtime.url) as http:
            for run in range(RACES):
                answers: list[dict[str, Any]] = []

                async def racer(n: int, run: int = run, answers: list[dict[str, Any]] = answers) -> None:
                    answer = await take(http, session=f"r{run}-{n}")
                    assert answer.status_code == 200, answer.text
                    answers.append(answer.json())

                async with trio.open_nursery() as racers:
                    for n in range(8):
                        racers.start_soon(racer, n)
                won = [a for a in answers if a["taken"]]
                assert len(won) == ready
                assert len({a["issue"]["id"] for a in won}) == ready
                assert all(a["reason"] == NONE_UNCLAIMED for a in answers if not a["taken"])
                live = live_claims(runtime)
                assert sorted(c.issue for c in live) == sorted(a["issue"]["id"] for a in won)
                assert all(c.state.state == "held" for c in live)
                assert not coop.state().overlaps
                counts.update(won=len(won), nothing=8 - len(won), conflicted=len(live) - len(won))
                for c in live:
                    await coop.release(c.key)
    assert counts == Counter(won=RACES * ready, nothing=RACES * (8 - ready))


async def test_a_live_answer_is_never_cached(tmp_path: Path) -> None:
    async with planned(tmp_path, 2) as runtime:
        cache = runtime.executor.cache("plan.next")
        assert cache is not None
        await next_(runtime)
        assert len(cache) == 1
        key = await claim(runtime, "other", ["src/i0001"])
        assert (await next_(runtime, session="me"))["issue"]["id"] == "I0002"
        await runtime.coop.release(key)
        assert (await next_(runtime, session="me"))["issue"]["id"] == "I0001"
        assert len(cache) == 1
