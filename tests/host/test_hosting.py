"""What `svc serve` and `svc mcp` read from the checkout before serving: the lease and the policy timings."""

from __future__ import annotations

import os
from pathlib import Path

import trio

from svc.host._hosting import Timings, server_timings
from svc.layer import Repository, read_lease
from tests.conftest import make_checkout


async def test_a_lease_or_policy_that_is_no_regular_file_reads_as_none_and_defaults(tmp_path: Path) -> None:
    root = make_checkout(tmp_path / "c", git=False)
    repo = Repository.discover(root)
    mcp = repo.local_state / "mcp"
    mcp.mkdir(parents=True)
    os.mkfifo(mcp / "server.json")
    policy = root / ".ai" / "repo" / "policy.yaml"
    policy.unlink()
    os.symlink("/dev/zero", policy)
    assert await trio.to_thread.run_sync(read_lease, repo, abandon_on_cancel=True) is None
    assert await trio.to_thread.run_sync(server_timings, repo, abandon_on_cancel=True) == Timings()
