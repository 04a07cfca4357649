"""The one exception root of svc and the wire codes each class carries.

Every surface translates these in exactly one place (HTTP status and ErrorBody, JSON-RPC code, CLI exit
code), so a capability raises the same error whoever called it::

    SvcError                  500 internal            -32603  exit 1
    ├── InvalidInput          400 invalid_input       -32602  exit 10
    ├── NotFound              404 not_found           -32602  exit 10
    ├── Forbidden             403 forbidden           -32603  exit 10
    ├── MethodNotAllowed      405 method_not_allowed  -32601  exit 2
    ├── PayloadTooLarge       413 payload_too_large   -32600  exit 10
    ├── Refused               422 refused             -32603  exit 10
    ├── Unavailable           503 unavailable         -32603  exit 1
    └── Internal              500 internal            -32603  exit 1

A message is written for the person reading it: it names the field, the id or the reason.
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "Forbidden",
    "Internal",
    "InvalidInput",
    "MethodNotAllowed",
    "NotFound",
    "PayloadTooLarge",
    "Refused",
    "SvcError",
    "Unavailable",
]


class SvcError(Exception):
    """Root of every error svc answers with; an unknown subclass reads as `internal`."""

    status: ClassVar[int] = 500
    code: ClassVar[str] = "internal"
    jsonrpc_code: ClassVar[int] = -32603
    exit_code: ClassVar[int] = 1

    def __init__(self, message: str, *, suggestion: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.suggestion = suggestion

    def __str__(self) -> str:
        return self.message


class InvalidInput(SvcError):
    """A parameter of the wrong type, an unknown field, or a value the capability rejects."""

    status = 400
    code = "invalid_input"
    jsonrpc_code = -32602
    exit_code = 10


class NotFound(SvcError):
    """The input names something the repository does not hold."""

    status = 404
    code = "not_found"
    jsonrpc_code = -32602
    exit_code = 10


class Forbidden(SvcError):
    """The surface may not do this (a repository write over HTTP, a foreign Host or Origin)."""

    status = 403
    code = "forbidden"
    exit_code = 10


class MethodNotAllowed(SvcError):
    """The path exists under another method."""

    status = 405
    code = "method_not_allowed"
    jsonrpc_code = -32601
    exit_code = 2

    def __init__(self, message: str, *, allow: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.allow = allow


class PayloadTooLarge(SvcError):
    """A request body over the size limit."""

    status = 413
    code = "payload_too_large"
    jsonrpc_code = -32600
    exit_code = 10


class Refused(SvcError):
    """A command understood and turned down; the message gives the reason."""

    status = 422
    code = "refused"
    exit_code = 10


class Unavailable(SvcError):
    """The service cannot take this now (stopping, full)."""

    status = 503
    code = "unavailable"


class Internal(SvcError):
    """The capability failed for its own reason; the message names it, never a traceback."""
