"""The fold: sessions, claims, handovers, reviews, expiry, ranking, overlaps, digest, and the filters."""

from __future__ import annotations

import gc
import hashlib
import itertools
import json
import random
from typing import Any

import msgspec
import pytest

from svc.mesh_udp._coop_views import ClaimState, CooperationState, StateFilter
from svc.mesh_udp._events import Event
from svc.mesh_udp._fold import (
    RUNTIME_STOPPED,
    SESSION_CLOSED,
    conflicts,
    fold,
    normalize_path,
    paths_meet,
    select,
    state_digest,
)

NODE_A = "a" * 32
NODE_B = "b" * 32
RT_1 = "1" * 16
RT_2 = "2" * 16
INST_1 = "c" * 16
INST_2 = "d" * 16
A1 = f"{NODE_A}-{RT_1}-{INST_1}"  # node A, runtime 1
A1_RESTARTED = f"{NODE_A}-{RT_1}-{INST_2}"  # node A, runtime 1, a later instance
A2 = f"{NODE_A}-{RT_2}-{INST_1}"  # node A, runtime 2
B1 = f"{NODE_B}-{RT_1}-{INST_1}"  # node B, runtime 1
HANDOVER_TEXT = "# Handover\n\nNext: the fold.\n"
HANDOVER_ID = hashlib.sha256(HANDOVER_TEXT.encode()).hexdigest()[:32]


class Log:
    """Events written by several streams, each taking the highest stamp seen + 1."""

    def __init__(self) -> None:
        self.lamport = 0
        self.seqs: dict[str, int] = {}
        self.events: list[Event] = []

    def write(self, stream: str, body: dict[str, Any], *, lamport: int | None = None) -> Event:
        seq = self.seqs.get(stream, 0) + 1
        self.seqs[stream] = seq
        self.lamport = lamport if lamport is not None else self.lamport + 1
        event = Event(
            v=1,
            stream=stream,
            seq=seq,
            lamport=self.lamport,
            at="2026-11-25T19:04:05Z",
            repo="0" * 32,
            pk="0" * 64,
            body=body,
            sig="0" * 128,
        )
        self.events.append(event)
        return event

    def open(self, stream: str, session: str, **info: Any) -> Event:
        return self.write(stream, {"kind": "session_opened", "info": {"session": session, "client": "cli", **info}})

    def close(self, stream: str, session: str) -> Event:
        return self.write(stream, {"kind": "session_closed", "session": session})

    def claim(
        self, stream: str, session: str, claim: str, scope: list[str], *, lamport: int | None = None, **extra: Any
    ) -> Event:
        body = {"kind": "claim_acquired", "claim": claim, "session": session, "scope": scope, **extra}
        return self.write(stream, body, lamport=lamport)

    def release(self, stream: str, claim: str) -> Event:
        return self.write(stream, {"kind": "claim_released", "claim": claim})

    def publish(self, stream: str, text: str = HANDOVER_TEXT, **front: Any) -> Event:
        handover = {"id": hashlib.sha256(text.encode()).hexdigest()[:32], "body": text, **front}
        return self.write(stream, {"kind": "handover_published", "handover": handover})

    def consume(self, stream: str, handover: str, session: str) -> Event:
        return self.write(stream, {"kind": "handover_consumed", "handover": handover, "session": session})

    def request(self, stream: str, session: str, review: str, **extra: Any) -> Event:
        body = {"kind": "review_requested", "review": review, "session": session, "subject": "feature/x"}
        return self.write(stream, {**body, "scope": ["src"], **extra})

    def answer(self, stream: str, request: str, session: str, verdict: str = "approved", **extra: Any) -> Event:
        body = {"kind": "review_answered", "request": request, "session": session, "verdict": verdict}
        return self.write(stream, {**body, **extra})

    def withdraw(self, stream: str, request: str, session: str, note: str = "done") -> Event:
        return self.write(stream, {"kind": "review_withdrawn", "request": request, "session": session, "note": note})

    def fold(self, *, dead: frozenset[str] = frozenset(), opaque: int = 0) -> CooperationState:
        return fold(self.events, dead=dead.__contains__, opaque=opaque)


def cid(n: int) -> str:
    return f"c-{n:012x}"


def rid(n: int) -> str:
    return f"r-{n:012x}"


def claim_state(state: CooperationState, key: str) -> ClaimState:
    return next(c.state for c in state.claims if c.key == key)


def session_state(state: CooperationState, key: str) -> str:
    return next(s.state for s in state.sessions if s.key == key)


def review(state: CooperationState, key: str) -> Any:
    return next(r for r in state.reviews if r.key == key)


