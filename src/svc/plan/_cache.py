"""The plan's cache: each record file's parse, and the plan derived from them, in `.ai/local/cache/plan.msgpack`.

**Parses.** An entry holds what parsing one record file gave (the record or None, and its findings) with the
file's `(size, mtime_ns, ino, ctime_ns)` when it was read and the BLAKE2b-128 digest of its bytes. A read reuses
an entry in one of two ways:

- **by stat** (every query): a regular file whose `lstat` equals the entry's four numbers is not opened. Any
  write to a file changes its ctime, which no tool can set back, and a file replaced by a rename has another
  inode or ctime; so equal numbers mean the bytes parsed before, unless the file changed within the same
  timestamp tick as that reading. Hence the **racy rule**: a file whose mtime or ctime is less than 2 s
  before the read began is parsed but never stored (as Git treats a racily clean index entry), so it is
  parsed again on the next read until it has been quiet for 2 s.
- **by bytes** (a move, `exact=True`): every file is read; an entry is reused only when the open file's
  `fstat` equals its numbers and the bytes have its digest. So a move derives from exactly the bytes on disk.

**The derivation.** Beside the entries the file holds the plan derived from exactly them, with what else that
derivation read: the records' order and the loader's findings, and the seal domains of other tools. It is
stored only by a read in which every record file had a stored entry (none racy, none a symlink, none refused,
none that could not be encoded) and no ledger line was pending (`ledger.pending` absent, so no `ledger_gap`).
A query reuses it only when the record files it lists are exactly the stored ones (a new or deleted file is a
miss), each a regular file whose `lstat` equals its entry's four numbers, no ledger line is pending, and the
seal domains are those it was derived with. Nothing is then parsed, assembled or derived: the plan is decoded,
with the header and the milestones; an issue record is decoded from its entry only when a field other than its
id is first read (`_StoredIssue`: a view looking one issue up by id decodes that one). A move never reuses it.

The file is msgpack in separately decodable parts: per kind the names and stat numbers (decoded on every
read), each entry on its own (decoded only when used), the derivation on its own. The cache is an
optimisation only: a missing, unreadable, torn, foreign (another svc version, format, parse or derivation
code, another project directory) or symlinked file is a miss, never an error; so is an entry or a derivation
that cannot be decoded (the record file is parsed instead); an entry that cannot be encoded is left out (and
the derivation with it). The file is replaced (`write_atomic`, no fsync) after a read that stored or dropped
an entry or the derivation, never when nothing changed, and never through a `.ai/local/cache/` that resolves
outside the checkout. Each process also keeps the state of its last read per project directory (8
directories): the entries it decoded, and the records and plan of the derivation, so a server's repeated reads
neither read the file again, nor open unchanged records, nor decode the plan again.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.util
import os
import stat
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

import msgspec

from svc._errors import Internal
from svc._gc import gc_paused
from svc._log import LazyLogger
from svc._version import __version__
from svc.layer import (
    Repository,
    Stat,
    digest,
    ensure_local_state,
    load_yaml,
    read_repository_file,
    settled,
    stat_key,
    write_atomic,
)
from svc.plan import _derive, _keys, _load, _model, _proof, _seal
from svc.plan._load import (
    IssueRecord,
    MilestoneRecord,
    Parsed,
    ProjectRecord,
    RecordKind,
    Records,
    parse_record,
)
from svc.plan._model import Plan, PlanFinding
from svc.plan._parallel import parse_many
from svc.plan._seal import known_domains

__all__ = ["CACHE_FILE", "KINDS", "ParseCache", "forget", "token"]

_log = LazyLogger("svc.plan")
#: Bumped whenever what the file holds, or how a record file is read, changes.
_FORMAT = 2
#: The cache file, relative to the layer (`.ai/`).
CACHE_FILE = "local/cache/plan.msgpack"
#: The largest cache file read (about 7 times the 10,000-issue plan's 18 MB).
_MAX_CACHE_BYTES = 128 * 1024 * 1024
#: How many project directories a process keeps entries for.
_MEMORY_LIMIT = 8
#: The record kinds, in the order a read goes through them.
KINDS: tuple[RecordKind, ...] = ("project", "milestone", "issue")

R = TypeVar("R")
#: What an index holds for each entry: its encoding as read (`msgspec.Raw`), or, when written, an entry parsed
#: by this read, encoded with the whole file.
E = TypeVar("E")
Key = Stat
#: Encoded msgpack, as decoded from the file (a view of its bytes) or as encoded by this read.
Blob = bytes | msgspec.Raw
#: Per kind, the record files of a directory listing, each checked by `ParseCache.unchanged`.
Listing = dict[RecordKind, list[str]]
#: msgpack's nil: the derivation part of a file that holds none.
_NIL = msgspec.Raw(b"\xc0")


class _Entry(msgspec.Struct, Generic[R], array_like=True, frozen=True, gc=False):
    """One record file's parse, with the file's stat numbers and the digest of the bytes parsed.

    Not tracked by the cyclic garbage collector: it holds a record and its findings, which never refer back.
    """

    name: str
    size: int
    mtime_ns: int
    ino: int
    ctime_ns: int
    digest: bytes
    record: R | None
    findings: tuple[PlanFinding, ...]

    @property
    def key(self) -> Key:
        return (self.size, self.mtime_ns, self.ino, self.ctime_ns)


class _Index(msgspec.Struct, Generic[E], array_like=True, frozen=True):
    """One kind's entries: the names and stat numbers, and each entry encoded on its own (same order)."""

    names: list[str]
    keys: list[Key]
    entries: list[E]


