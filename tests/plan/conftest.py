"""Fixtures of the plan tests: the shared corpus of a real `.ai/` plan layer, and a checkout to move issues in."""

from __future__ import annotations

from pathlib import Path

import pytest

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
