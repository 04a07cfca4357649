"""The thin file layer of the plan: reading the record directories, and moving an issue under the lock.

A query's read reuses the plan the cache (`_cache.py`) derived when no record file changed since (one `lstat`
per file, nothing opened), and otherwise opens only the records whose stat changed since their parses were
stored; a move's read (`exact=True`) reads every record's bytes and reuses a parse only for the same bytes. A move
runs, in one worker thread and under the exclusive cross-process lock `.ai/local/state/plan.lock`, the steps
of docs/plan.md: load and derive afresh, check the move, edit the record text, replace the file atomically,
report the write (`on_written`), append the ledger line, derive again from disk, release. Before its own move
it removes the temp files of killed writes and settles a ledger line a killed move left pending
(`_pending.py`); `repair_ledger` does only that.
Blocking calls only; the caller runs this in a thread.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec

from svc._errors import Internal, InvalidInput, NotFound
from svc._gc import gc_paused
from svc._log import LazyLogger
from svc.layer import (
    Repository,
    ScannedFile,
    Unreadable,
    check_repository_dir,
    clip,
    ensure_local_state,
    read_repository_file,
    remove_stale_temps,
    scan_repository_dir,
    write_atomic,
)
from svc.layer._required import require_layer
from svc.plan._cache import Listing, ParseCache
from svc.plan._derive import derive
from svc.plan._edit import check_move, reseal_record, stamp_record
from svc.plan._ledger import LedgerError, append_line, ledger_line
from svc.plan._load import Parsed, RecordKind, Records, assemble, parse_record
from svc.plan._model import Plan, PlanFinding, PlanTransitionResult
from svc.plan._pending import PENDING, PendingEvent, clear_pending, read_pending, settle, unlogged, write_pending
from svc.plan._prime import await_primer
from svc.plan._seal import MOVES, SEAL_SCHEMA, Move, domain_problem, known_domains, seal, sealing_domain
from svc.plan._views import next_ready
from svc.plan._where import locate, project_directory, select_record

__all__ = [
    "LEDGER",
    "LOCK",
    "LedgerRepair",
    "Reseal",
    "ResealStamp",
    "Snapshot",
    "move_issue",
    "read_plan",
    "read_snapshot",
    "repair_ledger",
    "reseal",
]

_log = LazyLogger("svc.plan")

#: Paths under `.ai/local/state/`.
LOCK = "plan.lock"
LEDGER = "ledger.jsonl"


def _unreadable(subject: str, exc: Unreadable) -> PlanFinding:
    message = f"{exc.path} cannot be read ({exc.reason}); left out"
    return PlanFinding(level="FAIL", code="unreadable", subject=clip(subject), message=clip(message))


def _is_project(name: str) -> bool:
    return name == "project.yaml"


def _read_dir(
    repo: Repository,
    directory: Path,
    kind: RecordKind,
    cache: ParseCache,
    findings: list[PlanFinding],
    read: dict[str, bytes],
) -> list[tuple[str, Parsed | None]]:
    """(file name, parse) of every `*.yaml` file directly in `directory` (dot files skipped).

    The parse is None for a file the cache kept unopened (`_parsed` decodes it, when the stored derivation
    is not reused) or queued to be parsed (`ParseCache.parse_queued`). A file the reading rule refuses (a
    directory named `*.yaml`, a FIFO, a symlink loop or one leaving the checkout, over 4 MiB, no permission)
    is left out with an `unreadable` finding; so is a refused directory. The bytes of every file read (not
    kept unopened by the cache) go into `read`.
    """
    out: list[tuple[str, Parsed | None]] = []
    try:
        for scanned in scan_repository_dir(repo.root, directory, select_record, cache.reuse(kind)):
            taken = _taken(cache, kind, scanned, findings, scanned.name[: -len(".yaml")])
            if taken is not None:
                out.append(taken)
                if isinstance(scanned.data, bytes):
                    read[scanned.name] = scanned.data
    except FileNotFoundError:
        pass
    except Unreadable as exc:
        findings.append(_unreadable("layer", exc))
    return out


def _read_project(
    repo: Repository, directory: Path, cache: ParseCache, findings: list[PlanFinding]
) -> list[tuple[str, Parsed | None]]:
    """`project.yaml` and its parse, as `_read_dir` gives them (none when it is absent or refused).

    A refused file is an `unreadable` finding. A project directory the reading rule refuses is not an error
    of its own here (the record directories report it): `project.yaml` is then judged alone, as the reading
    rule judges one file.
    """
    try:
        scanned = list(scan_repository_dir(repo.root, directory, _is_project, cache.reuse("project")))
    except FileNotFoundError:
        return []
    except OSError:
        cache.refused()
        try:
            alone = read_repository_file(repo.root, directory / "project.yaml")
        except FileNotFoundError:
            return []
        except Unreadable as exc:
            findings.append(_unreadable("project", exc))
            return []
        except OSError:  # a component of the path is not a directory: the record directories report it
            return []
        return [("project.yaml", parse_record("project", "project.yaml", alone, cache.base))]
    taken = _taken(cache, "project", scanned[0], findings, "project") if scanned else None
    return [] if taken is None else [taken]


def _taken(
    cache: ParseCache, kind: RecordKind, scanned: ScannedFile, findings: list[PlanFinding], subject: str
) -> tuple[str, Parsed | None] | None:
    """A scanned record file handed to the cache: kept unopened, or taken as read (its parse, else None).

    A file the reading rule refused is an `unreadable` finding about `subject`, and None.
    """
    name, st, data = scanned
    if isinstance(data, Unreadable):
        findings.append(_unreadable(subject, data))
        cache.refused()
        return None
    if data is None:
        cache.keep(kind, name)
        return name, None
    return name, cache.take(kind, name, st, data)


def _listed(repo: Repository, directory: Path, cache: ParseCache) -> Listing | None:
    """Per kind, the record files' names, when every one is unchanged since the cache stored it; else None.

    The quick first pass of a query that may reuse the cached derivation: each directory is checked and listed
    as `scan_repository_dir` does, each `*.yaml` file `lstat`ed and judged by `cache.unchanged`; nothing is
    opened. It stops at the first file that differs, or a directory that is refused or cannot be listed (the
    scan then reports it).
    """
    listed: Listing = {}
    folders: tuple[tuple[RecordKind, Path, Callable[[str], bool]], ...] = (
        ("project", directory, _is_project),
        ("milestone", directory / "milestones", select_record),
        ("issue", directory / "issues", select_record),
    )
    for kind, folder, select in folders:
        try:
            real = check_repository_dir(repo.root, folder)
        except FileNotFoundError:
            listed[kind] = []
            continue
        except OSError:
            return None
        same = cache.unchanged(kind)
        names: list[str] = []
        try:
            with os.scandir(real) as entries:
                for entry in entries:
                    name = entry.name
                    if select(name):
                        if not same(name, entry.stat(follow_symlinks=False)):
                            return None
                        names.append(name)
        except OSError:
            return None
        listed[kind] = names
    return listed


def _parsed(
    repo: Repository,
    cache: ParseCache,
    parses: dict[tuple[RecordKind, str], Parsed],
    kind: RecordKind,
    folder: Path,
    files: list[tuple[str, Parsed | None]],
    findings: list[PlanFinding],
) -> list[tuple[str, Parsed]]:
    """Every file's parse: reused when read, parsed by `parse_queued`, or decoded from a kept file's entry.

    A file whose entry cannot be decoded (a spoiled cache file) is read and parsed now, its entry dropped.
    """
    out: list[tuple[str, Parsed]] = []
    for name, parsed in files:
        if parsed is None:
            parsed = parses.get((kind, name))
        if parsed is None:
            parsed = cache.stored(kind, name)
        if parsed is None:
            cache.drop(kind, name)
            try:
                parsed = parse_record(kind, name, read_repository_file(repo.root, folder / name), cache.base)
            except FileNotFoundError:
                continue
            except Unreadable as exc:
                findings.append(_unreadable("project" if kind == "project" else name[: -len(".yaml")], exc))
                continue
        out.append((name, parsed))
    return out


class Snapshot(msgspec.Struct, frozen=True):
    """One reading of the records: what was loaded, the plan derived from it, and the issues' bytes read.

    `issue_bytes` holds every issue's bytes after an exact read (what a move edits); a query's read holds
    only those of the files it opened.
    """

    records: Records
    plan: Plan
    issue_bytes: dict[str, bytes] = msgspec.field(default_factory=dict)


def read_snapshot(repo: Repository, *, exact: bool = False, helper: bool = True) -> Snapshot:
    """Read every record of `repo` and derive the plan (an absent layer is an empty plan).

    A query's read reuses the cached derivation when every record file's (size, mtime, inode, ctime) equal its
    entry's, the files are the same, no ledger line is pending and the seal domains are the same; otherwise it
    keeps unopened every record whose four numbers equal its entry's, and derives. `exact=True` (a move) reads
    every record's bytes, reuses a parse only for the very bytes it parsed, and always derives. Many records
    are parsed on two processors unless `helper` is false (`parse_many`). A read in a serving process first
    waits for the plan's read in a second process its start began (`await_primer`), and reuses what it stored.
    """
    await_primer(repo.root)
    with gc_paused():
        return _snapshot(repo, exact, helper)


def _snapshot(repo: Repository, exact: bool, helper: bool) -> Snapshot:
    directory, findings = locate(repo)
    if directory is None:
        records = Records(findings=tuple(findings))
        return Snapshot(records=records, plan=derive(records))
    cache = ParseCache(repo, directory, repo.relative(directory), exact=exact)
    if cache.may_reuse():
        listed = _listed(repo, directory, cache)
        if listed is not None and read_pending(repo.root, repo.local_state) is None:
            quick = cache.derived(clean=True, listed=listed)
            if quick is not None:
                cache.close()
                return Snapshot(records=quick[0], plan=quick[1])
    project = _read_project(repo, directory, cache, findings)
    read: dict[str, bytes] = {}
    milestones = _read_dir(repo, directory / "milestones", "milestone", cache, findings, {})
    issues = _read_dir(repo, directory / "issues", "issue", cache, findings, read)
    issue_bytes = {name[: -len(".yaml")]: data for name, data in read.items()}
    parses = cache.parse_queued(helper=helper)
    pending = read_pending(repo.root, repo.local_state)
    clean = not findings and pending is None
    reused = cache.derived(clean=clean)
    if reused is not None:
        cache.close()
        return Snapshot(records=reused[0], plan=reused[1], issue_bytes=issue_bytes)
    header = _parsed(repo, cache, parses, "project", directory, project, findings)
    records = assemble(
        header[0][1] if header else None,
        _parsed(repo, cache, parses, "milestone", directory / "milestones", milestones, findings),
        _parsed(repo, cache, parses, "issue", directory / "issues", issues, findings),
    )
    if findings:
        records = msgspec.structs.replace(records, findings=(*findings, *records.findings))
    gap = frozenset() if pending is None else _unlogged(repo, records)
    plan = derive(records, unlogged=gap)
    cache.close((records, plan), clean=clean)
    return Snapshot(records=records, plan=plan, issue_bytes=issue_bytes)


def _unlogged(repo: Repository, records: Records) -> frozenset[tuple[str, str, str]]:
    """The `(issue, event, stamp)` of a ledger line an interrupted move left out (at most one)."""
    state = repo.local_state
    gap = unlogged(repo.root, state, state / LOCK, state / LEDGER, records.issues)
    return frozenset() if gap is None else frozenset({(gap.issue, gap.move.event, gap.stamp)})


def read_plan(repo: Repository) -> Plan:
    """The plan of `repo`, derived now."""
    return read_snapshot(repo).plan


@contextlib.contextmanager
def _exclusive(path: Path) -> Iterator[None]:
    """Hold an exclusive `flock` on `path` (created 0600, never through a symlink) until the block ends.

    Raises:
        Internal: the lock file cannot be opened.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise Internal(f"cannot take the plan lock {path.name}: {exc.strerror or exc}; nothing was changed") from exc
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


