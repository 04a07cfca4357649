"""`svc generate [--check]`: write or verify the documents under docs/generated/."""

from __future__ import annotations

from collections.abc import Callable

from svc.layer import Repository, write_atomic
from svc.registry import Registry
from svc.surfaces import render_documents

__all__ = ["check_documents", "write_documents"]


def write_documents(repo: Repository, registry: Registry, say: Callable[[str], object]) -> None:
    """Write every generated file atomically (only those whose bytes changed)."""
    for rel, body in render_documents(registry).items():
        path = repo.root / rel
        try:
            same = path.read_bytes() == body
        except OSError:
            same = False
        if not same:
            write_atomic(path, body)
        say(f"{'kept ' if same else 'wrote'}  {rel}")


def check_documents(repo: Repository, registry: Registry, say: Callable[[str], object]) -> list[str]:
    """Compare every generated file with its committed copy; write nothing. Returns the stale paths."""
    stale: list[str] = []
    for rel, body in render_documents(registry).items():
        try:
            committed: bytes | None = (repo.root / rel).read_bytes()
        except OSError:
            committed = None
        if committed == body:
            say(f"OK   generated   {rel} — matches the registry")
        else:
            stale.append(rel)
            say(f"{rel} ({'missing' if committed is None else 'differs'})")
    say("generate --check: in sync" if not stale else f"generate --check: {len(stale)} stale; run `svc generate`")
    return stale