# Paths ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "meet"),
    [
        ("src", "src", True),
        ("src", "src/a.py", True),
        ("src/a.py", "src", True),
        ("./src/", "src/a.py", True),
        ("src/", "./src", True),
        ("src/a", "src/ab", False),
        ("src/ab", "src/a", False),
        ("src/a.py", "src/b.py", False),
        ("docs", "src", False),
        (".", "src/a.py", True),
        ("./", "docs", True),
        ("a/b/c", "a/b", True),
        ("a/b/c", "a/bc", False),
    ],
)
def test_paths_meet(a: str, b: str, meet: bool) -> None:
    assert paths_meet(a, b) is meet
    assert paths_meet(b, a) is meet


def test_normalize_path() -> None:
    assert normalize_path("./src/") == "src"
    assert normalize_path("././src//") == "src"
    assert normalize_path(".") == ""
    assert normalize_path("src/a.py") == "src/a.py"


# Sessions ------------------------------------------------------------------------------------------------------


def test_sessions_active_then_closed() -> None:
    log = Log()
    log.open(A1, "s1", intent="first")
    log.open(B1, "s2")
    log.close(A1, "s1")
    state = log.fold()
    assert [s.key for s in state.sessions] == [f"{A1}/s1", f"{B1}/s2"]
    first = state.sessions[0]
    assert (first.state, first.runtime, first.node, first.stream) == ("closed", A1[:49], NODE_A, A1)
    assert first.updated_lamport == 3
    assert state.sessions[1].state == "active"


def test_session_latest_info_wins_and_reopens() -> None:
    log = Log()
    log.open(A1, "s1", intent="first", branch="one")
    log.open(A1, "s1", intent="second")
    state = log.fold()
    (session,) = state.sessions
    assert session.info == {"session": "s1", "client": "cli", "intent": "second"}
    assert session.updated_lamport == 2
    log.close(A1, "s1")
    log.open(A1, "s1", intent="third")
    (session,) = log.fold().sessions
    assert (session.state, session.info["intent"]) == ("active", "third")


def test_session_closed_unknown_is_ignored() -> None:
    log = Log()
    log.close(A1, "never")
    assert log.fold().sessions == []


def test_sessions_belong_to_their_stream() -> None:
    log = Log()
    log.open(A1, "s1")
    log.close(B1, "s1")  # another stream's session of the same id
    state = log.fold()
    assert session_state(state, f"{A1}/s1") == "active"
    assert [s.key for s in state.sessions] == [f"{A1}/s1"]


# Claims --------------------------------------------------------------------------------------------------------


def test_claim_held_then_released() -> None:
    log = Log()
    log.open(A1, "s1")
    acquired = log.claim(A1, "s1", cid(1), ["src/a.py"], intent="fix", issue="M1-2")
    state = log.fold()
    (view,) = state.claims
    assert view.key == f"{A1}/{cid(1)}"
    assert (view.stream, view.runtime, view.session) == (A1, A1[:49], f"{A1}/s1")
    assert (view.scope, view.intent, view.mode, view.issue) == (["src/a.py"], "fix", "exclusive", "M1-2")
    assert (view.acquired_lamport, view.acquired_seq) == (acquired.lamport, acquired.seq)
    assert view.state == ClaimState(state="held")
    log.release(A1, cid(1))
    assert claim_state(log.fold(), view.key) == ClaimState(state="released")


def test_claim_view_encodes_absent_intent_and_issue_as_null() -> None:
    log = Log()
    log.open(A1, "s1")
    log.claim(A1, "s1", cid(1), ["src"])
    encoded = msgspec.json.decode(msgspec.json.encode(log.fold().claims[0]))
    assert encoded["intent"] is None
    assert encoded["issue"] is None
    assert encoded["state"] == {"state": "held"}


def test_first_acquisition_of_a_claim_id_wins() -> None:
    log = Log()
    log.open(A1, "s1")
    log.claim(A1, "s1", cid(1), ["src"])
    log.claim(A1, "s1", cid(1), ["docs"])
    (view,) = log.fold().claims
    assert view.scope == ["src"]


def test_release_counts_only_from_the_claims_own_runtime() -> None:
    log = Log()
    log.open(A1, "s1")
    log.claim(A1, "s1", cid(1), ["src"])
    key = f"{A1}/{cid(1)}"
    log.release(A2, key)  # same node, another runtime
    log.release(B1, key)  # another node
    log.release(B1, cid(1))  # a bare id names the releasing stream's own claim
    assert claim_state(log.fold(), key).state == "held"
    log.release(A1_RESTARTED, key)  # the same runtime, a later instance
    assert claim_state(log.fold(), key).state == "released"


def test_release_of_an_unknown_claim_is_ignored() -> None:
    log = Log()
    log.release(A1, cid(9))
    assert log.fold().claims == []


def test_claim_expires_when_its_session_closes() -> None:
    log = Log()
    log.open(A1, "s1")
    log.claim(A1, "s1", cid(1), ["src"])
    log.claim(A1, "s1", cid(2), ["docs"])
    log.release(A1, cid(2))
    log.close(A1, "s1")
    state = log.fold()
    assert claim_state(state, f"{A1}/{cid(1)}") == ClaimState(state="expired", detail=SESSION_CLOSED)
    assert claim_state(state, f"{A1}/{cid(2)}") == ClaimState(state="released")


