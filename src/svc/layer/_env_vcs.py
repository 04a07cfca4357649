"""Version control for the environment snapshot, from one `git status --porcelain=v2 --branch -z`.

One call carries every fact: the headers `branch.oid` (`(initial)` before the first commit), `branch.head`
(`(detached)`), `branch.upstream` and `branch.ab +A -B`, then one NUL-terminated record per entry: `1`
(ordinary: the path is the 9th field), `2` (rename or copy: the path is the 10th field and the *next* record
is the original path, consumed here), `u` (unmerged: the 11th field) and `?` (untracked). An entry whose X
is not `.` counts as staged, whose Y is not `.` as modified. `--no-optional-locks` keeps the status from
taking the index lock, so the snapshot never contends with work in the checkout.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from svc.layer._env_model import VcsGit, VcsState, VcsUnavailable
from svc.layer._git import run_git

if TYPE_CHECKING:
    from svc.layer._repository import Repository

__all__ = ["GIT_SECONDS", "MAX_CHANGED_PATHS", "STATUS_ARGS", "STATUS_COMMAND", "parse_porcelain", "read_vcs"]

#: The arguments after `git -C <root>`.
STATUS_ARGS = ("--no-optional-locks", "status", "--porcelain=v2", "--branch", "--untracked-files=normal", "-z")
#: The command as provenance quotes it.
STATUS_COMMAND = "git status --porcelain=v2 --branch"
#: How long the status may take.
GIT_SECONDS = 10.0
#: The most changed paths a snapshot lists (the counts stay exact).
MAX_CHANGED_PATHS = 1000


def _entry(record: str, path_field: int) -> tuple[str, str, str] | None:
    """X, Y and the path of an entry whose path is field number `path_field` (1-based; paths may hold spaces)."""
    parts = record.split(" ", path_field - 1)
    if len(parts) < path_field or len(parts[1]) != 2:
        return None
    return parts[1][0], parts[1][1], parts[path_field - 1]


def _count(text: str) -> int | None:
    digits = text.lstrip("+-")
    return int(digits) if digits.isdigit() else None


def parse_porcelain(report: bytes) -> VcsGit | None:
    """The work tree a `--porcelain=v2 --branch -z` report describes; None when it has no branch header."""
    head: str | None = None
    branch: str | None = None
    detached = False
    upstream: str | None = None
    ahead: int | None = None
    behind: int | None = None
    staged = modified = untracked = conflicted = 0
    paths: set[str] = set()
    header = False
    records = iter(report.decode("utf-8", "replace").split("\0"))
    for record in records:
        if not record:
            continue
        kind = record[0]
        if kind == "#":
            key, _, value = record.removeprefix("# ").partition(" ")
            if not key.startswith("branch."):
                continue
            header = True
            if key == "branch.oid":
                head = None if value == "(initial)" else value
            elif key == "branch.head":
                detached = value == "(detached)"
                branch = None if detached else value
            elif key == "branch.upstream":
                upstream = value
            elif key == "branch.ab":
                words = value.split()
                if len(words) == 2:
                    ahead, behind = _count(words[0]), _count(words[1])
        elif kind in "12":
            entry = _entry(record, 9 if kind == "1" else 10)
            if kind == "2":
                next(records, None)  # the original path of the rename
            if entry is None:
                continue
            x, y, path = entry
            staged += x != "."
            modified += y != "."
            paths.add(path)
        elif kind == "u":
            conflicted += 1
            entry = _entry(record, 11)
            if entry is not None:
                paths.add(entry[2])
        elif kind == "?":
            untracked += 1
            paths.add(record[2:])
    if not header:
        return None
    return VcsGit(
        head=head,
        branch=branch,
        detached=detached,
        upstream=upstream,
        ahead=ahead if upstream is not None else None,
        behind=behind if upstream is not None else None,
        staged=staged,
        modified=modified,
        untracked=untracked,
        conflicted=conflicted,
        clean=staged == modified == untracked == conflicted == 0,
        changed_paths=tuple(sorted(paths)[:MAX_CHANGED_PATHS]),
    )


def read_vcs(repo: Repository) -> VcsState:
    """What Git says about the checkout (blocking: one `git status`), or why it cannot say."""
    if repo.git_dir is None:
        return VcsUnavailable(reason="the checkout is not a Git work tree")
    report = run_git(repo.root, *STATUS_ARGS, timeout=GIT_SECONDS)
    if report is None:
        return VcsUnavailable(reason=f"{STATUS_COMMAND} did not answer (git is missing, failed or took too long)")
    parsed = parse_porcelain(report)
    if parsed is None:
        return VcsUnavailable(reason=f"{STATUS_COMMAND} printed no branch header")
    return parsed
