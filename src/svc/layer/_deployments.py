"""The deployments a repository declares (`deployment` objects, `.ai/repo/deployments/*.yaml`), read strictly.

Each object's metadata (the whole YAML mapping) is decoded into `Deployment`: `schema` must be `deployment/v1`
and `kind` `deployment` (checked first, so another version's shape is not judged by this one), then every
level refuses a key it does not define, a missing required key and a value outside its type or bounds. A file
the object index could not read as an object (its diagnostic) and an object that does not decode are
`DeploymentRefusal`s naming the file, the key (`listen.port`, `build.inputs.2`; `(the object)` when the file
is no object at all), the value found, the problem and the correction.

`deployment_check` then decides each decoded deployment against the checkout: its health paths among the HTTP
paths the service answers, its package and binary among the workspace's, its build inputs inside the
checkout (under the reading rule: a symlink leading out is refused), `min_running` within `count`, a hosted
process listening on every interface, and Fly's soft concurrency limit within the hard one. Nothing here
touches the network or a provider.

Deployments come in natural order of `id` (then file); refusals of unreadable files in file order.
"""

from __future__ import annotations

import functools
import logging
import os
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
import msgspec.inspect as mi
from msgspec import Meta

from svc.layer._env_workflows import natural_key
from svc.layer._objects import ObjectIndex, glob_regex
from svc.layer._read import Unreadable, check_repository_dir, check_repository_file, clip, read_repository_file

__all__ = [
    "KIND",
    "SCHEMA_VERSION",
    "THE_OBJECT",
    "Deployment",
    "DeploymentCheck",
    "DeploymentList",
    "DeploymentRefusal",
    "DeploymentView",
    "WorkspacePackage",
    "decode_deployment",
    "deployment_check",
    "deployment_list",
    "workspace_packages",
]

_log = logging.getLogger(__name__)

#: The object kind deployments are indexed as.
KIND = "deployment"
#: The one format version svc reads.
SCHEMA_VERSION = "deployment/v1"
#: The key of a refusal that concerns the whole file (no object, or no mapping).
THE_OBJECT = "(the object)"
_ABSENT = "(absent)"
_FOUND_LIMIT = 200

#: An absolute path on the service: starts with `/`, no empty segment, query, fragment or whitespace.
_ROUTE = r"^(?!.*//)/[^?#\s]*$"
_ROUTE_WORDS = "absolute on the service: starting with `/`, without `//`, `?`, `#` or whitespace"

Positive = Annotated[int, Meta(gt=0)]
Route = Annotated[str, Meta(pattern=_ROUTE)]
Text = Annotated[str, Meta(min_length=1)]


class DeploymentRefusal(msgspec.Struct, frozen=True, kw_only=True):
    """Why a deployment is refused: the file, the key, the value found, what is wrong, and what to do."""

    file: Annotated[str, Meta(description="the repository-relative file the value comes from")]
    key: Annotated[
        str,
        Meta(description="the key path within it (`listen.port`, `build.inputs.0`), or `(the object)` for the file"),
    ]
    found: Annotated[str, Meta(description="the value found, as written (`(absent)` for a missing key)")]
    problem: Annotated[str, Meta(description="what is wrong with it, in one sentence")]
    correction: Annotated[str, Meta(description="what to write instead, in one sentence")]


