"""Cooperation links, sans-I/O: hello / welcome admission, sync rounds, refusals, the peer table, who dials.

`Links` holds one runtime's side of every link and decides everything about them; the trio tasks of
`Cooperation` only send what it answers and wait. A link is directed: the dialer says `hello`, the answerer
admits it in docs/mesh.md's order and answers `welcome` with a link id it chose; the dialer then runs one
sync round per heartbeat (`sync-request` with its marks and the events the answerer lacks, `sync-answer`
with the answerer's marks and the events the dialer lacks). Rounds are idempotent, so loss and duplication
cost only time.

Peers are keyed by runtime key (`<node>-<runtime>`). An outbound target is a runtime from the registry or a
seed endpoint whose runtime is learnt from its welcome. Every refusal given is counted in `refused_in`,
every refusal received (or applied to a welcome) in `refused_out`.
"""

from __future__ import annotations

import re
import secrets
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal, get_args

import msgspec

from svc.mesh_udp._canonical import NotCanonical, node_id_of
from svc.mesh_udp._coop_views import LinkState, RefusalCode
from svc.mesh_udp._core import Address, address_text
from svc.mesh_udp._wire import LinkMessage, encode_link, new_nonce, nonce_ok

if TYPE_CHECKING:
    from svc.mesh_udp._identity import NodeIdentity
    from svc.mesh_udp._journal import Journal
    from svc.mesh_udp._trust import TrustState, TrustStore

__all__ = [
    "FEATURES",
    "LINK_TYPES",
    "PROTOCOL",
    "REFUSAL_CODES",
    "Card",
    "Exchange",
    "LinkState",
    "Links",
    "Outbound",
    "Peer",
    "Received",
    "Refused",
]

PROTOCOL: Final = (1, 1)
FEATURES: Final = ("sessions", "claims", "handovers", "reviews")
LINK_TYPES: Final = frozenset({"hello", "welcome", "sync-request", "sync-answer", "refusal"})
#: Every link refusal code, in admission order.
REFUSAL_CODES: Final = get_args(RefusalCode)
MAX_PEERS: Final = 256
#: Links one peer may hold open toward this runtime at once (the oldest is dropped beyond).
MAX_INBOUND_LINKS: Final = 4
STALE_SECONDS: Final = 300
REPLAY_SECONDS: Final = 600
REPLAY_CACHE: Final = 4096
MAX_REFUSAL_BYTES: Final = 512
REFUSAL_INTERVAL: Final = 1.0
MAX_REFUSED_ROWS: Final = 128
MARKS_BUDGET: Final = 8 * 1024
EVENTS_BUDGET: Final = 50 * 1024
ANSWER_SECONDS: Final = 2.0
ROW_SECONDS: Final = 15 * 60
MAX_FAILURES: Final = 6
RUNTIMES_PER_NODE: Final = 8
HIGHER_WAITS: Final = 3

