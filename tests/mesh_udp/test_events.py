"""Journal events and beats (docs/mesh.md): bounds per kind, signing, and the stateless checks in order."""

from __future__ import annotations

import copy
import re
from typing import Any

import msgspec
import pytest

from svc.mesh_udp._canonical import DOMAIN_EVENT, NotCanonical, canonical_json, sign_object, signed_bytes
from svc.mesh_udp._events import (
    DOMAIN_BEAT,
    KNOWN_KINDS,
    MAX_EVENT_BYTES,
    MAX_HANDOVER_BODY,
    Event,
    check_body,
    check_event,
    handover_id,
    new_claim_id,
    new_review_id,
    parse_stream,
    runtime_key,
    sign_beat,
    sign_event,
    utc_stamp,
    verify_beat,
    verify_event,
)
from tests.mesh_udp._helpers import identity

REPO = "0" * 32
ME = identity(1)
OTHER = identity(2)
STREAM = f"{ME.node_id}-{'a' * 16}-{'1' * 16}"
OTHER_STREAM = f"{OTHER.node_id}-{'a' * 16}-{'1' * 16}"
REQUEST = f"{OTHER_STREAM}/r-0123456789ab"
HANDOVER_BODY = "# Handover\n\nWhere things stand.\n"

GOOD_BODIES: dict[str, dict[str, Any]] = {
    "session_opened": {
        "kind": "session_opened",
        "info": {
            "session": "board-stdio-1a2b3c4d",
            "client": "Claude Code",
            "worker": "w1",
            "intent": "refactor\nthe parser",
            "task": "T-12",
            "issue": "#42",
            "milestone": "M3",
            "checkout": "main-checkout",
            "branch": "feature/x",
            "head": "0" * 40,
            "dirty": True,
            "context": "r7",
        },
    },
    "session_closed": {"kind": "session_closed", "session": "s.1:a#b-c_d"},
    "claim_acquired": {
        "kind": "claim_acquired",
        "claim": "c-0123456789ab",
        "session": "s1",
        "scope": ["src/a.py", "docs/", "./x", "a..b/c"],
        "intent": "fix it",
        "mode": "advisory",
        "issue": "GH-7",
    },
    "claim_released": {"kind": "claim_released", "claim": "c-0123456789ab"},
    "handover_published": {
        "kind": "handover_published",
        "handover": {
            "id": handover_id(HANDOVER_BODY),
            "task": "T-1",
            "issue": "#1",
            "milestone": "M1",
            "branch": "main",
            "head": "f" * 40,
            "created_at": "2026-01-01T00:00:00Z",
            "name": "2026-01-01-handover.md",
            "body": HANDOVER_BODY,
        },
    },
    "handover_consumed": {"kind": "handover_consumed", "handover": handover_id(HANDOVER_BODY), "session": "s1"},
    "review_requested": {
        "kind": "review_requested",
        "review": "r-0123456789ab",
        "session": "s1",
        "subject": "feature/x at 1234abcd",
        "scope": ["src"],
        "issue": "#9",
        "reviewer": f"{OTHER.node_id}-{'a' * 16}",
    },
    "review_answered": {
        "kind": "review_answered",
        "request": REQUEST,
        "session": "s2",
        "verdict": "changes_requested",
        "note": "see line 4\nand 5",
    },
    "review_withdrawn": {"kind": "review_withdrawn", "request": REQUEST, "session": "s1", "note": "superseded: by #10"},
}

MINIMAL_BODIES: list[dict[str, Any]] = [
    {"kind": "session_opened", "info": {"session": "s1", "client": "cli"}},
    {"kind": "claim_acquired", "claim": "c-0123456789ab", "session": "s1", "scope": ["a"]},
    {"kind": "claim_acquired", "claim": "c-0123456789ab", "session": "s1", "scope": ["a"], "intent": None},
    {"kind": "handover_published", "handover": {"id": handover_id(""), "body": ""}},
    {"kind": "review_requested", "review": "r-0123456789ab", "session": "s1", "subject": "x", "scope": ["a"]},
    {"kind": "review_answered", "request": REQUEST, "session": "s1", "verdict": "approved"},
    {"kind": "review_answered", "request": REQUEST, "session": "s1", "verdict": "commented", "note": ""},
    {"kind": "review_withdrawn", "request": REQUEST, "session": "s1", "note": "done"},
    {"kind": "review_withdrawn", "request": REQUEST, "session": "s1", "note": "void: no longer\nneeded"},
    {"kind": "session_closed", "session": "s1", "later_field": {"nested": [1, "x"]}},
]


