"""`distribution.*` over real loopback HTTP, MCP and the command line: golden answers, errors, no network.

The fixture checkout (svc's own layer) carries the records of `tests/layer/_distribution_layer.py`; the model
is the fixture model through `SVC_SHARE`, or svc's packaged one where a test says so. The running
interpreter's facts (platform, C library, version, commit) are pinned so the answers are golden.
`SVC_UPDATE_GOLDEN=1` rewrites the golden files under `tests/capabilities/golden/`.
"""

from __future__ import annotations

import functools
import os
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import mcp_types as types
import msgspec
import pytest
import trio
from asyncclick.testing import CliRunner
from mcp.shared.exceptions import MCPError

from svc.api import LocalBackend, serve_http
from svc.cli import build_cli
from svc.host._service import open_service
from svc.layer import Repository
from svc.layer import _distribution_reports as reports
from svc.layer._share import SHARE_ENV
from svc.runtime import Actor, Executor
from tests.api._wire import assert_error
from tests.api.test_mcp import connect
from tests.layer._distribution_layer import (
    MODEL,
    declare_repository_model,
    fixture_records,
    model,
    record,
    write_distribution_checkout,
    write_records,
    write_share,
)

ACTOR = Actor(kind="internal")
GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("SVC_UPDATE_GOLDEN") == "1"
COMMIT = "c8f0e4c5017cd2aefa434a12c6fa95c615a3f9a8"
#: (capability, route, query, tool, CLI words, golden file) of the five operations.
OPERATIONS: list[tuple[str, str, dict[str, str], str, list[str], str]] = [
    ("distribution.model", "/api/v1/distribution", {}, "svc_distribution", ["show"], "distribution-model"),
    (
        "distribution.artifact",
        "/api/v1/distribution/artifact",
        {"target": "aarch64-apple-darwin", "tag": "v0.10.0"},
        "svc_artifact",
        ["artifact", "aarch64-apple-darwin", "v0.10.0"],
        "distribution-artifact",
    ),
    ("distribution.build", "/api/v1/distribution/build", {}, "svc_build", ["build"], "distribution-build"),
    (
        "distribution.releases",
        "/api/v1/distribution/releases",
        {},
        "svc_releases",
        ["releases"],
        "distribution-releases",
    ),
    ("distribution.status", "/api/v1/distribution/status", {}, "svc_install_status", ["status"], "distribution-status"),
]


def _golden(name: str, body: bytes) -> None:
    text = msgspec.json.format(body, indent=2).decode() + "\n"
    path = GOLDEN / f"{name}.json"
    if UPDATE:
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert text == path.read_text(), f"{name}: the answer differs from {path.name}"


@pytest.fixture
def pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    """This interpreter as Linux x86_64 glibc, svc 0.10.1 from a source checkout."""
    monkeypatch.setattr("sysconfig.get_platform", lambda: "linux-x86_64")
    monkeypatch.setattr("platform.libc_ver", lambda *_a, **_k: ("glibc", "2.36"))
    monkeypatch.setattr(reports, "package_version", lambda: "0.10.1")


