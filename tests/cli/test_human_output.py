"""Human output: whole text on a terminal (tables, blocks, trees, colour) and stable text when piped.

Every query command is rendered at 80 and 200 columns and piped, on svc's own layer and on the corpus: no
cell is shortened, no key of the answer is left out, no line is wider than the terminal. The views of the
commands whose answers do not move with the registry or the machine are golden snapshots under
`tests/cli/golden/<layer>/`; `SVC_UPDATE_GOLDEN=1` rewrites them after a deliberate change (review the diff).
"""

from __future__ import annotations

import fcntl
import os
import re
import struct
import subprocess
import sys
import termios
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncclick as click
import msgspec
import pytest
import trio
from asyncclick.testing import CliRunner

from svc.capabilities import builtin_registry
from svc.cli import build_cli
from svc.cli._render import render
from svc.cli._terminal import SHOWN_PER_CODE, SUMMARISED, visible_width
from svc.host import open_service
from svc.layer import Repository
from svc.runtime import Actor
from svc.surfaces import CliCommand, cli_tree
from tests.conftest import make_checkout

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("SVC_UPDATE_GOLDEN") == "1"
WIDTHS = (80, 200)
#: Query commands that need an argument, with one that answers on each layer.
ARGUMENTS: dict[tuple[str, ...], dict[str, list[str]]] = {
    ("capabilities", "describe"): {"own": ["plan.next"], "corpus": ["plan.next"]},
    ("plan", "record"): {"own": ["I0001"], "corpus": ["I0010"]},
}
#: Views kept as golden snapshots (their answers move with the layer only, not with the registry or the
#: machine), by command: which of its views. The corpus's piped findings (thousands of lines) are checked whole
#: but not kept.
ALL_VIEWS = ("80 columns", "200 columns", "piped")
TERMINAL = ALL_VIEWS[:2]
SNAPSHOTS: dict[str, dict[str, tuple[str, ...]]] = {
    "own": {
        words: ALL_VIEWS
        for words in (
            "plan",
            "plan issues",
            "plan next",
            "plan record",
            "plan roadmap",
            "plan status",
            "plan validate",
            "plan waves",
            "distribution releases",
            "distribution show",
            "executions list",
            "capabilities describe",
        )
    },
    "corpus": {
        "plan next": ALL_VIEWS,
        "plan record": ALL_VIEWS,
        "plan roadmap": ALL_VIEWS,
        "plan status": ALL_VIEWS,
        "plan validate": TERMINAL,
        "plan waves": TERMINAL,
    },
}
#: Terminal views drawn as trees, which show chosen fields of each node rather than every key (the piped
#: records of the mesh's peer tree have a format of their own, see docs/mesh.md).
TREES = {"plan.waves", "plan.roadmap", "mesh.peers"}
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class Answer(msgspec.Struct, frozen=True):
    """One query command's answer on a layer."""

    words: str
    capability: str
    body: bytes


def _query_commands() -> list[tuple[CliCommand, list[str]]]:
    registry = builtin_registry()
    out: list[tuple[CliCommand, list[str]]] = []
    for spec in cli_tree(registry):
        if spec.capability is None or spec.options is not None or registry.by_id[spec.capability].kind != "query":
            continue
        required = [p for p in spec.parameters if p.required]
        if required and tuple(spec.words) not in ARGUMENTS:
            continue
        out.append((spec, [p.field or "" for p in required]))
    return out


async def _answers(root: Path, layer: str) -> list[Answer]:
    registry = builtin_registry()
    answers: list[Answer] = []
    async with open_service(Repository.discover(root), surface="cli", watch=False) as executor:
        for spec, fields in _query_commands():
            cap = registry.by_id[spec.capability or ""]
            given = ARGUMENTS.get(tuple(spec.words), {}).get(layer, [])
            items = [(k, str(v)) for k, v in (spec.preset or {}).items()] + list(zip(fields, given, strict=True))
            body = await executor.call(cap, executor.decode_text(cap, items), actor=Actor(kind="cli", pid=os.getpid()))
            answers.append(Answer(" ".join(spec.words), cap.id, body))
    return answers