def test_claim_of_a_closed_session_stays_expired_when_the_session_reopens() -> None:
    log = Log()
    log.open(A1, "s1")
    log.claim(A1, "s1", cid(1), ["src"])
    log.close(A1, "s1")
    log.open(A1, "s1")
    assert claim_state(log.fold(), f"{A1}/{cid(1)}") == ClaimState(state="expired", detail=SESSION_CLOSED)


def test_claim_without_an_open_session_expires() -> None:
    log = Log()
    log.claim(A1, "nobody", cid(1), ["src"])
    assert claim_state(log.fold(), f"{A1}/{cid(1)}") == ClaimState(state="expired", detail=SESSION_CLOSED)


def test_dead_stream_expires_sessions_claims_and_open_reviews() -> None:
    log = Log()
    log.open(A1, "s1")
    log.open(B1, "t1")
    log.claim(A1, "s1", cid(1), ["src"])
    log.claim(A1, "s1", cid(2), ["docs"])
    log.release(A1, cid(2))
    log.request(A1, "s1", rid(1))
    log.request(A1, "s1", rid(2))
    log.answer(B1, f"{A1}/{rid(2)}", "t1")
    log.request(B1, "t1", rid(3))
    state = log.fold(dead=frozenset({A1}))
    assert session_state(state, f"{A1}/s1") == "expired"
    assert session_state(state, f"{B1}/t1") == "active"
    assert claim_state(state, f"{A1}/{cid(1)}") == ClaimState(state="expired", detail=RUNTIME_STOPPED)
    assert claim_state(state, f"{A1}/{cid(2)}") == ClaimState(state="released")
    first = review(state, f"{A1}/{rid(1)}")
    assert (first.state, first.ending) == ("expired", RUNTIME_STOPPED)
    assert review(state, f"{A1}/{rid(2)}").state == "answered"
    assert review(state, f"{B1}/{rid(3)}").state == "open"


def test_closed_session_of_a_dead_stream_stays_closed() -> None:
    log = Log()
    log.open(A1, "s1")
    log.claim(A1, "s1", cid(1), ["src"])
    log.close(A1, "s1")
    state = log.fold(dead=frozenset({A1}))
    assert session_state(state, f"{A1}/s1") == "closed"
    assert claim_state(state, f"{A1}/{cid(1)}").detail == SESSION_CLOSED


def test_dead_is_asked_once_per_stream() -> None:
    log = Log()
    for n in range(5):
        log.open(A1, f"s{n}")
        log.claim(A1, f"s{n}", cid(n), [f"src/{n}"])
    asked: list[str] = []

    def dead(stream: str) -> bool:
        asked.append(stream)
        return False

    fold(log.events, dead=dead, opaque=0)
    assert asked == [A1]


# Claim standing: the ranking of exclusive claims ---------------------------------------------------------------


def test_exclusive_claims_meeting_rank_by_lamport_then_stream_then_seq() -> None:
    log = Log()
    log.open(A1, "s1")
    log.open(B1, "t1")
    log.claim(B1, "t1", cid(2), ["src/a.py"], lamport=10)
    log.claim(A1, "s1", cid(1), ["src"], lamport=10)  # same stamp, A1 < B1: A1 wins
    state = log.fold()
    winner, loser = f"{A1}/{cid(1)}", f"{B1}/{cid(2)}"
    assert claim_state(state, winner) == ClaimState(state="held")
    assert claim_state(state, loser) == ClaimState(state="conflicted", detail=winner)


def test_earlier_stamp_wins_over_lower_stream() -> None:
    log = Log()
    log.open(A1, "s1")
    log.open(B1, "t1")
    log.claim(B1, "t1", cid(2), ["src"])
    log.claim(A1, "s1", cid(1), ["src"])
    state = log.fold()
    assert claim_state(state, f"{A1}/{cid(1)}") == ClaimState(state="conflicted", detail=f"{B1}/{cid(2)}")


def test_conflicted_claim_wins_nothing() -> None:
    log = Log()
    for stream, session in ((A1, "s1"), (A2, "s2"), (B1, "t1")):
        log.open(stream, session)
    log.claim(A1, "s1", cid(1), ["src/a.py"])
    log.claim(A2, "s2", cid(2), ["src/a.py", "docs"])  # meets cid(1): conflicted
    log.claim(B1, "t1", cid(3), ["docs/x.md"])  # meets only the conflicted cid(2): held
    state = log.fold()
    assert claim_state(state, f"{A2}/{cid(2)}").detail == f"{A1}/{cid(1)}"
    assert claim_state(state, f"{B1}/{cid(3)}") == ClaimState(state="held")