def _with(kind: str, **changes: Any) -> dict[str, Any]:
    body = copy.deepcopy(GOOD_BODIES[kind])
    for name, value in changes.items():
        if value is _DROP:
            body.pop(name, None)
        else:
            body[name] = value
    return body


def _info(**changes: Any) -> dict[str, Any]:
    body = copy.deepcopy(GOOD_BODIES["session_opened"])
    body["info"].update(changes)
    return body


def _handover(**changes: Any) -> dict[str, Any]:
    body = copy.deepcopy(GOOD_BODIES["handover_published"])
    body["handover"].update(changes)
    return body


_DROP = object()
LONG_BODY = "x" * (MAX_HANDOVER_BODY + 1)

BAD_BODIES: list[tuple[str, Any]] = [
    ("not an object", ["kind", "session_closed"]),
    ("no kind", {"session": "s1"}),
    ("kind not a string", {"kind": 3}),
    ("kind not an identifier", {"kind": "no spaces allowed"}),
    ("kind too long", {"kind": "k" * 65}),
    ("session id with a slash", _with("session_closed", session="a/b")),
    ("session id empty", _with("session_closed", session="")),
    ("session id too long", _with("session_closed", session="s" * 65)),
    ("session id not a string", _with("session_closed", session=7)),
    ("info missing", _with("session_opened", info=_DROP)),
    ("info without client", _info(client=None)),
    ("client empty", _info(client="")),
    ("client with a line break", _info(client="a\nb")),
    ("info session bad", _info(session="a b")),
    ("intent too long", _info(intent="i" * 513)),
    ("branch with a line break", _info(branch="a\rb")),
    ("branch too long", _info(branch="b" * 513)),
    ("dirty not a boolean", _info(dirty="yes")),
    ("claim id not c-12hex", _with("claim_acquired", claim="c-0123")),
    ("claim id upper hex", _with("claim_acquired", claim="c-0123456789AB")),
    ("claim id not a string", _with("claim_released", claim=5)),
    ("scope empty", _with("claim_acquired", scope=[])),
    ("scope 65 paths", _with("claim_acquired", scope=[f"p{i}" for i in range(65)])),
    ("scope absolute", _with("claim_acquired", scope=["/etc/passwd"])),
    ("scope climbing", _with("claim_acquired", scope=["src/../../x"])),
    ("scope just ..", _with("claim_acquired", scope=[".."])),
    ("scope empty path", _with("claim_acquired", scope=[""])),
    ("scope not a list", _with("claim_acquired", scope="src")),
    ("scope path not a string", _with("claim_acquired", scope=[1])),
    ("scope control character", _with("claim_acquired", scope=["a\nb"])),
    ("claim intent too long", _with("claim_acquired", intent="i" * 513)),
    ("mode unknown", _with("claim_acquired", mode="shared")),
    ("mode unhashable", _with("claim_acquired", mode=["exclusive"])),
    ("claim issue with a line break", _with("claim_acquired", issue="a\nb")),
    ("handover id not its body's digest", _handover(id="0" * 32)),
    ("handover body too long", _handover(body=LONG_BODY, id=handover_id(LONG_BODY))),
    ("handover body missing", _handover(body=None)),
    ("handover front field multi-line", _handover(task="a\nb")),
    ("handover name multi-line", _handover(name="a\u2028b")),
    ("handover not an object", _with("handover_published", handover="x")),
    ("consumed handover not 32 hex", _with("handover_consumed", handover="x")),
    ("review id not r-12hex", _with("review_requested", review="r-1")),
    ("subject empty", _with("review_requested", subject="")),
    ("subject too long", _with("review_requested", subject="s" * 257)),
    ("reviewer not an identifier", _with("review_requested", reviewer="a b")),
    ("request not a key", _with("review_answered", request="r-0123456789ab")),
    ("request with a bad stream", _with("review_answered", request="x" * 66 + "/r-0123456789ab")),
    ("request to a claim", _with("review_answered", request=f"{OTHER_STREAM}/c-0123456789ab")),
    ("verdict unknown", _with("review_answered", verdict="lgtm")),
    ("verdict unhashable", _with("review_answered", verdict={"v": 1})),
    ("answer note too long", _with("review_answered", note="n" * 2049)),
    ("withdraw note missing", _with("review_withdrawn", note=_DROP)),
    ("withdraw note other word", _with("review_withdrawn", note="finished")),
    ("withdraw note without the space", _with("review_withdrawn", note="done:x")),
    ("withdraw note prefix only", _with("review_withdrawn", note="doneish")),
    ("withdraw note too long", _with("review_withdrawn", note="void: " + "n" * 2043)),
]


