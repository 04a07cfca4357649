"""`continuity.state`: what this checkout's local state holds now (session, task, handover, checkpoint, blockers).

Reads only `.ai/local/state/`, the policy's `session.freshness` thresholds and Git; writes nothing. Every
absence is an answer: a checkout without local state (or without `.ai/`, or outside Git) answers
`present: false`, never an error.

- **Session**: `session-current.yaml` (a YAML mapping, possibly a symlink into `sessions-open/`) with a
  `session_id`. It is `foreign` when its `worktree` is set and is not this checkout (a finding says so).
- **Task**: `current.yaml` with a non-empty `id`.
- **Handover, checkpoint**: the `*.md` records of `handovers/` and `checkpoints/` (docs/layer.md front
  matter), in name order. A record without front matter, without `created_at` or `head`, or whose
  `schema_version` is not `1` is skipped (and counted). Tier 0: its `worktree` is this checkout and its
  `branch` this branch; tier 1: this branch, when it is not `DETACHED`; anything else is rejected, never
  widened. The winner has the lowest tier, then the greatest `created_at` as text (a tie keeps the first
  name). Its divergence comes from `git merge-base --is-ancestor`, its freshness from the policy, and its
  `Next Action` section is withheld when it is stale or invalid.
- **Blockers**: the lines of `open-questions.md` starting `- [unresolved] `, outside `<!-- ... -->` blocks.
- **Tallies**: blockers, `*.md` files of `checkpoints/` and `handovers/`, non-blank ledger lines.

Every file is read under the reading rule (`read_repository_file`): a FIFO, a device, a symlink leaving the
checkout or an oversized file is skipped and counted as unreadable, never opened. The checkout's path is
used for tier matching only: the answer names the checkout by its directory name and files by their
repository-relative paths.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Annotated, Any, Literal

import msgspec
from msgspec import Meta

from svc.layer._front import front_matter, scalar_fields
from svc.layer._git import run_git
from svc.layer._manifest import read_manifest
from svc.layer._read import Unreadable, clip, read_repository_dir, read_repository_file
from svc.layer._yaml import YamlAliases, YamlError, load_yaml

if TYPE_CHECKING:
    from svc.layer._repository import Repository

__all__ = [
    "GIT_SECONDS",
    "LEDGER_LIMIT",
    "RECORD_LIMIT",
    "STATE",
    "ActiveTask",
    "Continuity",
    "ContinuityRecord",
    "ContinuityTallies",
    "Divergence",
    "Freshness",
    "OpenSession",
    "Thresholds",
    "continuity_state",
    "judge_freshness",
    "span",
]

#: The local state directory, repository-relative.
STATE = ".ai/local/state"
#: The most bytes a record or a state document may have to be read at all.
RECORD_LIMIT = 1024 * 1024
#: The most bytes the ledger may have to be counted (as the plan reads it).
LEDGER_LIMIT = 64 * 1024 * 1024
#: How long one `git` call may take before its answer counts as unknown.
GIT_SECONDS = 5.0

Divergence = Literal["exact", "advanced", "diverged", "unknown"]
Freshness = Literal["fresh", "aging", "stale", "unknown", "invalid"]
Match = Literal["same_worktree_same_branch", "same_branch"]

_STAMP = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$")
_UNRESOLVED = "- [unresolved] "
_TRUSTWORTHY = ("exact", "advanced")
_HISTORY = ("stale", "invalid")
_MAX_NAMED = 5


class OpenSession(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The open session `session-current.yaml` names.

    `session_id`, `started_at` and the optional fields are the file's own scalars; `foreign` is true when the
    file's `worktree` is set and is another checkout (it is then reported, never taken as this one's).
    """

    session_id: str
    started_at: str
    owner: str | None = None
    worker: str | None = None
    provider: str | None = None
    provider_session: str | None = None
    branch: str | None = None
    start_head: str | None = None
    foreign: bool


