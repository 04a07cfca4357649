"""The version comparison of the lease takeover: a holder running an older svc is taken over (PEP 440)."""

from __future__ import annotations

import pytest

from svc.host import older


@pytest.mark.parametrize(
    ("theirs", "ours"),
    [
        ("0.1.0rc1", "0.1.0"),
        ("0.1.0", "0.1.1.dev1"),
        ("0.1.0.dev1", "0.1.0rc1"),
        ("0.0.9", "0.1.0"),
    ],
)
def test_an_older_version_is_older(theirs: str, ours: str) -> None:
    assert older(theirs, ours)


@pytest.mark.parametrize(
    ("theirs", "ours"),
    [
        ("0.1.0", "0.1.0rc1"),
        ("0.1.0", "0.1.0"),
        ("0.1.0", "0.1.0.0"),
        ("0.1.1.dev1", "0.1.0"),
    ],
)
def test_a_same_or_newer_version_is_not_older(theirs: str, ours: str) -> None:
    assert not older(theirs, ours)


@pytest.mark.parametrize(("theirs", "ours"), [("not a version", "0.1.0"), ("0.1.0", "main"), ("", "0.1.0")])
def test_an_unparseable_version_is_never_older(theirs: str, ours: str) -> None:
    assert not older(theirs, ours)
