"""The mesh's cooperation capabilities over HTTP and MCP, on real servers in this process.

Runtimes run as `svc serve` runs one (`tests/capabilities/_served.py`): each over its own checkout, with its
own key, linked to the others by seeds on 127.0.0.1, a 1 s heartbeat. Waiting is `Cooperation.wait_until`
(re-checked at every exchange, write and beat) under the test's bound, never a sleep.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import httpx
import mcp_types as types
import msgspec
import pytest
import trio
from mcp import Client

from svc.capabilities import builtin_registry
from svc.mesh_udp import Mesh, SystemHost, SystemNetwork, run_doctor
from tests.capabilities._served import Served, serving, until, wait_linked

pytestmark = [pytest.mark.bound(60), pytest.mark.usefixtures("state")]

REGISTRY = builtin_registry()
COOPERATION = sorted(c.id for c in REGISTRY.capabilities if c.source_path == "src/svc/capabilities/_cooperation.py")
QUERIES = {"mesh.cooperation", "mesh.state", "mesh.peers", "mesh.peer", "mesh.events"}
OFF = "off: no declaration under .ai/repo/mesh/"
UNKNOWN_RUNTIME = "0123456789abcdef0123456789abcdef-0123456789abcdef"
RECORD = """---
schema_version: 1
created_at: 2026-11-25T19:04:05Z
task_id: T-42
profile: none
owner: "someone"
branch: feature/links
head: 0123456789abcdef0123456789abcdef01234567
working_tree: clean
---

# Objective

Finish the links.

# Current State

Half done.

# Next Action