class _Derived(msgspec.Struct, array_like=True, frozen=True):
    """The plan derived from exactly the stored entries, and what else the derivation read.

    `milestones` and `issues` name the entries whose records `Records` kept, in its order, `ids` the issues'
    ids in that order; `findings` are the records' findings (the loader's); `plan` is the encoded `Plan`.
    """

    domains: tuple[str, ...]
    milestones: list[str]
    issues: list[str]
    ids: list[str]
    findings: tuple[PlanFinding, ...]
    plan: msgspec.Raw


class _CacheFile(msgspec.Struct, Generic[E], array_like=True, frozen=True):
    """The whole file: the format, the token, per kind the entries, and the derivation (nil when none)."""

    format: int
    token: bytes
    project: _Index[E]
    milestones: _Index[E]
    issues: _Index[E]
    derived: msgspec.Raw


_ENCODER = msgspec.msgpack.Encoder()


class _Decoders:
    """The decoders of the file's parts, made together on first use, under a lock.

    A first read decodes nothing, so it never pays for resolving the records' and the plan's annotations; the
    lock keeps two threads from making msgspec build the same types' information at once.
    """

    def __init__(self) -> None:
        self.file: msgspec.msgpack.Decoder[_CacheFile[msgspec.Raw]] = msgspec.msgpack.Decoder(_CacheFile[msgspec.Raw])
        self.entries: dict[RecordKind, msgspec.msgpack.Decoder[Any]] = {
            "project": msgspec.msgpack.Decoder(_Entry[ProjectRecord]),
            "milestone": msgspec.msgpack.Decoder(_Entry[MilestoneRecord]),
            "issue": msgspec.msgpack.Decoder(_Entry[IssueRecord]),
        }
        self.derived: msgspec.msgpack.Decoder[_Derived] = msgspec.msgpack.Decoder(_Derived)
        self.plan: msgspec.msgpack.Decoder[Plan] = msgspec.msgpack.Decoder(Plan)


_DECODERS_MADE: list[_Decoders] = []
_DECODERS_LOCK = threading.Lock()


def _decoders() -> _Decoders:
    if not _DECODERS_MADE:
        with _DECODERS_LOCK:
            if not _DECODERS_MADE:
                _DECODERS_MADE.append(_Decoders())
    return _DECODERS_MADE[0]


