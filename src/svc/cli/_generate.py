"""`svc generate [--check]`: write or verify the documents under docs/generated/ (and the command line's own).

The documents describe svc's registry. When the checkout is the source tree of the svc that runs, the
description of the command line the package ships (`svc/cli/commands.json`, see `_tree`) is one of them.
"""

from __future__ import annotations

from collections.abc import Callable

from svc.cli._tree import DESCRIPTION_FILE, describe_cli, encode_description
from svc.layer import Repository, write_atomic
from svc.registry import Registry
from svc.surfaces import render_documents

__all__ = ["check_documents", "generated_documents", "write_documents"]


def generated_documents(repo: Repository, registry: Registry) -> dict[str, bytes]:
    """Every generated file of `repo`, by repository-relative path."""
    documents = dict(render_documents(registry))
    try:
        own = DESCRIPTION_FILE.resolve().relative_to(repo.root.resolve())
    except ValueError:
        return documents
    documents[own.as_posix()] = encode_description(describe_cli(registry))
    return documents


def write_documents(repo: Repository, registry: Registry, say: Callable[[str], object]) -> None:
    """Write every generated file atomically (only those whose bytes changed)."""
    for rel, body in generated_documents(repo, registry).items():
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
    for rel, body in generated_documents(repo, registry).items():
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
