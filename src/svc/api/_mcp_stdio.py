"""MCP over this process's stdin and stdout, on trio's own file-descriptor streams.

The SDK's `stdio_server` is given explicit streams built on `trio.lowlevel.FdStream` over duplicates of fd 0
and fd 1, so reading stdin is a cancellable wait in the event loop, never a thread blocked in `read()` that
would hold up shutdown. While the session is served, fd 0 reads the null device and fd 1 is stderr: a stray
`print` or a child process cannot write into the protocol, and only the SDK writes the wire.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

import trio
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from svc.runtime import McpAttachments

__all__ = ["StdioLines", "StdioWriter", "claim_stdio", "serve_stdio"]


class StdioLines:
    """The lines of an input stream, decoded as UTF-8 (the SDK's `async for line in stdin`)."""

    def __init__(self, stream: trio.abc.ReceiveStream) -> None:
        self.stream = stream

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        pending = b""
        while True:
            chunk = await self.stream.receive_some(65536)
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if line.strip():
                    yield line.decode("utf-8", "replace")
        if pending.strip():
            yield pending.decode("utf-8", "replace")


class StdioWriter:
    """Text written to an output stream as UTF-8 (the SDK's `await stdout.write(...)`, `flush()`)."""

    def __init__(self, stream: trio.abc.SendStream) -> None:
        self.stream = stream

    async def write(self, text: str) -> None:
        """Send all of `text`."""
        await self.stream.send_all(text.encode("utf-8"))

    async def flush(self) -> None:
        """Nothing is buffered; a checkpoint keeps the SDK's write loop cancellable."""
        await trio.lowlevel.checkpoint()


@contextlib.contextmanager
def claim_stdio() -> Iterator[tuple[int, int]]:
    """Take the process's stdin and stdout for the MCP wire; yield private duplicates of fd 0 and fd 1.

    While held, fd 0 reads the null device and fd 1 writes to stderr. Both are restored on exit, after
    flushing `sys.stdout` (whatever was printed meanwhile went to stderr). The duplicates belong to the
    caller, who closes them (an `FdStream` does).
    """
    sys.stdout.flush()
    wire_in, wire_out = os.dup(0), os.dup(1)
    saved_in, saved_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
    finally:
        os.close(null)
    try:
        yield wire_in, wire_out
    finally:
        with contextlib.suppress(ValueError, OSError):
            sys.stdout.flush()
        os.dup2(saved_out, 1)
        os.dup2(saved_in, 0)
        os.close(saved_out)
        os.close(saved_in)


async def serve_stdio(
    server: Server[Any],
    reader: trio.abc.ReceiveStream,
    writer: trio.abc.SendStream,
    *,
    attachments: McpAttachments | None = None,
) -> None:
    """Serve one MCP session over `reader` and `writer` until the input ends (EOF) or the task is cancelled.

    The streams stay the caller's to close. While the session runs it is counted in `attachments.stdio`.
    """
    async with stdio_server(
        stdin=StdioLines(reader),  # type: ignore[arg-type]
        stdout=StdioWriter(writer),  # type: ignore[arg-type]
    ) as (read_stream, write_stream):
        if attachments is not None:
            attachments.attach("stdio")
        try:
            await server.run(read_stream, write_stream, server.create_initialization_options())
        finally:
            if attachments is not None:
                attachments.detach("stdio")
