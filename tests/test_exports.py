"""The public surface of each package is deliberate: `__all__` lists exactly what it re-exports."""

from __future__ import annotations

import importlib

import pytest

PACKAGES = [
    "svc",
    "svc.registry",
    "svc.layer",
    "svc.plan",
    "svc.nursery",
    "svc.api",
    "svc.cli",
    "svc.capabilities",
    "svc.mesh_udp",
    "svc.runtime",
    "svc.surfaces",
    "svc.host",
]


@pytest.mark.parametrize("name", PACKAGES)
def test_all_names_exist_and_are_public(name: str) -> None:
    module = importlib.import_module(name)
    exported = module.__all__
    assert sorted(exported) == sorted(set(exported))
    for attr in exported:
        assert hasattr(module, attr), f"{name}.{attr}"
    public = {n for n, v in vars(module).items() if not n.startswith("_") and not isinstance(v, type(importlib))}
    public -= {"annotations", "TYPE_CHECKING"}
    assert public <= set(exported), public - set(exported)


def test_core_packages_import_no_web_mcp_or_cli_library() -> None:
    import subprocess
    import sys

    from tests.test_layering import WEB_MCP_CLI

    probe = (
        "import sys\n"
        "import svc.registry, svc.capabilities, svc.layer, svc.nursery\n"
        "import svc.plan, svc.mesh_udp, svc.runtime, svc.surfaces\n"
        f"print([m for m in {WEB_MCP_CLI!r} if m in sys.modules])"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, check=True, timeout=60)
    assert result.stdout.decode().strip() == "[]"
