"""A checkout with marker files of several toolchains, a justfile, a policy with projections and a lease; fake tools.

`environment_checkout(path)` writes the files and commits them (unless `git=False`), then changes one tracked
file and adds an untracked one. `fake_tools(path)` writes a directory of executables standing in for the
toolchains: `node` and `rustc` answer a version, `just` answers its version, its dump and its groups,
`elixir` never answers (killed at the probe's deadline), `deno` answers no version; there is no `go`.
"""

from __future__ import annotations

import json
import os
import platform
import stat
from pathlib import Path

from tests.conftest import make_checkout

MANIFEST = """\
schema: ai-repository/v1
sections:
  policy: repo/policy.yaml
  rules: repo/rules
"""
POLICY = """\
version: 1
projections:
  - provider: agents
    target: AGENTS.md
    always_loaded: true
  - provider: claude-code
    target: CLAUDE.md
  - provider: elsewhere
    target: /etc/passwd
"""
RULE = """\
---
id: env.one
version: 1
title: One rule
---

# One rule
"""
DUMP = {
    "recipes": {
        "test": {
            "name": "test",
            "doc": "Run the tests",
            "attributes": [{"group": "check"}],
            "parameters": [{"name": "args", "kind": "star", "default": None}],
            "dependencies": [],
            "private": False,
        },
        "check": {
            "name": "check",
            "doc": "Everything CI runs",
            "attributes": [{"group": "check"}],
            "parameters": [],
            "dependencies": [{"recipe": "test", "arguments": []}],
            "private": False,
        },
        "release10": {
            "name": "release10",
            "doc": None,
            "attributes": ["confirm", {"group": "ship"}],
            "parameters": [{"name": "version", "kind": "singular", "default": None}],
            "dependencies": [],
            "private": False,
        },
        "release9": {
            "name": "release9",
            "attributes": [],
            "parameters": [{"name": "files", "kind": "plus", "default": None}],
            "private": False,
        },
        "_helper": {"name": "_helper", "attributes": [], "private": True},
        "hidden": {"name": "hidden", "attributes": ["private"], "private": False},
    },
    "modules": {
        "docs": {
            "recipes": {
                "build": {
                    "name": "build",
                    "doc": "Build the documentation",
                    "attributes": [],
                    "parameters": [{"name": "out", "kind": "singular", "default": "site"}],
                    "private": False,
                }
            }
        }
    },
}


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def environment_checkout(path: Path, *, git: bool = True) -> Path:
    """The fixture checkout at `path`."""
    path.mkdir(parents=True)
    _write(path / ".ai/manifest.yaml", MANIFEST)
    _write(path / ".ai/repo/policy.yaml", POLICY)
    _write(path / ".ai/repo/rules/env/one.v1.md", RULE)
    major, minor, _ = platform.python_version_tuple()
    _write(path / ".python-version", f"{major}.{minor}\n")
    _write(path / "pyproject.toml", '[project]\nname = "x"\nrequires-python = ">=3.11"\n')
    _write(path / ".nvmrc", "v20\n")
    _write(path / "package.json", json.dumps({"engines": {"node": ">=99"}}))
    _write(path / "Cargo.toml", '[package]\nname = "x"\nrust-version = "1.80"\n')
    _write(path / "go.mod", "module example.com/x\n\ngo 1.22\n")
    _write(path / "justfile", "test:\n\techo\n")
    _write(path / "mix.exs", 'def project, do: [app: :x, elixir: "~> 1.15"]\n')
    _write(path / "deno.json", "{}\n")
    _write(path / "AGENTS.md", "# Agents\n")
    if git:
        make_checkout(path, layer=False)
        _write(path / "AGENTS.md", "# Agents, changed\n")
        _write(path / "notes.txt", "untracked\n")
    return path


def _tool(directory: Path, name: str, script: str) -> None:
    path = directory / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def fake_tools(directory: Path) -> str:
    """Write the fake executables into `directory`; the search path that finds only them."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "dump.json").write_text(json.dumps(DUMP))
    _tool(directory, "node", "echo v20.11.1\n")
    _tool(directory, "rustc", "echo 'rustc 1.78.0 (9b00956e5 2024-04-29)'\n")
    _tool(directory, "elixir", "exec sleep 30\n")
    _tool(directory, "deno", "echo 'deno (a build without a version)'\n")
    _tool(
        directory,
        "just",
        f"""for arg in "$@"; do
  case "$arg" in
    --version) echo 'just 1.25.2'; exit 0 ;;
    --dump) cat '{directory / "dump.json"}'; exit 0 ;;
    --groups) printf 'Recipe groups:\\n    ship\\n    check\\n'; exit 0 ;;
  esac
done
exit 2
""",
    )
    return str(directory)


def lease(root: Path, url: str | None, *, pid: int | None = None) -> None:
    """A lease of this process (or `pid`) naming `url`."""
    body = {
        "schema": "svc-mcp-lease/v1",
        "pid": os.getpid() if pid is None else pid,
        "token": "t",
        "root": str(root),
        "url": url,
    }
    _write(root / ".ai/local/state/mcp/server.json", json.dumps(body))
