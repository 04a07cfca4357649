"""The derivation of the plan: a pure function of the loaded records (docs/plan.md).

No file I/O (beyond the seal domains svc recognises, its own data read once per process), no clock, no Git.
Every loop walks records in id byte order, so no answer depends on the order files were listed in. Findings
are appended in the order of the steps below, which is part of the contract.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence

from svc._gc import gc_paused
from svc.layer import clip
from svc.plan._load import IssueRecord, MilestoneRecord, Records
from svc.plan._model import (
    ISSUE_STATUSES,
    MILESTONE_STATUSES,
    FindingCode,
    Plan,
    PlanCounts,
    PlanEdge,
    PlanFinding,
    PlanIssue,
    PlanMilestone,
    PlanProject,
    PlanWave,
    vocabulary,
)
from svc.plan._proof import unproven_stamps
from svc.plan._seal import MOVES, Move, known_domains

__all__ = ["derive", "overlap", "priority_rank", "reconcile"]

_OPEN_SKIP = ("DONE", "CANCELLED", "SUPERSEDED")
_MOVES = tuple(MOVES.values())
_EXECUTING = ("DONE", "ACTIVE", "VERIFY")


def priority_rank(priority: str) -> int:
    """`p0`=0, `p1`=1, `p2`=2, anything else 3."""
    return {"p0": 0, "p1": 1, "p2": 2}.get(priority, 3)


def _norm(path: str) -> str:
    return path.removeprefix("./").rstrip("/")


def _prefixes(path: str) -> Iterator[str]:
    """Every prefix of `path` that ends right before a `/`."""
    cut = path.find("/")
    while cut != -1:
        yield path[:cut]
        cut = path.find("/", cut + 1)


def overlap(a: str, b: str) -> bool:
    """Whether two scope paths overlap: equal, or one is the other plus `/...` (`lib` vs `libexec` do not)."""
    a, b = _norm(a), _norm(b)
    return a == b or b.startswith(a + "/") or a.startswith(b + "/")


def _fail(code: FindingCode, subject: str, message: str) -> PlanFinding:
    return PlanFinding(level="FAIL", code=code, subject=clip(subject), message=clip(message))


def _warn(code: FindingCode, subject: str, message: str) -> PlanFinding:
    return PlanFinding(level="WARN", code=code, subject=clip(subject), message=clip(message))


def _layers(count: int, parents: Sequence[Sequence[int]], children: Sequence[Sequence[int]]) -> list[list[int]]:
    """Kahn layering: round k holds every node whose parents were all placed in earlier rounds."""
    waiting = [len(p) for p in parents]
    current = [n for n in range(count) if waiting[n] == 0]
    rounds: list[list[int]] = []
    while current:
        current.sort()
        rounds.append(current)
        following: list[int] = []
        for node in current:
            for child in children[node]:
                waiting[child] -= 1
                if waiting[child] == 0:
                    following.append(child)
        current = following
    return rounds


def _stamp_message(move: Move, stamp: str, domain: str | None) -> str:
    if domain is not None:
        return (
            f"{move.field} {stamp} has no {move.event} event: {move.seal_field} seals it under the domain "
            f"{domain}, not svc's; `svc plan reseal --domain {domain}` re-seals it"
        )
    return (
        f"{move.field} {stamp} has no {move.event} event: {move.seal_field} is absent or does not seal it, "
        f"and only `svc plan {move.transition}` writes the stamp"
    )


def _gap_message(move: Move, stamp: str) -> str:
    return (
        f"{move.field} {stamp} is sealed but the ledger has no {move.event} event for it (the move was "
        "interrupted); the next transition or `svc plan repair-ledger` appends it"
    )


class _Issues:
    """Per-issue facts of steps 1 to 5 (step 1, the proof, is read from each record), indexed like `records`."""

    def __init__(
        self,
        records: Sequence[IssueRecord],
        milestone_ids: set[str],
        unlogged: Collection[tuple[str, str, str]],
        domains: Sequence[str],
        out: list[PlanFinding],
    ) -> None:
        self.records = records
        self.index = {r.id: n for n, r in enumerate(records)}
        count = len(records)
        self.parents: list[list[int]] = [[] for _ in range(count)]
        self.children: list[list[int]] = [[] for _ in range(count)]
        self.dependents: list[list[str]] = [[] for _ in range(count)]
        self.edges: list[tuple[str, str]] = []
        self.done = [not r.cancelled and bool(r.proven[2]) and r.covered for r in records]
        for n, r in enumerate(records):
            if r.depends_on:
                self._edges(n, r, out)
            if not r.milestone:
                out.append(_fail("no_milestone", r.id, "names no milestone"))
            elif r.milestone not in milestone_ids:
                out.append(_fail("unknown_milestone", r.id, f"names milestone {r.milestone}, which does not exist"))
            if not r.cancelled:
                if r.acceptance == 0:
                    message = "has no acceptance criteria; an issue without one is a placeholder"
                    out.append(_fail("no_acceptance", r.id, message))
                if r.validation == 0:
                    out.append(_fail("no_validation", r.id, "names no validation command"))
                if not r.evidence_required:
                    message = "requires no evidence; nothing gates its completion"
                    out.append(_warn("no_evidence_required", r.id, message))
            stamps = (r.started_at, r.verified_at, r.completed_at)
            if stamps != r.proven:
                for unproven in unproven_stamps(r, domains):
                    message = _stamp_message(unproven.move, unproven.stamp, unproven.domain)
                    out.append(_fail("stamp_without_event", r.id, message))
            if unlogged:
                for move, stamp in zip(_MOVES, stamps, strict=True):
                    if (r.id, move.event, stamp) in unlogged:
                        out.append(_warn("ledger_gap", r.id, _gap_message(move, stamp)))
            if r.proven[2] and not r.covered and not r.cancelled:
                missing = ",".join(t for t in r.evidence_required if t not in r.covers)
                message = f"completed_at is set but evidence is missing for {missing}; status stays VERIFY"
                out.append(_warn("evidence_missing", r.id, message))

    def _edges(self, n: int, r: IssueRecord, out: list[PlanFinding]) -> None:
        named: set[str] = set()
        index, parents, children, dependents = self.index, self.parents[n], self.children, self.dependents
        for dep in r.depends_on:
            other = index.get(dep)
            if other is None or other == n:
                if dep == r.id:
                    out.append(_fail("self_dependency", r.id, "depends on itself"))
                else:
                    out.append(_fail("unknown_dependency", r.id, f"depends on {dep}, which is not an issue"))
                continue
            if dep in named:
                out.append(_warn("duplicate_dependency", r.id, f"names {dep} more than once"))
                continue
            named.add(dep)
            parents.append(other)
            children[other].append(n)
            dependents[other].append(r.id)
            self.edges.append((dep, r.id))

    def statuses(self, out: list[PlanFinding]) -> tuple[list[str], list[list[str]]]:
        """Step 5: each issue's status and `blocked_by` (declared dependencies that are not done)."""
        statuses: list[str] = []
        blocked: list[list[str]] = []
        index, done = self.index, self.done
        for n, r in enumerate(self.records):
            waits = [d for d in r.depends_on if (k := index.get(d, n)) != n and not done[k]] if r.depends_on else []
            started, verified, completed = r.proven
            if r.cancelled:
                status = "CANCELLED"
            elif done[n]:
                status = "DONE"
            elif completed or verified:
                status = "VERIFY"
            elif started:
                status = "ACTIVE"
            elif waits:
                status = "BLOCKED"
            else:
                status = "READY"
            if waits and status in _EXECUTING:
                out.append(_fail("premature_execution", r.id, f"is {status} while {','.join(waits)} is not DONE"))
            statuses.append(status)
            blocked.append(waits)
        return statuses, blocked