Write the sync round.
"""


async def get(served: Served, path: str, **params: Any) -> httpx.Response:
    text = {k: ("true" if v is True else "false" if v is False else str(v)) for k, v in params.items()}
    async with httpx.AsyncClient(base_url=served.url) as http:
        return await http.get(f"/api/v1/mesh/{path}", params=text)


async def post(served: Served, path: str, body: dict[str, Any]) -> httpx.Response:
    async with httpx.AsyncClient(base_url=served.url) as http:
        return await http.post(f"/api/v1/mesh/{path}", json=body)


def error(response: httpx.Response, status: int) -> str:
    """The error message of a response that must have `status`."""
    assert response.status_code == status, response.text
    message: str = response.json()["error"]["message"]
    return message


def claims(runtime: Served) -> dict[str, Any]:
    return {c.key: c for c in runtime.coop.state().claims}


def reviews(runtime: Served) -> dict[str, Any]:
    return {r.key: r for r in runtime.coop.state().reviews}


def test_the_fifteen_operations_are_declared_as_the_spec_names_them() -> None:
    expected = {
        "mesh.claim": ("POST", "/api/v1/mesh/claims", "svc_mesh_claim", "mesh claim"),
        "mesh.release": ("POST", "/api/v1/mesh/claims/release", "svc_mesh_release", "mesh release"),
        "mesh.cooperation": ("GET", "/api/v1/mesh/cooperation", "svc_mesh_cooperation", "mesh cooperation"),
        "mesh.events": ("GET", "/api/v1/mesh/events", "svc_mesh_events", "mesh events"),
        "mesh.handover.publish": (
            "POST",
            "/api/v1/mesh/handovers",
            "svc_mesh_handover_publish",
            "mesh handover publish",
        ),
        "mesh.handover.consume": (
            "POST",
            "/api/v1/mesh/handovers/consume",
            "svc_mesh_handover_consume",
            "mesh handover consume",
        ),
        "mesh.peer": ("GET", "/api/v1/mesh/peer", "svc_mesh_peer", "mesh peer"),
        "mesh.peers": ("GET", "/api/v1/mesh/peers", "svc_mesh_peers", "mesh peers"),
        "mesh.review.request": ("POST", "/api/v1/mesh/reviews", "svc_mesh_review_request", "mesh review request"),
        "mesh.review.answer": (
            "POST",
            "/api/v1/mesh/reviews/answer",
            "svc_mesh_review_answer",
            "mesh review answer",
        ),
        "mesh.review.withdraw": (
            "POST",
            "/api/v1/mesh/reviews/withdraw",
            "svc_mesh_review_withdraw",
            "mesh review withdraw",
        ),
        "mesh.session.open": ("POST", "/api/v1/mesh/sessions", "svc_mesh_session_open", "mesh session open"),
        "mesh.session.close": (
            "POST",
            "/api/v1/mesh/sessions/close",
            "svc_mesh_session_close",
            "mesh session close",
        ),
        "mesh.state": ("GET", "/api/v1/mesh/state", "svc_mesh_state", "mesh state"),
        "mesh.verify": ("POST", "/api/v1/mesh/verify", "svc_mesh_verify", "mesh verify"),
    }
    assert sorted(expected) == COOPERATION
    for cid, (method, path, tool, words) in expected.items():
        cap = REGISTRY.by_id[cid]
        http, mcp = cap.exposure.http, cap.exposure.mcp
        assert http is not None
        assert mcp is not None
        declared = (http.method, http.path, mcp.tool, cap.cli_text)
        assert declared == (method, path, tool, words)
        assert cap.stability == "experimental"
        assert cap.cache.policy == "disabled"
        assert cap.cli_remote is True
        assert cap.writes_repository is False
        assert cap.kind == ("query" if cid in QUERIES else "command")
        if cid == "mesh.verify":
            assert (cap.benchmark.policy, cap.benchmark.reason) == ("waived", "external_dependency")
            assert cap.cli_verdict == "ok"
        elif cid in QUERIES:
            assert cap.benchmark.policy == "required"
        else:
            assert (cap.benchmark.policy, cap.benchmark.reason) == ("waived", "transient_state")
    assert "cooperation" in REGISTRY.module_by_id["mesh"].description
    assert REGISTRY.by_id["mesh.claim"].cli_usage == "svc mesh claim PATH..."
    assert REGISTRY.by_id["mesh.release"].cli_usage == "svc mesh release KEY"


async def test_without_cooperation_queries_answer_inactive_and_writes_are_refused(tmp_path: Path) -> None:
    async with serving(tmp_path, 1, declared=False) as [runtime]:
        status = (await get(runtime, "cooperation")).json()
        assert status["active"] is False
        assert status["reason"] == OFF
        assert status["protocol"] == [1, 1]
        assert (await get(runtime, "state")).json() == {"active": False, "reason": OFF}
        assert (await get(runtime, "peers", view="full")).json() == {"active": False, "reason": OFF}
        peer = (await get(runtime, "peer", runtime=UNKNOWN_RUNTIME)).json()
        assert peer == {"found": False, "reason": f"cooperation does not run here: {OFF}"}
        events = (await get(runtime, "events", after=7)).json()
        assert events == {"active": False, "count": 0, "lamport": 7, "events": []}
        verify = await post(runtime, "verify", {})
        assert verify.status_code == 200
        assert verify.json()["ok"] is False
        assert [c["check"] for c in verify.json()["checks"]] == ["cooperation"]
        assert verify.json()["checks"][0]["remediation"]
        for cap in REGISTRY.capabilities:
            if cap.id not in COOPERATION or cap.kind == "query" or cap.id == "mesh.verify":
                continue
            for example in cap.examples:
                http = cap.exposure.http
                assert http is not None
                answer = await post(runtime, http.path.removeprefix("/api/v1/mesh/"), example.input)
                assert error(answer, 422) == f"not_active: {OFF}", cap.id
        unnamed = await post(runtime, "claims", {"scope": ["docs/"]})
        assert error(unnamed, 422) == f"not_active: {OFF}", "not running is refused before anything else"
        assert not (runtime.root / ".ai" / "local" / "state" / "mesh").exists()


async def test_claims_conflict_and_only_their_runtime_releases_them(tmp_path: Path) -> None:
    async with serving(tmp_path, 2) as [a, b]:
        await wait_linked([a, b])
        written = await post(a, "claims", {"scope": ["src/svc/"], "session": "s1", "intent": "rework", "issue": "I7"})
        assert written.status_code == 200, written.text
        claim = written.json()
        assert set(claim) == {"key", "event", "lamport", "durability"}
        assert claim["key"].startswith(f"{a.coop.stream}/c-")
        assert claim["durability"] == "synced"
        await until(b.coop, lambda: claim["key"] in claims(b))
        assert claims(b)[claim["key"]].session == f"{a.coop.stream}/s1"

        conflict = error(await post(b, "claims", {"scope": ["src/svc/mesh_udp/_links.py"], "session": "s2"}), 422)
        assert conflict.startswith("claim_conflict: ")
        assert claim["key"] in conflict
        status = (await get(b, "cooperation")).json()
        assert status["counters"]["claims_refused"] == 1
        advisory = await post(b, "claims", {"scope": ["src/svc/x.py"], "session": "s2", "mode": "advisory"})
        assert advisory.status_code == 200, advisory.text
        await until(a.coop, lambda: advisory.json()["key"] in claims(a))
        overlaps = (await get(a, "state", kind="overlaps", view="full")).json()["state"]["overlaps"]
        assert {overlaps[0]["first"], overlaps[0]["second"]} == {claim["key"], advisory.json()["key"]}
        assert [tuple(p) for p in overlaps[0]["paths"]] in (
            [("src/svc/", "src/svc/x.py")],
            [("src/svc/x.py", "src/svc/")],
        )

        assert "session is required" in error(await post(a, "claims", {"scope": ["docs/"]}), 400)
        not_own = error(await post(b, "claims/release", {"claim": claim["key"]}), 422)
        assert not_own.startswith("not_own: ")
        unknown = f"{a.coop.stream}/c-000000000000"
        assert error(await post(a, "claims/release", {"claim": unknown}), 404) == f"no claim {unknown}"
        released = await post(a, "claims/release", {"claim": claim["key"]})
        assert released.status_code == 200, released.text
        assert released.json()["key"] == claim["key"]
        assert error(await post(a, "claims/release", {"claim": claim["key"]}), 422).startswith("refused: ")
        await until(b.coop, lambda: claims(b)[claim["key"]].state.state == "released")
        again = await post(b, "claims", {"scope": ["src/svc/mesh_udp/_links.py"], "session": "s2"})
        assert again.status_code == 200, again.text


async def test_review_requests_answers_and_withdrawals_across_runtimes(tmp_path: Path) -> None:
    async with serving(tmp_path, 2) as [a, b]:
        await wait_linked([a, b])
        unlinked = error(
            await post(
                a,
                "reviews",
                {"subject": "feature/links", "scope": ["src/"], "session": "s1", "reviewer": UNKNOWN_RUNTIME},
            ),
            422,
        )
        assert unlinked.startswith("feature_unsupported: ")
        asked = await post(
            a,
            "reviews",
            {"subject": "feature/links", "scope": ["src/"], "session": "s1", "reviewer": b.coop.key, "issue": "I7"},
        )
        assert asked.status_code == 200, asked.text
        review = asked.json()["key"]
        await until(b.coop, lambda: review in reviews(b))
        assert reviews(b)[review].reviewer == b.coop.key

        own = error(await post(a, "reviews/answer", {"request": review, "verdict": "approved", "session": "s1"}), 422)
        assert "cannot answer" in own
        answered = await post(
            b, "reviews/answer", {"request": review, "verdict": "changes_requested", "session": "s2", "note": "x"}
        )
        assert answered.status_code == 200, answered.text
        await until(a.coop, lambda: reviews(a)[review].state == "answered")
        assert [(x.session, x.verdict) for x in reviews(a)[review].answers] == [
            (f"{b.coop.stream}/s2", "changes_requested")
        ]

        withdraw = {"request": review, "note": "done: merged", "session": "s1"}
        assert error(await post(b, "reviews/withdraw", withdraw), 422).startswith("not_own: ")
        withdrawn = await post(a, "reviews/withdraw", withdraw)
        assert withdrawn.status_code == 200, withdrawn.text
        assert error(await post(a, "reviews/withdraw", withdraw), 422).startswith("refused: ")
        await until(b.coop, lambda: reviews(b)[review].state == "withdrawn")
        late = {"request": review, "verdict": "approved", "session": "s2"}
        assert "withdrawn" in error(await post(b, "reviews/answer", late), 422)
        unknown = f"{a.coop.stream}/r-000000000000"
        assert error(await post(b, "reviews/answer", {**late, "request": unknown}), 404)
        assert "session is required" in error(await post(a, "reviews", {"subject": "x", "scope": ["a"]}), 400)


async def test_a_handover_published_on_one_runtime_is_materialized_once_on_the_other(tmp_path: Path) -> None:
    async with serving(tmp_path, 2) as [a, b]:
        await wait_linked([a, b])
        assert error(await post(a, "handovers", {}), 404).startswith("no handover record under")
        records = a.root / ".ai" / "local" / "state" / "handovers"
        records.mkdir(parents=True)
        (records / "20261125T190405Z--feature-links--0123456--00112233aabbccdd.md").write_text(RECORD)
        (records / "20260101T000000Z--main--aaaaaaa--0000000000000000.md").write_text(
            RECORD.replace("2026-11-25T19:04:05Z", "2026-01-01T00:00:00Z").replace("Half done.", "Older.")
        )
        assert "not the name" in error(await post(a, "handovers", {"name": ".."}), 400)
        assert error(await post(a, "handovers", {"name": "absent.md"}), 404)
        published = await post(a, "handovers", {"issue": "I7"})
        assert published.status_code == 200, published.text
        handover_id = published.json()["key"]
        assert len(handover_id) == 32
        await until(b.coop, lambda: any(h.id == handover_id for h in b.coop.state().handovers))
        [view] = [h for h in b.coop.state().handovers if h.id == handover_id]
        assert view.handover["task"] == "T-42"
        assert view.handover["issue"] == "I7"
        assert view.handover["branch"] == "feature/links"
        assert view.handover["name"] == "20261125T190405Z--feature-links--0123456--00112233aabbccdd.md"
        assert "Half done." in view.handover["body"]
        assert str(a.root) not in msgspec.json.encode(view).decode()

        consume = {"handover": handover_id, "session": "s2", "materialize": True}
        first = await post(b, "handovers/consume", consume)
        assert first.status_code == 200, first.text
        path = first.json()["path"]
        assert path.startswith(".ai/local/state/handovers/")
        assert path.endswith(f"--feature-links--0123456--{handover_id[:16]}.md")
        written = b.root / path
        assert written.stat().st_mode & 0o777 == 0o600
        text = written.read_text()
        assert text.startswith("---\nschema_version: 1\n")
        assert "\nbranch: feature/links\n" in text
        assert "\nhead: 0123456789abcdef0123456789abcdef01234567\n" in text
        assert f"\nworktree: {b.root}\n" in text
        assert "\ntask_id: T-42\n" in text
        assert text.endswith(view.handover["body"])
        assert first.json()["handover"]["consumed_by"] == [f"{b.coop.stream}/s2"]
        second = await post(b, "handovers/consume", consume)
        assert second.status_code == 200, second.text
        assert second.json()["path"] == path
        assert written.read_text() == text
        assert len(list(written.parent.glob(f"*{handover_id[:16]}.md"))) == 1
        assert second.json()["written"]["event"] != first.json()["written"]["event"]
        plain = await post(a, "handovers/consume", {"handover": handover_id, "session": "s1"})
        assert plain.status_code == 200
        assert "path" not in plain.json()
        missing = {"handover": "f" * 32, "session": "s2", "materialize": True}
        assert error(await post(b, "handovers/consume", missing), 404)


async def test_sessions_state_peers_events_and_verify(tmp_path: Path) -> None:
    async with serving(tmp_path, 2) as [a, b]:
        await wait_linked([a, b])
        opened = await post(a, "sessions", {"session": "w1", "intent": "write docs", "branch": "main", "dirty": True})
        assert opened.status_code == 200, opened.text
        assert opened.json()["key"] == f"{a.coop.stream}/w1"
        claim = (await post(a, "claims", {"scope": ["docs/mesh.md"], "session": "w1"})).json()
        replaced = await post(a, "sessions", {"session": "w1", "intent": "review docs"})
        assert replaced.status_code == 200
        words = {s.key: s.info for s in a.coop.state().sessions}
        assert words[f"{a.coop.stream}/w1"] == {"session": "w1", "client": "cli", "intent": "review docs"}
        await until(b.coop, lambda: claim["key"] in claims(b) and len(b.coop.state().sessions) == 1)
        await until(b.coop, lambda: b.coop.state().digest == a.coop.state().digest)

        summary = (await get(b, "state")).json()
        assert summary["active"] is True
        assert {s["stream"]: s["liveness"] for s in summary["streams"]}[a.coop.stream] == "live"
        [session] = [s for s in summary["state"]["sessions"] if s["key"] == f"{a.coop.stream}/w1"]
        assert session["info"]["intent"] == "review docs"
        digest = summary["state"]["digest"]
        only = (await get(b, "state", kind="claims", session="w1", matching="MESH.MD")).json()["state"]
        assert [c["key"] for c in only["claims"]] == [claim["key"]]
        assert only["sessions"] == []
        assert only["handovers"] == []
        assert only["digest"] == digest
        assert (await get(b, "state", runtime=b.coop.key, kind="claims")).json()["state"]["claims"] == []
        assert "invalid_input" in (await get(b, "state", kind="nothing")).text

        tree = (await get(a, "peers", view="full")).json()
        assert tree["active"] is True
        assert tree["runtime"] == a.coop.key
        assert tree["machines"][0]["local"] is True
        assert tree["machines"][0]["runtimes"][0]["this_runtime"] is True
        assert {m["node"] for m in tree["machines"]} == {a.coop.identity.node_id, b.coop.identity.node_id}
        [other] = [m for m in tree["machines"] if not m["local"]]
        assert other["runtimes"][0]["runtime"] == b.coop.key
        assert other["runtimes"][0]["link"] == "connected"
        assert tree["digest"] == a.coop.state().digest
        narrowed = (await get(a, "peers", runtime=b.coop.identity.node_id)).json()
        assert [m["node"] for m in narrowed["machines"]] == [b.coop.identity.node_id]

        detail = (await get(a, "peer", runtime=b.coop.identity.node_id)).json()
        assert detail["found"] is True
        assert detail["runtime"]["runtime"] == b.coop.key
        assert detail["peer"]["features"] == ["sessions", "claims", "handovers", "reviews"]
        unknown = (await get(a, "peer", runtime=UNKNOWN_RUNTIME)).json()
        assert unknown["found"] is False

        events = (await get(a, "events")).json()
        assert events["active"] is True
        kinds = [e["kind"] for e in events["events"] if e["stream"] == a.coop.stream]
        assert kinds == ["session_opened", "claim_acquired", "session_opened"]
        lamports = [e["lamport"] for e in events["events"]]
        assert lamports == sorted(lamports)
        assert events["lamport"] == lamports[-1]
        newest = (await get(a, "events", newest=True, limit=1)).json()
        assert newest["count"] == 1
        assert newest["events"][0]["lamport"] == lamports[-1]
        assert (await get(a, "events", after=events["lamport"])).json()["events"] == []

        closed = await post(a, "sessions/close", {"session": "w1"})
        assert closed.status_code == 200, closed.text
        assert error(await post(a, "sessions/close", {"session": "w1"}), 422).startswith("refused: ")
        assert error(await post(a, "sessions/close", {"session": "never"}), 404)
        await until(b.coop, lambda: claims(b)[claim["key"]].state.state == "expired")
        assert claims(b)[claim["key"]].state.detail == "its session closed"

        report = await post(a, "verify", {})
        assert report.status_code == 200
        verified = report.json()
        assert verified["ok"] is True, verified
        assert [p["runtime"] for p in verified["peers"] if p["dialed"]] == [b.coop.key]
        assert all(p["round_trip"] for p in verified["peers"] if p["dialed"])


async def test_every_tool_answers_over_mcp_and_an_mcp_session_claims_for_itself(tmp_path: Path) -> None:
    async with serving(tmp_path, 1) as [runtime]:
        coop = runtime.coop
        async with Client(runtime.url + "/mcp", mode="legacy") as client:
            listed = {t.name for t in (await client.list_tools()).tools}
            tools = {REGISTRY.by_id[c].exposure.mcp.tool for c in COOPERATION}  # type: ignore[union-attr]
            assert tools <= listed

            async def call(tool: str, arguments: dict[str, Any]) -> Any:
                result = await client.call_tool(tool, arguments)
                assert result.is_error is False, result.content
                return result.structured_content

            async def refused(tool: str, arguments: dict[str, Any]) -> str:
                result = await client.call_tool(tool, arguments)
                assert result.is_error is True
                text = result.content[0]
                assert isinstance(text, types.TextContent)
                return text.text

            written = await call("svc_mesh_claim", {"scope": ["src/app.py"], "intent": "fix"})
            session = written["key"].split("/")[0] + "/board-"
            [held] = [c for c in coop.state().claims if c.key == written["key"]]
            assert held.session.startswith(session)
            peer = held.session.removeprefix(session)
            assert peer in runtime.executor.runtime.mcp.peers
            [board] = [s for s in coop.state().sessions if s.key == held.session]
            assert board.info["client"] == "mcp"
            assert (await refused("svc_mesh_claim", {"scope": ["src/"], "session": "other"})).startswith(
                "refused: claim_conflict: "
            )
            review = await call("svc_mesh_review_request", {"subject": "main", "scope": ["src/app.py"]})
            assert (
                await refused("svc_mesh_review_answer", {"request": review["key"], "verdict": "approved"})
            ).startswith("refused: ")
            await call("svc_mesh_review_answer", {"request": review["key"], "verdict": "commented", "session": "r2"})
            await call("svc_mesh_review_withdraw", {"request": review["key"], "note": "void"})
            await call("svc_mesh_session_open", {"session": "m2", "worker": "agent"})
            await call("svc_mesh_session_close", {"session": "m2"})
            records = runtime.root / ".ai" / "local" / "state" / "handovers"
            records.mkdir(parents=True)
            (records / "20261125T190405Z--main--0123456--0011223344556677.md").write_text(RECORD)
            published = await call("svc_mesh_handover_publish", {})
            taken = await call("svc_mesh_handover_consume", {"handover": published["key"], "session": "m3"})
            assert taken["handover"]["id"] == published["key"]
            other = await call("svc_mesh_claim", {"scope": ["docs/"], "session": "m4"})
            await call("svc_mesh_release", {"claim": other["key"]})
            assert (await call("svc_mesh_cooperation", {}))["active"] is True
            assert (await call("svc_mesh_state", {"kind": "claims"}))["state"]["claims"]
            assert (await call("svc_mesh_peers", {"view": "full"}))["machines"][0]["local"] is True
            assert (await call("svc_mesh_peer", {"runtime": coop.key}))["found"] is True
            assert (await call("svc_mesh_events", {"newest": True}))["count"] > 0
            assert (await call("svc_mesh_verify", {}))["ok"] is True
        await until(coop, lambda: {c.key: c for c in coop.state().claims}[written["key"]].state.state == "expired")
        ended = {c.key: c for c in coop.state().claims}[written["key"]]
        assert ended.state.detail == "its session closed"
        assert peer not in runtime.executor.runtime.mcp.peers
        await coop.beat()
        assert [s.state for s in coop.state().sessions if s.key == held.session] == ["closed"]


async def test_the_doctor_fails_its_runtime_check_while_cooperation_does_not_run(tmp_path: Path) -> None:
    async with serving(tmp_path, 1) as [runtime]:
        mesh = runtime.mesh

        def doctor() -> dict[str, Any]:
            report = run_doctor(runtime.repo, mesh, host=SystemHost(), interfaces=SystemNetwork().interfaces())
            return {c.check: c for c in report.checks}

        healthy = await trio.to_thread.run_sync(doctor)
        assert healthy["runtime"].ok is True
        assert healthy["runtime"].detail.endswith("cooperation running")
        assert healthy["link"].ok is True
        runtime.coop.stop("stopped by the test")
        failed = (await trio.to_thread.run_sync(doctor))["runtime"]
        assert failed.ok is False
        assert failed.detail == "cooperation is enabled but does not run in this server: stopped by the test"
        assert failed.impact
        assert failed.remediation
        refused = error(await post(runtime, "claims", {"scope": ["a"], "session": "s"}), 422)
        assert refused == "not_active: stopped by the test"
        status = (await get(runtime, "cooperation")).json()
        assert (status["active"], status["reason"]) == (False, "stopped by the test")
        assert isinstance(runtime.executor.components.find(Mesh), Mesh)
        assert os.environ["HOME"].startswith(str(tmp_path))
