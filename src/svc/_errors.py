"""The one exception root of svc and the wire codes each class carries.

Every surface translates these in exactly one place (HTTP status and ErrorBody, MCP result, CLI exit code),
so a capability raises the same error whoever called it. Every list of codes (the OpenAPI `x-svc.errors`, the
code a client reads back into its class) is read from this tree through `ERRORS` and `error_class`::

    SvcError                  500 internal            exit 1
    ├── InvalidInput          400 invalid_input       exit 10
    ├── Forbidden             403 forbidden           exit 10
    ├── NotFound              404 not_found           exit 10
    ├── MethodNotAllowed      405 method_not_allowed  exit 2
    ├── RequestTimeout        408 request_timeout     exit 10
    ├── PayloadTooLarge       413 payload_too_large   exit 10
    ├── Refused               422 refused             exit 10
    ├── HeadersTooLarge       431 headers_too_large   exit 10
    ├── Internal              500 internal            exit 1
    └── Unavailable           503 unavailable         exit 1

MCP answers every error as a tool result with `isError`, except `internal` (JSON-RPC -32603).
A message is written for the person reading it: it names the field, the id or the reason.
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "ERRORS",
    "Forbidden",
    "HeadersTooLarge",
    "Internal",
    "InvalidInput",
    "MethodNotAllowed",
    "NotFound",
    "PayloadTooLarge",
    "Refused",
    "RequestTimeout",
    "SvcError",
    "Unavailable",
    "error_class",
]


class SvcError(Exception):
    """Root of every error svc answers with; an unknown subclass reads as `internal`."""

    status: ClassVar[int] = 500
    code: ClassVar[str] = "internal"
    exit_code: ClassVar[int] = 1
    #: When a surface answers this error (the `when` of the OpenAPI document's `x-svc.errors`).
    when: ClassVar[str] = "the capability failed for its own reason"

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
    exit_code = 10
    when = (
        "a parameter of the wrong type, an unknown parameter or field, a value the capability rejects, "
        "a request body that is not a JSON object or is nested more than 64 levels deep, "
        "or a request that is not valid HTTP/1.1"
    )


class NotFound(SvcError):
    """The input names something the repository does not hold."""

    status = 404
    code = "not_found"
    exit_code = 10
    when = "the input names something the repository does not hold"


class Forbidden(SvcError):
    """The surface may not do this (a repository write over HTTP, a foreign Host or Origin)."""

    status = 403
    code = "forbidden"
    exit_code = 10
    when = "a Host that is not loopback, a foreign Origin, or a repository write asked over HTTP"


class MethodNotAllowed(SvcError):
    """The path exists under another method."""

    status = 405
    code = "method_not_allowed"
    exit_code = 2
    when = "the path exists under another method"

    def __init__(self, message: str, *, allow: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.allow = allow


class PayloadTooLarge(SvcError):
    """A request body over the size limit."""

    status = 413
    code = "payload_too_large"
    exit_code = 10
    when = "a request body over 1 MiB"


class RequestTimeout(SvcError):
    """A request body that did not arrive in time."""

    status = 408
    code = "request_timeout"
    exit_code = 10
    when = "a request body not complete within 10 s of its request head"


class HeadersTooLarge(SvcError):
    """A request line and headers over the size limit."""

    status = 431
    code = "headers_too_large"
    exit_code = 10
    when = "a request line and headers over 16 KiB"


class Refused(SvcError):
    """A command understood and turned down; the message gives the reason."""

    status = 422
    code = "refused"
    exit_code = 10
    when = "a command understood and turned down; the message gives the reason"


class Unavailable(SvcError):
    """The service cannot take this now (stopping, full)."""

    status = 503
    code = "unavailable"
    when = "the server is stopping or a bound is reached"


class Internal(SvcError):
    """The capability failed for its own reason; the message names it, never a traceback."""


#: Every error class a surface answers with: the leaves of the tree, one per code, by status.
ERRORS: tuple[type[SvcError], ...] = tuple(sorted(SvcError.__subclasses__(), key=lambda cls: (cls.status, cls.code)))
_BY_CODE: dict[str, type[SvcError]] = {cls.code: cls for cls in ERRORS}


def error_class(code: str) -> type[SvcError]:
    """The class of an ErrorBody `code`; a code this version does not know reads as `Internal`."""
    return _BY_CODE.get(code, Internal)
