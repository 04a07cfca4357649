"""The link protocol, sans-I/O: hello / welcome admission, sync rounds and refusals, each counted by code."""

from __future__ import annotations

import time
from typing import Any

import msgspec
import pytest

from svc.mesh_udp._canonical import canonical_json
from svc.mesh_udp._core import Beacon, MeshCore
from svc.mesh_udp._identity import NodeIdentity
from svc.mesh_udp._journal import Journal
from svc.mesh_udp._links import MAX_REFUSAL_BYTES, Links, Outbound, Received
from svc.mesh_udp._nodes import NodeRegistry
from svc.mesh_udp._trust import TrustStore
from svc.mesh_udp._wire import check_link, decode_object, encode_link
from tests.mesh_udp._helpers import identity

REPO = "0123456789abcdef0123456789abcdef"
A_ADDR = ("10.0.0.1", 7742)
B_ADDR = ("10.0.0.2", 7742)


class Side:
    """One runtime's links and journal, with an allowlist of the keys given."""

    def __init__(self, ident: NodeIdentity, runtime: str, allow: list[str], *, repo: str = REPO) -> None:
        self.identity = ident
        self.trust = TrustStore("allowlist", allow, own_key=ident.public_key)
        instance = runtime[::-1]
        stream = f"{ident.node_id}-{runtime}-{instance}"
        self.journal = Journal(
            key=ident.key,
            public_key=ident.public_key,
            stream=stream,
            repo=repo,
            trusted=lambda pk: pk in allow or pk == ident.public_key,
            expiry_seconds=30,
        )
        self.links = Links(
            ident,
            instance=instance,
            runtime=runtime,
            repository=repo,
            version="0.1.0",
            trust=self.trust,
            journal=self.journal,
            heartbeat=5,
            expiry=30,
            endpoints=lambda: ["10.0.0.9:7742"],
        )

    def hear(self, data: bytes, origin: tuple[str, int], *, mono: float = 100.0, wall: float | None = None) -> Received:
        obj = decode_object(data)
        assert obj is not None
        message = check_link(obj)
        assert not isinstance(message, str), message
        return self.links.receive(message, origin, wall=time.time() if wall is None else wall, mono=mono)

    def target(self, other: Side, address: tuple[str, int]) -> Outbound:
        key = other.links.key
        self.links.reconcile([(key, key, other.identity.public_key, address, False)], 0.0)
        return self.links.outbound[key]


@pytest.fixture
def pair() -> tuple[Side, Side]:
    a, b = identity(1, "alpha"), identity(2, "beta")
    allow = [a.public_key, b.public_key]
    return Side(a, "a" * 16, allow), Side(b, "b" * 16, allow)


def tamper(data: bytes, change: Any) -> bytes:
    """The datagram with its object changed after signing (the signature kept)."""
    obj = msgspec.json.decode(data)
    change(obj)
    return canonical_json(obj)


def link(a: Side, b: Side) -> Outbound:
    """A's outbound link to B, through a real hello and welcome."""
    out = a.target(b, B_ADDR)
    hello = a.links.hello(out, wall=time.time(), mono=1.0)
    welcome = b.hear(hello.data, A_ADDR, mono=1.0)
    assert len(welcome.replies) == 1
    answered = a.hear(welcome.replies[0][0], B_ADDR, mono=1.1)
    assert answered.answered == hello.waiting
    assert out.link is not None
    return out


def test_hello_and_welcome_link_two_runtimes(pair: tuple[Side, Side]) -> None:
    a, b = pair
    out = link(a, b)
    assert a.links.counters["handshakes_out"] == 1
    assert b.links.counters["handshakes_in"] == 1
    assert b.links.peers[a.links.key].inbound == out.link
    assert a.links.peers[b.links.key].rtt_ms == 100
    assert a.links.linked(b.links.key, 2.0)
    assert b.links.linked(a.links.key, 2.0)


