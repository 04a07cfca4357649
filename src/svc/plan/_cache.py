"""The parse cache of the plan's records: each record file's parse, kept under `.ai/local/cache/plan.msgpack`.

An entry holds what parsing one record file gave (the record or None, and its findings) with the file's
`(size, mtime_ns, ino, ctime_ns)` when it was read and the BLAKE2b-128 digest of its bytes. A read reuses an
entry in one of two ways:

- **by stat** (every query): a regular file whose `lstat` equals the entry's four numbers is not opened. Any
  write to a file changes its ctime, which no tool can set back, and a file replaced by a rename has another
  inode or ctime; so equal numbers mean the bytes parsed before, unless the file changed within the same
  timestamp tick as that reading. Hence the **racy rule**: a file whose mtime or ctime is less than 2 s
  before the read began is parsed but never stored (as Git treats a racily clean index entry), so it is
  parsed again on the next read until it has been quiet for 2 s.
- **by bytes** (a move, `exact=True`): every file is read; an entry is reused only when the open file's
  `fstat` equals its numbers and the bytes have its digest. So a move derives from exactly the bytes on disk.

The cache is an optimisation only: a missing, unreadable, torn, foreign (another svc version, format or parse
code, another project directory) or symlinked file is a miss, never an error, and an entry that cannot be
encoded is left out. The file is replaced (`write_atomic`, no fsync) after a read that stored a new entry or
dropped one, never when nothing changed, and never through a `.ai/local/cache/` that resolves outside the
checkout. Each process also keeps the entries of its last read per project directory (8 directories), so a
server's repeated reads neither decode the file again nor open unchanged records.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import logging
import os
import stat
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

import msgspec

from svc._version import __version__
from svc.layer import Repository, ensure_local_state, load_yaml, read_repository_file, write_atomic
from svc.plan import _keys, _load, _model, _seal
from svc.plan._load import IssueRecord, MilestoneRecord, Parsed, ProjectRecord, RecordKind, parse_record
from svc.plan._model import PlanFinding

__all__ = ["CACHE_FILE", "KINDS", "RACY_NS", "ParseCache", "digest", "forget", "key_of", "token"]

_log = logging.getLogger("svc.plan")
#: Bumped whenever what an entry holds, or how a record file is read, changes.
_FORMAT = 1
#: The cache file, relative to the layer (`.ai/`).
CACHE_FILE = "local/cache/plan.msgpack"
#: A file changed less than this long before a read began is never stored (the racy rule).
RACY_NS = 2_000_000_000
#: The largest cache file read (about 10 times the 10,000-issue plan's 13 MB).
_MAX_CACHE_BYTES = 128 * 1024 * 1024
#: How many project directories a process keeps entries for.
_MEMORY_LIMIT = 8
#: The record kinds, in the order a read goes through them.
KINDS: tuple[RecordKind, ...] = ("project", "milestone", "issue")

R = TypeVar("R")
Key = tuple[int, int, int, int]


class _Entry(msgspec.Struct, Generic[R], array_like=True, frozen=True):
    """One record file's parse, with the file's stat numbers and the digest of the bytes parsed."""

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


class _CacheFile(msgspec.Struct):
    """The whole file: the format, the token, and per kind the entries."""

    format: int
    token: bytes
    project: list[_Entry[ProjectRecord]]
    milestones: list[_Entry[MilestoneRecord]]
    issues: list[_Entry[IssueRecord]]


class _Encoded(msgspec.Struct):
    """`_CacheFile` with each entry already encoded (an entry that cannot be encoded is left out)."""

    format: int
    token: bytes
    project: list[msgspec.Raw]
    milestones: list[msgspec.Raw]
    issues: list[msgspec.Raw]


_DECODER = msgspec.msgpack.Decoder(_CacheFile)
_ENCODER = msgspec.msgpack.Encoder()

Entries = dict[RecordKind, dict[str, _Entry[Any]]]


@dataclass(slots=True)
class _Held:
    token: bytes
    entries: Entries = field(default_factory=dict)


_MEMORY: OrderedDict[Path, _Held] = OrderedDict()
_MEMORY_LOCK = threading.Lock()
#: The clock of the racy rule (nanoseconds since the epoch, as file timestamps are).
_now_ns: Callable[[], int] = time.time_ns


def forget() -> None:
    """Drop the entries every project directory holds in memory (the cache files stay)."""
    with _MEMORY_LOCK:
        _MEMORY.clear()


def digest(data: bytes) -> bytes:
    """The 16-byte BLAKE2b digest an entry keeps of the bytes it parsed."""
    return hashlib.blake2b(data, digest_size=16).digest()


def key_of(st: os.stat_result) -> Key:
    """The stat numbers an entry is keyed by: size, mtime_ns, inode, ctime_ns."""
    return (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)


@functools.cache
def _code_stamp() -> tuple[object, ...]:
    """What, besides svc's version, decides a parse: the parsing modules' files, PyYAML's files and msgspec.

    PyYAML is stamped by its installed files (its version is in `__init__.py`; its C loader is the `_yaml`
    extension beside it) without importing it: a read whose every record is in the cache never does.
    """
    stamps: list[object] = [_file_stamp(m.__name__, m.__file__) for m in (_load, _keys, _seal, _model)]
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


class ParseCache:
    """The entries one read of a project directory starts from, and the ones it ends with.

    `reuse(kind)` is the predicate `scan_repository_dir` asks before opening a file; `take` gives the parse of
    one scanned file (reused or parsed now); `close` keeps the entries of this read in memory and replaces the
    cache file when they differ from the ones the read started from. Blocking; one read, one thread.
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
        self.previous: Entries = held.entries if held is not None and held.token == self.token else self._read()
        self.kept: Entries = {kind: {} for kind in KINDS}
        self.new = 0
        self.parsed = 0

    def reuse(self, kind: RecordKind) -> Callable[[str, os.stat_result], bool]:
        """Whether to keep a regular file unopened: its `lstat` equals its entry's (never in an exact read)."""
        entries = self.previous.get(kind, {})

        def known(name: str, st: os.stat_result) -> bool:
            if self.exact:
                return False
            entry = entries.get(name)
            return entry is not None and entry.key == key_of(st)

        return known

    def take(self, kind: RecordKind, name: str, st: os.stat_result | None, data: bytes | None) -> Parsed:
        """The parse of a file `scan_repository_dir` kept unopened (`data` None) or read (`data` its bytes).

        A read file reuses its entry only when the open file's stat (`st`) and the bytes' digest both equal the
        entry's; otherwise it is parsed, and stored unless it is racy or a symlink (`st` None).
        """
        if data is None:
            kept = self.kept[kind][name] = self.previous[kind][name]
            return kept.record, kept.findings
        entry = self.previous.get(kind, {}).get(name)
        if st is None:
            self.parsed += 1
            return parse_record(kind, name, data, self.base)
        hashed = digest(data)
        if entry is not None and entry.key == key_of(st) and entry.digest == hashed:
            self.kept[kind][name] = entry
            return entry.record, entry.findings
        self.parsed += 1
        record, findings = parse_record(kind, name, data, self.base)
        if max(st.st_mtime_ns, st.st_ctime_ns) <= self.started - RACY_NS:
            size, mtime_ns, ino, ctime_ns = key_of(st)
            self.kept[kind][name] = _Entry(name, size, mtime_ns, ino, ctime_ns, hashed, record, findings)
            self.new += 1
        return record, findings

    @property
    def changed(self) -> bool:
        """Whether this read stored an entry, or dropped one it started from."""
        return self.new > 0 or any(len(self.kept[k]) != len(self.previous.get(k, {})) for k in KINDS)

    def close(self) -> None:
        """Keep this read's entries in memory, and replace the cache file when they changed."""
        with _MEMORY_LOCK:
            _MEMORY.pop(self.directory, None)
            _MEMORY[self.directory] = _Held(self.token, self.kept)
            while len(_MEMORY) > _MEMORY_LIMIT:
                _MEMORY.popitem(last=False)
        if self.changed:
            self._store()

    def _read(self) -> Entries:
        """The entries of the cache file, or none when it is absent, unreadable, torn or foreign."""
        try:
            if stat.S_ISLNK(os.lstat(self.path).st_mode):
                return {}
            held = _DECODER.decode(read_repository_file(self.root, self.path, limit=_MAX_CACHE_BYTES))
        except (OSError, msgspec.DecodeError) as exc:
            if not isinstance(exc, FileNotFoundError):
                _log.debug("svc: the plan parse cache %s is not used: %s", self.path, exc)
            return {}
        if held.format != _FORMAT or held.token != self.token:
            return {}
        return {
            "project": {e.name: e for e in held.project},
            "milestone": {e.name: e for e in held.milestones},
            "issue": {e.name: e for e in held.issues},
        }

    def _store(self) -> None:
        top = Path(os.path.realpath(self.root))
        real = Path(os.path.realpath(self.path.parent))
        if real != top and not real.is_relative_to(top):
            _log.debug("svc: the plan parse cache is not written: %s resolves outside the checkout", self.path.parent)
            return
        encoded = {kind: _encoded(self.kept[kind].values()) for kind in KINDS}
        data = _ENCODER.encode(
            _Encoded(
                format=_FORMAT,
                token=self.token,
                project=encoded["project"],
                milestones=encoded["milestone"],
                issues=encoded["issue"],
            )
        )
        try:
            ensure_local_state(self.local)
            write_atomic(self.path, data, durable=False)
        except OSError as exc:
            _log.debug("svc: the plan parse cache %s was not written: %s", self.path, exc)


def _encoded(entries: Any) -> list[msgspec.Raw]:
    """Each entry encoded on its own; one that cannot be (text that is not UTF-8, say) is left out."""
    out: list[msgspec.Raw] = []
    for entry in entries:
        try:
            out.append(msgspec.Raw(_ENCODER.encode(entry)))
        except (msgspec.EncodeError, OverflowError, TypeError, ValueError):
            continue
    return out