class _Milestones:
    """Steps 6 and 7: the valid milestone edges and each milestone's rank."""

    def __init__(self, records: Sequence[MilestoneRecord], out: list[PlanFinding]) -> None:
        self.records = records
        self.index = {m.id: n for n, m in enumerate(records)}
        count = len(records)
        self.requires: list[list[str]] = [[] for _ in range(count)]
        self.dependents: list[list[str]] = [[] for _ in range(count)]
        self.edges: list[tuple[str, str]] = []
        parents: list[list[int]] = [[] for _ in range(count)]
        children: list[list[int]] = [[] for _ in range(count)]
        for n, m in enumerate(records):
            for dep in m.depends_on:
                if dep == m.id:
                    out.append(_fail("milestone_self_dependency", m.id, "requires itself"))
                    continue
                other = self.index.get(dep)
                if other is None:
                    out.append(
                        _fail("milestone_unknown_dependency", m.id, f"requires {dep}, which is not a milestone here")
                    )
                    continue
                if dep in self.requires[n]:
                    out.append(_warn("milestone_duplicate_dependency", m.id, f"requires {dep} more than once"))
                    continue
                self.requires[n].append(dep)
                self.dependents[other].append(m.id)
                self.edges.append((dep, m.id))
                parents[n].append(other)
                children[other].append(n)
        self.rank = [0] * count
        ranked: set[int] = set()
        for layer, members in enumerate(_layers(count, parents, children)):
            for n in members:
                self.rank[n] = layer
            ranked.update(members)
        if len(ranked) < count:
            stuck = " ".join(m.id for n, m in enumerate(records) if n not in ranked)
            out.append(_fail("milestone_cycle", stuck, "milestone dependencies form a cycle; no roadmap order exists"))


