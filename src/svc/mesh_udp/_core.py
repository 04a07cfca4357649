"""The discovery protocol, sans-I/O: the beacon, the check chain, trust, the registry and `register`.

`MeshCore.receive` takes the bytes of one datagram, where it was heard and the clocks, runs every check
in docs/mesh.md's order (size, shape, version, bounds, staleness, signature, own runtime, trust, registry),
counts each refusal by reason, and answers what to send back (`Handled.replies`). The socket tasks only
move bytes; everything decided is decided here, so the protocol is tested without a socket.

What comes back: a first sighting (a new runtime, or a new instance of one) heard straight from the
sender is answered with this runtime's envelope, sent to the datagram's source, so two runtimes find each
other as soon as either announces; a `register` is answered with `register-answer` (this node's envelope
and up to 32 present candidates, each verifiable on its own). Other link message types (`hello`, `welcome`,
`sync-*`, `refusal`) are handed to `link_handler` (cooperation) and counted `unexpected` while there is none.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import msgspec

from svc.mesh_udp._nodes import MAX_CANDIDATES, NodeEntry, NodeRegistry
from svc.mesh_udp._wire import (
    MAX_ENVELOPE_BYTES,
    MAX_LINK_BYTES,
    LinkMessage,
    build_envelope,
    check_envelope,
    check_link,
    decode_object,
    encode_link,
    nonce_ok,
)

if TYPE_CHECKING:
    from svc.mesh_udp._identity import NodeIdentity
    from svc.mesh_udp._trust import TrustStore

__all__ = [
    "REFUSAL_REASONS",
    "Beacon",
    "Handled",
    "MeshCore",
    "Outcome",
    "Pending",
    "RegisterResult",
    "address_text",
]

REFUSAL_REASONS: Final = (
    "oversized",
    "malformed",
    "version",
    "bounds",
    "stale",
    "signature",
    "self_heard",
    "rejected",
    "unexpected",
)
#: Sources whose datagrams come straight from the sender's link socket (a first sighting is answered).
_ANSWERED_SOURCES: Final = frozenset({"multicast", "broadcast", "direct"})

Address = tuple[str, int]


def address_text(address: Address) -> str:
    """`ip:port`."""
    return f"{address[0]}:{address[1]}"


class Beacon:
    """Signs this runtime's envelopes; one beacon for every provider, so `seq` rises across all of them."""

    def __init__(
        self,
        identity: NodeIdentity,
        *,
        instance: str,
        runtime: str,
        repositories: list[str],
        version: str,
        capabilities: list[str],
        endpoints: list[str] | None = None,
    ) -> None:
        self.identity = identity
        self.instance = instance
        self.runtime = runtime
        self.repositories = repositories
        self.version = version
        self.capabilities = capabilities
        self.endpoints: list[str] = endpoints or []
        self.seq = 0

    def envelope(self, wall: float) -> dict[str, Any]:
        """A new signed envelope (the next `seq`)."""
        self.seq += 1
        identity = self.identity
        return build_envelope(
            identity.key,
            public_key=identity.public_key,
            instance=self.instance,
            runtime=self.runtime,
            name=identity.display_name,
            seq=self.seq,
            ts=int(wall),
            endpoints=self.endpoints,
            capabilities=self.capabilities,
            repositories=self.repositories,
            version=self.version,
        )

    def datagram(self, wall: float) -> bytes:
        """A new signed envelope, encoded."""
        return msgspec.json.encode(self.envelope(wall))


class Outcome(msgspec.Struct, frozen=True, kw_only=True):
    """What became of one envelope: accepted, or the reason (a refusal, `replayed` or `evicted`)."""

    accepted: bool
    reason: str | None = None
    entry: NodeEntry | None = None
    fresh: bool = False


@dataclass(frozen=True, slots=True)
class RegisterResult:
    """A hub's answer to this runtime's `register`, as checked here."""

    accepted: bool
    refusal: str | None
    hub: Outcome
    candidates: int


@dataclass(slots=True)
class Pending:
    """A `register` sent and not yet answered: the source to record answers under, and the endpoint."""

    source: str
    path: str
    result: RegisterResult | None = None


