"""What travels: the discovery envelope (docs/mesh.md) and the `register` link messages (§5, §8), sans-I/O.

`check_envelope` runs the stateless checks of an envelope in docs/mesh.md's order and answers either the
checked envelope or the reason it is refused: `oversized`, `malformed`, `version`, `bounds`, `stale`,
`signature`. A `v` that is an integer other than 2 is a `version` refusal before any other field is
looked at, so a future envelope with other fields is counted as a version, not as malformed. The
signature is verified over the object as received (unknown fields included), then the known fields are
read into the `Envelope` Struct.
"""

from __future__ import annotations

import functools
import re
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import msgspec

from svc.mesh_udp._canonical import (
    DOMAIN_ENVELOPE,
    NotCanonical,
    canonical_json,
    link_domain,
    node_id_of,
    sign_object,
    signed_bytes,
    verify_object,
    verify_signed,
)

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

__all__ = [
    "ENVELOPE_VERSION",
    "LINK_VERSION",
    "MAX_ENVELOPE_BYTES",
    "MAX_LINK_BYTES",
    "STALE_SECONDS",
    "Checked",
    "Envelope",
    "LinkMessage",
    "build_envelope",
    "check_envelope",
    "check_link",
    "decode_object",
    "encode_link",
    "new_nonce",
    "nonce_ok",
]

ENVELOPE_VERSION: Final = 2
LINK_VERSION: Final = 1
MAX_ENVELOPE_BYTES: Final = 1200
MAX_LINK_BYTES: Final = 61440
STALE_SECONDS: Final = 300
_INT_MAX = 2**63 - 1

_HEX16 = re.compile(r"[0-9a-f]{16}")
_HEX32 = re.compile(r"[0-9a-f]{32}")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_HEX128 = re.compile(r"[0-9a-f]{128}")
_ENDPOINT = re.compile(r"(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3}):(\d{1,5})")


class Envelope(msgspec.Struct, frozen=True, kw_only=True):
    """A discovery envelope's known fields (v2); unknown fields stay in the raw object."""

    v: int
    pk: str
    inst: str
    rt: str
    name: str
    seq: int
    ts: int
    ep: list[str]
    caps: list[str]
    repos: list[str]
    ver: str
    sig: str


_FIELDS: Final = frozenset(f.name for f in msgspec.structs.fields(Envelope))
_convert = msgspec.convert


class Checked(msgspec.Struct, frozen=True, kw_only=True):
    """An envelope that passed the stateless checks: the Struct, the object as received, its node id."""

    envelope: Envelope
    raw: dict[str, Any]
    node_id: str


def decode_object(data: bytes) -> dict[str, Any] | None:
    """The JSON object in `data`, or None when it is not JSON or not an object."""
    try:
        value = msgspec.json.decode(data)
    except msgspec.DecodeError:
        return None
    return value if isinstance(value, dict) else None


def _unknown_fields_ok(obj: dict[str, Any]) -> bool:
    """Whether the fields beside the known ones have a canonical form (no float, ...)."""
    try:
        for name, value in obj.items():
            if name not in _FIELDS:
                canonical_json(value)
    except NotCanonical:
        return False
    return True


@functools.lru_cache(maxsize=4096)
def _endpoint_ok(text: str) -> bool:
    match = _ENDPOINT.fullmatch(text)
    if match is None or len(text) > 64:
        return False
    a, b, c, d, port = match.groups()
    return int(a) <= 255 and int(b) <= 255 and int(c) <= 255 and int(d) <= 255 and 1 <= int(port) <= 65535


@functools.lru_cache(maxsize=4096)
def _ids_ok(pk: str, inst: str, rt: str) -> bool:
    """The hex identifiers of an envelope (cached: one runtime announces the same ones again and again)."""
    return _HEX64.fullmatch(pk) is not None and _HEX16.fullmatch(inst) is not None and _HEX16.fullmatch(rt) is not None