_HEX16 = re.compile(r"[0-9a-f]{16}")
_HEX32 = re.compile(r"[0-9a-f]{32}")
_HEX64 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True, slots=True)
class Card:
    """Who is at the other end of a link, as its hello or welcome says (signed by `pk`)."""

    pk: str
    runtime: str
    instance: str
    repo: str
    name: str
    version: str
    features: tuple[str, ...]
    endpoints: tuple[str, ...]

    @property
    def node(self) -> str:
        """The node id (derived from the key)."""
        return node_id_of(self.pk)

    @property
    def key(self) -> str:
        """The runtime key `<node>-<runtime>`."""
        return f"{self.node}-{self.runtime}"

    def to_object(self) -> dict[str, Any]:
        """The card as it travels."""
        return {
            "pk": self.pk,
            "runtime": self.runtime,
            "instance": self.instance,
            "repo": self.repo,
            "name": self.name,
            "version": self.version,
            "features": list(self.features),
            "endpoints": list(self.endpoints),
        }

    @classmethod
    def read(cls, obj: Any) -> Card | None:
        """A card from a received object, or None when its shape or bounds are wrong."""
        if not isinstance(obj, dict):
            return None
        pk, runtime, instance = obj.get("pk"), obj.get("runtime"), obj.get("instance")
        repo, name, version = obj.get("repo"), obj.get("name"), obj.get("version")
        features, endpoints = obj.get("features"), obj.get("endpoints")
        if not (
            isinstance(pk, str)
            and _HEX64.fullmatch(pk)
            and isinstance(runtime, str)
            and _HEX16.fullmatch(runtime)
            and isinstance(instance, str)
            and _HEX16.fullmatch(instance)
            and isinstance(repo, str)
            and 1 <= len(repo) <= 64
            and isinstance(name, str)
            and len(name) <= 64
            and isinstance(version, str)
            and len(version) <= 32
            and isinstance(features, list)
            and len(features) <= 8
            and all(isinstance(f, str) and 1 <= len(f) <= 16 for f in features)
            and isinstance(endpoints, list)
            and len(endpoints) <= 4
            and all(isinstance(e, str) and len(e) <= 64 for e in endpoints)
        ):
            return None
        return cls(pk, runtime, instance, repo, name, version, tuple(features), tuple(endpoints))


