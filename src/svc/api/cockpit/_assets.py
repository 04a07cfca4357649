"""The cockpit's own script, served from the package by exact name."""

from __future__ import annotations

import hashlib
from importlib import resources

from quart import Response, request
from quart_trio import QuartTrio

from svc._errors import NotFound
from svc.api.cockpit._render import ASSET_ROUTE, PAGE_HEADERS, Cockpit

__all__ = ["ASSETS", "routes"]

#: Every file served under `ASSET_ROUTE`, with its media type: nothing else is, whatever the request names.
ASSETS = {"cockpit.js": "text/javascript; charset=utf-8"}


def routes(app: QuartTrio, cockpit: Cockpit) -> None:
    """`GET /cockpit/assets/<name>`: a file of `ASSETS` (ETag, 304), else 404."""
    folder = resources.files("svc.api") / "static" / "cockpit"

    @app.get(f"{ASSET_ROUTE}/<name>")
    async def cockpit_asset(name: str) -> Response:
        media = ASSETS.get(name)
        if media is None:
            raise NotFound(f"no cockpit asset {name!r}")
        body = (folder / name).read_bytes()
        etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
        headers = {**PAGE_HEADERS, "ETag": etag}
        if etag in (tag.strip() for tag in request.headers.get("If-None-Match", "").split(",")):
            return Response(b"", status=304, headers=headers)
        return Response(body, content_type=media, headers=headers)
