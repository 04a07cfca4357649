"""`svc mcp` as a real process: the SDK's stdio client in both eras, the election, the wire, shutdown.

Real subprocesses on 127.0.0.1 (port 0) with wall-clock bounds, hence `slow`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import mcp_types as types
import msgspec
import pytest
import trio
import trio.lowlevel
from mcp.shared.exceptions import MCPError

from svc.mesh_udp import create_identity
from tests.capabilities.test_plan_take import plan_layer
from tests.cli._mcp_procs import (
    BRIDGING,
    SERVING,
    STOP_SECONDS,
    SVC,
    Mode,
    lease_file,
    mcp_session,
    raw_mcp,
)
from tests.conftest import make_checkout
from tests.mesh_udp._runtimes import declare

pytestmark = [pytest.mark.slow, pytest.mark.bound(120)]
MODES: list[Mode] = ["legacy", "auto"]


def lease(repo: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(lease_file(repo).read_text(encoding="utf-8"))
    return data


async def transports(session_client: Any) -> dict[str, int]:
    result = await session_client.call_tool("svc_mcp", {})
    return {t["id"]: t["attached"] for t in result.structured_content["transports"]}


@pytest.mark.parametrize("mode", MODES)
async def test_a_stdio_session_answers_what_the_http_server_answers(checkout: Path, tmp_path: Path, mode: Mode) -> None:
    async with mcp_session(checkout, tmp_path / "a.log", mode=mode) as session:
        client = session.client
        assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
        url = session.url()
        assert url is not None, session.log()
        tools = {t.name for t in (await client.list_tools()).tools}
        assert {"svc_mcp", "svc_capability", "svc_health"} <= tools
        calls = [
            ("svc_capability", "/api/v1/capability", {"id": "health.live"}),
            ("svc_projections", "/api/v1/capabilities/projections", {"module": "mcp"}),
            ("svc_execution_protocol", "/api/v1/executions/protocol", {}),
        ]
        async with httpx.AsyncClient(base_url=url) as http:
            for tool, path, arguments in calls:
                result = await client.call_tool(tool, arguments)
                route = await http.get(path, params=arguments)
                text = result.content[0]
                assert isinstance(text, types.TextContent)
                assert text.text.encode() == route.content, tool
                assert result.structured_content == msgspec.json.decode(route.content)
        resources = {r.uri for r in (await client.list_resources()).resources}
        assert {"svc://mcp", "svc://issue/I0001", "svc://milestone/mcp"} <= resources
        read = await client.read_resource("svc://issue/I0001")
        content = read.contents[0]
        assert isinstance(content, types.TextResourceContents)
        assert content.text == (checkout / ".ai/repo/project/issues/I0001.yaml").read_text(encoding="utf-8")
        with pytest.raises(MCPError) as caught:
            await client.session.send_request(types.ListPromptsRequest(), types.ListPromptsResult)
        assert caught.value.code == types.METHOD_NOT_FOUND
        bad = await client.call_tool("svc_mcp", {"effect": "everything"})
        assert bad.is_error is True
        assert isinstance(bad.content[0], types.TextContent)
        assert "$.effect" in bad.content[0].text
        assert await transports(client) == {"stdio": 1, "http": 0}
    assert not lease_file(checkout).exists()


async def test_a_second_svc_mcp_bridges_to_the_first_instead_of_binding(checkout: Path, tmp_path: Path) -> None:
    async with mcp_session(checkout, tmp_path / "first.log") as first:
        url = first.url()
        holder = lease(checkout)
        assert holder["url"] == url
        async with mcp_session(checkout, tmp_path / "second.log", mode="auto") as second:
            log = second.log()
            assert SERVING.search(log) is None, log
            bridged = BRIDGING.search(log)
            assert bridged is not None, log
            assert bridged[1] == url
            assert lease(checkout)["pid"] == holder["pid"]
            assert await transports(second.client) == {"stdio": 2, "http": 0}
            assert await transports(first.client) == {"stdio": 2, "http": 0}
            issue = await second.client.read_resource("svc://issue/I0002")
            assert isinstance(issue.contents[0], types.TextResourceContents)
            # A repository writer runs in the bridging process itself, never over HTTP.
            moved = await second.client.call_tool("svc_plan_transition", {"issue": "I9999", "transition": "start"})
            assert isinstance(moved.content[0], types.TextContent)
            assert moved.content[0].text.startswith("not_found: ")
        assert await transports(first.client) == {"stdio": 1, "http": 0}


async def test_a_bridged_take_claims_on_the_server_and_starts_in_the_bridge(tmp_path: Path, state: Path) -> None:
    root = make_checkout(tmp_path / "cooperating", layer=False)
    plan_layer(root, 2)
    key = create_identity(state / "svc" / "node.json").public_key
    declare(root, {"multicast": {"enabled": False}, "trust": {"policy": "allowlist", "allow": [key]}})
    env = {"HOME": os.environ["HOME"], "XDG_STATE_HOME": str(state)}
    async with (
        mcp_session(root, tmp_path / "first.log", env=env) as first,
        mcp_session(root, tmp_path / "second.log", env=env) as second,
    ):
        assert BRIDGING.search(second.log()) is not None, second.log()
        taken = await second.client.call_tool("svc_plan_take", {"start": True, "intent": "build it"})
        answer = taken.structured_content
        assert answer is not None, taken.content
        assert (answer["issue"]["id"], answer["started"]["to"]) == ("I0001", "ACTIVE")
        assert "/board-stdio-" in answer["session"]
        text = (root / ".ai/repo/project/issues/I0001.yaml").read_text(encoding="utf-8")
        assert "started_at:" in text
        held = await first.client.call_tool("svc_mesh_state", {"kind": "claims"})
        assert held.structured_content is not None
        claims = held.structured_content["state"]["claims"]
        assert [(c["key"], c["issue"], c["session"]) for c in claims] == [(answer["claim"], "I0001", answer["session"])]
        refused = await second.client.call_tool("svc_plan_take", {"start": True, "milestone": "M9"})
        assert refused.is_error is True
        # A start the bridge cannot make (its plan lock cannot be opened) releases the claim taken for it.
        (root / ".ai/local/state/plan.lock").unlink()
        (root / ".ai/local/state/plan.lock").mkdir()
        with pytest.raises(MCPError, match="cannot take the plan lock"):
            await second.client.call_tool("svc_plan_take", {"start": True})
        held = await first.client.call_tool("svc_mesh_state", {"kind": "claims", "claims": "all"})
        assert held.structured_content is not None
        standings = {c["issue"]: c["state"]["state"] for c in held.structured_content["state"]["claims"]}
        assert standings == {"I0001": "held", "I0002": "released"}


async def test_two_svc_mcp_started_at_once_elect_exactly_one_server(checkout: Path, tmp_path: Path) -> None:
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    connected = [trio.Event(), trio.Event()]
    counted: list[dict[str, int]] = []
    finished = trio.Event()

    async def one(i: int) -> None:
        async with mcp_session(checkout, logs[i]) as session:
            connected[i].set()
            for event in connected:
                await event.wait()
            counted.append(await transports(session.client))
            if len(counted) == 2:
                finished.set()
            await finished.wait()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(one, 0)
        nursery.start_soon(one, 1)
    texts = [log.read_text(encoding="utf-8") for log in logs]
    assert sorted(SERVING.search(t) is not None for t in texts) == [False, True], texts
    assert sorted(BRIDGING.search(t) is not None for t in texts) == [False, True], texts
    assert counted == [{"stdio": 2, "http": 0}] * 2


async def test_a_checkout_without_a_layer_is_served_without_a_lease(tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    async with mcp_session(bare, tmp_path / "a.log") as session:
        assert session.url() is not None
        assert await transports(session.client) == {"stdio": 1, "http": 0}
    assert not (bare / ".ai").exists()


async def test_a_killed_server_leaves_its_lease_and_the_next_svc_mcp_takes_it_over(
    checkout: Path, tmp_path: Path
) -> None:
    async with raw_mcp(checkout) as first:
        await first.wait_for(SERVING)
        first.process.kill()
        await first.process.wait()
    stale = lease(checkout)
    assert stale["pid"] == first.pid
    async with mcp_session(checkout, tmp_path / "next.log") as next_one:
        log = next_one.log()
        assert "taking the lease over" in log or SERVING.search(log) is not None, log
        url = next_one.url()
        assert url is not None
        current = lease(checkout)
        assert current["pid"] != first.pid
        assert current["url"] == url
        assert await transports(next_one.client) == {"stdio": 1, "http": 0}


async def test_a_bridge_takes_over_when_its_server_dies(checkout: Path, tmp_path: Path) -> None:
    async with raw_mcp(checkout) as first:
        await first.wait_for(SERVING)
        async with mcp_session(checkout, tmp_path / "bridge.log") as bridge:
            assert BRIDGING.search(bridge.log()) is not None
            first.process.kill()
            await first.process.wait()
            # The next request finds the server gone, elects again and is answered from the bridge itself.
            result = await bridge.client.call_tool("svc_mcp", {})
            assert result.is_error is False
            assert {t["id"]: t["attached"] for t in result.structured_content["transports"]}["stdio"] == 1
            assert bridge.url() is not None, bridge.log()
            assert lease(checkout)["pid"] != first.pid


async def test_the_first_port_asked_for_is_8741(checkout: Path) -> None:
    async with raw_mcp(checkout, port=None) as proc:
        match = await proc.wait_for(SERVING)
        assert 8741 <= int(match[2]) < 8741 + 64
        assert lease(checkout)["url"] == match[1]
        proc.process.send_signal(signal.SIGTERM)
        assert await proc.finish() == 0


async def test_a_holder_that_never_binds_makes_svc_mcp_give_up_with_a_message(checkout: Path) -> None:
    policy = checkout / ".ai/repo/policy.yaml"
    policy.write_text(
        policy.read_text(encoding="utf-8")
        .replace("bind_grace_seconds: 15", "bind_grace_seconds: 1")
        .replace("join_seconds: 20", "join_seconds: 1"),
        encoding="utf-8",
    )
    lease_file(checkout).parent.mkdir(parents=True)
    held = {
        "schema": "svc-mcp-lease/v1",
        "pid": 1,
        "token": "1-0",
        "root": str(checkout),
        "url": None,
        "started_at": "2999-01-01T00:00:00Z",
        "version": "999.0",
    }
    lease_file(checkout).write_text(json.dumps(held), encoding="utf-8")

    def run() -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [str(SVC), "--repo", str(checkout), "mcp", "--port", "0"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=60,
            check=False,
        )

    done = await trio.to_thread.run_sync(run)
    assert done.returncode == 1
    assert done.stdout == b""
    assert b"svc: unavailable: pid 1 holds this checkout's lease and has not started serving" in done.stderr
    assert b"Traceback" not in done.stderr


async def test_inspect_prints_the_decision_and_takes_nothing(checkout: Path, tmp_path: Path) -> None:
    def inspect() -> str:
        done = subprocess.run(
            [str(SVC), "--repo", str(checkout), "mcp", "--inspect"], capture_output=True, timeout=60, check=True
        )
        return done.stdout.decode()

    assert await trio.to_thread.run_sync(inspect) == "serve: no process serves this checkout\n"
    assert not lease_file(checkout).exists()
    async with mcp_session(checkout, tmp_path / "a.log") as session:
        url = session.url()
        line = await trio.to_thread.run_sync(inspect)
        assert line == f"bridge {url}: pid {lease(checkout)['pid']} serves this checkout\n"


async def test_standalone_serves_stdio_without_lease_or_http(checkout: Path, tmp_path: Path) -> None:
    async with mcp_session(checkout, tmp_path / "a.log", "--standalone") as session:
        assert not lease_file(checkout).exists()
        assert session.url() is None
        assert "No HTTP server runs beside this session." in (session.client.instructions or "")
        assert await transports(session.client) == {"stdio": 1, "http": 0}


async def test_stdout_carries_nothing_but_the_protocol(checkout: Path) -> None:
    initialize = types.JSONRPCRequest(
        jsonrpc="2.0",
        id=1,
        method="initialize",
        params=types.InitializeRequestParams(
            protocol_version="2025-11-25",
            capabilities=types.ClientCapabilities(),
            client_info=types.Implementation(name="test", version="0"),
        ).model_dump(by_alias=True, exclude_none=True),
    )
    initialized = types.JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized")
    listing = types.JSONRPCRequest(jsonrpc="2.0", id=2, method="tools/list")
    async with raw_mcp(checkout) as proc:
        stdin = proc.process.stdin
        assert stdin is not None
        for message in (initialize, initialized, listing):
            await stdin.send_all(message.model_dump_json(by_alias=True, exclude_none=True).encode() + b"\n")
        stdout = proc.process.stdout
        assert stdout is not None
        with trio.fail_after(30):
            while proc.stdout.count(b"\n") < 2:
                proc.stdout += await stdout.receive_some(65536)
        await stdin.aclose()
        assert await proc.finish() == 0
    lines = bytes(proc.stdout).splitlines()
    assert len(lines) == 2
    answers = [types.jsonrpc_message_adapter.validate_json(line) for line in lines]
    assert [a.id for a in answers if isinstance(a, types.JSONRPCResponse)] == [1, 2]


@pytest.mark.parametrize(
    ("how", "standalone"),
    [("stdin", False), ("SIGINT", False), ("SIGTERM", False), ("stdin", True), ("SIGTERM", True)],
    ids=["stdin", "SIGINT", "SIGTERM", "stdin-standalone", "SIGTERM-standalone"],
)
async def test_closing_stdin_or_a_signal_ends_svc_mcp_quickly_with_exit_0(
    checkout: Path, how: str, standalone: bool
) -> None:
    extra = ("--standalone",) if standalone else ()
    async with raw_mcp(checkout, *extra) as proc:
        if standalone:
            await _wait_until_listening(proc)
        else:
            await proc.wait_for(SERVING)
        started = time.monotonic()
        if how == "stdin":
            assert proc.process.stdin is not None
            await proc.process.stdin.aclose()
        else:
            proc.process.send_signal(signal.SIGINT if how == "SIGINT" else signal.SIGTERM)
        code = await proc.finish()
        elapsed = time.monotonic() - started
    assert code == 0, proc.stderr.decode()
    assert elapsed < STOP_SECONDS
    assert bytes(proc.stdout) == b""
    assert b"Traceback" not in proc.stderr
    assert not lease_file(checkout).exists()


async def _wait_until_listening(proc: Any) -> None:
    """A standalone server logs nothing: wait until it answers a ping on stdin."""
    ping = types.JSONRPCRequest(jsonrpc="2.0", id=0, method="ping")
    stdin, stdout = proc.process.stdin, proc.process.stdout
    await stdin.send_all(ping.model_dump_json(by_alias=True, exclude_none=True).encode() + b"\n")
    received = bytearray()
    with trio.fail_after(30):
        while b"\n" not in received:
            chunk = await stdout.receive_some(65536)
            assert chunk, proc.stderr
            received += chunk
    assert b'"id":0' in received