class Refused(Exception):
    """A link message this runtime refuses, with the refusal code (docs/mesh.md)."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail


@dataclass(slots=True)
class Peer:
    """Another runtime of this repository this one links with, in either direction."""

    key: str
    card: Card
    trust: TrustState
    linked_at: float
    #: The link it dials us on, its instance, the last counter it used.
    inbound: str | None = None
    #: Every link it dials us on that is still good, each with the last counter used on it (newest last). A
    #: runtime may dial one peer from two targets at once (a seed and the registry entry it turns out to be):
    #: each keeps its own link, so neither replaces the other's on every hello.
    inbound_links: dict[str, int] = field(default_factory=dict)
    inbound_at: float | None = None
    inbound_endpoint: str | None = None
    last_exchange: float | None = None
    rtt_ms: int | None = None
    handshakes: int = 0
    reconnects: int = 0
    restarts: int = 0
    expired_at: float | None = None

    def state(self, mono: float, heartbeat: float, expiry: float) -> LinkState:
        """The link state by time since the last exchange (docs/mesh.md)."""
        if self.last_exchange is None:
            return "connecting" if self.expired_at is None else "expired"
        quiet = mono - self.last_exchange
        if quiet <= 2 * heartbeat + 1:
            return "connected"
        if quiet <= expiry / 2:
            return "degraded"
        if quiet <= expiry:
            return "unreachable"
        return "expired"


@dataclass(slots=True)
class Outbound:
    """A runtime (or a seed endpoint not yet identified) this runtime dials."""

    target: str
    address: Address
    created: float
    key: str | None = None
    pk: str | None = None
    seed: bool = False
    higher: bool = False
    link: str | None = None
    counter: int = 0
    theirs: dict[str, int] | None = None
    cursor: str = ""
    rotate: int = 0
    failures: int = 0
    next_attempt: float = 0.0
    last_error: str | None = None
    #: What is outstanding: the hello's nonce, or the round's `link:counter`, and when it left.
    waiting: str | None = None
    sent_at: float = 0.0
    sent_range: tuple[str, str] = ("", "")
    outcome: str | None = None


@dataclass(slots=True)
class Received:
    """What one link message did: datagrams to send back, the request it answered, events to persist."""

    replies: list[tuple[bytes, Address]] = field(default_factory=list)
    answered: str | None = None
    applied: list[dict[str, Any]] = field(default_factory=list)


@dataclass(slots=True)
class Exchange:
    """One datagram to send for an outbound target, and the key its answer will settle."""

    data: bytes
    address: Address
    waiting: str


@dataclass(slots=True)
class RefusedRow:
    """A refusal given or received, by endpoint or `inbound:<runtime>`."""

    endpoint: str
    direction: Literal["outbound", "inbound"]
    refusal: str
    at: float
    runtime: str | None = None


def _counters() -> dict[str, int]:
    return dict.fromkeys(
        (
            "handshakes_out",
            "handshakes_in",
            "dial_failures",
            "syncs_out",
            "syncs_failed",
            "syncs_in",
            "events_sent",
            "events_served",
            "reconnects",
            "restarts",
            "peers_expired",
            "claims_refused",
            "threads",
        ),
        0,
    )


class Links:
    """One runtime's links: admission, rounds, refusals, peers, outbound targets and their timing."""

    def __init__(
        self,
        identity: NodeIdentity,
        *,
        instance: str,
        runtime: str,
        repository: str,
        version: str,
        trust: TrustStore,
        journal: Journal,
        heartbeat: float,
        expiry: float,
        endpoints: Callable[[], list[str]],
        features: tuple[str, ...] = FEATURES,
    ) -> None:
        self.identity = identity
        self.instance = instance
        self.runtime = runtime
        self.repository = repository
        self.version = version
        self.trust = trust
        self.journal = journal
        self.heartbeat = heartbeat
        self.expiry = expiry
        self.endpoints = endpoints
        self.features = features
        self.key = f"{identity.node_id}-{runtime}"
        self.active = True
        self.peers: dict[str, Peer] = {}
        self.outbound: dict[str, Outbound] = {}
        self.by_link: dict[str, str] = {}
        self.counters = _counters()
        self.refused_in: dict[str, int] = {}
        self.refused_out: dict[str, int] = {}
        self.refused: OrderedDict[str, RefusedRow] = OrderedDict()
        self._nonces: OrderedDict[tuple[str, str], float] = OrderedDict()
        self._refusal_sent: dict[Address, float] = {}

    # -- cards and messages ---------------------------------------------------------------------------

    def card(self) -> Card:
        """This runtime's card."""
        return Card(
            pk=self.identity.public_key,
            runtime=self.runtime,
            instance=self.instance,
            repo=self.repository,
            name=self.identity.display_name,
            version=self.version,
            features=self.features,
            endpoints=tuple(self.endpoints()[:4]),
        )

    def _encode(self, message_type: str, body: dict[str, Any]) -> bytes:
        return encode_link(self.identity.key, message_type, body)

    def _refusal(
        self, code: str, detail: str, reply_to: str, origin: Address, mono: float, *, runtime: str | None = None
    ) -> list[tuple[bytes, Address]]:
        """Count a refusal given and answer it, at most once per second per source address."""
        self.refused_in[code] = self.refused_in.get(code, 0) + 1
        where = f"inbound:{runtime}" if runtime else address_text(origin)
        self._note_refused(where, "inbound", code, mono, runtime)
        last = self._refusal_sent.get(origin)
        if last is not None and mono - last < REFUSAL_INTERVAL:
            return []
        if len(self._refusal_sent) > 4096:
            self._refusal_sent = {a: t for a, t in self._refusal_sent.items() if mono - t < REFUSAL_INTERVAL}
        self._refusal_sent[origin] = mono
        body: dict[str, Any] = {
            "pk": self.identity.public_key,
            "code": code,
            "detail": detail[:160],
            "proto_min": PROTOCOL[0],
            "proto_max": PROTOCOL[1],
            "reply_to": reply_to[:80],
        }
        data = self._encode("refusal", body)
        while len(data) > MAX_REFUSAL_BYTES and body["detail"]:
            body["detail"] = body["detail"][: len(body["detail"]) // 2]
            data = self._encode("refusal", body)
        return [(data, origin)]

    def _note_refused(
        self, where: str, direction: Literal["outbound", "inbound"], code: str, mono: float, runtime: str | None
    ) -> None:
        self.refused.pop(where, None)
        self.refused[where] = RefusedRow(endpoint=where, direction=direction, refusal=code, at=mono, runtime=runtime)
        while len(self.refused) > MAX_REFUSED_ROWS:
            self.refused.popitem(last=False)

    # -- receiving ------------------------------------------------------------------------------------

    def receive(self, message: LinkMessage, origin: Address, *, wall: float, mono: float) -> Received:
        """Handle one link message (`hello`, `welcome`, `sync-request`, `sync-answer`, `refusal`)."""
        kind = message.type
        if kind == "hello":
            return self._on_hello(message, origin, wall, mono)
        if kind == "welcome":
            return self._on_welcome(message, origin, wall, mono)
        if kind == "sync-request":
            return self._on_sync_request(message, origin, mono)
        if kind == "sync-answer":
            return self._on_sync_answer(message, origin, mono)
        if kind == "refusal":
            return self._on_refusal(message, mono)
        return Received(replies=self._refusal("malformed", f"unknown type {kind[:32]}", "", origin, mono))

    def _check_card(self, body: dict[str, Any], message: LinkMessage, wall: float) -> Card:
        """The checks a hello and a welcome share, in order; raises `Refused`."""
        card = Card.read(body.get("card"))
        if card is None:
            raise Refused("malformed", "bad card")
        if not message.verifies(card.pk):
            raise Refused("signature", "the message does not verify against its card's key")
        ts = body.get("ts")
        if type(ts) is not int or abs(ts - wall) > STALE_SECONDS:
            raise Refused("stale", "timestamp more than 300 s away")
        if not nonce_ok(body.get("nonce")):
            raise Refused("malformed", "nonce is not 32 hex")
        return card

    def _check_peer(self, card: Card) -> TrustState:
        if card.key == self.key:
            raise Refused("self_link", "that is this runtime")
        if card.repo != self.repository:
            raise Refused("repository_mismatch", f"this runtime serves repository {self.repository}")
        trust = self.trust.assess(card.node, card.pk)
        if trust.state != "trusted":
            raise Refused("untrusted", f"key not trusted ({trust.state})")
        return trust

    def _on_hello(self, message: LinkMessage, origin: Address, wall: float, mono: float) -> Received:
        body = message.body
        nonce = body.get("nonce")
        reply_to = nonce if isinstance(nonce, str) else ""
        try:
            if not self.active:
                raise Refused("not_active", "cooperation is stopped")
            card = self._check_card(body, message, wall)
            low, high = body.get("proto_min"), body.get("proto_max")
            if type(low) is not int or type(high) is not int:
                raise Refused("malformed", "protocol range")
            if max(low, PROTOCOL[0]) > min(high, PROTOCOL[1]):
                raise Refused("protocol_unsupported", f"this runtime speaks {PROTOCOL[0]}..{PROTOCOL[1]}")
            trust = self._check_peer(card)
            self._prune_nonces(mono)
            if (card.pk, reply_to) in self._nonces:
                raise Refused("replay", "hello seen before")
            self._nonces[(card.pk, reply_to)] = mono
            known = self.peers.get(card.key)
            if known is None and len(self.peers) >= MAX_PEERS:
                raise Refused("capacity", f"{MAX_PEERS} peers already")
        except Refused as refused:
            return Received(replies=self._refusal(refused.code, refused.detail, reply_to, origin, mono))
        peer = self._meet(card, trust, mono)
        if peer.inbound is not None and peer.card.instance == card.instance:
            peer.reconnects += 1
            self.counters["reconnects"] += 1
        link = secrets.token_hex(16)
        peer.inbound, peer.inbound_at = link, mono
        peer.inbound_links[link] = 0
        while len(peer.inbound_links) > MAX_INBOUND_LINKS:
            self.by_link.pop(next(iter(peer.inbound_links)), None)
            del peer.inbound_links[next(iter(peer.inbound_links))]
        peer.inbound_endpoint = address_text(origin)
        peer.last_exchange = mono
        peer.handshakes += 1
        self.by_link[link] = card.key
        self.counters["handshakes_in"] += 1
        welcome = {
            "proto": PROTOCOL[1],
            "link": link,
            "card": self.card().to_object(),
            "nonce": reply_to,
            "ts": int(wall),
            "heartbeat_seconds": int(self.heartbeat),
            "expiry_seconds": int(self.expiry),
        }
        return Received(replies=[(self._encode("welcome", welcome), origin)])

    def _meet(self, card: Card, trust: TrustState, mono: float) -> Peer:
        """The peer of `card`, created or refreshed (a new instance counts a restart)."""
        peer = self.peers.get(card.key)
        if peer is None:
            peer = Peer(key=card.key, card=card, trust=trust, linked_at=mono)
            self.peers[card.key] = peer
            return peer
        if peer.card.instance != card.instance:
            peer.restarts += 1
            self.counters["restarts"] += 1
            self._forget_links(peer)
        peer.card, peer.trust, peer.expired_at = card, trust, None
        return peer

    def _forget_links(self, peer: Peer) -> None:
        """Drop every link `peer` dials this runtime on (it restarted, or went silent past the expiry)."""
        for link in peer.inbound_links:
            self.by_link.pop(link, None)
        peer.inbound_links.clear()
        peer.inbound = None

    def _prune_nonces(self, mono: float) -> None:
        nonces = self._nonces
        while nonces:
            first = next(iter(nonces.values()))
            if mono - first <= REPLAY_SECONDS and len(nonces) < REPLAY_CACHE:
                break
            nonces.popitem(last=False)

    def _on_welcome(self, message: LinkMessage, origin: Address, wall: float, mono: float) -> Received:
        body = message.body
        nonce = body.get("nonce")
        out = self._waiting_for(nonce)
        if out is None:
            self._count_out("malformed", address_text(origin), mono)
            return Received()
        try:
            card = self._check_card(body, message, wall)
            if out.pk is not None and card.pk != out.pk:
                raise Refused("signature", "not the key dialed")
            proto, link = body.get("proto"), body.get("link")
            if type(proto) is not int or not PROTOCOL[0] <= proto <= PROTOCOL[1]:
                raise Refused("protocol_unsupported", "welcome names a protocol this runtime does not speak")
            if not isinstance(link, str) or _HEX32.fullmatch(link) is None:
                raise Refused("malformed", "link is not 32 hex")
            trust = self._check_peer(card)
        except Refused as refused:
            self._fail(out, refused.code, mono, refusal=True)
            return Received(answered=nonce)
        peer = self._meet(card, trust, mono)
        if out.link is not None:
            peer.reconnects += 1
            self.counters["reconnects"] += 1
        self._identify(out, card)
        out.link, out.counter, out.theirs = link, 0, None
        peer.last_exchange = mono
        peer.rtt_ms = int((mono - out.sent_at) * 1000)
        peer.handshakes += 1
        self.counters["handshakes_out"] += 1
        self._succeed(out, mono)
        return Received(answered=nonce)

    def _identify(self, out: Outbound, card: Card) -> None:
        """Learn who a seed is; a seed that is a runtime already dialed yields to that target."""
        out.key, out.pk = card.key, card.pk
        out.higher = self.key > card.key
        if out.seed:
            for other in self.outbound.values():
                if other is not out and other.key == card.key and not other.seed:
                    other.link = None
                    other.next_attempt = float("inf")

    def _on_sync_request(self, message: LinkMessage, origin: Address, mono: float) -> Received:
        body = message.body
        link, counter = body.get("link"), body.get("counter")
        reply_to = f"{link}:{counter}" if isinstance(link, str) and type(counter) is int else ""
        key = self.by_link.get(link) if isinstance(link, str) else None
        peer = self.peers.get(key) if key is not None else None
        try:
            if not self.active:
                raise Refused("not_active", "cooperation is stopped")
            if peer is None or link not in peer.inbound_links or body.get("instance") != peer.card.instance:
                raise Refused("unknown_link", "say hello again")
            if not message.verifies(peer.card.pk):
                raise Refused("signature", "the request does not verify against the link's key")
            if type(counter) is not int or counter <= peer.inbound_links[link]:
                raise Refused("replay", "counter not above the last")
            lo, hi = _range(body.get("range"))
            marks, events = body.get("marks"), body.get("events")
            if not isinstance(marks, dict) or not isinstance(events, list):
                raise Refused("malformed", "marks or events")
        except Refused as refused:
            runtime = peer.key if peer is not None else None
            return Received(
                replies=self._refusal(refused.code, refused.detail, reply_to, origin, mono, runtime=runtime)
            )
        peer.inbound_links[link] = counter
        peer.last_exchange = peer.inbound_at = mono
        peer.inbound_endpoint = address_text(origin)
        self.counters["syncs_in"] += 1
        report, applied = self.journal.ingest(events, mono=mono)
        self.journal.merge_marks(marks, mono=mono)
        theirs = {s: m["seq"] for s, m in marks.items() if isinstance(m, dict) and type(m.get("seq")) is int}
        answer_marks = self.journal.marks(lo, hi, held=theirs.keys())
        owed = self.journal.owed(theirs, lo, hi, budget=EVENTS_BUDGET, held=theirs.keys())
        answer = {
            "link": link,
            "counter": counter,
            "range": {"from": lo, "to": hi},
            "marks": answer_marks,
            "events": owed,
            "report": msgspec.to_builtins(report),
        }
        data = self._encode("sync-answer", answer)
        while len(data) > 61440 and answer["events"]:
            answer["events"] = answer["events"][: len(answer["events"]) // 2]
            data = self._encode("sync-answer", answer)
        self.counters["events_served"] += len(answer["events"])
        return Received(replies=[(data, origin)], applied=applied)

    def _on_sync_answer(self, message: LinkMessage, origin: Address, mono: float) -> Received:
        body = message.body
        link, counter = body.get("link"), body.get("counter")
        waiting = f"{link}:{counter}" if isinstance(link, str) and type(counter) is int else None
        out = self._waiting_for(waiting)
        if out is None or out.pk is None or out.key is None:
            self._count_out("unknown_link", address_text(origin), mono)
            return Received()
        if not message.verifies(out.pk):
            self._fail(out, "signature", mono, refusal=True)
            return Received(answered=waiting)
        marks, events = body.get("marks"), body.get("events")
        if not isinstance(marks, dict) or not isinstance(events, list):
            self._fail(out, "malformed", mono, refusal=True)
            return Received(answered=waiting)
        _report, applied = self.journal.ingest(events, mono=mono)
        self.journal.merge_marks(marks, mono=mono)
        lo, hi = out.sent_range
        theirs = out.theirs if out.theirs is not None else {}
        for stream in [s for s in theirs if _within(s, lo, hi)]:
            del theirs[stream]
        for stream, mark in marks.items():
            if isinstance(mark, dict) and type(mark.get("seq")) is int and _within(stream, lo, hi):
                theirs[stream] = mark["seq"]
        out.theirs = theirs
        peer = self.peers.get(out.key)
        if peer is not None:
            peer.last_exchange = mono
            peer.rtt_ms = int((mono - out.sent_at) * 1000)
        self.counters["syncs_out"] += 1
        self._succeed(out, mono)
        return Received(answered=waiting, applied=applied)

    def _on_refusal(self, message: LinkMessage, mono: float) -> Received:
        body = message.body
        pk, code, reply_to = body.get("pk"), body.get("code"), body.get("reply_to")
        out = self._waiting_for(reply_to)
        if out is None or not isinstance(pk, str) or not isinstance(code, str) or code not in REFUSAL_CODES:
            return Received()
        if out.pk is not None and pk != out.pk:
            return Received()
        if not message.verifies(pk):
            return Received()
        waiting = out.waiting
        self._fail(out, code, mono, refusal=True)
        return Received(answered=waiting)

    def _waiting_for(self, waiting: Any) -> Outbound | None:
        if not isinstance(waiting, str) or not waiting:
            return None
        for out in self.outbound.values():
            if out.waiting == waiting:
                return out
        return None

    def _count_out(self, code: str, where: str, mono: float, runtime: str | None = None) -> None:
        self.refused_out[code] = self.refused_out.get(code, 0) + 1
        self._note_refused(where, "outbound", code, mono, runtime)

    # -- outcomes and timing --------------------------------------------------------------------------

    def _succeed(self, out: Outbound, mono: float) -> None:
        out.failures, out.last_error, out.outcome = 0, None, "ok"
        out.waiting = None
        out.next_attempt = max(mono, out.sent_at + self.heartbeat)

    def _fail(self, out: Outbound, code: str, mono: float, *, refusal: bool) -> None:
        """Apply a refusal or a transport error to the target's timing (docs/mesh.md "Who dials")."""
        out.waiting = None
        out.outcome = code
        out.last_error = code
        if refusal:
            self._count_out(code, address_text(out.address), mono, out.key)
        if code == "unknown_link":
            out.link = None
            out.next_attempt = mono
            return
        if out.link is None:
            self.counters["dial_failures"] += 1
        else:
            self.counters["syncs_failed"] += 1
        out.failures = min(MAX_FAILURES, out.failures + (3 if refusal else 1))
        if refusal:
            out.link = None
        out.next_attempt = mono + min(self.heartbeat * 2**out.failures, self.expiry)

    def timed_out(self, out: Outbound, waiting: str, mono: float) -> None:
        """No answer to `waiting` within 2 s: a transport error."""
        if out.waiting == waiting:
            self._fail(out, "timeout", mono, refusal=False)
            out.last_error = f"no answer within {ANSWER_SECONDS:.0f} s"

    # -- dialing --------------------------------------------------------------------------------------

    def reconcile(self, targets: Iterable[tuple[str, str | None, str | None, Address, bool]], mono: float) -> None:
        """Make the outbound set the current targets: `(target, key, pk, address, seed)` each.

        A registry target carries its runtime key and key; a seed carries neither until its welcome. At most
        8 runtimes per node are dialed. A target no longer named is dropped.
        """
        wanted: dict[str, tuple[str | None, str | None, Address, bool]] = {}
        per_node: dict[str, int] = {}
        for target, key, pk, address, seed in targets:
            if key is not None:
                if key == self.key:
                    continue
                node = key.split("-", 1)[0]
                if per_node.get(node, 0) >= RUNTIMES_PER_NODE:
                    continue
                per_node[node] = per_node.get(node, 0) + 1
            wanted.setdefault(target, (key, pk, address, seed))
        for target in [t for t in self.outbound if t not in wanted]:
            del self.outbound[target]
        for target, (key, pk, address, seed) in wanted.items():
            out = self.outbound.get(target)
            if out is None:
                out = Outbound(target=target, address=address, created=mono, key=key, pk=pk, seed=seed)
                out.higher = key is not None and self.key > key
                self.outbound[target] = out
            else:
                out.address = address

    def due(self, out: Outbound, mono: float) -> float:
        """When `out` should next be dialed (a monotonic time; inf = not while another target covers it)."""
        if out.waiting is not None:
            return out.sent_at + ANSWER_SECONDS
        if out.key is not None and out.seed:
            for other in self.outbound.values():
                if other is not out and other.key == out.key and not other.seed and other.link is not None:
                    return float("inf")
        if out.higher and out.key is not None:
            peer = self.peers.get(out.key)
            waits = HIGHER_WAITS * self.heartbeat
            if peer is not None and peer.inbound_at is not None and mono - peer.inbound_at < waits:
                return max(out.next_attempt, peer.inbound_at + waits)
            if out.link is None and (peer is None or peer.inbound_at is None):
                return max(out.next_attempt, out.created + waits)
        return out.next_attempt

    def hello(self, out: Outbound, *, wall: float, mono: float) -> Exchange:
        """A hello to `out` (its nonce becomes what is awaited)."""
        nonce = new_nonce()
        body = {
            "proto_min": PROTOCOL[0],
            "proto_max": PROTOCOL[1],
            "card": self.card().to_object(),
            "nonce": nonce,
            "ts": int(wall),
        }
        out.waiting, out.sent_at, out.outcome = nonce, mono, None
        return Exchange(data=self._encode("hello", body), address=out.address, waiting=nonce)

    def sync_request(self, out: Outbound, *, mono: float, full: bool = False) -> Exchange:
        """The next sync round's request on `out`'s link (`full`: one range over every stream)."""
        assert out.link is not None
        out.counter += 1
        theirs = out.theirs
        held = theirs.keys() if theirs is not None else ()
        lo, hi, marks = self._marks_range("" if full else out.cursor, held, full=full)
        out.cursor = hi
        events = (
            self.journal.owed(theirs or {}, "", "", budget=EVENTS_BUDGET, start=out.rotate, held=held)
            if (theirs is not None)
            else []
        )
        out.rotate += 1
        body: dict[str, Any] = {
            "link": out.link,
            "counter": out.counter,
            "instance": self.instance,
            "range": {"from": lo, "to": hi},
            "marks": marks,
            "events": events,
        }
        try:
            data = self._encode("sync-request", body)
        except NotCanonical:
            body["events"] = []
            data = self._encode("sync-request", body)
        while len(data) > 61440 and body["events"]:
            body["events"] = body["events"][: len(body["events"]) // 2]
            data = self._encode("sync-request", body)
        self.counters["events_sent"] += len(body["events"])
        waiting = f"{out.link}:{out.counter}"
        out.waiting, out.sent_at, out.sent_range, out.outcome = waiting, mono, (lo, hi), None
        return Exchange(data=data, address=out.address, waiting=waiting)

    def _marks_range(self, cursor: str, held: Any, *, full: bool) -> tuple[str, str, dict[str, Any]]:
        """A range from `cursor` whose marks fit 8 KiB (every stream when `full`), and those marks."""
        marks = self.journal.marks(cursor, "", held=held)
        if full:
            return "", "", marks
        size = 0
        taken: dict[str, Any] = {}
        for stream, mark in marks.items():
            cost = len(stream) + len(msgspec.json.encode(mark)) + 4
            if taken and size + cost > MARKS_BUDGET:
                return cursor, stream, taken
            taken[stream] = mark
            size += cost
        return cursor, "", taken

    # -- time -----------------------------------------------------------------------------------------

    def expire(self, mono: float) -> list[str]:
        """Mark links past the expiry expired (counted once) and drop rows expired 15 min ago."""
        gone = []
        for key, peer in list(self.peers.items()):
            state = peer.state(mono, self.heartbeat, self.expiry)
            if state != "expired":
                peer.expired_at = None
            elif peer.expired_at is None:
                peer.expired_at = mono
                self.counters["peers_expired"] += 1
                self._forget_links(peer)
            if peer.expired_at is not None and mono - peer.expired_at > ROW_SECONDS:
                del self.peers[key]
                gone.append(key)
        return gone

    def outbound_of(self, key: str) -> Outbound | None:
        """The outbound target dialing runtime `key`, if any (a linked one first)."""
        found = [o for o in self.outbound.values() if o.key == key]
        found.sort(key=lambda o: o.link is None)
        return found[0] if found else None

    def linked(self, key: str, mono: float) -> bool:
        """Whether `key` is linked now in either direction and not expired."""
        peer = self.peers.get(key)
        if peer is None or peer.state(mono, self.heartbeat, self.expiry) == "expired":
            return False
        out = self.outbound_of(key)
        return peer.inbound is not None or (out is not None and out.link is not None)

    def oversized(self, origin: Address, mono: float) -> None:
        """A datagram over 60 KiB on the link socket (refused before parsing, so never answered)."""
        self.refused_in["oversized"] = self.refused_in.get("oversized", 0) + 1
        self._note_refused(address_text(origin), "inbound", "oversized", mono, None)


def _range(value: Any) -> tuple[str, str]:
    if not isinstance(value, dict):
        raise Refused("malformed", "range")
    lo, hi = value.get("from"), value.get("to")
    if not isinstance(lo, str) or not isinstance(hi, str) or len(lo) > 80 or len(hi) > 80:
        raise Refused("malformed", "range")
    return lo, hi


def _within(stream: str, lo: str, hi: str) -> bool:
    return stream >= lo and (hi == "" or stream < hi)
