"""Toolchain detectors: which toolchains the checkout declares (by marker file) and what is installed for each.

Detectors run in a fixed order: python, node, rust, go, just, elixir, deno. For each, the first marker that
exists decides, and `declared_by` names it:

| id | markers, in order (what is declared) | installed |
|---|---|---|
| python | `.python-version` (first line), `pyproject.toml` (`project.requires-python`) | the running interpreter |
| node | `.nvmrc`, `.node-version` (first line), `package.json` (`engines.node`) | `node --version` |
| rust | `rust-toolchain.toml` (its channel), `rust-toolchain`, `apps/*/Cargo.toml`, `Cargo.toml` | `rustc --version` |
| go | `go.mod` (the `go` directive) | `go version` |
| just | `justfile`, `.justfile`, `Justfile` (nothing) | `just --version` |
| elixir | `mix.exs` (`elixir: "..."`) | `elixir --version` |
| deno | `deno.json`, `deno.jsonc` (nothing) | `deno --version` |

The installed version is the first word of the first output line that looks like dotted digits (a leading
`v` or `go` dropped). A probe not on the PATH is `missing`; one that does not answer in time, or answers no
version, is `unknown`. A declared version is judged when it is plain: an exact pin (`20`, `1.78.0`) holds
when the installed version starts with its components, a minimum (`>=1.70`) when the installed version is
at least it (components zero-padded). `Cargo.toml`'s `rust-version` and `go.mod`'s `go` directive are
least versions, judged as minimums; Python's `requires-python` is a PEP 440 specifier set. A version that
does not hold is `mismatch`; anything else (`lts/iron`, `^18`, `stable`) is not judged.

Marker files are read under the reading rule: one that cannot be read or parsed declares nothing and is
named in a diagnostic.
"""

from __future__ import annotations

import json
import platform
import re
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from svc.layer._env_model import EnvironmentDiagnostic, ToolchainState
from svc.layer._env_probe import Probe, ProbeResult
from svc.layer._read import clip, read_repository_file

if TYPE_CHECKING:
    from svc.layer._repository import Repository

__all__ = [
    "PROBE_SECONDS",
    "Declaration",
    "Detected",
    "detect_toolchains",
    "finish_toolchains",
    "satisfies",
    "start_probes",
    "version_of",
]

#: How long a `--version` probe may take.
PROBE_SECONDS = 1.5
#: The largest marker file read.
_MARKER_LIMIT = 256 * 1024
_VERSION_WORD = re.compile(r"(?:v|go)?([0-9]+(?:\.[0-9]+)+)[,;:)]?")
_PLAIN = re.compile(r"v?([0-9]+(?:\.[0-9]+)*)")
_MINIMUM = re.compile(r">=\s*v?([0-9]+(?:\.[0-9]+)*)")
_LEADING = re.compile(r"[0-9]*")
_GO_DIRECTIVE = re.compile(r"^go[ \t]+(\S+)", re.M)
_ELIXIR = re.compile(r"""\belixir:\s*["']([^"']+)["']""")


@dataclass(frozen=True, slots=True)
class Declaration:
    """What one marker file declares: the version (None when none), or why the file says nothing."""

    version: str | None
    problem: str | None = None


@dataclass(frozen=True, slots=True)
class Detected:
    """A toolchain whose marker exists: what it declares, by which file, and how to ask for the installed one."""

    id: str
    title: str
    declared_by: str
    declaration: Declaration
    probe: tuple[str, ...] | None
    minimum: bool = False


Reader = Callable[[bytes], str | None]


def _first_line(data: bytes) -> str | None:
    for line in data.decode("utf-8", "replace").splitlines():
        text = line.strip()
        if text and not text.startswith("#"):
            return clip(text, 100)
    return None


def _dig(data: Any, *keys: str) -> str | None:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    if not isinstance(data, str):
        return None
    return clip(data.strip(), 100) or None


def _toml(*keys: str) -> Reader:
    def read(data: bytes) -> str | None:
        return _dig(tomllib.loads(data.decode("utf-8")), *keys)

    return read


def _cargo(data: bytes) -> str | None:
    loaded = tomllib.loads(data.decode("utf-8"))
    return _dig(loaded, "package", "rust-version") or _dig(loaded, "workspace", "package", "rust-version")


