"""The `mesh.*` capabilities over HTTP, their MCP declarations, and the command line (`svc mesh ...`).

Every identity lives in a temporary XDG_STATE_HOME; every declaration is confined to 127.0.0.1 with the
test's own multicast group and ports.
"""

from __future__ import annotations

import functools
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
import trio

from svc.api import serve_http
from svc.capabilities import builtin_registry
from svc.host._service import open_service
from svc.layer import Repository
from svc.mesh_udp import Mesh, NodeIdentity, build_envelope, create_identity, start_mesh
from svc.runtime import Actor, Executor
from svc.surfaces import mcp_catalog
from tests.conftest import make_checkout
from tests.mesh_udp._loopback import free_udp_port, loopback_settings, own_group
from tests.mesh_udp._runtimes import declare

ACTOR = Actor(kind="internal")
CHECK_ORDER = [
    "declaration",
    "identity",
    "trust",
    "repository",
    "udp",
    "multicast",
    "broadcast",
    "protocol",
    "link",
    "firewall",
    "runtime",
]


@pytest.fixture
def ports() -> tuple[str, int]:
    return own_group(), free_udp_port()


@pytest.fixture
def meshed(tmp_path: Path, ports: tuple[str, int]) -> Path:
    """A Git checkout of svc's layer declaring a mesh on loopback."""
    root = make_checkout(tmp_path / "checkout")
    declare(root, loopback_settings(*ports))
    return root


@pytest.fixture
async def served(meshed: Path, state: Path, nursery: trio.Nursery) -> AsyncIterator[tuple[Executor, str]]:
    """A server of `meshed` whose mesh runs, as `svc serve` runs it."""
    mesh = await Mesh.open(Repository.discover(meshed))
    async with open_service(Repository.discover(meshed), surface="http", watch=False, mesh=mesh) as executor:
        await start_mesh(mesh, executor.supervisor)
        shutdown = trio.Event()
        url: str = await nursery.start(functools.partial(serve_http, executor, port=0, shutdown=shutdown))
        yield executor, url
        shutdown.set()


def other_envelope(ident: NodeIdentity, *, seq: int = 1) -> dict[str, Any]:
    return build_envelope(
        ident.key,
        public_key=ident.public_key,
        instance="1" * 16,
        runtime="2" * 16,
        name="visitor",
        seq=seq,
        ts=int(time.time()),
        endpoints=["127.0.0.1:7999"],
        capabilities=["rendezvous"],
        repositories=[],
        version="0.1.0",
    )


async def test_the_mesh_answers_over_http_while_it_runs(served: tuple[Executor, str], state: Path) -> None:
    executor, url = served
    async with httpx.AsyncClient(base_url=url) as http:
        status = (await http.get("/api/v1/mesh")).json()
        assert status["active"] is True
        assert "reason" not in status
        providers = {p["id"]: p for p in status["providers"]}
        assert providers["link"]["state"] == "running"
        assert providers["multicast"]["state"] == "running"
        assert status["trust_policy"] == "deny_unknown"
        assert status["declaration"]["path"] == ".ai/repo/mesh/lan.yaml"
        node_id = status["identity"]["node_id"]

        identity = (await http.get("/api/v1/mesh/identity")).json()
        assert identity["present"] is True
        assert identity["path"] == "~/state/svc/node.json"
        assert identity["identity"]["node_id"] == node_id
        assert identity["identity"]["instance_id"] == status["identity"]["instance_id"]
        secret = msgspec.json.decode((state / "svc" / "node.json").read_bytes())["secret_key"]
        assert secret not in (await http.get("/api/v1/mesh/identity")).text
        assert secret not in (await http.get("/api/v1/mesh")).text

        visitor = NodeIdentity.generate(display_name="visitor")
        answer = (await http.post("/api/v1/mesh/register", json={"envelope": other_envelope(visitor)})).json()
        assert answer["accepted"] is True
        assert answer["envelope"]["pk"] == status["identity"]["public_key"]
        assert answer["candidates"] == []
        again = (await http.post("/api/v1/mesh/register", json={"envelope": other_envelope(visitor)})).json()
        assert (again["accepted"], again["refusal"]) == (False, "replayed")
        forged = {**other_envelope(visitor, seq=2), "name": "mallory"}
        refused = (await http.post("/api/v1/mesh/register", json={"envelope": forged})).json()
        assert (refused["accepted"], refused["refusal"]) == (False, "signature")

        nodes = (await http.get("/api/v1/mesh/nodes")).json()
        assert nodes["count"] == 1
        [node] = nodes["nodes"]
        assert (node["display_name"], node["presence"], node["trust"]) == (
            "visitor",
            "present",
            {"state": "observed", "detail": "policy"},
        )
        assert node["sources"][0]["source"] == "rendezvous"
        assert node["sources"][0]["path"] == "loopback"

        status = (await http.get("/api/v1/mesh")).json()
        assert status["tallies"]["nodes"] == 1
        assert status["tallies"]["replayed"] == 1
        assert status["refusals"]["signature"] == 1

        doctor = (await http.get("/api/v1/mesh/doctor")).json()
        assert [c["check"] for c in doctor["checks"]] == CHECK_ORDER
        by_name = {c["check"]: c for c in doctor["checks"]}
        assert by_name["runtime"]["ok"] is True
        assert by_name["runtime"]["detail"].startswith("active in this server")
        assert by_name["udp"]["detail"].startswith("the link socket is bound")
        assert all(c["ok"] for name, c in by_name.items() if name != "firewall")

        firewall = await http.get("/api/v1/mesh/firewall", params={"port": "7742"})
        assert firewall.status_code == 200
        assert firewall.json()["plan"]["rules"][-1]["port"] == 7742
        assert firewall.json()["window_seconds"] == 300

        health = (await http.get("/api/v1/health")).json()
        [mesh_check] = [c for c in health["checks"] if c["id"] == "mesh"]
        assert mesh_check["status"] == "ok"
        assert mesh_check["detail"].startswith("active: 1 other runtime known")
    executor.components.get(Mesh).stop()


