"""The cooperation journal (docs/mesh.md): signed events of every stream, marks and beats, and its file.

`Journal` is sans-I/O state: the events held per stream (dense from seq 1), events waiting for a gap to
fill, the beats that tell which runtimes still run, and tombstones of streams dropped by compaction. It
never touches a socket, a clock or trio: every time it needs comes in as an argument (`mono`, the local
monotonic clock; `wall`, Unix time).

`Journal.ingest` runs docs/mesh.md's chain on each event, in order: the stateless checks of
`verify_event` (`oversized`, `malformed`, `version`, `identity`, `signature`, `repository`, `bounds`),
then `untrusted`, own or tombstoned stream (duplicate), `capacity` (> 1024 streams, > 64 streams per node,
> 20,000 events per node), seq at or below the high-water (duplicate), a gap (pending: ≤ 256 per stream,
4096 in all, beyond that `capacity`), else the event is applied, followed by every pending successor that
is now contiguous. Each event is counted once, by what became of it when it arrived.

`JournalStore` is the file: `journal.jsonl` (one canonical JSON event per line, appended with `O_APPEND`
and fsynced before `append` returns) and `tombstones.json`, in one directory (normally
`.ai/local/state/mesh/`). A reload re-verifies every line through the ingest chain; a torn or tampered
line is skipped and counted, never fatal.
"""

from __future__ import annotations

import bisect
import contextlib
import datetime as dt
import logging
import operator
import os
import re
import time
from collections import Counter
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import msgspec

from svc.layer import write_all
from svc.mesh_udp._canonical import canonical_json, node_id_of
from svc.mesh_udp._coop_views import Durability, JournalTallies, Liveness
from svc.mesh_udp._events import (
    KNOWN_KINDS,
    Event,
    check_event,
    parse_stream,
    sign_beat,
    sign_event,
    utc_stamp,
    verify_beat,
)

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

__all__ = [
    "MAX_EVENTS_PER_NODE",
    "MAX_PENDING",
    "MAX_PENDING_PER_STREAM",
    "MAX_STREAMS",
    "MAX_STREAMS_PER_NODE",
    "MAX_TOMBSTONES",
    "Durability",
    "IngestReport",
    "Journal",
    "JournalStore",
    "Liveness",
]

_log = logging.getLogger("svc.mesh")


MAX_STREAMS: Final = 1024
MAX_STREAMS_PER_NODE: Final = 64
MAX_EVENTS_PER_NODE: Final = 20_000
MAX_PENDING_PER_STREAM: Final = 256
MAX_PENDING: Final = 4096
MAX_TOMBSTONES: Final = 4096
#: Compaction is due above these (docs/mesh.md).
COMPACT_EVENTS: Final = 20_000
COMPACT_STREAMS: Final = 768
COMPACT_NODE_STREAMS: Final = 48
#: A stream may be dropped once silent for longer than the expiry plus this (seconds).
SILENCE_MARGIN: Final = 15 * 60
#: A stream holding an untaken handover at most this old (seconds) is kept.
HANDOVER_KEPT: Final = 24 * 3600
OWED_BUDGET: Final = 50 * 1024

_INT_MAX: Final = 2**63 - 1
_HEX64 = re.compile(r"[0-9a-f]{64}")
_KNOWN: Final = frozenset(KNOWN_KINDS)
_JOURNAL_FILE: Final = "journal.jsonl"
_TOMBSTONES_FILE: Final = "tombstones.json"


class IngestReport(msgspec.Struct, kw_only=True):
    """What one ingest did: events applied, duplicates, events waiting for a gap, refusals by reason."""

    accepted: int = 0
    duplicate: int = 0
    pending: int = 0
    rejected: dict[str, int] = msgspec.field(default_factory=dict)


_Entry = tuple[Event, dict[str, Any], int]
_Key = tuple[int, str, int]
#: Up to this many events that arrived out of order are inserted one by one; more are merged in one pass.
_INSERT_MAX: Final = 32
_first = operator.itemgetter(0)


