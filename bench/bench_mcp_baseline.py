"""The baseline of the MCP benchmark: the SDK's own `MCPServer` serving a tool equivalent to svc's.

    python bench/bench_mcp_baseline.py --answer ANSWER.json --name svc_projections --transport stdio
    python bench/bench_mcp_baseline.py --answer ANSWER.json --name svc_projections --transport http

The tool takes the same arguments as svc's tool (`module`, `unmet`) and answers the recorded svc answer
(`ANSWER.json`) as structured content and as JSON text, as a cached svc query does. stdio runs the way
`MCPServer.run("stdio")` does (anyio on asyncio); HTTP serves `MCPServer.streamable_http_app(json_response=True)`
with hypercorn's asyncio worker on 127.0.0.1 (port 0), logging `serving http://127.0.0.1:PORT` to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import sys
from pathlib import Path
from typing import Any

import anyio
from hypercorn.asyncio import serve
from hypercorn.config import Config
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings

SECURITY = TransportSecuritySettings(
    enable_dns_rebinding_protection=True,
    allowed_hosts=["127.0.0.1:*", "localhost:*"],
    allowed_origins=["http://127.0.0.1:*", "http://localhost:*"],
)


def build(answer: dict[str, Any], name: str) -> MCPServer:
    """An MCPServer with one tool, `name`, answering `answer`."""
    server = MCPServer("baseline", version="0")

    @server.tool(name=name, title="Closure matrix of the surfaces", structured_output=True)
    def tool(module: str | None = None, unmet: bool = False) -> dict[str, Any]:
        """The recorded svc answer."""
        return answer

    return server


async def serve_http(server: MCPServer) -> None:
    """Serve `/mcp` on 127.0.0.1, any free port; log the URL once bound."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    config = Config()
    config.bind = [f"fd://{sock.detach()}"]
    config.accesslog = None
    config.graceful_timeout = 1.0
    app = server.streamable_http_app(json_response=True, transport_security=SECURITY)
    print(f"serving http://127.0.0.1:{port}", file=sys.stderr, flush=True)
    await serve(app, config)  # type: ignore[arg-type]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--answer", type=Path, required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--transport", choices=["stdio", "http"], required=True)
    args = parser.parse_args()
    server = build(json.loads(args.answer.read_text(encoding="utf-8")), args.name)
    if args.transport == "stdio":
        anyio.run(server.run_stdio_async)
    else:
        asyncio.run(serve_http(server))


if __name__ == "__main__":
    main()
