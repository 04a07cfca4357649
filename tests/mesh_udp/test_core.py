"""The check chain of docs/mesh.md through `MeshCore.receive`: each refusal counted under its reason."""

from __future__ import annotations

from typing import Any

import pytest

from svc.mesh_udp import _wire
from svc.mesh_udp._canonical import DOMAIN_ENVELOPE, sign_object
from svc.mesh_udp._core import Handled, MeshCore, Outcome
from svc.mesh_udp._wire import LinkMessage
from tests.mesh_udp._helpers import NOW, core, encode, envelope, identity

ORIGIN = ("192.168.1.10", 7742)


def receive(c: MeshCore, data: bytes, *, source: str = "multicast", wall: float = NOW, mono: float = 0.0) -> Any:
    return c.receive(data, source=source, origin=ORIGIN, wall=wall, mono=mono)


def outcome(handled: Handled) -> Outcome:
    assert handled.outcome is not None
    return handled.outcome


def counted(c: MeshCore) -> dict[str, int]:
    return {k: v for k, v in c.refusals.items() if v}


def test_a_valid_envelope_is_accepted_recorded_and_answered() -> None:
    me, other = identity(1), identity(2)
    c = core(me)
    handled = receive(c, encode(envelope(other)))
    assert handled.outcome.accepted
    assert handled.outcome.fresh
    entry = c.registry.get(other.node_id, "a" * 16)
    assert entry is not None
    assert entry.endpoints == ["192.168.1.10:7742"]
    assert entry.trust.state == "observed"
    assert entry.sources["multicast"].path == "192.168.1.10:7742"
    assert counted(c) == {}
    [(reply, to)] = handled.replies
    assert to == ORIGIN
    answer = _wire.decode_object(reply)
    assert answer is not None
    assert answer["pk"] == me.public_key
    assert answer["seq"] == 1
    assert c.registry.accepted == 1


def test_forged_signature_is_refused_as_signature() -> None:
    me, other, forger = identity(1), identity(2), identity(3)
    forged = sign_object(forger.key, DOMAIN_ENVELOPE, {**envelope(other), "sig": ""})
    forged["pk"] = other.public_key
    c = core(me)
    assert receive(c, encode(forged)).outcome.reason == "signature"
    assert counted(c) == {"signature": 1}
    assert len(c.registry) == 0


@pytest.mark.parametrize(
    ("field", "value"),
    [("name", "mallory"), ("seq", 99), ("ep", ["10.0.0.1:1"]), ("caps", []), ("repos", ["1" * 32]), ("rt", "c" * 16)],
)
def test_a_tampered_field_is_refused_as_signature(field: str, value: Any) -> None:
    c = core(identity(1))
    env = {**envelope(identity(2)), field: value}
    assert receive(c, encode(env)).outcome.reason == "signature"
    assert counted(c) == {"signature": 1}


def test_an_added_unknown_field_is_tampering_but_a_signed_one_is_tolerated() -> None:
    c = core(identity(1))
    other = identity(2)
    assert receive(c, encode({**envelope(other), "x": 1})).outcome.reason == "signature"
    assert receive(c, encode(envelope(other, x={"y": [1]}))).outcome.accepted


@pytest.mark.parametrize("offset", [-301, 301, -10_000])
def test_stale_and_future_timestamps_are_refused_as_stale(offset: int) -> None:
    c = core(identity(1))
    assert receive(c, encode(envelope(identity(2), ts=NOW + offset))).outcome.reason == "stale"
    assert counted(c) == {"stale": 1}


@pytest.mark.parametrize("offset", [-300, 300])
def test_timestamps_within_300_seconds_hold(offset: int) -> None:
    c = core(identity(1))
    assert receive(c, encode(envelope(identity(2), ts=NOW + offset))).outcome.accepted


def test_an_oversized_datagram_is_refused_before_parsing() -> None:
    c = core(identity(1))
    assert receive(c, b"{" + b" " * 1200 + b"}").outcome.reason == "oversized"
    big = envelope(identity(2), pad="x" * 1000)
    assert receive(c, encode(big)).outcome.reason == "oversized"
    assert counted(c) == {"oversized": 2}


@pytest.mark.parametrize(
    "data",
    [b"not json", b"[1,2]", b'"text"', b"{", b'{"v":"2"}', b"\xff\xfe", b"{}"],
)
def test_malformed_json_is_refused_as_malformed(data: bytes) -> None:
    c = core(identity(1))
    assert receive(c, data).outcome.reason == "malformed"
    assert counted(c) == {"malformed": 1}


@pytest.mark.parametrize(
    ("field", "value"),
    [("seq", "1"), ("ts", 1.5), ("ep", "127.0.0.1:1"), ("caps", [1]), ("name", None), ("v", True), ("sig", 5)],
)
def test_wrong_field_types_are_malformed(field: str, value: Any) -> None:
    c = core(identity(1))
    assert receive(c, encode({**envelope(identity(2)), field: value})).outcome.reason == "malformed"