def _bounds(env: Envelope) -> bool:
    if (
        not _ids_ok(env.pk, env.inst, env.rt)
        or _HEX128.fullmatch(env.sig) is None
        or not 1 <= len(env.name) <= 64
        or not 1 <= env.seq <= _INT_MAX
        or not 0 <= env.ts <= _INT_MAX
        or len(env.ver) > 32
        or len(env.ep) > 4
        or len(env.caps) > 8
        or len(env.repos) > 16
    ):
        return False
    for e in env.ep:
        if not _endpoint_ok(e):
            return False
    for c in env.caps:
        if not 1 <= len(c) <= 16:
            return False
    return all(1 <= len(r) <= 64 for r in env.repos)


def check_envelope(obj: Any, *, now: float, size: int) -> Checked | str:
    """Run the stateless checks on an envelope object (already parsed) of `size` encoded bytes.

    Answers the checked envelope, or the refusal reason: `oversized`, `malformed`, `version`, `bounds`,
    `stale` (`|ts - now| > 300 s`) or `signature`.
    """
    if size > MAX_ENVELOPE_BYTES:
        return "oversized"
    if not isinstance(obj, dict) or type(obj.get("v")) is not int:
        return "malformed"
    if obj["v"] != ENVELOPE_VERSION:
        return "version"
    try:
        envelope = _convert(obj, Envelope)
    except msgspec.ValidationError:
        return "malformed"
    if len(obj) != len(_FIELDS) and not _unknown_fields_ok(obj):
        return "malformed"
    if not _bounds(envelope):
        return "bounds"
    if abs(envelope.ts - now) > STALE_SECONDS:
        return "stale"
    try:
        data = signed_bytes(DOMAIN_ENVELOPE, obj, checked=True)
    except NotCanonical:
        return "malformed"
    if not verify_signed(envelope.pk, envelope.sig, data):
        return "signature"
    return Checked(envelope=envelope, raw=obj, node_id=node_id_of(envelope.pk))


def build_envelope(
    key: Ed25519PrivateKey,
    *,
    public_key: str,
    instance: str,
    runtime: str,
    name: str,
    seq: int,
    ts: int,
    endpoints: list[str],
    capabilities: list[str],
    repositories: list[str],
    version: str,
) -> dict[str, Any]:
    """A signed envelope object (its encoding is at most 1200 bytes for values within the bounds)."""
    obj: dict[str, Any] = {
        "v": ENVELOPE_VERSION,
        "pk": public_key,
        "inst": instance,
        "rt": runtime,
        "name": name[:64],
        "seq": seq,
        "ts": ts,
        "ep": endpoints[:4],
        "caps": capabilities[:8],
        "repos": repositories[:16],
        "ver": version[:32],
    }
    return sign_object(key, DOMAIN_ENVELOPE, obj)


def new_nonce() -> str:
    """A fresh 32-hex nonce."""
    return secrets.token_hex(16)


@dataclass(frozen=True, slots=True)
class LinkMessage:
    """A link message that passed its shape check: its type, body and the object as received."""

    type: str
    body: dict[str, Any]
    raw: dict[str, Any]

    def verifies(self, public_key: str) -> bool:
        """Whether the message is signed by `public_key` under its type's domain."""
        return verify_object(public_key, link_domain(self.type), self.raw)


def encode_link(key: Ed25519PrivateKey, message_type: str, body: dict[str, Any]) -> bytes:
    """The signed datagram `{v: 1, type, body, sig}`.

    Raises:
        NotCanonical: the body holds something the canonical form cannot carry.
    """
    obj = sign_object(key, link_domain(message_type), {"v": LINK_VERSION, "type": message_type, "body": body})
    return canonical_json(obj, checked=True)


def check_link(obj: dict[str, Any]) -> LinkMessage | str:
    """The shape of a link message: `{v: 1, type, body (object), sig (128 hex)}`, else the reason.

    Reasons: `malformed` (shape), `version` (`v` other than 1).
    """
    if type(obj.get("v")) is not int or not isinstance(obj.get("type"), str):
        return "malformed"
    if obj["v"] != LINK_VERSION:
        return "version"
    body, sig = obj.get("body"), obj.get("sig")
    if not isinstance(body, dict) or not isinstance(sig, str) or _HEX128.fullmatch(sig) is None:
        return "malformed"
    return LinkMessage(type=obj["type"], body=body, raw=obj)


def nonce_ok(value: Any) -> bool:
    """Whether `value` is a 32-hex nonce."""
    return isinstance(value, str) and _HEX32.fullmatch(value) is not None
