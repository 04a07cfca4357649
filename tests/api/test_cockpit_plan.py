"""The plan's pages over a real server: what they show is what `/api/v1/plan/...` answers, and they stay live.

The checkout holds a small plan (tests/plan's `small_plan`) plus enough READY issues to cap a board column and
page the issues list, an issue whose title and objective are hostile HTML, one with a stamp no seal proves,
one requiring no evidence (a warning) and two issues of one wave sharing a scope.
"""

from __future__ import annotations

import functools
import subprocess
from collections.abc import AsyncIterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import msgspec
import pytest
import trio

from svc.api.cockpit._plan import BOARD_COLUMN_CARDS, LIST_PAGE_SIZE, WARNINGS_PER_CODE
from svc.host._service import open_service
from svc.layer import Repository
from svc.runtime import Actor, Executor
from tests.api.conftest import serving
from tests.conftest import make_checkout
from tests.plan._records import issue, write_layer
from tests.plan.conftest import small_plan

HTML = {"Accept": "text/html"}
FRAGMENT = {**HTML, "X-Svc-Fragment": "main"}
HOSTILE_TITLE = '<script>alert("title")</script> "><img src=x onerror=alert(1)>'
HOSTILE_OBJECTIVE = "Do it <img src=x onerror=alert(2)> and <script>alert(3)</script> **now**"
#: READY issues added to the small plan: more than a column shows, more than one page of the issues list.
BULK = LIST_PAGE_SIZE + 10
PAGES = (
    "/cockpit/plan",
    "/cockpit/plan/waves",
    "/cockpit/plan/roadmap",
    "/cockpit/plan/issues",
    "/cockpit/plan/findings",
    "/cockpit/plan/issue?id=I0002",
    "/cockpit/plan/milestone?id=M1",
)
_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
)


