r"""The one signing form of the mesh: `<domain>` LF `<canonical JSON of the object without sig>`.

Canonical JSON (docs/mesh.md): UTF-8; object keys sorted by code point at every depth; no whitespace;
separators `,` and `:`; strings escape only `"`, `\\` and U+0000–U+001F (`\\b \\t \\n \\f \\r`, else
`\\u00xx` lowercase); every other character literal; integers only; `true`, `false`, `null`. msgspec's
encoder with sorted keys writes exactly these bytes for these values (the test vectors pin it against the
standard library encoder), so it is used for speed; values outside the form (floats, non-string keys, lone
surrogates) are refused with `NotCanonical`.

Signatures are Ed25519 over the signed bytes, written as 128 lowercase hex. `cryptography` is imported on
first use, so a command that never signs or verifies does not load it.
"""

from __future__ import annotations

import functools
import hashlib
from typing import TYPE_CHECKING, Any, Final

import msgspec

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

__all__ = [
    "DOMAIN_ENVELOPE",
    "DOMAIN_EVENT",
    "NotCanonical",
    "canonical_json",
    "link_domain",
    "node_id_of",
    "public_key",
    "sign_object",
    "signed_bytes",
    "verify_object",
    "verify_signed",
]

DOMAIN_ENVELOPE: Final = "svc-mesh-envelope/v2"
DOMAIN_EVENT: Final = "svc-mesh-event/v1"

_ENCODER = msgspec.json.Encoder(order="sorted")


class NotCanonical(ValueError):
    """A value the canonical form cannot carry (a float, a non-string key, a lone surrogate, ...)."""


def link_domain(message_type: str) -> str:
    """The signing domain of a link message of `message_type` (`svc-mesh-link-T/v1`)."""
    return f"svc-mesh-link-{message_type}/v1"


def _check(value: Any) -> None:
    if value is None or isinstance(value, bool | str):
        return
    if isinstance(value, int):
        return
    if isinstance(value, list):
        for item in value:
            _check(item)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise NotCanonical("object keys must be strings")
            _check(item)
        return
    raise NotCanonical(f"{type(value).__name__} has no canonical form (integers, strings, lists, objects only)")


def canonical_json(value: Any, *, checked: bool = False) -> bytes:
    """The canonical JSON bytes of `value` (plain JSON data: dict, list, str, int, bool, None).

    `checked` skips the walk over the value when the caller has already checked every type.

    Raises:
        NotCanonical: the value holds something the form cannot carry.
    """
    if not checked:
        _check(value)
    try:
        return _ENCODER.encode(value)
    except (UnicodeEncodeError, TypeError, ValueError, OverflowError) as exc:
        raise NotCanonical(str(exc)) from None


def signed_bytes(domain: str, obj: dict[str, Any], *, checked: bool = False) -> bytes:
    """`<domain>` LF canonical JSON of `obj` without its `sig` field.

    Raises:
        NotCanonical: the object holds something the form cannot carry.
    """
    body = dict(obj)
    body.pop("sig", None)
    return _prefix(domain) + canonical_json(body, checked=checked)


@functools.lru_cache(maxsize=64)
def _prefix(domain: str) -> bytes:
    return domain.encode() + b"\n"


def sign_object(key: Ed25519PrivateKey, domain: str, obj: dict[str, Any]) -> dict[str, Any]:
    """A copy of `obj` with `sig` set to the Ed25519 signature (128 hex) of its signed bytes.

    Raises:
        NotCanonical: the object holds something the form cannot carry.
    """
    signature = key.sign(signed_bytes(domain, obj)).hex()
    return {**{k: v for k, v in obj.items() if k != "sig"}, "sig": signature}


@functools.lru_cache(maxsize=2048)
def public_key(public_hex: str) -> Ed25519PublicKey:
    """The Ed25519 public key written as 64 hex (cached: verification loads each key once).

    Raises:
        ValueError: not 64 hex digits of a valid key.
    """
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    raw = bytes.fromhex(public_hex)
    if len(raw) != 32:
        raise ValueError("an Ed25519 public key is 32 bytes")
    return Ed25519PublicKey.from_public_bytes(raw)


@functools.lru_cache(maxsize=2048)
def node_id_of(public_hex: str) -> str:
    """The node id of a public key: the first 16 bytes of SHA-256(raw key), 32 hex."""
    return hashlib.sha256(bytes.fromhex(public_hex)).hexdigest()[:32]


def verify_signed(public_hex: str, signature_hex: str, data: bytes) -> bool:
    """Whether `signature_hex` is a valid Ed25519 signature of `data` by the key `public_hex`."""
    try:
        key = public_key(public_hex)
        signature = bytes.fromhex(signature_hex)
    except ValueError:
        return False
    if len(signature) != 64:
        return False
    try:
        key.verify(signature, data)
    except Exception as exc:  # cryptography's InvalidSignature, imported only when a signature fails
        from cryptography.exceptions import InvalidSignature

        if isinstance(exc, InvalidSignature):
            return False
        raise
    return True


def verify_object(public_hex: str, domain: str, obj: dict[str, Any]) -> bool:
    """Whether `obj["sig"]` signs `obj` (as received, unknown fields included) under `domain`."""
    signature = obj.get("sig")
    if not isinstance(signature, str):
        return False
    try:
        data = signed_bytes(domain, obj)
    except NotCanonical:
        return False
    return verify_signed(public_hex, signature, data)