def test_conflict_names_the_earliest_winner_met() -> None:
    log = Log()
    for stream, session in ((A1, "s1"), (A2, "s2"), (B1, "t1")):
        log.open(stream, session)
    log.claim(A1, "s1", cid(1), ["docs"])
    log.claim(A2, "s2", cid(2), ["src"])
    log.claim(B1, "t1", cid(3), ["src/a.py", "docs/b.md"])
    state = log.fold()
    assert claim_state(state, f"{B1}/{cid(3)}").detail == f"{A1}/{cid(1)}"


def test_claims_of_one_session_never_conflict() -> None:
    log = Log()
    log.open(A1, "s1")
    log.claim(A1, "s1", cid(1), ["src"])
    log.claim(A1, "s1", cid(2), ["src/a.py"])
    state = log.fold()
    assert {c.state.state for c in state.claims} == {"held"}
    assert state.overlaps == []


def test_same_session_winner_does_not_hide_another_sessions_winner() -> None:
    log = Log()
    log.open(A1, "s1")
    log.open(B1, "t1")
    log.claim(A1, "s1", cid(1), ["src"])
    log.claim(B1, "t1", cid(2), ["docs"])
    log.claim(A1, "s1", cid(3), ["src/a.py", "docs/b.md"])
    state = log.fold()
    assert claim_state(state, f"{A1}/{cid(3)}") == ClaimState(state="conflicted", detail=f"{B1}/{cid(2)}")


def test_released_expired_and_advisory_claims_win_nothing() -> None:
    log = Log()
    for stream, session in ((A1, "s1"), (A2, "s2"), (B1, "t1")):
        log.open(stream, session)
    log.claim(A1, "s1", cid(1), ["src"])
    log.release(A1, cid(1))
    log.claim(A2, "s2", cid(2), ["src"], mode="advisory")
    log.claim(B1, "t1", cid(3), ["src"])
    state = log.fold()
    assert claim_state(state, f"{B1}/{cid(3)}") == ClaimState(state="held")
    dead = log.fold(dead=frozenset({B1}))
    assert claim_state(dead, f"{B1}/{cid(3)}").detail == RUNTIME_STOPPED


def test_expired_winner_lets_the_next_claim_hold() -> None:
    log = Log()
    log.open(A1, "s1")
    log.open(B1, "t1")
    log.claim(A1, "s1", cid(1), ["src"])
    log.claim(B1, "t1", cid(2), ["src"])
    assert claim_state(log.fold(), f"{B1}/{cid(2)}").state == "conflicted"
    assert claim_state(log.fold(dead=frozenset({A1})), f"{B1}/{cid(2)}") == ClaimState(state="held")


def _contest() -> Log:
    log = Log()
    streams = [A1, A2, B1, A1_RESTARTED]
    for n, stream in enumerate(streams):
        log.open(stream, f"s{n}")
    paths = ["src", "src/a.py", "src/b", "docs", "docs/x.md", ".", "src/b/c.py"]
    rng = random.Random(7)
    for n in range(24):
        index = rng.randrange(len(streams))
        scope = rng.sample(paths, rng.randint(1, 2))
        mode = "advisory" if n % 5 == 4 else "exclusive"
        lamport = log.lamport + rng.choice([0, 1]) if n else None  # equal stamps across streams happen
        stream = streams[index]
        if lamport is not None and lamport == log.lamport and log.events[-1].stream == stream:
            lamport += 1
        body = {"kind": "claim_acquired", "claim": cid(n), "session": f"s{index}", "scope": scope, "mode": mode}
        log.write(stream, body, lamport=lamport)
    return log


def test_conflicted_winner_identical_whatever_the_delivery_order() -> None:
    log = _contest()
    expected = log.fold()
    assert any(c.state.state == "conflicted" for c in expected.claims)
    rng = random.Random(11)
    for _ in range(30):
        shuffled = list(log.events)
        rng.shuffle(shuffled)
        shuffled += rng.sample(shuffled, 5)  # duplicated deliveries
        assert fold(shuffled, dead=lambda _: False, opaque=0) == expected


def test_every_order_of_three_contending_claims_names_one_winner() -> None:
    log = Log()
    for stream, session in ((A1, "s1"), (A2, "s2"), (B1, "t1")):
        log.open(stream, session)
    log.claim(B1, "t1", cid(3), ["src/a.py"], lamport=9)
    log.claim(A2, "s2", cid(2), ["src"], lamport=9)
    log.claim(A1, "s1", cid(1), ["src/a.py"], lamport=10)
    states = {
        msgspec.json.encode(fold(list(p), dead=lambda _: False, opaque=0)) for p in itertools.permutations(log.events)
    }
    assert len(states) == 1
    state = msgspec.json.decode(states.pop(), type=CooperationState)
    winner = f"{A2}/{cid(2)}"
    assert claim_state(state, winner).state == "held"
    assert claim_state(state, f"{B1}/{cid(3)}").detail == winner
    assert claim_state(state, f"{A1}/{cid(1)}").detail == winner


