"""Journal events and beats (docs/mesh.md): their shape, bounds, signing and stateless checks, sans-I/O.

An event is one flat JSON object `{v: 1, stream, seq, lamport, at, repo, pk, body, sig}`, at most 48 KiB
encoded, signed under `svc-mesh-event/v1` over the object as written (unknown fields included). `seq` is
dense from 1 per stream; (stream, seq) is the event's identity. `body.kind` names what happened; each known
kind has bounded fields (`check_body`), an unknown kind is carried as it is (`opaque`).

`verify_event` runs the stateless ingest checks in docs/mesh.md's order and answers the `Event` or the
reason it is refused: `oversized`, `malformed`, `version`, `identity`, `signature`, `repository`, `bounds`.
`malformed` is svc's own code beside docs/mesh.md's: the value is not an object, a field has the wrong type,
or something in it has no canonical form.

A beat is the text `svc-mesh-beat/v1` LF `<stream>` LF `<beat>`, signed by the stream's key: a runtime's
proof that it is still running, carried in marks.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import re
import secrets
from typing import TYPE_CHECKING, Any, Final, Literal

import msgspec

from svc.mesh_udp._canonical import (
    DOMAIN_EVENT,
    NotCanonical,
    node_id_of,
    sign_object,
    signed_bytes,
    verify_signed,
)

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

__all__ = [
    "DOMAIN_BEAT",
    "EVENT_VERSION",
    "KNOWN_KINDS",
    "MAX_EVENT_BYTES",
    "MAX_HANDOVER_BODY",
    "BodyCheck",
    "Event",
    "check_body",
    "check_event",
    "handover_id",
    "new_claim_id",
    "new_review_id",
    "parse_stream",
    "runtime_key",
    "sign_beat",
    "sign_event",
    "utc_stamp",
    "verify_beat",
    "verify_event",
]

EVENT_VERSION: Final = 1
MAX_EVENT_BYTES: Final = 48 * 1024
MAX_HANDOVER_BODY: Final = 32 * 1024
DOMAIN_BEAT: Final = "svc-mesh-beat/v1"
KNOWN_KINDS: Final = (
    "session_opened",
    "session_closed",
    "claim_acquired",
    "claim_released",
    "handover_published",
    "handover_consumed",
    "review_requested",
    "review_answered",
    "review_withdrawn",
)

BodyCheck = Literal["known", "opaque", "bounds"]

_INT_MAX: Final = 2**63 - 1
_MAX_SCOPE: Final = 64
_MAX_INTENT: Final = 512
_MAX_SUBJECT: Final = 256
_MAX_NOTE: Final = 2048
_MAX_TEXT: Final = 512
_MAX_AT: Final = 64

_IDENT = re.compile(r"[A-Za-z0-9._:#-]{1,64}")
_STREAM = re.compile(r"([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{16})")
_CLAIM = re.compile(r"c-[0-9a-f]{12}")
_REVIEW = re.compile(r"r-[0-9a-f]{12}")
_HANDOVER = re.compile(r"[0-9a-f]{32}")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_HEX128 = re.compile(r"[0-9a-f]{128}")
_WITHDRAW_NOTE = re.compile(r"(?:done|void|superseded)(?:: .*)?", re.DOTALL)
#: A repository-relative path: no leading `/`, no `..` component, no control character.
_PATH = re.compile(r"(?!/)(?!(?:.*/)?\.\.(?:/|$))[^\x00-\x1f\x7f]{1,1024}")
_LINE_BREAK = re.compile(r"[\r\n\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
_VERDICTS: Final = frozenset({"approved", "changes_requested", "commented"})
_MODES: Final = frozenset({"exclusive", "advisory"})
_EVENT_FIELDS: Final = frozenset({"v", "stream", "seq", "lamport", "at", "repo", "pk", "body", "sig"})
#: Encoded length of `,"sig":"<128 hex>"` beside the signed canonical object (the signed bytes omit it).
_SIG_FIELD_BYTES: Final = 137


class Event(msgspec.Struct, frozen=True, kw_only=True):
    """One journal event, checked.

    Its stream and dense `seq`, Lamport stamp, the writer's UTC time, repository id, signing key (64 hex),
    body and signature (128 hex). Unknown fields stay in the raw object the event was read from.
    """

    v: int
    stream: str
    seq: int
    lamport: int
    at: str
    repo: str
    pk: str
    body: dict[str, Any]
    sig: str

    @property
    def kind(self) -> str:
        """`body.kind` when it is a string, else ``""``."""
        kind = self.body.get("kind")
        return kind if isinstance(kind, str) else ""

    @property
    def node(self) -> str:
        """The writer's node id (the stream's first 32 hex)."""
        return self.stream[:32]

    @property
    def runtime_key(self) -> str:
        """The writer's runtime key `<node>-<runtime>`."""
        return self.stream[:49]

    @property
    def id(self) -> str:
        """`<stream>/<seq>`."""
        return f"{self.stream}/{self.seq}"


