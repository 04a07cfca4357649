"""Canonical JSON and the signing form, fixed by test vectors (docs/mesh.md)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from svc.mesh_udp._canonical import (
    DOMAIN_ENVELOPE,
    NotCanonical,
    canonical_json,
    link_domain,
    node_id_of,
    sign_object,
    signed_bytes,
    verify_object,
)
from tests.mesh_udp._helpers import RFC8032_PUBLIC, RFC8032_SEED, envelope, identity

VECTORS: list[tuple[Any, bytes]] = [
    ({"b": 1, "a": [True, False, None]}, b'{"a":[true,false,null],"b":1}'),
    ({"z": {"b": 1, "a": 2}, "a": {}}, b'{"a":{},"z":{"a":2,"b":1}}'),
    ('\u0000\b\t\n\f\r\u001f"\\/', b'"\\u0000\\b\\t\\n\\f\\r\\u001f\\"\\\\/"'),
    ("\u000b\u001a", b'"\\u000b\\u001a"'),
    ("ü€😀\u2028\u007f<>&", '"ü€😀\u2028\u007f<>&"'.encode()),
    ({"😀": 1, "\uffff": 2, "é": 3, "a": 4, "_": 5, "B": 6}, '{"B":6,"_":5,"a":4,"é":3,"\uffff":2,"😀":1}'.encode()),
    ([0, -1, 2**53 + 1, -(2**63)], b"[0,-1,9007199254740993,-9223372036854775808]"),
    ({}, b"{}"),
    ([], b"[]"),
    ("", b'""'),
]


@pytest.mark.parametrize(("value", "expected"), VECTORS)
def test_vectors(value: Any, expected: bytes) -> None:
    assert canonical_json(value) == expected


@pytest.mark.parametrize("value", [1.5, float("nan"), {"a": 0.0}, {1: "x"}, ("tuple",), {"a": {1, 2}}, "\ud800"])
def test_values_outside_the_form_are_refused(value: Any) -> None:
    with pytest.raises(NotCanonical):
        canonical_json(value)


_json = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**63 - 1) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(_json)
def test_equals_the_standard_library_encoder_with_sorted_keys(value: Any) -> None:
    try:
        expected = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    except UnicodeEncodeError:
        with pytest.raises(NotCanonical):
            canonical_json(value)
        return
    assert canonical_json(value) == expected


def test_rfc8032_key_and_a_pinned_envelope_signature() -> None:
    ident = identity(0)
    assert ident.public_key != RFC8032_PUBLIC
    from svc.mesh_udp._identity import NodeIdentity

    vector = NodeIdentity.from_seed(RFC8032_SEED)
    assert vector.public_key == RFC8032_PUBLIC
    assert vector.node_id == "21fe31dfa154a261626bf854046fd227" == node_id_of(RFC8032_PUBLIC)
    env = envelope(vector, rt="fedcba9876543210", inst="0123456789abcdef", ts=1767225600)
    env["name"] = "vector"
    env = sign_object(vector.key, DOMAIN_ENVELOPE, env)
    assert signed_bytes(DOMAIN_ENVELOPE, env) == (
        b'svc-mesh-envelope/v2\n{"caps":["rendezvous"],"ep":["192.168.1.10:7742"],"inst":"0123456789abcdef",'
        b'"name":"vector","pk":"d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",'
        b'"repos":["00000000000000000000000000000000"],"rt":"fedcba9876543210","seq":1,"ts":1767225600,"v":2,'
        b'"ver":"0.1.0"}'
    )
    assert env["sig"] == (
        "d37450cde746c4bb432551208d4aaeb9918520e8235ea8a1970afcce4cdb4436"
        "b8f48de920bf154677fbaa7c31b66cb691ea4fb82880a373ea40152ae12e4703"
    )
    assert verify_object(RFC8032_PUBLIC, DOMAIN_ENVELOPE, env)


def test_signature_covers_unknown_fields_and_the_domain() -> None:
    ident = identity(1)
    env = envelope(ident, future_field={"nested": [1, "two"]})
    assert verify_object(ident.public_key, DOMAIN_ENVELOPE, env)
    assert not verify_object(ident.public_key, DOMAIN_ENVELOPE, {**env, "future_field": {"nested": [1, "2"]}})
    assert not verify_object(ident.public_key, link_domain("hello"), env)
    assert not verify_object(identity(2).public_key, DOMAIN_ENVELOPE, env)
    assert not verify_object(ident.public_key, DOMAIN_ENVELOPE, {**env, "sig": "zz"})
    assert not verify_object("00" * 31, DOMAIN_ENVELOPE, env)
    assert link_domain("register-answer") == "svc-mesh-link-register-answer/v1"