def test_a_missing_field_or_a_float_in_an_unknown_field_is_malformed() -> None:
    c = core(identity(1))
    env = envelope(identity(2))
    del env["ver"]
    assert receive(c, encode(env)).outcome.reason == "malformed"
    assert receive(c, encode({**envelope(identity(2)), "x": 0.5})).outcome.reason == "malformed"


@pytest.mark.parametrize("v", [1, 3, 0, -2])
def test_wrong_version_is_refused_as_version(v: int) -> None:
    c = core(identity(1))
    assert receive(c, encode({**envelope(identity(2)), "v": v})).outcome.reason == "version"
    assert receive(c, encode({"v": v, "other": "shape"})).outcome.reason == "version"
    assert counted(c) == {"version": 2}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("pk", "AB" * 32),
        ("inst", "1" * 15),
        ("rt", "g" * 16),
        ("name", ""),
        ("name", "n" * 65),
        ("seq", 0),
        ("ts", -1),
        ("ep", ["1.2.3.4:1"] * 5),
        ("ep", ["1.2.3.4:0"]),
        ("ep", ["1.2.3.400:1"]),
        ("ep", ["host:7742"]),
        ("caps", ["c"] * 9),
        ("caps", ["c" * 17]),
        ("repos", ["r"] * 17),
        ("repos", ["r" * 65]),
        ("ver", "v" * 33),
        ("sig", "0" * 127),
    ],
)
def test_out_of_bounds_fields_are_refused_as_bounds(field: str, value: Any) -> None:
    c = core(identity(1))
    ident = identity(2)
    env = {**envelope(ident), field: value}
    if field != "sig":
        env = sign_object(ident.key, DOMAIN_ENVELOPE, env)
    assert receive(c, encode(env)).outcome.reason == "bounds"
    assert counted(c) == {"bounds": 1}


def test_own_runtime_is_skipped_but_another_runtime_of_the_same_node_is_not() -> None:
    me = identity(1)
    c = core(me, runtime="b" * 16)
    assert receive(c, encode(envelope(me, rt="b" * 16))).outcome.reason == "self_heard"
    assert receive(c, encode(envelope(me, rt="c" * 16))).outcome.accepted
    assert counted(c) == {"self_heard": 1}
    entry = c.registry.get(me.node_id, "c" * 16)
    assert entry is not None
    assert entry.trust.state == "trusted"
    assert entry.trust.detail == "self"


def test_a_replayed_seq_is_counted_replayed_and_ignored() -> None:
    c = core(identity(1))
    other = identity(2)
    assert receive(c, encode(envelope(other, seq=5)), mono=1.0).outcome.accepted
    again = receive(c, encode(envelope(other, seq=5)), mono=2.0)
    older = receive(c, encode(envelope(other, seq=4)), mono=3.0)
    assert (again.outcome.reason, older.outcome.reason) == ("replayed", "replayed")
    assert not again.replies
    assert c.registry.replayed == 2
    entry = c.registry.get(other.node_id, "a" * 16)
    assert entry is not None
    assert entry.last_mono == 1.0
    assert entry.seq == 5
    assert receive(c, encode(envelope(other, seq=6)), mono=4.0).outcome.accepted
    assert counted(c) == {}


def test_a_new_instance_counts_a_restart_and_a_late_old_instance_is_a_replay() -> None:
    c = core(identity(1))
    other = identity(2)
    receive(c, encode(envelope(other, seq=9, inst="1" * 16)))
    handled = receive(c, encode(envelope(other, seq=1, inst="2" * 16)))
    assert handled.outcome.accepted
    assert handled.outcome.fresh
    assert handled.replies
    entry = c.registry.get(other.node_id, "a" * 16)
    assert entry is not None
    assert entry.restarts == 1
    assert entry.instance_id == "2" * 16
    assert receive(c, encode(envelope(other, seq=10, inst="1" * 16))).outcome.reason == "replayed"
    assert entry.restarts == 1


def test_a_key_rebound_to_another_node_id_is_rejected_and_stays_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    c = core(identity(1), policy="tofu")
    first, second = identity(2), identity(3)
    assert receive(c, encode(envelope(first))).outcome.accepted
    monkeypatch.setattr(_wire, "node_id_of", lambda pk: first.node_id)  # a collision of the truncated digest
    assert receive(c, encode(envelope(second))).outcome.reason == "rejected"
    assert receive(c, encode(envelope(second, seq=2))).outcome.reason == "rejected"
    assert counted(c) == {"rejected": 2}
    assert receive(c, encode(envelope(first, seq=2))).outcome.accepted
    entry = c.registry.get(first.node_id, "a" * 16)
    assert entry is not None
    assert entry.public_key == first.public_key


