"""A query command imports what it reads and nothing else; the command line is built from the shipped description."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
import trio
from asyncclick.testing import CliRunner

from svc.capabilities import builtin_registry
from svc.cli import _main, _tree, build_cli
from tests.conftest import make_checkout

ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}
#: What `svc plan next --json` must not import: no event loop, no web or MCP stack, no rich output, no mesh.
FORBIDDEN = (
    "trio",
    "anyio",
    "asyncio",
    "quart",
    "quart_trio",
    "hypercorn",
    "mcp",
    "jinja2",
    "rich",
    "httpx",
    "cryptography",
    "svc.runtime._executor",
    "svc.nursery",
    "svc.mesh_udp",
    "svc.api",
    "svc.host",
)
#: What a plan query spares its start too: modules of the standard library that it would import for nothing.
SPARED = ("logging", "tempfile", "json")
_IMPORTED = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|\s*(?P<module>\S+)$", re.MULTILINE)
#: Runs the command line as `svc` would, then writes every module the process holds on stderr's last line (also
#: when the command leaves at once, `svc.cli._exit`).
_PROBE = """
import os, sys
from svc.cli import main

def modules():
    sys.stderr.write("\\nMODULES " + repr(sorted(sys.modules)) + "\\n")
    sys.stderr.flush()

leave = os._exit
os._exit = lambda code: (modules(), leave(code))
try:
    main(sys.argv[1:])
finally:
    modules()
"""


def _imports(*args: str) -> tuple[subprocess.CompletedProcess[bytes], set[str]]:
    """Run `svc ARGS` under `python -X importtime`: what it imported, by the timing lines and by `sys.modules`.

    (A module imported with `importlib.import_module` has no timing line of its own, hence both.)
    """
    command = [sys.executable, "-X", "importtime", "-c", _PROBE, *args]
    result = subprocess.run(command, capture_output=True, env=ENV, timeout=60, check=False)
    stderr = result.stderr.decode()
    held = ast.literal_eval(stderr.rpartition("MODULES ")[2].strip())
    return result, set(_IMPORTED.findall(stderr)) | set(held)


@pytest.mark.parametrize("words", [["plan", "next", "--json"], ["plan", "next"], ["plan", "status", "--json"]])
def test_a_plan_query_imports_its_own_module_and_no_event_loop(tmp_path: Path, words: list[str]) -> None:
    checkout = make_checkout(tmp_path / "checkout")
    result, modules = _imports("--repo", str(checkout), *words)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert "svc.plan._derive" in modules
    found = sorted(m for m in modules if any(m == f or m.startswith(f + ".") for f in FORBIDDEN))
    assert found == []
    assert sorted(m for m in modules if m.startswith("svc.capabilities.")) == ["svc.capabilities._plan"]
    assert sorted(m for m in SPARED if m in modules) == []


def test_help_builds_the_whole_tree_without_a_capability_module() -> None:
    result, modules = _imports("--help")
    assert result.returncode == 0
    assert b"plan" in result.stdout
    assert [m for m in modules if m.startswith("svc.capabilities.") or m == "trio"] == []


def test_a_command_that_is_not_a_read_runs_on_trio(tmp_path: Path) -> None:
    checkout = make_checkout(tmp_path / "checkout")
    result, modules = _imports("--repo", str(checkout), "health", "live", "--json")
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert msgspec.json.decode(result.stdout)["alive"] is True
    assert "trio" in modules


def test_the_shipped_description_is_the_registrys() -> None:
    shipped = _tree.DESCRIPTION_FILE.read_bytes()
    assert shipped == _tree.encode_description(_tree.describe_cli(builtin_registry()))
    assert _tree.load_description() == _tree.describe_cli(builtin_registry())


async def test_without_the_file_the_tree_is_derived_from_the_registry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shipped = build_cli()
    monkeypatch.setattr(_tree, "DESCRIPTION_FILE", tmp_path / "absent.json")
    derived = build_cli()
    result = await CliRunner().invoke(derived, ["--help"], catch_exceptions=False)
    assert result.exit_code == 0
    assert sorted(derived.commands) == sorted(shipped.commands)
    (tmp_path / "absent.json").write_bytes(b"{not json")
    assert sorted(build_cli().commands) == sorted(shipped.commands)


def test_a_read_marked_direct_and_a_handler_not() -> None:
    entries = {e.capability: e for e in _tree.load_description().commands if e.capability}
    assert entries["plan.next"].direct is True
    assert entries["plan.next"].declared_in == "svc.capabilities._plan"
    assert entries["health.live"].direct is False
    # An execution's state lives in the serving server: never answered here.
    assert entries["executions.list"].direct is False


def test_a_coroutine_that_waits_is_refused_outside_an_event_loop() -> None:
    async def waits() -> None:
        await trio.lowlevel.checkpoint()

    with pytest.raises(RuntimeError, match="no event loop"):
        _main._complete(waits())


@pytest.mark.parametrize(
    ("words", "torn_down"),
    [(["plan", "next", "--json"], False), (["--help"], False), (["health", "live", "--json"], True)],
)
def test_a_command_answered_with_no_event_loop_leaves_without_the_teardown(
    tmp_path: Path, words: list[str], torn_down: bool
) -> None:
    checkout = make_checkout(tmp_path / "checkout")
    probe = (
        "import atexit, sys\nfrom svc.cli import main\n"
        "atexit.register(lambda: sys.stderr.write('TORN DOWN\\n'))\nmain(sys.argv[1:])\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, "--repo", str(checkout), *words], capture_output=True, env=ENV, timeout=60
    )
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert result.stdout.strip()
    assert (b"TORN DOWN" in result.stderr) is torn_down