class DeploymentBuild(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """What is shipped and what it is built from."""

    package: Annotated[Text, Meta(description="the workspace package that is built (pyproject or Cargo name)")]
    binary: Annotated[Text, Meta(description="the executable of that package the image runs")]
    profile: Annotated[Text, Meta(description="the build profile (e.g. `release`)")]
    inputs: Annotated[
        list[Annotated[Text, Meta(description="a repository-relative path of the build context")]],
        Meta(description="the repository-relative paths the build context carries, and the only ones"),
    ]
    site: Annotated[
        Text | None, Meta(description="the repository-relative directory of a generated site the image serves")
    ] = None


class DeploymentListen(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The address the deployed process listens on."""

    port: Annotated[
        int,
        Meta(
            ge=1024,
            le=65535,
            description="a port from 1024 to 65535 (the deployed process runs unprivileged and cannot bind lower)",
        ),
    ]
    interface: Annotated[
        Literal["loopback", "all"],
        Meta(description="`all` for a hosted process (reachable from outside its machine) or `loopback`"),
    ]


class DeploymentHealth(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """The paths a platform polls, and how often."""

    liveness: Annotated[Route, Meta(description=f"the path polled to learn the process is alive, {_ROUTE_WORDS}")]
    readiness: Annotated[Route, Meta(description=f"the path polled to learn it can serve, {_ROUTE_WORDS}")]
    grace_seconds: Annotated[
        Annotated[int, Meta(ge=0)] | None,
        Meta(description="a whole number of seconds (0 or more) before the first check counts"),
    ] = None
    interval_seconds: Annotated[
        Positive | None, Meta(description="a whole number of seconds above 0 between two checks")
    ] = None
    timeout_seconds: Annotated[
        Positive | None, Meta(description="a whole number of seconds above 0 one check may take")
    ] = None


class DeploymentResources(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What one machine is granted."""

    cpu_kind: Annotated[Literal["shared", "performance"], Meta(description="`shared` or `performance`")]
    cpus: Annotated[Positive, Meta(description="a whole number of CPUs above 0 per machine")]
    memory_mb: Annotated[Positive, Meta(description="a whole number of megabytes above 0 per machine")]


class DeploymentMachines(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How many machines run, and whether the platform starts and stops them."""

    count: Annotated[Positive, Meta(description="a whole number of machines above 0")]
    min_running: Annotated[
        int, Meta(ge=0, description="a whole number (0 or more, at most `count`) of machines kept running")
    ]
    autostart: Annotated[bool, Meta(description="`true` or `false`: a request to a stopped machine starts it")]
    autostop: Annotated[bool, Meta(description="`true` or `false`: an idle machine is stopped")]


class DeploymentBudgets(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """The measured figures the deployment is held to; an absent one is not measured yet."""

    image_bytes: Annotated[Positive | None, Meta(description="largest compressed image, in bytes (above 0)")] = None
    binary_bytes: Annotated[Positive | None, Meta(description="largest binary, in bytes (above 0)")] = None
    build_context_bytes: Annotated[Positive | None, Meta(description="largest build context, in bytes (above 0)")] = (
        None
    )
    cold_start_ms: Annotated[
        Positive | None, Meta(description="longest time from a stopped machine to an answer, in ms (above 0)")
    ] = None
    resident_memory_mb: Annotated[
        Positive | None, Meta(description="largest resident memory under load, in megabytes (above 0)")
    ] = None
    blocking_check_ms: Annotated[
        Positive | None, Meta(description="longest liveness or readiness check, in ms (above 0)")
    ] = None
    request_p99_ms: Annotated[Positive | None, Meta(description="longest 99th-percentile request, in ms (above 0)")] = (
        None
    )


class FlyConcurrency(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """When Fly's edge considers a machine loaded, in requests."""

    soft_limit: Annotated[
        Positive, Meta(description="requests (above 0, at most `hard_limit`) past which another machine is preferred")
    ]
    hard_limit: Annotated[Positive, Meta(description="requests (above 0) past which none is sent to the machine")]


class FlyProvider(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """Fly.io's own facts."""

    org: Annotated[Text | None, Meta(description="the organisation the application belongs to")] = None
    force_https: Annotated[
        bool | None, Meta(description="`true` or `false`: the edge redirects plain HTTP to HTTPS")
    ] = None
    concurrency: Annotated[FlyConcurrency | None, Meta(description="a mapping of `soft_limit` and `hard_limit`")] = None


class DeploymentProvider(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """The hosting provider and the facts that belong to it alone."""

    name: Annotated[Literal["fly"], Meta(description="`fly` (the one provider deployment/v1 knows)")]
    fly: Annotated[
        FlyProvider | None, Meta(description="a mapping of Fly's own facts (`org`, `force_https`, `concurrency`)")
    ] = None


class Deployment(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """One deployment of the repository, as its `deployment/v1` object states it."""

    schema: Annotated[Literal["deployment/v1"], Meta(description="`deployment/v1`, the format version")]
    kind: Annotated[Literal["deployment"], Meta(description="`deployment`")]
    id: Annotated[Text, Meta(description="the deployment's identity within the repository")]
    title: Annotated[Text, Meta(description="one line naming it")]
    description: Annotated[Text | None, Meta(description="what it serves and to whom")] = None
    status: Annotated[
        Literal["declared", "active", "retired"] | None, Meta(description="`declared`, `active` or `retired`")
    ] = None
    application: Annotated[Text, Meta(description="the application's name at the provider")]
    build: Annotated[
        DeploymentBuild, Meta(description="a mapping of `package`, `binary`, `profile`, `inputs` and `site`")
    ]
    listen: Annotated[DeploymentListen, Meta(description="a mapping of `port` and `interface`")]
    health: Annotated[
        DeploymentHealth,
        Meta(description="a mapping of `liveness`, `readiness` and the optional timing in seconds"),
    ]
    resources: Annotated[DeploymentResources, Meta(description="a mapping of `cpu_kind`, `cpus` and `memory_mb`")]
    machines: Annotated[
        DeploymentMachines, Meta(description="a mapping of `count`, `min_running`, `autostart` and `autostop`")
    ]
    region: Annotated[Text, Meta(description="the provider's region the machines run in")]
    budgets: Annotated[
        DeploymentBudgets, Meta(description="a mapping of the measured figures it is held to (empty: none yet)")
    ] = msgspec.field(default_factory=DeploymentBudgets)
    provider: Annotated[DeploymentProvider, Meta(description="a mapping of `name` and the provider's own block")]
    created_at: Annotated[Text | None, Meta(description="when the object was written (a timestamp)")] = None
    updated_at: Annotated[Text | None, Meta(description="when it was last changed (a timestamp)")] = None


class DeploymentView(Deployment, frozen=True, kw_only=True):
    """One deployment with the repository-relative file it was read from."""

    file: Annotated[str, Meta(description="the repository-relative file the object lives in")]


class DeploymentList(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Every deployment the layer declares, in natural order of `id`.

    `unreadable` (omitted when empty) names each deployment file that is no deployment svc can read, and why:
    a malformed object is reported, never silently skipped.
    """

    count: Annotated[int, Meta(description="how many deployments were read")]
    deployments: list[DeploymentView]
    unreadable: list[DeploymentRefusal] = msgspec.field(default_factory=list)


class DeploymentCheck(msgspec.Struct, frozen=True, kw_only=True):
    """Whether the declared deployments would work, decided against this service and this checkout.

    `ok` is true when there is no refusal; `decided` counts the deployments that were read and checked;
    `refusals` lists the unreadable files first, then each deployment's refusals in check order.
    """

    ok: bool
    decided: int
    refusals: list[DeploymentRefusal]


@dataclass(frozen=True, slots=True)
class WorkspacePackage:
    """A package of the checkout's workspace: its name, the executables it produces, its manifest."""

    name: str
    binaries: tuple[str, ...]
    manifest: str


# ---------------------------------------------------------------------------------------------------- reading


def _render(value: Any) -> str:
    """A value as written: text as is, anything else as compact JSON; cut to a bounded length."""
    if isinstance(value, str):
        return clip(value, _FOUND_LIMIT)
    try:
        return clip(msgspec.json.encode(value).decode(), _FOUND_LIMIT)
    except (TypeError, ValueError):
        return clip(repr(value), _FOUND_LIMIT)


def _unwrap(tp: mi.Type) -> tuple[mi.Type, str | None]:
    """The type under its metadata and optional `None`, and the outermost description on the way."""
    description: str | None = None
    while True:
        if isinstance(tp, mi.Metadata):
            if description is None and tp.extra_json_schema:
                found = tp.extra_json_schema.get("description")
                description = found if isinstance(found, str) else None
            tp = tp.type
        elif isinstance(tp, mi.UnionType):
            rest = [t for t in tp.types if not isinstance(t, mi.NoneType)]
            if len(rest) != 1:
                return tp, description
            tp = rest[0]
        else:
            return tp, description


@functools.cache
def _root_type() -> mi.Type:
    return mi.type_info(Deployment)


def _node(segments: Sequence[str | int]) -> tuple[mi.Type | None, str | None]:
    """The type at a key path of `Deployment` and its description (None when the path leaves the shape)."""
    tp: mi.Type = _root_type()
    description: str | None = None
    for segment in segments:
        tp, _ = _unwrap(tp)
        if isinstance(tp, mi.StructType) and isinstance(segment, str):
            field = next((f for f in tp.fields if f.encode_name == segment), None)
            if field is None:
                return None, None
            tp, description = _unwrap(field.type)
        elif isinstance(tp, mi.ListType) and isinstance(segment, int):
            tp, inner = _unwrap(tp.item_type)
            description = inner or description
        else:
            return None, None
    return tp, description


def _value(data: Any, segments: Sequence[str | int]) -> tuple[bool, Any]:
    """Whether `data` holds the key path, and the value there."""
    for segment in segments:
        in_mapping = isinstance(segment, str) and isinstance(data, dict) and segment in data
        in_list = isinstance(segment, int) and isinstance(data, list) and 0 <= segment < len(data)
        if not (in_mapping or in_list):
            return False, None
        data = data[segment]
    return True, data


def _segments(path: str) -> list[str | int]:
    """`$.build.inputs[2]` as `["build", "inputs", 2]` (msgspec's error path of a decoded Struct)."""
    out: list[str | int] = []
    for part in path.removeprefix("$").replace("[", ".[").split("."):
        if not part:
            continue
        if part.startswith("[") and part.endswith("]") and part[1:-1].isdigit():
            out.append(int(part[1:-1]))
        else:
            out.append(part)
    return out


def _key(segments: Sequence[str | int]) -> str:
    return ".".join(str(s) for s in segments) or THE_OBJECT


def _where(segments: Sequence[str | int]) -> str:
    return f"`{_key(segments)}`" if segments else "the top level"


_BOUND = re.compile(r"^Expected `[^`]+` (?P<op>>=|<=|>|<) (?P<n>\S+)$")
_BOUND_WORDS = {">=": "below {n}", ">": "not above {n}", "<=": "above {n}", "<": "not below {n}"}
_LENGTH = re.compile(r"^Expected `str` of length >= (?P<n>[0-9]+)$")
_GOT = re.compile(r"^Expected `(?P<want>[^`]+)`, got `(?P<got>[^`]+)`$")
_TYPE_WORDS = {
    "int": "a whole number",
    "float": "a decimal number",
    "str": "text",
    "bool": "`true` or `false`",
    "array": "a list",
    "object": "a mapping",
    "null": "nothing (null)",
}


def _words(types: str) -> str:
    """`int | null` in words: `a whole number or nothing (null)`."""
    return " or ".join(_TYPE_WORDS.get(t.strip(), f"`{t.strip()}`") for t in types.split("|"))


def _problem(message: str) -> str:
    """The decoder's complaint as a sentence of its own (the regular expression of a path spelt out)."""
    if "matching regex" in message:
        return "not an absolute path on the service: it must start with `/` and hold no `//`, `?`, `#` or whitespace"
    if message.startswith("Invalid enum value"):
        return "not one of the values deployment/v1 allows"
    if (match := _BOUND.match(message)) is not None:
        return _BOUND_WORDS[match["op"]].format(n=match["n"])
    if (match := _LENGTH.match(message)) is not None:
        return "empty" if match["n"] == "1" else f"shorter than {match['n']} characters"
    if (match := _GOT.match(message)) is not None:
        return f"{_words(match['got'])} where {_words(match['want'])} is expected"
    return message[:1].lower() + message[1:]


def _refusal_from_error(file: str, metadata: Mapping[str, Any], error: msgspec.ValidationError) -> DeploymentRefusal:
    """The refusal of a decoding failure: the key it names, the value found there, problem and correction."""
    text = str(error)
    message, sep, path = text.rpartition(" - at `")
    if sep and path.startswith("$") and path.endswith("`"):
        segments = _segments(path[:-1])
    else:
        message, segments = text, []
    if message.startswith("Object contains unknown field"):
        parent_type, _ = _node(segments)
        _, parent = _value(metadata, segments)
        known = [f.encode_name for f in parent_type.fields] if isinstance(parent_type, mi.StructType) else []
        unknown = next((k for k in parent if k not in known), None) if isinstance(parent, dict) else None
        if unknown is not None:
            return DeploymentRefusal(
                file=file,
                key=_key([*segments, unknown]),
                found=_render(parent[unknown]),
                problem=f"a key deployment/v1 does not define at {_where(segments)}",
                correction=f"remove it; {_where(segments)} holds only: {', '.join(known)}",
            )
    if message.startswith("Object missing required field `") and message.endswith("`"):
        name = message[len("Object missing required field `") : -1]
        _, description = _node([*segments, name])
        return DeploymentRefusal(
            file=file,
            key=_key([*segments, name]),
            found=_ABSENT,
            problem=f"a required key of deployment/v1 is missing at {_where(segments)}",
            correction=f"add `{_key([*segments, name])}`: {description or 'as deployment/v1 defines it'}",
        )
    present, found = _value(metadata, segments)
    _, description = _node(segments)
    return DeploymentRefusal(
        file=file,
        key=_key(segments),
        found=_render(found) if present else _ABSENT,
        problem=_problem(message),
        correction=f"write `{_key(segments)}` as {description or 'deployment/v1 defines it'}",
    )


def decode_deployment(file: str, metadata: Any) -> Deployment | DeploymentRefusal:
    """The deployment `metadata` states, or the one refusal that explains why it is none.

    `schema` and `kind` are checked first; then the whole shape, strictly (no coercion, no unknown key).
    """
    if not isinstance(metadata, dict):
        return DeploymentRefusal(
            file=file,
            key=THE_OBJECT,
            found=_render(metadata),
            problem="not a mapping, so not a deployment",
            correction=f"write the file as one YAML mapping of {SCHEMA_VERSION}",
        )
    schema = metadata.get("schema", _ABSENT)
    if schema != SCHEMA_VERSION:
        return DeploymentRefusal(
            file=file,
            key="schema",
            found=_render(schema),
            problem=f"a format version svc does not read; it reads {SCHEMA_VERSION}",
            correction=f"write `schema: {SCHEMA_VERSION}` and the shape of that version",
        )
    kind = metadata.get("kind", _ABSENT)
    if kind != KIND:
        return DeploymentRefusal(
            file=file,
            key="kind",
            found=_render(kind),
            problem=f"not `{KIND}`, which every file of the deployments section is",
            correction=f"write `kind: {KIND}`",
        )
    try:
        return msgspec.convert(metadata, Deployment, strict=True)
    except msgspec.ValidationError as exc:
        return _refusal_from_error(file, metadata, exc)


_DIAGNOSTIC_CORRECTIONS = {
    "malformed_yaml": f"write the file as one YAML mapping of {SCHEMA_VERSION}, without aliases",
    "missing_field": "give the deployment an `id`",
    "duplicate_identity": "give each deployment an `id` of its own",
    "schema_violation": "write an `id` without `/`, `@` or whitespace",
    "invalid_utf8": "save the file as UTF-8",
}


def _unreadable(index: ObjectIndex) -> list[DeploymentRefusal]:
    """A refusal per error diagnostic on a file of a deployment class (the file is no object)."""
    patterns = [glob_regex(c.pattern) for c in index.classes if c.kind == KIND]
    out: list[DeploymentRefusal] = []
    for diagnostic in index.diagnostics:
        if diagnostic.severity != "error" or not any(p.match(diagnostic.path) for p in patterns):
            continue
        out.append(
            DeploymentRefusal(
                file=diagnostic.path,
                key=THE_OBJECT,
                found=clip(diagnostic.message, _FOUND_LIMIT * 2),
                problem=f"the file is no object of the layer ({diagnostic.code}), so no deployment",
                correction=_DIAGNOSTIC_CORRECTIONS.get(
                    diagnostic.code, "correct the file so the object index reads it (objects.list names why)"
                ),
            )
        )
    return out


def _read(index: ObjectIndex) -> tuple[list[DeploymentView], list[DeploymentRefusal]]:
    views: list[DeploymentView] = []
    refused = _unreadable(index)
    for obj in index.of_kind(KIND):
        file = obj.provenance.path
        decoded = decode_deployment(file, obj.metadata)
        if isinstance(decoded, DeploymentRefusal):
            refused.append(decoded)
            continue
        views.append(DeploymentView(file=file, **msgspec.structs.asdict(decoded)))
    views.sort(key=lambda v: (natural_key(v.id), v.file))
    refused.sort(key=lambda r: (r.file, r.key))
    return views, refused


def deployment_list(index: ObjectIndex) -> DeploymentList:
    """Every deployment of the index, decoded, and a refusal per deployment file that is none."""
    views, refused = _read(index)
    return DeploymentList(count=len(views), deployments=views, unreadable=refused)


# ---------------------------------------------------------------------------------------------------- checking


def _manifest(root: Path, rel: str) -> dict[str, Any] | None:
    """A TOML manifest of the checkout, parsed, or None when absent or not readable as TOML."""
    import tomllib  # only `deploy.check` reads manifests: not loaded with every command line

    try:
        data = read_repository_file(root, Path(rel))
        return tomllib.loads(data.decode("utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        _log.debug("svc: %s is not read as a workspace manifest: %s", rel, exc)
        return None


def _names(items: Iterable[Any]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(i for i in items if isinstance(i, str) and i))


def _python_package(root: Path, rel: str) -> WorkspacePackage | None:
    doc = _manifest(root, rel)
    project = doc.get("project") if doc is not None else None
    name = project.get("name") if isinstance(project, dict) else None
    if not isinstance(project, dict) or not isinstance(name, str) or not name:
        return None
    scripts = project.get("scripts")
    binaries = _names(scripts) if isinstance(scripts, dict) else ()
    return WorkspacePackage(name=name, binaries=binaries or (name,), manifest=rel)


def _cargo_package(root: Path, rel: str) -> WorkspacePackage | None:
    doc = _manifest(root, rel)
    package = doc.get("package") if doc is not None else None
    name = package.get("name") if isinstance(package, dict) else None
    if not isinstance(name, str) or not name:
        return None
    bins = doc.get("bin") if doc is not None else None
    binaries = _names(b.get("name") for b in bins if isinstance(b, dict)) if isinstance(bins, list) else ()
    return WorkspacePackage(name=name, binaries=binaries or (name,), manifest=rel)


def _app_dirs(root: Path) -> list[str]:
    """The directories directly under `apps/` (symlinks left out), by name."""
    try:
        real = check_repository_dir(root, root / "apps")
        with os.scandir(real) as listing:
            return sorted(e.name for e in listing if e.is_dir(follow_symlinks=False))
    except (FileNotFoundError, Unreadable):
        return []
    except OSError as exc:
        _log.debug("svc: apps/ is not listed: %s", exc)
        return []


def workspace_packages(root: Path) -> tuple[WorkspacePackage, ...]:
    """The packages of the checkout at `root`, each manifest read under the reading rule. Blocking.

    In order: the root `pyproject.toml`, then per `apps/<dir>/` (by name) its `pyproject.toml` and its
    `Cargo.toml`. A Python package is `[project].name` with the keys of `[project.scripts]` as binaries
    (none: its own name); a Cargo package is `[package].name` with its `[[bin]]` names (none: its own name).
    A manifest that is absent, refused or not TOML adds nothing.
    """
    found: list[WorkspacePackage | None] = [_python_package(root, "pyproject.toml")]
    for name in _app_dirs(root):
        found.append(_python_package(root, f"apps/{name}/pyproject.toml"))
        found.append(_cargo_package(root, f"apps/{name}/Cargo.toml"))
    return tuple(p for p in found if p is not None)


def _outside(path: str) -> bool:
    """Whether a deployment's path is not repository-relative: empty, absolute, climbing, or holding a NUL."""
    return not path or path.startswith("/") or ".." in path.split("/") or "\x00" in path


def _missing(root: Path, path: str) -> str | None:
    """Why `path` is no file or directory inside the checkout (None when it is one), judged by the reading rule."""
    target = root / posixpath.normpath(path)
    try:
        check_repository_dir(root, target)
        return None
    except FileNotFoundError:
        return "a path this checkout does not have"
    except Unreadable:
        pass
    try:
        check_repository_file(root, target)
        return None
    except FileNotFoundError:
        return "a path this checkout does not have"
    except Unreadable as exc:
        return None if exc.too_large else f"not a file or directory of this checkout ({exc.reason})"


_INSIDE = "give a repository-relative path: no leading `/`, no `..` segment"


def _check_one(
    view: DeploymentView, root: Path, routes: frozenset[str], packages: Sequence[WorkspacePackage]
) -> list[DeploymentRefusal]:
    file = view.file
    out: list[DeploymentRefusal] = []

    def refuse(key: str, found: Any, problem: str, correction: str) -> None:
        out.append(DeploymentRefusal(file=file, key=key, found=_render(found), problem=problem, correction=correction))

    for key, route in (("health.liveness", view.health.liveness), ("health.readiness", view.health.readiness)):
        if route not in routes:
            refuse(
                key,
                route,
                "a path this service does not answer with GET; the platform would poll a 404 and stop the machine",
                "name a GET path of the capability registry (capabilities.list lists them), or declare the "
                "capability that serves it",
            )
    package = next((p for p in packages if p.name == view.build.package), None)
    if package is None:
        names = ", ".join(dict.fromkeys(p.name for p in packages))
        refuse(
            "build.package",
            view.build.package,
            "a package this workspace does not contain",
            f"name one of: {names}"
            if names
            else "declare the package (pyproject.toml [project] at the root or under apps/*/, or apps/*/Cargo.toml)",
        )
    elif view.build.binary not in package.binaries:
        refuse(
            "build.binary",
            view.build.binary,
            f"not an executable {package.name} produces ({package.manifest})",
            f"name one of: {', '.join(package.binaries)}",
        )
    for n, path in enumerate(view.build.inputs):
        if _outside(path):
            refuse(f"build.inputs.{n}", path, "not a path inside the repository", _INSIDE)
        elif (why := _missing(root, path)) is not None:
            refuse(f"build.inputs.{n}", path, why, "correct the path, or remove it from the build context")
    if view.build.site is not None and _outside(view.build.site):
        refuse("build.site", view.build.site, "not a path inside the repository", _INSIDE)
    if view.machines.min_running > view.machines.count:
        refuse(
            "machines.min_running",
            view.machines.min_running,
            f"above machines.count ({view.machines.count}); the platform cannot keep more running than exist",
            "lower min_running, or raise count",
        )
    if view.listen.interface == "loopback":
        refuse(
            "listen.interface",
            view.listen.interface,
            "unreachable from outside the machine the process runs in",
            "write `interface: all`, which a hosted process needs",
        )
    fly = view.provider.fly
    concurrency = fly.concurrency if fly is not None else None
    if concurrency is not None and concurrency.soft_limit > concurrency.hard_limit:
        refuse(
            "provider.fly.concurrency.soft_limit",
            concurrency.soft_limit,
            f"above the hard limit ({concurrency.hard_limit})",
            "lower the soft limit, or raise the hard one",
        )
    return out


def deployment_check(index: ObjectIndex, root: Path, routes: Iterable[str]) -> DeploymentCheck:
    """Every refusal the deployments of `index` earn against the checkout at `root` and the GET `routes`.

    The unreadable deployment files come first, then each deployment (natural order of `id`) with its checks
    in order: health paths, package and binary, build inputs and site, machines, interface, Fly concurrency.
    Blocking (it reads the workspace manifests and looks at each build input).
    """
    views, refused = _read(index)
    served = frozenset(routes)
    packages = workspace_packages(root) if views else ()
    refusals = list(refused)
    for view in views:
        refusals.extend(_check_one(view, root, served, packages))
    return DeploymentCheck(ok=not refusals, decided=len(views), refusals=refusals)