class _Kind:
    """One kind's stored entries by file name: stat numbers, encoded entries, and those decoded so far.

    (A plain class: a dataclass costs a command line's import a millisecond or two.)
    """

    __slots__ = ("blobs", "decoded", "keys")

    def __init__(
        self,
        keys: dict[str, Key] | None = None,
        blobs: dict[str, Blob] | None = None,
        decoded: dict[str, _Entry[Any]] | None = None,
    ) -> None:
        self.keys: dict[str, Key] = {} if keys is None else keys
        self.blobs: dict[str, Blob] = {} if blobs is None else blobs
        self.decoded: dict[str, _Entry[Any]] = {} if decoded is None else decoded

    def entry(self, kind: RecordKind, name: str) -> _Entry[Any] | None:
        """The entry of `name`, decoded on its first use; None when it cannot be (a spoiled file)."""
        found = self.decoded.get(name)
        if found is None:
            try:
                found = _decoders().entries[kind].decode(self.blobs[name])
            except msgspec.DecodeError as exc:
                _log.debug("svc: the plan parse cache entry of %s is not used: %s", name, exc)
                return None
            if found.name != name:
                return None
            self.decoded[name] = found
        return found

    def index(self) -> _Index[msgspec.Raw | _Entry[Any]]:
        """The entries to write: those read from the file as they were, those parsed now as entries."""
        names = list(self.keys)
        entries: list[msgspec.Raw | _Entry[Any]] = [
            _raw(self.blobs[n]) if n in self.blobs else self.decoded[n] for n in names
        ]
        return _Index(names=names, keys=[self.keys[n] for n in names], entries=entries)

    def encodable(self) -> bool:
        """Encode each entry parsed now on its own, leaving out one that cannot be; whether none was left out."""
        every = True
        for name in [n for n in self.keys if n not in self.blobs]:
            try:
                self.blobs[name] = _ENCODER.encode(self.decoded[name])
            except (msgspec.EncodeError, OverflowError, TypeError, ValueError):
                del self.keys[name], self.decoded[name]
                every = False
        return every


class _Held:
    """What one read of a project directory ends with: its token, the entries per kind, the derivation.

    `decoded` is the derivation's records and plan (with the seal domains it was derived with) once a read
    decoded or derived them: a later read of this process that reuses the derivation reuses them too (records
    and a `Plan` are frozen; nothing changes one).
    """

    __slots__ = ("decoded", "derived", "kinds", "token")

    def __init__(
        self,
        token: bytes,
        kinds: dict[RecordKind, _Kind] | None = None,
        derived: Blob = _NIL,
        decoded: tuple[Records, Plan, tuple[str, ...]] | None = None,
    ) -> None:
        self.token = token
        self.kinds: dict[RecordKind, _Kind] = {k: _Kind() for k in KINDS} if kinds is None else kinds
        self.derived: Blob = derived
        self.decoded = decoded


_MEMORY: OrderedDict[Path, _Held] = OrderedDict()
_MEMORY_LOCK = threading.Lock()
#: The clock of the racy rule (nanoseconds since the epoch, as file timestamps are).
_now_ns: Callable[[], int] = time.time_ns


def forget() -> None:
    """Drop the entries every project directory holds in memory (the cache files stay)."""
    with _MEMORY_LOCK:
        _MEMORY.clear()


def _raw(data: Blob) -> msgspec.Raw:
    return data if isinstance(data, msgspec.Raw) else msgspec.Raw(data)


@functools.cache
def _code_stamp() -> tuple[object, ...]:
    """What, besides svc's version, decides a parse or a derivation: the modules' files, PyYAML's and msgspec.

    PyYAML is stamped by its installed files (its version is in `__init__.py`; its C loader is the `_yaml`
    extension beside it) without importing it: a read whose every record is in the cache never does.
    """
    modules = (_load, _keys, _seal, _model, _derive, _proof)
    stamps: list[object] = [_file_stamp(m.__name__, m.__file__) for m in modules]
    stamps.append(_file_stamp(load_yaml.__module__, sys.modules[load_yaml.__module__].__file__))
    spec = importlib.util.find_spec("yaml")
    folder = Path(spec.origin).parent if spec is not None and spec.origin else None
    pyyaml = sorted(p.name for p in folder.iterdir() if p.name.startswith(("__init__.", "_yaml."))) if folder else []
    stamps.extend(_file_stamp(f"yaml/{name}", str(folder / name)) for name in pyyaml if folder is not None)
    return (*stamps, msgspec.__version__)


def _file_stamp(name: str, path: str | None) -> tuple[object, ...]:
    try:
        st = os.stat(path or "")
    except OSError:
        return (name, None)
    return (name, st.st_size, st.st_mtime_ns)


def token(base: str) -> bytes:
    """The token a cache file must carry for the project directory `base` (repository-relative)."""
    text = repr((__version__, _FORMAT, base, _code_stamp()))
    return hashlib.blake2b(text.encode(), digest_size=16).digest()


