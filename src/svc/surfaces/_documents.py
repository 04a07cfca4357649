"""The generated documents under `docs/generated/`: rendered in memory, written by `svc generate`.

Each document (the OpenAPI document, the registry, the CLI reference) is rendered in its formats, and the
manifest `artifacts.json` records every file's size and SHA-256. Bytes are deterministic.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from typing import Any

import msgspec

from svc._version import __version__
from svc.layer import dump_yaml
from svc.registry._registry import Registry, descriptor
from svc.surfaces._cli_tree import CliCommand, CliParameter, cli_tree, global_options
from svc.surfaces._openapi import render_openapi

__all__ = ["DOCUMENTS", "GENERATED_DIR", "MANIFEST", "DocumentSpec", "openapi_json", "render_documents"]

GENERATED_DIR = "docs/generated"
MANIFEST = f"{GENERATED_DIR}/artifacts.json"
GENERATED_NOTE = "GENERATED FILE — DO NOT EDIT DIRECTLY"
DECLARATIVE_KINDS = (
    "claim",
    "context",
    "document",
    "implementation",
    "issue",
    "milestone",
    "policy",
    "profile",
    "prompt",
    "rule",
    "scope",
    "test",
)


@dataclass(frozen=True, slots=True)
class DocumentSpec:
    """A generated document: its id, schema id, what it is rendered from, and its formats."""

    id: str
    schema: str
    source: str
    formats: tuple[str, ...]


DOCUMENTS: tuple[DocumentSpec, ...] = (
    DocumentSpec("cli", "svc/cli/v1", "the command tree of svc", ("json", "yaml", "markdown")),
    DocumentSpec("openapi", "https://spec.openapis.org/oas/3.1/dialect/base", "the registry", ("json", "yaml")),
    DocumentSpec("registry", "svc/capability-registry/v1", "the registry", ("json", "yaml")),
)
_EXTENSION = {"json": "json", "yaml": "yaml", "markdown": "md"}


def _json(data: Any) -> bytes:
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode()


@functools.lru_cache(maxsize=4)
def openapi_json(registry: Registry) -> bytes:
    """The OpenAPI document as served and committed (memoised per registry)."""
    return _json(render_openapi(registry))


def registry_document(registry: Registry) -> dict[str, Any]:
    """`registry.json`: modules and builtin capabilities; nothing that varies with layer content."""
    capabilities = []
    for cap in registry.capabilities:
        entry = msgspec.to_builtins(descriptor(registry, cap))
        entry["source_path"] = cap.source_path
        capabilities.append(entry)
    return {
        "schema": "svc/capability-registry/v1",
        "generator": f"svc {__version__}",
        "modules": [
            {
                **msgspec.to_builtins(m),
                "capabilities": [c.id for c in registry.capabilities if c.module == m.id],
            }
            for m in registry.modules
        ],
        "capabilities": capabilities,
        "declarative_kinds": list(DECLARATIVE_KINDS),
    }


def cli_document(registry: Registry) -> dict[str, Any]:
    """`cli.json`: the global options and every runnable command with its parameters."""
    return {
        "schema": "svc/cli/v1",
        "generator": f"svc {__version__}",
        "program": "svc",
        "global_options": msgspec.to_builtins(global_options()),
        "exit_codes": {"0": "success", "1": "internal failure", "2": "usage", "10": "refused or invalid"},
        "commands": msgspec.to_builtins(cli_tree(registry)),
    }


def _cli_markdown(registry: Registry) -> bytes:
    lines = [
        f"<!-- {GENERATED_NOTE} (svc generate) -->",
        "",
        "# svc command line",
        "",
        "Usage: `svc [--repo DIRECTORY] COMMAND ...`. Every capability command accepts `--json`, which prints the",
        "answer as the same JSON bytes the HTTP route returns. Required inputs are positional arguments;",
        "every other input is an option. Errors are one line on stderr.",
        "",
        "Exit codes: `0` success, `1` internal failure, `2` usage, `10` refused or invalid.",
        "",
        "Global options, given before the command:",
        "",
        *_parameter_table(global_options()),
        "",
        "| command | runs | summary |",
        "|---|---|---|",
    ]
    tree = cli_tree(registry)
    for cmd in tree:
        lines.append(f"| `svc {' '.join(cmd.words)}` | {_runs(cmd)} | {_cell(cmd.summary)} |")
    for cmd in tree:
        lines += ["", f"## svc {' '.join(cmd.words)}", "", cmd.summary, ""]
        if cmd.help:
            lines += [cmd.help, ""]
        if cmd.options is not None and cmd.capability is not None:
            lines += [f"The command-line projection of the capability `{cmd.capability}`.", ""]
        elif cmd.capability is not None:
            lines += [f"Runs the capability `{cmd.capability}` through the executor.", ""]
        if cmd.parameters:
            lines += _parameter_table(cmd.parameters)
    return ("\n".join(lines) + "\n").encode()


def _parameter_table(parameters: list[CliParameter]) -> list[str]:
    """One row per parameter: its names (a positional one marked required), kind, default and help."""
    rows = ["| parameter | kind | default | help |", "|---|---|---|---|"]
    for p in parameters:
        kind = "\\|".join(p.choices) if p.choices else p.kind
        default = "" if p.default is None else f"`{json.dumps(p.default)}`"
        if p.positional:
            name = f"`{p.name}` (required)"
        elif p.negatable:
            name = f"`{p.name}` / `--no-{p.name.removeprefix('--')}`"
        else:
            name = f"`{p.name}`"
        rows.append(f"| {name} | {kind} | {default} | {_cell(p.help)} |")
    return rows


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _runs(cmd: CliCommand) -> str:
    return f"`{cmd.capability}`" if cmd.capability else "—"


def render_documents(registry: Registry) -> dict[str, bytes]:
    """Every generated file, repository-relative path → bytes, the manifest last."""
    data = {
        "openapi": render_openapi(registry),
        "registry": registry_document(registry),
        "cli": cli_document(registry),
    }
    files: dict[str, bytes] = {}
    artifacts: list[dict[str, Any]] = []
    for spec in DOCUMENTS:
        for fmt in spec.formats:
            path = f"{GENERATED_DIR}/{spec.id}.{_EXTENSION[fmt]}"
            if fmt == "json":
                body = openapi_json(registry) if spec.id == "openapi" else _json(data[spec.id])
            elif fmt == "yaml":
                body = (f"# {GENERATED_NOTE} (svc generate)\n" + dump_yaml(data[spec.id])).encode()
            else:
                body = _cli_markdown(registry)
            files[path] = body
            artifacts.append(
                {
                    "path": path,
                    "document": spec.id,
                    "format": fmt,
                    "bytes": len(body),
                    "sha256": hashlib.sha256(body).hexdigest(),
                }
            )
    manifest = {
        "schema": "svc/artifacts/v1",
        "generator": f"svc {__version__}",
        "documents": [
            {"id": s.id, "schema": s.schema, "source": s.source, "formats": list(s.formats)} for s in DOCUMENTS
        ],
        "artifacts": artifacts,
    }
    files[MANIFEST] = _json(manifest)
    return files
