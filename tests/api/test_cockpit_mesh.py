"""The mesh page: why the mesh does not run where it does not, and the peers, claims, overlaps, sessions and
review requests where cooperation runs.

Cooperating runtimes run in this process as `svc serve` runs one (`tests/capabilities/_served.py`): each over
its own checkout and key, linked on 127.0.0.1. Waiting is `Cooperation.wait_until`, never a sleep.
Pairs with `src/svc/api/cockpit/_mesh.py` and its template `mesh.html`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import markupsafe
import pytest

from svc.api.cockpit import FRAGMENT_HEADER
from tests.api._page_tree import Element, parse
from tests.capabilities._served import Served, serving, until, wait_linked
from tests.conftest import ROOT

HTML = {"Accept": "text/html"}
HOSTILE = '<script>alert(1)</script>"><img src=x onerror=alert(2)>'


async def page(http: httpx.AsyncClient, path: str = "/cockpit/mesh", **params: str) -> Element:
    answer = await http.get(path, params=params, headers=HTML)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/html")
    return parse(answer.text)


async def api(http: httpx.AsyncClient, path: str, **params: Any) -> Any:
    answer = await http.get(path, params=params)
    assert answer.status_code == 200, answer.text
    return answer.json()


async def post(runtime: Served, path: str, body: dict[str, Any]) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=runtime.url) as http:
        answer = await http.post(f"/api/v1/mesh/{path}", json=body)
    assert answer.status_code == 200, answer.text
    written: dict[str, Any] = answer.json()
    return written


# -- where the mesh does not run ----------------------------------------------------------------------


async def test_without_a_mesh_the_page_says_why_and_what_to_do(client: httpx.AsyncClient) -> None:
    status = await api(client, "/api/v1/mesh")
    state = await api(client, "/api/v1/mesh/state")
    assert status["active"] is False
    tree = await page(client)
    assert tree.by_id("mesh-reason").text == status["reason"]
    assert state["reason"] == status["reason"]
    advice = tree.by_id("mesh-inactive").text
    assert ".ai/repo/mesh/" in advice
    assert "svc mesh doctor" in advice
    assert "svc serve" in advice
    for missing in ("mesh-claims", "mesh-peers", "mesh-sessions", "mesh-reviews", "mesh-summary"):
        assert tree.maybe_id(missing) is None
    providers = [r.find_all("td")[0].text for r in tree.by_id("mesh-discovery").find_all("tr")[1:]]
    assert providers == [p["id"] for p in status["providers"]]
    assert ROOT.as_posix() not in tree.text
    assert tree.one("main").has("data-svc-live")


@pytest.mark.parametrize("query", ["claims=bogus", "view=full", "claims=all&claims=live"])
async def test_a_bad_query_is_a_400_page(client: httpx.AsyncClient, query: str) -> None:
    answer = await client.get(f"/cockpit/mesh?{query}", headers=HTML)
    assert answer.status_code == 400
    assert answer.headers["content-type"].startswith("text/html")
    assert "invalid_input" in answer.text


async def test_the_page_is_live_304_while_nothing_moves(client: httpx.AsyncClient) -> None:
    first = await client.get("/cockpit/mesh", headers=HTML)
    etag = first.headers["ETag"]
    assert etag == f'"{parse(first.text).one("main").get("data-svc-version")}"'
    again = await client.get("/cockpit/mesh", headers={**HTML, FRAGMENT_HEADER: "main", "If-None-Match": etag})
    assert again.status_code == 304


# -- where cooperation runs ---------------------------------------------------------------------------


@pytest.mark.bound(60)
@pytest.mark.usefixtures("state")
async def test_with_cooperation_the_page_shows_peers_claims_overlaps_sessions_and_reviews(tmp_path: Path) -> None:
    async with serving(tmp_path, 2) as [a, b]:
        await wait_linked([a, b])
        await post(a, "sessions", {"session": "s1", "worker": HOSTILE, "intent": "rework the links", "issue": "I7"})
        held = await post(a, "claims", {"scope": ["src/svc/"], "session": "s1", "intent": HOSTILE, "issue": "I7"})
        advisory = await post(b, "claims", {"scope": ["src/svc/x.py"], "session": "s2", "mode": "advisory"})
        review = await post(a, "reviews", {"subject": "feature/links", "scope": ["src/"], "session": "s1"})
        other = await post(b, "reviews", {"subject": "feature/other", "scope": ["docs/"], "session": "s2"})
        await post(b, "reviews/withdraw", {"request": other["key"], "note": "void", "session": "s2"})
        keys = {held["key"], advisory["key"], review["key"], other["key"]}

        def seen() -> bool:
            fold = a.coop.state()
            held_here = {c.key for c in fold.claims} | {r.key for r in fold.reviews}
            return keys <= held_here and any(r.state == "withdrawn" for r in fold.reviews)

        await until(a.coop, seen)

        async with httpx.AsyncClient(base_url=a.url) as http:
            answer = await http.get("/cockpit/mesh", headers=HTML)
            assert answer.status_code == 200
            body = answer.text
            tree = parse(body)
            state = await api(http, "/api/v1/mesh/state", view="full")
            peers = await api(http, "/api/v1/mesh/peers", view="full")
            status = await api(http, "/api/v1/mesh")
            fold = state["state"]
            assert tree.maybe_id("mesh-inactive") is None

            node = tree.by_id("mesh-node").text
            assert status["identity"]["node_id"] in node
            assert status["identity"]["public_key"] in node
            assert a.coop.key in node

            machines = tree.by_id("mesh-peers").find_all("li", data_node=True)
            assert [m.get("data-node") for m in machines] == [m["node"] for m in peers["machines"]]
            runtimes = tree.by_id("mesh-peers").find_all("li", data_runtime=True)
            assert [r.get("data-runtime") for r in runtimes] == [
                r["runtime"] for m in peers["machines"] for r in m["runtimes"]
            ]
            assert {a.coop.key, b.coop.key} <= {r.get("data-runtime") for r in runtimes}
            tree_claims = {li.get("data-claim") for li in tree.by_id("mesh-peers").find_all("li", data_claim=True)}
            assert {held["key"], advisory["key"]} <= tree_claims

            rows = tree.by_id("mesh-claims").find_all("tr", data_claim=True)
            assert sorted(r.get("data-claim") or "" for r in rows) == sorted(c["key"] for c in fold["claims"])
            standing = {r.get("data-claim"): r.get("data-standing") for r in rows}
            assert standing == {c["key"]: c["state"]["state"] for c in fold["claims"]}
            overlap = fold["overlaps"][0]
            assert {overlap["first"], overlap["second"]} == {held["key"], advisory["key"]}
            attention = {r.get("data-claim") for r in rows if "cockpit-mesh-attention" in (r.get("class") or "")}
            assert attention == {held["key"], advisory["key"]}
            overlaps = tree.by_id("mesh-overlaps").text
            assert "src/svc/x.py" in overlaps
            assert "src/svc/" in overlaps

            sessions = tree.by_id("mesh-sessions").find_all("tr", data_session=True)
            assert sorted(s.get("data-session") or "" for s in sessions) == sorted(s["key"] for s in fold["sessions"])
            assert f"{a.coop.stream}/s1" in {s.get("data-session") for s in sessions}

            reviews = tree.by_id("mesh-reviews").find_all("tr", data_review=True)
            assert [r.get("data-review") for r in reviews] == [review["key"], other["key"]], "open first"
            assert [r.get("data-state") for r in reviews] == ["open", "withdrawn"]
            assert "void" in reviews[1].text

            summary = tree.by_id("mesh-summary").text
            assert "2 live claims" in summary
            assert "1 overlap" in summary
            assert "1 open review" in summary
            links = tree.by_id("mesh-links").find_all("tr", data_peer=True)
            assert [p.get("data-peer") for p in links] == [b.coop.key]
            assert fold["digest"] in tree.by_id("mesh-journal").text

            assert "<script>alert" not in body
            assert "<img src=x" not in body
            assert str(markupsafe.escape(HOSTILE)) in body
            assert HOSTILE in tree.by_id("mesh-claims").text
            assert a.root.as_posix() not in body

            live = await page(http, claims="live")
            assert live.by_id("mesh-claims-filter").one("option", selected=True).get("value") == "live"

            etag = answer.headers["ETag"]
            fragment = {**HTML, FRAGMENT_HEADER: "main", "If-None-Match": etag}
            assert (await http.get("/cockpit/mesh", headers=fragment)).status_code == 304
            await post(a, "claims/release", {"claim": held["key"]})
            moved = await http.get("/cockpit/mesh", headers=fragment)
            assert moved.status_code == 200
            assert moved.headers["ETag"] != etag
            released = parse(moved.text).by_id("mesh-claims").one("tr", data_claim=held["key"])
            assert released.get("data-standing") == "released"

            for href in sorted({h for h in tree.hrefs() if not h.startswith("#")}):
                followed = await http.get(href, headers=HTML, timeout=30)
                assert followed.status_code < 400, (href, followed.status_code)

            home_page = parse((await http.get("/", headers=HTML, timeout=30)).text).by_id("home-mesh").text
            assert "1 live peer" in home_page
            assert "1 live claim" in home_page
            assert "1 open review" in home_page
