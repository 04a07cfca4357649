"""A fixture checkout declaring deployments: three valid ones and one invalid variant per refusal.

svc's own layer (which declares no deployment class, so svc's packaged class `.ai/repo/deployments/*.yaml`
finds them), a workspace of three packages — the root `pyproject.toml` (`shipyard`, scripts `shipyard` and
`shipyard-admin`), `apps/tool/pyproject.toml` (`tool`, no scripts) and `apps/worker/Cargo.toml` (`worker`,
`[[bin]] worker-run`) —, the build inputs `src/shipyard/` and `Dockerfile`, and `leak`, a symlink to `/etc`.

Valid: `web` (the complete object: port 8080, interface all, health `/api/v1/live` and `/api/v1/ready`, Fly
concurrency 20/40), `web-2` (the `tool` package) and `web-10` (the Cargo package). Unreadable: port 80, an
unknown key at the top and one under `build`, `schema: deployment/v2`, YAML that does not parse. Read but
refused by the checks: loopback, a health path not served, a package not in the workspace, a binary not in
its package, inputs that climb or are absolute (and a site that climbs), inputs missing or leading out through
a symlink, `min_running` above `count`, a soft limit above the hard one.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.conftest import make_checkout

DEPLOYMENTS = ".ai/repo/deployments"

WEB = """\
schema: deployment/v1
kind: deployment
id: web
title: The shipyard web service
description: The shipyard's HTTP API, hosted on Fly.
status: active
application: shipyard-web
build:
  package: shipyard
  binary: shipyard
  profile: release
  inputs: [pyproject.toml, src/shipyard, Dockerfile]
  site: site
listen:
  port: 8080
  interface: all
health:
  liveness: /api/v1/live
  readiness: /api/v1/ready
  grace_seconds: 10
  interval_seconds: 15
  timeout_seconds: 2
resources:
  cpu_kind: shared
  cpus: 1
  memory_mb: 256
machines:
  count: 2
  min_running: 1
  autostart: true
  autostop: true
region: fra
budgets:
  image_bytes: 52428800
  cold_start_ms: 800
provider:
  name: fly
  fly:
    org: shipyard
    force_https: true
    concurrency:
      soft_limit: 20
      hard_limit: 40
created_at: 2026-01-15T09:30:00Z
updated_at: 2026-02-01
"""


def _variant(ident: str, *replacements: tuple[str, str]) -> str:
    """The complete object under another `id`, with lines replaced (each `old` must occur once)."""
    text = WEB.replace("id: web\n", f"id: {ident}\n", 1)
    for old, new in replacements:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


FILES: dict[str, str] = {
    "pyproject.toml": (
        '[project]\nname = "shipyard"\nversion = "1.0"\n\n'
        '[project.scripts]\nshipyard = "shipyard.cli:main"\nshipyard-admin = "shipyard.admin:main"\n'
    ),
    "apps/tool/pyproject.toml": '[project]\nname = "tool"\nversion = "0.1"\n',
    "apps/worker/Cargo.toml": (
        '[package]\nname = "worker"\nversion = "0.1.0"\n\n[[bin]]\nname = "worker-run"\npath = "src/main.rs"\n'
    ),
    "apps/broken/pyproject.toml": "[project\nname = 'never read'\n",
    "src/shipyard/__init__.py": '"""The shipyard."""\n',
    "Dockerfile": "FROM scratch\n",
    f"{DEPLOYMENTS}/web.yaml": WEB,
    f"{DEPLOYMENTS}/web-2.yaml": _variant(
        "web-2",
        ("  package: shipyard\n  binary: shipyard\n", "  package: tool\n  binary: tool\n"),
        ("  inputs: [pyproject.toml, src/shipyard, Dockerfile]\n  site: site\n", "  inputs: [apps/tool]\n"),
        ("status: active\n", ""),
        ("budgets:\n  image_bytes: 52428800\n  cold_start_ms: 800\n", ""),
    ),
    f"{DEPLOYMENTS}/web-10.yaml": _variant(
        "web-10",
        ("  package: shipyard\n  binary: shipyard\n", "  package: worker\n  binary: worker-run\n"),
        ("    concurrency:\n      soft_limit: 20\n      hard_limit: 40\n", ""),
    ),
    # Unreadable: each is one refusal in `unreadable`.
    f"{DEPLOYMENTS}/port-80.yaml": _variant("port-80", ("  port: 8080\n", "  port: 80\n")),
    f"{DEPLOYMENTS}/top-key.yaml": _variant("top-key", ("region: fra\n", "region: fra\nfly_api_token: secret\n")),
    f"{DEPLOYMENTS}/nested-key.yaml": _variant(
        "nested-key", ("  profile: release\n", "  profile: release\n  dockerfile: Dockerfile\n")
    ),
    f"{DEPLOYMENTS}/schema-v2.yaml": _variant("schema-v2", ("schema: deployment/v1\n", "schema: deployment/v2\n")),
    f"{DEPLOYMENTS}/broken.yaml": "schema: deployment/v1\nid: broken\nbuild: [unclosed\n",
    # Read, then refused by the checks.
    f"{DEPLOYMENTS}/loopback.yaml": _variant("loopback", ("  interface: all\n", "  interface: loopback\n")),
    f"{DEPLOYMENTS}/health-404.yaml": _variant("health-404", ("  liveness: /api/v1/live\n", "  liveness: /healthz\n")),
    f"{DEPLOYMENTS}/no-package.yaml": _variant("no-package", ("  package: shipyard\n", "  package: nowhere\n")),
    f"{DEPLOYMENTS}/no-binary.yaml": _variant("no-binary", ("  binary: shipyard\n", "  binary: shipyard-cli\n")),
    f"{DEPLOYMENTS}/climbing.yaml": _variant(
        "climbing",
        (
            "  inputs: [pyproject.toml, src/shipyard, Dockerfile]\n  site: site\n",
            "  inputs: [../outside, /etc/passwd, src/../Dockerfile]\n  site: ../site\n",
        ),
    ),
    f"{DEPLOYMENTS}/missing-input.yaml": _variant(
        "missing-input",
        ("  inputs: [pyproject.toml, src/shipyard, Dockerfile]\n", "  inputs: [not/here, leak, leak/passwd]\n"),
    ),
    f"{DEPLOYMENTS}/overcommitted.yaml": _variant("overcommitted", ("  min_running: 1\n", "  min_running: 3\n")),
    f"{DEPLOYMENTS}/soft-over-hard.yaml": _variant(
        "soft-over-hard", ("      soft_limit: 20\n", "      soft_limit: 50\n")
    ),
}

#: The ids read as deployments, in natural order.
READ_IDS = [
    "climbing",
    "health-404",
    "loopback",
    "missing-input",
    "no-binary",
    "no-package",
    "overcommitted",
    "soft-over-hard",
    "web",
    "web-2",
    "web-10",
]
#: The deployment files that are no deployment svc reads.
UNREADABLE_FILES = [
    f"{DEPLOYMENTS}/broken.yaml",
    f"{DEPLOYMENTS}/nested-key.yaml",
    f"{DEPLOYMENTS}/port-80.yaml",
    f"{DEPLOYMENTS}/schema-v2.yaml",
    f"{DEPLOYMENTS}/top-key.yaml",
]


def write_deploy_layer(path: Path) -> Path:
    """A Git checkout at `path` carrying svc's layer and the deployment fixture, every file tracked."""
    make_checkout(path)
    for rel, text in FILES.items():
        target = path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    os.symlink("/etc", path / "leak")
    subprocess.run(["git", "add", "-A"], cwd=path, check=True, capture_output=True)
    return path