@functools.lru_cache(maxsize=4096)
def parse_stream(stream: str) -> tuple[str, str, str] | None:
    """The (node, runtime, instance) of a stream `<node>-<runtime>-<instance>`, or None when malformed."""
    match = _STREAM.fullmatch(stream)
    if match is None:
        return None
    node, runtime, instance = match.groups()
    return node, runtime, instance


@functools.lru_cache(maxsize=4096)
def _key_node(pk: str) -> str | None:
    """The node id of a 64-hex public key, None when `pk` is not 64 lowercase hex."""
    return node_id_of(pk) if _HEX64.fullmatch(pk) is not None else None


def runtime_key(stream: str) -> str:
    """The runtime key `<node>-<runtime>` of a stream."""
    return stream[:49]


# Body bounds ------------------------------------------------------------------------------------------------


def _ident(value: Any) -> bool:
    return type(value) is str and _IDENT.fullmatch(value) is not None


def _matches(pattern: re.Pattern[str], value: Any) -> bool:
    return type(value) is str and pattern.fullmatch(value) is not None


def _line(value: Any, limit: int, *, required: bool = False) -> bool:
    """Single-line text of at most `limit` characters; absent (None) unless `required`, then non-empty."""
    if value is None:
        return not required
    if type(value) is not str or len(value) > limit or (required and not value):
        return False
    return _LINE_BREAK.search(value) is None


def _prose(value: Any, limit: int, *, required: bool = False) -> bool:
    """Text of at most `limit` characters (line breaks allowed); absent (None) unless `required`."""
    if value is None:
        return not required
    return type(value) is str and len(value) <= limit and (bool(value) or not required)


def _path_ok(path: Any) -> bool:
    return type(path) is str and _PATH.fullmatch(path) is not None


def _scope_ok(scope: Any) -> bool:
    if type(scope) is not list or not 1 <= len(scope) <= _MAX_SCOPE:
        return False
    return all(_path_ok(path) for path in scope)


def _request_ok(value: Any) -> bool:
    if type(value) is not str or len(value) != 81 or value[66] != "/":
        return False
    return parse_stream(value[:66]) is not None and _REVIEW.fullmatch(value[67:]) is not None


_INFO_LINES: Final = ("worker", "task", "issue", "milestone", "checkout", "branch", "head", "context")
_HANDOVER_LINES: Final = ("task", "issue", "milestone", "branch", "head", "created_at", "name")


def _session_info_ok(info: Any) -> bool:
    if type(info) is not dict or not _ident(info.get("session")):
        return False
    if not _line(info.get("client"), _MAX_SUBJECT, required=True):
        return False
    if not all(_line(info.get(name), _MAX_TEXT) for name in _INFO_LINES):
        return False
    dirty = info.get("dirty")
    return _prose(info.get("intent"), _MAX_INTENT) and (dirty is None or type(dirty) is bool)


def _handover_ok(handover: Any) -> bool:
    if type(handover) is not dict:
        return False
    body = handover.get("body")
    if type(body) is not str:
        return False
    try:
        encoded = body.encode()
    except UnicodeEncodeError:
        return False
    if len(encoded) > MAX_HANDOVER_BODY or handover.get("id") != hashlib.sha256(encoded).hexdigest()[:32]:
        return False
    return all(_line(handover.get(name), _MAX_TEXT) for name in _HANDOVER_LINES)


