"""Trust policies (docs/mesh.md) and the registry (§7): bounds, eviction, presence, expiry, candidates."""

from __future__ import annotations

from svc.mesh_udp._nodes import NodeRegistry
from svc.mesh_udp._trust import TrustState, TrustStore
from svc.mesh_udp._wire import Checked, check_envelope
from tests.mesh_udp._helpers import NOW, core, encode, envelope, identity

A, B, C = identity(2), identity(3), identity(4)


def test_deny_unknown_observes_unknown_keys_and_trusts_the_allowlist() -> None:
    store = TrustStore("deny_unknown", [B.public_key], own_key=A.public_key)
    assert store.assess(C.node_id, C.public_key) == TrustState(state="observed", detail="policy")
    assert store.assess(B.node_id, B.public_key) == TrustState(state="trusted", detail="allowlist")
    assert store.assess(A.node_id, A.public_key) == TrustState(state="trusted", detail="self")


def test_allowlist_policy_decides_like_deny_unknown() -> None:
    store = TrustStore("allowlist", [B.public_key.upper()], own_key=A.public_key)
    assert store.assess(C.node_id, C.public_key).state == "observed"
    assert store.assess(B.node_id, B.public_key).state == "trusted"


def test_tofu_trusts_and_binds_the_first_key_and_rejects_a_second() -> None:
    store = TrustStore("tofu", [], own_key=A.public_key)
    assert store.assess(C.node_id, C.public_key) == TrustState(state="trusted", detail="tofu")
    assert store.bindings == 1
    assert store.assess(C.node_id, B.public_key) == TrustState(state="rejected", detail="node id bound to another key")
    assert store.assess(C.node_id, C.public_key).state == "trusted"
    # an earlier rejection still holds, whatever the policy would say
    assert store.assess(C.node_id, B.public_key).state == "rejected"


def test_a_binding_check_comes_before_the_allowlist() -> None:
    store = TrustStore("deny_unknown", [B.public_key], own_key=A.public_key)
    store.bind(B.node_id, C.public_key)
    assert store.assess(B.node_id, B.public_key).state == "rejected"


def test_trust_of_each_policy_through_the_core() -> None:
    for policy, state in (("deny_unknown", "observed"), ("allowlist", "observed"), ("tofu", "trusted")):
        c = core(A, policy=policy)  # type: ignore[arg-type]
        c.receive(encode(envelope(B)), source="multicast", origin=None, wall=NOW, mono=0.0)
        entry = c.registry.get(B.node_id, "a" * 16)
        assert entry is not None
        assert entry.trust.state == state, policy
    c = core(A, allow=(B.public_key,))
    c.receive(encode(envelope(B)), source="multicast", origin=None, wall=NOW, mono=0.0)
    entry = c.registry.get(B.node_id, "a" * 16)
    assert entry is not None
    assert entry.trust.detail == "allowlist"
    assert entry.allowlisted


def checked(n: int, *, seq: int = 1, rt: str = "a" * 16) -> Checked:
    env = envelope(identity(n), seq=seq, rt=rt)
    result = check_envelope(env, now=NOW, size=len(encode(env)))
    assert isinstance(result, Checked)
    return result


OBSERVED = TrustState(state="observed", detail="policy")


def test_full_registry_evicts_the_least_recently_seen_entry_that_is_not_allowlisted() -> None:
    reg = NodeRegistry(capacity=3)
    reg.observe(checked(10), OBSERVED, source="multicast", path="p", origin=None, wall=NOW, mono=1.0, allowlisted=True)
    reg.observe(checked(11), OBSERVED, source="multicast", path="p", origin=None, wall=NOW, mono=2.0)
    reg.observe(checked(12), OBSERVED, source="multicast", path="p", origin=None, wall=NOW, mono=3.0)
    seen = reg.observe(checked(13), OBSERVED, source="multicast", path="p", origin=None, wall=NOW, mono=4.0)
    assert seen.outcome == "accepted"
    assert {e.node_id for e in reg} == {identity(n).node_id for n in (10, 12, 13)}
    assert reg.evicted == 1


def test_full_registry_of_allowlisted_entries_drops_the_newcomer() -> None:
    reg = NodeRegistry(capacity=2)
    for n in (10, 11):
        reg.observe(checked(n), OBSERVED, source="m", path="p", origin=None, wall=NOW, mono=n, allowlisted=True)
    seen = reg.observe(checked(12), OBSERVED, source="m", path="p", origin=None, wall=NOW, mono=20.0)
    assert seen.outcome == "evicted"
    assert seen.entry is None
    assert len(reg) == 2
    assert reg.evicted == 1


def test_presence_window_expiry_and_next_change() -> None:
    reg = NodeRegistry()
    reg.observe(checked(10), OBSERVED, source="m", path="p", origin=None, wall=NOW, mono=100.0)
    assert [e.node_id for e in reg.present(159.9)] == [identity(10).node_id]
    assert reg.present(160.0) == []
    assert reg.next_change(100.0) == 160.0
    assert reg.next_change(160.0) == 1000.0
    assert reg.sweep(999.9) == 0
    assert reg.sweep(1000.0) == 1
    assert len(reg) == 0
    assert reg.expired == 1
    assert reg.next_change(1000.0) is None


def test_the_same_envelope_through_another_provider_notes_the_source_only() -> None:
    reg = NodeRegistry()
    first = checked(10, seq=3)
    reg.observe(first, OBSERVED, source="multicast", path="a", origin="1.2.3.4:5", wall=NOW, mono=1.0)
    seen = reg.observe(first, OBSERVED, source="rendezvous", path="b", origin=None, wall=NOW + 1, mono=2.0)
    assert seen.outcome == "replayed"
    entry = reg.get(identity(10).node_id, "a" * 16)
    assert entry is not None
    assert sorted(entry.sources) == ["multicast", "rendezvous"]
    assert entry.last_mono == 1.0
    assert entry.endpoints == ["1.2.3.4:5", "192.168.1.10:7742"]


def test_candidates_are_present_raw_envelopes_newest_first_without_the_registrant() -> None:
    reg = NodeRegistry()
    for n in range(10, 50):
        reg.observe(checked(n), OBSERVED, source="m", path="p", origin=None, wall=NOW, mono=float(n))
    out = reg.candidates(60.0, exclude=(identity(49).node_id, "a" * 16))
    assert len(out) == 32
    assert out[0]["pk"] == identity(48).public_key
    assert all(c["pk"] != identity(49).public_key for c in out)
    assert reg.candidates(200.0) == []