def _counts(statuses: Iterable[str]) -> PlanCounts:
    by_status = dict.fromkeys(ISSUE_STATUSES, 0)
    total = 0
    for status in statuses:
        total += 1
        by_status[status] = by_status.get(status, 0) + 1
    return PlanCounts(total=total, required=total - by_status["CANCELLED"], by_status=by_status)


def _milestone_status(m: MilestoneRecord, counts: PlanCounts, covered: bool) -> str:
    by = counts.by_status
    if m.cancelled:
        return "CANCELLED"
    if m.superseded_by:
        return "SUPERSEDED"
    if counts.total == 0:
        return "DONE" if m.evidence_required and covered else "PLANNED"
    if counts.required > 0 and by["DONE"] == counts.required:
        return "DONE" if covered else "VERIFY"
    if by["ACTIVE"] or by["VERIFY"] or by["DONE"]:
        return "ACTIVE"
    if by["READY"] == 0:
        return "BLOCKED"
    return "PLANNED"


def _scope_conflicts(issues: Sequence[IssueRecord], statuses: Sequence[str], waves: Sequence[int]) -> list[PlanFinding]:
    """Step 12: one WARN per pair a < b, both READY or ACTIVE in one wave, whose scopes overlap.

    Paths are indexed by their exact form and by every prefix ending before a `/`, so each issue finds the
    issues it overlaps without comparing every pair of the wave.
    """
    groups: dict[int, list[int]] = {}
    for n, status in enumerate(statuses):
        if status in ("READY", "ACTIVE") and issues[n].scope:
            groups.setdefault(waves[n], []).append(n)
    out: list[tuple[int, PlanFinding]] = []
    for members in groups.values():
        if len(members) < 2:
            continue
        exact: dict[str, set[int]] = {}
        below: dict[str, set[int]] = {}
        normal: list[list[str]] = []
        for pos, n in enumerate(members):
            paths = [_norm(p) for p in issues[n].scope]
            normal.append(paths)
            for path in paths:
                exact.setdefault(path, set()).add(pos)
                for prefix in _prefixes(path):
                    below.setdefault(prefix, set()).add(pos)
        for pos, n in enumerate(members):
            first: dict[int, str] = {}
            for written, path in zip(issues[n].scope, normal[pos], strict=True):
                found = exact.get(path, set()) | below.get(path, set())
                for prefix in _prefixes(path):
                    found |= exact.get(prefix, set())
                for other in found:
                    if other > pos and other not in first:
                        first[other] = written
            a = issues[n].id
            for other in sorted(first):
                b = issues[members[other]].id
                message = f"shares {first[other]} with {b}; they may not run concurrently"
                out.append((n, _warn("scope_conflict", a, message)))
    out.sort(key=lambda item: item[0])
    return [finding for _, finding in out]


def _active_milestone(
    milestones: Sequence[MilestoneRecord], statuses: Sequence[str], blocked: Sequence[list[str]], rank: Sequence[int]
) -> str:
    """Step 13: the lowest-ranked unblocked ACTIVE milestone, else the lowest-ranked unblocked unfinished one."""
    for only_active in (True, False):
        best, best_key = "", 0
        for n, m in enumerate(milestones):
            if statuses[n] in ("DONE", "CANCELLED") or blocked[n]:
                continue
            if only_active and statuses[n] != "ACTIVE":
                continue
            key = rank[n] * 1_000_000 + m.order
            if not best or key < best_key:
                best, best_key = m.id, key
        if best:
            return best
    return ""


