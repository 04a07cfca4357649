"""The journal (docs/mesh.md): the ingest chain and its counts, marks and beats, storage and compaction."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from svc.mesh_udp import _canonical, _events, _journal
from svc.mesh_udp._canonical import DOMAIN_EVENT, canonical_json, sign_object
from svc.mesh_udp._events import handover_id, sign_beat, sign_event, verify_beat
from svc.mesh_udp._identity import NodeIdentity
from svc.mesh_udp._journal import IngestReport, Journal, JournalStore
from tests.mesh_udp._helpers import NOW, identity

REPO = "0" * 32
EXPIRY = 30.0
ME = identity(9)
OWN = f"{ME.node_id}-{'e' * 16}-{'9' * 16}"
A, B, C = identity(1), identity(2), identity(3)
CLOSE = {"kind": "session_closed", "session": "s1"}


def stream_of(ident: NodeIdentity, rt: str = "a" * 16, inst: str = "1" * 16) -> str:
    return f"{ident.node_id}-{rt}-{inst}"


SA, SB, SC = stream_of(A), stream_of(B), stream_of(C)


def ev(
    ident: NodeIdentity,
    seq: int,
    *,
    stream: str | None = None,
    lamport: int | None = None,
    body: dict[str, Any] | None = None,
    at: str = "2026-01-01T00:00:00Z",
) -> dict[str, Any]:
    return sign_event(
        ident.key,
        ident.public_key,
        stream=stream or stream_of(ident),
        seq=seq,
        lamport=seq if lamport is None else lamport,
        at=at,
        repo=REPO,
        body=body or CLOSE,
    )


def run(ident: NodeIdentity, count: int, *, stream: str | None = None, first: int = 1) -> list[dict[str, Any]]:
    return [ev(ident, seq, stream=stream) for seq in range(first, first + count)]


def trust_all(pk: str) -> bool:
    return True


def journal(
    *,
    trusted: Callable[[str], bool] = trust_all,
    store: JournalStore | None = None,
    ident: NodeIdentity = ME,
    stream: str = OWN,
) -> Journal:
    return Journal(
        key=ident.key,
        public_key=ident.public_key,
        stream=stream,
        repo=REPO,
        trusted=trusted,
        expiry_seconds=EXPIRY,
        store=store,
    )


def reopen(store: JournalStore, *, trusted: Callable[[str], bool] = trust_all, stream: str = OWN) -> Journal:
    return Journal.open(
        key=ME.key,
        public_key=ME.public_key,
        stream=stream,
        repo=REPO,
        trusted=trusted,
        expiry_seconds=EXPIRY,
        store=store,
    )


def report(**counts: Any) -> IngestReport:
    return IngestReport(**counts)


def beating(ident: NodeIdentity, beats: int, *, stream: str | None = None) -> Journal:
    """A journal of `ident` whose own beat is `beats`."""
    other = journal(ident=ident, stream=stream or stream_of(ident))
    for _ in range(beats):
        other.beat()
    return other


# -- ingest --------------------------------------------------------------------------------------------------


def test_events_are_applied_counted_and_answered_in_apply_order() -> None:
    j = journal()
    raws = run(A, 3)
    got, applied = j.ingest(raws, mono=0.0)
    assert got == report(accepted=3)
    assert applied == raws
    assert j.high(SA) == 3
    assert j.find(SA, 2) is not None
    assert j.find(SA, 4) is None
    assert j.streams() == sorted([OWN, SA])
    t = j.tallies()
    assert (t.streams, t.events, t.received, t.written, t.duplicates, t.rejected) == (2, 3, 3, 0, 0, 0)


def test_stateless_refusals_are_counted_by_reason() -> None:
    j = journal()
    good = ev(A, 1)
    forged = ev(A, 1) | {"sig": ev(B, 1)["sig"]}
    tampered = dict(good, body={"kind": "session_closed", "session": "s2"})
    other_repo = sign_event(A.key, A.public_key, stream=SA, seq=1, lamport=1, at="t", repo="1" * 32, body=CLOSE)
    version = sign_object(A.key, DOMAIN_EVENT, {**good, "v": 2})
    seq0 = ev(A, 0)
    oversized = sign_object(A.key, DOMAIN_EVENT, {**good, "body": {"kind": "bulk", "x": "x" * 49152}})
    bounds = sign_object(A.key, DOMAIN_EVENT, {**good, "body": {"kind": "session_closed", "session": "a b"}})
    got, applied = j.ingest(
        [forged, tampered, other_repo, version, seq0, oversized, bounds, "not an event", {"v": 1}], mono=0.0
    )
    assert applied == []
    assert got.rejected == {
        "signature": 2,
        "repository": 1,
        "version": 1,
        "identity": 1,
        "oversized": 1,
        "bounds": 1,
        "malformed": 2,
    }
    assert j.tallies().rejected == 9
    assert j.rejections() == got.rejected
    assert j.streams() == [OWN]


def test_an_untrusted_key_is_refused_after_the_stateless_checks() -> None:
    asked: list[str] = []

    def trusted(pk: str) -> bool:
        asked.append(pk)
        return pk != A.public_key

    j = journal(trusted=trusted)
    got, _ = j.ingest([*run(A, 2), ev(B, 1), ev(A, 3, stream=SA) | {"seq": 9}], mono=0.0)
    assert got == report(accepted=1, rejected={"untrusted": 2, "signature": 1})
    assert j.high(SA) == 0
    assert j.high(SB) == 1
    assert asked.count(A.public_key) == 1  # asked once per key and batch


def test_the_own_stream_is_a_duplicate_even_beyond_its_high_water() -> None:
    j = journal()
    raw = j.prepare(CLOSE, wall=NOW)
    j.commit(raw)
    ahead = sign_event(ME.key, ME.public_key, stream=OWN, seq=5, lamport=5, at="t", repo=REPO, body=CLOSE)
    got, applied = j.ingest([raw, ahead], mono=0.0)
    assert got == report(duplicate=2)
    assert applied == []
    assert j.pending_count() == 0
    assert j.tallies().duplicates == 2


def test_another_stream_of_the_own_node_is_ingested() -> None:
    j = journal()
    earlier = f"{ME.node_id}-{'e' * 16}-{'8' * 16}"
    got, _ = j.ingest(run(ME, 2, stream=earlier), mono=0.0)
    assert got == report(accepted=2)


def test_a_tombstoned_stream_is_a_duplicate_but_trust_comes_first(tmp_path: Path) -> None:
    store = JournalStore(tmp_path)
    store.save_tombstones({SA: (5, 3), SB: (1, 1)})
    j = reopen(store, trusted=lambda pk: pk != B.public_key)
    got, _ = j.ingest([ev(A, 1), ev(A, 6), ev(B, 1)], mono=0.0)
    assert got == report(duplicate=2, rejected={"untrusted": 1})
    assert j.high(SA) == 0


def test_capacity_more_than_1024_streams() -> None:
    j = journal()
    idents = [identity(n) for n in range(20, 36)]
    raws = [ev(ident, 1, stream=stream_of(ident, inst=f"{i:016x}")) for ident in idents[:15] for i in range(64)] + [
        ev(idents[15], 1, stream=stream_of(idents[15], inst=f"{i:016x}")) for i in range(63)
    ]
    got, _ = j.ingest(raws, mono=0.0)
    assert got == report(accepted=1023)
    assert len(j.streams()) == 1024
    last = ev(idents[15], 1, stream=stream_of(idents[15], inst=f"{63:016x}"))
    got, _ = j.ingest([last, ev(idents[0], 2, stream=stream_of(idents[0], inst=f"{0:016x}"))], mono=0.0)
    assert got == report(accepted=1, rejected={"capacity": 1})


def test_capacity_more_than_64_streams_of_one_node() -> None:
    j = journal()
    raws = [ev(A, 1, stream=stream_of(A, inst=f"{i:016x}")) for i in range(65)]
    got, _ = j.ingest(raws, mono=0.0)
    assert got == report(accepted=64, rejected={"capacity": 1})
    got, _ = j.ingest([ev(A, 1, stream=stream_of(A, rt="b" * 16)), ev(B, 1)], mono=0.0)
    assert got == report(accepted=1, rejected={"capacity": 1})


def test_capacity_more_than_20000_events_of_one_node(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _journal.MAX_EVENTS_PER_NODE == 20_000
    monkeypatch.setattr(_journal, "MAX_EVENTS_PER_NODE", 5)
    j = journal()
    other = stream_of(A, inst="2" * 16)
    got, _ = j.ingest([*run(A, 3), *run(A, 3, stream=other)], mono=0.0)
    assert got == report(accepted=5, rejected={"capacity": 1})
    got, _ = j.ingest([ev(A, 1), ev(A, 9), ev(B, 1)], mono=0.0)
    assert got == report(accepted=1, duplicate=1, rejected={"capacity": 1})


def test_a_gap_waits_then_every_contiguous_successor_is_applied_once() -> None:
    j = journal()
    e1, e2, e3, e4, e6 = (ev(A, n) for n in (1, 2, 3, 4, 6))
    got, applied = j.ingest([e1, e3, e4, e6, e3], mono=0.0)
    assert got == report(accepted=1, pending=3, duplicate=1)
    assert applied == [e1]
    assert (j.high(SA), j.pending_count(), j.tallies().pending) == (1, 3, 3)
    got, applied = j.ingest([e2, e2], mono=0.0)
    assert got == report(accepted=1, duplicate=1)
    assert applied == [e2, e3, e4]
    assert (j.high(SA), j.pending_count()) == (4, 1)
    assert j.tallies().received == 4


def test_a_gap_in_an_unknown_stream_waits_too() -> None:
    j = journal()
    got, _ = j.ingest([ev(A, 2)], mono=0.0)
    assert got == report(pending=1)
    assert j.high(SA) == 0
    got, applied = j.ingest([ev(A, 1)], mono=0.0)
    assert got == report(accepted=1)
    assert [raw["seq"] for raw in applied] == [1, 2]


def test_at_most_256_pending_per_stream() -> None:
    assert _journal.MAX_PENDING_PER_STREAM == 256
    j = journal()
    got, _ = j.ingest(run(A, 257, first=2), mono=0.0)
    assert got == report(pending=256, rejected={"capacity": 1})
    got, applied = j.ingest([ev(A, 1)], mono=0.0)
    assert len(applied) == 257
    assert j.pending_count() == 0


def test_at_most_4096_pending_in_all(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _journal.MAX_PENDING == 4096
    monkeypatch.setattr(_journal, "MAX_PENDING", 3)
    j = journal()
    got, _ = j.ingest([ev(A, 3), ev(A, 4), ev(B, 5), ev(B, 6), ev(C, 1)], mono=0.0)
    assert got == report(accepted=1, pending=3, rejected={"capacity": 1})


def test_a_new_own_event_takes_the_highest_stamp_seen_plus_one() -> None:
    j = journal()
    j.ingest([ev(A, 1, lamport=50)], mono=0.0)
    assert j.lamport == 50
    raw = j.prepare(CLOSE, wall=NOW)
    assert (raw["seq"], raw["lamport"], raw["at"]) == (1, 51, "2026-01-01T00:00:00Z")
    event = j.commit(raw)
    assert (event.seq, event.lamport, j.lamport) == (1, 51, 51)
    j.ingest([ev(A, 2, lamport=10)], mono=0.0)
    assert j.lamport == 51
    assert j.prepare(CLOSE, wall=NOW)["lamport"] == 52
    assert j.tallies().written == 1
    assert j.tallies().lamport == 51


def test_commit_takes_only_the_next_own_event() -> None:
    j = journal()
    raw = j.prepare(CLOSE, wall=NOW)
    j.commit(raw)
    with pytest.raises(ValueError, match="not the next event"):
        j.commit(raw)
    with pytest.raises(ValueError, match="not the next event"):
        j.commit(ev(A, 1))
    with pytest.raises(ValueError, match="out of bounds"):
        j.prepare({"kind": "session_closed", "session": "a b"}, wall=NOW)


def test_ordered_is_by_lamport_stream_seq_and_kept_not_sorted_again() -> None:
    j = journal()
    j.ingest([ev(A, 1, lamport=5), ev(B, 1, lamport=2), ev(B, 2, lamport=5), ev(C, 1, lamport=1)], mono=0.0)
    order = j.ordered()
    assert [(e.lamport, e.stream, e.seq) for e in order] == sorted((e.lamport, e.stream, e.seq) for e in order)
    assert [e.lamport for e in order] == [1, 2, 5, 5]
    assert j.ordered() is order
    revision = j.revision
    j.ingest([ev(A, 2, lamport=3)], mono=0.0)
    assert j.revision > revision
    assert [e.lamport for e in j.ordered()] == [1, 2, 3, 5, 5]
    assert [e.lamport for e in j.events_after(2, 2, newest=False)] == [3, 5]
    assert [e.lamport for e in j.events_after(0, 2, newest=True)] == [5, 5]
    assert [e.lamport for e in j.events_after(4, 10, newest=True)] == [5, 5]
    assert j.events_after(5, 10, newest=False) == []
    assert j.raw_lines()[0] == ev(C, 1, lamport=1)


def test_ordered_merges_many_events_that_arrived_out_of_order() -> None:
    j = journal()
    streams = [(A, SA, 0), (B, SB, 1), (C, SC, 2)]
    j.ingest([ev(i, n, stream=s, lamport=3 * n + k) for i, s, k in streams for n in range(1, 41)], mono=0.0)
    assert [e.lamport for e in j.ordered()] == list(range(3, 123))
    j.ingest([ev(A, 41, lamport=1), ev(B, 41, lamport=200)], mono=0.0)
    assert [e.lamport for e in j.ordered()] == [1, *range(3, 123), 200]
    assert [e.lamport for e in j.events_after(120, 5, newest=False)] == [121, 122, 200]
    assert len(j.raw_lines()) == 122


def test_ingest_encodes_and_verifies_each_event_once(monkeypatch: pytest.MonkeyPatch) -> None:
    encoded: list[int] = []
    verified: list[int] = []
    signed_bytes, verify_signed = _canonical.signed_bytes, _canonical.verify_signed

    def counting_bytes(domain: str, obj: dict[str, Any], *, checked: bool = False) -> bytes:
        assert checked
        encoded.append(1)
        return signed_bytes(domain, obj, checked=checked)

    def counting_verify(pk: str, sig: str, data: bytes) -> bool:
        verified.append(1)
        return verify_signed(pk, sig, data)

    raws = run(A, 20)
    monkeypatch.setattr(_events, "signed_bytes", counting_bytes)
    monkeypatch.setattr(_events, "verify_signed", counting_verify)
    got, _ = journal().ingest(raws, mono=0.0)
    assert got.accepted == 20
    assert (len(encoded), len(verified)) == (20, 20)


# -- beats and marks -----------------------------------------------------------------------------------------


def test_the_own_beat_is_signed_in_the_own_mark() -> None:
    j = journal()
    assert j.marks("", "") == {OWN: {"seq": 0, "beat": 0}}
    j.beat()
    j.commit(j.prepare(CLOSE, wall=NOW))
    mark = j.marks("", "")[OWN]
    assert mark == {"seq": 1, "beat": 1, "age_ms": 0, "pk": ME.public_key, "sig": mark["sig"]}
    assert verify_beat(ME.public_key, OWN, 1, mark["sig"])
    assert "pk" not in j.marks("", "", held={OWN})[OWN]
    j.beat()
    mark = j.marks("", "")[OWN]
    assert mark["beat"] == 2
    assert verify_beat(ME.public_key, OWN, 2, mark["sig"])
    assert j.liveness(OWN, mono=1e9) == "own"
    assert j.last_beat_ms(OWN, mono=1e9) == 0


def test_a_fresh_trusted_beat_creates_the_stream_and_keeps_it_live_within_the_expiry() -> None:
    j = journal()
    j.merge_marks(beating(A, 3).marks("", ""), mono=100.0)
    assert j.streams() == sorted([OWN, SA])
    assert j.high(SA) == 0
    assert j.liveness(SA, mono=100.0 + EXPIRY) == "live"
    assert j.liveness(SA, mono=100.0 + EXPIRY + 0.001) == "expired"
    assert j.last_beat_ms(SA, mono=110.0) == 10_000
    mark = j.marks("", "", mono=105.0)[SA]
    assert mark == {"seq": 0, "beat": 3, "age_ms": 5000, "pk": A.public_key, "sig": sign_beat(A.key, SA, 3)}


def test_only_a_higher_beat_counts() -> None:
    j = journal()
    j.merge_marks(beating(A, 3).marks("", ""), mono=100.0)
    j.merge_marks(beating(A, 3).marks("", ""), mono=120.0)
    j.merge_marks(beating(A, 2).marks("", ""), mono=120.0)
    assert j.last_beat_ms(SA, mono=120.0) == 20_000
    j.merge_marks(beating(A, 4).marks("", ""), mono=120.0)
    assert j.last_beat_ms(SA, mono=120.0) == 0


def _mark(ident: NodeIdentity, stream: str, beat: int, **fields: Any) -> dict[str, Any]:
    return {"seq": 0, "beat": beat, "age_ms": 0, "pk": ident.public_key, "sig": sign_beat(ident.key, stream, beat)} | (
        fields
    )


@pytest.mark.parametrize(
    ("why", "mark"),
    [
        ("signed by another key", _mark(A, SA, 2) | {"sig": sign_beat(B.key, SA, 2)}),
        ("signature of another beat", _mark(A, SA, 2) | {"sig": sign_beat(A.key, SA, 1)}),
        ("key of another node", _mark(B, SA, 2)),
        ("no key for an unknown stream", {k: v for k, v in _mark(A, SA, 2).items() if k != "pk"}),
        ("key not hex", _mark(A, SA, 2) | {"pk": "z" * 64}),
        ("beat 0", _mark(A, SA, 0)),
        ("beat not an integer", _mark(A, SA, 2) | {"beat": "2"}),
        ("no signature", {k: v for k, v in _mark(A, SA, 2).items() if k != "sig"}),
        ("stale: older than the expiry", _mark(A, SA, 2, age_ms=30_001)),
        ("stale: no age", {k: v for k, v in _mark(A, SA, 2).items() if k != "age_ms"}),
        ("not an object", "x"),
    ],
)
def test_a_beat_that_does_not_count_creates_nothing(why: str, mark: Any) -> None:
    j = journal()
    j.merge_marks({SA: mark, "not a stream": _mark(A, SA, 2)}, mono=0.0)
    assert j.streams() == [OWN], why


def test_a_beat_of_an_untrusted_key_is_ignored() -> None:
    j = journal(trusted=lambda pk: pk != A.public_key)
    j.merge_marks({SA: _mark(A, SA, 2), SB: _mark(B, SB, 2)}, mono=0.0)
    assert j.streams() == sorted([OWN, SB])


def test_a_mark_without_key_uses_the_held_streams_key() -> None:
    j = journal()
    j.ingest([ev(A, 1)], mono=0.0)
    assert j.liveness(SA, mono=0.0) == "expired"
    j.merge_marks({SA: {k: v for k, v in _mark(A, SA, 2).items() if k != "pk"}}, mono=0.0)
    assert j.liveness(SA, mono=0.0) == "live"
    j.merge_marks({SA: _mark(B, SA, 3) | {"sig": sign_beat(B.key, SA, 3)}}, mono=0.0)
    assert j.marks("", "")[SA]["beat"] == 2


def test_the_age_is_clamped_to_the_expiry_plus_one_second() -> None:
    j = journal()
    j.ingest([ev(A, 1)], mono=0.0)
    j.merge_marks({SA: _mark(A, SA, 2, age_ms=10**12)}, mono=500.0)
    assert j.last_beat_ms(SA, mono=500.0) == 31_000
    assert j.liveness(SA, mono=500.0) == "expired"
    assert j.marks("", "", mono=10**6)[SA]["age_ms"] == 31_000
    j.merge_marks({SB: _mark(B, SB, 2, age_ms=29_000)}, mono=500.0)
    assert j.liveness(SB, mono=501.0) == "live"
    assert j.liveness(SB, mono=501.001) == "expired"


def test_marks_age_at_the_latest_clock_given_without_one() -> None:
    j = journal()
    j.merge_marks({SA: _mark(A, SA, 2, age_ms=1000)}, mono=10.0)
    j.ingest([], mono=15.0)
    assert j.marks("", "")[SA]["age_ms"] == 6000


def test_marks_cover_a_range_in_byte_order_without_keys_the_receiver_holds() -> None:
    j = journal()
    j.ingest([ev(A, 1), ev(B, 1), ev(C, 1)], mono=0.0)
    j.merge_marks({s: _mark(i, s, 1) for i, s in ((A, SA), (B, SB), (C, SC))}, mono=0.0)
    names = sorted([OWN, SA, SB, SC])
    assert list(j.marks("", "")) == names
    assert list(j.marks(names[1], "")) == names[1:]
    assert list(j.marks("", names[2])) == names[:2]
    assert list(j.marks(names[1], names[3])) == names[1:3]
    assert list(j.marks(names[3] + "0", "")) == []
    marks = j.marks("", "", held={SA})
    assert "pk" not in marks[SA]
    assert marks[SB]["pk"] == B.public_key
    assert marks[SB] == {"seq": 1, "beat": 1, "age_ms": 0, "pk": B.public_key, "sig": sign_beat(B.key, SB, 1)}


def test_owed_sends_what_the_peer_lacks_within_the_budget_from_a_rotating_start() -> None:
    j = journal()
    by_stream = {SA: run(A, 3), SB: run(B, 2)}
    j.ingest([*by_stream[SA], *by_stream[SB]], mono=0.0)
    names = sorted([OWN, SA, SB])  # the own stream holds nothing yet

    def visited(start: int) -> list[str]:
        k = start % len(names)
        return [n for n in names[k:] + names[:k] if n != OWN]

    first, second = visited(0)
    assert j.owed({SA: 1}, "", "") == [x for s in (first, second) for x in by_stream[s] if s != SA or x["seq"] > 1]
    assert j.owed({SA: 3, SB: 2}, "", "") == []
    assert j.owed({SA: 3, SB: 1}, "", "") == by_stream[SB][1:]
    assert j.owed({SA: 1}, "", "", budget=1) == [by_stream[first][1 if first == SA else 0]]
    size = len(canonical_json(by_stream[SA][0]))
    assert len(j.owed({}, "", "", budget=2 * size + 1)) == 2
    for start in range(6):
        assert j.owed({}, "", "", start=start, budget=1) == [by_stream[visited(start)[0]][0]]
    assert j.owed({}, second, "") == by_stream[second]
    assert j.owed({}, "", second) == by_stream[first]
    mine = j.prepare(CLOSE, wall=NOW)
    j.commit(mine)
    assert j.owed({}, OWN, OWN + "0") == [mine]


def test_a_reloaded_journal_starts_with_none_fresh(tmp_path: Path) -> None:
    store = JournalStore(tmp_path)
    j = journal(store=store)
    _, applied = j.ingest(run(A, 2), mono=0.0)
    store.append(applied)
    j.merge_marks({SA: _mark(A, SA, 5)}, mono=0.0)
    assert j.liveness(SA, mono=1.0) == "live"
    again = reopen(store)
    assert again.high(SA) == 2
    assert again.liveness(SA, mono=1.0) == "expired"
    assert again.last_beat_ms(SA, mono=1.0) is None
    assert again.marks("", "")[SA] == {"seq": 2, "beat": 0}


def test_a_fresh_beat_above_a_tombstone_lifts_it_and_the_stream_is_fetched_again(tmp_path: Path) -> None:
    store = JournalStore(tmp_path)
    store.save_tombstones({SA: (5, 4)})
    j = reopen(store)
    assert j.marks("", "")[SA] == {"seq": 5, "beat": 4}
    assert j.streams() == [OWN]
    j.merge_marks({SA: _mark(A, SA, 4)}, mono=0.0)
    j.merge_marks({SA: _mark(A, SA, 6, age_ms=40_000)}, mono=0.0)
    assert SA in j.tombstones()
    j.merge_marks({SA: _mark(A, SA, 5)}, mono=0.0)
    assert SA not in j.tombstones()
    assert j.high(SA) == 0
    assert j.marks("", "")[SA]["seq"] == 0
    got, _ = j.ingest(run(A, 5), mono=0.0)
    assert got == report(accepted=5)


# -- storage -------------------------------------------------------------------------------------------------


def test_append_writes_canonical_lines_with_o_append_and_fsyncs_before_returning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, Any]] = []
    real_open, real_fsync = os.open, os.fsync

    def recording_open(path: Any, flags: int, mode: int = 0o777, **kw: Any) -> int:
        calls.append(("open", (Path(path).name, flags)))
        return real_open(path, flags, mode, **kw)

    def recording_fsync(fd: int) -> None:
        calls.append(("fsync", fd))
        real_fsync(fd)

    monkeypatch.setattr(os, "open", recording_open)
    monkeypatch.setattr(os, "fsync", recording_fsync)
    store = JournalStore(tmp_path / "mesh")
    raws = [ev(A, 1), sign_object(A.key, DOMAIN_EVENT, {**ev(A, 2), "later": {"é": "ü"}})]
    store.append(raws[:1])
    assert calls[0][0] == "open"
    name, flags = calls[0][1]
    assert name == "journal.jsonl"
    assert flags & os.O_APPEND
    assert [c[0] for c in calls[1:]] == ["fsync", "open", "fsync"]  # the file, then its directory (first write)
    calls.clear()
    store.append(raws[1:])
    assert [c[0] for c in calls] == ["open", "fsync"]
    assert store.path.read_bytes() == b"".join(canonical_json(r) + b"\n" for r in raws)
    assert store.path.stat().st_mode & 0o777 == 0o600


def test_reload_skips_and_counts_torn_tampered_and_foreign_lines(tmp_path: Path) -> None:
    store = JournalStore(tmp_path)
    good = run(A, 3)
    tampered = canonical_json(ev(B, 1)).replace(b'"s1"', b'"s2"')
    other_repo = sign_event(B.key, B.public_key, stream=SB, seq=1, lamport=1, at="t", repo="1" * 32, body=CLOSE)
    lines = [
        canonical_json(good[0]),
        b"{not json",
        tampered,
        canonical_json(good[1]),
        canonical_json(other_repo),
        b"",
        canonical_json(good[2])[:-7],  # torn
    ]
    store.path.write_bytes(b"\n".join(lines))
    j = reopen(store)
    assert j.high(SA) == 2
    assert j.rejections() == {"malformed": 2, "signature": 1, "repository": 1}
    assert j.tallies().rejected == 4
    assert j.tallies().received == 0
    # an append after a torn tail starts on a line of its own
    store.append([good[2]])
    again = reopen(store)
    assert again.high(SA) == 3
    assert again.tallies().rejected == 4


def test_reload_drops_lines_of_keys_no_longer_trusted(tmp_path: Path) -> None:
    store = JournalStore(tmp_path)
    store.append([*run(A, 2), ev(B, 1)])
    j = reopen(store, trusted=lambda pk: pk != B.public_key)
    assert (j.high(SA), j.high(SB)) == (2, 0)
    assert j.rejections() == {"untrusted": 1}


def test_the_own_stream_continues_after_a_reload(tmp_path: Path) -> None:
    store = JournalStore(tmp_path)
    j = reopen(store)
    for _ in range(3):
        raw = j.prepare(CLOSE, wall=NOW)
        store.append([raw])
        j.commit(raw)
    again = reopen(store)
    assert again.high(OWN) == 3
    assert again.lamport == 3
    assert again.prepare(CLOSE, wall=NOW)["seq"] == 4


def test_a_journal_without_file_loads_empty(tmp_path: Path) -> None:
    store = JournalStore(tmp_path / "absent")
    j = reopen(store)
    assert j.streams() == [OWN]
    assert store.load() == []
    assert store.load_tombstones() == {}
    store.tombstones_path.parent.mkdir()
    store.tombstones_path.write_bytes(b"[not an object")
    assert store.load_tombstones() == {}
    store.tombstones_path.write_bytes(b'{"x":{"seq":1,"beat":1},"' + SA.encode() + b'":{"seq":-1,"beat":1}}')
    assert store.load_tombstones() == {}


# -- compaction ----------------------------------------------------------------------------------------------

SILENT = EXPIRY + 15 * 60


def _node_streams(ident: NodeIdentity, count: int, *, first: int = 0) -> list[str]:
    return [stream_of(ident, inst=f"{i:016x}") for i in range(first, first + count)]


def test_compaction_is_due_on_events_streams_or_streams_of_one_node(monkeypatch: pytest.MonkeyPatch) -> None:
    assert (_journal.COMPACT_EVENTS, _journal.COMPACT_STREAMS, _journal.COMPACT_NODE_STREAMS) == (20_000, 768, 48)
    j = journal()
    j.ingest([ev(A, 1, stream=s) for s in _node_streams(A, 46)], mono=0.0)
    assert not j.compaction_due()  # 46 of A and the own stream
    j.ingest([ev(A, 1, stream=_node_streams(A, 1, first=46)[0])], mono=0.0)
    assert not j.compaction_due()
    j.ingest([ev(A, 1, stream=_node_streams(A, 1, first=47)[0])], mono=0.0)
    assert j.compaction_due()
    k = journal()
    k.ingest([*run(B, 3), ev(C, 1)], mono=0.0)
    monkeypatch.setattr(_journal, "COMPACT_EVENTS", 4)
    assert not k.compaction_due()
    monkeypatch.setattr(_journal, "COMPACT_EVENTS", 3)
    assert k.compaction_due()
    monkeypatch.setattr(_journal, "COMPACT_EVENTS", 20_000)
    monkeypatch.setattr(_journal, "COMPACT_STREAMS", 2)
    assert k.compaction_due()


def _due_journal(*, store: JournalStore | None = None) -> tuple[Journal, list[str]]:
    """A journal holding 48 streams of A (one event each, first held at mono 0): compaction is due."""
    j = journal(store=store)
    silent = _node_streams(A, 48)
    _, applied = j.ingest([ev(A, 1, stream=s) for s in silent], mono=0.0)
    if store is not None:
        store.append(applied)
    assert j.compaction_due()
    return j, silent


def test_compaction_drops_streams_silent_beyond_the_expiry_plus_15_minutes() -> None:
    j, silent = _due_journal()
    j.merge_marks({silent[0]: _mark(A, silent[0], 1)}, mono=SILENT)  # beating: kept
    assert j.compact(mono=SILENT) == []
    j.commit(j.prepare(CLOSE, wall=NOW))
    dropped = j.compact(mono=SILENT + 1)
    assert dropped == sorted(silent[1:])
    assert j.streams() == sorted([OWN, silent[0]])
    assert j.tombstones() == dict.fromkeys(silent[1:], (1, 0))
    t = j.tallies()
    assert (t.streams, t.events, t.compacted) == (2, 2, 47)
    assert len(j.ordered()) == 2
    assert not j.compaction_due()
    assert j.compact(mono=10**6) == []  # not due any more
    got, _ = j.ingest([ev(A, 1, stream=silent[1])], mono=SILENT + 2)
    assert got == report(duplicate=1)
    j.ingest([ev(A, 2, stream=silent[0], lamport=1), ev(A, 3, stream=silent[0], lamport=7)], mono=SILENT + 2)
    keys = [(e.lamport, e.stream, e.seq) for e in j.ordered()]
    assert keys == sorted(keys)
    assert len(keys) == 4
    assert j.marks(silent[1], silent[1] + "0")[silent[1]] == {"seq": 1, "beat": 0}


def test_compaction_silence_counts_from_the_last_beat() -> None:
    j, silent = _due_journal()
    j.merge_marks({s: _mark(A, s, 1) for s in silent}, mono=100.0)
    assert j.compact(mono=SILENT + 1) == []
    assert len(j.compact(mono=SILENT + 101)) == 48
    assert j.tombstones()[silent[0]] == (1, 1)


def test_compaction_keeps_a_stream_with_an_untaken_handover_of_at_most_24_hours() -> None:
    body = "notes"
    hid = handover_id(body)
    published = {"kind": "handover_published", "handover": {"id": hid, "body": body}}
    wall = 1_767_225_600.0  # 2026-01-01T00:00:00Z
    for later, taken, kept in ((24 * 3600, False, True), (24 * 3600 + 1, False, False), (60, True, False)):
        j, silent = _due_journal()
        j.ingest([ev(A, 2, stream=silent[0], body=published)], mono=0.0)
        if taken:
            j.ingest([ev(B, 1, body={"kind": "handover_consumed", "handover": hid, "session": "s1"})], mono=0.0)
            j.merge_marks({SB: _mark(B, SB, 1)}, mono=SILENT + 1)
        dropped = j.compact(mono=SILENT + 1, wall=wall + later)
        assert (silent[0] not in dropped) == kept, (later, taken)


def test_compaction_keeps_takings_and_answers_that_refer_to_kept_streams_until_stable() -> None:
    j, silent = _due_journal()
    body = "notes"
    hid = handover_id(body)
    # B publishes (and keeps beating); silent[0] takes it; silent[1] answers silent[0]'s review request;
    # silent[2] answers a request of a dropped stream.
    request = f"{silent[0]}/r-0123456789ab"
    j.ingest(
        [
            ev(B, 1, body={"kind": "handover_published", "handover": {"id": hid, "body": body}}),
            ev(A, 2, stream=silent[0], body={"kind": "handover_consumed", "handover": hid, "session": "s1"}),
            ev(
                A,
                3,
                stream=silent[0],
                body={
                    "kind": "review_requested",
                    "review": "r-0123456789ab",
                    "session": "s1",
                    "subject": "x",
                    "scope": ["a"],
                },
            ),
            ev(
                A,
                2,
                stream=silent[1],
                body={"kind": "review_answered", "request": request, "session": "s2", "verdict": "approved"},
            ),
            ev(
                A,
                2,
                stream=silent[2],
                body={
                    "kind": "review_answered",
                    "request": f"{silent[3]}/r-0123456789ab",
                    "session": "s3",
                    "verdict": "approved",
                },
            ),
        ],
        mono=0.0,
    )
    j.merge_marks({SB: _mark(B, SB, 1)}, mono=SILENT + 1)
    dropped = j.compact(mono=SILENT + 1)
    assert silent[0] not in dropped
    assert silent[1] not in dropped
    assert silent[2] in dropped
    assert silent[3] in dropped
    assert len(dropped) == 46


def test_compaction_keeps_the_newest_4096_tombstones(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _journal.MAX_TOMBSTONES == 4096
    monkeypatch.setattr(_journal, "MAX_TOMBSTONES", 5)
    j, _ = _due_journal()
    assert len(j.compact(mono=SILENT + 1)) == 48
    assert len(j.tombstones()) == 5


def test_compaction_is_persisted_by_a_rewrite_and_atomic_tombstones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = JournalStore(tmp_path)
    j, silent = _due_journal(store=store)
    j.merge_marks({silent[0]: _mark(A, silent[0], 1)}, mono=SILENT + 1)
    dropped = j.compact(mono=SILENT + 1)
    assert len(dropped) == 47
    renames: list[tuple[str, str]] = []
    fsyncs: list[int] = []
    real_replace, real_fsync = os.replace, os.fsync

    def recording_replace(src: Any, dst: Any) -> None:
        renames.append((Path(src).name, Path(dst).name))
        real_replace(src, dst)

    def recording_fsync(fd: int) -> None:
        fsyncs.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "replace", recording_replace)
    monkeypatch.setattr(os, "fsync", recording_fsync)
    store.rewrite(j.raw_lines())
    store.save_tombstones(j.tombstones())
    assert renames == [("journal.jsonl.tmp", "journal.jsonl"), ("tombstones.json.tmp", "tombstones.json")]
    assert len(fsyncs) == 4  # each file before its rename, the directory after
    assert sorted(p.name for p in tmp_path.iterdir()) == ["journal.jsonl", "tombstones.json"]
    assert msgspec.json.decode(store.tombstones_path.read_bytes()) == {s: {"seq": 1, "beat": 0} for s in silent[1:]}
    again = reopen(store)
    assert again.streams() == sorted([OWN, silent[0]])
    assert again.tombstones() == j.tombstones()
    assert again.tallies().rejected == 0
    # appending after a rewrite continues the new file
    raw = again.prepare(CLOSE, wall=NOW)
    store.append([raw])
    assert reopen(store).high(OWN) == 1