def _kind_ok(kind: str, body: dict[str, Any]) -> bool:
    get = body.get
    if kind == "session_opened":
        return _session_info_ok(get("info"))
    if kind == "session_closed":
        return _ident(get("session"))
    if kind == "claim_acquired":
        mode = get("mode")
        return (
            _matches(_CLAIM, get("claim"))
            and _ident(get("session"))
            and _scope_ok(get("scope"))
            and _prose(get("intent"), _MAX_INTENT)
            and (mode is None or (type(mode) is str and mode in _MODES))
            and _line(get("issue"), _MAX_TEXT)
        )
    if kind == "claim_released":
        return _matches(_CLAIM, get("claim"))
    if kind == "handover_published":
        return _handover_ok(get("handover"))
    if kind == "handover_consumed":
        return _matches(_HANDOVER, get("handover")) and _ident(get("session"))
    if kind == "review_requested":
        reviewer = get("reviewer")
        return (
            _matches(_REVIEW, get("review"))
            and _ident(get("session"))
            and _line(get("subject"), _MAX_SUBJECT, required=True)
            and _scope_ok(get("scope"))
            and _line(get("issue"), _MAX_TEXT)
            and (reviewer is None or _ident(reviewer))
        )
    if kind == "review_answered":
        verdict = get("verdict")
        return (
            _request_ok(get("request"))
            and _ident(get("session"))
            and type(verdict) is str
            and verdict in _VERDICTS
            and _prose(get("note"), _MAX_NOTE)
        )
    # review_withdrawn
    note = get("note")
    return (
        _request_ok(get("request"))
        and _ident(get("session"))
        and _prose(note, _MAX_NOTE, required=True)
        and _matches(_WITHDRAW_NOTE, note)
    )


_KNOWN: Final = frozenset(KNOWN_KINDS)


def check_body(body: Any) -> BodyCheck:
    """Whether an event body is within docs/mesh.md's bounds for its kind.

    Answers `known` (a known kind within its bounds), `opaque` (an unknown kind: a `kind` of 1-64
    identifier characters; carried as it is) or `bounds` (anything else). Optional fields may be absent or
    null; fields beside the known ones are allowed (a later version may add some). Strings that must be
    non-empty: identifiers, `client`, `subject`, a withdrawal's `note`; the rest may be empty.
    """
    if not isinstance(body, dict):
        return "bounds"
    kind = body.get("kind")
    if not isinstance(kind, str):
        return "bounds"
    if kind in _KNOWN:
        return "known" if _kind_ok(kind, body) else "bounds"
    return "opaque" if _IDENT.fullmatch(kind) is not None else "bounds"


# Signing and checking ---------------------------------------------------------------------------------------


def sign_event(
    key: Ed25519PrivateKey,
    public_key: str,
    *,
    stream: str,
    seq: int,
    lamport: int,
    at: str,
    repo: str,
    body: dict[str, Any],
) -> dict[str, Any]:
    """The signed raw event object (domain `svc-mesh-event/v1`).

    Raises:
        ValueError: the body is not a known kind within its bounds (`NotCanonical`, a ValueError, when it
            holds something the canonical form cannot carry).
    """
    if check_body(body) != "known":
        raise ValueError(f"event body out of bounds (kind {body.get('kind')!r})")
    obj: dict[str, Any] = {
        "v": EVENT_VERSION,
        "stream": stream,
        "seq": seq,
        "lamport": lamport,
        "at": at,
        "repo": repo,
        "pk": public_key,
        "body": body,
    }
    return sign_object(key, DOMAIN_EVENT, obj)


_SCALARS: Final = (str, int, bool, type(None))


def _plain(value: Any) -> bool:
    """Whether `value` is plain JSON data with a canonical form (no float, only string keys)."""
    kind = type(value)
    if kind in _SCALARS:
        return True
    if kind is dict:
        items = value.items()
        for name, item in items:
            if type(name) is not str:
                return False
            if type(item) not in _SCALARS and not _plain(item):
                return False
        return True
    if kind is list:
        return all(type(item) in _SCALARS or _plain(item) for item in value)
    return False


