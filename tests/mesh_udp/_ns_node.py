"""One runtime for the namespace test: `python -m tests.mesh_udp._ns_node CHECKOUT KEYFILE COUNT`.

Runs the mesh of CHECKOUT with the key at KEYFILE on the host's (namespace's) own interfaces until COUNT
other runtimes are present, then prints `{"identity": ..., "nodes": ...}` as JSON and exits (exit 3 when
they are not found within 30 s)."""

from __future__ import annotations

import sys
from pathlib import Path

import msgspec
import trio

from svc.layer import Repository
from svc.mesh_udp import Mesh


async def main(checkout: Path, keyfile: Path, count: int) -> int:
    mesh = await Mesh.open(Repository.discover(checkout), identity_file=keyfile)
    if mesh.reason is not None:
        print(msgspec.json.encode({"error": mesh.reason}).decode())
        return 2
    async with trio.open_nursery() as nursery:
        await mesh.start(nursery)
        with trio.move_on_after(30) as waited:
            await mesh.wait_until(lambda: sum(n.presence == "present" for n in mesh.nodes().nodes) >= count)
        answer = {"identity": mesh.public_identity(), "nodes": mesh.nodes(), "status": mesh.status()}
        sys.stdout.buffer.write(msgspec.json.encode(answer) + b"\n")
        sys.stdout.flush()
        mesh.stop()
    return 3 if waited.cancelled_caught else 0


if __name__ == "__main__":
    raise SystemExit(trio.run(main, Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])))
