"""The typed builder every capability module declares through.

One `Declarations` per module binds the module, its source file and the handler context type. Its `query`
and `command` methods are generic over the input and output Structs: mypy strict checks the handler against
them (its context, its input and its output), then the declaration is stored erased in a `Capability`.
Ids, routes, tool names and CLI words are given once, as the spec writes them::

    declare = Declarations[Context](MODULE, source=__name__)
    declare.query(
        "next",
        title="Next issue",
        description="...",
        input=MilestoneFilter,
        output=PlanNextIssue,
        read=next_,
        examples=(Example(name="next"),),
        http="GET /api/v1/plan/next",
        tool="svc_plan_next",
        cli="plan next",
    )
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast, overload

import msgspec

from svc.registry._declaration import (
    BENCHMARKED,
    NO_CACHE,
    Benchmark,
    Cache,
    Capability,
    CliPreset,
    Example,
    Exposure,
    HttpExposure,
    McpExposure,
    McpResource,
    Module,
    Stability,
)

if TYPE_CHECKING:
    from svc.layer import Repository

__all__ = ["Declarations", "one_of"]

CtxT = TypeVar("CtxT")
InT = TypeVar("InT", bound=msgspec.Struct)
OutT = TypeVar("OutT")


A = TypeVar("A")
B = TypeVar("B")
C = TypeVar("C")


@overload
def one_of(first: type[A], second: type[B], /) -> type[A | B]: ...
@overload
def one_of(first: type[A], second: type[B], third: type[C], /) -> type[A | B | C]: ...
def one_of(*members: type[Any]) -> Any:
    """An output that is one of several Structs (`PlanMilestoneRecord | PlanIssueRecord`), typed as their union.

    A handler declared with it must return one of the members: mypy checks it against the union.
    """
    return functools.reduce(operator.or_, members)


def _http(route: str | None) -> HttpExposure | None:
    if route is None:
        return None
    method, _, path = route.partition(" ")
    if method not in ("GET", "POST") or not path:
        raise ValueError(f"route {route!r} is not 'GET /path' or 'POST /path'")
    return HttpExposure(method=cast("Literal['GET', 'POST']", method), path=path)


def _exposure(
    http: str | None,
    tool: str | None,
    resource: McpResource | None,
    cli: str | None,
    presets: Sequence[CliPreset] = (),
) -> Exposure:
    mcp = McpExposure(tool=tool, resource=resource) if tool is not None or resource is not None else None
    return Exposure(
        http=_http(http),
        mcp=mcp,
        cli=tuple(cli.split()) if cli else (),
        cli_presets=tuple(presets),
    )


class Declarations(Generic[CtxT]):
    """The declarations of one module, with handlers taking a `CtxT` context."""

    def __init__(self, module: Module, *, source: str) -> None:
        """Declare for `module`; `source` is the declaring module's `__name__` (it names the source file)."""
        self.module = module
        self.source_path = "src/" + source.replace(".", "/") + ".py"

    def _capability(
        self,
        local: str,
        handler: Callable[..., Awaitable[Any]] | None,
        input: type[msgspec.Struct],
        output: Any,
        read: Callable[..., Any] | None = None,
        **facts: Any,
    ) -> Capability:
        live = facts.get("live", ())
        if (handler is None) == (read is None) and not (live and handler is not None and read is not None):
            raise ValueError(f"{self.module.id}.{local}: declare a handler or a read, exactly one (both with live)")
        return Capability(
            id=f"{self.module.id}.{local}",
            module=self.module.id,
            input=input,
            output=output,
            handler=handler,
            read=read,
            tags=facts.pop("tags") or (self.module.id,),
            source_path=self.source_path,
            **facts,
        )

    def query(
        self,
        local: str,
        *,
        title: str,
        description: str,
        input: type[InT],
        output: type[OutT],
        examples: Sequence[Example],
        handler: Callable[[CtxT, InT], Awaitable[OutT]] | None = None,
        read: Callable[[Repository, InT], OutT] | None = None,
        http: str | None = None,
        tool: str | None = None,
        resource: McpResource | None = None,
        cli: str | None = None,
        cache: Cache = NO_CACHE,
        benchmark: Benchmark = BENCHMARKED,
        stability: Stability = "implemented",
        tags: tuple[str, ...] = (),
        cancellable: bool = False,
        cli_verdict: str | None = None,
        cli_remote: bool = False,
        live: tuple[str, ...] = (),
    ) -> Capability:
        """A query `<module>.<local>`: it reads, is served on GET, and may be cached.

        It runs a `handler` ``(ctx, params)``, or, when it reads the checkout and nothing else, a `read`
        ``(repository, params)`` (a plain function: the command line answers it with no event loop). A read
        may name `live` input fields and a handler for the inputs that set them (`Capability.runs_live`).
        `http` is the route as `"GET /api/v1/..."`, `cli` the command words as one string.

        Raises:
            ValueError: neither or both of `handler` and `read` are given (both need `live`).
        """
        return self._capability(
            local,
            handler,
            input,
            output,
            read,
            title=title,
            description=description,
            examples=tuple(examples),
            kind="query",
            exposure=_exposure(http, tool, resource, cli),
            cache=cache,
            benchmark=benchmark,
            stability=stability,
            tags=tags,
            cancellable=cancellable,
            cli_verdict=cli_verdict,
            cli_remote=cli_remote,
            live=live,
        )

    def command(
        self,
        local: str,
        *,
        title: str,
        description: str,
        input: type[InT],
        output: type[OutT],
        handler: Callable[[CtxT, InT], Awaitable[OutT]],
        examples: Sequence[Example],
        http: str | None = None,
        tool: str | None = None,
        cli: str | None = None,
        cli_presets: Sequence[CliPreset] = (),
        benchmark: Benchmark = BENCHMARKED,
        stability: Stability = "implemented",
        tags: tuple[str, ...] = (),
        cancellable: bool = False,
        writes_repository: bool = False,
        cli_verdict: str | None = None,
        cli_remote: bool = False,
    ) -> Capability:
        """A command `<module>.<local>`: it changes process state (or, with `writes_repository`, the checkout).

        Commands are served on POST, never cached, and run one at a time per capability.
        """
        return self._capability(
            local,
            handler,
            input,
            output,
            title=title,
            description=description,
            examples=tuple(examples),
            kind="command",
            exposure=_exposure(http, tool, None, cli, cli_presets),
            benchmark=benchmark,
            stability=stability,
            tags=tags,
            cancellable=cancellable,
            writes_repository=writes_repository,
            cli_verdict=cli_verdict,
            cli_remote=cli_remote,
        )
