"""svc: one capability registry over a repository's AI layer, served over HTTP, MCP and a command line."""

from __future__ import annotations

from svc._errors import Forbidden as Forbidden
from svc._errors import HeadersTooLarge as HeadersTooLarge
from svc._errors import Internal as Internal
from svc._errors import InvalidInput as InvalidInput
from svc._errors import MethodNotAllowed as MethodNotAllowed
from svc._errors import NotFound as NotFound
from svc._errors import PayloadTooLarge as PayloadTooLarge
from svc._errors import Refused as Refused
from svc._errors import RequestTimeout as RequestTimeout
from svc._errors import SvcError as SvcError
from svc._errors import Unavailable as Unavailable
from svc._version import __version__ as __version__

__all__ = [
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
    "__version__",
]