def test_a_sync_round_carries_events_both_ways(pair: tuple[Side, Side]) -> None:
    a, b = pair
    out = link(a, b)
    for side, path in ((a, "x"), (b, "y")):
        raw = side.journal.prepare(
            {"kind": "claim_acquired", "claim": "c-000000000001", "session": "s", "scope": [path], "mode": "exclusive"},
            wall=time.time(),
        )
        side.journal.commit(raw)
        side.journal.beat()
    first = a.links.sync_request(out, mono=2.0)
    answer = b.hear(first.data, A_ADDR, mono=2.0)
    done = a.hear(answer.replies[0][0], B_ADDR, mono=2.1)
    assert done.answered == first.waiting
    assert [e["stream"] for e in done.applied] == [b.journal.stream]
    second = a.links.sync_request(out, mono=7.0)
    answer = b.hear(second.data, A_ADDR, mono=7.0)
    assert [e["stream"] for e in answer.applied] == [a.journal.stream]
    a.hear(answer.replies[0][0], B_ADDR, mono=7.1)
    assert a.journal.high(b.journal.stream) == 1
    assert b.journal.high(a.journal.stream) == 1
    assert b.journal.liveness(a.journal.stream, mono=7.0) == "live"
    assert a.links.counters["syncs_out"] == 2
    assert b.links.counters["syncs_in"] == 2
    assert b.links.counters["events_served"] == 1
    assert a.links.counters["events_sent"] == 1


def hello_from(a: Side, b: Side, **body: Any) -> bytes:
    """A hello from A to B with body fields replaced, correctly signed by `a` unless a test tampers."""
    out = a.target(b, B_ADDR)
    data = a.links.hello(out, wall=time.time(), mono=1.0).data
    if not body:
        return data
    obj = msgspec.json.decode(data)
    return encode_link(a.identity.key, "hello", {**obj["body"], **body})


def refused(b: Side, data: bytes, code: str, *, wall: float | None = None) -> None:
    received = b.hear(data, A_ADDR, wall=wall)
    assert b.links.refused_in == {code: 1}, b.links.refused_in
    assert b.links.peers == {}
    assert len(received.replies) == 1
    reply, where = received.replies[0]
    assert where == A_ADDR
    assert len(reply) <= MAX_REFUSAL_BYTES
    obj = msgspec.json.decode(reply)
    assert obj["type"] == "refusal"
    assert obj["body"]["code"] == code
    assert check_link(obj).verifies(b.identity.public_key)  # type: ignore[union-attr]


def test_a_stopped_runtime_refuses_not_active(pair: tuple[Side, Side]) -> None:
    a, b = pair
    b.links.active = False
    refused(b, hello_from(a, b), "not_active")


def test_a_bad_card_is_malformed(pair: tuple[Side, Side]) -> None:
    a, b = pair
    refused(b, hello_from(a, b, card={"pk": "zz"}), "malformed")


def test_a_tampered_hello_is_refused_signature(pair: tuple[Side, Side]) -> None:
    a, b = pair
    data = tamper(hello_from(a, b), lambda o: o["body"]["card"].update(name="mallory"))
    refused(b, data, "signature")


def test_a_forged_hello_is_refused_signature(pair: tuple[Side, Side]) -> None:
    a, b = pair
    forger = identity(9)
    obj = msgspec.json.decode(hello_from(a, b))
    refused(b, encode_link(forger.key, "hello", obj["body"]), "signature")


def test_a_stale_hello_is_refused(pair: tuple[Side, Side]) -> None:
    a, b = pair
    refused(b, hello_from(a, b, ts=int(time.time()) - 301), "stale")


def test_a_bad_nonce_is_malformed(pair: tuple[Side, Side]) -> None:
    a, b = pair
    refused(b, hello_from(a, b, nonce="short"), "malformed")


def test_no_common_protocol_is_refused(pair: tuple[Side, Side]) -> None:
    a, b = pair
    refused(b, hello_from(a, b, proto_min=2, proto_max=3), "protocol_unsupported")