@pytest.fixture(scope="module")
def own_layer(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Answer]]:
    root = make_checkout(tmp_path_factory.mktemp("own") / "checkout")
    return root, trio.run(_answers, root, "own")


@pytest.fixture(scope="module")
def corpus_layer(corpus_copy: Path) -> tuple[Path, list[Answer]]:
    return corpus_copy, trio.run(_answers, corpus_copy, "corpus")


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def _words(value: Any) -> set[str]:
    """The words of every text in an answer."""
    if isinstance(value, dict):
        return {w for v in value.values() for w in _words(v)}
    if isinstance(value, list):
        return {w for v in value for w in _words(v)}
    return set(str(value).split()) if isinstance(value, str) else set()


def _views(answer: Answer) -> dict[str, str]:
    views = {
        f"{w} columns": render(answer.body, capability=answer.capability, tty=True, width=w, color=False)
        for w in WIDTHS
    }
    views["piped"] = render(answer.body, capability=answer.capability, tty=False)
    return views


def _snapshot(views: dict[str, str], words: str) -> str:
    return "".join(f"=== svc {words} ({name}) ===\n{text}" for name, text in views.items())


def _check_whole(answer: Answer, views: dict[str, str], root: Path) -> None:
    value = msgspec.json.decode(answer.body)
    for name, text in views.items():
        where = f"svc {answer.words} ({name})"
        assert text, where
        assert not text.startswith("\n"), where
        assert str(root) not in text, where
        if "…" not in answer.body.decode():
            assert "…" not in text, where
        if name != "piped" and answer.capability != "mesh.peers":
            width = int(name.split()[0])
            assert max(visible_width(line) for line in text.splitlines()) <= width, where
        if answer.capability == "mesh.peers" or (name != "piped" and answer.capability in TREES):
            continue
        shown = text if name == "piped" else text.lower()
        missing = [k for k in _keys(value) if (k if name == "piped" else k.lower()) not in shown]
        assert not missing, (where, missing)
        if name == "piped" or answer.capability not in SUMMARISED:
            assert not _lost(_words(value), text), (where, sorted(_lost(_words(value), text))[:10])


def _lost(words: set[str], text: str) -> set[str]:
    """The words a view does not show: one that fits a column must be whole, a longer one may wrap inside it."""
    seen = set(text.replace(",", " ").split())
    return {w for w in words if w.rstrip(",") not in seen and w[: 20 if len(w) <= 20 else 8] not in text}


def _check_layer(layer: str, root: Path, answers: list[Answer]) -> None:
    stale: list[str] = []
    for answer in answers:
        views = _views(answer)
        _check_whole(answer, views, root)
        if answer.words not in SNAPSHOTS[layer]:
            continue
        path = GOLDEN / layer / (answer.words.replace(" ", "_") + ".txt")
        snapshot = _snapshot({name: views[name] for name in SNAPSHOTS[layer][answer.words]}, answer.words)
        if UPDATE:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(snapshot, encoding="utf-8")
        elif not path.exists() or path.read_text(encoding="utf-8") != snapshot:
            stale.append(str(path.relative_to(GOLDEN)))
    assert not stale, f"views differ from their golden snapshots (SVC_UPDATE_GOLDEN=1 rewrites them): {stale}"


def test_every_query_view_on_svc_s_own_layer_is_whole(own_layer: tuple[Path, list[Answer]]) -> None:
    root, answers = own_layer
    assert {a.words for a in answers} >= set(SNAPSHOTS["own"])
    _check_layer("own", root, answers)


def test_every_query_view_on_the_corpus_is_whole(corpus_layer: tuple[Path, list[Answer]]) -> None:
    root, answers = corpus_layer
    _check_layer("corpus", root, answers)


def _answer(answers: list[Answer], words: str) -> Answer:
    return next(a for a in answers if a.words == words)


