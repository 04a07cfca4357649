"""Running `svc mcp` as a real process: through the SDK's stdio client, or raw (for signals and the wire)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import trio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

SVC = Path(sys.executable).parent / "svc"
#: Logged once the URL is in the lease (the only line of `svc mcp` naming its URL).
SERVING = re.compile(r"svc: serving (http://127\.0\.0\.1:([0-9]+)) — MCP on stdio")
BRIDGING = re.compile(r"svc: bridging this stdio session to (http://127\.0\.0\.1:[0-9]+)/mcp")
#: How long a process may take to start and answer (the machine may be busy).
START_SECONDS = 30.0
#: How long a stopped `svc mcp` may take to exit.
STOP_SECONDS = 2.0
Mode = Literal["legacy", "auto"]


def mcp_args(repo: Path, *extra: str, port: str | None = "0") -> list[str]:
    """`svc --repo REPO mcp --port 0 ...` (port 0: any free port, so tests never collide; None: the default)."""
    ports = ["--port", port] if port is not None else []
    return [str(SVC), "--repo", str(repo), "mcp", *ports, *extra]


def lease_file(repo: Path) -> Path:
    return repo / ".ai/local/state/mcp/server.json"


@dataclass
class Session:
    """An SDK client on a `svc mcp` process, and the file its stderr goes to."""

    client: Client
    stderr: Path

    def log(self) -> str:
        return self.stderr.read_text(encoding="utf-8", errors="replace")

    def url(self) -> str | None:
        match = SERVING.search(self.log())
        return match[1] if match else None


@asynccontextmanager
async def mcp_session(
    repo: Path, stderr: Path, *extra: str, mode: Mode = "legacy", env: dict[str, str] | None = None
) -> AsyncIterator[Session]:
    """The SDK's stdio client on `svc mcp` (started and stopped by the SDK, as an MCP client does).

    `env` adds to the few variables the SDK passes on (`HOME`, `PATH`, ...).
    """
    params = StdioServerParameters(command=str(SVC), args=mcp_args(repo, *extra)[1:], cwd=str(repo), env=env)
    with stderr.open("a", encoding="utf-8") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode=mode) as client:
            yield Session(client, stderr)


@dataclass
class Raw:
    """A `svc mcp` process with its three pipes, and what it wrote so far."""

    process: trio.Process
    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)

    @property
    def pid(self) -> int:
        return self.process.pid

    def url(self) -> str | None:
        match = SERVING.search(self.stderr.decode(errors="replace"))
        return match[1] if match else None

    async def wait_for(self, pattern: re.Pattern[str]) -> re.Match[str]:
        """Read stderr until `pattern` shows (bounded by START_SECONDS)."""
        stream = self.process.stderr
        assert stream is not None
        with trio.fail_after(START_SECONDS):
            while (match := pattern.search(self.stderr.decode(errors="replace"))) is None:
                chunk = await stream.receive_some(65536)
                assert chunk, f"svc mcp exited: {self.stderr.decode(errors='replace')}"
                self.stderr += chunk
        return match

    async def finish(self) -> int:
        """Wait (at most STOP_SECONDS) for the exit; drain both outputs."""
        with trio.fail_after(STOP_SECONDS):
            code = await self.process.wait()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_drain, self.process.stdout, self.stdout)
            nursery.start_soon(_drain, self.process.stderr, self.stderr)
        return code


async def _drain(stream: trio.abc.ReceiveStream | None, into: bytearray) -> None:
    assert stream is not None
    while chunk := await stream.receive_some(65536):
        into += chunk


@asynccontextmanager
async def raw_mcp(repo: Path, *extra: str, port: str | None = "0") -> AsyncIterator[Raw]:
    """`svc mcp` with pipes for stdin, stdout and stderr; killed at the end if still running."""
    process = await trio.lowlevel.open_process(
        mcp_args(repo, *extra, port=port),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        yield Raw(process)
    finally:
        if process.returncode is None:
            process.kill()
        with trio.CancelScope(shield=True):
            await process.wait()
            for stream in (process.stdin, process.stdout, process.stderr):
                if stream is not None:
                    await stream.aclose()
