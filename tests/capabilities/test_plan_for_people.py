"""What the plan tells a person: the filters of `plan.validate`, the failures `plan.status` and `plan.next` name,
why a READY issue's stamps do not count, and the one error of a checkout without an `.ai/` layer on every surface."""

from __future__ import annotations

import functools
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
import trio
from asyncclick.testing import CliRunner
from mcp import types

from svc._errors import InvalidInput
from svc.api import LocalBackend, serve_http
from svc.capabilities import builtin_registry
from svc.cli import build_cli
from svc.host._service import open_service
from svc.layer import Repository
from svc.plan import FAILURES_COMMAND, FINDING_CODES
from svc.runtime import Actor, Executor
from tests.api.test_mcp import connect
from tests.conftest import make_checkout
from tests.plan._records import issue, milestone, write_layer

CLI = Actor(kind="cli")
#: The seal domain under which the other tool sealed the corpus's five sealed issues.
OTHER_DOMAIN = "majordomus.plan-event/v1"
SEALED_ELSEWHERE = {"I0837", "I1403", "I2096", "I2097", "I2293"}
#: Every plan query the command line runs, with the arguments it needs.
PLAN_COMMANDS: list[list[str]] = [
    ["plan"],
    ["plan", "status"],
    ["plan", "next"],
    ["plan", "validate"],
    ["plan", "issues"],
    ["plan", "roadmap"],
    ["plan", "waves"],
    ["plan", "record", "I0001"],
    ["plan", "start", "I0001"],
]


async def _answer(ex: Executor, cap_id: str, **params: object) -> Any:
    cap = builtin_registry().by_id[cap_id]
    return msgspec.json.decode(await ex.call(cap, ex.decode_value(cap, params), actor=CLI))


@pytest.fixture
async def corpus_executor(corpus_copy: Path) -> AsyncIterator[Executor]:
    async with open_service(Repository.discover(corpus_copy), surface="cli", watch=False) as ex:
        yield ex


async def test_validate_filters_by_code_and_level_and_always_counts_every_finding(corpus_executor: Executor) -> None:
    ex = corpus_executor
    whole = await _answer(ex, "plan.validate")
    findings = whole["findings"]
    assert whole["counts"]["by_level"] == {
        "FAIL": sum(f["level"] == "FAIL" for f in findings),
        "WARN": sum(f["level"] == "WARN" for f in findings),
    }
    codes = [f["code"] for f in findings]
    assert whole["counts"]["by_code"] == {code: codes.count(code) for code in sorted(set(codes))}
    assert set(codes) <= set(FINDING_CODES)
    failures = await _answer(ex, "plan.validate", level="FAIL")
    assert failures["findings"] == [f for f in findings if f["level"] == "FAIL"]
    assert len(failures["findings"]) == whole["failures"] > 0
    scope = await _answer(ex, "plan.validate", code="scope_conflict", level="WARN")
    assert scope["findings"] == [f for f in findings if f["code"] == "scope_conflict"]
    assert 0 < len(scope["findings"]) < len(findings)
    for filtered in (failures, scope):
        assert {k: v for k, v in filtered.items() if k != "findings"} == {
            k: v for k, v in whole.items() if k != "findings"
        }
    none = await _answer(ex, "plan.validate", code="scope_conflict", level="FAIL")
    assert none["findings"] == []
    assert none["valid"] is False
    for bad in ({"code": "no_such_code"}, {"level": "INFO"}, {"level": "fail"}):
        with pytest.raises(InvalidInput):
            await _answer(ex, "plan.validate", **bad)


async def test_status_and_next_name_the_failures_and_the_command_that_lists_them(corpus_executor: Executor) -> None:
    ex = corpus_executor
    failures = (await _answer(ex, "plan.validate"))["failures"]
    assert failures > 0
    status = await _answer(ex, "plan.status")
    assert (status["failures"], status["failures_command"]) == (failures, FAILURES_COMMAND)
    assert FAILURES_COMMAND == "svc plan validate --level FAIL"
    answer = await _answer(ex, "plan.next")
    assert (answer["failures"], answer["failures_command"]) == (failures, FAILURES_COMMAND)
    assert answer["notes"][0].startswith(f"the plan is invalid: {failures} failures (`{FAILURES_COMMAND}` lists them)")


async def test_next_says_why_the_recommended_issue_that_looks_finished_is_ready(corpus_executor: Executor) -> None:
    answer = await _answer(corpus_executor, "plan.next")
    assert answer["issue"]["id"] == "I0010"
    assert answer["issue"]["status"] == "READY"
    stamps = answer["unproven_stamps"]
    assert [(s["field"], s["stamp"], s["event"], s["reason"]) for s in stamps] == [
        ("started_at", "2026-09-04T03:33:05Z", "plan_start", "unsealed"),
        ("verified_at", "2026-09-04T05:14:43Z", "plan_verify", "unsealed"),
        ("completed_at", "2026-09-04T05:14:45Z", "plan_done", "unsealed"),
    ]
    assert stamps[0]["message"] == (
        "started_at 2026-09-04T03:33:05Z does not count: it has no started_event seal and unsealed_stamps does "
        "not list 'started_at 2026-09-04T03:33:05Z'"
    )
    assert answer["notes"][1] == (
        "I0010 is READY although its record carries started_at 2026-09-04T03:33:05Z, verified_at "
        "2026-09-04T05:14:43Z, completed_at 2026-09-04T05:14:45Z: a stamp counts only when its seal proves it "
        "(or unsealed_stamps excuses it as a legacy stamp), and none of these does, so they move no status "
        "(see unproven_stamps)"
    )


