"""The MCP Inspector (`@modelcontextprotocol/inspector`, command-line mode) against `svc mcp` and `/mcp`.

The Inspector is installed with npm into `.cache/mcp-inspector/` (ignored by Git; `SVC_INSPECTOR_DIR`
overrides it) on first use; `.ci/run` installs it up front. The test is skipped only when `npx` is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio

from svc.capabilities import builtin_registry
from svc.surfaces import mcp_catalog
from svc.surfaces._mcp_catalog import tool_set
from tests.cli._mcp_procs import SERVING, SVC, raw_mcp
from tests.conftest import ROOT

pytestmark = [
    pytest.mark.slow,
    pytest.mark.bound(300),
    pytest.mark.skipif(shutil.which("npx") is None, reason="npx (Node.js) is not installed: the Inspector needs it"),
]

INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
INSTALL_SECONDS = 600
RUN_SECONDS = 120


@pytest.fixture(scope="module")
def inspector_dir() -> Path:
    """The directory the Inspector is installed in (installed now when it is not yet)."""
    directory = Path(os.environ.get("SVC_INSPECTOR_DIR", ROOT / ".cache" / "mcp-inspector"))
    if not (directory / "node_modules" / ".bin" / "mcp-inspector").exists():
        directory.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["npm", "install", "--no-save", "--no-audit", "--no-fund", "--prefix", str(directory), INSPECTOR],
            check=True,
            capture_output=True,
            timeout=INSTALL_SECONDS,
        )
    return directory


def inspect(inspector_dir: Path, catalog: Path, *args: str) -> Any:
    """Run `mcp-inspector --cli ARGS` through npx; its JSON answer."""
    done = subprocess.run(
        ["npx", "--no-install", "--prefix", str(inspector_dir), "mcp-inspector", "--cli", *args],
        capture_output=True,
        timeout=RUN_SECONDS,
        env={**os.environ, "MCP_CATALOG_PATH": str(catalog)},
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return json.loads(done.stdout)


async def test_the_inspector_lists_and_calls_tools_over_stdio(
    inspector_dir: Path, checkout: Path, tmp_path: Path
) -> None:
    command = [str(SVC), "--repo", str(checkout), "mcp", "--port", "0"]
    catalog = tmp_path / "catalog.json"
    listed = await trio.to_thread.run_sync(
        lambda: inspect(inspector_dir, catalog, *command, "--method", "tools/list", "--strict")
    )
    names = [tool["name"] for tool in listed["tools"]]
    assert {"svc_mcp", "svc_capability", "svc_health"} <= set(names)
    called = await trio.to_thread.run_sync(
        lambda: inspect(
            inspector_dir,
            catalog,
            *command,
            "--method",
            "tools/call",
            "--tool-name",
            "svc_capability",
            "--tool-arg",
            "id=health.live",
        )
    )
    assert called.get("isError", False) is False
    assert called["structuredContent"]["id"] == "health.live"
    assert json.loads(called["content"][0]["text"]) == called["structuredContent"]
    read = await trio.to_thread.run_sync(
        lambda: inspect(inspector_dir, catalog, *command, "--method", "resources/read", "--uri", "svc://milestone/mcp")
    )
    assert read["contents"][0]["text"].startswith("id: mcp\n")


async def test_the_inspector_lists_exactly_the_core_set_when_svc_mcp_tools_core_serves(
    inspector_dir: Path, checkout: Path, tmp_path: Path
) -> None:
    command = [str(SVC), "--repo", str(checkout), "mcp", "--port", "0", "--tools", "core"]
    catalog = tmp_path / "catalog.json"
    listed = await trio.to_thread.run_sync(
        lambda: inspect(inspector_dir, catalog, *command, "--method", "tools/list", "--strict")
    )
    core = tool_set(mcp_catalog(builtin_registry()), "core")
    assert [tool["name"] for tool in listed["tools"]] == list(core.tools)
    assert {"svc_plan_next", "svc_mesh_claim", "svc_mesh_release", "svc_health", "svc_capabilities"} <= core.names
    called = await trio.to_thread.run_sync(
        lambda: inspect(inspector_dir, catalog, *command, "--method", "tools/call", "--tool-name", "svc_health")
    )
    assert called.get("isError", False) is False


async def test_the_inspector_lists_and_calls_tools_over_http(
    inspector_dir: Path, checkout: Path, tmp_path: Path
) -> None:
    catalog = tmp_path / "catalog.json"
    async with raw_mcp(checkout) as server:
        url = (await server.wait_for(SERVING))[1] + "/mcp"
        listed = await trio.to_thread.run_sync(
            lambda: inspect(inspector_dir, catalog, url, "--transport", "http", "--method", "tools/list")
        )
        assert "svc_mcp" in {tool["name"] for tool in listed["tools"]}
        called = await trio.to_thread.run_sync(
            lambda: inspect(
                inspector_dir,
                catalog,
                url,
                "--transport",
                "http",
                "--method",
                "tools/call",
                "--tool-name",
                "svc_mcp",
                "--tool-arg",
                "effect=repository_mutation",
            )
        )
        assert [t["name"] for t in called["structuredContent"]["tools"]] == ["svc_plan_transition"]
        # The Inspector leaves its HTTP session open, which keeps a server alive after its stdio closed: stop it.
        server.process.send_signal(signal.SIGTERM)
        assert await server.finish() == 0
