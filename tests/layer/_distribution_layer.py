"""A fixture distribution: a model of four targets (one unavailable) and release records written into a checkout.

The model installs `tool` with a shell installer, names archives `{binary}-{tag}-{target}.{extension}` and
publishes three targets (macOS ARM64, Linux x86_64 glibc, Linux x86_64 musl as experimental); Windows is
declared unavailable, as a zip. The records: `v0.9.0` and `v0.10.0` stable, `v0.10.1rc1` a prerelease, and
`v0.10.1` stable but yanked, each publishing every published target, so the latest is `v0.10.0`.
"""

from __future__ import annotations

import copy
import hashlib
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from svc.layer import dump_yaml
from tests.conftest import make_checkout

PUBLISHED = ("macos-aarch64", "linux-x86_64-gnu", "linux-x86_64-musl")
TRIPLES = {
    "macos-aarch64": "aarch64-apple-darwin",
    "linux-x86_64-gnu": "x86_64-unknown-linux-gnu",
    "linux-x86_64-musl": "x86_64-unknown-linux-musl",
    "windows-x86_64": "x86_64-pc-windows-msvc",
}
PREFIX = "https://github.com/acme/tool/releases/download/"
#: (version, channel, yanked) of every fixture record, in no particular order.
RECORDS = (
    ("0.10.1rc1", "prerelease", False),
    ("0.9.0", "stable", False),
    ("0.10.1", "stable", True),
    ("0.10.0", "stable", False),
)

_BUILD = {"runner": "ubuntu-24.04", "native": True}

MODEL: dict[str, Any] = {
    "schema": "svc-distribution/v1",
    "project": {"binary": "tool", "repository": "acme/tool", "license": "MIT"},
    "installer": {
        "base_url": "https://acme.example/tool",
        "script": "install.sh",
        "download_command": "curl -fsSL",
        "shell": "sh",
        "install_dir": "$HOME/.local/bin",
        "prefix": "$HOME/.local/share/tool",
    },
    "archive": {
        "format": "tar.gz",
        "extension": "tar.gz",
        "name": "{binary}-{tag}-{target}.{extension}",
        "checksum": "sha256",
        "checksums_file": "SHA256SUMS",
    },
    "titles": {
        "os": {"macos": "macOS", "linux": "Linux", "windows": "Windows"},
        "arch": {"x86_64": "x86_64", "aarch64": "ARM64"},
        "libc": {"gnu": "glibc", "musl": "musl"},
    },
    "targets": [
        {
            "id": "macos-aarch64",
            "os": "macos",
            "arch": "aarch64",
            "rust_target": TRIPLES["macos-aarch64"],
            "status": "supported",
            "build": {"runner": "macos-15", "native": True},
        },
        {
            "id": "linux-x86_64-gnu",
            "os": "linux",
            "arch": "x86_64",
            "libc": "gnu",
            "rust_target": TRIPLES["linux-x86_64-gnu"],
            "status": "supported",
            "build": _BUILD,
        },
        {
            "id": "linux-x86_64-musl",
            "os": "linux",
            "arch": "x86_64",
            "libc": "musl",
            "rust_target": TRIPLES["linux-x86_64-musl"],
            "status": "experimental",
            "reason": "Static, not yet proven on Alpine.",
            "build": {"runner": "ubuntu-24.04", "packages": ["musl-tools"], "native": True},
        },
        {
            "id": "windows-x86_64",
            "os": "windows",
            "arch": "x86_64",
            "rust_target": TRIPLES["windows-x86_64"],
            "format": "zip",
            "binary_suffix": ".exe",
            "status": "unavailable",
            "reason": "The launcher is POSIX shell.",
        },
    ],
}


def model(**sections: Any) -> dict[str, Any]:
    """A deep copy of the fixture model with whole top-level sections replaced."""
    out = copy.deepcopy(MODEL)
    out.update(copy.deepcopy(sections))
    return out


def artifact(version: str, target: str) -> dict[str, Any]:
    """The artifact a release of `version` publishes for `target`, as the fixture model derives it."""
    tag = f"v{version}"
    name = f"tool-{tag}-{TRIPLES[target]}.tar.gz"
    return {
        "target": target,
        "name": name,
        "url": f"{PREFIX}{tag}/{name}",
        "sha256": hashlib.sha256(name.encode()).hexdigest(),
        "size": 1000 + len(name),
    }


def record(
    version: str, *, channel: str = "stable", yanked: bool = False, targets: Iterable[str] = PUBLISHED
) -> dict[str, Any]:
    """A release record of `version` publishing `targets`."""
    return {
        "schema": "release/v1",
        "version": version,
        "tag": f"v{version}",
        "channel": channel,
        "commit": hashlib.sha1(version.encode()).hexdigest(),
        "published_at": "2026-10-10T16:46:14Z",
        "notes_url": f"https://github.com/acme/tool/releases/tag/v{version}",
        "yanked": yanked,
        "artifacts": [artifact(version, t) for t in targets],
    }


def fixture_records() -> list[dict[str, Any]]:
    """Every fixture record."""
    return [record(v, channel=c, yanked=y) for v, c, y in RECORDS]


def write_share(directory: Path, data: dict[str, Any] | str) -> Path:
    """A share directory holding `distribution.yaml` (a mapping dumped as YAML, or the text as is)."""
    directory.mkdir(parents=True, exist_ok=True)
    text = data if isinstance(data, str) else dump_yaml(data)
    (directory / "distribution.yaml").write_text(text, encoding="utf-8")
    return directory


def write_records(root: Path, records: Iterable[dict[str, Any] | tuple[str, str]]) -> None:
    """Replace the checkout's release records: a mapping is named by its tag, a (name, text) pair as given."""
    releases = root / ".ai/repo/releases"
    for old in releases.glob("*.yaml"):
        old.unlink()
    releases.mkdir(parents=True, exist_ok=True)
    for item in records:
        name, text = item if isinstance(item, tuple) else (f"{item['tag']}.yaml", dump_yaml(item))
        (releases / name).write_text(text, encoding="utf-8")
    subprocess.run(["git", "add", "-A"], cwd=root, check=True, capture_output=True)


def write_distribution_checkout(root: Path, records: Iterable[dict[str, Any] | tuple[str, str]] = ()) -> Path:
    """svc's own layer in a Git checkout, its release records replaced by `records` (tracked)."""
    make_checkout(root)
    shutil.rmtree(root / ".ai/repo/releases", ignore_errors=True)
    write_records(root, records)
    return root.resolve()


KINDS = """\
schema: svc-kinds/v1
kinds:
  distribution:
    format: yaml
    identity: []
"""


def declare_repository_model(root: Path, data: dict[str, Any] | str) -> None:
    """Give the checkout its own `distribution` kind, a class for `.ai/repo/distribution.yaml`, and that file."""
    knowledge = root / ".ai/repo/knowledge"
    (knowledge / "kinds.yaml").write_text(KINDS, encoding="utf-8")
    sources = knowledge / "sources.yaml"
    sources.write_text(
        sources.read_text(encoding="utf-8")
        + "\n  - {id: distribution, kind: distribution, discovery: vcs, "
        + "pathspec: ':(glob).ai/repo/distribution.yaml'}\n",
        encoding="utf-8",
    )
    text = data if isinstance(data, str) else dump_yaml(data)
    (root / ".ai/repo/distribution.yaml").write_text(text, encoding="utf-8")
    subprocess.run(["git", "add", "-A"], cwd=root, check=True, capture_output=True)
