"""The plan's pages: the board, waves, roadmap, the issues list, one issue, one milestone, the findings.

Every page is the answer of the `plan.*` capabilities asked through the executor (`Cockpit.ask`), rendered for
a person, and live: a transition made from the command line, or a `git pull`, moves the repository generation,
and an open page shows the new plan without a reload. Query parameters are checked here before anything is
asked: an unknown parameter, a status that is not an issue status or a page that is not a number is the 400
page; an unknown milestone or record is the 404 page the capability answers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import markupsafe
import msgspec
import trio
from quart import Response, request
from quart_trio import QuartTrio

from svc._errors import InvalidInput, NotFound
from svc.api.cockpit._render import PAGE_HEADERS, Cockpit, page_url
from svc.plan import FINDING_CODES, FINDING_LEVELS, ISSUE_STATUSES
from svc.runtime import Actor

__all__ = ["BOARD_COLUMN_CARDS", "LIST_PAGE_SIZE", "WARNINGS_PER_CODE", "WAVE_ISSUES", "Card", "routes"]

#: Cards a column of the board shows before "and N more" (a link to the issues list of that status).
BOARD_COLUMN_CARDS = 100
#: Issues of one page of the issues list (and findings of one page of a code's findings).
LIST_PAGE_SIZE = 200
#: Warnings of one code the findings page shows before "N more" (a link to that code's findings).
WARNINGS_PER_CODE = 20
#: Issues of one wave the waves page shows before "and N more" (a link to the issues list of that wave).
WAVE_ISSUES = 100

#: The sub-navigation of every plan page: its id, label and path.
SUBNAV = (
    ("board", "Board", "/cockpit/plan"),
    ("waves", "Waves", "/cockpit/plan/waves"),
    ("roadmap", "Roadmap", "/cockpit/plan/roadmap"),
    ("issues", "Issues", "/cockpit/plan/issues"),
    ("findings", "Findings", "/cockpit/plan/findings"),
)

#: The stamp fields of an issue record, in the order of the moves that write them.
STAMPS = ("started_at", "verified_at", "completed_at")
#: Fields of an issue record the issue page shows in its own places (everything else is shown as authored).
_ISSUE_SHOWN = frozenset(
    {
        "id",
        "milestone",
        "title",
        "slug",
        "priority",
        "profile",
        "parallel_safe",
        "objective",
        "scope",
        "depends_on",
        "serves",
        *STAMPS,
        "started_event",
        "verified_event",
        "completed_event",
    }
)
#: Fields of a milestone record the milestone page shows in its own places.
_MILESTONE_SHOWN = frozenset({"id", "title", "slug", "priority", "order", "version", "outcome", "depends_on"})
_MAX_WAVE = 4_294_967_295
_MAX_PAGE = 1_000_000
_DIGITS = re.compile(r"[0-9]{1,10}")
_ACTOR = Actor(kind="http", peer="cockpit")
_Shape = TypeVar("_Shape")


class Card(msgspec.Struct, frozen=True, kw_only=True):
    """The facts of an issue a card or a row shows (decoding only these keeps a 10,000-issue page fast)."""

    id: str
    title: str
    status: str
    milestone: str
    priority: str
    wave: int
    evidence_have: int
    evidence_need: int


class _Vocabulary(msgspec.Struct, frozen=True):
    issue: list[str]


class _CardList(msgspec.Struct, frozen=True):
    """`plan.issues`, as much of it as a page shows."""

    issues: list[Card]
    total: int
    statuses: _Vocabulary


class _Wave(msgspec.Struct, frozen=True):
    wave: int
    issues: list[Card]


class _Waves(msgspec.Struct, frozen=True):
    """`plan.waves`, as much of it as a page shows."""

    waves: list[_Wave]
    serialised_by_scope: list[dict[str, Any]]


class _Id(msgspec.Struct, frozen=True):
    id: str


class _Ids(msgspec.Struct, frozen=True):
    issues: list[_Id] = []
    milestones: list[_Id] = []


async def _ask_as(cockpit: Cockpit, capability_id: str, params: Mapping[str, Any], shape: type[_Shape]) -> _Shape:
    """`Cockpit.ask`, the answer decoded into `shape` (the fields a page does not show are skipped, not built).

    Raises:
        SvcError: the capability's refusal.
    """
    cap = cockpit.registry.get(capability_id)
    if cap is None:
        raise NotFound(f"no capability {capability_id}")
    decoded = cockpit.executor.decode_value(cap, dict(params))
    body = await cockpit.executor.call(cap, decoded, actor=_ACTOR)
    return msgspec.json.decode(body, type=shape)


# -- query parameters -------------------------------------------------------------------------------


def _args(allowed: Iterable[str]) -> dict[str, str]:
    """The page's query parameters (an empty value counts as absent), each given once and known.

    Raises:
        InvalidInput: a parameter the page does not take, or one given twice.
    """
    names = tuple(allowed)
    out: dict[str, str] = {}
    for key in request.args:
        values = request.args.getlist(key)
        if key not in names:
            takes = ", ".join(names) if names else "none"
            raise InvalidInput(f"this page takes no parameter {key!r} (it takes: {takes})")
        if len(values) > 1:
            raise InvalidInput(f"the parameter {key!r} is given {len(values)} times")
        if values[0] != "":
            out[key] = values[0]
    return out


def _number(args: Mapping[str, str], key: str, *, low: int, high: int) -> int | None:
    """The parameter `key` as a whole number in [low, high], or None when absent.

    Raises:
        InvalidInput: not a whole number, or out of bounds.
    """
    text = args.get(key)
    if text is None:
        return None
    if _DIGITS.fullmatch(text) is None or not low <= int(text) <= high:
        raise InvalidInput(f"{key} must be a whole number from {low} to {high}, got {text!r}")
    return int(text)


def _choice(args: Mapping[str, str], key: str, allowed: tuple[str, ...]) -> str | None:
    """The parameter `key` when it is one of `allowed`, or None when absent.

    Raises:
        InvalidInput: a value outside `allowed`.
    """
    value = args.get(key)
    if value is not None and value not in allowed:
        raise InvalidInput(f"{key} {value!r} is not one of {', '.join(allowed)}")
    return value


# -- shaping answers --------------------------------------------------------------------------------


@dataclass
class Pager:
    """One page of a long list: which page, how many, and the links to the pages around it."""

    page: int
    pages: int
    total: int
    first: int
    last: int
    previous: str | None = None
    following: str | None = None


def _pager(total: int, page: int, path: str, params: Mapping[str, Any]) -> Pager:
    """The page `page` (from 1) of `total` items, LIST_PAGE_SIZE a page.

    Raises:
        InvalidInput: a page past the last one.
    """
    pages = max(1, -(-total // LIST_PAGE_SIZE))
    if page > pages:
        raise InvalidInput(f"page {page} is past the last page ({pages}) of {total} items")
    first = (page - 1) * LIST_PAGE_SIZE
    last = min(total, first + LIST_PAGE_SIZE)
    return Pager(
        page=page,
        pages=pages,
        total=total,
        first=first,
        last=last,
        previous=page_url(path, **params, page=page - 1) if page > 1 else None,
        following=page_url(path, **params, page=page + 1) if page < pages else None,
    )


@dataclass
class Authored:
    """A value of an authored record made readable: prose or a line of Markdown, text, a list or a mapping."""

    kind: str
    text: str = ""
    html: markupsafe.Markup = field(default_factory=markupsafe.Markup)
    items: list[Authored] = field(default_factory=list)
    pairs: list[tuple[str, Authored]] = field(default_factory=list)


def _label(key: str) -> str:
    """`acceptance_criteria` as `Acceptance criteria`."""
    words = key.replace("_", " ").replace("-", " ").strip()
    return words[:1].upper() + words[1:] if words else key


def _authored(cockpit: Cockpit, value: Any, *, depth: int = 0) -> Authored:
    """`value` of a record as a person reads it: strings of words as Markdown, lists and mappings nested."""
    if isinstance(value, str):
        if " " not in value.strip() or depth > 2:
            return Authored(kind="text", text=value)
        if depth == 0:
            return Authored(kind="prose", html=markupsafe.Markup(cockpit.markdown_html(value)))
        # An item of a list or a mapping: one line of Markdown (raw HTML off, as every rendering here).
        inline: str = cockpit.markdown.renderInline(value)
        return Authored(kind="inline", html=markupsafe.Markup(inline))
    if isinstance(value, list):
        return Authored(kind="list", items=[_authored(cockpit, v, depth=depth + 1) for v in value])
    if isinstance(value, dict):
        pairs = [(_label(str(k)), _authored(cockpit, v, depth=depth + 1)) for k, v in value.items()]
        return Authored(kind="mapping", pairs=pairs)
    if isinstance(value, bool):
        return Authored(kind="text", text="yes" if value else "no")
    if value is None:
        return Authored(kind="text", text="—")
    return Authored(kind="text", text=str(value))


def _sections(cockpit: Cockpit, record: Mapping[str, Any], shown: frozenset[str]) -> list[tuple[str, Authored]]:
    """The authored fields of `record` a page does not show elsewhere, in the record's order."""
    return [(_label(k), _authored(cockpit, v)) for k, v in record.items() if k not in shown]