def test_the_order_of_checks_is_mesh_md_order() -> None:
    c = core(identity(1))
    other = identity(2)
    # stale and badly signed: stale wins (it is checked first)
    env = {**envelope(other, ts=NOW - 1000), "name": "tampered"}
    assert receive(c, encode(env)).outcome.reason == "stale"
    # out of bounds and badly signed: bounds wins
    assert receive(c, encode({**envelope(other), "seq": 0})).outcome.reason == "bounds"
    # wrong version and malformed: version wins
    assert receive(c, encode({"v": 9})).outcome.reason == "version"


def test_register_round_trip_between_two_cores() -> None:
    hub, member = core(identity(1)), core(identity(2), runtime="c" * 16)
    receive(hub, encode(envelope(identity(3), ts=NOW)), mono=1.0)
    request = member.register_request(nonce="ab" * 16, source="rendezvous", path="10.0.0.1:7742", wall=NOW)
    handled = hub.receive(request, source="direct", origin=("10.0.0.2", 5000), wall=NOW, mono=2.0)
    assert outcome(handled).accepted
    [(answer, to)] = handled.replies
    assert to == ("10.0.0.2", 5000)
    entry = hub.registry.get(identity(2).node_id, "c" * 16)
    assert entry is not None
    assert entry.sources["rendezvous"].path == "10.0.0.2:5000"
    back = member.receive(answer, source="direct", origin=("10.0.0.1", 7742), wall=NOW, mono=3.0)
    assert back.answered == "ab" * 16
    result = member.forget("ab" * 16)
    assert result is not None
    assert result.accepted
    assert result.candidates == 1
    assert member.registry.get(identity(1).node_id, "b" * 16) is not None
    assert member.registry.get(identity(3).node_id, "a" * 16) is not None
    # the same answer again is nobody's business now
    again = member.receive(answer, source="direct", origin=("10.0.0.1", 7742), wall=NOW, mono=4.0)
    assert outcome(again).reason == "unexpected"


def test_a_register_with_a_bad_signature_or_a_replay_gets_no_candidates() -> None:
    hub, member = core(identity(1)), core(identity(2), runtime="c" * 16)
    receive(hub, encode(envelope(identity(3))), mono=1.0)
    request = member.register_request(nonce="cd" * 16, source="rendezvous", path="hub", wall=NOW)
    obj = _wire.decode_object(request)
    assert obj is not None
    tampered = encode({**obj, "body": {**obj["body"], "nonce": "ef" * 16}})
    bad = hub.receive(tampered, source="direct", origin=("10.0.0.2", 5000), wall=NOW, mono=2.0)
    assert outcome(bad).reason == "signature"
    assert bad.replies == []
    hub.receive(request, source="direct", origin=("10.0.0.2", 5000), wall=NOW, mono=2.0)
    replay = hub.receive(request, source="direct", origin=("10.0.0.9", 5000), wall=NOW, mono=3.0)
    assert outcome(replay).reason == "replayed"
    [(answer, _)] = replay.replies
    body = _wire.decode_object(answer)
    assert body is not None
    assert body["body"]["accepted"] is False
    assert body["body"]["refusal"] == "replayed"
    assert body["body"]["candidates"] == []


def test_link_messages_outside_the_link_socket_or_of_unknown_type() -> None:
    c = core(identity(1))
    hello = encode({"v": 1, "type": "hello", "body": {}, "sig": "0" * 128})
    assert receive(c, hello).outcome.reason == "malformed"
    assert outcome(c.receive(hello, source="direct", origin=ORIGIN, wall=NOW, mono=0)).reason == "unexpected"
    seen: list[str] = []

    def handler(message: LinkMessage, origin: tuple[str, int], wall: float, mono: float) -> list[Any]:
        seen.append(message.type)
        return []

    c.link_handler = handler
    assert c.receive(hello, source="direct", origin=ORIGIN, wall=NOW, mono=0).outcome is None
    assert seen == ["hello"]
    big = c.receive(b"{" * 61441, source="direct", origin=ORIGIN, wall=NOW, mono=0)
    assert outcome(big).reason == "oversized"
    future = c.receive(encode({"v": 2, "type": "x"}), source="direct", origin=ORIGIN, wall=NOW, mono=0)
    assert outcome(future).reason == "version"


def test_register_local_answers_own_envelope_and_candidates() -> None:
    hub = core(identity(1))
    receive(hub, encode(envelope(identity(3))), mono=1.0)
    body = hub.register_local(envelope(identity(2), rt="c" * 16), wall=NOW, mono=2.0)
    assert body["accepted"] is True
    assert body["envelope"]["pk"] == identity(1).public_key
    assert [c["pk"] for c in body["candidates"]] == [identity(3).public_key]
    refused = hub.register_local({**envelope(identity(4)), "name": "x"}, wall=NOW, mono=3.0)
    assert refused["refusal"] == "signature"
    assert refused["candidates"] == []