def reconcile(issues: Iterable[tuple[str, str]], milestones: Iterable[tuple[str, str]]) -> list[PlanFinding]:
    """Step 14: a status outside its vocabulary is an `undeclared_status` failure (issues, then milestones)."""
    out: list[PlanFinding] = []
    for kind, pairs, declared in (
        ("issue", issues, ISSUE_STATUSES),
        ("milestone", milestones, MILESTONE_STATUSES),
    ):
        for subject, status in pairs:
            if status not in declared:
                message = f"is {status}, which the {kind} status vocabulary does not declare"
                out.append(_fail("undeclared_status", subject, message))
    return out


def _sorted_edges(pairs: Iterable[tuple[str, str]]) -> list[PlanEdge]:
    return [PlanEdge(from_=a, to=b) for a, b in sorted(set(pairs))]


def _place(records: Sequence[IssueRecord], facts: _Issues, out: list[PlanFinding]) -> tuple[list[int], list[PlanWave]]:
    """Step 4: each issue's wave (0 when unplaced) and the waves; a `cycle` finding when some are unplaced."""
    wave_of = [0] * len(records)
    waves: list[PlanWave] = []
    placed: set[int] = set()
    for layer, members in enumerate(_layers(len(records), facts.parents, facts.children)):
        for n in members:
            wave_of[n] = layer
        placed.update(members)
        waves.append(PlanWave(wave=layer, issues=[records[n].id for n in members]))
    if len(placed) < len(records):
        stuck = " ".join(r.id for n, r in enumerate(records) if n not in placed)
        out.append(
            _fail("cycle", "graph", f"a dependency cycle prevents these issues from ever becoming ready: {stuck}")
        )
    return wave_of, waves


def _milestone_statuses(
    milestones: Sequence[MilestoneRecord], counts: Sequence[PlanCounts], out: list[PlanFinding]
) -> list[str]:
    """Step 8: each milestone's status from its counts and evidence."""
    statuses: list[str] = []
    for m, tally in zip(milestones, counts, strict=True):
        covered = all(token in m.covers for token in m.evidence_required)
        if tally.required > 0 and tally.by_status["DONE"] == tally.required and not covered:
            missing = ",".join(t for t in m.evidence_required if t not in m.covers)
            message = f"every issue is DONE but milestone evidence is missing for {missing}; status stays VERIFY"
            out.append(_warn("milestone_evidence_missing", m.id, message))
        statuses.append(_milestone_status(m, tally, covered))
    return statuses


def _gate(graph: _Milestones, statuses: list[str], out: list[PlanFinding]) -> list[list[str]]:
    """Step 9: `blocked_by` of every milestone, in rank order so the block cascades; gated ones are BLOCKED."""
    records = graph.records
    blocked: list[list[str]] = [[] for _ in records]
    for n in sorted(range(len(records)), key=lambda k: (graph.rank[k], records[k].id)):
        waits = [d for d in graph.requires[n] if statuses[graph.index[d]] != "DONE"]
        blocked[n] = waits
        if not waits or statuses[n] in ("CANCELLED", "SUPERSEDED"):
            continue
        if statuses[n] in _EXECUTING:
            out.append(
                _fail("milestone_premature", records[n].id, f"is {statuses[n]} while {','.join(waits)} is not DONE")
            )
        statuses[n] = "BLOCKED"
    return blocked


def _gate_issues(
    records: Sequence[IssueRecord],
    graph: _Milestones,
    milestone_blocked: Sequence[list[str]],
    statuses: list[str],
    blocked: list[list[str]],
    out: list[PlanFinding],
) -> set[int]:
    """Step 11: a gated milestone holds back every open issue; the milestones whose counts changed."""
    gated: set[int] = set()
    for n, r in enumerate(records):
        owner = graph.index.get(r.milestone)
        if owner is None or not milestone_blocked[owner] or statuses[n] in ("CANCELLED", "DONE"):
            continue
        if statuses[n] in ("ACTIVE", "VERIFY"):
            waits = ",".join(milestone_blocked[owner])
            message = f"is {statuses[n]} while its milestone {r.milestone} waits on {waits}"
            out.append(_fail("premature_execution", r.id, message))
        statuses[n] = "BLOCKED"
        blocked[n] = [*blocked[n], f"milestone:{r.milestone}"]
        gated.add(owner)
    return gated