async def test_stamp_without_event_names_the_other_tools_domain_and_the_remedy(corpus_executor: Executor) -> None:
    answer = await _answer(corpus_executor, "plan.validate", code="stamp_without_event")
    elsewhere = [f for f in answer["findings"] if f["subject"] in SEALED_ELSEWHERE]
    assert {f["subject"] for f in elsewhere} == SEALED_ELSEWHERE
    assert len(elsewhere) == 11
    for finding in elsewhere:
        assert finding["message"].endswith(
            f"seals it under the domain {OTHER_DOMAIN}, not svc's; `svc plan reseal --domain {OTHER_DOMAIN}` "
            "re-seals it"
        )
    unsealed = [f for f in answer["findings"] if f["subject"] == "I0010"]
    assert unsealed[0]["message"] == (
        "started_at 2026-09-04T03:33:05Z has no plan_start event: started_event is absent or does not seal it, "
        "and only `svc plan start` writes the stamp"
    )


async def test_a_valid_plan_has_no_failure_to_name(tmp_path: Path) -> None:
    root = make_checkout(tmp_path / "valid", layer=False)
    write_layer(root, [milestone("M1")], [issue("I0001")])
    async with open_service(Repository.discover(root), surface="cli", watch=False) as ex:
        status = await _answer(ex, "plan.status")
        answer = await _answer(ex, "plan.next")
    assert status["failures"] == 0
    assert "failures_command" not in status
    assert (answer["failures"], answer["issue"]["id"]) == (0, "I0001")
    assert not {"failures_command", "unproven_stamps", "notes"} & set(answer)


# --- a checkout without an .ai/ layer -------------------------------------------------------------------------


def _bare(tmp_path: Path, *, git: bool) -> Path:
    return make_checkout(tmp_path / ("bare-git" if git else "bare-dir"), layer=False, git=git).resolve()


@pytest.fixture
async def bare_server(tmp_path: Path, nursery: trio.Nursery) -> AsyncIterator[tuple[str, Path]]:
    root = _bare(tmp_path, git=True)
    async with open_service(Repository.discover(root), surface="http", watch=False) as ex:
        shutdown = trio.Event()
        url: str = await nursery.start(functools.partial(serve_http, ex, port=0, shutdown=shutdown))
        yield url, root
        shutdown.set()


async def test_http_answers_404_for_every_plan_query_of_a_checkout_without_a_layer(
    bare_server: tuple[str, Path],
) -> None:
    url, root = bare_server
    routes = [
        (cap.exposure.http.path, example.input)
        for cap in builtin_registry().capabilities
        if cap.module == "plan" and cap.exposure.http is not None and cap.exposure.http.method == "GET"
        for example in cap.examples
    ]
    assert len(routes) >= 9
    async with httpx.AsyncClient(base_url=url) as http:
        for path, params in routes:
            r = await http.get(path, params=params)
            assert r.status_code == 404, (path, r.text)
            assert r.json() == {
                "error": {
                    "code": "not_found",
                    "message": (
                        "there is no .ai/ layer to read: the checkout bare-git/ has no .ai/ folder at its top "
                        "level; create .ai/manifest.yaml (schema: ai-repository/v1) to start one, or run svc in "
                        "a checkout that has one"
                    ),
                }
            }
            assert str(root) not in r.text
    assert not (root / ".ai").exists()


async def test_mcp_answers_a_tool_error_for_a_checkout_without_a_layer(tmp_path: Path) -> None:
    root = _bare(tmp_path, git=True)
    async with (
        open_service(Repository.discover(root), surface="mcp", watch=False) as ex,
        connect(LocalBackend(ex), "2026-07-28") as client,
    ):
        for tool in ("svc_plan_status", "svc_plan_next", "svc_plan_validate", "svc_plan"):
            result = await client.call_tool(tool, {})
            assert result.is_error is True, tool
            text = result.content[0]
            assert isinstance(text, types.TextContent)
            assert text.text.startswith("not_found: there is no .ai/ layer to read: the checkout bare-git/ ")
            assert str(root) not in text.text
        moved = await client.call_tool("svc_plan_transition", {"issue": "I0001", "transition": "start"})
        assert moved.is_error is True
        assert moved.meta is not None
        assert moved.meta["svc"] == {"error": {"code": "not_found"}}


@pytest.mark.parametrize("git", [True, False], ids=["git-checkout", "no-git"])
async def test_every_plan_command_exits_10_with_one_line_without_a_layer(tmp_path: Path, git: bool) -> None:
    root = _bare(tmp_path, git=git)
    expected = (
        "svc: not_found: there is no .ai/ layer to read: the checkout bare-git/ has no .ai/ folder at its top "
        "level; create .ai/manifest.yaml (schema: ai-repository/v1) to start one, or run svc in a checkout that "
        "has one\n"
        if git
        else "svc: not_found: there is no .ai/ layer to read: bare-dir/ is not inside a Git checkout and has no "
        ".ai/ folder; run svc inside a checkout that has one (or name it with --repo)\n"
    )
    commands = [*PLAN_COMMANDS, ["plan", "repair-ledger"], ["plan", "reseal", "--domain", OTHER_DOMAIN]]
    for words in commands:
        result = await CliRunner().invoke(build_cli(), ["--repo", str(root), *words], catch_exceptions=False)
        assert (result.exit_code, result.stdout, result.stderr) == (10, "", expected), words
    assert sorted(p.name for p in root.iterdir()) == ([".git"] if git else [])


async def test_a_layer_without_plan_records_is_still_an_empty_valid_plan(tmp_path: Path) -> None:
    root = make_checkout(tmp_path / "layered")
    shutil.rmtree(root / ".ai" / "repo" / "project", ignore_errors=True)
    async with open_service(Repository.discover(root), surface="cli", watch=False) as ex:
        answer = await _answer(ex, "plan.validate")
    assert (answer["valid"], answer["issues"]) == (True, 0)