def test_the_waves_and_the_roadmap_are_trees_holding_every_issue(corpus_layer: tuple[Path, list[Answer]]) -> None:
    _, answers = corpus_layer
    waves = _answer(answers, "plan waves")
    drawn = render(waves.body, capability=waves.capability, tty=True, width=80, color=False)
    for wave in msgspec.json.decode(waves.body)["waves"]:
        assert f"wave {wave['wave']}  (" in drawn
        for issue in wave["issues"]:
            assert re.search(rf"[├└]── {issue['id']}  {issue['status']}", drawn), issue["id"]
    roadmap = _answer(answers, "plan roadmap")
    drawn = render(roadmap.body, capability=roadmap.capability, tty=True, width=80, color=False)
    for milestone in msgspec.json.decode(roadmap.body)["milestones"]:
        assert re.search(rf"[├└]── {re.escape(milestone['id'])}  {milestone['status']}", drawn), milestone["id"]
        for issue in milestone["issues"]:
            assert re.search(rf"│?\s+[├└]── {issue}$", drawn, re.MULTILINE), issue


def test_plan_validate_summarises_for_a_person_and_all_shows_every_finding(
    corpus_layer: tuple[Path, list[Answer]],
) -> None:
    _, answers = corpus_layer
    validate = _answer(answers, "plan validate")
    answer = msgspec.json.decode(validate.body)
    findings = answer["findings"]
    summary = render(validate.body, capability="plan.validate", tty=True, width=80, color=False)
    assert summary.startswith("valid       no\n")
    failures = [f for f in findings if f["level"] == "FAIL"]
    assert f"failures ({len(failures)}):" in summary
    assert not _lost({w for f in failures for w in [f["subject"], *f["message"].split()]}, summary)
    conflicts = [f for f in findings if f["code"] == "scope_conflict"]
    assert f"WARN scope_conflict ({len(conflicts)}):" in summary
    assert f"and {len(conflicts) - SHOWN_PER_CODE} more (svc plan validate --all --code scope_conflict)" in summary
    assert len(summary.splitlines()) < len(findings) / 5
    few = msgspec.json.encode({**answer, "findings": findings[:40] + conflicts[:40]})
    everything = render(few, capability="plan.validate", tty=True, width=200, color=False, full=True)
    assert "more (" not in everything
    assert all(f["subject"] in everything for f in findings[:40] + conflicts[:40])


def test_the_commands_whose_view_summarises_take_all() -> None:
    taking = {c.capability for c in cli_tree(builtin_registry()) if any(p.name == "--all" for p in c.parameters)}
    assert taking == SUMMARISED


RECORDS = [
    {"id": "a1", "state": "succeeded", "note": "a long note " * 12, "tags": ["x", "y"], "empty": []},
    {"id": "a2", "state": "failed", "note": "short", "tags": [], "empty": []},
]


def test_a_table_wraps_its_cells_and_a_narrow_terminal_gets_one_block_per_record() -> None:
    body = msgspec.json.encode({"count": 2, "items": RECORDS, "none": []})
    wide = render(body, tty=True, width=120, color=False)
    assert wide.splitlines()[0] == "count  2"
    assert re.search(r"^  ID\s+STATE\s+NOTE\s+TAGS\s+EMPTY$", wide, re.MULTILINE)
    assert re.search(r"^none\s+\(none\)$", wide, re.MULTILINE)
    assert wide.split().count("long") == 12
    narrow = render(body, tty=True, width=36, color=False)
    assert "  id:     a1\n  state:  succeeded\n" in narrow
    assert "\n\n  id:     a2\n" in narrow  # records are separated by a blank line
    assert all(len(line) <= 36 for line in narrow.splitlines())


def test_piped_text_is_one_record_per_line_with_a_header_line_per_table() -> None:
    nested = {"waves": [{"wave": 0, "issues": [{"id": "I1", "title": "one\ttwo\nthree"}]}], "ok": True, "gone": None}
    piped = render(msgspec.json.encode(nested)).splitlines()
    assert piped == [
        "#waves\twave",
        "waves\t0",
        "#waves.issues\twaves.wave\tid\ttitle",
        "waves.issues\t0\tI1\tone two three",
        "ok\tyes",
        "gone\t-",
    ]
    table = render(msgspec.json.encode({"items": RECORDS})).splitlines()
    assert table[0] == "#items\tid\tstate\tnote\ttags\tempty"
    assert table[1].split("\t")[1:3] == ["a1", "succeeded"]
    assert table[2].split("\t")[4:] == ["-", "-"]


