"""`continuity_state`: a fixture of local state read whole at a fixed clock, tiers, divergence, freshness, hostility."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

from svc.layer import Repository, continuity_state, ensure_local_state
from svc.layer._continuity import Thresholds, _epoch_seconds, divergence_of, judge_freshness, span

#: The fixed clock of every golden answer: 2026-09-11T12:00:00Z.
NOW = 1_789_128_000
POLICY = "session:\n  freshness:\n    fresh_minutes: 720\n    stale_minutes: 2880\n"
NEXT = "Merge the branch once the suite is green.\n\nThen close T-7."
BLOCKERS = """# Open questions

<!--
Format: one line per question.
- [unresolved] a template line that is no blocker
-->

- [unresolved] Which port does staging use?
- [resolved] Is the cache on?
- [unresolved]   Who signs the release?\t
"""


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        capture_output=True,
        check=True,
        timeout=30,
    )
    return done.stdout.decode().strip()


def commit(root: Path, message: str) -> str:
    git(root, "commit", "-q", "--allow-empty", "-m", message)
    return git(root, "rev-parse", "HEAD")


def record(
    root: Path | str,
    *,
    created_at: str,
    head: str,
    branch: str = "main",
    task: str = "T-7",
    next_action: str | None = NEXT,
    schema_version: str = "1",
) -> str:
    front = (
        f"---\nschema_version: {schema_version}\ncreated_at: {created_at}\ntask_id: {task}\nprofile: none\n"
        f'owner: "t"\nrepository_id: abc\nworktree: {root}\nbranch: {branch}\nhead: {head}\n'
        "working_tree: clean\nchanged_files: []\n---\n\n"
    )
    body = "# Objective\n\nShip it.\n\n# Current State\n\nClose.\n"
    if next_action is not None:
        body += f"\n# Next Action\n\n{next_action}\n\n"
    return front + body


def checkout(path: Path, *, policy: str | None = POLICY) -> Path:
    """A Git checkout with a layer (its policy) committed, and an empty `.ai/local/state/` ignored by Git."""
    (path / ".ai" / "repo").mkdir(parents=True)
    if policy is not None:
        (path / ".ai" / "repo" / "policy.yaml").write_text(policy)
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    commit(path, "init")
    ensure_local_state(path / ".ai" / "local")
    return path


def state_dir(root: Path) -> Path:
    return root / ".ai" / "local" / "state"


def write_fixture(root: Path) -> dict[str, str]:
    """The local state of a worker mid-task; answers the commits it names (`first`, `head`)."""
    first = git(root, "rev-parse", "HEAD")
    head = commit(root, "second")
    state = state_dir(root)
    (state / "sessions-open").mkdir()
    (state / "sessions-open" / "claude-abc.yaml").write_text(
        f"session_id: s-20260911090000-0a1b\nstarted_at: 2026-09-11T09:00:00Z\nowner: t\nprovider: claude\n"
        f"provider_session: abc\nbranch: main\nstart_head: {first}\nworktree: {root}\n"
    )
    (state / "session-current.yaml").symlink_to("sessions-open/claude-abc.yaml")
    (state / "current.yaml").write_text(
        "id: T-7\ntask: Ship the continuity view\nprofile: implement\noutcome: active\n"
        "scope:\n  - src/svc/layer/\n  - tests/layer/\nrequires:\n  - tests\n"
        f"started_at: 2026-09-11T08:00:00Z\nhead: {first}\n"
    )
    handovers = state / "handovers"
    handovers.mkdir()
    (handovers / "20260911T090000Z--main--a.md").write_text(record(root, created_at="2026-09-11T09:00:00Z", head=head))
    (handovers / "20260911T080000Z--main--b.md").write_text(
        record(root, created_at="2026-09-11T08:00:00Z", head=first, next_action="Older.")
    )
    (handovers / "20260911T110000Z--main--c.md").write_text(
        record("/elsewhere/other", created_at="2026-09-11T11:00:00Z", head=head, next_action="Tier one.")
    )
    (handovers / "20260911T115900Z--topic--d.md").write_text(
        record(root, created_at="2026-09-11T11:59:00Z", head=head, branch="topic")
    )
    (handovers / "20260911T100000Z--main--e.md").write_text("# Next Action\n\nNo front matter.\n")
    (handovers / "20260911T100001Z--main--f.md").write_text(
        record(root, created_at="2026-09-11T10:00:01Z", head=head, schema_version="2")
    )
    (handovers / "notes.txt").write_text("not a record\n")
    checkpoints = state / "checkpoints"
    checkpoints.mkdir()
    (checkpoints / "20260908T100000Z--main--g.md").write_text(
        record("/elsewhere/other", created_at="2026-09-08T10:00:00Z", head=first, next_action="Old work.")
    )
    (state / "open-questions.md").write_text(BLOCKERS)
    (state / "ledger.jsonl").write_text('{"ts":"a","event":"x"}\n\n{"ts":"b","event":"y"}\n{"ts":"c","event":"z"}\n')
    return {"first": first, "head": head}


def expected(root: Path, commits: dict[str, str]) -> dict[str, Any]:
    """The golden answer of the fixture at `NOW`."""
    return {
        "present": True,
        "worktree": root.name,
        "branch": "main",
        "head": commits["head"],
        "working_tree": "clean",
        "session": {
            "session_id": "s-20260911090000-0a1b",
            "started_at": "2026-09-11T09:00:00Z",
            "owner": "t",
            "provider": "claude",
            "provider_session": "abc",
            "branch": "main",
            "start_head": commits["first"],
            "foreign": False,
        },
        "task": {
            "id": "T-7",
            "task": "Ship the continuity view",
            "profile": "implement",
            "outcome": "active",
            "scope": ["src/svc/layer/", "tests/layer/"],
            "requires": ["tests"],
            "started_at": "2026-09-11T08:00:00Z",
            "head": commits["first"],
        },
        "handover": {
            "path": ".ai/local/state/handovers/20260911T090000Z--main--a.md",
            "created_at": "2026-09-11T09:00:00Z",
            "task_id": "T-7",
            "branch": "main",
            "head": commits["head"],
            "working_tree": "clean",
            "matched": "same_worktree_same_branch",
            "divergence": "exact",
            "freshness": "fresh",
            "age_minutes": 180,
            "freshness_reason": "3h old",
            "next_action": NEXT,
        },
        "checkpoint": {
            "path": ".ai/local/state/checkpoints/20260908T100000Z--main--g.md",
            "created_at": "2026-09-08T10:00:00Z",
            "task_id": "T-7",
            "branch": "main",
            "head": commits["first"],
            "working_tree": "clean",
            "matched": "same_branch",
            "divergence": "advanced",
            "freshness": "stale",
            "age_minutes": 4440,
            "freshness_reason": "3d old, past the 2d this repository calls stale",
            "next_action_withheld": (
                "the record is stale: 3d old, past the 2d this repository calls stale. It is history, not an "
                "instruction; read the record itself"
            ),
        },
        "blockers": ["Which port does staging use?", "Who signs the release?"],
        "tallies": {"blockers": 2, "checkpoints": 1, "handovers": 6, "ledger_lines": 3},
        "findings": [
            "2 file(s) under .ai/local/state could not be read as records and were skipped (refused by the "
            "reading rule, not UTF-8, or without a usable front matter): "
            ".ai/local/state/handovers/20260911T100000Z--main--e.md, "
            ".ai/local/state/handovers/20260911T100001Z--main--f.md",
            "the resolved checkpoint is stale: 3d old, past the 2d this repository calls stale. It is context, not "
            "an instruction; its next action is not offered as current",
            "2 unresolved question(s) in .ai/local/state/open-questions.md; each holds the task back from "
            "completing until it is resolved",
        ],
    }


def answer(root: Path, now: int = NOW) -> dict[str, Any]:
    result: dict[str, Any] = msgspec.to_builtins(continuity_state(Repository.discover(root), now=now))
    return result


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return checkout(tmp_path / "work")


def test_the_fixture_answers_its_golden_state_without_an_absolute_path(root: Path) -> None:
    commits = write_fixture(root)
    got = answer(root)
    assert got == expected(root, commits)
    encoded = msgspec.json.encode(got).decode()
    assert str(root) not in encoded
    assert os.path.realpath(root) not in encoded
    assert "/elsewhere" not in encoded


def test_no_local_state_no_layer_and_no_git_are_answers(tmp_path: Path) -> None:
    empty = {"blockers": 0, "checkpoints": 0, "handovers": 0, "ledger_lines": 0}
    bare = checkout(tmp_path / "bare")
    head = git(bare, "rev-parse", "HEAD")
    assert answer(bare) == {
        "present": False,
        "worktree": "bare",
        "branch": "main",
        "head": head,
        "working_tree": "clean",
        "tallies": empty,
    }
    plain = tmp_path / "plain"
    plain.mkdir()
    assert answer(plain) == {"present": False, "worktree": "plain", "branch": "DETACHED", "tallies": empty}
    # A directory that exists but holds nothing is no lifecycle either; an empty task id is no task.
    (state_dir(bare) / "handovers").mkdir()
    (state_dir(bare) / "current.yaml").write_text("id: ''\ntask: nothing\n")
    (state_dir(bare) / "ledger.jsonl").write_text("\n\n")
    assert answer(bare)["present"] is False


def test_a_ledger_line_alone_makes_the_state_present(root: Path) -> None:
    (state_dir(root) / "ledger.jsonl").write_text('{"ts":"a","event":"x"}\n')
    got = answer(root)
    assert got["present"] is True
    assert got["tallies"]["ledger_lines"] == 1


def test_tier_zero_wins_over_a_newer_tier_one_and_ties_keep_the_first_name(root: Path) -> None:
    head = git(root, "rev-parse", "HEAD")
    handovers = state_dir(root) / "handovers"
    handovers.mkdir()
    (handovers / "b.md").write_text(record(root, created_at="2026-09-11T10:00:00Z", head=head, next_action="b"))
    (handovers / "a.md").write_text(record(root, created_at="2026-09-11T10:00:00Z", head=head, next_action="a"))
    (handovers / "c.md").write_text(record("/x/y", created_at="2026-09-11T11:00:00Z", head=head, next_action="c"))
    got = answer(root)["handover"]
    assert (got["path"], got["matched"], got["next_action"]) == (
        ".ai/local/state/handovers/a.md",
        "same_worktree_same_branch",
        "a",
    )
    (handovers / "a.md").unlink()
    (handovers / "b.md").unlink()
    got = answer(root)["handover"]
    assert (got["path"], got["matched"]) == (".ai/local/state/handovers/c.md", "same_branch")
    # Another branch is rejected, never widened to.
    (handovers / "c.md").write_text(record("/x/y", created_at="2026-09-11T11:00:00Z", head=head, branch="topic"))
    assert "handover" not in answer(root)
    assert answer(root)["tallies"]["handovers"] == 1


def test_a_detached_checkout_matches_its_own_worktree_only(root: Path) -> None:
    head = git(root, "rev-parse", "HEAD")
    git(root, "checkout", "-q", "--detach")
    handovers = state_dir(root) / "handovers"
    handovers.mkdir()
    (handovers / "main.md").write_text(record(root, created_at="2026-09-11T10:00:00Z", head=head))
    (handovers / "other.md").write_text(record("/x/y", created_at="2026-09-11T11:00:00Z", head=head, branch="DETACHED"))
    got = answer(root)
    assert got["branch"] == "DETACHED"
    assert "handover" not in got
    (handovers / "mine.md").write_text(record(root, created_at="2026-09-11T09:00:00Z", head=head, branch="DETACHED"))
    assert answer(root)["handover"]["path"] == ".ai/local/state/handovers/mine.md"


def test_divergence_exact_advanced_diverged_and_unknown(root: Path) -> None:
    first = git(root, "rev-parse", "HEAD")
    git(root, "checkout", "-q", "-b", "side")
    side = commit(root, "side")
    git(root, "checkout", "-q", "main")
    head = commit(root, "main moves on")
    assert divergence_of(root, head, head) == "exact"
    assert divergence_of(root, first, head) == "advanced"
    assert divergence_of(root, side, head) == "diverged"
    assert divergence_of(root, "0" * 40, head) == "unknown"
    assert divergence_of(root, "", head) == "unknown"
    assert divergence_of(root, "--all", head) == "unknown"
    assert divergence_of(root, first, None) == "unknown"
    handovers = state_dir(root) / "handovers"
    handovers.mkdir()
    (handovers / "h.md").write_text(record(root, created_at="2026-09-11T10:00:00Z", head=side))
    got = answer(root)
    assert got["handover"]["divergence"] == "diverged"
    assert got["findings"] == [
        f"the resolved handover is diverged: it was written at {side[:7]}, which is not an ancestor of this "
        "checkout's HEAD; trust Git over it"
    ]
    (handovers / "h.md").write_text(record(root, created_at="2026-09-11T10:00:00Z", head="feedfacefeedface"))
    got = answer(root)
    assert got["handover"]["divergence"] == "unknown"
    assert got["findings"] == [
        "the resolved handover is of unknown divergence: Git could not place feedfac against this checkout's "
        "HEAD; trust Git over it"
    ]


def test_an_unborn_repository_has_no_head_and_unknown_divergence(tmp_path: Path) -> None:
    root = tmp_path / "unborn"
    (root / ".ai").mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    ensure_local_state(root / ".ai" / "local")
    (state_dir(root) / "handovers").mkdir()
    (state_dir(root) / "handovers" / "h.md").write_text(record(root, created_at="2026-09-11T10:00:00Z", head="abc"))
    got = answer(root)
    assert "head" not in got
    assert got["branch"] == "main"
    assert got["handover"]["divergence"] == "unknown"


T = Thresholds(fresh_minutes=720, stale_minutes=2880)


@pytest.mark.parametrize(
    ("age_seconds", "verdict", "minutes", "reason"),
    [
        (0, "fresh", 0, "0m old"),
        (-59, "fresh", 0, "0m old"),
        (-60, "invalid", -1, "the timestamp is 1 minute(s) in the future"),
        (89 * 60, "fresh", 89, "89m old"),
        (90 * 60, "fresh", 90, "1h old"),
        (719 * 60 + 59, "fresh", 719, "11h old"),
        (720 * 60, "aging", 720, "12h old, past the 12h this repository calls fresh"),
        (2879 * 60, "aging", 2879, "47h old, past the 12h this repository calls fresh"),
        (2880 * 60, "stale", 2880, "2d old, past the 2d this repository calls stale"),
        (10 * 1440 * 60, "stale", 14400, "10d old, past the 2d this repository calls stale"),
    ],
)
def test_freshness_boundaries(age_seconds: int, verdict: str, minutes: int, reason: str) -> None:
    assert judge_freshness("2026-09-11T12:00:00Z", NOW + age_seconds, T) == (verdict, minutes, reason)


def test_freshness_without_a_timestamp_a_parse_or_thresholds() -> None:
    assert judge_freshness("", NOW, T) == ("unknown", None, "no timestamp")
    for bad in ("2026-09-11 12:00:00Z", "2026-09-11T12:00:00+00:00", "2026-13-01T00:00:00Z", "yesterday"):
        assert judge_freshness(bad, NOW, T) == ("invalid", None, f"the timestamp does not parse: {bad}")
    assert judge_freshness("2026-09-11T11:00:00Z", NOW, Thresholds(fresh_minutes=720)) == (
        "unknown",
        60,
        "the policy declares no session.freshness thresholds",
    )
    assert _epoch_seconds("1970-01-01T00:00:00Z") == 0
    assert _epoch_seconds("2026-09-11T12:00:00Z") == NOW
    assert [span(m) for m in (18, 1500, 8640)] == ["18m", "25h", "6d"]


def test_the_policy_thresholds_judge_the_record_and_withhold_its_next_action(tmp_path: Path) -> None:
    root = checkout(tmp_path / "nopolicy", policy=None)
    head = git(root, "rev-parse", "HEAD")
    handovers = state_dir(root) / "handovers"
    handovers.mkdir()
    (handovers / "h.md").write_text(record(root, created_at="2026-09-01T12:00:00Z", head=head))
    got = answer(root)["handover"]
    assert (got["freshness"], got["age_minutes"], got["next_action"]) == ("unknown", 14400, NEXT)
    assert "next_action_withheld" not in got
    (handovers / "h.md").write_text(record(root, created_at="2027-01-01T00:00:00Z", head=head))
    got = answer(root)
    assert got["handover"]["freshness"] == "invalid"
    assert "next_action" not in got["handover"]
    assert got["handover"]["next_action_withheld"].startswith("the record is invalid: the timestamp is ")
    assert got["findings"][0].startswith("the resolved handover is invalid: the timestamp is ")
    # A stale record without a Next Action has nothing to withhold.
    (root / ".ai" / "repo" / "policy.yaml").write_text(POLICY)
    (handovers / "h.md").write_text(record(root, created_at="2026-09-01T12:00:00Z", head=head, next_action=None))
    got = answer(root)["handover"]
    assert got["freshness"] == "stale"
    assert "next_action" not in got
    assert "next_action_withheld" not in got


def test_a_foreign_session_is_reported_by_its_directory_name_only(root: Path) -> None:
    (state_dir(root) / "session-current.yaml").write_text(
        "session_id: s-1\nstarted_at: 2026-09-11T09:00:00Z\nworktree: /home/someone/elsewhere\n"
    )
    got = answer(root)
    assert got["session"] == {"session_id": "s-1", "started_at": "2026-09-11T09:00:00Z", "foreign": True}
    assert got["findings"] == [
        "the open session record here belongs to another checkout (elsewhere), not this one; nothing about it "
        "is about your work"
    ]
    assert got["present"] is True
    assert "/home/someone" not in msgspec.json.encode(got).decode()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
async def test_hostile_files_are_skipped_and_counted_never_opened(root: Path, tmp_path: Path) -> None:
    head = git(root, "rev-parse", "HEAD")
    state = state_dir(root)
    outside = tmp_path / "outside.md"
    outside.write_text(record(root, created_at="2026-09-11T11:00:00Z", head=head))
    handovers = state / "handovers"
    handovers.mkdir()
    os.mkfifo(handovers / "fifo.md")
    (handovers / "out.md").symlink_to(outside)
    (handovers / "big.md").write_text(record(root, created_at="2026-09-11T11:30:00Z", head=head) + "x" * 2**20)
    (handovers / "ok.md").write_text(record(root, created_at="2026-09-11T10:00:00Z", head=head))
    os.mkfifo(state / "ledger.jsonl")
    os.mkfifo(state / "open-questions.md")
    (state / "session-current.yaml").symlink_to(outside)
    os.mkfifo(state / "current.yaml")
    got = await trio.to_thread.run_sync(answer, root)
    assert got["handover"]["path"] == ".ai/local/state/handovers/ok.md"
    assert got["tallies"] == {"blockers": 0, "checkpoints": 0, "handovers": 4, "ledger_lines": 0}
    assert "session" not in got
    assert "task" not in got
    (finding,) = got["findings"]
    assert finding.startswith("7 file(s) under .ai/local/state could not be read as records and were skipped")
    for name in ("session-current.yaml", "current.yaml", "handovers/big.md", "handovers/fifo.md", "handovers/out.md"):
        assert f".ai/local/state/{name}" in finding
    assert "and 2 more" in finding
    assert str(tmp_path) not in msgspec.json.encode(got).decode()


async def test_a_state_directory_leading_out_of_the_checkout_is_refused(root: Path, tmp_path: Path) -> None:
    head = git(root, "rev-parse", "HEAD")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "h.md").write_text(record(root, created_at="2026-09-11T11:00:00Z", head=head))
    (state_dir(root) / "handovers").symlink_to(elsewhere, target_is_directory=True)
    got = await trio.to_thread.run_sync(answer, root)
    assert "handover" not in got
    assert got["tallies"]["handovers"] == 0
    assert got["findings"] == [
        "1 file(s) under .ai/local/state could not be read as records and were skipped (refused by the reading "
        "rule, not UTF-8, or without a usable front matter): .ai/local/state/handovers"
    ]