async def test_a_mesh_that_could_not_start_is_reported_everywhere(meshed: Path, state: Path) -> None:
    key = state / "svc" / "node.json"
    key.parent.mkdir(parents=True)
    key.write_text("{ broken")
    mesh = await Mesh.open(Repository.discover(meshed))
    async with open_service(Repository.discover(meshed), surface="http", watch=False, mesh=mesh) as executor:
        await start_mesh(mesh, executor.supervisor)
        assert not mesh.active
        assert mesh.reason is not None
        assert mesh.reason.startswith("identity: ~/state/svc/node.json: not a key file")
        ask = functools.partial(_ask, executor)
        status = await ask("mesh.status")
        assert status["active"] is False
        assert status["reason"] == mesh.reason
        identity = await ask("mesh.identity")
        assert identity["present"] is False
        assert identity["error"].startswith("not a key file")
        doctor = await ask("mesh.doctor")
        assert doctor["ok"] is False
        failed = {c["check"]: c for c in doctor["checks"] if not c["ok"]}
        assert set(failed) == {"identity", "runtime"}
        assert failed["identity"]["remediation"].startswith("restore ~/state/svc/node.json")
        assert failed["runtime"]["detail"].startswith("enabled but not active: identity:")
        assert (await ask("mesh.register", envelope={}))["refusal"] == "not_active"
    assert key.read_text() == "{ broken"


async def _ask(executor: Executor, cid: str, **params: Any) -> Any:
    cap = executor.runtime.registry.by_id[cid]
    return msgspec.json.decode(await executor.call(cap, executor.decode_value(cap, params), actor=ACTOR))


async def test_without_a_declaration_nothing_opens_and_every_answer_says_off(checkout: Path, state: Path) -> None:
    mesh = await Mesh.open(Repository.discover(checkout))
    async with open_service(Repository.discover(checkout), surface="http", watch=False, mesh=mesh) as executor:
        await start_mesh(mesh, executor.supervisor)
        assert mesh.providers is None
        assert mesh.identity is None
        status = await _ask(executor, "mesh.status")
        assert status["reason"] == "off: no declaration under .ai/repo/mesh/"
        assert await _ask(executor, "mesh.nodes") == {"count": 0, "nodes": []}
        assert (await _ask(executor, "mesh.identity")) == {"present": False, "path": "~/state/svc/node.json"}
        doctor = await _ask(executor, "mesh.doctor")
        assert doctor["ok"] is True
        firewall = await _ask(executor, "mesh.firewall")
        assert firewall["plan"]["rules"] == []
        assert firewall["verdict"] == "the mesh is off here: nothing to admit"


def test_mcp_declarations_and_registry_facts() -> None:
    registry = builtin_registry()
    catalog = mcp_catalog(registry)
    discovery = {c.id for c in registry.capabilities if c.source_path == "src/svc/capabilities/_mesh.py"}
    tools = {t.capability: t for t in catalog.tools if t.capability in discovery}
    assert {cid: t.name for cid, t in tools.items()} == {
        "mesh.doctor": "svc_mesh_doctor",
        "mesh.firewall": "svc_mesh_firewall",
        "mesh.identity": "svc_mesh_identity",
        "mesh.nodes": "svc_mesh_nodes",
        "mesh.register": "svc_mesh_register",
        "mesh.status": "svc_mesh",
    }
    assert tools["mesh.register"].effect == "process_state"
    assert tools["mesh.status"].hints.read_only is True
    assert catalog.resource_by_uri["svc://mesh"].capability == "mesh.status"
    for cid in tools:
        cap = registry.by_id[cid]
        assert cap.stability == "experimental"
        assert cap.cache.policy == "disabled"
    assert registry.by_id["mesh.firewall"].benchmark.reason == "external_dependency"
    assert registry.by_id["mesh.register"].benchmark.policy == "required"
    assert registry.by_id["mesh.doctor"].cli_verdict == "ok"
    assert registry.by_id["mesh.firewall"].cli_verdict == "ok"
    assert [registry.by_id[c].cli_text for c in ("mesh.doctor", "mesh.firewall", "mesh.identity")] == [
        "mesh doctor",
        "mesh firewall",
        "mesh identity",
    ]