# Overlaps ------------------------------------------------------------------------------------------------------


def test_overlaps_pair_live_claims_not_both_exclusive() -> None:
    log = Log()
    for stream, session in ((A1, "s1"), (A2, "s2"), (B1, "t1")):
        log.open(stream, session)
    log.claim(A1, "s1", cid(1), ["./src/", "docs"])  # exclusive
    log.claim(A2, "s2", cid(2), ["src/a.py", "docs/x.md", "bin"], mode="advisory")
    log.claim(B1, "t1", cid(3), ["src/ab", "bin/run"], mode="advisory")
    state = log.fold()
    one, two, three = f"{A1}/{cid(1)}", f"{A2}/{cid(2)}", f"{B1}/{cid(3)}"
    pairs = {(o.first, o.second): o.paths for o in state.overlaps}
    assert pairs == {
        (one, two): [["./src/", "src/a.py"], ["docs", "docs/x.md"]],
        (one, three): [["./src/", "src/ab"]],
        (two, three): [["bin", "bin/run"]],
    }
    assert all(o.first < o.second for o in state.overlaps)


def test_no_overlap_between_exclusives_same_session_or_ended_claims() -> None:
    log = Log()
    for stream, session in ((A1, "s1"), (A2, "s2"), (B1, "t1")):
        log.open(stream, session)
    log.claim(A1, "s1", cid(1), ["src"])
    log.claim(A2, "s2", cid(2), ["src"])  # exclusive too: conflicted, not an overlap
    log.claim(A1, "s1", cid(3), ["src"], mode="advisory")  # the same session as cid(1)
    log.claim(B1, "t1", cid(4), ["src"], mode="advisory")
    log.release(B1, cid(4))
    state = log.fold()
    pairs = {(o.first, o.second) for o in state.overlaps}
    assert pairs == {(f"{A1}/{cid(3)}", f"{A2}/{cid(2)}")}  # the conflicted claim is live


def test_overlap_leaves_when_a_claim_expires() -> None:
    log = Log()
    log.open(A1, "s1")
    log.open(B1, "t1")
    log.claim(A1, "s1", cid(1), ["src"], mode="advisory")
    log.claim(B1, "t1", cid(2), ["src/a.py"], mode="advisory")
    assert len(log.fold().overlaps) == 1
    assert log.fold(dead=frozenset({B1})).overlaps == []


def test_conflicts_lists_live_exclusive_claims_of_other_sessions() -> None:
    log = Log()
    for stream, session in ((A1, "s1"), (A2, "s2"), (B1, "t1")):
        log.open(stream, session)
    log.claim(A1, "s1", cid(1), ["src/a.py"])
    log.claim(A2, "s2", cid(2), ["src"])  # conflicted: still live
    log.claim(B1, "t1", cid(3), ["src"], mode="advisory")
    log.claim(B1, "t1", cid(4), ["docs"])
    log.claim(B1, "t1", cid(5), ["src/z"])
    log.release(B1, cid(5))
    state = log.fold()
    keys = [c.key for c in conflicts(state, session=f"{B1}/t1", scope=["./src/"])]
    assert keys == [f"{A1}/{cid(1)}", f"{A2}/{cid(2)}"]
    assert [c.key for c in conflicts(state, session=f"{A1}/s1", scope=["src/a.py"])] == [f"{A2}/{cid(2)}"]
    assert conflicts(state, session=f"{A1}/s1", scope=["bin"]) == []
    assert [c.key for c in conflicts(state, session=f"{A1}/s1", scope=["."])] == [f"{A2}/{cid(2)}", f"{B1}/{cid(4)}"]


# Handovers -----------------------------------------------------------------------------------------------------


def test_first_publication_wins_and_consumers_are_appended() -> None:
    log = Log()
    log.publish(A1, name="one", branch="main")
    log.publish(B1, name="two")
    log.consume(B1, HANDOVER_ID, "t1")
    log.consume(A2, HANDOVER_ID, "s2")
    log.consume(B1, HANDOVER_ID, "t1")  # the same session again
    log.consume(B1, "f" * 32, "t1")  # an unknown handover
    (view,) = log.fold().handovers
    assert (view.id, view.stream, view.runtime, view.published_lamport) == (HANDOVER_ID, A1, A1[:49], 1)
    assert view.handover["name"] == "one"
    assert view.handover["body"] == HANDOVER_TEXT
    assert view.consumed_by == [f"{B1}/t1", f"{A2}/s2"]


# Reviews -------------------------------------------------------------------------------------------------------


