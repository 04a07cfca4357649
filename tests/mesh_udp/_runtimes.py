"""Checkouts declaring a mesh, and meshes over them, for the provider and integration tests."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from svc.layer import Repository, dump_yaml
from svc.mesh_udp import Mesh, Network

REPOSITORY = "test/mesh"


def merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        out[key] = merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def declare(root: Path, settings: dict[str, Any]) -> None:
    """Write `.ai/repo/mesh/lan.yaml` (enabled, repository declared) with `settings` merged in."""
    data = merge(
        {
            "schema": "mesh/v1",
            "kind": "mesh-declaration",
            "id": "lan",
            "enabled": True,
            "cooperation": {"repository": REPOSITORY, "port": 0},
        },
        settings,
    )
    directory = root / ".ai" / "repo" / "mesh"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "lan.yaml").write_text(dump_yaml(data))


def open_mesh(
    base: Path, name: str, network: Network, settings: dict[str, Any], *, seed: int = 0, journal: bool = False
) -> Mesh:
    """A mesh over a fresh checkout `base/name`, with its own key under `base/name-state/`.

    The cooperation journal stays in memory unless `journal` (a file journal writes from worker threads,
    which the autojump clock would read as idle time).
    """
    root = base / name
    root.mkdir(parents=True, exist_ok=True)
    declare(root, settings)
    mesh = Mesh.prepare(
        Repository.discover(root),
        identity_file=base / f"{name}-state" / "svc" / "node.json",
        network=network,
        rng=random.Random(seed),
        journal=journal,
    )
    assert mesh.reason is None, mesh.reason
    return mesh


def present(mesh: Mesh) -> set[str]:
    """Display names of the runtimes `mesh` holds as present."""
    return {n.display_name for n in mesh.nodes().nodes if n.presence == "present"}


def knows_all(meshes: list[Mesh]) -> bool:
    """Whether every mesh holds every other as present."""
    return all(len(present(m)) == len(meshes) - 1 for m in meshes)