@pytest.fixture
def share(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fixture model as svc's share."""
    directory = write_share(tmp_path / "share", MODEL)
    monkeypatch.setenv(SHARE_ENV, str(directory))
    return directory


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A checkout carrying the fixture records."""
    return write_distribution_checkout(tmp_path / "checkout", fixture_records())


@asynccontextmanager
async def served(checkout: Path) -> AsyncIterator[tuple[Executor, httpx.AsyncClient]]:
    """The service over `checkout` (commit pinned) and a client of its real server on 127.0.0.1."""
    async with open_service(Repository.discover(checkout), surface="http", watch=False) as ex:
        ex.runtime.commit = COMMIT
        async with trio.open_nursery() as nursery:
            shutdown = trio.Event()
            url: str = await nursery.start(functools.partial(serve_http, ex, port=0, shutdown=shutdown))
            async with httpx.AsyncClient(base_url=url) as http:
                yield ex, http
            shutdown.set()


async def call(ex: Executor, cid: str, **params: Any) -> bytes:
    cap = ex.runtime.registry.by_id[cid]
    return await ex.call(cap, ex.decode_value(cap, params), actor=ACTOR)


async def invoke(*args: str) -> Any:
    return await CliRunner().invoke(build_cli(), list(args), catch_exceptions=False)


@pytest.mark.usefixtures("pinned", "share")
async def test_the_five_answer_their_golden_over_http_and_every_example_answers(root: Path) -> None:
    async with served(root) as (ex, http):
        for cid, route, query, _, _, golden in OPERATIONS:
            answer = await http.get(route, params=query)
            assert answer.status_code == 200, (cid, answer.text)
            assert answer.content == await call(ex, cid, **query), cid
            assert str(root) not in answer.text
            _golden(golden, answer.content)
            for example in ex.runtime.registry.by_id[cid].examples:
                assert (await http.get(route, params=example.input)).status_code == example.status, example.name
        releases = (await http.get("/api/v1/distribution/releases")).json()
    assert [r["tag"] for r in releases["releases"]] == ["v0.10.1", "v0.10.1rc1", "v0.10.0", "v0.9.0"]
    assert releases["latest"]["tag"] == "v0.10.0"


@pytest.mark.usefixtures("pinned")
async def test_svcs_packaged_model_is_its_golden_and_its_build_matches_a_target(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SHARE_ENV, raising=False)
    async with served(root) as (_, http):
        model_answer = await http.get("/api/v1/distribution")
        build = (await http.get("/api/v1/distribution/build")).json()
        wheel = (
            await http.get("/api/v1/distribution/artifact", params={"target": "macos-x86_64", "tag": "v0.1.0"})
        ).json()
    _golden("distribution-model-packaged", model_answer.content)
    assert build["distribution_target"] == "linux-x86_64-gnu"
    assert wheel["url"] == "https://github.com/svc/svc/releases/download/v0.1.0/svc-0.1.0-py3-none-any.whl"


@pytest.mark.usefixtures("share")
async def test_the_errors_over_http(root: Path) -> None:
    async with served(root) as (_, http):
        artifact = "/api/v1/distribution/artifact"
        assert_error(await http.get(artifact, params={"target": "plan9", "tag": "v1.0.0"}), 404, "not_found", "plan9")
        assert_error(
            await http.get(artifact, params={"target": "windows-x86_64", "tag": "v1.0.0"}),
            400,
            "invalid_input",
            "not published",
            "POSIX shell",
        )
        for tag in ("1.0.0", "latest", "v", "v1/../x"):
            assert_error(
                await http.get(artifact, params={"target": "macos-aarch64", "tag": tag}), 400, "invalid_input", "tag"
            )
        assert_error(await http.get(artifact, params={"target": "macos-aarch64"}), 400, "invalid_input", "tag")
        assert_error(await http.get(artifact, params={"target": "", "tag": "v1"}), 400, "invalid_input", "target")
        for route in ("/api/v1/distribution", "/api/v1/distribution/status", "/api/v1/distribution/build"):
            assert_error(await http.get(route, params={"verbose": "1"}), 400, "invalid_input", "verbose")


async def test_without_a_model_four_are_404_and_build_still_answers(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty-share"
    empty.mkdir()
    monkeypatch.setenv(SHARE_ENV, str(empty))
    async with served(root) as (_, http):
        for route, query in (
            ("/api/v1/distribution", {}),
            ("/api/v1/distribution/status", {}),
            ("/api/v1/distribution/releases", {}),
            ("/api/v1/distribution/artifact", {"target": "macos-aarch64", "tag": "v1.0.0"}),
        ):
            assert_error(await http.get(route, params=query), 404, "not_found", "no distribution model")
        build = await http.get("/api/v1/distribution/build")
    assert build.status_code == 200
    assert build.json()["distribution_target"] is None


async def test_a_broken_model_and_an_unparseable_record_are_500_naming_them(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SHARE_ENV, str(write_share(tmp_path / "broken", model(targets=[]))))
    async with served(root) as (_, http):
        for route in ("/api/v1/distribution", "/api/v1/distribution/build", "/api/v1/distribution/status"):
            assert_error(await http.get(route), 500, "internal", "targets is empty")
    monkeypatch.setenv(SHARE_ENV, str(write_share(tmp_path / "share", MODEL)))
    write_records(root, [record("1.0.0"), ("v2.0.0.yaml", "schema: release/v1\nversion: 2.0.0\ntag: [\n")])
    async with served(root) as (_, http):
        for route in ("/api/v1/distribution/releases", "/api/v1/distribution/status"):
            message = assert_error(await http.get(route), 500, "internal", ".ai/repo/releases/v2.0.0.yaml")
            assert str(root) not in message
    write_records(root, [{**record("1.0.0"), "channel": "beta"}])
    async with served(root) as (_, http):
        assert_error(
            await http.get("/api/v1/distribution/releases"), 500, "internal", ".ai/repo/releases/v1.0.0.yaml", "channel"
        )


@pytest.mark.usefixtures("pinned")
async def test_the_repositorys_own_model_wins_over_the_share(root: Path, share: Path) -> None:
    declare_repository_model(root, model(project={**MODEL["project"], "binary": "repo-tool"}))
    async with served(root) as (_, http):
        answer = (await http.get("/api/v1/distribution")).json()
        status = (await http.get("/api/v1/distribution/status")).json()
    assert answer["binary"] == "repo-tool"
    assert answer["install_and_init_command"] == "curl -fsSL https://acme.example/tool/install.sh | sh -s -- --init"
    # The records name `tool-…` artifacts, which the repository's model no longer derives.
    assert status["checks"][4]["state"] == "failed"


@pytest.mark.usefixtures("share")
async def test_status_reaches_no_network(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    attempts: list[object] = []

    def refuse(sock: socket.socket, address: object) -> None:
        attempts.append(address)
        raise OSError("the network is not for distribution.status")

    async with open_service(Repository.discover(root), surface="http", watch=False) as ex:
        await ex.runtime.objects_async()
        monkeypatch.setattr(socket.socket, "connect", refuse)
        monkeypatch.setattr(socket.socket, "connect_ex", refuse)
        answer = msgspec.json.decode(await call(ex, "distribution.status"))
    assert answer["installable"] is True
    assert answer["checks"][-1] == {
        "id": "public",
        "state": "unknown",
        "observed": "not checked here; this report reaches no network",
        "cause": None,
        "next": "curl -fsSL https://acme.example/tool/releases/latest.json | head -1",
    }
    assert attempts == []


@pytest.mark.usefixtures("pinned", "share")
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_the_tools_answer_over_mcp(root: Path, mode: Any) -> None:
    async with open_service(Repository.discover(root), surface="http", watch=False) as ex:
        ex.runtime.commit = COMMIT
        expected = {tool: await call(ex, cid, **query) for cid, _, query, tool, _, _ in OPERATIONS}
        async with connect(LocalBackend(ex), mode) as client:
            for cid, _, query, tool, _, _ in OPERATIONS:
                result = await client.call_tool(tool, query)
                text = result.content[0]
                assert isinstance(text, types.TextContent)
                assert (result.is_error, text.text.encode()) == (False, expected[tool]), cid
            errors = [
                (await client.call_tool("svc_artifact", {"target": "plan9", "tag": "v1.0.0"}), "not_found"),
                (
                    await client.call_tool("svc_artifact", {"target": "windows-x86_64", "tag": "v1.0.0"}),
                    "invalid_input",
                ),
                (await client.call_tool("svc_artifact", {"target": "macos-aarch64", "tag": "1.0"}), "invalid_input"),
                (await client.call_tool("svc_build", {"x": 1}), "invalid_input"),
            ]
            for result, code in errors:
                assert result.is_error is True
                error = result.content[0]
                assert isinstance(error, types.TextContent)
                assert error.text.startswith(f"{code}: ")
                assert str(root) not in error.text
            write_records(root, [("v2.0.0.yaml", "schema: release/v1\nversion: [\n")])
            ex.runtime.generation.bump()
            await ex.runtime.objects_async(fresh=True)
            with pytest.raises(MCPError) as caught:
                await client.call_tool("svc_releases", {})
    assert caught.value.code == types.INTERNAL_ERROR
    assert ".ai/repo/releases/v2.0.0.yaml" in caught.value.message
    assert str(root) not in caught.value.message


@pytest.mark.usefixtures("pinned", "share")
async def test_the_commands_print_the_http_bytes_and_exit_by_the_error(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with open_service(Repository.discover(root), surface="http", watch=False) as ex:
        expected = {cid: await call(ex, cid, **query) for cid, _, query, _, _, _ in OPERATIONS}
        commit = ex.runtime.commit
    for cid, _, _, _, words, _ in OPERATIONS:
        result = await invoke("--repo", str(root), "distribution", *words, "--json")
        assert result.exit_code == 0, (cid, result.output)
        if cid == "distribution.build":
            # The command's own process knows svc's commit as the service above did.
            assert msgspec.json.decode(result.stdout)["commit"] == (commit or "unknown")
        else:
            assert result.stdout.encode() == expected[cid] + b"\n", cid
        readable = await invoke("--repo", str(root), "distribution", *words)
        assert readable.exit_code == 0
        assert str(root) not in readable.stdout
    status = await invoke("--repo", str(root), "distribution", "status")
    assert "installable" in status.stdout
    unknown = await invoke("--repo", str(root), "distribution", "artifact", "plan9", "v1.0.0")
    assert unknown.exit_code == 10
    assert unknown.stderr.startswith("svc: not_found: the distribution model declares no target 'plan9'")
    unpublished = await invoke("--repo", str(root), "distribution", "artifact", "windows-x86_64", "v1.0.0")
    assert (unpublished.exit_code, unpublished.stderr.split(":")[1]) == (10, " invalid_input")
    bad_tag = await invoke("--repo", str(root), "distribution", "artifact", "macos-aarch64", "latest")
    assert (bad_tag.exit_code, bad_tag.stderr.split(":")[1]) == (10, " invalid_input")
    assert (await invoke("--repo", str(root), "distribution", "artifact", "macos-aarch64")).exit_code == 2
    empty = tmp_path / "none"
    empty.mkdir()
    monkeypatch.setenv(SHARE_ENV, str(empty))
    missing = await invoke("--repo", str(root), "distribution", "show")
    assert (missing.exit_code, missing.stderr.split(":")[1]) == (10, " not_found")
    monkeypatch.setenv(SHARE_ENV, str(write_share(tmp_path / "broken", model(schema="x"))))
    broken = await invoke("--repo", str(root), "distribution", "status")
    assert broken.exit_code == 1
    assert "schema is `x`" in broken.stderr