#: The fields of an issue record, and those its equality and hash read.
_ISSUE_FIELDS = tuple(f.name for f in dataclasses.fields(IssueRecord))
_ISSUE_COMPARED = tuple(f.name for f in dataclasses.fields(IssueRecord) if f.compare)


class _StoredIssue(IssueRecord):
    """An issue record of a reused derivation: its id at once, its other fields decoded when one is first read.

    A view looking for one issue (`plan.next`, `plan.record`) goes through the records comparing ids, so only the
    record it finds is decoded. It reads, equals and hashes as the record it stands for. `_name` is its file's
    name, `_source` what every issue of the read shares: the entries' bytes by file name, the checkout, the
    issues' directory and the repository-relative project directory. An entry that cannot be decoded (a
    spoiled file) is replaced by a parse of the record file.
    """

    __slots__ = ("_name", "_source")

    def __getattr__(self, name: str) -> Any:
        """Reached for a field not decoded yet: decode every field from the entry, then answer this one."""
        if name not in _ISSUE_FIELDS:
            raise AttributeError(name)
        issue_id, file_name = object.__getattribute__(self, "id"), object.__getattribute__(self, "_name")
        blobs, root, folder, base = object.__getattribute__(self, "_source")
        blob, record = blobs.get(file_name), None
        if blob is not None:
            try:
                with gc_paused():
                    record = _decoders().entries["issue"].decode(blob).record
            except msgspec.DecodeError:
                record = None
        if not isinstance(record, IssueRecord) or record.id != issue_id:
            record = _parsed_issue(issue_id, root, folder / file_name, base)
        for field_name in _ISSUE_FIELDS:
            object.__setattr__(self, field_name, getattr(record, field_name))
        return object.__getattribute__(self, name)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, IssueRecord):
            return all(getattr(self, f) == getattr(other, f) for f in _ISSUE_COMPARED)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, f) for f in _ISSUE_COMPARED))


def _parsed_issue(issue_id: str, root: Path, path: Path, base: str) -> IssueRecord:
    """The record of issue `issue_id` parsed from its file `path` (its cache entry could not be decoded).

    Raises:
        Internal: the file cannot be read, or no longer holds that issue.
    """
    try:
        record, _ = parse_record("issue", path.name, read_repository_file(root, path), base)
    except OSError as exc:
        raise Internal(f"the record of issue {issue_id} cannot be read: {exc}") from exc
    if not isinstance(record, IssueRecord) or record.id != issue_id:
        raise Internal(f"the record of issue {issue_id} changed while it was read; read the plan again")
    return record


def _derivation(data: Blob) -> _Derived | None:
    """The stored derivation, or None when there is none or it cannot be decoded."""
    if len(data) <= 1:
        return None
    try:
        return _decoders().derived.decode(data)
    except msgspec.DecodeError:
        return None


def _encode_derivation(kinds: dict[RecordKind, _Kind], records: Records, plan: Plan) -> Blob:
    """The derivation `plan` of `records`, encoded (nil when a record is not one of the entries `kinds`)."""
    names: dict[RecordKind, dict[int, str]] = {
        kind: {id(entry.record): name for name, entry in kinds[kind].decoded.items()} for kind in ("milestone", "issue")
    }
    try:
        derived = _Derived(
            domains=known_domains(),
            milestones=[names["milestone"][id(m)] for m in records.milestones],
            issues=[names["issue"][id(i)] for i in records.issues],
            ids=[i.id for i in records.issues],
            findings=records.findings,
            plan=msgspec.Raw(_ENCODER.encode(plan)),
        )
        return _ENCODER.encode(derived)
    except (KeyError, msgspec.EncodeError, OverflowError, TypeError, ValueError) as exc:
        _log.debug("svc: the plan derivation is not cached: %s", exc)
        return _NIL


