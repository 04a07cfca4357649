"""A minimal HTTP/1.1 client over one blocking keep-alive socket, for loopback benchmarking only.

It builds request bytes once and reads responses framed by Content-Length (what svc and the floor send).
It is deliberately tiny: httpx and friends cost more per request than the servers being measured.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["Connection", "Origin", "Response", "WireError", "build_request", "closes", "parse_head"]

LOOPBACK = "127.0.0.1"
_HEAD_END = b"\r\n\r\n"
_RECV_SIZE = 65536


class WireError(Exception):
    """The peer answered something this client cannot frame, or closed the connection."""


@dataclass(frozen=True, slots=True)
class Origin:
    """A loopback HTTP origin: `http://127.0.0.1:<port>`."""

    host: str
    port: int

    @classmethod
    def parse(cls, url: str) -> Origin:
        """Parse `http://127.0.0.1:<port>`; anything that is not plain-HTTP loopback is refused.

        Raises:
            ValueError: the URL is not `http://127.0.0.1:<port>`.
        """
        parts = urlsplit(url)
        if parts.scheme != "http" or parts.hostname != LOOPBACK or parts.port is None:
            raise ValueError(f"{url!r} is not http://{LOOPBACK}:<port>; the bench only talks to loopback")
        return cls(host=LOOPBACK, port=parts.port)

    @property
    def url(self) -> str:
        """The origin as a URL, without a trailing slash."""
        return f"http://{self.host}:{self.port}"

    @property
    def authority(self) -> str:
        """The `Host` header value."""
        return f"{self.host}:{self.port}"


@dataclass(frozen=True, slots=True)
class Response:
    """One HTTP response: status, headers in wire order (names lower-cased), and body."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes

    def header(self, name: str) -> str | None:
        """The first header called `name` (lower-case), or None."""
        return next((value for key, value in self.headers if key == name), None)


def build_request(origin: Origin, method: str, target: str, body: bytes | None = None) -> bytes:
    """The bytes of one keep-alive HTTP/1.1 request for `target` (path and query)."""
    lines = [f"{method} {target} HTTP/1.1", f"Host: {origin.authority}", "Accept: */*"]
    if body is not None:
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("ascii") + (body or b"")


def parse_head(head: bytes) -> tuple[int, tuple[tuple[str, str], ...], int]:
    """Parse a response head (without the blank line): status, headers, Content-Length.

    Raises:
        WireError: the head is malformed or has no Content-Length (chunked bodies are not supported).
    """
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise WireError(f"not an HTTP/1.x status line: {status_line!r}")
    headers = tuple(_header(line) for line in header_lines if line)
    length = next((value for name, value in headers if name == "content-length"), None)
    if length is None or not length.isdigit():
        raise WireError("the response has no Content-Length; this client frames no other body")
    return int(parts[1]), headers, int(length)


def _header(line: str) -> tuple[str, str]:
    name, sep, value = line.partition(":")
    if not sep:
        raise WireError(f"not a header line: {line!r}")
    return name.strip().lower(), value.strip()


class Connection:
    """One blocking keep-alive connection that sends a request and reads its whole response.

    When a response says `Connection: close` (hypercorn closes a connection after
    `keep_alive_max_requests`, 1000 by default), the next `reopen_if_closing` or `exchange` opens a new one.
    """

    def __init__(self, origin: Origin, *, timeout: float = 10.0) -> None:
        self.origin = origin
        self.timeout = timeout
        self.reconnects = 0
        self._sock = self._connect()
        self._buffer = b""
        self._closing = False

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _connect(self) -> socket.socket:
        sock = socket.create_connection((self.origin.host, self.origin.port), timeout=self.timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def close(self) -> None:
        """Close the socket."""
        self._sock.close()

    def reopen_if_closing(self) -> None:
        """Open a new connection if the server announced it closes this one (call it outside timings)."""
        if self._closing:
            self._sock.close()
            self._sock = self._connect()
            self._buffer = b""
            self._closing = False
            self.reconnects += 1

    def exchange(self, request: bytes) -> Response:
        """Send one request (as built by `build_request`) and read its response."""
        self.reopen_if_closing()
        self._sock.sendall(request)
        while (end := self._buffer.find(_HEAD_END)) < 0:
            self._fill()
        status, headers, length = parse_head(self._buffer[:end])
        start = end + len(_HEAD_END)
        while len(self._buffer) < start + length:
            self._fill()
        body = self._buffer[start : start + length]
        self._buffer = self._buffer[start + length :]
        response = Response(status=status, headers=headers, body=body)
        self._closing = closes(response.headers)
        return response

    def _fill(self) -> None:
        chunk = self._sock.recv(_RECV_SIZE)
        if not chunk:
            raise WireError("the server closed the connection mid-response")
        self._buffer += chunk


def closes(headers: tuple[tuple[str, str], ...]) -> bool:
    """Whether response headers announce that the server closes the connection after this response."""
    return any(name == "connection" and "close" in value.lower() for name, value in headers)
