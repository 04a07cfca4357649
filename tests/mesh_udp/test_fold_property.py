"""Convergence: the same events, delivered in any order and any number of times, fold to the same state."""

from __future__ import annotations

import hashlib
import itertools
from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from svc.mesh_udp._canonical import DOMAIN_EVENT, sign_object
from svc.mesh_udp._coop_views import CooperationState
from svc.mesh_udp._events import sign_event
from svc.mesh_udp._fold import fold
from svc.mesh_udp._identity import NodeIdentity
from tests.mesh_udp._helpers import identity

REPO = "0" * 32
NODE_1 = identity(1)
NODE_2 = identity(2)
RECEIVER = identity(9)
#: The writers: (identity, stream). Node 1 runs two runtimes, one of them restarted; node 2 runs one.
WRITERS: list[tuple[NodeIdentity, str]] = [
    (NODE_1, f"{NODE_1.node_id}-{'1' * 16}-{'a' * 16}"),
    (NODE_1, f"{NODE_1.node_id}-{'1' * 16}-{'b' * 16}"),
    (NODE_1, f"{NODE_1.node_id}-{'2' * 16}-{'a' * 16}"),
    (NODE_2, f"{NODE_2.node_id}-{'1' * 16}-{'a' * 16}"),
]
RECEIVER_STREAM = f"{RECEIVER.node_id}-{'9' * 16}-{'9' * 16}"
SESSIONS = ["s0", "s1", "s2"]
PATHS = ["src", "src/a.py", "src/b", "docs", "docs/x.md", "./src/b/", "."]
TEXTS = ["# one\n", "# two\n", "# three\n"]
NOTES = ["done", "void", "superseded: by another"]
VERDICTS = ["approved", "changes_requested", "commented"]

#: One step of the history: (writer, what, a, b, stamp jitter).
Step = tuple[int, int, int, int, int]
steps = st.lists(
    st.tuples(
        st.integers(0, len(WRITERS) - 1),
        st.integers(0, 9),
        st.integers(0, 63),
        st.integers(0, 63),
        st.integers(0, 2),
    ),
    min_size=1,
    max_size=40,
)


def _handover(text: str) -> dict[str, Any]:
    return {"id": hashlib.sha256(text.encode()).hexdigest()[:32], "body": text, "name": text.strip("# \n")}


def _history(plan: list[Step]) -> list[dict[str, Any]]:
    """Signed raw events of the steps after every writer opened every session.

    Each writer's stamps rise; stamps of different streams tie often.
    """
    seqs = [0] * len(WRITERS)
    stamps = [0] * len(WRITERS)
    claims: list[list[str]] = [[] for _ in WRITERS]
    reviews: list[str] = []
    highest = 0
    raws: list[dict[str, Any]] = []
    opening = [(writer, 0, n, 0, 1) for writer in range(len(WRITERS)) for n in range(len(SESSIONS))]
    for number, (writer, what, a, b, jitter) in enumerate(opening + plan):
        if what in (7, 8) and not reviews:
            what = 2
        ident, stream = WRITERS[writer]
        session = SESSIONS[a % len(SESSIONS)]
        body: dict[str, Any]
        if what == 0:
            body = {"kind": "session_opened", "info": {"session": session, "client": "cli", "intent": f"i{b % 3}"}}
        elif what == 1:
            body = {"kind": "session_closed", "session": session}
        elif what == 2:
            scope = [path for bit, path in enumerate(PATHS) if b >> bit & 1] or [PATHS[a % len(PATHS)]]
            claim = f"c-{number:012x}"
            claims[writer].append(claim)
            mode = "advisory" if b % 3 == 0 else "exclusive"
            body = {"kind": "claim_acquired", "claim": claim, "session": session, "scope": scope, "mode": mode}
        elif what == 3:
            own = claims[writer]
            claim = own[b % len(own)] if own else f"c-{b:012x}"
            body = {"kind": "claim_released", "claim": claim}
        elif what == 4:
            body = {"kind": "handover_published", "handover": _handover(TEXTS[b % len(TEXTS)])}
        elif what == 5:
            handover = _handover(TEXTS[b % len(TEXTS)])["id"]
            body = {"kind": "handover_consumed", "handover": handover, "session": session}
        elif what == 6:
            review = f"r-{number:012x}"
            reviews.append(f"{stream}/{review}")
            body = {"kind": "review_requested", "review": review, "session": session, "subject": "b", "scope": ["src"]}
        elif what in (7, 8) and reviews:
            request = reviews[b % len(reviews)]
            if what == 7:
                body = {"kind": "review_answered", "request": request, "session": session}
                body["verdict"] = VERDICTS[b % len(VERDICTS)]
            else:
                body = {"kind": "review_withdrawn", "request": request, "session": session}
                body["note"] = NOTES[b % len(NOTES)]
        else:
            body = {"kind": f"later_kind_{b % 2}", "value": a}
        seqs[writer] += 1
        # a writer has seen some of the others' stamps: its own last one, or the highest, minus a little
        stamps[writer] = max(stamps[writer] + 1, highest + 1 - jitter)
        highest = max(highest, stamps[writer])
        seq, lamport, at = seqs[writer], stamps[writer], "2026-11-25T19:04:05Z"
        if body["kind"].startswith("later_kind"):
            obj = {"v": 1, "stream": stream, "seq": seq, "lamport": lamport, "at": at, "repo": REPO}
            raws.append(sign_object(ident.key, DOMAIN_EVENT, {**obj, "pk": ident.public_key, "body": body}))
        else:
            raws.append(
                sign_event(
                    ident.key, ident.public_key, stream=stream, seq=seq, lamport=lamport, at=at, repo=REPO, body=body
                )
            )
    return raws


def _fold_delivered(deliveries: list[list[dict[str, Any]]], dead: frozenset[str]) -> CooperationState:
    from svc.mesh_udp._journal import Journal

    journal = Journal(
        key=RECEIVER.key,
        public_key=RECEIVER.public_key,
        stream=RECEIVER_STREAM,
        repo=REPO,
        trusted=lambda pk: True,
        expiry_seconds=30,
    )
    for batch in deliveries:
        report, _ = journal.ingest(batch, mono=0.0)
        assert not report.rejected
    assert journal.pending_count() == 0
    return fold(journal.ordered(), dead=dead.__contains__, opaque=journal.opaque_count())


@st.composite
def deliveries(draw: st.DrawFn, raws: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The events in a random order, some twice, cut into random batches."""
    order = draw(st.permutations(raws))
    again = draw(st.lists(st.sampled_from(raws), max_size=8))
    for item in again:
        order.insert(draw(st.integers(0, len(order))), item)
    cuts = sorted(draw(st.lists(st.integers(0, len(order)), max_size=4)))
    bounds = [0, *cuts, len(order)]
    return [order[lo:hi] for lo, hi in itertools.pairwise(bounds)]


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(plan=steps, dead_writers=st.sets(st.integers(0, len(WRITERS) - 1), max_size=2), data=st.data())
def test_any_delivery_order_folds_to_the_same_state(plan: list[Step], dead_writers: set[int], data: Any) -> None:
    raws = _history(plan)
    dead = frozenset(WRITERS[n][1] for n in dead_writers)
    expected = _fold_delivered([raws], dead)
    encoded = msgspec.json.encode(expected)
    for _ in range(2):
        state = _fold_delivered(data.draw(deliveries(raws)), dead)
        assert msgspec.json.encode(state) == encoded
        assert state.digest == expected.digest
