"""The HTTP projection: the ASGI app, its pages, and the hypercorn server that serves them."""

from __future__ import annotations

from svc.api._http import MAX_BODY as MAX_BODY
from svc.api._http import SvcApp as SvcApp
from svc.api._http import check_request as check_request
from svc.api._http import error_response as error_response
from svc.api._http import loopback_host as loopback_host
from svc.api._pages import build_pages as build_pages
from svc.api._pages import home_document as home_document
from svc.api._server import DEFAULT_PORT as DEFAULT_PORT
from svc.api._server import bind_loopback as bind_loopback
from svc.api._server import serve_http as serve_http

__all__ = [
    "DEFAULT_PORT",
    "MAX_BODY",
    "SvcApp",
    "bind_loopback",
    "build_pages",
    "check_request",
    "error_response",
    "home_document",
    "loopback_host",
    "serve_http",
]
