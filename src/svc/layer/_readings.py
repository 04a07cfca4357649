"""What each file's reading gave in the last build of a checkout, so a build reads and parses only what changed.

A reading is keyed by (source class, kind, path, BLAKE2b-128 of the file's bytes) and, once the file has been
quiet for `RACY_NS`, by its stat numbers too (size, mtime_ns, inode, ctime_ns). A build `lstat`s every file: a
file whose numbers equal its reading's is not opened, its reading reused; any other file is read, and parsed,
validated and built into objects only when its bytes are new under the same reading token (svc's version, this
cache's format, the repository's kinds file, the manifest's sections and context documents). Readings are held
in memory per checkout and stored in `.ai/local/cache/objects.msgpack`, so a new process starts from the last
one's readings. That file is scratch (docs/objects.md "Reading cache"): written by replacing it (a torn or
foreign file is a miss, never an error), read under the reading rule, and ignored when Git tracks it; a clone
cannot ship readings of its own, as a fresh checkout's inodes and nanosecond ctimes cannot be predicted.
Writing it first writes `.ai/local/.gitignore` (when absent), as every writer under `.ai/local/` does.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Callable

import msgspec

from svc._version import __version__
from svc.layer._files import ensure_local_state, write_atomic
from svc.layer._object_model import Reading
from svc.layer._read import read_repository_file
from svc.layer._repository import Repository
from svc.layer._stamps import Stat, settled, stat_key

__all__ = ["CACHE_FILE", "Readings", "forget"]

_log = logging.getLogger("svc.layer")
#: Bumped whenever what a reading holds, or how a file is read, changes.
_FORMAT = 2
#: The cache file, relative to the layer.
CACHE_FILE = "local/cache/objects.msgpack"
#: The largest cache file read (about 20 times the 10,000-object layer's).
_MAX_CACHE_BYTES = 64 * 1024 * 1024

Key = tuple[str, str, str, bytes]
#: Where a reading comes from: source class, kind and path.
Where = tuple[str, str, str]


class _Entry(msgspec.Struct, array_like=True):
    source: str
    kind: str
    path: str
    digest: bytes
    reading: Reading
    #: The file's stat numbers when it was read, None when it was too fresh to be reused by them.
    stat: Stat | None = None


class _CacheFile(msgspec.Struct):
    format: int
    token: bytes
    entries: list[_Entry]


_DECODER = msgspec.msgpack.Decoder(_CacheFile)
_ENCODER = msgspec.msgpack.Encoder()
#: Per checkout root: the token of its last build, what each file's reading gave, and the stat numbers and digest
#: each file had when quiet.
_MEMORY: dict[str, tuple[bytes, dict[Key, Reading], dict[Where, tuple[Stat, bytes]]]] = {}
_now_ns: Callable[[], int] = time.time_ns


def forget() -> None:
    """Drop every reading held in memory (the files' cache stays)."""
    _MEMORY.clear()


class Readings:
    """The readings one build starts from and the ones it ends with.

    `previous` (and the quiet files' `stats`) come from memory when this process built the checkout under the
    same token, else from the cache file; `unchanged`, `get` and `put` record what the build kept. `close`
    keeps those in memory and, when any reading or stat changed, stores them in the cache file.
    """

    def __init__(self, repo: Repository, layer: str, token: object, *, shared: bool) -> None:
        self.root = repo.root
        self.local = repo.root / layer / "local"
        self.path = repo.root / layer / CACHE_FILE
        self.token = hashlib.blake2b(repr((__version__, _FORMAT, token)).encode(), digest_size=16).digest()
        #: Whether the cache file may be read and written (False when Git tracks it).
        self.shared = shared
        #: When the build began: a file changed after `started - RACY_NS` is not kept by its stat numbers.
        self.started = _now_ns()
        held = _MEMORY.get(str(self.root))
        self.previous: dict[Key, Reading]
        self.stats: dict[Where, tuple[Stat, bytes]]
        if held is not None and held[0] == self.token:
            self.previous, self.stats, self.stored = held[1], held[2], True
        else:
            self.previous, self.stats = self._load() if shared else ({}, {})
            self.stored = bool(self.previous)
        self.used: dict[Key, Reading] = {}
        self.used_stats: dict[Where, tuple[Stat, bytes]] = {}
        self.new = 0

    def unchanged(self, where: Where, st: os.stat_result) -> Reading | None:
        """The reading of a file whose `lstat` equals the numbers it was kept by, recorded as used; else None."""
        held = self.stats.get(where)
        if held is None or held[0] != stat_key(st):
            return None
        key = (*where, held[1])
        found = self.previous.get(key)
        if found is not None:
            self.used[key] = found
            self.used_stats[where] = held
        return found

    def get(self, key: Key, st: os.stat_result) -> Reading | None:
        """The reading of these bytes from an earlier build, recorded as used (with `st`); None when they are new."""
        found = self.previous.get(key)
        if found is not None:
            self.used[key] = found
            self._keep(key, st)
        return found

    def put(self, key: Key, reading: Reading, st: os.stat_result) -> None:
        """Record a fresh reading of bytes read from a file of stat `st`."""
        self.used[key] = reading
        self.new += 1
        self._keep(key, st)

    def _keep(self, key: Key, st: os.stat_result) -> None:
        """Keep the file's stat numbers with its digest, unless it changed within `RACY_NS` of the build."""
        where = key[:3]
        now = (stat_key(st), key[3]) if settled(st, self.started) else None
        if now is not None:
            self.used_stats[where] = now
        if now != self.stats.get(where):
            self.new += 1

    def close(self) -> None:
        """Keep the used readings in memory, and in the cache file when they differ from what it holds."""
        _MEMORY[str(self.root)] = (self.token, self.used, self.used_stats)
        if not self.shared or (self.stored and self.new == 0 and len(self.used) == len(self.previous)):
            return
        entries = [
            _Entry(s, k, p, d, r, _stat_for(self.used_stats.get((s, k, p)), d)) for (s, k, p, d), r in self.used.items()
        ]
        try:
            data = _ENCODER.encode(_CacheFile(format=_FORMAT, token=self.token, entries=entries))
            ensure_local_state(self.local)
            write_atomic(self.path, data, durable=False)
        except (OSError, msgspec.EncodeError, OverflowError, TypeError, ValueError) as exc:
            _log.debug("svc: the object reading cache %s was not written: %s", self.path, exc)

    def _load(self) -> tuple[dict[Key, Reading], dict[Where, tuple[Stat, bytes]]]:
        try:
            held = _DECODER.decode(read_repository_file(self.root, self.path, limit=_MAX_CACHE_BYTES))
        except (OSError, msgspec.DecodeError):
            return {}, {}
        if held.format != _FORMAT or held.token != self.token:
            return {}, {}
        readings = {(e.source, e.kind, e.path, e.digest): e.reading for e in held.entries}
        stats = {(e.source, e.kind, e.path): (e.stat, e.digest) for e in held.entries if e.stat is not None}
        return readings, stats


def _stat_for(held: tuple[Stat, bytes] | None, hashed: bytes) -> Stat | None:
    """The stat numbers kept for a reading of the bytes `hashed`, when its file was quiet and read as those."""
    return held[0] if held is not None and held[1] == hashed else None
