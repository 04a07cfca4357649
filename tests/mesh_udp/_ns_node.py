"""One runtime for the namespace test: `python -m tests.mesh_udp._ns_node CHECKOUT KEYFILE COUNT [PATH]`.

Runs the mesh of CHECKOUT with the key at KEYFILE on the host's (namespace's) own interfaces until COUNT
other runtimes are present. With PATH it then claims PATH through its cooperation (session `ns`) and waits
until it holds a held claim of COUNT other runtimes as well. It prints `{"identity", "nodes", "status",
"cooperation"?}` as one JSON line, and with PATH keeps running until its standard input closes, so that
the other runtimes can still fetch its claim. Exit 3 when the runtimes are not found within 30 s, 4 when
the claims are not all held within 30 s (the line is printed either way).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import msgspec
import trio

from svc.layer import Repository
from svc.mesh_udp import Mesh
from svc.mesh_udp._cooperation import Cooperation

WAIT_SECONDS = 30


def holders(coop: Cooperation) -> set[str]:
    """The runtimes holding a held claim in the fold."""
    return {c.runtime for c in coop.state().claims if c.state.state == "held"}


async def until_stdin_closes() -> None:
    async with trio.lowlevel.FdStream(os.dup(sys.stdin.fileno())) as stdin:
        while await stdin.receive_some():
            pass


async def cooperate(mesh: Mesh, path: str, count: int) -> tuple[dict[str, Any], bool]:
    coop = mesh.cooperation
    if coop is None:
        return {"error": mesh.cooperation_reason()}, False
    written = await coop.claim(scope=[path], session="ns", peer=None, intent="namespace test")
    with trio.move_on_after(WAIT_SECONDS) as waited:
        await coop.wait_until(lambda: len(holders(coop)) >= count + 1)
    state = coop.state()
    status = coop.status()
    answer = {
        "runtime": coop.key,
        "claim": written.key,
        "claims": {c.key: c.state.state for c in state.claims},
        "digest": state.digest,
        "peers": [{"runtime": p.runtime, "state": p.state, "outbound": p.outbound} for p in status.peers],
        "counters": status.counters,
    }
    return answer, not waited.cancelled_caught


async def main(checkout: Path, keyfile: Path, count: int, path: str | None) -> int:
    mesh = await Mesh.open(Repository.discover(checkout), identity_file=keyfile)
    if mesh.reason is not None:
        print(msgspec.json.encode({"error": mesh.reason}).decode())
        return 2
    code = 0
    async with trio.open_nursery() as nursery:
        await mesh.start(nursery)
        with trio.move_on_after(WAIT_SECONDS) as waited:
            await mesh.wait_until(lambda: sum(n.presence == "present" for n in mesh.nodes().nodes) >= count)
        if waited.cancelled_caught:
            code = 3
        answer: dict[str, Any] = {"identity": mesh.public_identity(), "nodes": mesh.nodes(), "status": mesh.status()}
        if path is not None and code == 0:
            answer["cooperation"], held = await cooperate(mesh, path, count)
            code = 0 if held else 4
        sys.stdout.buffer.write(msgspec.json.encode(answer) + b"\n")
        sys.stdout.flush()
        if path is not None:
            with trio.move_on_after(WAIT_SECONDS):
                await until_stdin_closes()
        mesh.stop()
    return code


if __name__ == "__main__":
    claim = sys.argv[4] if len(sys.argv) > 4 else None
    raise SystemExit(trio.run(main, Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), claim))