class Handled(msgspec.Struct, kw_only=True):
    """What one datagram did: the envelope's outcome, datagrams to send back, a register answered."""

    outcome: Outcome | None = None
    replies: list[tuple[bytes, Address]] = msgspec.field(default_factory=list)
    answered: str | None = None


LinkHandler = Callable[[LinkMessage, Address, float, float], list[tuple[bytes, Address]]]


class MeshCore:
    """One runtime's discovery state: refusals by reason, trust, the registry, outstanding registrations."""

    def __init__(self, beacon: Beacon, trust: TrustStore, registry: NodeRegistry) -> None:
        self.beacon = beacon
        self.trust = trust
        self.registry = registry
        self.node_id = beacon.identity.node_id
        self.runtime = beacon.runtime
        self.refusals: dict[str, int] = dict.fromkeys(REFUSAL_REASONS, 0)
        self.pending: dict[str, Pending] = {}
        self.link_handler: LinkHandler | None = None
        self.link_oversized: Callable[[Address, float], None] | None = None

    def _refuse(self, reason: str) -> Outcome:
        self.refusals[reason] += 1
        return Outcome(accepted=False, reason=reason)

    def admit(
        self,
        obj: Any,
        *,
        source: str,
        path: str,
        origin: str | None,
        wall: float,
        mono: float,
        size: int | None = None,
    ) -> Outcome:
        """Run the envelope checks on a parsed object and record it when it holds."""
        if size is None:
            try:
                size = len(msgspec.json.encode(obj))
            except (TypeError, ValueError, UnicodeEncodeError, OverflowError):
                return self._refuse("malformed")
        checked = check_envelope(obj, now=wall, size=size)
        if isinstance(checked, str):
            return self._refuse(checked)
        env = checked.envelope
        if checked.node_id == self.node_id and env.rt == self.runtime:
            return self._refuse("self_heard")
        trust = self.trust.assess(checked.node_id, env.pk)
        if trust.state == "rejected":
            return self._refuse("rejected")
        seen = self.registry.observe(
            checked,
            trust,
            source=source,
            path=path,
            origin=origin,
            wall=wall,
            mono=mono,
            allowlisted=self.trust.allowlisted(env.pk),
        )
        accepted = seen.outcome == "accepted"
        return Outcome(accepted=accepted, reason=None if accepted else seen.outcome, entry=seen.entry, fresh=seen.fresh)

    def receive(self, data: bytes, *, source: str, origin: Address | None, wall: float, mono: float) -> Handled:
        """Handle one datagram heard through `source` from `origin`.

        `source` is `multicast`, `broadcast`, or `direct` (the link socket).
        """
        link = source == "direct"
        if len(data) > (MAX_LINK_BYTES if link else MAX_ENVELOPE_BYTES):
            if link and origin is not None and self.link_oversized is not None:
                self.link_oversized(origin, mono)
            return Handled(outcome=self._refuse("oversized"))
        obj = decode_object(data)
        if obj is None:
            return Handled(outcome=self._refuse("malformed"))
        if "type" in obj:
            if not link or origin is None:
                return Handled(outcome=self._refuse("malformed"))
            return self._link(obj, origin, wall, mono)
        where = address_text(origin) if origin is not None else source
        outcome = self.admit(obj, source=source, path=where, origin=where, wall=wall, mono=mono, size=len(data))
        handled = Handled(outcome=outcome)
        if outcome.accepted and outcome.fresh and origin is not None and source in _ANSWERED_SOURCES:
            handled.replies.append((self.beacon.datagram(wall), origin))
        return handled

    def _link(self, obj: dict[str, Any], origin: Address, wall: float, mono: float) -> Handled:
        message = check_link(obj)
        if isinstance(message, str):
            return Handled(outcome=self._refuse(message))
        if message.type == "register":
            return self._on_register(message, origin, wall, mono)
        if message.type == "register-answer":
            return self._on_register_answer(message, origin, wall, mono)
        if self.link_handler is None:
            return Handled(outcome=self._refuse("unexpected"))
        return Handled(replies=self.link_handler(message, origin, wall, mono))

    def _signed_envelope(self, message: LinkMessage) -> dict[str, Any] | None:
        envelope = message.body.get("envelope")
        if not isinstance(envelope, dict) or not isinstance(envelope.get("pk"), str):
            return None
        return envelope

    def _on_register(self, message: LinkMessage, origin: Address, wall: float, mono: float) -> Handled:
        envelope = self._signed_envelope(message)
        nonce = message.body.get("nonce")
        if envelope is None or not nonce_ok(nonce):
            return Handled(outcome=self._refuse("malformed"))
        if not message.verifies(envelope["pk"]):
            return Handled(outcome=self._refuse("signature"))
        where = address_text(origin)
        outcome = self.admit(envelope, source="rendezvous", path=where, origin=where, wall=wall, mono=mono)
        body = self.answer_body(outcome, wall=wall, mono=mono)
        body["nonce"] = nonce
        data = encode_link(self.beacon.identity.key, "register-answer", body)
        while len(data) > MAX_LINK_BYTES and body["candidates"]:
            body["candidates"] = body["candidates"][: len(body["candidates"]) // 2]
            data = encode_link(self.beacon.identity.key, "register-answer", body)
        return Handled(outcome=outcome, replies=[(data, origin)])

    def answer_body(self, outcome: Outcome, *, wall: float, mono: float) -> dict[str, Any]:
        """The answer to a registration: accepted or the refusal, this node's envelope, the candidates.

        Candidates go only to an accepted registrant, never include it, and are at most 32.
        """
        body: dict[str, Any] = {"accepted": outcome.accepted, "envelope": self.beacon.envelope(wall)}
        if not outcome.accepted:
            body["refusal"] = outcome.reason or "refused"
        exclude = outcome.entry.key if outcome.entry is not None else None
        body["candidates"] = self.registry.candidates(mono, exclude=exclude) if outcome.accepted else []
        return body

    def register_local(self, envelope: Any, *, wall: float, mono: float) -> dict[str, Any]:
        """`mesh.register` from the loopback server: the envelope checked like a datagram, the answer body."""
        outcome = self.admit(envelope, source="rendezvous", path="loopback", origin=None, wall=wall, mono=mono)
        return self.answer_body(outcome, wall=wall, mono=mono)

    def register_request(self, *, nonce: str, source: str, path: str, wall: float) -> bytes:
        """A signed `register` datagram to send to a hub; its answer is awaited under `nonce`."""
        self.pending[nonce] = Pending(source=source, path=path)
        body = {"envelope": self.beacon.envelope(wall), "nonce": nonce}
        return encode_link(self.beacon.identity.key, "register", body)

    def _on_register_answer(self, message: LinkMessage, origin: Address, wall: float, mono: float) -> Handled:
        nonce = message.body.get("nonce")
        pending = self.pending.get(nonce) if isinstance(nonce, str) else None
        if pending is None or pending.result is not None:
            return Handled(outcome=self._refuse("unexpected"))
        envelope = self._signed_envelope(message)
        candidates = message.body.get("candidates")
        if envelope is None or not isinstance(candidates, list):
            return Handled(outcome=self._refuse("malformed"))
        if not message.verifies(envelope["pk"]):
            return Handled(outcome=self._refuse("signature"))
        where = address_text(origin)
        hub = self.admit(envelope, source=pending.source, path=pending.path, origin=where, wall=wall, mono=mono)
        taken = 0
        for candidate in candidates[:MAX_CANDIDATES]:
            seen = self.admit(
                candidate, source=pending.source, path=f"via {pending.path}", origin=None, wall=wall, mono=mono
            )
            taken += seen.accepted
        refusal = message.body.get("refusal")
        pending.result = RegisterResult(
            accepted=message.body.get("accepted") is True,
            refusal=refusal if isinstance(refusal, str) else None,
            hub=hub,
            candidates=taken,
        )
        return Handled(outcome=hub, answered=nonce)

    def forget(self, nonce: str) -> RegisterResult | None:
        """Stop waiting for `nonce`; answers its result when it came."""
        pending = self.pending.pop(nonce, None)
        return pending.result if pending is not None else None
