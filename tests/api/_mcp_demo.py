"""A small registry exposed to MCP for the error paths the builtin registry cannot show.

`demo.echo` (a query), `demo.raise` (raises the SvcError named by `code`), `demo.crash` (a bug), and
`demo.write` (a repository writer).
"""

from __future__ import annotations

from typing import Literal

import msgspec

from svc import Forbidden, InvalidInput, NotFound, Refused, SvcError, Unavailable
from svc.registry import (
    Capability,
    Example,
    Exposure,
    HttpExposure,
    McpExposure,
    McpResource,
    Module,
    Registry,
    build_registry,
)
from svc.runtime import Context

DEMO = Module(id="demo", title="Demo", description="Capabilities that exist only for the MCP tests.")
SECRET = "do-not-leak-5e1f"
RAISED: dict[str, SvcError] = {
    "invalid_input": InvalidInput("the demo refuses this value"),
    "not_found": NotFound("no demo object 'x-1'"),
    "forbidden": Forbidden("the demo forbids this"),
    "refused": Refused("claim_conflict: the demo is claimed by someone else"),
    "unavailable": Unavailable("the demo is stopping"),
}


class Echo(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What `demo.echo` answers back."""

    count: int = 0
    note: str | None = None


class Raise(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Which SvcError `demo.raise` raises."""

    code: Literal["invalid_input", "not_found", "forbidden", "refused", "unavailable"] = "not_found"


class Empty(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """No input."""


class Written(msgspec.Struct, frozen=True, kw_only=True):
    """What `demo.write` says it wrote."""

    wrote: str


async def echo(ctx: Context, params: Echo) -> Echo:
    return params


async def raise_(ctx: Context, params: Raise) -> Raise:
    raise RAISED[params.code]


async def crash(ctx: Context, params: Empty) -> Empty:
    raise RuntimeError(f"handler exploded: {SECRET}")


async def write(ctx: Context, params: Empty) -> Written:
    return Written(wrote="the repository")


def _cap(
    cid: str,
    handler: object,
    input: type[msgspec.Struct],
    output: type[msgspec.Struct],
    *,
    kind: Literal["query", "command"] = "query",
    resource: bool = False,
    writes: bool = False,
) -> Capability:
    method: Literal["GET", "POST"] = "GET" if kind == "query" else "POST"
    return Capability(
        id=f"demo.{cid}",
        module="demo",
        title=f"Demo {cid}",
        description=f"The demo capability {cid}.",
        input=input,
        output=output,
        handler=handler,  # type: ignore[arg-type]
        examples=(Example(name="plain", input={}),),
        kind=kind,
        exposure=Exposure(
            http=HttpExposure(method=method, path=f"/api/v1/demo/{cid}"),
            mcp=McpExposure(
                tool=f"demo_{cid}",
                resource=McpResource(uri=f"svc://demo/{cid}", name=cid) if resource else None,
            ),
        ),
        writes_repository=writes,
    )


def demo_registry() -> Registry:
    """The demo registry (a new one per call)."""
    return build_registry(
        [DEMO],
        [
            _cap("echo", echo, Echo, Echo, resource=True),
            _cap("raise", raise_, Raise, Raise),
            _cap("crash", crash, Empty, Empty, resource=True),
            _cap("write", write, Empty, Written, kind="command", writes=True),
        ],
    )
