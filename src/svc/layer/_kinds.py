"""The kind schema: how a file of each object kind is read (`kinds.yaml`).

svc ships its kinds as package data (`svc/layer/kinds.yaml`, JSON Schemas under `svc/layer/schemas/`). A
repository's own `<knowledge>/kinds.yaml` (same shape, schemas under `<knowledge>/schemas/`) adds kinds; a
kind it names that svc already defines keeps svc's definition, with a warning. Nothing is read at import.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from svc.layer._read import clip, read_repository_file
from svc.layer._yaml import YamlError, load_yaml

__all__ = ["KindSchema", "KindSpec", "SchemaProblem", "load_kind_schema"]

Format = Literal["markdown", "yaml", "text"]
FrontMatter = Literal["required", "optional", "none"]
#: What a YAML text that does not load raises.
_NOT_YAML = (YamlError, ValueError, TypeError, RecursionError)
_FORMATS = ("markdown", "yaml", "text")
_FRONT_MATTER = ("required", "optional", "none")
_SPEC_KEYS = frozenset(
    {
        "format",
        "front_matter",
        "without_front_matter",
        "schema",
        "identity",
        "title",
        "description",
        "schema_version",
        "members",
    }
)


@dataclass(frozen=True, slots=True)
class SchemaProblem:
    """A diagnostic of reading a kinds file: its path, code, severity and message."""

    path: str
    code: str
    message: str
    severity: Literal["error", "warning"] = "error"


@dataclass(frozen=True, slots=True)
class KindSpec:
    """How files of one kind are read (docs/objects.md)."""

    name: str
    format: Format
    front_matter: FrontMatter = "optional"
    without_front_matter: str | None = None
    schema: str | None = None
    identity: tuple[str, ...] = ()
    title: tuple[str, ...] = ()
    description: tuple[str, ...] = ()
    schema_version: tuple[str, tuple[str, ...]] | None = None
    members: str | None = None
    #: `svc` for a packaged kind, `repository` for one the repository's own kinds.yaml adds.
    origin: Literal["svc", "repository"] = "svc"
    #: The validator of `schema` (None when the kind is unvalidated or its schema could not be loaded).
    validator: Any = field(default=None, compare=False, repr=False)

    @property
    def media_type(self) -> str:
        """The media type of a one-object file of this kind."""
        return {"markdown": "text/markdown", "yaml": "application/yaml"}.get(self.format, "text/plain")


@dataclass(frozen=True, slots=True)
class KindSchema:
    """Every kind svc reads in one repository, the kinds a file may declare, and what reading them found."""

    kinds: Mapping[str, KindSpec]
    declared: frozenset[str]
    problems: tuple[SchemaProblem, ...] = ()
    #: A digest of what the repository's own kinds file said (empty without one): reading results made
    #: under one token are valid under the same token only.
    token: bytes = b""

    def get(self, kind: str) -> KindSpec | None:
        """The spec of `kind`, or None when neither svc nor the repository defines it."""
        return self.kinds.get(kind)


def _names(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) and v for v in value):
        return tuple(value)
    return None


def _spec(name: str, raw: Any, origin: Literal["svc", "repository"]) -> KindSpec | str:
    """The spec of one kind entry, or a sentence saying what is wrong with it."""
    if not isinstance(raw, dict):
        return f"kind {name!r} is not a mapping"
    extra = sorted(str(k) for k in raw if k not in _SPEC_KEYS)
    if extra:
        return f"kind {name!r} has unknown keys: {', '.join(extra)}"
    fmt = raw.get("format")
    if fmt not in _FORMATS:
        return f"kind {name!r}: format must be one of {', '.join(_FORMATS)}"
    front = raw.get("front_matter", "optional" if fmt == "markdown" else "none")
    if front not in _FRONT_MATTER:
        return f"kind {name!r}: front_matter must be one of {', '.join(_FRONT_MATTER)}"
    identity, title, description = _names(raw.get("identity")), _names(raw.get("title")), _names(raw.get("description"))
    if identity is None or title is None or description is None:
        return f"kind {name!r}: identity, title and description name metadata fields"
    version = raw.get("schema_version")
    pinned: tuple[str, tuple[str, ...]] | None = None
    if version is not None:
        supported = version.get("supported") if isinstance(version, dict) else None
        if not (isinstance(version, dict) and isinstance(version.get("field"), str) and isinstance(supported, list)):
            return f"kind {name!r}: schema_version is {{field, supported: [...]}}"
        pinned = (version["field"], tuple(str(v) for v in supported))
    members, schema, fallback = raw.get("members"), raw.get("schema"), raw.get("without_front_matter")
    for key, value in (("members", members), ("schema", schema), ("without_front_matter", fallback)):
        if value is not None and not (isinstance(value, str) and value):
            return f"kind {name!r}: {key} is a name"
    if members is not None and fmt != "yaml":
        return f"kind {name!r}: only a yaml kind has members"
    return KindSpec(
        name=name,
        format=fmt,
        front_matter=front,
        without_front_matter=fallback,
        schema=schema,
        identity=identity,
        title=title,
        description=description,
        schema_version=pinned,
        members=members,
        origin=origin,
    )


def _parse(
    data: bytes, path: str, origin: Literal["svc", "repository"]
) -> tuple[dict[str, KindSpec], frozenset[str], list[SchemaProblem]]:
    problems: list[SchemaProblem] = []
    try:
        loaded = load_yaml(data)
    except _NOT_YAML as exc:
        return {}, frozenset(), [SchemaProblem(path, "malformed_yaml", clip(f"{path} is not YAML: {exc}", 300))]
    if not isinstance(loaded, dict) or not isinstance(loaded.get("kinds", {}), dict):
        return {}, frozenset(), [SchemaProblem(path, "malformed_yaml", f"{path} has no `kinds` mapping")]
    specs: dict[str, KindSpec] = {}
    for name, raw in (loaded.get("kinds") or {}).items():
        spec = _spec(str(name), raw, origin)
        if isinstance(spec, str):
            problems.append(SchemaProblem(path, "malformed_yaml", f"{path}: {spec}"))
        else:
            specs[spec.name] = spec
    declared = loaded.get("declared") or []
    return specs, frozenset(str(d) for d in declared if isinstance(declared, list)), problems


@functools.cache
def _packaged() -> tuple[Mapping[str, KindSpec], frozenset[str]]:
    """The kinds svc ships, each with its validator (read once per process)."""
    data = resources.files("svc.layer").joinpath("kinds.yaml").read_bytes()
    specs, declared, problems = _parse(data, "svc/layer/kinds.yaml", "svc")
    if problems:
        raise RuntimeError(f"svc's packaged kinds.yaml is invalid: {problems[0].message}")
    out: dict[str, KindSpec] = {}
    for name, spec in specs.items():
        validator = None
        if spec.schema is not None:
            text = resources.files("svc.layer").joinpath("schemas", spec.schema).read_text(encoding="utf-8")
            validator = _validator(json.loads(text))
        out[name] = _with_validator(spec, validator)
    return MappingProxyType(out), declared


def _with_validator(spec: KindSpec, validator: Any) -> KindSpec:
    return KindSpec(
        name=spec.name,
        format=spec.format,
        front_matter=spec.front_matter,
        without_front_matter=spec.without_front_matter,
        schema=spec.schema,
        identity=spec.identity,
        title=spec.title,
        description=spec.description,
        schema_version=spec.schema_version,
        members=spec.members,
        origin=spec.origin,
        validator=validator,
    )


def _validator(schema: Any) -> Any:
    """A 2020-12 validator of `schema` (jsonschema is imported only when a kind names a schema)."""
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def load_kind_schema(root: Path, knowledge: str) -> KindSchema:
    """The kinds svc ships plus the repository's own `<knowledge>/kinds.yaml` (`knowledge` is repository-relative).

    Blocking: reads the repository's kinds file and the schemas it names.
    """
    packaged, declared = _packaged()
    rel = f"{knowledge}/kinds.yaml"
    try:
        data = read_repository_file(root, Path(rel))
    except FileNotFoundError:
        return KindSchema(kinds=packaged, declared=declared)
    except OSError as exc:
        problem = SchemaProblem(rel, "unreadable", clip(f"{rel} cannot be read: {exc}", 300))
        return KindSchema(kinds=packaged, declared=declared, problems=(problem,))
    digest = hashlib.sha256(data)
    specs, own_declared, problems = _parse(data, rel, "repository")
    kinds = dict(packaged)
    for name, spec in specs.items():
        if name in packaged:
            problems.append(
                SchemaProblem(
                    rel, "kind_mismatch", f"{rel} redefines the kind {name!r}; svc's definition stands", "warning"
                )
            )
            continue
        validator = None
        if spec.schema is not None:
            validator = _repository_validator(root, knowledge, spec, rel, problems, digest)
        kinds[name] = _with_validator(spec, validator)
    return KindSchema(
        kinds=MappingProxyType(kinds),
        declared=declared | (own_declared & kinds.keys()),
        problems=tuple(problems),
        token=digest.digest(),
    )


def _repository_validator(
    root: Path, knowledge: str, spec: KindSpec, rel: str, problems: list[SchemaProblem], digest: Any
) -> Any:
    name = spec.schema or ""
    where = f"{knowledge}/schemas/{name}"
    try:
        text = read_repository_file(root, Path(where))
        digest.update(b"\0" + text)
        schema = json.loads(text)
        return _validator(schema)
    except FileNotFoundError:
        pass
    except Exception as exc:  # a schema that is not JSON or not a valid schema: the kind stays unvalidated
        problems.append(SchemaProblem(rel, "schema_violation", clip(f"{where} is no usable JSON Schema: {exc}", 300)))
        return None
    try:
        packaged = resources.files("svc.layer").joinpath("schemas", name).read_text(encoding="utf-8")
    except (OSError, ValueError):
        problems.append(
            SchemaProblem(rel, "schema_violation", f"kind {spec.name!r} names the schema {name}, not found")
        )
        return None
    return _validator(json.loads(packaged))