def test_colour_only_on_a_terminal_and_never_with_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    body = msgspec.json.encode({"items": RECORDS, "status": "READY", "valid": False})
    monkeypatch.delenv("NO_COLOR", raising=False)
    coloured = render(body, tty=True, width=120)
    assert "\x1b[32mREADY\x1b[0m" in coloured
    assert "\x1b[" in coloured.split("items:")[1]
    assert "\x1b[" not in render(body, tty=False)
    monkeypatch.setenv("NO_COLOR", "")
    assert "\x1b[" not in render(body, tty=True, width=120)
    assert _ANSI.sub("", coloured) == render(body, tty=True, width=120)


async def test_plan_validate_takes_all_and_piped_plan_status_starts_with_a_field(checkout: Path) -> None:
    runner = CliRunner()
    validate = await runner.invoke(build_cli(), ["--repo", str(checkout), "plan", "validate", "--all"])
    assert validate.exit_code == 0, validate.output
    assert validate.stdout.splitlines()[0] == "valid\tyes"
    status = await runner.invoke(build_cli(), ["--repo", str(checkout), "plan", "status"])
    assert status.stdout.splitlines()[0] == "project.name\tsvc"
    help_text = (await runner.invoke(build_cli(), ["plan", "validate", "--help"])).output
    assert "--all" in help_text
    assert "--all" not in (await runner.invoke(build_cli(), ["plan", "next", "--help"])).output


async def test_integer_options_are_typed_and_a_bad_one_is_a_usage_error(checkout: Path) -> None:
    runner = CliRunner()
    help_text = (await runner.invoke(build_cli(), ["executions", "list", "--help"])).output
    assert re.search(r"--limit INTEGER", help_text), help_text
    bad = await runner.invoke(build_cli(), ["--repo", str(checkout), "executions", "list", "--limit", "many"])
    assert bad.exit_code == 2
    assert "'many' is not a valid integer" in bad.output


def _commands(group: click.Group) -> Iterator[click.Command]:
    for command in group.commands.values():
        yield command
        if isinstance(command, click.Group):
            yield from _commands(command)


def test_help_speaks_the_command_line_s_terms() -> None:
    http = re.compile(r"\([45]\d\d\)|\bis [245]\d\d\b|\bthe 200 answer\b|\b(?:GET|POST) /api/")
    texts = [(command.name, f"{command.help} {command.short_help}") for command in _commands(build_cli())]
    assert len(texts) > 40
    assert [(name, text) for name, text in texts if http.search(text)] == []
    assert "is not found (exit 10)" in dict(texts)["issues"]


def _on_a_terminal(args: list[str], cwd: Path, columns: int, **env: str) -> str:
    """Run `svc ARGS` with a pseudo-terminal `columns` wide as stdout; what it drew, line ends as `\\n`."""
    controller, terminal = os.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "COLUMNS", "LINES")}
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "svc", *args],
            cwd=cwd,
            env={**base, **env},
            stdin=subprocess.DEVNULL,
            stdout=terminal,
            stderr=subprocess.PIPE,
        )
        os.close(terminal)
        screen = bytearray()
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # the terminal's last writer closed it
                break
            if not chunk:
                break
            screen.extend(chunk)
        _, err = process.communicate(timeout=60)
    finally:
        os.close(controller)
    assert process.returncode == 0, err
    return bytes(screen).decode().replace("\r\n", "\n")


@pytest.fixture(scope="module")
def terminal_checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_checkout(tmp_path_factory.mktemp("pty") / "checkout")


def test_a_real_terminal_gets_the_golden_view_and_colour(terminal_checkout: Path) -> None:
    drawn = _on_a_terminal(["plan", "next"], terminal_checkout, 80, NO_COLOR="1")
    golden = (GOLDEN / "own" / "plan_next.txt").read_text(encoding="utf-8")
    assert f"=== svc plan next (80 columns) ===\n{drawn}===" in golden
    coloured = _on_a_terminal(["plan", "waves"], terminal_checkout, 200)
    assert "\x1b[" in coloured
    plain = _ANSI.sub("", coloured)
    assert "waves\n├── wave 0  (" in plain
    assert max(len(line) for line in plain.splitlines()) <= 200