class Page(HTMLParser):
    """Each element of a page with the attributes of the elements around it, and the links inside `<main>`."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.stack: list[dict[str, str]] = []
        self.elements: list[tuple[str, dict[str, str], list[dict[str, str]]]] = []
        self.links: list[str] = []
        self.in_main = text.lstrip().startswith("<nav") or "<main" not in text
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v or "" for k, v in attrs}
        if tag == "main":
            self.in_main = True
        self.elements.append((tag, found, list(self.stack)))
        if tag == "a" and self.in_main and "href" in found:
            self.links.append(found["href"])
        if tag not in _VOID:
            self.stack.append({"tag": tag, **found})

    def handle_endtag(self, tag: str) -> None:
        if tag == "main":
            self.in_main = False
        for n in range(len(self.stack) - 1, -1, -1):
            if self.stack[n]["tag"] == tag:
                del self.stack[n:]
                break

    def having(self, attribute: str) -> list[tuple[str, dict[str, str], list[dict[str, str]]]]:
        """The elements carrying `attribute`, in document order."""
        return [e for e in self.elements if attribute in e[1]]

    def values(self, attribute: str) -> list[str]:
        """The values of `attribute` in document order."""
        return [attrs[attribute] for _, attrs, _ in self.having(attribute)]

    def inside(self, attribute: str, container: str, value: str) -> list[str]:
        """Values of `attribute` on elements inside an element whose `container` attribute is `value`."""
        return [
            attrs[attribute]
            for _, attrs, around in self.having(attribute)
            if any(a.get(container) == value for a in around)
        ]


def _plan_records() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    milestones, issues = small_plan()
    issues = [dict(i) for i in issues]
    by_id = {i["id"]: i for i in issues}
    by_id["I0002"].update(title=HOSTILE_TITLE, objective=HOSTILE_OBJECTIVE, scope=["src/i0001"])
    issues.append(issue("I0007", milestone="M1", started_at="2026-11-01T10:00:00Z"))
    issues.append(issue("I0008", milestone="M1", evidence_required=[]))
    issues += [issue(f"I{n:04d}", milestone="M1") for n in range(1000, 1000 + BULK)]
    return milestones, issues


@pytest.fixture
def plan_checkout(tmp_path: Path) -> Path:
    """A Git checkout whose plan is `_plan_records()`, committed."""
    root = make_checkout(tmp_path / "planned", layer=False)
    write_layer(root, *_plan_records())
    run = functools.partial(subprocess.run, cwd=root, check=True, capture_output=True)
    run(["git", "add", "-A"])
    run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "plan"])
    return root


@pytest.fixture
async def site(plan_checkout: Path, nursery: trio.Nursery) -> AsyncIterator[tuple[httpx.AsyncClient, Executor]]:
    """A real server over `plan_checkout`, with its executor (to move an issue as the CLI does)."""
    async with (
        open_service(Repository.discover(plan_checkout), surface="http", watch=False) as executor,
        serving(executor, nursery) as url,
        httpx.AsyncClient(base_url=url, headers=HTML, timeout=30) as http,
    ):
        yield http, executor


async def _api(http: httpx.AsyncClient, path: str, **params: Any) -> Any:
    r = await http.get(path, params=params, headers={"Accept": "application/json"})
    assert r.status_code == 200, r.text
    return r.json()


async def _page(http: httpx.AsyncClient, path: str, **params: Any) -> tuple[str, Page]:
    r = await http.get(path, params=params) if params else await http.get(path)
    assert r.status_code == 200, r.text[-2000:]
    assert r.headers["content-type"].startswith("text/html")
    assert "'unsafe-inline'" not in r.headers["content-security-policy"]
    return r.text, Page(r.text)


async def test_the_board_shows_every_status_capped_with_the_next_issue(
    site: tuple[httpx.AsyncClient, Executor],
) -> None:
    http, _ = site
    answer = await _api(http, "/api/v1/plan/issues")
    nxt = await _api(http, "/api/v1/plan/next")
    text, page = await _page(http, "/cockpit/plan")
    vocabulary = answer["statuses"]["issue"]
    assert page.values("data-plan-status") == vocabulary
    for word in vocabulary:
        ids = [i["id"] for i in answer["issues"] if i["status"] == word]
        assert page.inside("data-plan-issue", "data-plan-status", word) == ids[:BOARD_COLUMN_CARDS]
        more = page.inside("href", "data-plan-status", word)
        capped = [h for h in more if h.startswith("/cockpit/plan/issues?")]
        if len(ids) > BOARD_COLUMN_CARDS:
            assert capped == [f"/cockpit/plan/issues?status={word}"]
            assert f"and {len(ids) - BOARD_COLUMN_CARDS} more" in text
        else:
            assert capped == []
    ready = [i for i in answer["issues"] if i["status"] == "READY"]
    assert len(ready) > BOARD_COLUMN_CARDS  # the cap is exercised
    flagged = [attrs["data-plan-issue"] for _, attrs, _ in page.having("data-plan-next")]
    assert flagged == [nxt["issue"]["id"]]
    # The milestone filter: the column counts are those of the milestone's issues.
    m2 = await _api(http, "/api/v1/plan/issues", milestone="M2")
    _, filtered = await _page(http, "/cockpit/plan", milestone="M2")
    assert sorted(filtered.values("data-plan-issue")) == sorted(i["id"] for i in m2["issues"])


async def test_the_issues_list_is_paged(site: tuple[httpx.AsyncClient, Executor]) -> None:
    http, _ = site
    answer = await _api(http, "/api/v1/plan/issues", status="READY")
    assert answer["total"] > LIST_PAGE_SIZE
    text, page = await _page(http, "/cockpit/plan/issues", status="READY")
    assert f'Issues <span class="svc-muted">{answer["total"]:,}</span>' in text
    ids = [i["id"] for i in answer["issues"]]
    assert page.values("data-plan-issue") == ids[:LIST_PAGE_SIZE]
    _, second = await _page(http, "/cockpit/plan/issues", status="READY", page=2)
    assert second.values("data-plan-issue") == ids[LIST_PAGE_SIZE : 2 * LIST_PAGE_SIZE]
    assert any("page=1" in link for link in second.links)


async def test_the_issues_list_filters_as_the_api_does(site: tuple[httpx.AsyncClient, Executor]) -> None:
    http, _ = site
    for params in ({"milestone": "M1", "status": "BLOCKED"}, {"wave": 1}, {"status": "DONE"}, {"milestone": "M2"}):
        answer = await _api(http, "/api/v1/plan/issues", **params)
        text, page = await _page(http, "/cockpit/plan/issues", **params)
        assert page.values("data-plan-issue") == [i["id"] for i in answer["issues"]]
        assert page.values("data-plan-issue-status") == [i["status"] for i in answer["issues"]]
        if not answer["issues"]:
            assert "No issue matches." in text


async def test_the_issue_page_shows_the_record_its_stamps_and_both_directions(
    site: tuple[httpx.AsyncClient, Executor],
) -> None:
    http, _ = site
    record = await _api(http, "/api/v1/plan/record", id="I0004")
    _, page = await _page(http, "/cockpit/plan/issue", id="I0004")
    assert page.values("data-plan-depends-on") == record["derived"]["depends_on"] == ["I0001"]
    assert page.values("data-plan-blocked-by") == record["derived"]["blocked_by"]
    assert record["derived"]["status"].lower() in page.inside("data-status", "id", "plan-issue-status")
    waited = {i["id"]: i["status"] for i in record["issues"]}
    assert waited["I0001"].lower() in page.inside("data-status", "data-plan-depends-on", "I0001")
    first = await _api(http, "/api/v1/plan/record", id="I0001")
    _, page = await _page(http, "/cockpit/plan/issue", id="I0001")
    assert page.values("data-plan-dependent") == first["derived"]["dependents"]
    # Stamps: I0003 holds a sealed start (proven); I0007 a start no seal proves, reported by the plan.
    _, active = await _page(http, "/cockpit/plan/issue", id="I0003")
    assert active.values("data-plan-stamp-state") == ["proven", "absent", "absent"]
    unproven = await _api(http, "/api/v1/plan/record", id="I0007")
    text, page = await _page(http, "/cockpit/plan/issue", id="I0007")
    assert page.values("data-plan-stamp-state") == ["unproven", "absent", "absent"]
    assert unproven["derived"]["status"] == "READY"  # the stamp moves no status
    messages = [f["message"] for f in unproven["findings"] if f["code"] == "stamp_without_event"]
    assert messages
    for message in messages:
        assert message.replace("`", "") in text.replace("`", "")
    assert page.values("data-plan-finding") == [f["code"] for f in unproven["findings"]]
    # The authored sections are shown: the acceptance criteria of the record.
    for criterion in unproven["record"]["acceptance_criteria"]:
        assert criterion in text


async def test_an_id_of_the_other_kind_redirects(site: tuple[httpx.AsyncClient, Executor]) -> None:
    http, _ = site
    r = await http.get("/cockpit/plan/issue", params={"id": "M1"})
    assert r.status_code == 302
    assert r.headers["location"].endswith("/cockpit/plan/milestone?id=M1")
    r = await http.get("/cockpit/plan/milestone", params={"id": "I0001"})
    assert r.status_code == 302
    assert r.headers["location"].endswith("/cockpit/plan/issue?id=I0001")


async def test_the_milestone_page_matches_the_record(site: tuple[httpx.AsyncClient, Executor]) -> None:
    http, _ = site
    for mid in ("M1", "M2"):
        record = await _api(http, "/api/v1/plan/record", id=mid)
        text, page = await _page(http, "/cockpit/plan/milestone", id=mid)
        derived = record["derived"]
        assert page.values("data-plan-issue") == [i["id"] for i in record["issues"]]
        assert page.values("data-plan-dependent") == derived["dependents"]
        assert page.values("data-plan-depends-on") == derived["depends_on"]
        assert page.values("data-plan-count") == list(derived["counts"]["by_status"])
        done = derived["counts"]["by_status"]["DONE"]
        progress = [attrs for tag, attrs, _ in page.elements if tag == "progress"]
        assert [(p["value"], p["max"]) for p in progress] == [(str(done), str(derived["counts"]["required"] or 1))]
        assert derived["status"].lower() in page.inside("data-status", "id", "plan-milestone-status")
        assert derived["outcome"] in text


async def test_the_roadmap_is_in_rank_order_with_now_and_next(site: tuple[httpx.AsyncClient, Executor]) -> None:
    http, _ = site
    roadmap = await _api(http, "/api/v1/plan/roadmap")
    _, page = await _page(http, "/cockpit/plan/roadmap")
    assert page.values("data-plan-milestone") == [m["id"] for m in roadmap["milestones"]]
    now = [a["data-plan-milestone"] for _, a, _ in page.having("data-plan-now")]
    upcoming = [a["data-plan-milestone"] for _, a, _ in page.having("data-plan-upcoming")]
    assert now == ([roadmap["now"]] if roadmap["now"] else [])
    assert upcoming == ([roadmap["next"]] if roadmap["next"] else [])
    progress = [(a["value"], a["id"]) for tag, a, _ in page.elements if tag == "progress"]
    assert [v for v, _ in progress] == [str(m["counts"]["by_status"]["DONE"]) for m in roadmap["milestones"]]
    labels = [a["for"] for tag, a, _ in page.elements if tag == "label"]
    assert all(pid in labels for _, pid in progress)


async def test_the_waves_and_their_scope_overlaps(site: tuple[httpx.AsyncClient, Executor]) -> None:
    http, _ = site
    waves = await _api(http, "/api/v1/plan/waves")
    _, page = await _page(http, "/cockpit/plan/waves")
    assert page.values("data-plan-wave") == [str(w["wave"]) for w in waves["waves"]]
    for w in waves["waves"]:
        ids = [i["id"] for i in w["issues"]]
        assert page.inside("data-plan-issue", "data-plan-wave", str(w["wave"])) == ids[:100]
    conflicts = [f["subject"] for f in waves["serialised_by_scope"]]
    assert conflicts  # I0001 and I0002 share src/i0001 in wave 0
    assert page.values("data-plan-conflict") == conflicts


async def test_the_findings_are_counted_and_grouped_as_validate_answers(
    site: tuple[httpx.AsyncClient, Executor],
) -> None:
    http, _ = site
    answer = await _api(http, "/api/v1/plan/validate")
    text, page = await _page(http, "/cockpit/plan/findings")
    assert page.values("data-plan-level-count") == list(answer["counts"]["by_level"])
    assert page.values("data-plan-code-count") == list(answer["counts"]["by_code"])
    failures = [f for f in answer["findings"] if f["level"] == "FAIL"]
    warnings = [f for f in answer["findings"] if f["level"] == "WARN"]
    assert failures
    assert warnings
    shown = page.values("data-plan-finding-level")
    assert shown.count("FAIL") == len(failures)
    codes = list(dict.fromkeys(f["code"] for f in warnings))
    assert page.values("data-plan-warning-code") == codes
    for code in codes:
        group = [f for f in warnings if f["code"] == code]
        assert len(page.inside("data-plan-finding", "data-plan-warning-code", code)) == min(
            len(group), WARNINGS_PER_CODE
        )
    for f in failures:
        assert f["message"].replace("`", "") in text.replace("`", "")
    # One code, one level.
    only = await _api(http, "/api/v1/plan/validate", code="stamp_without_event")
    _, page = await _page(http, "/cockpit/plan/findings", code="stamp_without_event")
    assert page.values("data-plan-finding") == [f["code"] for f in only["findings"]]
    _, page = await _page(http, "/cockpit/plan/findings", level="WARN")
    assert "FAIL" not in page.values("data-plan-finding-level")


async def test_every_link_of_every_plan_page_answers(site: tuple[httpx.AsyncClient, Executor]) -> None:
    """Every link is fetched, except that past the first ten, a link to a record's page is checked by its id.

    A record's page answers 200 exactly when `plan.record` knows the id (the 404 tests hold the converse), so
    an id the API lists stands for a fetch of its page.
    """
    http, _ = site
    issues = {i["id"] for i in (await _api(http, "/api/v1/plan/issues"))["issues"]}
    milestones = {m["id"] for m in (await _api(http, "/api/v1/plan/roadmap"))["milestones"]}
    seen: set[str] = set()
    records = 0
    for path in PAGES:
        _, page = await _page(http, path)
        for href in page.links:
            if href.startswith("#") or href in seen:
                continue
            seen.add(href)
            parts = urlsplit(href)
            assert parts.netloc == "", href
            kind = {"/cockpit/plan/issue": issues, "/cockpit/plan/milestone": milestones}.get(parts.path)
            if kind is not None and records >= 10:
                assert parts.query.startswith("id="), href
                assert parts.query[3:] in kind, href
                continue
            records += kind is not None
            r = await http.get(href)
            assert r.status_code < 400, (path, href, r.status_code)
    assert any(h.startswith("/cockpit/plan/milestone?") for h in seen)
    assert any(h.startswith("/cockpit/plan/findings?code=") for h in seen)
    assert len(seen) > BOARD_COLUMN_CARDS


async def test_hostile_text_is_escaped_everywhere(
    site: tuple[httpx.AsyncClient, Executor], plan_checkout: Path
) -> None:
    http, _ = site
    for path in (*PAGES, "/cockpit/plan/issues?milestone=M1"):
        r = await http.get(path)
        assert r.status_code == 200
        body = r.text
        assert "<img src=x" not in body
        assert "<script>alert" not in body
        assert str(plan_checkout) not in body
        if path in ("/cockpit/plan", "/cockpit/plan/issue?id=I0002"):
            assert "&lt;script&gt;alert(" in body
    text, _ = await _page(http, "/cockpit/plan/issue", id="I0002")
    assert "<strong>now</strong>" in text  # the objective's Markdown is rendered, its raw HTML shown as text
    assert "&lt;img src=x onerror=alert(2)&gt;" in text


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/cockpit/plan?milestone=nope", 404),
        ("/cockpit/plan?colour=red", 400),
        ("/cockpit/plan?milestone=M1&milestone=M2", 400),
        ("/cockpit/plan/waves?milestone=nope", 404),
        ("/cockpit/plan/roadmap?x=1", 400),
        ("/cockpit/plan/issues?status=NOPE", 400),
        ("/cockpit/plan/issues?wave=-1", 400),
        ("/cockpit/plan/issues?wave=one", 400),
        ("/cockpit/plan/issues?wave=99999999999", 400),
        ("/cockpit/plan/issues?page=0", 400),
        ("/cockpit/plan/issues?page=50", 400),
        ("/cockpit/plan/issues?milestone=nope", 404),
        ("/cockpit/plan/issue", 400),
        ("/cockpit/plan/issue?id=I9999", 404),
        ("/cockpit/plan/milestone?id=nope", 404),
        ("/cockpit/plan/findings?level=BAD", 400),
        ("/cockpit/plan/findings?code=nope", 400),
        ("/cockpit/plan/findings?page=2", 400),
    ],
)
async def test_a_bad_parameter_or_unknown_id_is_an_error_page(
    site: tuple[httpx.AsyncClient, Executor], path: str, status: int
) -> None:
    http, _ = site
    r = await http.get(path)
    assert r.status_code == status, r.text[-500:]
    assert r.headers["content-type"].startswith("text/html")
    assert f"<h1>{status} " in r.text


async def test_the_board_and_issue_page_follow_a_transition_made_from_the_cli(
    site: tuple[httpx.AsyncClient, Executor],
) -> None:
    http, executor = site
    pages = ("/cockpit/plan", "/cockpit/plan/issue?id=I0001", "/cockpit/plan/roadmap")
    tags: dict[str, str] = {}
    for path in pages:
        r = await http.get(path)
        assert r.status_code == 200
        tags[path] = r.headers["etag"]
        held = await http.get(path, headers={**FRAGMENT, "If-None-Match": tags[path]})
        assert held.status_code == 304
        assert held.content == b""
    _, board = await _page(http, "/cockpit/plan")
    assert "I0001" in board.inside("data-plan-issue", "data-plan-status", "READY")
    cap = executor.runtime.registry.get("plan.transition")
    assert cap is not None
    params = executor.decode_value(cap, {"issue": "I0001", "transition": "start"})
    moved = msgspec.json.decode(await executor.call(cap, params, actor=Actor(kind="cli")))
    assert (moved["from"], moved["to"]) == ("READY", "ACTIVE")
    r = await http.get("/cockpit/plan", headers={**FRAGMENT, "If-None-Match": tags["/cockpit/plan"]})
    assert r.status_code == 200
    assert r.headers["etag"] != tags["/cockpit/plan"]
    assert not r.text.lstrip().lower().startswith("<!doctype")
    fragment = Page(r.text)
    assert "I0001" in fragment.inside("data-plan-issue", "data-plan-status", "ACTIVE")
    assert "I0001" not in fragment.inside("data-plan-issue", "data-plan-status", "READY")
    r = await http.get("/cockpit/plan/issue?id=I0001", headers={**FRAGMENT, "If-None-Match": tags[pages[1]]})
    assert r.status_code == 200
    issue_page = Page(r.text)
    assert "active" in issue_page.inside("data-status", "id", "plan-issue-status")
    assert issue_page.values("data-plan-stamp-state") == ["proven", "absent", "absent"]


async def test_a_live_page_carries_its_version(site: tuple[httpx.AsyncClient, Executor]) -> None:
    http, _ = site
    for path in PAGES:
        r = await http.get(path)
        page = Page(r.text)
        mains = [a for tag, a, _ in page.elements if tag == "main"]
        assert len(mains) == 1
        assert "data-svc-live" in mains[0]
        assert f'"{mains[0]["data-svc-version"]}"' == r.headers["etag"]
        nav = [a for _, a, _ in page.having("data-plan-nav")]
        assert [a["data-plan-nav"] for a in nav] == ["board", "waves", "roadmap", "issues", "findings"]


@pytest.mark.bound(120)
async def test_the_corpus_renders_every_plan_page(corpus_copy: Path, nursery: trio.Nursery) -> None:
    async with (
        open_service(Repository.discover(corpus_copy), surface="http", watch=False) as executor,
        serving(executor, nursery) as url,
        httpx.AsyncClient(base_url=url, headers=HTML, timeout=60) as http,
    ):
        roadmap = await _api(http, "/api/v1/plan/roadmap")
        issues = await _api(http, "/api/v1/plan/issues")
        validation = await _api(http, "/api/v1/plan/validate")
        # The pages of a sample of records (each costs a whole plan read): every record a failure is about, the
        # first issue of each status, every 16th issue and every 4th milestone.
        ids = [i["id"] for i in issues["issues"]]
        milestones = [m["id"] for m in roadmap["milestones"]]
        firsts = {i["status"]: i["id"] for i in reversed(issues["issues"])}
        failing = {f["subject"] for f in validation["findings"] if f["level"] == "FAIL"}
        sample = sorted({*firsts.values(), *(failing & set(ids)), *ids[::16]})
        paths = [
            "/cockpit/plan",
            "/cockpit/plan/waves",
            "/cockpit/plan/roadmap",
            "/cockpit/plan/findings",
            *(f"/cockpit/plan/findings?code={c}" for c in validation["counts"]["by_code"]),
            *(f"/cockpit/plan/issues?page={n}" for n in range(1, 1 + -(-issues["total"] // LIST_PAGE_SIZE))),
            *(f"/cockpit/plan/milestone?id={m}" for m in sorted({*milestones[::4], *(failing & set(milestones))})),
            *(f"/cockpit/plan/issue?id={i}" for i in sample),
        ]
        for path in paths:
            r = await http.get(path)
            assert r.status_code == 200, (path, r.text[-1000:])
            assert str(corpus_copy) not in r.text