class ActiveTask(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The active task of `current.yaml`: id, what is worked on, its profile and outcome so far.

    `scope` (the paths it claims) and `requires` (what it owes before completing) are the file's lists of
    scalars; `started_at` and `head` where the file gives them.
    """

    id: str
    task: str
    profile: str
    outcome: str
    scope: list[str] = []
    requires: list[str] = []
    started_at: str | None = None
    head: str | None = None


class ContinuityRecord(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The handover or checkpoint record a resuming worker would read, and how far to trust it.

    `path` is repository-relative; `created_at`, `task_id` (`none` when absent), `branch`, `head` and
    `working_tree` come from its front matter. `matched` is the tier that chose it. `divergence` places its
    head against this checkout's (`exact`, `advanced`: an ancestor, `diverged`, `unknown`); `freshness`
    judges its age against the policy (`fresh`, `aging`, `stale`, `unknown`, `invalid`), with
    `age_minutes` when the timestamp parses and `freshness_reason` always. `next_action` is the body of its
    `# Next Action` section; when the record is stale or invalid it is withheld and `next_action_withheld`
    says why instead.
    """

    path: str
    created_at: str
    task_id: str
    branch: str
    head: str
    working_tree: str
    matched: Match
    divergence: Divergence
    freshness: Freshness
    age_minutes: int | None = None
    freshness_reason: str
    next_action: str | None = None
    next_action_withheld: str | None = None


class ContinuityTallies(msgspec.Struct, frozen=True, kw_only=True):
    """How many of each the local state holds (keys in byte order)."""

    blockers: Annotated[int, Meta(ge=0)]
    checkpoints: Annotated[int, Meta(ge=0)]
    handovers: Annotated[int, Meta(ge=0)]
    ledger_lines: Annotated[int, Meta(ge=0)]


class Continuity(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What this checkout's local state holds now.

    `present` is true when there is a task, an open session or any tally above zero (not merely a
    directory). `worktree` is the checkout's directory name (never its path), `branch` the branch or
    `DETACHED` (also outside Git), `head` the commit and `working_tree` `clean` or `dirty` when Git answers.
    `session`, `task`, `handover` and `checkpoint` are absent when nothing resolves; `blockers` lists the
    unresolved questions; `findings` says, in order, what to know before trusting the rest: a foreign
    session, skipped files, an untrustworthy divergence or an old record, unresolved blockers.
    """

    present: bool
    worktree: str
    branch: str
    head: str | None = None
    working_tree: Literal["clean", "dirty"] | None = None
    session: OpenSession | None = None
    task: ActiveTask | None = None
    handover: ContinuityRecord | None = None
    checkpoint: ContinuityRecord | None = None
    blockers: list[str] = []
    tallies: ContinuityTallies
    findings: list[str] = []


@dataclass(frozen=True, slots=True)
class Thresholds:
    """The policy's `session.freshness` thresholds in minutes (None when not declared)."""

    fresh_minutes: int | None = None
    stale_minutes: int | None = None


def span(minutes: int) -> str:
    """Whole minutes as a span: `18m` under 90 minutes, `25h` under two days, `6d` beyond."""
    if minutes < 90:
        return f"{minutes}m"
    if minutes < 2880:
        return f"{minutes // 60}h"
    return f"{minutes // 1440}d"


def _epoch_seconds(stamp: str) -> int | None:
    """Seconds since the epoch of `YYYY-MM-DDTHH:MM:SSZ` (fields range-checked), None for any other text."""
    if _STAMP.match(stamp) is None:
        return None
    year, month, day = int(stamp[0:4]), int(stamp[5:7]), int(stamp[8:10])
    hour, minute, second = int(stamp[11:13]), int(stamp[14:16]), int(stamp[17:19])
    if not (1 <= month <= 12 and 1 <= day <= 31 and hour <= 23 and minute <= 59 and second <= 60):
        return None
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month - 3 if month > 2 else month + 9) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return (era * 146_097 + doe - 719_468) * 86_400 + hour * 3600 + minute * 60 + second


def judge_freshness(created_at: str, now: int, thresholds: Thresholds) -> tuple[Freshness, int | None, str]:
    """The freshness of a record written at `created_at`, at `now` (epoch seconds): verdict, age, reason.

    The age is in whole minutes, truncated toward zero (a record less than a minute ahead is 0 minutes old).
    """
    if not created_at:
        return "unknown", None, "no timestamp"
    then = _epoch_seconds(created_at)
    if then is None:
        return "invalid", None, clip(f"the timestamp does not parse: {created_at}")
    seconds = now - then
    minutes = seconds // 60 if seconds >= 0 else -(-seconds // 60)
    if minutes < 0:
        return "invalid", minutes, f"the timestamp is {-minutes} minute(s) in the future"
    fresh, stale = thresholds.fresh_minutes, thresholds.stale_minutes
    if fresh is None or stale is None:
        return "unknown", minutes, "the policy declares no session.freshness thresholds"
    if minutes >= stale:
        return "stale", minutes, f"{span(minutes)} old, past the {span(stale)} this repository calls stale"
    if minutes >= fresh:
        return "aging", minutes, f"{span(minutes)} old, past the {span(fresh)} this repository calls fresh"
    return "fresh", minutes, f"{span(minutes)} old"


def _minutes(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def read_thresholds(repo: Repository) -> Thresholds:
    """`session.freshness.{fresh_minutes, stale_minutes}` of the policy the manifest names (none when unread)."""
    reading = read_manifest(repo)
    if not reading.usable:
        return Thresholds()
    path = repo.layer / reading.sections.get("policy", "repo/policy.yaml")
    try:
        policy = load_yaml(read_repository_file(repo.root, path))
    except (OSError, YamlError, ValueError, RecursionError):
        return Thresholds()
    session = policy.get("session") if isinstance(policy, dict) else None
    freshness = session.get("freshness") if isinstance(session, dict) else None
    if not isinstance(freshness, dict):
        return Thresholds()
    return Thresholds(_minutes(freshness.get("fresh_minutes")), _minutes(freshness.get("stale_minutes")))


def blockers_of(text: str) -> list[str]:
    """The unresolved questions of `open-questions.md`: `- [unresolved] ` lines outside `<!-- ... -->` blocks."""
    found: list[str] = []
    in_comment = False
    for line in _lines(text):
        if "<!--" in line:
            in_comment = True
        if in_comment:
            if "-->" in line:
                in_comment = False
            continue
        if line.startswith(_UNRESOLVED):
            found.append(line[len(_UNRESOLVED) :].strip())
    return found


def next_action_of(body: str) -> str:
    """The body of the level-one section `Next Action`, without leading and trailing blank lines."""
    kept: list[str] = []
    inside = False
    for line in _lines(body):
        if line.startswith("# "):
            inside = line[2:].rstrip() == "Next Action"
            continue
        if inside:
            kept.append(line)
    while kept and not kept[0].strip():
        kept.pop(0)
    while kept and not kept[-1].strip():
        kept.pop()
    return "\n".join(kept)


def _lines(text: str) -> list[str]:
    """Lines split at LF, a trailing CR dropped from each, no empty last line for a final LF."""
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    if lines and not lines[-1]:
        lines.pop()
    return lines


def divergence_of(root: Path, theirs: str, ours: str | None) -> Divergence:
    """Where the record's commit `theirs` stands against this checkout's `ours`.

    No HEAD is `unknown`; the same commit `exact`; an empty one `unknown`; otherwise `git merge-base
    --is-ancestor`: `advanced` (an ancestor), `diverged` (not one), `unknown` (Git could not say).
    """
    if ours is None:
        return "unknown"
    if theirs == ours:
        return "exact"
    if not theirs or theirs.startswith("-") or any(ch in theirs for ch in "\0\n\r"):
        return "unknown"
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "merge-base", "--is-ancestor", theirs, ours],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            check=False,
            timeout=GIT_SECONDS,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if done.returncode == 0:
        return "advanced"
    return "diverged" if done.returncode == 1 else "unknown"


@dataclass(slots=True)
class _Reading:
    """One reading of the local state: the checkout, and the files skipped so far (repository-relative)."""

    repo: Repository
    skipped: list[str]

    @property
    def state(self) -> Path:
        return self.repo.root / STATE

    def text(self, name: str, *, limit: int = RECORD_LIMIT) -> str | None:
        """The text of `STATE/name`; None when absent, and None (counted as skipped) when refused or not UTF-8."""
        try:
            data = read_repository_file(self.repo.root, self.state / name, limit=limit)
        except FileNotFoundError:
            return None
        except OSError:
            self.skipped.append(f"{STATE}/{name}")
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            self.skipped.append(f"{STATE}/{name}")
            return None

    def mapping(self, name: str) -> dict[Any, Any] | None:
        """The YAML mapping of `STATE/name`; None when absent, and None (counted) when unreadable or no mapping."""
        text = self.text(name)
        if text is None:
            return None
        try:
            data = load_yaml(text)
        except (YamlError, YamlAliases, ValueError, RecursionError):
            data = None
        if not isinstance(data, dict):
            self.skipped.append(f"{STATE}/{name}")
            return None
        return data

    def records(self, directory: str) -> tuple[int, list[tuple[str, dict[str, str], str]]]:
        """How many `*.md` entries `STATE/directory` holds, and the readable records among them, in name order.

        Each record is (repository-relative path, front matter, body); a file refused by the reading rule, not
        UTF-8, or without a usable front matter is counted as skipped.
        """
        base = f"{STATE}/{directory}"
        found: list[tuple[str, bytes | Unreadable]] = []
        try:
            found.extend(read_repository_dir(self.repo.root, self.repo.root / base, _is_record, limit=RECORD_LIMIT))
        except FileNotFoundError:
            return 0, []
        except OSError:
            self.skipped.append(base)
            return 0, []
        found.sort(key=lambda item: item[0])
        out: list[tuple[str, dict[str, str], str]] = []
        for name, data in found:
            path = f"{base}/{name}"
            fields = body = None
            if not isinstance(data, Unreadable):
                try:
                    fields, body = front_matter(data.decode("utf-8"))
                except UnicodeDecodeError:
                    fields = None
            usable = (
                fields is not None
                and "created_at" in fields
                and "head" in fields
                and fields.get("schema_version") == "1"
            )
            if not usable or fields is None or body is None:
                self.skipped.append(path)
                continue
            out.append((path, fields, body))
        return len(found), out


def _is_record(name: str) -> bool:
    return name.endswith(".md") and name != ".md"


def _same_worktree(recorded: str, root: Path) -> bool:
    return recorded in (str(root), os.path.realpath(root))


@dataclass(frozen=True, slots=True)
class _Here:
    """This checkout as the records are matched against it, and the clock and thresholds they are judged by."""

    root: Path
    branch: str
    head: str | None
    now: int
    thresholds: Thresholds


def _resolve(here: _Here, records: list[tuple[str, dict[str, str], str]]) -> ContinuityRecord | None:
    best: tuple[int, str, str, dict[str, str], str] | None = None
    for path, fields, body in records:
        branch = fields.get("branch", "")
        if _same_worktree(fields.get("worktree", ""), here.root) and branch == here.branch:
            tier = 0
        elif here.branch != "DETACHED" and branch == here.branch:
            tier = 1
        else:
            continue
        created = fields["created_at"]
        if best is None or tier < best[0] or (tier == best[0] and created > best[1]):
            best = (tier, created, path, fields, body)
    if best is None:
        return None
    tier, created, path, fields, body = best
    freshness, age, reason = judge_freshness(created, here.now, here.thresholds)
    action = next_action_of(body)
    withheld = None
    if freshness in _HISTORY and action:
        withheld = f"the record is {freshness}: {reason}. It is history, not an instruction; read the record itself"
        action = ""
    return ContinuityRecord(
        path=path,
        created_at=created,
        task_id=fields.get("task_id", "none"),
        branch=fields.get("branch", ""),
        head=fields["head"],
        working_tree=fields.get("working_tree", ""),
        matched="same_worktree_same_branch" if tier == 0 else "same_branch",
        divergence=divergence_of(here.root, fields["head"], here.head),
        freshness=freshness,
        age_minutes=age,
        freshness_reason=reason,
        next_action=action or None,
        next_action_withheld=withheld,
    )


def _session(reading: _Reading, root: Path, findings: list[str]) -> OpenSession | None:
    data = reading.mapping("session-current.yaml")
    if data is None:
        return None
    fields = scalar_fields(data)
    recorded = fields.get("worktree", "")
    foreign = bool(recorded) and not _same_worktree(recorded, root)
    if foreign:
        name = PurePosixPath(recorded).name or "?"
        findings.append(
            clip(
                f"the open session record here belongs to another checkout ({name}), not this one; "
                "nothing about it is about your work"
            )
        )
    if "session_id" not in fields:
        return None

    def optional(key: str) -> str | None:
        return fields.get(key) or None

    return OpenSession(
        session_id=fields["session_id"],
        started_at=fields.get("started_at", ""),
        owner=optional("owner"),
        worker=optional("worker"),
        provider=optional("provider"),
        provider_session=optional("provider_session"),
        branch=optional("branch"),
        start_head=optional("start_head"),
        foreign=foreign,
    )


def _task(reading: _Reading) -> ActiveTask | None:
    data = reading.mapping("current.yaml")
    if data is None:
        return None
    fields = scalar_fields(data)
    if not fields.get("id"):
        return None

    def listed(key: str) -> list[str]:
        value = data.get(key)
        if not isinstance(value, list):
            return []
        return list(scalar_fields({str(i): item for i, item in enumerate(value)}).values())

    return ActiveTask(
        id=fields["id"],
        task=fields.get("task", ""),
        profile=fields.get("profile", ""),
        outcome=fields.get("outcome", ""),
        scope=listed("scope"),
        requires=listed("requires"),
        started_at=fields.get("started_at") or None,
        head=fields.get("head") or None,
    )


def _record_findings(what: str, record: ContinuityRecord | None) -> list[str]:
    if record is None:
        return []
    out: list[str] = []
    short = record.head[:7]
    if record.divergence == "diverged":
        out.append(
            f"the resolved {what} is diverged: it was written at {short}, which is not an ancestor of this "
            "checkout's HEAD; trust Git over it"
        )
    elif record.divergence not in _TRUSTWORTHY:
        out.append(
            f"the resolved {what} is of unknown divergence: Git could not place {short or 'its commit'} against "
            "this checkout's HEAD; trust Git over it"
        )
    if record.freshness in _HISTORY:
        out.append(
            f"the resolved {what} is {record.freshness}: {record.freshness_reason}. It is context, not an "
            "instruction; its next action is not offered as current"
        )
    return [clip(text) for text in out]


def _working_tree(root: Path) -> Literal["clean", "dirty"] | None:
    out = run_git(root, "--no-optional-locks", "status", "--porcelain", timeout=GIT_SECONDS)
    if out is None:
        return None
    return "dirty" if out.strip() else "clean"


def continuity_state(repo: Repository, *, now: int) -> Continuity:
    """The continuity of `repo` at `now` (epoch seconds: the one clock reading every record is judged by).

    Blocking (file reads, `git status`, `git merge-base`): call it from a worker thread.
    """
    git = repo.git()
    branch = git.branch or "DETACHED"
    head = git.head
    reading = _Reading(repo, [])
    findings: list[str] = []
    session = _session(reading, repo.root, findings)
    task = _task(reading)
    here = _Here(root=repo.root, branch=branch, head=head, now=now, thresholds=read_thresholds(repo))
    handover_count, handovers = reading.records("handovers")
    checkpoint_count, checkpoints = reading.records("checkpoints")
    handover = _resolve(here, handovers)
    checkpoint = _resolve(here, checkpoints)
    questions = reading.text("open-questions.md")
    blockers = blockers_of(questions) if questions is not None else []
    ledger = reading.text("ledger.jsonl", limit=LEDGER_LIMIT)
    ledger_lines = sum(1 for line in ledger.split("\n") if line.strip()) if ledger is not None else 0
    if reading.skipped:
        named = ", ".join(reading.skipped[:_MAX_NAMED])
        more = f" and {len(reading.skipped) - _MAX_NAMED} more" if len(reading.skipped) > _MAX_NAMED else ""
        findings.append(
            clip(
                f"{len(reading.skipped)} file(s) under {STATE} could not be read as records and were skipped "
                f"(refused by the reading rule, not UTF-8, or without a usable front matter): {named}{more}"
            )
        )
    findings.extend(_record_findings("handover", handover))
    findings.extend(_record_findings("checkpoint", checkpoint))
    if blockers:
        findings.append(
            f"{len(blockers)} unresolved question(s) in {STATE}/open-questions.md; each holds the task back "
            "from completing until it is resolved"
        )
    tallies = ContinuityTallies(
        blockers=len(blockers), checkpoints=checkpoint_count, handovers=handover_count, ledger_lines=ledger_lines
    )
    present = task is not None or session is not None or any(msgspec.structs.astuple(tallies))
    return Continuity(
        present=present,
        worktree=repo.name,
        branch=branch,
        head=head,
        working_tree=_working_tree(repo.root) if repo.git_dir is not None else None,
        session=session,
        task=task,
        handover=handover,
        checkpoint=checkpoint,
        blockers=blockers,
        tallies=tallies,
        findings=findings,
    )
