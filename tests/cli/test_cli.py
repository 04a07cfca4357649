"""The command line: commands from the registry, the same bytes as HTTP, exit codes, lazy imports."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import asyncclick as click
import httpx
import msgspec
import pytest
from asyncclick.testing import CliRunner

from svc import __version__
from svc.capabilities import builtin_registry
from svc.cli import build_cli
from svc.registry import Capability
from svc.surfaces import cli_tree
from tests.conftest import make_checkout

SVC = [sys.executable, "-m", "svc"]
ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}


def run_svc(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*SVC, *args], capture_output=True, cwd=cwd, env=ENV, timeout=60, check=False)


async def invoke(*args: str) -> Any:
    return await CliRunner().invoke(build_cli(), list(args), catch_exceptions=False)


async def test_version_is_the_one_version() -> None:
    result = await invoke("--version")
    assert result.exit_code == 0
    assert result.output == f"svc {__version__}\n"


async def test_every_cli_exposure_is_a_command() -> None:
    tree = {tuple(c.words): c for c in cli_tree(builtin_registry())}
    for cap in builtin_registry().capabilities:
        if cap.exposure.cli:
            assert tree[cap.exposure.cli].capability == cap.id
            result = await invoke(*cap.exposure.cli, "--help")
            assert result.exit_code == 0, result.output
            assert cap.id in result.output
            shown = " ".join(result.output.split())
            for param in tree[cap.exposure.cli].parameters:
                switch = param.kind == "boolean" and not param.negatable
                if param.default is None or param.positional or param.sets or param.multiple or switch:
                    continue
                assert f"(default: {msgspec.json.encode(param.default).decode()})" in shown, (cap.id, param.name)


async def test_not_found_is_one_line_on_stderr_and_exit_10() -> None:
    result = await invoke("capabilities", "describe", "no.such")
    assert result.exit_code == 10
    assert result.stderr == "svc: not_found: no capability 'no.such' (see `svc capabilities list`)\n"
    assert result.stdout == ""


async def test_unknown_version_exits_10(tmp_path: Path) -> None:
    (tmp_path / "CHANGELOG.md").write_text("# Changelog\n\n## [1.0.0] - 2026-01-01\n\n### Added\n\n- x\n")
    result = await invoke("--repo", str(tmp_path), "release", "changelog", "--version", "9.9.9")
    assert result.exit_code == 10
    assert result.stderr == "svc: not_found: CHANGELOG.md has no section '9.9.9' (sections: 1.0.0)\n"


async def test_each_command_group_says_what_it_is_for() -> None:
    cli = build_cli()
    groups = {name: cmd for name, cmd in cli.commands.items() if isinstance(cmd, click.Group)}
    assert {"artifacts", "capabilities", "executions", "health", "mesh", "release"} <= set(groups)
    for name, group in groups.items():
        module = builtin_registry().module_by_id.get(name)
        if module is not None and group.callback is None:
            assert group.help == module.description, name
    listing = " ".join((await invoke("--help")).output.split())
    mesh = builtin_registry().module_by_id["mesh"].description
    assert "mesh Runtimes of this repository on the network." in listing  # the description's first clause
    assert mesh in " ".join((await invoke("mesh", "--help")).output.split())
    assert "commands" not in " ".join((await invoke("mesh", "--help")).output.split()[:4])


async def test_usage_errors_exit_2() -> None:
    assert (await invoke("capabilities", "list", "--kind", "nonsense")).exit_code == 2
    assert (await invoke("no-such-command")).exit_code == 2


async def test_readable_output_is_a_table() -> None:
    result = await invoke("capabilities", "list", "--kind", "query")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()  # piped: a header line, then one tab-separated record per line
    header = next(line for line in lines if line.startswith("#capabilities\t"))
    assert header.split("\t")[1:3] == ["id", "module"]
    assert any(line.startswith("capabilities\thealth.live\t") for line in lines)


def _cli_args(cap: Capability, example: dict[str, Any]) -> list[str]:
    spec = next(c for c in cli_tree(builtin_registry()) if c.capability == cap.id)
    args = list(spec.words)
    for param in spec.parameters:
        if param.field is None or param.field not in example:
            continue
        value = example[param.field]
        if param.positional:
            args.append(str(value))
        elif isinstance(value, bool):
            flag = param.name.removeprefix("--")
            args.append(f"--{flag}" if value else f"--no-{flag}")
        else:
            args += [param.name, str(value)]
    return [*args, "--json"]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    checkout = make_checkout(tmp_path / "served")
    (checkout / "CHANGELOG.md").write_text(
        "# Changelog\n\n## [Unreleased]\n\n### Added\n\n- a thing\n\n## [0.1.0] - 2026-01-02\n\n### Fixed\n\n- a bug\n"
    )
    proc = subprocess.Popen([*SVC, "serve", "--port", "0"], cwd=checkout, env=ENV, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    line = proc.stderr.readline().decode()
    assert "svc: serving http://127.0.0.1:" in line, line
    try:
        yield checkout, line.split("serving ")[1].strip()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stderr.close()


@pytest.mark.slow
def test_every_capability_answers_the_same_bytes_over_http_and_the_cli(served: tuple[Path, str]) -> None:
    checkout, url = served
    compared = 0
    with httpx.Client(base_url=url) as http:
        for cap in builtin_registry().capabilities:
            route = cap.exposure.http
            if not cap.exposure.cli or route is None or route.method != "GET" or cap.benchmark.policy == "waived":
                continue
            for example in cap.examples:
                query = {k: ("true" if v is True else "false" if v is False else v) for k, v in example.input.items()}
                over_http = http.get(route.path, params=query)
                assert over_http.status_code == 200, (cap.id, over_http.text)
                over_cli = run_svc(*_cli_args(cap, example.input), cwd=checkout)
                assert over_cli.returncode == 0, (cap.id, over_cli.stderr)
                assert over_cli.stdout == over_http.content + b"\n", cap.id
                compared += 1
    assert compared >= 9


def test_generate_check_passes_on_this_repository() -> None:
    root = Path(__file__).resolve().parents[2]
    result = run_svc("generate", "--check", cwd=root)
    assert result.returncode == 0, result.stdout.decode()
    assert result.stdout.decode().splitlines()[-1] == "generate --check: in sync"


def test_generate_check_fails_on_a_hand_edited_copy(tmp_path: Path) -> None:
    checkout = make_checkout(tmp_path / "copy", git=False)
    assert run_svc("generate", cwd=checkout).returncode == 0
    assert run_svc("generate", "--check", cwd=checkout).returncode == 0
    target = checkout / "docs/generated/openapi.json"
    before = {p: p.read_bytes() for p in (checkout / "docs/generated").iterdir()}
    target.write_bytes(target.read_bytes().replace(b'"title": "svc"', b'"title": "edited"'))
    (checkout / "docs/generated/cli.md").unlink()
    result = run_svc("generate", "--check", cwd=checkout)
    assert result.returncode == 10
    out = result.stdout.decode()
    assert "docs/generated/openapi.json (differs)" in out
    assert "docs/generated/cli.md (missing)" in out
    assert (checkout / "docs/generated/cli.md").exists() is False
    assert target.read_bytes() != before[target]


def test_a_query_imports_no_web_or_mcp_stack_and_no_running_mesh(tmp_path: Path) -> None:
    probe = (
        "import sys\nimport svc.cli._exit\nfrom svc.cli import main\n"
        "svc.cli._exit.arm = lambda: None  # stay for the check below: a read would leave at once\n"
        "for args in (['health', 'live', '--json'], ['plan', 'next']):\n"
        "    try:\n        main(args)\n    except SystemExit:\n        pass\n"
        "heavy = [m for m in ('rich', 'quart', 'quart_trio', 'hypercorn', 'mcp', 'starlette', 'pydantic',"
        " 'markdown_it', 'cryptography', 'jsonschema', 'svc.mesh_udp._cooperation', 'svc.mesh_udp._links',"
        " 'svc.mesh_udp._journal', 'svc.mesh_udp._fold', 'svc.mesh_udp._events', 'svc.mesh_udp._handovers')"
        " if m in sys.modules]\nprint('HEAVY', heavy)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, timeout=60, check=True, env=ENV)
    lines = result.stdout.decode().splitlines()
    assert msgspec.json.decode(lines[0])["alive"] is True
    assert lines[-1] == "HEAVY []"


class Pick(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    item: str
    mode: Literal["start", "stop"]
    loud: bool = False


async def test_presets_and_a_command_that_is_also_a_group() -> None:
    from svc.registry import Capability as Cap
    from svc.registry import (
        CliPreset,
        Example,
        Exposure,
        HttpExposure,
        Module,
        NoInput,
        build_registry,
    )

    async def pick(ctx: Any, params: Pick) -> dict[str, Any]:
        return msgspec.structs.asdict(params)

    async def overview(ctx: Any, params: NoInput) -> dict[str, str]:
        return {"overview": "yes"}

    registry = build_registry(
        [Module(id="demo", title="d", description="d")],
        [
            Cap(
                id="demo.overview",
                module="demo",
                title="Overview",
                description="o",
                input=NoInput,
                output=dict[str, str],
                handler=overview,
                examples=(Example(name="a"),),
                exposure=Exposure(http=HttpExposure(method="GET", path="/api/v1/o"), cli=("demo",)),
            ),
            Cap(
                id="demo.pick",
                module="demo",
                title="Pick",
                description="p",
                input=Pick,
                output=dict[str, Any],
                handler=pick,
                examples=(Example(name="a", input={"item": "x", "mode": "start"}),),
                exposure=Exposure(
                    http=HttpExposure(method="GET", path="/api/v1/p"),
                    cli=("demo", "pick"),
                    cli_presets=(CliPreset(words=("demo", "start"), input={"mode": "start"}, summary="Start one"),),
                ),
            ),
        ],
    )
    cli = build_cli(registry)
    runner = CliRunner()
    group = await runner.invoke(cli, ["demo", "--json"], catch_exceptions=False)
    assert (group.exit_code, group.stdout) == (0, '{"overview":"yes"}\n')
    full = await runner.invoke(cli, ["demo", "pick", "I1", "stop", "--loud", "--json"], catch_exceptions=False)
    assert msgspec.json.decode(full.stdout) == {"item": "I1", "mode": "stop", "loud": True}
    preset = await runner.invoke(cli, ["demo", "start", "I2", "--json"], catch_exceptions=False)
    assert msgspec.json.decode(preset.stdout) == {"item": "I2", "mode": "start", "loud": False}
    assert (await runner.invoke(cli, ["demo", "start", "I2", "stop"])).exit_code == 2


async def test_plan_repair_ledger_appends_what_a_killed_move_left_out_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from svc.layer import Repository
    from svc.plan import _store, move_issue, read_ledger
    from tests.plan._records import issue, milestone, write_layer

    class Killed(BaseException):
        pass

    def die(*_: Any) -> None:
        raise Killed

    root = make_checkout(tmp_path / "checkout", layer=False)
    issues = write_layer(root, [milestone("M1")], [issue("I0001")]) / "issues"
    with monkeypatch.context() as patch:
        patch.setattr(_store, "append_line", die)
        with pytest.raises(Killed):
            move_issue(Repository.discover(root), "I0001", "start", by="svc/test", now=lambda: "2026-11-21T10:00:00Z")
    (issues / ".I0001.yaml.k1ll3d_x.tmp").write_bytes(b"half")
    first = await invoke("--repo", str(root), "plan", "repair-ledger")
    assert (first.exit_code, first.stdout) == (
        0,
        "removed   .ai/repo/project/issues/.I0001.yaml.k1ll3d_x.tmp\nappended  plan_start I0001 2026-11-21T10:00:00Z\n",
    )
    second = await invoke("--repo", str(root), "plan", "repair-ledger")
    assert (second.exit_code, second.stdout) == (
        0,
        "repair-ledger: the ledger agrees with the records; nothing to do\n",
    )
    assert [e["issue"] for e in read_ledger(root / ".ai/local/state/ledger.jsonl").entries] == ["I0001"]
