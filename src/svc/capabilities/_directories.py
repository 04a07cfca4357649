"""`directories.list`: the layer's directories, what each owes, and the context contracts that apply to it.

Derived from the object index of the current generation (`svc.layer.directory_report`) in a worker thread.
"""

from __future__ import annotations

from typing import Annotated

import msgspec
import trio
from msgspec import Meta

from svc.layer import DirectoryReport, DirectoryState, directory_report
from svc.layer._required import require_layer
from svc.registry import Cache, Declarations, Example, McpResource, Module
from svc.runtime import Context

MODULE = Module(
    id="directories",
    title="Directory contracts",
    description=(
        "The layer's directories as a hierarchy: the context contract each declares, whether it owes one and "
        "which contract decided, and the chain of contracts that applies once inheritance is resolved."
    ),
)


#: A path inside the layer: `.ai` or below it (a leading `./` and a trailing `/` allowed), forward slashes,
#: no control character and no `.` or `..` segment.
_SEGMENT = r"[^/\\\x00-\x1f\x7f]"
_LAYER_PATH = (
    rf"^(?:\./)?\.ai(?:/(?:[^/.\\\x00-\x1f\x7f]{_SEGMENT}*|\.[^/.\\\x00-\x1f\x7f]{_SEGMENT}*|\.\.{_SEGMENT}+))*/?$"
)


class DirectoriesInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Which directories to answer for, and whether to resolve their effective chains."""

    path: Annotated[
        Annotated[str, Meta(pattern=_LAYER_PATH)] | None,
        Meta(
            description=(
                "one directory, repository-relative and inside .ai (e.g. .ai/repo/rules); its effective chain "
                "is always resolved. Absent: every directory of the layer"
            )
        ),
    ] = None
    effective: Annotated[bool, Meta(description="resolve the effective chain of every directory answered")] = False
    state: Annotated[DirectoryState | None, Meta(description="keep only directories in this state")] = None


async def list_(ctx: Context, params: DirectoriesInput) -> DirectoryReport:
    """The directories asked for (400 for a path outside the layer, 404 for one the index knows nothing under).

    A checkout without `.ai/` is 404: an empty tree would read as a layer with nothing owed.
    """
    require_layer(ctx.runtime.repository)
    index = await ctx.runtime.objects_async()

    def report() -> DirectoryReport:
        return directory_report(index, path=params.path, effective=params.effective, state=params.state)

    return await trio.to_thread.run_sync(report)


declare = Declarations[Context](MODULE, source=__name__)

CAPABILITIES = (
    declare.query(
        "list",
        title="Directory contracts",
        description=(
            "Every directory of the layer the object index knows (the directory of each object under .ai and "
            "every directory above it): its own context contract, whether it is documented, exempt or owes a "
            "contract, the contracts that decided (`governed_by`, `exempted_by`), and with `effective` (or for "
            "a named `path`) the chain of contracts that applies, least specific first. The tallies count the "
            "whole layer. A path that is absolute, climbs (`..`) or lies outside .ai is 400; a directory the index "
            "holds nothing under is 404, and so is a checkout without an .ai/ layer."
        ),
        input=DirectoriesInput,
        output=DirectoryReport,
        handler=list_,
        examples=(
            Example(name="whole-tree"),
            Example(name="one-directory", input={"path": ".ai/repo/rules"}),
            Example(name="effective-everywhere", input={"effective": True}),
            Example(name="owed", input={"state": "owed"}),
        ),
        http="GET /api/v1/directories",
        tool="svc_directories",
        resource=McpResource(uri="svc://directories", name="directories"),
        cache=Cache(policy="process", max_entries=8, ttl_seconds=5),
    ),
)
