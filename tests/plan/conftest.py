"""Fixtures of the plan tests: the shared corpus of a real `.ai/` plan layer, a checkout to move issues in, and
counts of what a read parsed, opened and derived."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from svc.layer import _read as read_module
from svc.plan import Plan, Records, _cache, _parallel, _store, derive
from svc.plan._load import Parsed, RecordKind, parse_record
from tests.conftest import make_checkout
from tests.plan._records import active, done, issue, milestone, write_layer


@pytest.fixture
def corpus(corpus_copy: Path) -> Path:
    """The reference layer's checkout root: this session's copy of the shared corpus."""
    return corpus_copy


def small_plan() -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """Two milestones and six issues covering every move: I0001/I0002 READY, I0003 ACTIVE, ..."""
    milestones = [milestone("M1", order=1), milestone("M2", order=2, depends_on=["M1"])]
    issues = [
        issue("I0001", milestone="M1"),
        issue("I0002", milestone="M1"),
        issue("I0003", milestone="M1", **active("I0003")),
        issue("I0004", milestone="M1", depends_on=["I0001"]),
        issue("I0005", milestone="M1", **done("I0005")),
        issue("I0006", milestone="M2"),
    ]
    return milestones, issues


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A Git checkout whose layer holds `small_plan()`."""
    root = make_checkout(tmp_path / "checkout", layer=False)
    write_layer(root, *small_plan())
    return root


#: The project directory of the layers the plan tests write.
PROJECT = Path(".ai/repo/project")
#: How far ahead `later` moves the racy rule's clock.
AHEAD_NS = 10 * 10**9


@dataclass
class Counts:
    """What the reads since the last `clear` parsed (file names), opened (records' repository-relative paths),
    and how many plans they derived."""

    parsed: list[str] = field(default_factory=list)
    opened: list[str] = field(default_factory=list)
    derived: int = 0

    def clear(self) -> None:
        self.parsed.clear()
        self.opened.clear()
        self.derived = 0


@pytest.fixture
def later(monkeypatch: pytest.MonkeyPatch) -> None:
    """The racy rule's clock 10 s ahead: every file the test writes is old enough to be stored."""
    monkeypatch.setattr(_cache, "_now_ns", lambda: time.time_ns() + AHEAD_NS)


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> Counts:
    """Count every record parse and every file the reading rule reads through a descriptor."""
    seen = Counts()

    def parse(kind: RecordKind, name: str, data: bytes, base: str = ".ai/repo/project") -> Parsed:
        seen.parsed.append(name)
        return parse_record(kind, name, data, base)

    real_read = read_module._read_fd_stat

    def read(fd: int, name: str, limit: int) -> tuple[os.stat_result, bytes]:
        if name.startswith(f"{PROJECT}/"):
            seen.opened.append(name)
        return real_read(fd, name, limit)

    def derived(records: Records, **kw: Any) -> Plan:
        seen.derived += 1
        return derive(records, **kw)

    monkeypatch.setattr(_cache, "parse_record", parse)
    monkeypatch.setattr(_parallel, "parse_record", parse)
    monkeypatch.setattr(_store, "parse_record", parse)
    monkeypatch.setattr(_store, "derive", derived)
    monkeypatch.setattr(read_module, "_read_fd_stat", read)
    return seen
