"""The command tree of `svc` as data: the CLI is built from it, and so is its generated reference.

Capability commands come from each capability's `cli` words and input schema: a required property is a
positional argument (declaration order), every other property an option `--name` (underscores become
dashes), a boolean a `--name/--no-name` flag. Infrastructure commands (`serve`, `mcp`, `generate`) are
declared here beside them, so the reference, the real tree and the closure matrix read one list.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from svc._errors import Forbidden
from svc.registry._binding import TextKind, text_kinds
from svc.registry._declaration import Capability
from svc.registry._registry import Registry

__all__ = ["INFRASTRUCTURE", "CliCommand", "CliParameter", "cli_tree", "cli_usage", "http_write_refusal", "resolve"]


class CliParameter(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One argument or option of a command."""

    name: str
    field: str | None = None
    kind: TextKind = "text"
    positional: bool = False
    required: bool = False
    choices: list[str] | None = None
    default: Any = None
    help: str = ""


class CliCommand(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A runnable command: its words, what it does, and the capability it runs (if any)."""

    words: list[str]
    summary: str
    capability: str | None = None
    preset: dict[str, Any] | None = None
    parameters: list[CliParameter] = msgspec.field(default_factory=list)


_JSON = CliParameter(name="--json", kind="boolean", help="print the answer as JSON (the HTTP body's bytes)")

INFRASTRUCTURE: tuple[CliCommand, ...] = (
    CliCommand(
        words=["generate"],
        summary="Write the generated documents under docs/generated/ (or, with --check, compare them).",
        parameters=[
            CliParameter(
                name="--check",
                kind="boolean",
                help="re-derive every document, write nothing, list what is stale and exit 10 if any is",
            )
        ],
    ),
    CliCommand(
        words=["mcp"],
        summary=(
            "Serve MCP on stdio: the first in a checkout also serves HTTP (8741 first) and holds the lease, "
            "later ones bridge to it."
        ),
        parameters=[
            CliParameter(name="--port", kind="integer", default=8741, help="the first port to try when serving HTTP"),
            CliParameter(
                name="--standalone",
                kind="boolean",
                help="serve stdio only, from this process: no lease, no HTTP server, no bridge",
            ),
            CliParameter(
                name="--inspect",
                kind="boolean",
                help="print what this invocation would do (serve, bridge, wait, take over) and why, then exit",
            ),
        ],
    ),
    CliCommand(
        words=["serve"],
        summary="Serve the registry over HTTP on 127.0.0.1 (8741 first, else the next free port).",
        parameters=[
            CliParameter(name="--port", kind="integer", default=8741, help="the first port to try"),
        ],
    ),
)


def _parameters(registry: Registry, cap: Capability, fixed: Iterable[str] = ()) -> list[CliParameter]:
    schema = registry.input_schema(cap)
    properties: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", ()))
    kinds = text_kinds(cap.input)
    out: list[CliParameter] = []
    for name, prop in properties.items():
        if name in fixed:
            continue
        resolved = _non_null(prop)
        enum = resolved.get("enum")
        choices = [str(v) for v in enum] if isinstance(enum, list) else None
        default = prop.get("default")
        if name in required:
            out.append(
                CliParameter(
                    name=name.upper(),
                    field=name,
                    kind=kinds[name],
                    positional=True,
                    required=True,
                    choices=choices,
                    help=str(prop.get("description", "")),
                )
            )
        else:
            flag = "--" + name.replace("_", "-")
            out.append(
                CliParameter(
                    name=flag,
                    field=name,
                    kind=kinds[name],
                    choices=choices,
                    default=default,
                    help=str(prop.get("description", "")),
                )
            )
    out.append(_JSON)
    return out


def _non_null(prop: dict[str, Any]) -> dict[str, Any]:
    for key in ("anyOf", "oneOf"):
        members = prop.get(key)
        if isinstance(members, list):
            rest = [m for m in members if m.get("type") != "null"]
            if len(rest) == 1:
                return dict(rest[0])
    return prop


def cli_tree(registry: Registry) -> list[CliCommand]:
    """Every runnable command, sorted by its words."""
    commands = list(INFRASTRUCTURE)
    for cap in registry.capabilities:
        if cap.exposure.cli:
            commands.append(
                CliCommand(
                    words=list(cap.exposure.cli),
                    summary=cap.title,
                    capability=cap.id,
                    parameters=_parameters(registry, cap),
                )
            )
        for preset in cap.exposure.cli_presets:
            commands.append(
                CliCommand(
                    words=list(preset.words),
                    summary=preset.summary,
                    capability=cap.id,
                    preset=dict(preset.input),
                    parameters=_parameters(registry, cap, fixed=preset.input),
                )
            )
    return sorted(commands, key=lambda c: c.words)


def resolve(tree: list[CliCommand], words: tuple[str, ...] | list[str]) -> CliCommand | None:
    """The command with exactly these words, or None."""
    wanted = list(words)
    return next((c for c in tree if c.words == wanted), None)


def cli_usage(cap: Capability) -> str | None:
    """How a person runs `cap` on the command line (`svc plan start|verify|done ISSUE`), or None."""
    presets = cap.exposure.cli_presets
    fixed = set(presets[0].input) if presets else set()
    required = [f.encode_name.upper() for f in msgspec.structs.fields(cap.input) if f.required]
    required = [name for name in required if name.lower() not in fixed]
    if presets:
        words = [*presets[0].words[:-1], "|".join(p.words[-1] for p in presets)]
    elif cap.exposure.cli:
        words = list(cap.exposure.cli)
    else:
        return None
    return "svc " + " ".join([*words, *required])


def http_write_refusal(cap: Capability) -> Forbidden:
    """The refusal of a repository write asked over HTTP, naming the MCP tool and the CLI command."""
    tool = cap.exposure.mcp.tool if cap.exposure.mcp is not None else None
    via = f"the MCP tool {tool}" if tool else "MCP"
    usage = cli_usage(cap)
    cli = f"`{usage}`" if usage else "the command line"
    return Forbidden(f"HTTP never writes the repository; {cap.id} runs through {via} or {cli}")
