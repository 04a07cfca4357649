"""What each file's reading gave in the last build of a checkout, so a build parses only what changed.

A reading is keyed by (source class, kind, path, BLAKE2b-128 of the file's bytes): a build still reads every
file, but parses, validates and builds objects only for bytes it has not seen under the same reading token
(svc's version, this cache's format, the repository's kinds file, the manifest's sections and context
documents). Readings are held in memory per checkout and stored in `.ai/local/cache/objects.msgpack`, so a
new process starts from the last one's readings. That file is scratch (docs/objects.md "Reading cache"):
written by replacing it (a torn or foreign file is a miss, never an error), read under the reading rule, and
ignored when Git tracks it, so a clone cannot ship readings of its own. Writing it first writes
`.ai/local/.gitignore` (when absent), as every writer under `.ai/local/` does.
"""

from __future__ import annotations

import hashlib
import logging

import msgspec

from svc._version import __version__
from svc.layer._files import ensure_local_state, write_atomic
from svc.layer._object_model import Reading
from svc.layer._read import read_repository_file
from svc.layer._repository import Repository

__all__ = ["CACHE_FILE", "Readings", "digest", "forget"]

_log = logging.getLogger("svc.layer")
#: Bumped whenever what a reading holds, or how a file is read, changes.
_FORMAT = 1
#: The cache file, relative to the layer.
CACHE_FILE = "local/cache/objects.msgpack"
#: The largest cache file read (about 20 times the 10,000-object layer's).
_MAX_CACHE_BYTES = 64 * 1024 * 1024

Key = tuple[str, str, str, bytes]


class _Entry(msgspec.Struct, array_like=True):
    source: str
    kind: str
    path: str
    digest: bytes
    reading: Reading


class _CacheFile(msgspec.Struct):
    format: int
    token: bytes
    entries: list[_Entry]


_DECODER = msgspec.msgpack.Decoder(_CacheFile)
_ENCODER = msgspec.msgpack.Encoder()
#: Per checkout root: the token of its last build and what each file's reading gave.
_MEMORY: dict[str, tuple[bytes, dict[Key, Reading]]] = {}


def forget() -> None:
    """Drop every reading held in memory (the files' cache stays)."""
    _MEMORY.clear()


def digest(raw: bytes) -> bytes:
    """The 16-byte BLAKE2b digest a reading is keyed by."""
    return hashlib.blake2b(raw, digest_size=16).digest()


class Readings:
    """The readings one build starts from and the ones it ends with.

    `previous` comes from memory when this process built the checkout under the same token, else from the
    cache file; `use` records what the build kept. `close` keeps those in memory and, when any reading was
    new or dropped, stores them in the cache file.
    """

    def __init__(self, repo: Repository, layer: str, token: object, *, shared: bool) -> None:
        self.root = repo.root
        self.local = repo.root / layer / "local"
        self.path = repo.root / layer / CACHE_FILE
        self.token = hashlib.blake2b(repr((__version__, _FORMAT, token)).encode(), digest_size=16).digest()
        #: Whether the cache file may be read and written (False when Git tracks it).
        self.shared = shared
        held = _MEMORY.get(str(repo.root))
        self.previous: dict[Key, Reading]
        if held is not None and held[0] == self.token:
            self.previous, self.stored = held[1], True
        else:
            self.previous = self._load() if shared else {}
            self.stored = bool(self.previous)
        self.used: dict[Key, Reading] = {}
        self.new = 0

    def get(self, key: Key) -> Reading | None:
        """The reading of these bytes from an earlier build, recorded as used; None when they are new."""
        found = self.previous.get(key)
        if found is not None:
            self.used[key] = found
        return found

    def put(self, key: Key, reading: Reading) -> None:
        """Record a fresh reading."""
        self.used[key] = reading
        self.new += 1

    def close(self) -> None:
        """Keep the used readings in memory, and in the cache file when they differ from what it holds."""
        _MEMORY[str(self.root)] = (self.token, self.used)
        if not self.shared or (self.stored and self.new == 0 and len(self.used) == len(self.previous)):
            return
        entries = [_Entry(s, k, p, d, r) for (s, k, p, d), r in self.used.items()]
        try:
            data = _ENCODER.encode(_CacheFile(format=_FORMAT, token=self.token, entries=entries))
            ensure_local_state(self.local)
            write_atomic(self.path, data, durable=False)
        except (OSError, msgspec.EncodeError, OverflowError, TypeError, ValueError) as exc:
            _log.debug("svc: the object reading cache %s was not written: %s", self.path, exc)

    def _load(self) -> dict[Key, Reading]:
        try:
            held = _DECODER.decode(read_repository_file(self.root, self.path, limit=_MAX_CACHE_BYTES))
        except (OSError, msgspec.DecodeError):
            return {}
        if held.format != _FORMAT or held.token != self.token:
            return {}
        return {(e.source, e.kind, e.path, e.digest): e.reading for e in held.entries}