def test_review_open_then_answered_with_answers_appended() -> None:
    log = Log()
    log.request(A1, "s1", rid(1), issue="M1-2", reviewer=B1[:49])
    key = f"{A1}/{rid(1)}"
    view = review(log.fold(), key)
    assert (view.state, view.session, view.subject, view.scope) == ("open", f"{A1}/s1", "feature/x", ["src"])
    assert (view.issue, view.reviewer, view.answers, view.requested_lamport) == ("M1-2", B1[:49], [], 1)
    log.answer(B1, key, "t1", "changes_requested", note="rename it")
    log.answer(A2, key, "s2", "approved")
    view = review(log.fold(), key)
    assert view.state == "answered"
    assert [(a.session, a.verdict, a.note) for a in view.answers] == [
        (f"{B1}/t1", "changes_requested", "rename it"),
        (f"{A2}/s2", "approved", None),
    ]


def test_a_session_does_not_answer_its_own_request() -> None:
    log = Log()
    log.request(A1, "s1", rid(1))
    log.answer(A1, f"{A1}/{rid(1)}", "s1")
    assert review(log.fold(), f"{A1}/{rid(1)}").state == "open"


def test_withdraw_only_from_the_requesting_runtime_final_and_never_an_answer() -> None:
    log = Log()
    log.request(A1, "s1", rid(1))
    key = f"{A1}/{rid(1)}"
    log.withdraw(B1, key, "t1", "void")  # another runtime: ignored
    log.withdraw(A2, key, "s2", "void")  # another runtime of the same node: ignored
    assert review(log.fold(), key).state == "open"
    log.answer(B1, key, "t1", "commented")
    log.withdraw(A1_RESTARTED, key, "s9", "superseded: by r-2")  # a session of the requesting runtime
    log.withdraw(A1, key, "s1", "done")  # already withdrawn: ignored
    log.answer(B1, key, "t1", "approved")  # after the withdrawal: ignored
    view = review(log.fold(), key)
    assert (view.state, view.ending) == ("withdrawn", "superseded: by r-2")
    assert [a.verdict for a in view.answers] == ["commented"]
    assert review(log.fold(dead=frozenset({A1})), key).state == "withdrawn"


def test_withdrawn_unanswered_request_is_not_an_answer() -> None:
    log = Log()
    log.request(A1, "s1", rid(1))
    log.withdraw(A1, f"{A1}/{rid(1)}", "s1", "done")
    view = review(log.fold(), f"{A1}/{rid(1)}")
    assert (view.state, view.answers, view.ending) == ("withdrawn", [], "done")


def test_answer_to_an_unknown_request_is_ignored() -> None:
    log = Log()
    log.answer(B1, f"{A1}/{rid(1)}", "t1")
    assert log.fold().reviews == []


# Order, duplicates, opaque -------------------------------------------------------------------------------------


def test_unsorted_and_duplicated_events_fold_as_sorted() -> None:
    log = _contest()
    log.publish(A1)
    log.request(B1, "s2", rid(1))
    expected = log.fold()
    doubled = list(reversed(log.events)) + log.events[:10]
    assert fold(doubled, dead=lambda _: False, opaque=0) == expected


def test_a_repeated_event_identity_keeps_the_first_in_order() -> None:
    log = Log()
    log.open(A1, "s1", intent="first")
    twin = log.events[0]
    later = msgspec.structs.replace(
        twin, lamport=5, body={"kind": "session_opened", "info": {"session": "s1", "client": "cli", "intent": "twin"}}
    )
    state = fold([twin, later], dead=lambda _: False, opaque=0)
    assert state.sessions[0].info["intent"] == "first"
    assert state == fold([later, twin], dead=lambda _: False, opaque=0)


def test_fold_leaves_the_collector_as_it_found_it() -> None:
    log = _contest()
    assert gc.isenabled()
    log.fold()
    assert gc.isenabled()
    gc.disable()
    try:
        log.fold()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_opaque_kinds_are_counted_not_folded() -> None:
    log = Log()
    log.open(A1, "s1")
    log.write(A1, {"kind": "future_thing", "session": "s1"})
    log.write(A1, {"kind": "session_closed"})  # a known kind with a bad shape is never held: ignored here
    state = log.fold(opaque=1)
    assert state.opaque_events == 1
    assert session_state(state, f"{A1}/s1") == "active"


def test_empty_journal() -> None:
    state = fold([], dead=lambda _: False, opaque=0)
    assert (state.sessions, state.claims, state.overlaps, state.handovers, state.reviews) == ([], [], [], [], [])
    assert len(state.digest) == 32


# Digest --------------------------------------------------------------------------------------------------------


def _rich() -> Log:
    log = Log()
    log.open(A1, "s1", branch="main", intent="fold")
    log.open(B1, "t1")
    log.claim(A1, "s1", cid(1), ["src/svc"], intent="fold")
    log.claim(B1, "t1", cid(2), ["src/svc/mesh_udp"], mode="advisory")
    log.publish(A1, name="one")
    log.consume(B1, HANDOVER_ID, "t1")
    log.request(A1, "s1", rid(1))
    log.answer(B1, f"{A1}/{rid(1)}", "t1")
    return log