def _rust_toolchain(data: bytes) -> str | None:
    if b"[toolchain]" in data:
        return _toml("toolchain", "channel")(data)
    return _first_line(data)


def _package_json(data: bytes) -> str | None:
    return _dig(json.loads(data), "engines", "node")


def _go_mod(data: bytes) -> str | None:
    match = _GO_DIRECTIVE.search(data.decode("utf-8", "replace"))
    return clip(match.group(1), 100) if match else None


def _mix(data: bytes) -> str | None:
    match = _ELIXIR.search(data.decode("utf-8", "replace"))
    return clip(match.group(1), 100) if match else None


def _nothing(data: bytes) -> str | None:
    return None


#: (id, title, markers in order (path or glob, reader), probe argv; None: the running interpreter).
_DETECTORS: tuple[tuple[str, str, tuple[tuple[str, Reader], ...], tuple[str, ...] | None], ...] = (
    (
        "python",
        "Python",
        ((".python-version", _first_line), ("pyproject.toml", _toml("project", "requires-python"))),
        None,
    ),
    (
        "node",
        "Node.js",
        ((".nvmrc", _first_line), (".node-version", _first_line), ("package.json", _package_json)),
        ("node", "--version"),
    ),
    (
        "rust",
        "Rust",
        (
            ("rust-toolchain.toml", _toml("toolchain", "channel")),
            ("rust-toolchain", _rust_toolchain),
            ("apps/*/Cargo.toml", _cargo),
            ("Cargo.toml", _cargo),
        ),
        ("rustc", "--version"),
    ),
    ("go", "Go", (("go.mod", _go_mod),), ("go", "version")),
    ("just", "just", (("justfile", _nothing), (".justfile", _nothing), ("Justfile", _nothing)), ("just", "--version")),
    ("elixir", "Elixir", (("mix.exs", _mix),), ("elixir", "--version")),
    ("deno", "Deno", (("deno.json", _nothing), ("deno.jsonc", _nothing)), ("deno", "--version")),
)


#: Readers whose plain version is a least version (`rust-version`, the `go` directive), not a pin.
_MINIMUMS: frozenset[Reader] = frozenset({_cargo, _go_mod})


def _marker(repo: Repository, pattern: str) -> str | None:
    """The repository-relative path of the first regular file `pattern` names (a `*` matches one directory)."""
    if "*" in pattern:
        head, _, tail = pattern.partition("/*/")
        base = repo.root / head
        try:
            names = sorted(entry.name for entry in base.iterdir() if entry.is_dir() and not entry.is_symlink())
        except OSError:
            return None
        candidates = [f"{head}/{name}/{tail}" for name in names]
    else:
        candidates = [pattern]
    for rel in candidates:
        path = repo.root / rel
        if path.is_symlink() or (path.exists() and not path.is_dir()):
            return rel
    return None


def _declare(repo: Repository, rel: str, reader: Reader) -> Declaration:
    try:
        data = read_repository_file(repo.root, Path(rel), limit=_MARKER_LIMIT)
    except OSError as exc:
        return Declaration(None, clip(f"{rel} cannot be read: {getattr(exc, 'reason', None) or exc.strerror}"))
    try:
        return Declaration(reader(data))
    except (ValueError, RecursionError) as exc:
        return Declaration(None, clip(f"{rel} does not parse: {type(exc).__name__}"))


def detect_toolchains(repo: Repository) -> list[Detected]:
    """Every toolchain whose marker exists, in detector order (blocking: reads the marker files)."""
    found: list[Detected] = []
    for ident, title, markers, probe in _DETECTORS:
        for pattern, reader in markers:
            rel = _marker(repo, pattern)
            if rel is not None:
                minimum = reader in _MINIMUMS
                found.append(Detected(ident, title, rel, _declare(repo, rel, reader), probe, minimum))
                break
    return found


def start_probes(
    repo: Repository, detected: Sequence[Detected], *, seconds: float = PROBE_SECONDS, search_path: str | None = None
) -> dict[str, Probe]:
    """Start the `--version` probe of each detected toolchain that has one, all at once."""
    return {
        t.id: Probe.start(list(t.probe), cwd=repo.root, seconds=seconds, search_path=search_path)
        for t in detected
        if t.probe is not None
    }