class _Stream:
    """One stream as held.

    Its events (index = seq - 1) with their raw objects and encoded sizes, events waiting for a gap, its
    key, the highest beat held and its signature, and when that beat was fresh (monotonic clock).
    """

    __slots__ = (
        "beat",
        "beat_sig",
        "created",
        "events",
        "name",
        "node",
        "opaque",
        "pending",
        "pk",
        "raws",
        "seen",
        "sizes",
    )

    def __init__(self, name: str, pk: str, created: float | None) -> None:
        self.name = name
        self.node = name[:32]
        self.pk = pk
        self.events: list[Event] = []
        self.raws: list[dict[str, Any]] = []
        self.sizes: list[int] = []
        self.pending: dict[int, _Entry] = {}
        self.beat = 0
        self.beat_sig: str | None = None
        self.seen: float | None = None
        self.created = created
        self.opaque = 0


class Journal:
    """The replicated journal of one runtime: every stream's events, pending events, beats and tombstones.

    The runtime writes its own stream (`prepare` then `commit`, under the caller's write lock) and takes in
    the others' (`ingest`, `merge_marks`). `lamport` is the highest Lamport stamp seen; `revision` changes
    whenever the held events do.
    """

    def __init__(
        self,
        *,
        key: Ed25519PrivateKey,
        public_key: str,
        stream: str,
        repo: str,
        trusted: Callable[[str], bool],
        expiry_seconds: float,
        store: JournalStore | None = None,
    ) -> None:
        if parse_stream(stream) is None or node_id_of(public_key) != stream[:32]:
            raise ValueError("the stream must be `<node>-<runtime>-<instance>` of this key's node")
        self.key = key
        self.public_key = public_key
        self.stream = stream
        self.repo = repo
        self.store = store
        self.expiry = float(expiry_seconds)
        self.lamport = 0
        self.revision = 0
        self._trusted = trusted
        self._own = _Stream(stream, public_key, None)
        self._own_sig: tuple[int, str] | None = None
        self._streams: dict[str, _Stream] = {stream: self._own}
        self._names: list[str] | None = None
        self._node_streams: dict[str, int] = {stream[:32]: 1}
        self._node_events: dict[str, int] = {}
        self._tombstones: dict[str, tuple[int, int]] = {}
        self._order: list[Event] = []
        self._keys: list[_Key] = []
        self._tail: list[tuple[_Key, Event]] = []
        self._events = 0
        self._pending = 0
        self._opaque = 0
        self._written = 0
        self._received = 0
        self._duplicates = 0
        self._compacted = 0
        self._rejected: Counter[str] = Counter()
        self._now: float | None = None
        self._baseline: float | None = None

    @classmethod
    def open(
        cls,
        *,
        key: Ed25519PrivateKey,
        public_key: str,
        stream: str,
        repo: str,
        trusted: Callable[[str], bool],
        expiry_seconds: float,
        store: JournalStore,
    ) -> Journal:
        """A journal reloaded from `store`: tombstones first, then every line through the ingest chain.

        Bad lines (torn, tampered, of another repository, untrusted, ...) are skipped and counted in
        `tallies().rejected`; lines of this journal's own stream are taken, so its `seq` continues after
        the highest. No stream is fresh after a reload: liveness waits for new beats.

        Raises:
            OSError: the journal file exists but cannot be read.
        """
        journal = cls(
            key=key,
            public_key=public_key,
            stream=stream,
            repo=repo,
            trusted=trusted,
            expiry_seconds=expiry_seconds,
            store=store,
        )
        journal._tombstones = store.load_tombstones()
        lines = store.load()
        report = IngestReport()
        trust: dict[str, bool] = {}
        for line in lines:
            try:
                raw = msgspec.json.decode(line)
            except msgspec.DecodeError:
                journal._reject(report, "malformed")
                continue
            journal._ingest_one(raw, len(line), None, report, [], trust, loading=True)
        if report.rejected:
            reasons = ", ".join(f"{n} {reason}" for reason, n in sorted(report.rejected.items()))
            _log.warning(
                "journal %s: %d line(s) skipped on reload (%s)", store.path, sum(report.rejected.values()), reasons
            )
        return journal

    # -- own writes ---------------------------------------------------------------------------------------

    def prepare(self, body: dict[str, Any], *, wall: float) -> dict[str, Any]:
        """The next own event, signed, not applied yet (`commit` applies it).

        Its `seq` follows the own stream's high-water and its Lamport stamp the highest seen.

        Raises:
            ValueError: the body is not a known kind within its bounds.
        """
        return sign_event(
            self.key,
            self.public_key,
            stream=self.stream,
            seq=len(self._own.events) + 1,
            lamport=self.lamport + 1,
            at=utc_stamp(wall),
            repo=self.repo,
            body=body,
        )

    def commit(self, raw: dict[str, Any]) -> Event:
        """Apply an own event made by `prepare` (raises the Lamport stamp, counts it written).

        Raises:
            ValueError: not the own stream's next event, or it does not verify.
        """
        checked = check_event(raw, size=None, repo=self.repo)
        if isinstance(checked, str):
            raise ValueError(f"the event does not verify: {checked}")
        event, size = checked
        if event.stream != self.stream or event.seq != len(self._own.events) + 1:
            raise ValueError(f"{event.id} is not the next event of the own stream")
        self._apply(self._own, event, raw, size)
        self._written += 1
        return event

    # -- replication --------------------------------------------------------------------------------------

    def ingest(self, raws: list[Any], *, mono: float) -> tuple[IngestReport, list[dict[str, Any]]]:
        """Take in events from a peer, through docs/mesh.md's chain, each counted by what became of it.

        Answers the report and the raw events applied, in apply order (pending successors included), for
        the caller to persist with `store.append`.
        """
        self._clock(mono)
        report = IngestReport()
        applied: list[dict[str, Any]] = []
        trust: dict[str, bool] = {}
        for raw in raws:
            self._ingest_one(raw, None, mono, report, applied, trust, loading=False)
        return report, applied

    def _reject(self, report: IngestReport, reason: str) -> None:
        report.rejected[reason] = report.rejected.get(reason, 0) + 1
        self._rejected[reason] += 1

    def _ingest_one(
        self,
        raw: Any,
        size: int | None,
        mono: float | None,
        report: IngestReport,
        applied: list[dict[str, Any]],
        trust: dict[str, bool],
        *,
        loading: bool,
    ) -> None:
        checked = check_event(raw, size=size, repo=self.repo)
        if isinstance(checked, str):
            self._reject(report, checked)
            return
        event, size = checked
        pk = event.pk
        trusted = trust.get(pk)
        if trusted is None:
            trusted = trust[pk] = pk == self.public_key or bool(self._trusted(pk))
        if not trusted:
            self._reject(report, "untrusted")
            return
        name = event.stream
        if (name == self.stream and not loading) or name in self._tombstones:
            self._duplicate(report, loading)
            return
        stream = self._streams.get(name)
        node = name[:32]
        if stream is None and not self._room_for_stream(node):
            self._reject(report, "capacity")
            return
        high = len(stream.events) if stream is not None else 0
        seq = event.seq
        if seq <= high or (stream is not None and seq in stream.pending):
            self._duplicate(report, loading)
            return
        if self._node_events.get(node, 0) >= MAX_EVENTS_PER_NODE:
            self._reject(report, "capacity")
            return
        if seq > high + 1:
            if (stream is not None and len(stream.pending) >= MAX_PENDING_PER_STREAM) or self._pending >= MAX_PENDING:
                self._reject(report, "capacity")
                return
            if stream is None:
                stream = self._add_stream(name, pk, mono)
            stream.pending[seq] = (event, raw, size)
            self._pending += 1
            report.pending += 1
            return
        if stream is None:
            stream = self._add_stream(name, pk, mono)
        self._apply(stream, event, raw, size)
        applied.append(raw)
        report.accepted += 1
        if not loading:
            self._received += 1
        pending = stream.pending
        while pending and self._node_events.get(node, 0) < MAX_EVENTS_PER_NODE:
            entry = pending.pop(len(stream.events) + 1, None)
            if entry is None:
                break
            self._pending -= 1
            self._apply(stream, *entry)
            applied.append(entry[1])
            if not loading:
                self._received += 1

    def _duplicate(self, report: IngestReport, loading: bool) -> None:
        report.duplicate += 1
        if not loading:
            self._duplicates += 1

    def _room_for_stream(self, node: str) -> bool:
        return len(self._streams) < MAX_STREAMS and self._node_streams.get(node, 0) < MAX_STREAMS_PER_NODE

    def _add_stream(self, name: str, pk: str, mono: float | None) -> _Stream:
        stream = self._streams[name] = _Stream(name, pk, mono)
        node = name[:32]
        self._node_streams[node] = self._node_streams.get(node, 0) + 1
        self._names = None
        return stream

    def _apply(self, stream: _Stream, event: Event, raw: dict[str, Any], size: int) -> None:
        stream.events.append(event)
        stream.raws.append(raw)
        stream.sizes.append(size)
        node_events = self._node_events
        node_events[stream.node] = node_events.get(stream.node, 0) + 1
        self._events += 1
        if event.lamport > self.lamport:
            self.lamport = event.lamport
        if event.kind not in _KNOWN:
            stream.opaque += 1
            self._opaque += 1
        key = (event.lamport, event.stream, event.seq)
        keys = self._keys
        if not self._tail and (not keys or keys[-1] < key):
            keys.append(key)
            self._order.append(event)
        else:
            self._tail.append((key, event))
        self.revision += 1

    # -- beats and marks ----------------------------------------------------------------------------------

    def beat(self) -> None:
        """Advance the own beat by one (it is signed when a mark carries it)."""
        self._own.beat += 1

    def _own_beat_sig(self) -> str:
        beat = self._own.beat
        if self._own_sig is None or self._own_sig[0] != beat:
            self._own_sig = (beat, sign_beat(self.key, self.stream, beat))
        return self._own_sig[1]

    def _sorted_names(self) -> list[str]:
        if self._names is None:
            names = set(self._streams)
            names.update(self._tombstones)
            self._names = sorted(names)
        return self._names

    def marks(
        self, lo: str, hi: str, *, held: Collection[str] = (), mono: float | None = None
    ) -> dict[str, dict[str, Any]]:
        """The marks `{seq, beat, age_ms?, pk?, sig?}` of the streams in `[lo, hi)` (`""`: open end), in byte order.

        A mark carries a beat's signature, its key and its age (ms, at most the expiry + 1 s) when a beat
        is held; `pk` is left out for streams in `held` (the receiver holds them). The own stream's age is
        0. A tombstone is marked with its `{seq, beat}`, so a peer sends only what follows it. Ages are
        measured at `mono`, else at the latest clock reading the journal was given.
        """
        now = self._clock(mono) if mono is not None else self._now
        limit_ms = self._age_limit_ms()
        out: dict[str, dict[str, Any]] = {}
        for name in self._in_range(self._sorted_names(), lo, hi):
            stream = self._streams.get(name)
            if stream is None:
                seq, beat = self._tombstones[name]
                out[name] = {"seq": seq, "beat": beat}
                continue
            mark: dict[str, Any] = {"seq": len(stream.events), "beat": stream.beat}
            if stream.beat > 0:
                if stream is self._own:
                    mark["sig"] = self._own_beat_sig()
                    mark["age_ms"] = 0
                elif stream.beat_sig is not None:
                    mark["sig"] = stream.beat_sig
                    age = limit_ms
                    if stream.seen is not None and now is not None:
                        age = max(0, min(limit_ms, int((now - stream.seen) * 1000)))
                    mark["age_ms"] = age
                if "sig" in mark and name not in held:
                    mark["pk"] = stream.pk
            out[name] = mark
        return out

    def owed(
        self,
        theirs: Mapping[str, int],
        lo: str,
        hi: str,
        *,
        budget: int = OWED_BUDGET,
        start: int = 0,
        held: Collection[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Raw events a peer lacks: seq above `theirs.get(stream, 0)`, for the streams in `[lo, hi)`.

        Streams are visited in byte order from the rotating index `start`; events are taken up to `budget`
        encoded bytes, but at least one when any is owed. A stream this journal dropped holds no events
        here: its tombstone travels in marks instead, so `held` (the streams the peer holds) selects
        nothing further.
        """
        del held
        names = [n for n in self._in_range(self._sorted_names(), lo, hi) if n in self._streams]
        out: list[dict[str, Any]] = []
        if not names:
            return out
        used = 0
        count = len(names)
        first = start % count
        for step in range(count):
            stream = self._streams[names[(first + step) % count]]
            have = theirs.get(stream.name, 0)
            if type(have) is not int or have < 0:
                have = 0
            for index in range(have, len(stream.events)):
                size = stream.sizes[index]
                if out and used + size > budget:
                    return out
                out.append(stream.raws[index])
                used += size
        return out

    def merge_marks(self, marks: Any, *, mono: float) -> None:
        """Take the beats a peer's marks carry.

        A beat counts only when it is higher than the one held, the key's digest is the stream's node
        (`pk` from the mark, else the stream's own), its signature verifies, and the key is trusted. Its age
        is clamped to the expiry + 1 s. Only a fresh mark (age within the expiry) creates a stream; a fresh
        beat above a tombstone lifts it, and the stream is fetched again from seq 1. Malformed marks are
        ignored.
        """
        self._clock(mono)
        if not isinstance(marks, dict):
            return
        limit_ms = self._age_limit_ms()
        fresh_ms = self.expiry * 1000
        for name, mark in marks.items():
            if type(name) is not str or type(mark) is not dict or name == self.stream:
                continue
            beat, sig = mark.get("beat"), mark.get("sig")
            if type(beat) is not int or not 1 <= beat <= _INT_MAX or type(sig) is not str:
                continue
            stream = self._streams.get(name)
            tomb = self._tombstones.get(name)
            held_beat = stream.beat if stream is not None else tomb[1] if tomb is not None else 0
            if beat <= held_beat:
                continue
            pk = stream.pk if stream is not None else mark.get("pk")
            if type(pk) is not str or _HEX64.fullmatch(pk) is None or parse_stream(name) is None:
                continue
            if node_id_of(pk) != name[:32]:
                continue
            age_ms = mark.get("age_ms")
            if type(age_ms) is not int or age_ms < 0 or age_ms > limit_ms:
                age_ms = limit_ms
            if stream is None and (age_ms > fresh_ms or not self._room_for_stream(name[:32])):
                continue
            if not self._trusted(pk) or not verify_beat(pk, name, beat, sig):
                continue
            if stream is None:
                if tomb is not None:
                    del self._tombstones[name]
                stream = self._add_stream(name, pk, mono)
            stream.beat = beat
            stream.beat_sig = sig
            seen = mono - age_ms / 1000
            if stream.seen is None or seen > stream.seen:
                stream.seen = seen

    # -- reading --------------------------------------------------------------------------------------------

    def high(self, stream: str) -> int:
        """The stream's high-water seq (0 when unknown or dropped)."""
        held = self._streams.get(stream)
        return len(held.events) if held is not None else 0

    def streams(self) -> list[str]:
        """Every stream held (the own one included), in byte order."""
        return [n for n in self._sorted_names() if n in self._streams]

    def liveness(self, stream: str, *, mono: float) -> Liveness:
        """`own`, `live` (a beat within the expiry on the monotonic clock) or `expired`."""
        self._clock(mono)
        if stream == self.stream:
            return "own"
        held = self._streams.get(stream)
        if held is None or held.seen is None or mono - held.seen > self.expiry:
            return "expired"
        return "live"

    def last_beat_ms(self, stream: str, *, mono: float) -> int | None:
        """Milliseconds since the stream's held beat was fresh (0 for the own stream), None without one."""
        if stream == self.stream:
            return 0
        held = self._streams.get(stream)
        if held is None or held.seen is None:
            return None
        return max(0, int((mono - held.seen) * 1000))

    def ordered(self) -> list[Event]:
        """Every held event by (lamport, stream, seq).

        The list is shared (callers must not modify it) and kept until the events change (`revision` tells
        when): events arriving in order are appended to it, the others merged into it on the next read.
        """
        return self._settled()

    def _settled(self) -> list[Event]:
        """The ordered events, with the events that arrived out of order merged in."""
        tail = self._tail
        if not tail:
            return self._order
        keys, order = self._keys, self._order
        if len(tail) <= _INSERT_MAX:
            for key, event in tail:
                index = bisect.bisect_right(keys, key)
                keys.insert(index, key)
                order.insert(index, event)
        else:
            pairs = list(zip(keys, order, strict=True))
            pairs.extend(tail)
            pairs.sort(key=_first)  # two sorted runs: one merge
            self._keys = [key for key, _ in pairs]
            self._order = order = [event for _, event in pairs]
        self._tail = []
        return order

    def events_after(self, after: int, limit: int, *, newest: bool) -> list[Event]:
        """Up to `limit` events with a Lamport stamp above `after`, in Lamport order.

        The first such events, or with `newest` the newest ones.
        """
        if limit <= 0:
            return []
        order = self._settled()
        index = bisect.bisect_right(order, after, key=lambda event: event.lamport)
        if newest:
            return order[max(index, len(order) - limit) :]
        return order[index : index + limit]

    def find(self, stream: str, seq: int) -> Event | None:
        """The held event (stream, seq), or None."""
        held = self._streams.get(stream)
        if held is None or not 1 <= seq <= len(held.events):
            return None
        return held.events[seq - 1]

    def pending_count(self) -> int:
        """Events waiting for a gap to fill."""
        return self._pending

    def opaque_count(self) -> int:
        """Held events of kinds this runtime does not interpret."""
        return self._opaque

    def raw_lines(self) -> list[dict[str, Any]]:
        """Every held event as its raw object, by (lamport, stream, seq) (what a rewrite of the file holds)."""
        streams = self._streams
        return [streams[event.stream].raws[event.seq - 1] for event in self._settled()]

    def tombstones(self) -> dict[str, tuple[int, int]]:
        """Dropped streams: stream -> (seq, beat) when dropped."""
        return dict(self._tombstones)

    def rejections(self) -> dict[str, int]:
        """Events refused since start (reload included), by reason."""
        return dict(self._rejected)

    def tallies(self) -> JournalTallies:
        """The journal in numbers."""
        return JournalTallies(
            streams=len(self._streams),
            events=self._events,
            written=self._written,
            received=self._received,
            duplicates=self._duplicates,
            rejected=sum(self._rejected.values()),
            pending=self._pending,
            compacted=self._compacted,
            opaque=self._opaque,
            lamport=self.lamport,
        )

    # -- compaction ---------------------------------------------------------------------------------------

    def compaction_due(self) -> bool:
        """Whether more than 20,000 events, more than 768 streams, or 48 streams of one node are held."""
        if self._events > COMPACT_EVENTS or len(self._streams) > COMPACT_STREAMS:
            return True
        return bool(self._node_streams) and max(self._node_streams.values()) >= COMPACT_NODE_STREAMS

    def compact(self, *, mono: float, wall: float | None = None) -> list[str]:
        """Drop the streams docs/mesh.md allows, when compaction is due; answers the dropped streams.

        A stream may be dropped when it is not the own one and has been silent for longer than the expiry
        + 15 min (no beat; a stream never heard beating counts from when this journal first held it). It is
        kept while it holds an untaken handover at most 24 h old (by `wall`, default now), or a taking or an
        answer that refers to a kept stream, repeated until nothing changes. Each dropped stream leaves a
        tombstone `{seq, beat}` (the newest 4096 are kept). The caller persists the result:
        `store.rewrite(journal.raw_lines())` and `store.save_tombstones(journal.tombstones())`.
        """
        self._clock(mono)
        if not self.compaction_due():
            return []
        now_wall = time.time() if wall is None else wall
        baseline = self._baseline if self._baseline is not None else mono
        horizon = self.expiry + SILENCE_MARGIN
        candidates: set[str] = set()
        for name, stream in self._streams.items():
            if stream is self._own:
                continue
            last = (
                stream.seen if stream.seen is not None else stream.created if stream.created is not None else baseline
            )
            if mono - last > horizon:
                candidates.add(name)
        if not candidates:
            return []
        publisher: dict[str, str] = {}
        taken: set[str] = set()
        for event in self._settled():
            kind = event.kind
            if kind == "handover_published":
                publisher.setdefault(event.body["handover"]["id"], event.stream)
            elif kind == "handover_consumed":
                taken.add(event.body["handover"])
        kept = set(self._streams) - candidates
        for name in candidates:
            for event in self._streams[name].events:
                if event.kind == "handover_published":
                    hid = event.body["handover"]["id"]
                    if hid not in taken and now_wall - _wall_of(event.at) <= HANDOVER_KEPT:
                        kept.add(name)
                        break
        changed = True
        while changed:
            changed = False
            for name in candidates - kept:
                if any(_refers_to(event, publisher, kept) for event in self._streams[name].events):
                    kept.add(name)
                    changed = True
        dropped = sorted(candidates - kept)
        if dropped:
            self._drop(dropped)
        return dropped

    def _drop(self, names: list[str]) -> None:
        gone = set(names)
        for name in names:
            stream = self._streams.pop(name)
            self._node_streams[stream.node] -= 1
            if self._node_streams[stream.node] <= 0:
                del self._node_streams[stream.node]
            count = len(stream.events)
            left = self._node_events.get(stream.node, 0) - count
            if left > 0:
                self._node_events[stream.node] = left
            else:
                self._node_events.pop(stream.node, None)
            self._events -= count
            self._compacted += count
            self._opaque -= stream.opaque
            self._pending -= len(stream.pending)
            self._tombstones.pop(name, None)
            self._tombstones[name] = (count, stream.beat)
        while len(self._tombstones) > MAX_TOMBSTONES:
            del self._tombstones[next(iter(self._tombstones))]
        self._order = [event for event in self._settled() if event.stream not in gone]
        self._keys = [key for key in self._keys if key[1] not in gone]
        self._names = None
        self.revision += 1

    # -- time ---------------------------------------------------------------------------------------------

    def _clock(self, mono: float) -> float:
        if self._baseline is None:
            self._baseline = mono
        if self._now is None or mono > self._now:
            self._now = mono
        return mono

    def _age_limit_ms(self) -> int:
        return int((self.expiry + 1) * 1000)

    @staticmethod
    def _in_range(names: list[str], lo: str, hi: str) -> list[str]:
        first = bisect.bisect_left(names, lo) if lo else 0
        last = bisect.bisect_left(names, hi) if hi else len(names)
        return names[first:last]


def _refers_to(event: Event, publisher: dict[str, str], kept: set[str]) -> bool:
    """Whether `event` is a taking of a handover published in a kept stream, or an answer to its review."""
    kind = event.kind
    if kind == "handover_consumed":
        return publisher.get(event.body["handover"]) in kept
    if kind == "review_answered":
        request: str = event.body["request"]
        return request[:66] in kept
    return False


def _wall_of(stamp: str) -> float:
    """Unix time of an event's `at` (0 when it does not parse: counts as old)."""
    try:
        return dt.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC).timestamp()
    except ValueError:
        return 0.0


# -- the file ---------------------------------------------------------------------------------------------


class JournalStore:
    """The journal's files: `journal.jsonl` and `tombstones.json` in `directory`.

    The directory is normally `.ai/local/state/mesh/`, created on the first write. Blocking file I/O.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / _JOURNAL_FILE
        self.tombstones_path = directory / _TOMBSTONES_FILE
        self._tail_checked = False

    def load(self) -> list[bytes]:
        """The journal's lines (empty ones left out; a torn last line is just a bad line).

        Raises:
            OSError: the file exists but cannot be read.
        """
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        return [line for line in data.split(b"\n") if line]

    def append(self, raws: list[dict[str, Any]]) -> None:
        """Append one canonical JSON line per event (`O_APPEND`) and fsync before returning.

        The raw events are the journal's (already checked). A file whose last line was torn (a crash in the
        middle of a write) gets a line break first, so the torn line stays one bad line of its own.

        Raises:
            OSError: the write or the fsync failed.
        """
        if not raws:
            return
        data = b"".join(canonical_json(raw, checked=True) + b"\n" for raw in raws)
        first = not self._tail_checked
        if first:
            self.directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            if first:
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    data = b"\n" + data
            self._tail_checked = False
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        if first:
            _fsync_directory(self.directory)
        self._tail_checked = True

    def rewrite(self, raws: list[dict[str, Any]]) -> None:
        """Replace the journal with `raws`: write `journal.jsonl.tmp`, fsync, rename, fsync the directory.

        Raises:
            OSError: a step failed (the old file stays as it was).
        """
        data = b"".join(canonical_json(raw, checked=True) + b"\n" for raw in raws)
        _replace(self.path, data)
        self._tail_checked = True

    def load_tombstones(self) -> dict[str, tuple[int, int]]:
        """The tombstones saved: stream -> (seq, beat); a missing or malformed file holds none.

        Raises:
            OSError: the file exists but cannot be read.
        """
        try:
            data = self.tombstones_path.read_bytes()
        except FileNotFoundError:
            return {}
        try:
            value = msgspec.json.decode(data)
        except msgspec.DecodeError:
            _log.warning("journal tombstones %s do not parse; none are held", self.tombstones_path)
            return {}
        out: dict[str, tuple[int, int]] = {}
        if not isinstance(value, dict):
            return out
        for name, entry in value.items():
            if parse_stream(name) is None or not isinstance(entry, dict):
                continue
            seq, beat = entry.get("seq"), entry.get("beat")
            if type(seq) is int and type(beat) is int and seq >= 0 and beat >= 0:
                out[name] = (seq, beat)
        return out

    def save_tombstones(self, tombstones: dict[str, tuple[int, int]]) -> None:
        """Write `tombstones.json` atomically (temporary file, fsync, rename, fsync the directory).

        Raises:
            OSError: a step failed (the old file stays as it was).
        """
        value = {name: {"seq": seq, "beat": beat} for name, (seq, beat) in tombstones.items()}
        _replace(self.tombstones_path, canonical_json(value, checked=True) + b"\n")


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _replace(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_directory(path.parent)