def check_event(raw: Any, *, size: int | None, repo: str) -> tuple[Event, int] | str:
    """`verify_event`, answering the event's encoded size beside it.

    With `size` None the size is measured on the signed bytes: the event is encoded once, for its
    signature and its size alike.
    """
    if size is not None and size > MAX_EVENT_BYTES:
        return "oversized"
    if type(raw) is not dict or type(raw.get("v")) is not int:
        return "malformed"
    if raw["v"] != EVENT_VERSION:
        return "version"
    stream, seq, lamport, at, pk, body, sig = (
        raw.get("stream"),
        raw.get("seq"),
        raw.get("lamport"),
        raw.get("at"),
        raw.get("pk"),
        raw.get("body"),
        raw.get("sig"),
    )
    if (
        type(stream) is not str
        or type(seq) is not int
        or type(lamport) is not int
        or type(at) is not str
        or type(raw.get("repo")) is not str
        or type(pk) is not str
        or type(body) is not dict
        or type(sig) is not str
        or not _plain(body)
    ):
        return "malformed"
    if len(raw) != len(_EVENT_FIELDS):
        for name, value in raw.items():
            if name not in _EVENT_FIELDS and not _plain(value):
                return "malformed"
    try:
        data = signed_bytes(DOMAIN_EVENT, raw, checked=True)
    except NotCanonical:  # a lone surrogate
        return "malformed"
    if size is None:
        size = len(data) - len(DOMAIN_EVENT) - 1 + _SIG_FIELD_BYTES
        if size > MAX_EVENT_BYTES:
            return "oversized"
    if seq < 1 or _key_node(pk) != stream[:32] or parse_stream(stream) is None:
        return "identity"
    if _HEX128.fullmatch(sig) is None or not verify_signed(pk, sig, data):
        return "signature"
    if raw["repo"] != repo:
        return "repository"
    if not 1 <= lamport <= _INT_MAX or seq > _INT_MAX or len(at) > _MAX_AT or check_body(body) == "bounds":
        return "bounds"
    event = Event(v=EVENT_VERSION, stream=stream, seq=seq, lamport=lamport, at=at, repo=repo, pk=pk, body=body, sig=sig)
    return event, size


def verify_event(raw: Any, *, size: int, repo: str) -> Event | str:
    """Run the stateless ingest checks on a raw event of `size` encoded bytes.

    Answers the `Event`, or the refusal in docs/mesh.md's order: `oversized` (> 48 KiB), `malformed` (not
    an object, a field of the wrong type, no canonical form), `version` (`v` ≠ 1), `identity` (`pk` is not
    64 hex or its digest is not the stream's node, `seq` < 1, a malformed stream), `signature` (over the
    object as received), `repository` (another repository), `bounds` (the body out of its kind's bounds,
    `lamport` < 1, an integer beyond 2^63 - 1, `at` longer than 64 characters).
    """
    checked = check_event(raw, size=size, repo=repo)
    return checked if isinstance(checked, str) else checked[0]


def sign_beat(key: Ed25519PrivateKey, stream: str, beat: int) -> str:
    """The signature (128 hex) of beat number `beat` of `stream`."""
    return key.sign(_beat_bytes(stream, beat)).hex()


def verify_beat(public_key: str, stream: str, beat: int, sig: str) -> bool:
    """Whether `sig` signs beat number `beat` of `stream` by the key `public_key`."""
    return verify_signed(public_key, sig, _beat_bytes(stream, beat))


def _beat_bytes(stream: str, beat: int) -> bytes:
    return f"{DOMAIN_BEAT}\n{stream}\n{beat}".encode()


# Identifiers ------------------------------------------------------------------------------------------------


def new_claim_id() -> str:
    """A fresh claim id, `c-` and 12 hex."""
    return "c-" + secrets.token_hex(6)


def new_review_id() -> str:
    """A fresh review id, `r-` and 12 hex."""
    return "r-" + secrets.token_hex(6)


def handover_id(body: str) -> str:
    """A handover's id: the first 32 hex of SHA-256 of its body (UTF-8)."""
    return hashlib.sha256(body.encode()).hexdigest()[:32]


def utc_stamp(wall: float) -> str:
    """Unix time `wall` as an event's `at`: `2026-11-25T19:04:05Z`."""
    return dt.datetime.fromtimestamp(int(wall), dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