def version_of(output: bytes) -> str | None:
    """The first word of the first line that looks like dotted digits (`v20.1.0` → `20.1.0`), or None."""
    for line in output.decode("utf-8", "replace").splitlines()[:20]:
        for word in line.split():
            match = _VERSION_WORD.fullmatch(word)
            if match is not None:
                return match.group(1)
    return None


def _components(text: str) -> list[int]:
    """The numeric components of a version (`3.13.0rc1` → 3, 13, 0)."""
    return [int(_LEADING.match(part).group() or 0) for part in text.split(".")]  # type: ignore[union-attr]


def satisfies(declared: str, installed: str, *, python: bool = False, minimum: bool = False) -> bool | None:
    """Whether `installed` holds what `declared` asks for; None when `declared` is not a plain pin or minimum.

    With `minimum`, a plain version is a least version (`rust-version = "1.70"`), not a pin.
    """
    text = declared.strip()
    if python and not _PLAIN.fullmatch(text):
        from packaging.specifiers import InvalidSpecifier, SpecifierSet

        try:
            return SpecifierSet(text).contains(installed, prereleases=True)
        except InvalidSpecifier:
            return None
    have = _components(installed)
    plain = _PLAIN.fullmatch(text)
    if plain is not None and minimum:
        text = f">={plain.group(1)}"
    elif plain is not None:
        want = _components(plain.group(1))
        return have[: len(want)] == want
    least = _MINIMUM.fullmatch(text)
    if least is not None:
        want = _components(least.group(1))
        width = max(len(want), len(have))
        return have + [0] * (width - len(have)) >= want + [0] * (width - len(want))
    return None


def _installed(detected: Detected, probe: Probe | None) -> tuple[str | None, ProbeResult | None]:
    if detected.probe is None:
        return platform.python_version(), None
    assert probe is not None
    result = probe.finish()
    if result.outcome != "ok":
        return None, result
    return version_of(result.stdout) or version_of(result.stderr), result


def finish_toolchains(
    detected: Sequence[Detected], probes: dict[str, Probe]
) -> tuple[list[ToolchainState], list[EnvironmentDiagnostic]]:
    """Wait for the probes and judge each toolchain; the states and the diagnostics, in detector order."""
    states: list[ToolchainState] = []
    diagnostics: list[EnvironmentDiagnostic] = []
    for t in detected:
        declared = t.declaration.version
        if t.declaration.problem is not None:
            diagnostics.append(
                EnvironmentDiagnostic(
                    severity="warning",
                    code="toolchain_marker_unreadable",
                    path=t.declared_by,
                    message=t.declaration.problem,
                )
            )
        installed, result = _installed(t, probes.get(t.id))
        availability: Literal["installed", "missing", "unknown", "mismatch"]
        if installed is not None:
            held = (
                satisfies(declared, installed, python=t.id == "python", minimum=t.minimum)
                if declared is not None
                else None
            )
            availability = "mismatch" if held is False else "installed"
            if held is False:
                diagnostics.append(
                    EnvironmentDiagnostic(
                        severity="warning",
                        code="toolchain_mismatch",
                        path=t.declared_by,
                        message=clip(f"{t.title} {declared} is declared here and {installed} is installed"),
                    )
                )
        elif result is not None and result.outcome == "missing":
            availability = "missing"
            diagnostics.append(
                EnvironmentDiagnostic(
                    severity="warning",
                    code="toolchain_missing",
                    path=t.declared_by,
                    message=f"{t.title} is declared here and `{t.probe[0] if t.probe else t.id}` is not on the PATH",
                )
            )
        else:
            availability = "unknown"
            why = "did not answer in time" if result is not None and result.outcome == "timeout" else "gave no version"
            command = " ".join(t.probe or ())
            diagnostics.append(
                EnvironmentDiagnostic(
                    severity="info", code="toolchain_unknown", path=t.declared_by, message=f"`{command}` {why}"
                )
            )
        states.append(
            ToolchainState(
                id=t.id,
                title=t.title,
                declared=declared,
                declared_by=t.declared_by,
                installed=installed,
                availability=availability,
            )
        )
    return states, diagnostics