@dataclass
class Stamp:
    """One stamp of an issue: as written in its record, whether the plan counts it, and what the plan says."""

    field: str
    written: str
    state: str
    messages: list[str]


def _stamps(record: Mapping[str, Any], findings: list[dict[str, Any]]) -> list[Stamp]:
    """The three stamps of an issue: proven, unproven (a `stamp_without_event` failure names it) or absent.

    A stamp the plan does not count still reads in the derived issue as written; what tells it apart is the
    plan's failure about it. A `ledger_gap` warning (sealed, its ledger event missing) is shown beside a proven
    stamp.
    """
    out: list[Stamp] = []
    for name in STAMPS:
        raw = record.get(name)
        written = "" if raw is None else str(raw)
        about = [f for f in findings if f["code"] in ("stamp_without_event", "ledger_gap")]
        mine = [f for f in about if f["message"].startswith(f"{name} ")]
        if not written:
            state = "absent"
        elif any(f["code"] == "stamp_without_event" for f in mine):
            state = "unproven"
        else:
            state = "proven"
        out.append(Stamp(field=name, written=written, state=state, messages=[f["message"] for f in mine]))
    return out


def _milestone_choices(status: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(id, title) of every milestone of a `plan.status` answer, for a select."""
    return [(m["id"], m["title"]) for m in status["milestones"]]


# -- pages ------------------------------------------------------------------------------------------


def routes(app: QuartTrio, cockpit: Cockpit) -> None:
    """The plan's pages under `/cockpit/plan`."""

    def page(template: str, title: str, current: str, **context: Any) -> Response:
        return cockpit.render(
            template, section="plan", title=title, live=True, topics="plan", subnav=SUBNAV, current=current, **context
        )

    @app.get("/cockpit/plan")
    async def plan_board() -> Response:
        unchanged = cockpit.unchanged()
        if unchanged is not None:
            return unchanged
        args = _args(("milestone",))
        milestone = args.get("milestone")
        answers: dict[str, Any] = {}

        async def ask(name: str, capability: str, params: dict[str, Any]) -> None:
            answers[name] = await cockpit.ask(capability, params)

        async def ask_issues() -> None:
            answers["issues"] = await _ask_as(cockpit, "plan.issues", {"milestone": milestone}, _CardList)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask_issues)
            nursery.start_soon(ask, "next", "plan.next", {"milestone": milestone})
            nursery.start_soon(ask, "status", "plan.status", {})
        issues: _CardList = answers["issues"]
        status = answers["status"]
        # `plan.next` omits what is absent: the issue or the reason, the notes, the unproven stamps.
        nxt = {"issue": None, "reason": None, "notes": [], "unproven_stamps": [], **answers["next"]}
        columns: dict[str, list[Card]] = {word: [] for word in issues.statuses.issue}
        for issue in issues.issues:
            columns.setdefault(issue.status, []).append(issue)
        board = [
            {
                "status": word,
                "total": len(cards),
                "cards": cards[:BOARD_COLUMN_CARDS],
                "more": max(0, len(cards) - BOARD_COLUMN_CARDS),
                "more_url": page_url("/cockpit/plan/issues", status=word, milestone=milestone),
            }
            for word, cards in columns.items()
        ]
        return page(
            "plan_board.html",
            "Plan board",
            "board",
            board=board,
            total=issues.total,
            next=nxt,
            milestone=milestone,
            milestones=_milestone_choices(status),
            project=status["project"],
        )

    @app.get("/cockpit/plan/waves")
    async def plan_waves() -> Response:
        unchanged = cockpit.unchanged()
        if unchanged is not None:
            return unchanged
        args = _args(("milestone",))
        milestone = args.get("milestone")
        waves = await _ask_as(cockpit, "plan.waves", {"milestone": milestone}, _Waves)
        status = await cockpit.ask("plan.status", {})
        shown = [
            {
                "wave": w.wave,
                "total": len(w.issues),
                "issues": w.issues[:WAVE_ISSUES],
                "more": max(0, len(w.issues) - WAVE_ISSUES),
                "more_url": page_url("/cockpit/plan/issues", wave=w.wave, milestone=milestone),
            }
            for w in waves.waves
        ]
        return page(
            "plan_waves.html",
            "Plan waves",
            "waves",
            waves=shown,
            conflicts=waves.serialised_by_scope,
            milestone=milestone,
            milestones=_milestone_choices(status),
        )

    @app.get("/cockpit/plan/roadmap")
    async def plan_roadmap() -> Response:
        unchanged = cockpit.unchanged()
        if unchanged is not None:
            return unchanged
        _args(())
        roadmap = await cockpit.ask("plan.roadmap", {})
        return page("plan_roadmap.html", "Roadmap", "roadmap", roadmap=roadmap)

    @app.get("/cockpit/plan/issues")
    async def plan_issues() -> Response:
        unchanged = cockpit.unchanged()
        if unchanged is not None:
            return unchanged
        args = _args(("status", "milestone", "wave", "page"))
        chosen = {
            "status": _choice(args, "status", ISSUE_STATUSES),
            "milestone": args.get("milestone"),
            "wave": _number(args, "wave", low=0, high=_MAX_WAVE),
        }
        number = _number(args, "page", low=1, high=_MAX_PAGE) or 1
        answer = await _ask_as(cockpit, "plan.issues", chosen, _CardList)
        status = await cockpit.ask("plan.status", {})
        pager = _pager(answer.total, number, "/cockpit/plan/issues", chosen)
        return page(
            "plan_issues.html",
            "Plan issues",
            "issues",
            issues=answer.issues[pager.first : pager.last],
            total=answer.total,
            pager=pager,
            chosen=chosen,
            statuses=answer.statuses.issue,
            milestones=_milestone_choices(status),
        )

    @app.get("/cockpit/plan/issue")
    async def plan_issue() -> Response:
        unchanged = cockpit.unchanged()
        if unchanged is not None:
            return unchanged
        record_id = _required(_args(("id",)), "id")
        answer = await cockpit.ask("plan.record", {"id": record_id})
        if answer["kind"] != "issue":
            return _moved(page_url("/cockpit/plan/milestone", id=record_id))
        derived = answer["derived"]
        waits = {i["id"]: i for i in answer["issues"]}
        return page(
            "plan_issue.html",
            f"{derived['id']} {derived['title']}",
            "",
            answer=answer,
            issue=derived,
            objective=markupsafe.Markup(cockpit.markdown_html(derived["objective"])) if derived["objective"] else "",
            depends_on=[(dep, waits.get(dep)) for dep in dict.fromkeys(derived["depends_on"])],
            stamps=_stamps(answer["record"], answer["findings"]),
            sections=_sections(cockpit, answer["record"], _ISSUE_SHOWN),
        )

    @app.get("/cockpit/plan/milestone")
    async def plan_milestone() -> Response:
        unchanged = cockpit.unchanged()
        if unchanged is not None:
            return unchanged
        record_id = _required(_args(("id",)), "id")
        answer = await cockpit.ask("plan.record", {"id": record_id})
        if answer["kind"] != "milestone":
            return _moved(page_url("/cockpit/plan/issue", id=record_id))
        derived = answer["derived"]
        return page(
            "plan_milestone.html",
            f"{derived['id']}: {derived['title']}",
            "",
            answer=answer,
            milestone=derived,
            outcome=markupsafe.Markup(cockpit.markdown_html(derived["outcome"])) if derived["outcome"] else "",
            sections=_sections(cockpit, answer["record"], _MILESTONE_SHOWN),
        )

    @app.get("/cockpit/plan/findings")
    async def plan_findings() -> Response:
        unchanged = cockpit.unchanged()
        if unchanged is not None:
            return unchanged
        args = _args(("level", "code", "page"))
        chosen = {"level": _choice(args, "level", FINDING_LEVELS), "code": _choice(args, "code", FINDING_CODES)}
        number = _number(args, "page", low=1, high=_MAX_PAGE) or 1
        answer = await cockpit.ask("plan.validate", chosen)
        findings: list[dict[str, Any]] = answer["findings"]
        known = await _record_ids(cockpit) if findings else frozenset()
        pager: Pager | None = None
        listed: list[dict[str, Any]] = []
        failures: list[dict[str, Any]] = []
        groups: list[dict[str, Any]] = []
        if chosen["code"] is not None:
            # One code: every finding of it, a page at a time.
            pager = _pager(len(findings), number, "/cockpit/plan/findings", chosen)
            listed = findings[pager.first : pager.last]
        else:
            # Every code: the failures in full, the warnings grouped by code, the first few of each.
            if number != 1:
                raise InvalidInput("page applies to the findings of one code (give code)")
            failures = [f for f in findings if f["level"] == "FAIL"]
            by_code: dict[str, list[dict[str, Any]]] = {}
            for f in findings:
                if f["level"] != "FAIL":
                    by_code.setdefault(f["code"], []).append(f)
            groups = [
                {
                    "code": code,
                    "total": len(items),
                    "findings": items[:WARNINGS_PER_CODE],
                    "more": max(0, len(items) - WARNINGS_PER_CODE),
                    "more_url": page_url("/cockpit/plan/findings", code=code, level="WARN"),
                }
                for code, items in by_code.items()
            ]
        return page(
            "plan_findings.html",
            "Plan findings",
            "findings",
            answer=answer,
            chosen=chosen,
            failures=failures,
            groups=groups,
            listed=listed,
            pager=pager,
            known=known,
            levels=FINDING_LEVELS,
            codes=FINDING_CODES,
        )


def _moved(location: str) -> Response:
    """A redirect to the page of a record of the other kind (a milestone id asked as an issue, or the reverse)."""
    return Response("", status=302, headers={**PAGE_HEADERS, "Location": location})


def _required(args: Mapping[str, str], key: str) -> str:
    """The parameter `key`, which the page needs.

    Raises:
        InvalidInput: the parameter is absent or empty.
    """
    value = args.get(key)
    if value is None:
        raise InvalidInput(f"this page needs the parameter {key} (e.g. ?{key}=...)")
    return value


async def _record_ids(cockpit: Cockpit) -> frozenset[str]:
    """The ids of every milestone and issue of the plan: a finding's subject links to its page when it is one."""
    issues = await _ask_as(cockpit, "plan.issues", {}, _Ids)
    roadmap = await _ask_as(cockpit, "plan.roadmap", {}, _Ids)
    return frozenset(i.id for i in issues.issues) | frozenset(m.id for m in roadmap.milestones)