@pytest.mark.parametrize("kind", KNOWN_KINDS)
def test_every_known_kind_within_bounds_is_known(kind: str) -> None:
    assert check_body(GOOD_BODIES[kind]) == "known"


@pytest.mark.parametrize("body", MINIMAL_BODIES)
def test_optional_fields_may_be_absent_or_null_and_later_fields_are_allowed(body: dict[str, Any]) -> None:
    assert check_body(body) == "known"


@pytest.mark.parametrize(("why", "body"), BAD_BODIES, ids=[why for why, _ in BAD_BODIES])
def test_a_body_out_of_bounds_is_bounds(why: str, body: Any) -> None:
    assert check_body(body) == "bounds", why


def test_the_bounds_are_inclusive() -> None:
    assert check_body(_with("session_closed", session="s" * 64)) == "known"
    assert check_body(_with("claim_acquired", scope=[f"p{i}" for i in range(64)], intent="i" * 512)) == "known"
    assert check_body(_with("review_requested", subject="s" * 256)) == "known"
    assert check_body(_with("review_answered", note="n" * 2048)) == "known"
    assert check_body(_with("review_withdrawn", note="void: " + "n" * 2042)) == "known"
    body = "é" * (MAX_HANDOVER_BODY // 2)
    assert check_body(_handover(body=body, id=handover_id(body))) == "known"
    body += "x"
    assert check_body(_handover(body=body, id=handover_id(body))) == "bounds"


def test_an_unknown_kind_is_opaque() -> None:
    assert check_body({"kind": "pairing_started", "anything": [1, {"a": None}]}) == "opaque"
    assert check_body({"kind": "x"}) == "opaque"


def _raw(
    *,
    key: Any = ME.key,
    pk: str = ME.public_key,
    stream: str = STREAM,
    seq: int = 1,
    lamport: int = 1,
    repo: str = REPO,
    body: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return sign_event(
        key,
        pk,
        stream=stream,
        seq=seq,
        lamport=lamport,
        at="2026-01-01T00:00:00Z",
        repo=repo,
        body=body if body is not None else GOOD_BODIES["claim_acquired"],
    )


def _resign(raw: dict[str, Any], key: Any = ME.key) -> dict[str, Any]:
    return sign_object(key, DOMAIN_EVENT, raw)


def _size(raw: Any) -> int:
    try:
        return len(msgspec.json.encode(raw))
    except (TypeError, UnicodeEncodeError, ValueError):
        return 0


def verify(raw: Any, *, size: int | None = None, repo: str = REPO) -> Event | str:
    return verify_event(raw, size=_size(raw) if size is None else size, repo=repo)


def test_a_signed_event_verifies_into_the_struct() -> None:
    raw = _raw(seq=3, lamport=9)
    event = verify(raw)
    assert isinstance(event, Event)
    assert (event.stream, event.seq, event.lamport, event.repo, event.pk) == (STREAM, 3, 9, REPO, ME.public_key)
    assert event.kind == "claim_acquired"
    assert event.node == ME.node_id
    assert event.runtime_key == f"{ME.node_id}-{'a' * 16}"
    assert event.id == f"{STREAM}/3"
    assert re.fullmatch(r"[0-9a-f]{128}", raw["sig"])
    assert signed_bytes(DOMAIN_EVENT, raw).startswith(b'svc-mesh-event/v1\n{"at":"2026-01-01T00:00:00Z","body":{')


def test_the_size_measured_on_the_signed_bytes_is_the_encoded_size() -> None:
    for body in [*GOOD_BODIES.values(), {"kind": "x", "é": "ü😀"}]:
        raw = sign_object(ME.key, DOMAIN_EVENT, {**_raw(), "body": body})
        checked = check_event(raw, size=None, repo=REPO)
        assert not isinstance(checked, str)
        assert checked[1] == len(canonical_json(raw))


def test_unknown_fields_are_signed_and_verify() -> None:
    raw = _resign({**_raw(), "later": {"b": [1, 2], "a": "x"}})
    assert isinstance(verify(raw), Event)
    stripped = {k: v for k, v in raw.items() if k != "later"}
    assert verify(stripped) == "signature"
    assert verify({**raw, "later": {"b": [1, 3], "a": "x"}}) == "signature"


def test_an_opaque_event_verifies_and_keeps_its_body() -> None:
    raw = _resign({**_raw(), "body": {"kind": "pairing_started", "with": ["x"]}})
    event = verify(raw)
    assert isinstance(event, Event)
    assert event.kind == "pairing_started"
    assert event.body == {"kind": "pairing_started", "with": ["x"]}


def _tampered() -> dict[str, Any]:
    raw = _raw()
    data = bytearray(msgspec.json.encode(raw))
    index = data.index(b"fix it")
    data[index] = ord("F")
    return msgspec.json.decode(bytes(data))  # type: ignore[no-any-return]


STATELESS: list[tuple[str, Any, str]] = [
    ("oversized", lambda: (_raw(), MAX_EVENT_BYTES + 1), "oversized"),
    ("malformed: a list", lambda: [_raw()], "malformed"),
    ("malformed: no v", lambda: {k: v for k, v in _raw().items() if k != "v"}, "malformed"),
    ("malformed: v a string", lambda: {**_raw(), "v": "1"}, "malformed"),
    ("malformed: v a boolean", lambda: {**_raw(), "v": True}, "malformed"),
    ("malformed: seq a string", lambda: {**_raw(), "seq": "1"}, "malformed"),
    ("malformed: lamport a float", lambda: {**_raw(), "lamport": 1.0}, "malformed"),
    ("malformed: body a list", lambda: {**_raw(), "body": []}, "malformed"),
    ("malformed: sig missing", lambda: {k: v for k, v in _raw().items() if k != "sig"}, "malformed"),
    ("malformed: a float in the body", lambda: {**_raw(), "body": {"kind": "x", "f": 0.5}}, "malformed"),
    ("malformed: a float in a later field", lambda: {**_raw(), "later": [1.5]}, "malformed"),
    ("malformed: a lone surrogate", lambda: {**_raw(), "at": "\ud800"}, "malformed"),
    ("version", lambda: _resign({**_raw(), "v": 2}), "version"),
    ("version before shape", lambda: {"v": 2, "seq": "not checked"}, "version"),
    ("identity: another key", lambda: _raw(key=OTHER.key, pk=OTHER.public_key), "identity"),
    ("identity: seq 0", lambda: _raw(seq=0), "identity"),
    ("identity: seq negative", lambda: _raw(seq=-1), "identity"),
    ("identity: bad stream", lambda: _raw(stream=f"{ME.node_id}-{'a' * 16}"), "identity"),
    ("identity: upper-case stream", lambda: _raw(stream=STREAM.upper()), "identity"),
    ("identity: pk not hex", lambda: {**_raw(), "pk": "z" * 64}, "identity"),
    ("signature: forged by another key", lambda: _raw(key=OTHER.key), "signature"),
    ("signature: tampered body byte", _tampered, "signature"),
    ("signature: seq changed", lambda: {**_raw(), "seq": 2}, "signature"),
    ("signature: not hex", lambda: {**_raw(), "sig": "zz" * 64}, "signature"),
    ("signature: short", lambda: {**_raw(), "sig": _raw()["sig"][:126]}, "signature"),
    ("repository", lambda: _raw(repo="1" * 32), "repository"),
    ("bounds: body", lambda: _resign({**_raw(), "body": _with("claim_acquired", scope=["/abs"])}), "bounds"),
    ("bounds: lamport 0", lambda: _raw(lamport=0), "bounds"),
    ("bounds: lamport beyond 2^63 - 1", lambda: _raw(lamport=2**63), "bounds"),
    ("bounds: at too long", lambda: _resign({**_raw(), "at": "t" * 65}), "bounds"),
    # the first failing check names the refusal
    ("oversized before malformed", lambda: ({**_raw(), "seq": "x"}, MAX_EVENT_BYTES + 1), "oversized"),
    ("version before field types", lambda: {**_raw(), "v": 2, "seq": "x"}, "version"),
    ("version before identity", lambda: _resign({**_raw(seq=0), "v": 2}), "version"),
    ("identity before signature", lambda: {**_raw(key=OTHER.key), "seq": 0}, "identity"),
    ("signature before repository", lambda: {**_raw(repo="1" * 32), "seq": 2}, "signature"),
    ("repository before bounds", lambda: _raw(repo="1" * 32, lamport=0), "repository"),
]


@pytest.mark.parametrize(("why", "make", "code"), STATELESS, ids=[why for why, _, _ in STATELESS])
def test_each_stateless_check_in_order(why: str, make: Any, code: str) -> None:
    made = make()
    raw, size = made if isinstance(made, tuple) else (made, None)
    assert verify(raw, size=size) == code, why


def test_an_event_of_more_than_48_kib_is_oversized_when_measured() -> None:
    raw = _resign({**_raw(), "body": {"kind": "bulk", "text": ""}})
    text = "x" * (MAX_EVENT_BYTES - len(canonical_json(raw)))
    raw = _resign({**_raw(), "body": {"kind": "bulk", "text": text}})
    assert len(canonical_json(raw)) == MAX_EVENT_BYTES
    assert isinstance(check_event(raw, size=None, repo=REPO), tuple)
    raw = _resign({**_raw(), "body": {"kind": "bulk", "text": text + "x"}})
    assert check_event(raw, size=None, repo=REPO) == "oversized"


def test_sign_event_refuses_a_body_out_of_bounds_or_of_an_unknown_kind() -> None:
    with pytest.raises(ValueError, match="out of bounds"):
        _raw(body=_with("claim_acquired", scope=[]))
    with pytest.raises(ValueError, match="out of bounds"):
        _raw(body={"kind": "pairing_started"})
    with pytest.raises(NotCanonical):
        _raw(body={"kind": "session_closed", "session": "s1", "later": 0.5})


def test_a_beat_signs_the_stream_and_its_number() -> None:
    sig = sign_beat(ME.key, STREAM, 7)
    assert re.fullmatch(r"[0-9a-f]{128}", sig)
    ME.key.public_key().verify(bytes.fromhex(sig), f"{DOMAIN_BEAT}\n{STREAM}\n7".encode())
    assert verify_beat(ME.public_key, STREAM, 7, sig)
    assert not verify_beat(ME.public_key, STREAM, 8, sig)
    assert not verify_beat(ME.public_key, OTHER_STREAM, 7, sig)
    assert not verify_beat(OTHER.public_key, STREAM, 7, sig)
    assert not verify_beat(ME.public_key, STREAM, 7, "00" * 64)
    assert not verify_beat(ME.public_key, STREAM, 7, "not hex")


def test_identifiers() -> None:
    assert re.fullmatch(r"c-[0-9a-f]{12}", new_claim_id())
    assert re.fullmatch(r"r-[0-9a-f]{12}", new_review_id())
    assert new_claim_id() != new_claim_id()
    assert handover_id("abc") == "ba7816bf8f01cfea414140de5dae2223"
    assert utc_stamp(1_767_225_600.9) == "2026-01-01T00:00:00Z"
    assert parse_stream(STREAM) == (ME.node_id, "a" * 16, "1" * 16)
    assert parse_stream(STREAM + "0") is None
    assert parse_stream(f"{ME.node_id}-{'a' * 16}") is None
    assert runtime_key(STREAM) == f"{ME.node_id}-{'a' * 16}"