def derive(
    records: Records, *, unlogged: Collection[tuple[str, str, str]] = (), domains: Sequence[str] | None = None
) -> Plan:
    """Derive the whole plan from loaded records (the loader's findings come first).

    `unlogged` holds the `(issue, event, stamp)` of sealed stamps whose ledger event an interrupted move
    left out (read by the file layer); each one that the record still holds is a `ledger_gap` finding.
    `domains` are the seal domains of other tools, by default those svc recognises (`known_domains()`, svc's
    own data, read once per process): a `stamp_without_event` whose seal proves under one of them names it
    and the remedy.
    """
    with gc_paused():
        return _derive(records, unlogged, known_domains() if domains is None else domains)


def _derive(records: Records, unlogged: Collection[tuple[str, str, str]], domains: Sequence[str]) -> Plan:
    out: list[PlanFinding] = list(records.findings)
    issue_records, milestone_records = records.issues, records.milestones
    facts = _Issues(issue_records, {m.id for m in milestone_records}, unlogged, domains, out)
    wave_of, waves = _place(issue_records, facts, out)
    statuses, blocked = facts.statuses(out)
    graph = _Milestones(milestone_records, out)
    members: list[list[int]] = [[] for _ in milestone_records]
    for n, r in enumerate(issue_records):
        owner = graph.index.get(r.milestone)
        if owner is not None:
            members[owner].append(n)
    counts = [_counts(statuses[n] for n in group) for group in members]
    mstatus = _milestone_statuses(milestone_records, counts, out)
    mblocked = _gate(graph, mstatus, out)
    for n, m in enumerate(milestone_records):
        if counts[n].total == 0 and mstatus[n] not in _OPEN_SKIP and not mblocked[n]:
            message = "is reachable and has no issues; it is an outcome nobody is executing"
            out.append(_warn("empty_milestone", m.id, message))
    for owner in _gate_issues(issue_records, graph, mblocked, statuses, blocked, out):
        counts[owner] = _counts(statuses[n] for n in members[owner])
    out.extend(_scope_conflicts(issue_records, statuses, wave_of))
    active = _active_milestone(milestone_records, mstatus, mblocked, graph.rank)
    out.extend(
        reconcile(
            zip((r.id for r in issue_records), statuses, strict=True),
            zip((m.id for m in milestone_records), mstatus, strict=True),
        )
    )
    issues = [
        PlanIssue(
            id=r.id,
            milestone=r.milestone,
            status=statuses[n],
            wave=wave_of[n],
            priority=r.priority,
            profile=r.profile,
            parallel_safe=r.parallel_safe,
            title=r.title,
            slug=r.slug,
            depends_on=list(r.depends_on),
            blocked_by=blocked[n],
            dependents=facts.dependents[n],
            scope=list(r.scope),
            serves=list(r.serves),
            objective=r.objective,
            evidence_have=r.evidence_have,
            evidence_need=len(r.evidence_required),
            started_at=r.started_at,
            verified_at=r.verified_at,
            completed_at=r.completed_at,
        )
        for n, r in enumerate(issue_records)
    ]
    milestones = [
        PlanMilestone(
            id=m.id,
            status=mstatus[n],
            order=m.order,
            priority=m.priority,
            title=m.title,
            slug=m.slug,
            version=m.version,
            rank=graph.rank[n],
            depends_on=graph.requires[n],
            blocked_by=mblocked[n],
            dependents=graph.dependents[n],
            claims=list(m.claims),
            counts=counts[n],
            issues=[issue_records[k].id for k in members[n]],
            outcome=m.outcome,
        )
        for n, m in enumerate(milestone_records)
    ]
    project = records.project
    return Plan(
        project=PlanProject(
            name=project.name,
            repository=project.repository,
            default_branch=project.default_branch,
            active_milestone=active,
        ),
        statuses=vocabulary(),
        milestones=milestones,
        issues=issues,
        waves=waves,
        edges=_sorted_edges(facts.edges),
        milestone_edges=_sorted_edges(graph.edges),
        findings=out,
    )
