"""The thin file layer of the plan: reading the record directories, and moving an issue under the lock.

Reads always read every record's bytes; a per-directory `RecordCache` reuses a parse only for identical
bytes, so a read is exact and a warm one skips YAML. A move runs, in one worker thread and under the
exclusive cross-process lock `.ai/local/state/plan.lock`, the steps of docs/plan.md: load and derive afresh,
check the move, edit the record text, replace the file atomically, report the write (`on_written`), append
the ledger line, derive again from disk, release. Blocking calls only; the caller runs this in a thread.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from svc._errors import Internal, NotFound
from svc.layer import DEFAULT_SECTIONS, Repository, read_manifest, write_atomic
from svc.plan._derive import derive
from svc.plan._edit import check_move, stamp_record
from svc.plan._ledger import LedgerError, append_line, ledger_line
from svc.plan._load import RecordCache, Records, gc_paused, load_records
from svc.plan._model import Plan, PlanTransitionResult
from svc.plan._views import next_ready

__all__ = ["LEDGER", "LOCK", "Snapshot", "move_issue", "project_directory", "read_plan", "read_snapshot"]

_log = logging.getLogger("svc.plan")

#: Paths under `.ai/local/state/`.
LOCK = "plan.lock"
LEDGER = "ledger.jsonl"
_CACHE_LIMIT = 8
_caches: OrderedDict[Path, RecordCache] = OrderedDict()
_caches_lock = threading.Lock()


def _cache_for(directory: Path) -> RecordCache:
    with _caches_lock:
        cache = _caches.pop(directory, None) or RecordCache()
        _caches[directory] = cache
        while len(_caches) > _CACHE_LIMIT:
            _caches.popitem(last=False)
        return cache


def project_directory(repo: Repository) -> Path | None:
    """The plan records' directory (the manifest's `project` section), or None when the layer is absent."""
    if not repo.has_layer:
        return None
    reading = read_manifest(repo)
    if not reading.usable:
        return None
    rel = reading.sections.get("project", DEFAULT_SECTIONS["project"])
    parts = PurePosixPath(rel).parts
    if not parts or PurePosixPath(rel).is_absolute() or ".." in parts:
        return None
    return repo.layer / rel


def _read_dir(directory: Path) -> list[tuple[str, bytes]]:
    """(file name, bytes) of every `*.yaml` file directly in `directory` (dot files skipped)."""
    out: list[tuple[str, bytes]] = []
    try:
        listing = os.scandir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return out
    with listing:
        for entry in listing:
            name = entry.name
            if name.startswith(".") or not name.endswith(".yaml"):
                continue
            try:
                with open(entry.path, "rb") as handle:
                    out.append((name, handle.read()))
            except (FileNotFoundError, IsADirectoryError):
                continue
            except OSError as exc:
                _log.warning("svc: plan record %s cannot be read (%s); left out", entry.path, exc.strerror)
    return out


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One reading of the records: what was loaded, the plan derived from it, and each issue's bytes."""

    records: Records
    plan: Plan
    issue_bytes: dict[str, bytes] = field(default_factory=dict)


def read_snapshot(repo: Repository) -> Snapshot:
    """Read every record of `repo` and derive the plan (an absent layer is an empty plan)."""
    with gc_paused():
        return _snapshot(repo)


def _snapshot(repo: Repository) -> Snapshot:
    directory = project_directory(repo)
    if directory is None:
        records = Records()
        return Snapshot(records=records, plan=derive(records))
    try:
        project: bytes | None = (directory / "project.yaml").read_bytes()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        project = None
    except OSError as exc:
        _log.warning("svc: %s/project.yaml cannot be read (%s)", directory, exc.strerror)
        project = None
    issues = _read_dir(directory / "issues")
    records = load_records(
        project,
        _read_dir(directory / "milestones"),
        issues,
        base=repo.relative(directory),
        cache=_cache_for(directory),
    )
    return Snapshot(
        records=records,
        plan=derive(records),
        issue_bytes={name[: -len(".yaml")]: data for name, data in issues},
    )


def read_plan(repo: Repository) -> Plan:
    """The plan of `repo`, derived now."""
    return read_snapshot(repo).plan


@contextlib.contextmanager
def _exclusive(path: Path) -> Iterator[None]:
    """Hold an exclusive `flock` on `path` (created 0600) until the block ends."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _utc_now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def move_issue(
    repo: Repository,
    issue_id: str,
    transition: str,
    *,
    by: str,
    on_written: Callable[[], None] = lambda: None,
    now: Callable[[], str] = _utc_now,
) -> PlanTransitionResult:
    """Move one issue (`start`, `verify` or `done`) and append its ledger event, all under `plan.lock`.

    `on_written` runs right after the record is replaced (the caller bumps its generation there); `now`
    gives the stamp (UTC, whole seconds). Blocking: run it in a worker thread.

    Raises:
        NotFound: no issue has this id.
        Refused: the move is not allowed now (nothing written).
        Internal: the record could not be edited or written (nothing changed), or the ledger could not be
            appended (the move stands: the stamp and its seal are in the record).
    """
    directory = project_directory(repo)
    if directory is None:
        raise NotFound(f"no issue '{issue_id}'")
    state = repo.local_state
    state.mkdir(parents=True, exist_ok=True, mode=0o700)
    ledger_failure: str | None = None
    with _exclusive(state / LOCK):
        snapshot = read_snapshot(repo)
        issue, move = check_move(snapshot.plan, snapshot.records.issues, issue_id, transition)
        record = next(r for r in snapshot.records.issues if r.id == issue_id)
        at = now()
        edited = stamp_record(snapshot.issue_bytes[issue_id], issue_id, move, at)
        try:
            write_atomic(repo.root / record.path, edited)
        except OSError as exc:
            raise Internal(f"cannot write {record.path}: {exc.strerror or exc}; nothing was changed") from exc
        on_written()
        git = repo.git()
        try:
            line = ledger_line(move.event, {"issue": issue_id}, ts=at, head=git.head, branch=git.branch, by=by)
            append_line(state / LEDGER, line)
        except (OSError, LedgerError) as exc:
            ledger_failure = str(exc)
            _log.error("svc: the ledger could not be appended after moving %s: %s", issue_id, exc)
        after = read_snapshot(repo).plan
    if ledger_failure is not None:
        ledger = repo.relative(state / LEDGER)
        raise Internal(
            f"{issue_id} moved ({move.field} {at} is sealed in {record.path}) but the ledger {ledger} "
            f"could not be appended: {ledger_failure}"
        )
    to = next((i.status for i in after.issues if i.id == issue_id), issue.status)
    ready = next_ready(after)
    return PlanTransitionResult(
        issue=issue_id,
        transition=move.transition,
        from_=issue.status,
        to=to,
        field=move.field,
        at=at,
        event=move.event,
        next_ready=ready.id if ready is not None else None,
    )