def _state_directory(repo: Repository, *, create: bool) -> Path:
    """`.ai/local/state/` (created 0700 when asked), refused when a symlink on the way leaves the checkout.

    Raises:
        Internal: it resolves outside the checkout (nothing was created or written).
    """
    state = repo.local_state
    top = Path(os.path.realpath(repo.root))
    real = Path(os.path.realpath(state))
    if real != top and not real.is_relative_to(top):
        raise Internal(f"{repo.relative(state)} resolves outside the checkout (a symlink); nothing was changed")
    if create:
        ensure_local_state(state.parent)
    return state


def _sweep(repo: Repository, directory: Path, before_ns: int) -> list[str]:
    """Remove the temp files killed writes left in `directory` (when it is one inside the checkout)."""
    try:
        real = check_repository_dir(repo.root, directory)
    except OSError:
        return []
    return [repo.relative(directory / path.name) for path in remove_stale_temps(real, before_ns=before_ns)]


def _settled(repo: Repository, directory: Path, doing: str) -> tuple[Snapshot, PendingEvent | None, list[str]]:
    """Under the lock: sweep the issues' temp files, read the records, settle a pending ledger line.

    Returns the snapshot, the line appended (if any) and the temp files removed.

    Raises:
        Internal: the pending line cannot be appended or removed (it is kept for the next holder).
    """
    began = time.time_ns()
    removed = _sweep(repo, directory / "issues", began)
    snapshot = read_snapshot(repo, exact=True)
    state = repo.local_state
    try:
        appended = settle(repo.root, state, state / LEDGER, snapshot.records.issues)
    except (OSError, LedgerError) as exc:
        pending, ledger = repo.relative(state / PENDING), repo.relative(state / LEDGER)
        raise Internal(
            f"cannot {doing}: the ledger line an interrupted move left in {pending} cannot be appended to "
            f"{ledger}: {getattr(exc, 'strerror', None) or exc}; nothing was changed"
        ) from exc
    if appended is not None:
        _log.warning("svc: appended the ledger line an interrupted move left out: %s", appended.describe())
    return snapshot, appended, removed


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

    First, under the lock, stale temp files are removed and a ledger line an interrupted move left pending is
    settled; then the line of this move is made pending, the record replaced, the line appended and the
    pending file removed. `on_written` runs right after the record is replaced (the caller bumps its
    generation there); `now` gives the stamp (UTC, whole seconds). Blocking: run it in a worker thread.

    Raises:
        NotFound: no issue has this id.
        Refused: the move is not allowed now (nothing written).
        Internal: an interrupted move's ledger line cannot be appended, or the record could not be edited or
            written (nothing changed); or the ledger could not be appended (the move stands: the stamp and
            its seal are in the record, and its line stays pending for the next transition).
    """
    directory = project_directory(repo)
    if directory is None:
        raise NotFound(f"no issue '{issue_id}'")
    state = _state_directory(repo, create=True)
    ledger_failure: str | None = None
    with _exclusive(state / LOCK):
        snapshot, _, _ = _settled(repo, directory, f"move {issue_id}")
        issue, move = check_move(snapshot.plan, snapshot.records.issues, issue_id, transition)
        record = next(r for r in snapshot.records.issues if r.id == issue_id)
        at = now()
        edited = stamp_record(snapshot.issue_bytes[issue_id], issue_id, move, at)
        git = repo.git()
        try:
            line = ledger_line(move.event, {"issue": issue_id}, ts=at, head=git.head, branch=git.branch, by=by)
            write_pending(state, line)
        except (OSError, LedgerError) as exc:
            reason = getattr(exc, "strerror", None) or exc
            raise Internal(f"cannot move {issue_id}: its ledger line cannot be prepared: {reason}") from exc
        try:
            write_atomic(repo.root / record.path, edited)
        except OSError as exc:
            with contextlib.suppress(OSError):
                clear_pending(state)
            raise Internal(f"cannot write {record.path}: {exc.strerror or exc}; nothing was changed") from exc
        on_written()
        try:
            append_line(state / LEDGER, line)
        except (OSError, LedgerError) as exc:
            ledger_failure = str(exc)
            _log.error("svc: the ledger could not be appended after moving %s: %s", issue_id, exc)
        else:
            try:
                clear_pending(state)
            except OSError as exc:
                _log.warning("svc: %s cannot be removed (%s); the next transition drops it", PENDING, exc.strerror)
        after = read_snapshot(repo, exact=True).plan
    if ledger_failure is not None:
        ledger = repo.relative(state / LEDGER)
        raise Internal(
            f"{issue_id} moved ({move.field} {at} is sealed in {record.path}) but the ledger {ledger} "
            f"could not be appended: {ledger_failure}; the line stays pending and the next transition or "
            "`svc plan repair-ledger` appends it"
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


class LedgerRepair(msgspec.Struct, frozen=True):
    """What `repair_ledger` did: the ledger lines appended (`event issue stamp`) and the temp files removed."""

    appended: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()


def repair_ledger(repo: Repository) -> LedgerRepair:
    """Make the ledger agree with the records after a crash, under `plan.lock` (`svc plan repair-ledger`).

    Removes the temp files killed writes left beside the issue records, and appends the ledger line an
    interrupted move left pending when the record holds the sealed stamp it proves and the ledger lacks it
    (the very line the move built). Idempotent: a second run appends and removes nothing. A checkout with no
    plan layer, or no `.ai/local/state/` yet, has nothing to repair and nothing is created.

    Raises:
        Internal: the pending line cannot be appended (it is kept).
    """
    directory = project_directory(repo)
    if directory is None or not repo.local_state.is_dir():
        return LedgerRepair()
    state = _state_directory(repo, create=False)
    with _exclusive(state / LOCK):
        _, appended, removed = _settled(repo, directory, "repair the ledger")
    return LedgerRepair(appended=() if appended is None else (appended.describe(),), removed=tuple(removed))


class ResealStamp(msgspec.Struct, frozen=True):
    """One sealed stamp `svc plan reseal` re-seals (or would), or refuses with `reason`."""

    issue: str
    path: str
    field: str
    stamp: str
    event: str
    reason: str = ""

    def describe(self) -> str:
        """`I0001 started_at 2026-10-08T10:33:54Z`: the issue, the stamp field and the stamp."""
        return f"{self.issue} {self.field} {self.stamp}"


class Reseal(msgspec.Struct, frozen=True):
    """What `reseal` found and did under one seal domain.

    `resealed` holds the stamps sealed under `domain` (re-sealed when `written`, else those a write would
    re-seal), `refused` the sealed stamps whose seal proves under neither `domain` nor svc's, `unsealed` the
    number of unproven stamps with no seal at all (left as they are). `removed` and `appended` are the repairs
    of an interrupted move done first under the lock (a write only).
    """

    domain: str
    written: bool
    resealed: tuple[ResealStamp, ...] = ()
    refused: tuple[ResealStamp, ...] = ()
    unsealed: int = 0
    removed: tuple[str, ...] = ()
    appended: tuple[str, ...] = ()


def _survey(records: Records, domain: str) -> tuple[list[tuple[ResealStamp, Move]], list[ResealStamp], int]:
    """The stamps sealed under `domain`, the sealed ones refused (with why), and the count of unsealed ones."""
    others = tuple(d for d in known_domains() if d != domain)
    chosen: list[tuple[ResealStamp, Move]] = []
    refused: list[ResealStamp] = []
    unsealed = 0
    for r in records.issues:
        stamps = (r.started_at, r.verified_at, r.completed_at)
        seals = (r.started_event, r.verified_event, r.completed_event)
        for move, stamp, sealed_by, proof in zip(MOVES.values(), stamps, seals, r.proven, strict=True):
            if not stamp or proof:
                continue
            if not sealed_by:
                unsealed += 1
                continue
            found = ResealStamp(issue=r.id, path=r.path, field=move.field, stamp=stamp, event=move.event)
            if sealed_by == seal(move.event, r.id, stamp, domain=domain):
                chosen.append((found, move))
                continue
            other = sealing_domain(move, r.id, stamp, sealed_by, others)
            why = (
                f"its {move.seal_field} seals it under {other}, not {domain}"
                if other is not None
                else f"its {move.seal_field} seals it under neither {domain} nor svc's {SEAL_SCHEMA}"
            )
            refused.append(msgspec.structs.replace(found, reason=why))
    return chosen, refused, unsealed


def reseal(
    repo: Repository,
    domain: str,
    *,
    write: bool,
    by: str,
    on_written: Callable[[], None] = lambda: None,
) -> Reseal:
    """Re-seal with svc's seal every unproven stamp whose seal proves under `domain` (`svc plan reseal`).

    Without `write` nothing is written: the answer lists what a write would do. With `write`, under
    `plan.lock` and after the crash repairs of a move, each stamp is a move of its own: its ledger line is made
    pending, the record's seal field alone is replaced atomically (`on_written` runs after each replacement),
    the line is appended to the ledger and the pending file removed. The line is the stamp's own event (`ts`
    the stamp, payload `issue` and `resealed_from`), so an interrupted re-seal is settled like a move. A stamp
    whose seal proves under neither `domain` nor svc's is refused and left as it is; so is a stamp with no seal.

    Raises:
        InvalidInput: `domain` is not a seal domain, or is svc's own.
        NotFound: the checkout has no `.ai/` layer.
        Internal: a record or the ledger cannot be written (the stamps re-sealed before stand, each with its
            ledger line or a pending one).
    """
    problem = domain_problem(domain)
    if problem is not None:
        raise InvalidInput(problem)
    if domain == SEAL_SCHEMA:
        raise InvalidInput(f"{SEAL_SCHEMA} is svc's own seal domain: stamps sealed under it already prove")
    require_layer(repo)
    directory = project_directory(repo)
    if not write or directory is None:
        chosen, refused, unsealed = _survey(read_snapshot(repo).records, domain)
        return Reseal(
            domain=domain,
            written=False,
            resealed=tuple(found for found, _ in chosen),
            refused=tuple(refused),
            unsealed=unsealed,
        )
    state = _state_directory(repo, create=True)
    done: list[ResealStamp] = []
    with _exclusive(state / LOCK):
        snapshot, appended, removed = _settled(repo, directory, "re-seal")
        chosen, refused, unsealed = _survey(snapshot.records, domain)
        current = dict(snapshot.issue_bytes)
        git = repo.git()
        for found, move in chosen:
            edited = reseal_record(current[found.issue], found.issue, move, found.stamp)
            payload = {"issue": found.issue, "resealed_from": domain}
            try:
                line = ledger_line(move.event, payload, ts=found.stamp, head=git.head, branch=git.branch, by=by)
                write_pending(state, line)
            except (OSError, LedgerError) as exc:
                reason = getattr(exc, "strerror", None) or exc
                message = f"cannot re-seal {found.describe()}: its ledger line cannot be prepared: {reason}"
                raise Internal(message) from exc
            try:
                write_atomic(repo.root / found.path, edited)
            except OSError as exc:
                with contextlib.suppress(OSError):
                    clear_pending(state)
                raise Internal(
                    f"cannot write {found.path}: {exc.strerror or exc}; {found.describe()} was not re-sealed "
                    f"({len(done)} stamps were re-sealed before it)"
                ) from exc
            current[found.issue] = edited
            on_written()
            try:
                append_line(state / LEDGER, line)
            except (OSError, LedgerError) as exc:
                ledger = repo.relative(state / LEDGER)
                raise Internal(
                    f"{found.describe()} is re-sealed in {found.path} but the ledger {ledger} could not be "
                    f"appended: {exc}; the line stays pending and the next transition or `svc plan repair-ledger` "
                    "appends it"
                ) from exc
            try:
                clear_pending(state)
            except OSError as exc:
                _log.warning("svc: %s cannot be removed (%s); the next transition drops it", PENDING, exc.strerror)
            done.append(found)
    return Reseal(
        domain=domain,
        written=True,
        resealed=tuple(done),
        refused=tuple(refused),
        unsealed=unsealed,
        removed=tuple(removed),
        appended=() if appended is None else (appended.describe(),),
    )