def test_a_hello_from_this_runtime_is_self_link(pair: tuple[Side, Side]) -> None:
    a, b = pair
    twin = Side(b.identity, "b" * 16, [a.identity.public_key, b.identity.public_key])
    refused(b, hello_from(twin, a), "self_link")


def test_another_repository_is_refused(pair: tuple[Side, Side]) -> None:
    a, b = pair
    other = Side(a.identity, "a" * 16, [b.identity.public_key], repo="f" * 32)
    refused(b, hello_from(other, b), "repository_mismatch")


def test_an_untrusted_key_is_refused(pair: tuple[Side, Side]) -> None:
    _a, b = pair
    stranger = Side(identity(3), "c" * 16, [b.identity.public_key])
    refused(b, hello_from(stranger, b), "untrusted")


def test_a_replayed_hello_is_refused(pair: tuple[Side, Side]) -> None:
    a, b = pair
    data = hello_from(a, b)
    assert b.hear(data, A_ADDR).replies
    assert b.hear(data, A_ADDR, mono=102.0).replies
    assert b.links.refused_in == {"replay": 1}


def test_capacity_refuses_a_new_peer(pair: tuple[Side, Side], monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = pair
    monkeypatch.setattr("svc.mesh_udp._links.MAX_PEERS", 0)
    refused(b, hello_from(a, b), "capacity")


def test_refusals_are_answered_at_most_once_a_second_per_source(pair: tuple[Side, Side]) -> None:
    a, b = pair
    b.links.active = False
    assert b.hear(hello_from(a, b), A_ADDR, mono=10.0).replies
    assert not b.hear(hello_from(a, b), A_ADDR, mono=10.5).replies
    assert b.hear(hello_from(a, b), A_ADDR, mono=11.1).replies
    assert b.links.refused_in == {"not_active": 3}


def test_an_applied_refusal_counts_out_and_backs_off(pair: tuple[Side, Side]) -> None:
    a, b = pair
    b.links.active = False
    out = a.target(b, B_ADDR)
    hello = a.links.hello(out, wall=time.time(), mono=1.0)
    reply = b.hear(hello.data, A_ADDR).replies[0][0]
    assert a.hear(reply, B_ADDR, mono=1.2).answered == hello.waiting
    assert a.links.refused_out == {"not_active": 1}
    assert out.failures == 3
    assert out.next_attempt == pytest.approx(1.2 + 30)
    assert a.links.counters["dial_failures"] == 1


def test_a_refusal_for_no_outstanding_request_is_ignored(pair: tuple[Side, Side]) -> None:
    a, b = pair
    b.links.active = False
    out = a.target(b, B_ADDR)
    a.links.hello(out, wall=time.time(), mono=1.0)
    stray = hello_from(Side(a.identity, "a" * 16, [b.identity.public_key]), b)
    reply = b.hear(stray, A_ADDR).replies[0][0]
    a.hear(reply, B_ADDR)
    assert a.links.refused_out == {}


def test_a_forged_welcome_is_refused_out(pair: tuple[Side, Side]) -> None:
    a, b = pair
    out = a.target(b, B_ADDR)
    hello = a.links.hello(out, wall=time.time(), mono=1.0)
    welcome = b.hear(hello.data, A_ADDR).replies[0][0]
    obj = msgspec.json.decode(welcome)
    forged = encode_link(identity(9).key, "welcome", obj["body"])
    a.hear(forged, B_ADDR)
    assert a.links.refused_out == {"signature": 1}
    assert out.link is None


def sync_setup(pair: tuple[Side, Side]) -> tuple[Side, Side, Outbound]:
    a, b = pair
    return a, b, link(a, b)


def test_a_sync_on_an_unknown_link_is_refused_and_says_hello_again(pair: tuple[Side, Side]) -> None:
    a, b, out = sync_setup(pair)
    out.link = "f" * 32
    request = a.links.sync_request(out, mono=2.0)
    reply = b.hear(request.data, A_ADDR, mono=2.0).replies[0][0]
    a.hear(reply, B_ADDR, mono=2.1)
    assert b.links.refused_in == {"unknown_link": 1}
    assert a.links.refused_out == {"unknown_link": 1}
    assert out.link is None
    assert out.next_attempt == 2.1


def test_a_tampered_sync_is_refused_signature(pair: tuple[Side, Side]) -> None:
    a, b, out = sync_setup(pair)
    request = a.links.sync_request(out, mono=2.0)
    data = tamper(request.data, lambda o: o["body"].update(events=[{"v": 1}]))
    b.hear(data, A_ADDR, mono=2.0)
    assert b.links.refused_in == {"signature": 1}


def test_a_replayed_sync_is_refused(pair: tuple[Side, Side]) -> None:
    a, b, out = sync_setup(pair)
    request = a.links.sync_request(out, mono=2.0)
    assert b.hear(request.data, A_ADDR, mono=2.0).replies
    b.hear(request.data, A_ADDR, mono=3.5)
    assert b.links.refused_in == {"replay": 1}


def test_a_sync_answer_for_another_counter_is_not_applied(pair: tuple[Side, Side]) -> None:
    a, b, out = sync_setup(pair)
    first = a.links.sync_request(out, mono=2.0)
    answer = b.hear(first.data, A_ADDR, mono=2.0).replies[0][0]
    a.links.timed_out(out, first.waiting, 4.0)
    assert a.hear(answer, B_ADDR, mono=4.1).answered is None
    assert a.links.refused_out == {"unknown_link": 1}
    assert a.links.counters["syncs_failed"] == 1


def test_wrong_version_and_oversized_link_datagrams_are_counted() -> None:
    ident = identity(4)
    beacon = Beacon(ident, instance="9" * 16, runtime="d" * 16, repositories=[REPO], version="0", capabilities=[])
    core = MeshCore(beacon, TrustStore("deny_unknown", [], own_key=ident.public_key), NodeRegistry())
    seen: list[tuple[str, int]] = []
    core.link_oversized = lambda origin, mono: seen.append(origin)
    core.link_handler = lambda message, origin, wall, mono: []
    wrong = canonical_json({"v": 2, "type": "hello", "body": {}, "sig": "0" * 128})
    core.receive(wrong, source="direct", origin=A_ADDR, wall=time.time(), mono=1.0)
    core.receive(b"{" + b" " * 61440 + b"}", source="direct", origin=A_ADDR, wall=time.time(), mono=1.0)
    assert core.refusals["version"] == 1
    assert core.refusals["oversized"] == 1
    assert seen == [A_ADDR]


def test_the_lower_runtime_dials_and_the_higher_waits_three_heartbeats(pair: tuple[Side, Side]) -> None:
    a, b = pair
    low = a.target(b, B_ADDR)
    high = b.target(a, A_ADDR)
    assert not low.higher
    assert high.higher
    assert a.links.due(low, 0.0) == 0.0
    assert b.links.due(high, 0.0) == 15.0


def test_two_links_from_one_runtime_both_stay_good(pair: tuple[Side, Side]) -> None:
    a, b = pair
    first = link(a, b)
    key, pk = b.links.key, b.identity.public_key
    a.links.reconcile([(key, key, pk, B_ADDR, False), ("again", key, pk, B_ADDR, False)], 1.0)
    second = a.links.outbound["again"]
    hello = a.links.hello(second, wall=time.time(), mono=1.5)
    a.hear(b.hear(hello.data, A_ADDR, mono=1.5).replies[0][0], B_ADDR, mono=1.6)
    assert first.link is not None
    assert second.link is not None
    assert second.link != first.link
    for out, mono in ((first, 2.0), (second, 2.1), (first, 7.0)):
        request = a.links.sync_request(out, mono=mono)
        reply = b.hear(request.data, A_ADDR, mono=mono).replies[0][0]
        assert a.hear(reply, B_ADDR, mono=mono + 0.05).answered == request.waiting
    assert b.links.refused_in == {}
    assert b.links.peers[a.links.key].reconnects == 1
