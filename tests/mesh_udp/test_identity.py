"""The key file and the derived ids (docs/mesh.md); every key lives under a temporary XDG_STATE_HOME."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from svc.mesh_udp._identity import (
    IdentityError,
    create_identity,
    display_path,
    identity_path,
    load_identity,
    new_instance_id,
    read_identity,
    repository_id,
    runtime_id,
)
from tests.conftest import make_checkout


def test_path_prefers_xdg_state_home_then_home() -> None:
    assert identity_path({"XDG_STATE_HOME": "/s", "HOME": "/h"}) == Path("/s/svc/node.json")
    assert identity_path({"XDG_STATE_HOME": "relative", "HOME": "/h"}) == Path("/h/.local/state/svc/node.json")
    assert identity_path({"HOME": "/h"}) == Path("/h/.local/state/svc/node.json")
    assert identity_path({}) is None
    assert display_path(Path("/h/.local/state/svc/node.json"), {"HOME": "/h"}) == "~/.local/state/svc/node.json"
    assert display_path(Path("/elsewhere/node.json"), {"HOME": "/h"}) == "/elsewhere/node.json"


def test_created_once_with_private_modes_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "state" / "svc" / "node.json"
    assert read_identity(path).state == "absent"
    made = create_identity(path, display_name="laptop")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    data = json.loads(path.read_text())
    assert data["schema"] == "svc-mesh-identity/v1"
    assert len(data["secret_key"]) == 64
    assert data["display_name"] == "laptop"
    again = create_identity(path)
    assert again.public_key == made.public_key
    assert again.display_name == "laptop"
    assert made.node_id == hashlib.sha256(bytes.fromhex(made.public_key)).hexdigest()[:32]
    assert [p.name for p in path.parent.iterdir()] == ["node.json"]


def test_display_name_defaults_to_the_node_id_prefix(tmp_path: Path) -> None:
    made = create_identity(tmp_path / "node.json")
    assert made.display_name == made.node_id[:8]


@pytest.mark.parametrize(
    "content",
    [
        b"not json",
        b"{}",
        b'{"schema":"svc-mesh-identity/v2","secret_key":"' + b"a" * 64 + b'","created_at":"x"}',
        b'{"schema":"svc-mesh-identity/v1","secret_key":"' + b"a" * 63 + b'","created_at":"x"}',
        b'{"schema":"svc-mesh-identity/v1","secret_key":"' + b"A" * 64 + b'","created_at":"x"}',
        b'{"schema":"svc-mesh-identity/v1","secret_key":"' + b"a" * 64 + b'","created_at":"x","extra":1}',
        b'{"schema":"svc-mesh-identity/v1","secret_key":"' + b"a" * 64 + b'","created_at":"x","display_name":""}',
    ],
)
def test_a_malformed_file_is_an_error_and_never_replaced(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "node.json"
    path.write_bytes(content)
    reading = read_identity(path)
    assert reading.state == "broken"
    assert reading.error
    with pytest.raises(IdentityError):
        create_identity(path)
    with pytest.raises(IdentityError):
        load_identity(path)
    assert path.read_bytes() == content


def test_a_loose_mode_is_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "node.json"
    create_identity(path)
    os.chmod(path, 0o644)
    reading = read_identity(path)
    assert reading.state == "present"
    assert reading.warning is not None
    assert "0644" in reading.warning


def test_instance_and_runtime_ids(tmp_path: Path) -> None:
    assert len(new_instance_id()) == 16
    assert new_instance_id() != new_instance_id()
    real = os.path.realpath(tmp_path)
    expected = hashlib.sha256(b"svc-mesh-runtime/v1\n" + real.encode()).hexdigest()[:16]
    assert runtime_id(tmp_path) == expected
    (tmp_path / "link").symlink_to(tmp_path / "target", target_is_directory=True)
    (tmp_path / "target").mkdir()
    assert runtime_id(tmp_path / "link") == runtime_id(tmp_path / "target")


def test_repository_id_from_root_commits_declared_or_absent(tmp_path: Path) -> None:
    repo = make_checkout(tmp_path / "r", layer=False)
    root = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, check=True)
    commit = root.stdout.decode().strip()
    found = repository_id(repo, None)
    assert found.basis == "root_commits"
    assert found.id == hashlib.sha256(b"svc-mesh-repository/v1\nroots\n" + commit.encode()).hexdigest()[:32]
    declared = repository_id(repo, "acme/widgets")
    assert declared.basis == "declared"
    assert declared.id == hashlib.sha256(b"svc-mesh-repository/v1\ndeclared\nacme/widgets").hexdigest()[:32]
    empty = tmp_path / "empty"
    empty.mkdir()
    subprocess.run(["git", "init", "-q", str(empty)], check=True)
    assert repository_id(empty, None).id is None
    assert repository_id(tmp_path / "missing", None).id is None


def test_a_clone_shares_the_repository_id_and_a_shallow_clone_has_none(tmp_path: Path) -> None:
    origin = make_checkout(tmp_path / "origin", layer=False)
    (origin / "f").write_text("x")
    subprocess.run(["git", "-C", str(origin), "add", "f"], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(origin),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.invalid",
            "commit",
            "-qm",
            "second",
        ],
        check=True,
    )
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(origin), str(clone)], check=True, capture_output=True)
    assert repository_id(clone, None).id == repository_id(origin, None).id
    shallow = tmp_path / "shallow"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", f"file://{origin}", str(shallow)], check=True, capture_output=True
    )
    assert repository_id(shallow, None).id is None
    assert "shallow" in repository_id(shallow, None).detail