# -- the command line ---------------------------------------------------------------------------------


def svc(root: Path, state: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "HOME": str(state.parent), "XDG_STATE_HOME": str(state), "PYTHONUNBUFFERED": "1"}
    argv = [sys.executable, "-m", "svc", "--repo", str(root), *args]
    return subprocess.run(argv, capture_output=True, env=env, timeout=60, check=False)


def checks(done: subprocess.CompletedProcess[bytes]) -> dict[str, Any]:
    report = msgspec.json.decode(done.stdout)
    return {c["check"]: c for c in report["checks"]}


@pytest.fixture
def key(state: Path) -> NodeIdentity:
    return create_identity(state / "svc" / "node.json")


@pytest.mark.slow
def test_svc_mesh_doctor_passes_on_a_healthy_setup(meshed: Path, state: Path, key: NodeIdentity) -> None:
    done = svc(meshed, state, "mesh", "doctor", "--json")
    found = checks(done)
    assert list(found) == CHECK_ORDER
    assert all(c["ok"] for name, c in found.items() if name != "firewall"), found
    assert done.returncode == (0 if found["firewall"]["ok"] else 10)
    assert found["identity"]["detail"].startswith(f"node {key.node_id}")
    assert found["runtime"]["detail"].startswith("not decided in this process")
    assert found["multicast"]["detail"].endswith("joined on 127.0.0.1")
    human = svc(meshed, state, "mesh", "doctor")
    assert b"multicast" in human.stdout


@pytest.mark.slow
def test_svc_mesh_doctor_fails_with_a_remedy_when_the_identity_file_is_malformed(meshed: Path, state: Path) -> None:
    path = state / "svc" / "node.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"schema": "svc-mesh-identity/v1"}')
    done = svc(meshed, state, "mesh", "doctor", "--json")
    assert done.returncode == 10
    failed = {name: c for name, c in checks(done).items() if not c["ok"]}
    assert "identity" in failed
    assert failed["identity"]["impact"].startswith("no envelope can be signed")
    assert "remove it deliberately" in failed["identity"]["remediation"]
    assert path.read_text() == '{"schema": "svc-mesh-identity/v1"}'
    identity = svc(meshed, state, "mesh", "identity", "--json")
    assert identity.returncode == 0
    assert msgspec.json.decode(identity.stdout)["present"] is False


@pytest.mark.slow
def test_svc_mesh_doctor_fails_with_a_remedy_when_the_multicast_port_cannot_be_joined(
    meshed: Path, state: Path, key: NodeIdentity, ports: tuple[str, int]
) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as holder:
        holder.bind(("0.0.0.0", ports[1]))  # held without SO_REUSEADDR/SO_REUSEPORT: nobody can share it
        done = svc(meshed, state, "mesh", "doctor", "--json")
    assert done.returncode == 10
    failed = {name: c for name, c in checks(done).items() if not c["ok"]}
    assert "multicast" in failed
    assert f"0.0.0.0:{ports[1]} cannot be bound" in failed["multicast"]["detail"]
    assert "seeds or rendezvous" in failed["multicast"]["remediation"]
    assert failed["multicast"]["impact"] == "runtimes on this network are not found by multicast"


@pytest.mark.slow
def test_svc_mesh_identity_prints_the_public_half_only(meshed: Path, state: Path, key: NodeIdentity) -> None:
    done = svc(meshed, state, "mesh", "identity", "--json")
    assert done.returncode == 0
    report = msgspec.json.decode(done.stdout)
    assert report["identity"]["public_key"] == key.public_key
    assert report["path"] == "~/state/svc/node.json"
    assert key.key.private_bytes_raw().hex().encode() not in done.stdout


@pytest.mark.slow
async def test_svc_serve_runs_the_mesh_and_the_cli_asks_it(meshed: Path, state: Path, key: NodeIdentity) -> None:
    env = {**os.environ, "HOME": str(state.parent), "XDG_STATE_HOME": str(state), "PYTHONUNBUFFERED": "1"}
    argv = [sys.executable, "-m", "svc", "--repo", str(meshed), "serve", "--port", "0"]
    async with trio.open_nursery() as nursery:
        process: trio.Process = await nursery.start(
            functools.partial(trio.run_process, argv, env=env, stderr=subprocess.PIPE, check=False)
        )
        assert process.stderr is not None
        seen = bytearray()
        with trio.fail_after(20):
            while b"svc: mesh: node" not in seen:
                chunk = await process.stderr.receive_some()
                assert chunk, seen.decode()
                seen += chunk
        status = await trio.to_thread.run_sync(svc, meshed, state, "mesh", "status", "--json")
        assert status.returncode == 0, status.stderr
        answer = msgspec.json.decode(status.stdout)
        assert answer["active"] is True
        assert answer["identity"]["node_id"] == key.node_id
        doctor = await trio.to_thread.run_sync(svc, meshed, state, "mesh", "doctor", "--json")
        assert checks(doctor)["runtime"]["detail"].startswith("active in this server")
        process.terminate()
