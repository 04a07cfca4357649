"""Properties of the derivation on random plans (hypothesis): waves, next, and independence of file order."""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from svc.layer import load_yaml
from svc.plan import MOVES, derive, load_records, next_ready, priority_rank, seal, stamp_record
from tests.plan._records import PROOF, done, issue, milestone, sealed


def yaml_bytes(record: dict[str, Any]) -> bytes:
    """JSON is YAML, and much faster to write than block YAML."""
    return msgspec.json.encode(record)


PATHS = ["src", "src/a", "src/a/b", "src/b", "docs", "docs/x", "./lib/", "libexec", "tests"]
STAMP = "2026-11-02T10:00:00Z"


@st.composite
def plans(draw: st.DrawFn) -> tuple[list[tuple[str, bytes]], list[tuple[str, bytes]]]:
    """Random milestones and issues as file bytes: mostly acyclic, with cycles, dangling and duplicate names."""
    m_ids = [f"M{n}" for n in range(draw(st.integers(0, 4)))]
    i_ids = [f"I{n:04d}" for n in range(draw(st.integers(0, 18)))]
    milestones: list[tuple[str, bytes]] = []
    for n, mid in enumerate(m_ids):
        earlier = st.sampled_from([*m_ids[:n], "Mx"]) if n else st.just("Mx")
        deps = draw(st.lists(st.one_of(earlier, st.sampled_from(m_ids)), max_size=2)) if draw(st.booleans()) else []
        record = milestone(
            mid,
            order=draw(st.integers(0, 3)),
            depends_on=deps,
            cancelled=draw(st.sampled_from([None, None, None, True])),
            evidence_required=draw(st.sampled_from([[], [], ["x"]])),
        )
        milestones.append((f"{mid}.yaml", yaml_bytes(record)))
    issues: list[tuple[str, bytes]] = []
    for n, iid in enumerate(i_ids):
        backward = st.sampled_from(i_ids[:n]) if n else st.just("I9999")
        anyone = st.sampled_from(i_ids)
        deps = draw(st.lists(st.one_of(backward, backward, backward, anyone, st.just("I9999")), max_size=3))
        state = draw(st.sampled_from(["none", "none", "start", "verify", "done", "hand", "cancel"]))
        fields: dict[str, Any] = {}
        if state == "start":
            fields = sealed(iid, ("started_at", STAMP))
        elif state == "verify":
            fields = sealed(iid, ("started_at", STAMP), ("verified_at", STAMP))
        elif state == "done":
            fields = done(iid) if draw(st.booleans()) else {**done(iid), "evidence": []}
        elif state == "hand":
            fields = {"started_at": STAMP}
        elif state == "cancel":
            fields = {"cancelled": True, **PROOF}
        record = issue(
            iid,
            milestone=draw(st.sampled_from([*m_ids, "Mgone"])) if m_ids else "Mgone",
            priority=draw(st.sampled_from(["p0", "p1", "p2", "p3", "px"])),
            depends_on=deps,
            scope=draw(st.lists(st.sampled_from(PATHS), max_size=2)),
            **fields,
        )
        issues.append((f"{iid}.yaml", yaml_bytes(record)))
    return milestones, issues


SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(plans())
def test_every_placed_issue_is_in_a_later_wave_than_its_dependencies(files: Any) -> None:
    plan = derive(load_records(None, *files))
    placed = {i for w in plan.waves for i in w.issues}
    waves = {i.id: i.wave for i in plan.issues}
    for edge in plan.edges:
        if edge.to in placed:
            assert edge.from_ in placed
            assert waves[edge.to] > waves[edge.from_]
    assert [w.wave for w in plan.waves] == list(range(len(plan.waves)))
    assert all(w.issues == sorted(w.issues) for w in plan.waves)
    assert (len(placed) < len(plan.issues)) == any(f.code == "cycle" for f in plan.findings)


@SETTINGS
@given(plans())
def test_next_is_ready_and_nothing_ready_beats_it(files: Any) -> None:
    plan = derive(load_records(None, *files))
    chosen = next_ready(plan)
    ready = [i for i in plan.issues if i.status == "READY"]
    if chosen is None:
        assert not ready
        return
    assert chosen.status == "READY"
    active = plan.project.active_milestone
    pool = [i for i in ready if i.milestone == active] if active else []
    pool = pool or ready
    assert chosen in pool
    key = (chosen.wave, priority_rank(chosen.priority), chosen.id)
    assert all(key <= (i.wave, priority_rank(i.priority), i.id) for i in pool)


@SETTINGS
@given(plans(), st.randoms(use_true_random=False))
def test_nothing_depends_on_file_order(files: Any, rng: Any) -> None:
    milestones, issues = files
    shuffled_m, shuffled_i = list(milestones), list(issues)
    rng.shuffle(shuffled_m)
    rng.shuffle(shuffled_i)
    assert derive(load_records(None, milestones, issues)) == derive(load_records(None, shuffled_m, shuffled_i))


@SETTINGS
@given(plans())
def test_status_rules_hold(files: Any) -> None:
    plan = derive(load_records(None, *files))
    for i in plan.issues:
        if i.status == "READY":
            assert i.blocked_by == []
        if i.status == "BLOCKED" and not any(b.startswith("milestone:") for b in i.blocked_by):
            assert i.blocked_by
    for m in plan.milestones:
        assert sum(m.counts.by_status.values()) == m.counts.total == len(m.issues)
        if m.blocked_by and m.status not in ("CANCELLED", "SUPERSEDED"):
            assert m.status == "BLOCKED"


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["id", "title", "scope", "updated_at", "evidence", "x_y", "started_at"]),
            st.sampled_from(["a", "'q: x'", "[1, 2]", "2026-09-04", ""]),
        ),
        max_size=6,
    ),
    st.sampled_from(list(MOVES.values())),
    st.booleans(),
)
def test_a_stamp_reads_back_as_exactly_the_stamp(pairs: list[tuple[str, str]], move: Any, crlf: bool) -> None:
    text = "".join(f"{k}: {v}\n" for k, v in dict(pairs).items()).encode()
    if crlf:
        text = text.replace(b"\n", b"\r\n")
    try:
        before = load_yaml(text)
    except Exception:
        return
    if not isinstance(before, dict):
        return
    out = stamp_record(text, "I0001", move, STAMP)
    after = load_yaml(out)
    assert after[move.field] == STAMP
    assert after["updated_at"] == STAMP
    assert after[move.seal_field] == seal(move.event, "I0001", STAMP)
    assert {k: v for k, v in after.items() if k not in (move.field, move.seal_field, "updated_at")} == {
        k: v for k, v in before.items() if k not in (move.field, move.seal_field, "updated_at")
    }
    assert out.endswith(b"\r\n" if crlf and text else b"\n")