class ParseCache:
    """The entries (and derivation) one read of a project directory starts from, and the ones it ends with.

    `reuse(kind)` is the predicate `scan_repository_dir` asks before opening a file; `keep` takes a file it
    kept unopened (its parse decoded later by `stored`, if at all), `take` the parse of a file it read;
    `derived` answers the stored derivation when this read may reuse it; `close` keeps the state of this read
    in memory and replaces the cache file when it changed. Blocking; one read, one thread.
    """

    def __init__(self, repo: Repository, directory: Path, base: str, *, exact: bool) -> None:
        self.root = repo.root
        self.local = repo.layer / "local"
        self.path = repo.layer / CACHE_FILE
        self.directory = directory
        self.base = base
        self.exact = exact
        self.token = token(base)
        #: When the read began: a file changed after `started - RACY_NS` is not stored.
        self.started = _now_ns()
        with _MEMORY_LOCK:
            held = _MEMORY.get(directory)
        self.previous: _Held = held if held is not None and held.token == self.token else self._read()
        #: Per kind, the files kept unopened, and the entries of the files read (reused by bytes or stored now).
        self.unopened: dict[RecordKind, list[str]] = {k: [] for k in KINDS}
        #: Per kind, the files kept unopened whose entry could not be decoded (parsed from the file instead).
        self.dropped: dict[RecordKind, set[str]] = {k: set() for k in KINDS}
        self.opened: dict[RecordKind, _Kind] = {k: _Kind() for k in KINDS}
        #: Per kind, the files read that `parse_queued` is to parse: name, bytes, stat numbers (None: not to be
        #: stored) and digest.
        self.queued: dict[RecordKind, list[tuple[str, bytes, Key | None, bytes]]] = {k: [] for k in KINDS}
        #: Entries stored by this read (parsed now), files parsed, and files seen that no entry can stand for.
        self.new = 0
        self.parsed = 0
        self.unstored = 0

    def reuse(self, kind: RecordKind) -> Callable[[str, os.stat_result], bool]:
        """Whether to keep a regular file unopened: its `lstat` equals its entry's (never in an exact read)."""
        keys = self.previous.kinds[kind].keys
        exact = self.exact

        def known(name: str, st: os.stat_result) -> bool:
            return not exact and keys.get(name) == (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)

        return known

    def keep(self, kind: RecordKind, name: str) -> None:
        """Keep the entry of a file `scan_repository_dir` kept unopened (`reuse` answered true)."""
        self.unopened[kind].append(name)

    def stored(self, kind: RecordKind, name: str) -> Parsed | None:
        """The parse of a file kept unopened, decoded from its entry (None when it cannot be: see `drop`)."""
        entry = self.previous.kinds[kind].entry(kind, name)
        return None if entry is None else (entry.record, entry.findings)

    def drop(self, kind: RecordKind, name: str) -> None:
        """Forget the entry of a file kept unopened whose entry cannot be decoded (the caller parses the file)."""
        self.dropped[kind].add(name)
        self.parsed += 1
        self.unstored += 1

    def take(self, kind: RecordKind, name: str, st: os.stat_result | None, data: bytes) -> Parsed | None:
        """The parse of a file `scan_repository_dir` read (`data` its bytes, `st` its `fstat`, None for a link).

        A read file reuses its entry only when the open file's stat and the bytes' digest both equal the
        entry's; otherwise it is queued (None): `parse_queued` parses it, and stores it unless it is racy, a
        symlink, or cannot be encoded.
        """
        if st is None:
            self.queued[kind].append((name, data, None, b""))
            return None
        before, after = self.previous.kinds[kind], self.opened[kind]
        hashed = digest(data)
        key = stat_key(st)
        if before.keys.get(name) == key:
            entry = before.entry(kind, name)
            if entry is not None and entry.digest == hashed:
                after.keys[name], after.decoded[name] = key, entry
                if name in before.blobs:
                    after.blobs[name] = before.blobs[name]
                return entry.record, entry.findings
        stored = settled(st, self.started)
        self.queued[kind].append((name, data, key if stored else None, hashed))
        return None

    def parse_queued(self, *, helper: bool = True) -> dict[tuple[RecordKind, str], Parsed]:
        """Parse every file `take` queued and store the entries; each parse by (kind, file name).

        Many files are parsed on two processors (`parse_many`), unless `helper` is false.
        """
        parses: dict[tuple[RecordKind, str], Parsed] = {}
        for kind, queued in self.queued.items():
            if not queued:
                continue
            after = self.opened[kind]
            done = parse_many(kind, [(name, data) for name, data, _, _ in queued], self.base, helper=helper)
            for (name, _, key, hashed), (record, findings) in zip(queued, done, strict=True):
                self.parsed += 1
                parses[kind, name] = record, findings
                if key is None:
                    self.unstored += 1
                    continue
                after.keys[name], after.decoded[name] = key, _Entry(name, *key, hashed, record, findings)
                self.new += 1
            queued.clear()
        return parses

    def refused(self) -> None:
        """Count a file of the records the reading rule refused (no entry stands for it)."""
        self.unstored += 1

    def _complete(self) -> bool:
        """Whether every record file of this read has a stored entry (so a derivation from them may be stored)."""
        return self.unstored == 0

    def _unchanged(self) -> bool:
        """Whether this read kept exactly the entries it started from."""
        return self.new == 0 and all(
            len(self.unopened[k]) - len(self.dropped[k]) + len(self.opened[k].keys) == len(self.previous.kinds[k].keys)
            for k in KINDS
        )

    def _kept(self) -> dict[RecordKind, _Kind]:
        """The entries this read ends with: those it started from when it kept them all, else a new set."""
        if self._unchanged():
            return self.previous.kinds
        kinds: dict[RecordKind, _Kind] = {}
        for kind in KINDS:
            before, opened, dropped = self.previous.kinds[kind], self.opened[kind], self.dropped[kind]
            names = [n for n in self.unopened[kind] if n not in dropped] if dropped else self.unopened[kind]
            kept = _Kind(
                keys={n: before.keys[n] for n in names},
                blobs={n: before.blobs[n] for n in names if n in before.blobs},
                decoded={n: before.decoded[n] for n in names if n in before.decoded},
            )
            kept.keys.update(opened.keys)
            kept.blobs.update(opened.blobs)
            kept.decoded.update(opened.decoded)
            kinds[kind] = kept
        return kinds

    def may_reuse(self) -> bool:
        """Whether this read could reuse a stored derivation at all (a query, and the cache holds one)."""
        return not self.exact and len(self.previous.derived) > 1

    def derived(self, *, clean: bool, listed: Listing | None = None) -> tuple[Records, Plan] | None:
        """The records and plan of the stored derivation, when this read may reuse it (else None).

        `clean`: the read found no refused file and no pending ledger line. A query reuses the derivation
        when it kept every file unopened by its stat, exactly the stored set, with the same seal domains. The
        files are those the scan gave (`keep`, `take`), or `listed`: per kind, the names of a listing whose
        every file `unchanged` accepted.
        """
        if self.exact or not clean:
            return None
        if listed is not None:
            if any(len(listed[kind]) != len(self.previous.kinds[kind].keys) for kind in KINDS):
                return None
        elif self.parsed or not self._complete() or not self._unchanged():
            return None
        held, domains = self.previous, known_domains()
        if held.decoded is None or held.decoded[2] != domains:
            stored = _derivation(held.derived)
            if stored is None or stored.domains != domains:
                return None
            try:
                plan = _decoders().plan.decode(stored.plan)
                records = self._records(stored)
            except (msgspec.DecodeError, KeyError, ValueError) as exc:
                _log.debug("svc: the plan derivation cached in %s is not used: %s", self.path, exc)
                return None
            if records is None:
                return None
            held.decoded = (records, plan, domains)
        if listed is not None:
            self.unopened = {kind: listed[kind] for kind in KINDS}
        return held.decoded[0], held.decoded[1]

    def unchanged(self, kind: RecordKind) -> Callable[[str, os.stat_result], bool]:
        """Whether a listed file is a regular file whose `lstat` equals its entry's (the quick pass of a query)."""
        keys = self.previous.kinds[kind].keys
        regular = stat.S_ISREG

        def same(name: str, st: os.stat_result) -> bool:
            return regular(st.st_mode) and keys.get(name) == (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)

        return same

    def _records(self, stored: _Derived) -> Records | None:
        """The records of the stored derivation (None when an entry it names cannot be decoded)."""
        kinds = self.previous.kinds
        header = ProjectRecord()
        if "project.yaml" in kinds["project"].keys:
            entry = kinds["project"].entry("project", "project.yaml")
            if entry is None:
                return None
            header = entry.record if isinstance(entry.record, ProjectRecord) else header
        milestones: list[MilestoneRecord] = []
        for name in stored.milestones:
            entry = kinds["milestone"].entry("milestone", name)
            if entry is None or not isinstance(entry.record, MilestoneRecord):
                return None
            milestones.append(entry.record)
        blobs = kinds["issue"].blobs
        source = (blobs, self.root, self.directory / "issues", self.base)
        new, put = object.__new__, object.__setattr__
        issues: list[IssueRecord] = []
        for issue_id, name in zip(stored.ids, stored.issues, strict=True):
            if name not in blobs:  # parsed by an earlier read of this process: decoded already
                record = kinds["issue"].decoded[name].record
                if not isinstance(record, IssueRecord):
                    return None
                issues.append(record)
                continue
            issue = new(_StoredIssue)
            put(issue, "id", issue_id)
            put(issue, "_name", name)
            put(issue, "_source", source)
            issues.append(issue)
        return Records(
            project=header,
            milestones=tuple(milestones),
            issues=tuple(issues),
            findings=stored.findings,
        )

    def close(self, derivation: tuple[Records, Plan] | None = None, *, clean: bool = False) -> None:
        """Keep this read's state in memory, and replace the cache file when it changed.

        `derivation` is what this read derived (None when it reused the stored one), stored with the entries
        when `clean` (no refused file, no pending ledger line, no ledger gap) and every record file has an
        entry; when the entries are those the read started from and the stored derivation still holds, that
        one is kept as it is.
        """
        changed = not self._unchanged()
        kept = _Held(self.token, self._kept(), self.previous.derived, self.previous.decoded)
        if derivation is not None:
            kept.decoded = None
            derived: Blob = _NIL
            if clean and self._complete():
                previous = _derivation(self.previous.derived)
                if not changed and previous is not None and previous.domains == known_domains():
                    derived = self.previous.derived
                else:
                    derived = _encode_derivation(kept.kinds, *derivation)
            if len(derived) <= 1 and len(self.previous.derived) <= 1:
                derived = self.previous.derived
            kept.derived = derived
            if len(derived) > 1:
                kept.decoded = (*derivation, known_domains())
            changed = changed or derived is not self.previous.derived
        data = self._encoded(kept) if changed else None
        with _MEMORY_LOCK:
            _MEMORY.pop(self.directory, None)
            _MEMORY[self.directory] = kept
            while len(_MEMORY) > _MEMORY_LIMIT:
                _MEMORY.popitem(last=False)
        if data is not None:
            self._store(data)

    def _encoded(self, kept: _Held) -> bytes:
        """The file holding `kept`; an entry that cannot be encoded is left out (and the derivation with it)."""

        def whole() -> bytes:
            kinds = kept.kinds
            written = _CacheFile(
                format=_FORMAT,
                token=self.token,
                project=kinds["project"].index(),
                milestones=kinds["milestone"].index(),
                issues=kinds["issue"].index(),
                derived=_raw(kept.derived),
            )
            return _ENCODER.encode(written)

        try:
            return whole()
        except (msgspec.EncodeError, OverflowError, TypeError, ValueError):
            pass
        if not all([kind.encodable() for kind in kept.kinds.values()]):
            kept.derived, kept.decoded = _NIL, None
        return whole()

    def _read(self) -> _Held:
        """The state of the cache file, or an empty one when it is absent, unreadable, torn or foreign."""
        empty = _Held(self.token)
        try:
            if stat.S_ISLNK(os.lstat(self.path).st_mode):
                return empty
            held = _decoders().file.decode(read_repository_file(self.root, self.path, limit=_MAX_CACHE_BYTES))
        except (OSError, msgspec.DecodeError) as exc:
            if not isinstance(exc, FileNotFoundError):
                _log.debug("svc: the plan parse cache %s is not used: %s", self.path, exc)
            return empty
        if held.format != _FORMAT or held.token != self.token:
            return empty
        kinds: dict[RecordKind, _Kind] = {}
        for kind, index in zip(KINDS, (held.project, held.milestones, held.issues), strict=True):
            if not len(index.names) == len(index.keys) == len(index.entries):
                return empty
            kinds[kind] = _Kind(
                keys=dict(zip(index.names, index.keys, strict=True)),
                blobs=dict(zip(index.names, index.entries, strict=True)),
            )
        return _Held(self.token, kinds, held.derived)

    def _store(self, data: bytes) -> None:
        top = Path(os.path.realpath(self.root))
        real = Path(os.path.realpath(self.path.parent))
        if real != top and not real.is_relative_to(top):
            _log.debug("svc: the plan parse cache is not written: %s resolves outside the checkout", self.path.parent)
            return
        try:
            ensure_local_state(self.local)
            write_atomic(self.path, data, durable=False)
        except OSError as exc:
            _log.debug("svc: the plan parse cache %s was not written: %s", self.path, exc)