def test_digest_is_the_canonical_json_of_the_state_with_an_empty_digest() -> None:
    state = _rich().fold(opaque=2)
    plain = msgspec.to_builtins(state)
    plain["digest"] = ""
    text = json.dumps(plain, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    assert state.digest == hashlib.sha256(text).hexdigest()[:32]
    assert state_digest(state) == state.digest
    assert b'"state":{"state":"held"}' in text


def test_digest_pinned() -> None:
    assert _rich().fold(opaque=2).digest == "6dc6f75d01ae694aff79c472c190d01f"


def test_same_input_same_digest() -> None:
    assert _rich().fold().digest == _rich().fold().digest
    assert _rich().fold() == _rich().fold()


@pytest.mark.parametrize(
    "change",
    ["session", "claim", "overlap", "handover", "review", "opaque", "dead"],
)
def test_a_change_in_any_collection_changes_the_digest(change: str) -> None:
    base = _rich()
    before = base.fold()
    log = _rich()
    opaque = 0
    dead: frozenset[str] = frozenset()
    if change == "session":
        log.open(B1, "t1", intent="other")
    elif change == "claim":
        log.release(A1, cid(1))
    elif change == "overlap":
        log.claim(B1, "t1", cid(3), ["docs"], mode="advisory")
        log.claim(A1, "s1", cid(4), ["docs/a.md"], mode="advisory")
    elif change == "handover":
        log.consume(A2, HANDOVER_ID, "s2")
    elif change == "review":
        log.withdraw(A1, f"{A1}/{rid(1)}", "s1", "done")
    elif change == "opaque":
        opaque = 1
    else:
        dead = frozenset({B1})
    after = log.fold(opaque=opaque, dead=dead)
    assert after.digest != before.digest
    if change == "overlap":
        assert len(after.overlaps) == 2


# Filters -------------------------------------------------------------------------------------------------------


def _peers() -> Log:
    log = Log()
    log.open(A1, "s1", branch="Feature/Fold", issue="M1-2")  # 1
    log.open(A1, "old")  # 2
    log.open(B1, "t1", intent="Docs pass")  # 3
    log.open(A2, "s1")  # 4: the same bare id on another runtime
    log.close(A1, "old")  # 5
    log.claim(A1, "s1", cid(1), ["src/svc/mesh_udp/_fold.py"], intent="write the fold")  # 6
    log.claim(B1, "t1", cid(2), ["docs"], mode="advisory", issue="M1-3")  # 7
    log.claim(A2, "s1", cid(3), ["docs/mesh.md"], mode="advisory")  # 8
    log.claim(B1, "t1", cid(4), ["bin"])  # 9
    log.release(B1, cid(4))  # 10
    log.publish(A1, name="one", branch="feature/fold")  # 11
    log.publish(B1, text="other", name="two", issue="M9")  # 12
    log.consume(B1, HANDOVER_ID, "t1")  # 13
    log.request(A1, "s1", rid(1), issue="M1-2")  # 14
    log.request(B1, "t1", rid(2), subject="PR#42 Docs")  # 15
    log.answer(A1, f"{B1}/{rid(2)}", "s1")  # 16
    return log


def _keys(state: CooperationState) -> dict[str, list[str]]:
    return {
        "sessions": [s.key for s in state.sessions],
        "claims": [c.key for c in state.claims],
        "overlaps": [f"{o.first}+{o.second}" for o in state.overlaps],
        "handovers": [h.id for h in state.handovers],
        "reviews": [r.key for r in state.reviews],
    }


def _select(**filters: Any) -> dict[str, list[str]]:
    state = _peers().fold()
    chosen = select(state, msgspec.convert(filters, StateFilter))
    assert chosen.digest == state.digest
    assert chosen.opaque_events == state.opaque_events
    return _keys(chosen)


OTHER_ID = hashlib.sha256(b"other").hexdigest()[:32]


def test_select_default_summary_lists_only_active_sessions() -> None:
    keys = _select()
    assert keys["sessions"] == [f"{A1}/s1", f"{A2}/s1", f"{B1}/t1"]
    assert len(keys["claims"]) == 4
    full = _select(view="full")
    assert full["sessions"] == [f"{A1}/old", f"{A1}/s1", f"{A2}/s1", f"{B1}/t1"]


def test_select_live_claims() -> None:
    assert _select(claims="live")["claims"] == [f"{A1}/{cid(1)}", f"{A2}/{cid(3)}", f"{B1}/{cid(2)}"]


def test_select_after() -> None:
    keys = _select(view="full", after=4)
    assert keys["sessions"] == [f"{A1}/old"]  # closed at 5
    assert _select(view="full", after=5)["sessions"] == []
    keys = _select(view="full", after=6)
    assert keys["sessions"] == []
    assert keys["claims"] == [f"{A2}/{cid(3)}", f"{B1}/{cid(2)}", f"{B1}/{cid(4)}"]
    assert keys["handovers"] == sorted([HANDOVER_ID, OTHER_ID])
    assert keys["reviews"] == [f"{A1}/{rid(1)}", f"{B1}/{rid(2)}"]
    keys = _select(after=14)
    assert keys["claims"] == []
    assert keys["handovers"] == []
    assert keys["reviews"] == [f"{B1}/{rid(2)}"]
    assert keys["overlaps"] == []


def test_select_session_by_key_or_bare_id() -> None:
    by_key = _select(session=f"{A1}/s1")
    assert by_key["sessions"] == [f"{A1}/s1"]
    assert by_key["claims"] == [f"{A1}/{cid(1)}"]
    assert by_key["reviews"] == [f"{A1}/{rid(1)}", f"{B1}/{rid(2)}"]  # its request and the one it answered
    assert by_key["handovers"] == []
    bare = _select(session="s1")
    assert bare["sessions"] == [f"{A1}/s1", f"{A2}/s1"]
    assert bare["claims"] == [f"{A1}/{cid(1)}", f"{A2}/{cid(3)}"]
    taker = _select(session="t1")
    assert taker["handovers"] == [HANDOVER_ID]
    assert taker["overlaps"] == [f"{A2}/{cid(3)}+{B1}/{cid(2)}"]


def test_select_runtime_by_key_or_node_id() -> None:
    keys = _select(runtime=B1[:49])
    assert keys["sessions"] == [f"{B1}/t1"]
    assert keys["claims"] == [f"{B1}/{cid(2)}", f"{B1}/{cid(4)}"]
    assert keys["handovers"] == [OTHER_ID]
    assert keys["reviews"] == [f"{B1}/{rid(2)}"]
    node = _select(runtime=NODE_A)  # a node id matches its first runtime: A1 (runtime 1...1)
    assert node["sessions"] == [f"{A1}/s1"]
    assert node["claims"] == [f"{A1}/{cid(1)}"]
    assert _select(runtime="e" * 32)["sessions"] == []


def test_select_kind_keeps_one_collection() -> None:
    keys = _select(kind="claims")
    assert len(keys["claims"]) == 4
    assert keys["sessions"] == keys["overlaps"] == keys["handovers"] == keys["reviews"] == []
    overlaps = _select(kind="overlaps")
    assert overlaps["overlaps"] == [f"{A2}/{cid(3)}+{B1}/{cid(2)}"]
    assert overlaps["claims"] == []


def test_select_limit_keeps_the_newest_by_stamp() -> None:
    keys = _select(limit=1, view="full")
    assert keys["sessions"] == [f"{A1}/old"]  # updated at 5
    assert keys["claims"] == [f"{B1}/{cid(4)}"]  # acquired at 9
    assert keys["handovers"] == [OTHER_ID]
    assert keys["reviews"] == [f"{B1}/{rid(2)}"]
    two = _select(limit=2)
    assert two["claims"] == [f"{A2}/{cid(3)}", f"{B1}/{cid(4)}"]  # still in key order
    assert _select(limit=0)["claims"] == []


def test_select_open() -> None:
    keys = _select(open=True, view="full")
    assert keys["sessions"] == [f"{A1}/s1", f"{A2}/s1", f"{B1}/t1"]
    assert keys["claims"] == [f"{A1}/{cid(1)}", f"{A2}/{cid(3)}", f"{B1}/{cid(2)}"]
    assert keys["handovers"] == [OTHER_ID]
    assert keys["reviews"] == [f"{A1}/{rid(1)}"]


def test_select_matching_is_case_insensitive_text() -> None:
    assert _select(matching="MESH_UDP/_FOLD")["claims"] == [f"{A1}/{cid(1)}"]  # a path
    fold_branch = _select(matching="feature/FOLD")
    assert fold_branch["sessions"] == [f"{A1}/s1"]  # a branch
    assert fold_branch["handovers"] == [HANDOVER_ID]
    issue = _select(matching="m1-3")
    assert issue["claims"] == [f"{B1}/{cid(2)}"]  # an issue
    assert issue["sessions"] == []
    assert _select(matching="WRITE THE")["claims"] == [f"{A1}/{cid(1)}"]  # an intent
    assert _select(matching="docs pass")["sessions"] == [f"{B1}/t1"]
    subject = _select(matching="pr#42")
    assert subject["reviews"] == [f"{B1}/{rid(2)}"]  # a subject
    assert subject["claims"] == []


def test_select_filters_combine() -> None:
    keys = _select(runtime=B1[:49], claims="live", kind="claims")
    assert keys["claims"] == [f"{B1}/{cid(2)}"]
