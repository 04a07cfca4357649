"""The objects of the layer: every file a source class discovers, read by its kind into `svc://` objects.

Source classes come from `knowledge/sources.yaml` (docs/layer.md): each names a `kind` and a `:(glob)` pathspec.
Discovery lists tracked files with one `git ls-files`; outside a Git work tree (or when Git cannot answer)
the same globs are walked on disk. Under `:(glob)` a `*` never crosses a `/` and `**` spans directories.
Without a `sources.yaml` the layer's own sections are the classes (policy, scope, profiles, rules, prompts,
milestones, issues); svc's packaged classes for `adr`, `use-case`, `deployment` and `release-record` apply
whenever the repository declares no class of that kind. A path two classes match belongs to the first.
Context documents (files the manifest names in `context.documents`, under `.ai/`) must carry the context
contract (`schema: context/v1`): they are objects of kind `context`, whichever class found them.

Each file is read by its kind's spec (`kinds.yaml`, see `svc.layer._kinds`): Markdown front matter or a YAML
mapping becomes the object's `metadata` (keys in file order), checked against the kind's JSON Schema and
version pin; its identity fields, joined by `@`, name it (`svc://rule/<id>@<version>`), or its
repository-relative path when the kind names none. Identities are percent-encoded as RFC 3986 path segments
(`@`, `:` and `/` stay literal); lookups accept the decoded form too. A collection file (`members`) gives one
object per item of its list. A file that cannot be read, or whose content breaks its kind's rules, is no
object: it is one diagnostic (codes in docs/objects.md). Two objects claiming one URI are both excluded.

The index is a reading of the files; all a build writes is its reading cache under `.ai/local/cache/`
(svc.layer._readings), so that a file is opened again only when its stat numbers change, and parsed again
only when its bytes do. Files are read under the reading rule (`read_repository_file`): symlinks, FIFOs,
devices, files over 4 MiB and non-UTF-8 files are refused, and titles and descriptions are cut at 1,000
characters. It carries a fingerprint: SHA-256 over every object, in URI order, of its path, a NUL byte, its
content and a line feed.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal
from urllib.parse import quote, unquote

import msgspec

from svc._gc import gc_paused
from svc.layer._git import run_git
from svc.layer._kinds import KindSchema, KindSpec, load_kind_schema
from svc.layer._manifest import LayerReading, read_manifest
from svc.layer._object_model import IndexDiagnostic, LayerObject, ObjectProvenance, Reading, Severity
from svc.layer._read import MAX_FILE_BYTES, clip, read_repository_file
from svc.layer._readings import CACHE_FILE, Readings
from svc.layer._repository import Repository
from svc.layer._stamps import digest
from svc.layer._yaml import YamlError, load_yaml

__all__ = [
    "SKIPPED_DIRS",
    "IndexDiagnostic",
    "LayerObject",
    "ObjectIndex",
    "ObjectProvenance",
    "Provenance",
    "SourceClass",
    "encode_identity",
    "glob_regex",
    "literal_prefix",
    "object_uri",
]

URI_SCHEME = "svc://"
#: The classes of a layer without `knowledge/sources.yaml` (paths relative to `.ai/`).
_DEFAULT_CLASSES: tuple[tuple[str, str, str], ...] = (
    ("policy", "policy", "repo/policy.yaml"),
    ("scope", "scope", "repo/scope.yaml"),
    ("profile", "profile", "repo/profiles/*.yaml"),
    ("rule", "rule", "repo/rules/**/*.md"),
    ("prompt", "prompt", "repo/prompts/*.md"),
    ("milestone", "milestone", "repo/project/milestones/*.yaml"),
    ("issue", "issue", "repo/project/issues/*.yaml"),
)
#: svc's packaged classes, each added when the repository declares no class of its kind (paths under `.ai/`).
_PACKAGED_CLASSES: tuple[tuple[str, str, str], ...] = (
    ("adr", "adr", "repo/adrs/*.md"),
    ("use-case", "use-case", "repo/use-cases/*.md"),
    ("deployment", "deployment", "repo/deployments/*.yaml"),
    ("release-record", "release-record", "repo/releases/*.yaml"),
)
_FRONT_OPEN = re.compile(r"\A---[ \t]*\r?\n")
_FRONT_CLOSE = re.compile(r"^---[ \t]*(?:\r?\n|\Z)", re.M)
_HEADING = re.compile(r"^#[ \t]+(\S.*)$", re.M)
_GIT_SECONDS = 10.0
SKIPPED_DIRS = frozenset({".git", ".venv", "node_modules", "__pycache__", ".mypy_cache", ".ruff_cache"})
#: What a YAML text that does not load raises (aliases and libyaml's nesting bound are `YamlError`s).
_NOT_YAML = (YamlError, ValueError, TypeError, RecursionError)
#: The longest title or description an object carries.
_TEXT_LIMIT = 1000
#: RFC 3986 `pchar` beyond the unreserved characters: kept literal in an identity.
_PCHAR = "!$&'()*+,;=:@/"
_BAD_IDENTITY = re.compile(r"[/@\s]")
_JSON = msgspec.json.Encoder()

#: The name the index's API notes use for `ObjectProvenance`.
Provenance = ObjectProvenance


@dataclass(frozen=True, slots=True)
class SourceClass:
    """A class of `sources.yaml`: its id, the kind its files become, and its glob (without `:(glob)`)."""

    id: str
    kind: str
    pattern: str
    required: bool = False


def encode_identity(text: str) -> str:
    """`text` as an RFC 3986 path segment run: reserved characters percent-encoded, `@`, `:` and `/` kept."""
    return quote(text, safe=_PCHAR)


def object_uri(kind: str, identity: str) -> str:
    """`svc://<kind>/<identity>` (the identity is already encoded)."""
    return f"{URI_SCHEME}{kind}/{identity}"


def glob_regex(pattern: str) -> re.Pattern[str]:
    """The regular expression of a `:(glob)` pattern: `*` and `?` stay inside one segment, `**` spans them."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:[^/]*/)*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                out.append(re.escape("["))
                i += 1
            else:
                body = pattern[i + 1 : end].replace("\\", "\\\\")
                out.append(f"[{'^' + body[1:] if body.startswith('!') else body}]")
                i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


class ObjectIndex:
    """Every object of one checkout's layer, in URI byte order, with lookups by URI and kind.

    `diagnostics` names every file left out (errors) and every note (warnings); `state` is `degraded` when
    any diagnostic is an error, else `ok`; `fingerprint` is the SHA-256 of the objects served.
    """

    def __init__(
        self,
        objects: Iterable[LayerObject],
        classes: Iterable[SourceClass] = (),
        *,
        diagnostics: Iterable[IndexDiagnostic] = (),
        kinds: KindSchema | None = None,
    ) -> None:
        unique: dict[str, LayerObject] = {}
        for obj in objects:
            unique.setdefault(obj.uri, obj)
        self.objects: tuple[LayerObject, ...] = tuple(sorted(unique.values(), key=lambda o: o.uri))
        self.by_uri: Mapping[str, LayerObject] = MappingProxyType({o.uri: o for o in self.objects})
        grouped: dict[str, list[LayerObject]] = {}
        for obj in self.objects:
            grouped.setdefault(obj.kind, []).append(obj)
        self.by_kind: Mapping[str, tuple[LayerObject, ...]] = MappingProxyType(
            {k: tuple(v) for k, v in sorted(grouped.items())}
        )
        self.kinds: tuple[str, ...] = tuple(self.by_kind)
        self.classes: tuple[SourceClass, ...] = tuple(classes)
        self.diagnostics: tuple[IndexDiagnostic, ...] = tuple(
            sorted(diagnostics, key=lambda d: (d.path, d.member or "", d.code, d.message))
        )
        self.state: Literal["ok", "degraded"] = (
            "degraded" if any(d.severity == "error" for d in self.diagnostics) else "ok"
        )
        self.kind_specs: Mapping[str, KindSpec] = kinds.kinds if kinds is not None else MappingProxyType({})
        self._decoded: dict[str, str] | None = None
        self._fingerprint: str | None = None

    def __len__(self) -> int:
        return len(self.objects)

    @property
    def fingerprint(self) -> str:
        """SHA-256 (hex) over every object in URI order: its path, a NUL byte, its content, a line feed."""
        if self._fingerprint is None:
            digest = hashlib.sha256()
            for obj in self.objects:
                digest.update(obj.provenance.path.encode())
                digest.update(b"\0")
                digest.update(obj.content.encode())
                digest.update(b"\n")
            self._fingerprint = digest.hexdigest()
        return self._fingerprint

    def get(self, uri: str) -> LayerObject | None:
        """The object with this URI (as served, or with its identity percent-decoded), or None."""
        found = self.by_uri.get(uri)
        if found is not None:
            return found
        if self._decoded is None:
            self._decoded = {unquote(o.uri): o.uri for o in self.objects}
        served = self._decoded.get(unquote(uri))
        return self.by_uri.get(served) if served is not None else None

    def of_kind(self, kind: str) -> tuple[LayerObject, ...]:
        """The objects of `kind` in URI order (empty when the index holds none)."""
        return self.by_kind.get(kind, ())

    def read(self, obj: LayerObject, repo: Repository | None = None) -> bytes:
        """The object's content as served: its file's text as read, or its item as JSON for a member."""
        return obj.content.encode()

    @classmethod
    def build(cls, repo: Repository) -> ObjectIndex:
        """Discover and read every object of `repo` (nothing when the layer is absent or refused). Blocking."""
        reading = read_manifest(repo)
        if not repo.has_layer or not reading.usable:
            return cls(())
        with gc_paused():  # every file's reading makes many small objects and no cycle
            return _Builder(repo, reading).build()


def source_classes(repo: Repository, sections: Mapping[str, str]) -> list[SourceClass]:
    """The classes of `knowledge/sources.yaml`, or the layer's own sections when it has none."""
    knowledge = sections.get("knowledge", "repo/knowledge")
    path = repo.layer / knowledge / "sources.yaml"
    try:
        data = load_yaml(read_repository_file(repo.root, path))
    except (OSError, *_NOT_YAML):
        data = None
    if isinstance(data, dict) and isinstance(data.get("sources"), list):
        out: list[SourceClass] = []
        for entry in data["sources"]:
            if not isinstance(entry, dict):
                continue
            spec, kind, cid = entry.get("pathspec"), entry.get("kind"), entry.get("id")
            if not (isinstance(spec, str) and isinstance(kind, str) and kind):
                continue
            out.append(
                SourceClass(
                    id=str(cid or kind),
                    kind=kind,
                    pattern=spec.removeprefix(":(glob)"),
                    required=entry.get("required") is True,
                )
            )
        return out
    return [SourceClass(id=cid, kind=kind, pattern=f".ai/{pattern}") for cid, kind, pattern in _DEFAULT_CLASSES]


def _packaged_classes(declared: list[SourceClass], layer: str) -> list[SourceClass]:
    kinds = {c.kind for c in declared}
    return [
        SourceClass(id=cid, kind=kind, pattern=f"{layer}/{p}")
        for cid, kind, p in _PACKAGED_CLASSES
        if kind not in kinds
    ]


class _Scope:
    """The scope's allow-list and deny-list (`scope.yaml` `in` and `out`): which discovered files are read."""

    def __init__(self, inside: list[str] | None, outside: list[str]) -> None:
        self._inside = None if inside is None else _pattern(inside)
        self._outside = _pattern(outside)

    def admits(self, path: str) -> bool:
        if self._outside is not None and self._outside.match(path):
            return False
        return self._inside is None or self._inside.match(path) is not None

    @classmethod
    def read(cls, repo: Repository, reading: LayerReading, layer: str) -> _Scope:
        local = f"{layer}/local/"
        rel = f"{layer}/{reading.sections.get('scope', 'repo/scope.yaml')}"
        try:
            data = load_yaml(read_repository_file(repo.root, Path(rel)))
        except (OSError, *_NOT_YAML):
            data = None
        if not isinstance(data, dict):
            return cls(None, [local])
        inside = data.get("in")
        entries = [str(e) for e in inside if isinstance(e, str)] if isinstance(inside, list) and inside else None
        out = data.get("out")
        denied = [local]
        groups = [out] if isinstance(out, list) else [out, *out.values()] if isinstance(out, dict) else []
        for group in groups:
            paths = group if isinstance(group, list) else group.get("paths") if isinstance(group, dict) else None
            if isinstance(paths, list):
                denied.extend(str(p) for p in paths if isinstance(p, str))
        return cls(entries, denied)


def _pattern(entries: list[str]) -> re.Pattern[str] | None:
    """One expression matching a path any entry names: a glob, a directory (`dir/`) or a path and its subtree."""
    parts: list[str] = []
    for raw in entries:
        entry = raw.removeprefix(":(glob)").removeprefix("./")
        if any(ch in entry for ch in "*?["):
            parts.append(glob_regex(entry.rstrip("/")).pattern.removesuffix(r"\Z") + r"(?:/.*)?\Z")
        elif entry.endswith("/"):
            parts.append(re.escape(entry) + ".*")
        elif entry:
            parts.append(re.escape(entry) + r"(?:/.*)?\Z")
    return re.compile("|".join(f"(?:{p})" for p in parts), re.S) if parts else None


class _Builder:
    """One build of the index over one checkout."""

    def __init__(self, repo: Repository, reading: LayerReading) -> None:
        self.repo = repo
        self.reading = reading
        self.layer = repo.relative(repo.layer)
        knowledge = f"{self.layer}/{reading.sections.get('knowledge', 'repo/knowledge')}"
        self.schema = load_kind_schema(repo.root, knowledge)
        sections = [(f"{self.layer}/{p}".rstrip("/"), name) for name, p in reading.sections.items()]
        self.sections = sorted(sections, key=lambda s: -len(s[0]))
        self.documents = frozenset(reading.context_documents)
        self.reader = _Reader(repo)
        #: Under which token earlier readings hold (svc.layer._readings).
        self.token = (self.schema.token, tuple(sorted(reading.sections.items())), tuple(sorted(self.documents)))
        self.readings: Readings | None = None

    def build(self) -> ObjectIndex:
        repo = self.repo
        declared = source_classes(repo, self.reading.sections)
        classes = [*declared, *_packaged_classes(declared, self.layer)]
        diagnostics = [
            IndexDiagnostic(severity=p.severity, code=p.code, path=p.path, message=p.message)
            for p in self.schema.problems
        ]
        cache = f"{self.layer}/{CACHE_FILE}"
        documents = [f"{_glob_escape(self.layer)}/**/{_glob_escape(d)}" for d in sorted(self.documents)]
        paths = _discover(repo, [*(c.pattern for c in classes), *documents, _glob_escape(cache)])
        regexes = [(c, glob_regex(c.pattern)) for c in classes]
        context = SourceClass(id="context", kind="context", pattern=f"{self.layer}/**")
        local = f"{self.layer}/local/"
        claimed: dict[str, SourceClass] = {}
        for path in paths:
            for source, regex in regexes:
                if regex.match(path):
                    claimed[path] = source
                    break
            else:
                if path.rsplit("/", 1)[-1] in self.documents and not path.startswith(local):
                    claimed[path] = context
        tracked = repo.git_dir is not None and cache in paths
        self.readings = Readings(repo, self.layer, self.token, shared=not tracked)
        scope = _Scope.read(repo, self.reading, self.layer)
        objects: list[LayerObject] = []
        for path in sorted(claimed):
            source = claimed[path]
            if not scope.admits(path):
                diagnostics.append(_diag("out_of_scope", path, f"{path} is outside the scope; not read", "warning"))
                continue
            done = self.read_file(path, source)
            objects.extend(done.objects)
            diagnostics.extend(done.diagnostics)
        by_uri: dict[str, list[LayerObject]] = {}
        for obj in objects:
            by_uri.setdefault(obj.uri, []).append(obj)
        kept: list[LayerObject] = []
        for uri, claimants in by_uri.items():
            if len(claimants) == 1:
                kept.append(claimants[0])
                continue
            where = ", ".join(sorted({_where(c) for c in claimants}))
            for c in claimants:
                diagnostics.append(
                    _diag(
                        "duplicate_identity",
                        c.path,
                        f"{_where(c)} claims {uri}, as do {where}; none of them is served",
                        member=c.member,
                    )
                )
        self.readings.close()
        return ObjectIndex(kept, classes, diagnostics=diagnostics, kinds=self.schema)

    def read_file(self, path: str, source: SourceClass) -> Reading:
        """The reading of one file: its last one when its stat numbers are unchanged (not opened), else read.

        A file read is parsed only when its bytes are new (`Readings.get`).
        """
        assert self.readings is not None
        looked = self.reader.examine(path)
        if isinstance(looked, Reading):
            return looked
        where = (source.id, source.kind, path)
        kept = self.readings.unchanged(where, looked)
        if kept is not None:
            return kept
        read = self.reader.read(path)
        if isinstance(read, Reading):
            return read
        opened, raw = read
        key = (*where, digest(raw))
        done = self.readings.get(key, opened)
        if done is None:
            done = self.read_bytes(path, source, raw)
            self.readings.put(key, done, opened)
        return done

    def read_bytes(self, path: str, source: SourceClass, raw: bytes) -> Reading:
        spec = self.schema.get(source.kind)
        if spec is None:
            known = ", ".join(sorted(self.schema.kinds))
            return _fail(
                "unknown_kind",
                path,
                f"{path}: class {source.id!r} names the kind {source.kind!r}, "
                f"which no kinds.yaml defines (known: {known})",
            )
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            return _fail("invalid_utf8", path, f"{path} is not UTF-8 (byte {exc.start})")
        context_document = path.rsplit("/", 1)[-1] in self.documents and path.startswith(self.layer + "/")
        if context_document:
            spec = self.schema.get("context") or spec
        base = _Base(path, source, len(raw), self._section(path))
        if spec.format == "text":
            return self._one(base, spec, {}, text, text)
        if spec.format == "yaml":
            return self._yaml(base, spec, text)
        return self._markdown(base, spec, text, context_document=context_document)

    def _section(self, path: str) -> str | None:
        for prefix, name in self.sections:
            if path == prefix or path.startswith(prefix + "/"):
                return name
        return None

    def _markdown(self, base: _Base, spec: KindSpec, text: str, *, context_document: bool) -> Reading:
        path = base.path
        front = _split_front_matter(text)
        if isinstance(front, str):
            return _fail("malformed_front_matter", path, f"{path}: {front}")
        meta, body = front
        if meta is None:
            if context_document:
                return _fail(
                    "missing_context_contract",
                    path,
                    f"{path} is a context document without the context contract "
                    "(front matter with `schema: context/v1`)",
                )
            if spec.without_front_matter is not None:
                fallback = self.schema.get(spec.without_front_matter)
                if fallback is None:
                    return _fail("unknown_kind", path, f"{path}: no kind {spec.without_front_matter!r} to read it as")
                spec = fallback
            elif spec.front_matter == "required":
                return _fail("missing_front_matter", path, f"{path} has no front matter; kind {spec.name} needs it")
            return self._one(base, spec, {}, body, text)
        if spec.front_matter == "none":
            return self._one(base, spec, {}, text, text)
        claimed = meta.get("kind")
        if context_document and claimed != "context" and meta.get("schema") != "context/v1":
            return _fail(
                "missing_context_contract",
                path,
                f"{path} is a context document whose front matter does not "
                "carry the context contract (`schema: context/v1`)",
            )
        if isinstance(claimed, str) and claimed != spec.name:
            declared = self.schema.get(claimed) if claimed in self.schema.declared else None
            if declared is None:
                return _fail(
                    "kind_mismatch",
                    path,
                    f"{path} declares kind {claimed!r}, but class {base.source.id!r} reads it as {spec.name!r}",
                )
            spec = declared
        return self._one(base, spec, meta, body, text)

    def _yaml(self, base: _Base, spec: KindSpec, text: str) -> Reading:
        path = base.path
        try:
            loaded = load_yaml(text)
        except _NOT_YAML as exc:
            return _fail("malformed_yaml", path, clip(f"{path} is not YAML: {_first_line(exc)}", 500))
        if not isinstance(loaded, dict):
            return _fail("malformed_yaml", path, f"{path} does not hold a mapping")
        meta = _plain_mapping(loaded)
        if spec.members is None:
            return self._one(base, spec, meta, text, text)
        pinned = _version_problem(spec, meta, path)
        if pinned is not None:
            return pinned
        items = meta.get(spec.members)
        if not isinstance(items, list):
            return _fail("missing_field", path, f"{path} has no list {spec.members!r} of {spec.name} objects")
        done = Reading()
        for i, item in enumerate(items):
            member = f"{spec.members}.{i}"
            if not isinstance(item, dict):
                done.diagnostics.append(
                    _diag("malformed_yaml", path, f"{path} {member} is not a mapping", member=member)
                )
                continue
            content = msgspec.json.format(_JSON.encode(item), indent=2).decode()
            one = self._object(base, spec, item, "", content, member=member, versioned=False)
            done.objects.extend(one.objects)
            done.diagnostics.extend(one.diagnostics)
        return done

    def _one(self, base: _Base, spec: KindSpec, meta: dict[str, Any], body: str, content: str) -> Reading:
        return self._object(base, spec, meta, body, content, member=None, versioned=True)

    def _object(
        self,
        base: _Base,
        spec: KindSpec,
        meta: dict[str, Any],
        body: str,
        content: str,
        *,
        member: str | None,
        versioned: bool,
    ) -> Reading:
        path = base.path
        where = f"{path} {member}" if member else path
        if versioned:
            pinned = _version_problem(spec, meta, path)
            if pinned is not None:
                return pinned
        if spec.validator is not None:
            problem = _schema_problem(spec, meta, where)
            if problem is not None:
                code, message = problem
                return _fail(code, path, message, member=member)
        values: list[str] = []
        for name in spec.identity:
            value = meta.get(name)
            if value is None or value == "" or isinstance(value, dict | list):
                return _fail(
                    "missing_field", path, f"{where} has no {name!r}, which names a {spec.name}", member=member
                )
            text = str(value).lower() if isinstance(value, bool) else str(value)
            if _BAD_IDENTITY.search(text):
                return _fail(
                    "schema_violation",
                    path,
                    f"{where}: {name} {clip(text, 80)!r} holds '/', '@' or whitespace, which an identity may not",
                    member=member,
                )
            values.append(text)
        identity = encode_identity("@".join(values) if values else path)
        title = None
        for name in spec.title:
            title = _heading(body) if name == "@heading" else _text(meta.get(name))
            if title is not None:
                break
        description = next((d for d in (_text(meta.get(n)) for n in spec.description) if d is not None), None)
        tags = meta.get("tags")
        obj = LayerObject(
            uri=object_uri(spec.name, identity),
            id=f"{spec.name}.{identity}",
            kind=spec.name,
            identity=identity,
            title=title,
            description=description,
            tags=tuple(clip(t, 200) for t in tags if isinstance(t, str))[:64] if isinstance(tags, list) else (),
            metadata=meta,
            provenance=ObjectProvenance(
                path=path,
                directory=posixpath.dirname(path) or ".",
                source_class=base.source.id,
                section=base.section,
                bytes=base.size,
                member=member,
            ),
            media_type="application/json" if member is not None else spec.media_type,
            content=content,
        )
        return Reading(objects=[obj])


@dataclass(frozen=True, slots=True)
class _Base:
    path: str
    source: SourceClass
    size: int
    section: str | None


def _diag(
    code: str, path: str, message: str, severity: Severity = "error", *, member: str | None = None
) -> IndexDiagnostic:
    return IndexDiagnostic(severity=severity, code=code, path=path, message=clip(message, 1000), member=member)


def _fail(code: str, path: str, message: str, *, member: str | None = None) -> Reading:
    return Reading(diagnostics=[_diag(code, path, message, member=member)])


def _where(obj: LayerObject) -> str:
    return f"{obj.path} {obj.member}" if obj.member else obj.path


def _first_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CHUNK = 64 * 1024


class _Reader:
    """Reads discovered files under the reading rule, resolving each directory once per build.

    A file is read only when it is a regular file (no symlink, FIFO or device), at most 4 MiB, and its
    directory's real path lies inside the checkout's real path.
    """

    def __init__(self, repo: Repository) -> None:
        self.root = str(repo.root)
        self.top = os.path.realpath(repo.root)
        self._dirs: dict[str, bool] = {}

    def _inside(self, directory: str) -> bool:
        known = self._dirs.get(directory)
        if known is None:
            real = os.path.realpath(os.path.join(self.root, directory)) if directory else self.top
            known = self._dirs[directory] = real == self.top or real.startswith(self.top + os.sep)
        return known

    def examine(self, path: str) -> os.stat_result | Reading:
        """The file's `lstat` when the rule lets it be read, or the diagnostic saying why it is not read."""
        full = os.path.join(self.root, path)
        try:
            st = os.lstat(full)
        except FileNotFoundError:
            return _fail("unreadable", path, f"{path} is listed but absent")
        except OSError as exc:
            return _fail("unreadable", path, f"{path} cannot be examined: {exc.strerror or exc}")
        if stat.S_ISLNK(st.st_mode):
            return _fail("symlink", path, f"{path} is a symlink; svc reads no symlink as an object")
        if not stat.S_ISREG(st.st_mode):
            return _fail("not_a_file", path, f"{path} is not a regular file")
        if st.st_size > MAX_FILE_BYTES:
            return _fail("oversized", path, f"{path} holds {st.st_size} bytes, over the {MAX_FILE_BYTES} byte limit")
        if not self._inside(posixpath.dirname(path)):
            return _fail("symlink", path, f"{path} lies under a symlinked directory leaving the repository")
        return st

    def read(self, path: str) -> tuple[os.stat_result, bytes] | Reading:
        """The open file's `fstat` and its bytes, or the diagnostic saying why it is not read (`examine` first)."""
        full = os.path.join(self.root, path)
        try:
            fd = os.open(full, _FLAGS)
        except OSError as exc:
            return _fail("unreadable", path, f"{path} cannot be opened: {exc.strerror or type(exc).__name__}")
        try:
            opened = os.fstat(fd)
            if not stat.S_ISREG(opened.st_mode):
                return _fail("not_a_file", path, f"{path} is not a regular file")
            # One read of the size fstat gave (plus one byte, to see growth), then small reads to the end.
            want = min(opened.st_size, MAX_FILE_BYTES) + 1
            chunks: list[bytes] = []
            total = 0
            while total <= MAX_FILE_BYTES:
                chunk = os.read(fd, want)
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
                want = min(_CHUNK, MAX_FILE_BYTES + 1 - total)
        except OSError as exc:
            return _fail("unreadable", path, f"{path} cannot be read: {exc.strerror or type(exc).__name__}")
        finally:
            os.close(fd)
        if total > MAX_FILE_BYTES:
            return _fail("oversized", path, f"{path} grew over the {MAX_FILE_BYTES} byte limit while read")
        return opened, b"".join(chunks)


def _split_front_matter(text: str) -> tuple[dict[str, Any] | None, str] | str:
    """(metadata, body); (None, text) without front matter; a sentence when the front matter is broken."""
    opening = _FRONT_OPEN.match(text)
    if opening is None:
        return None, text
    closing = _FRONT_CLOSE.search(text, opening.end())
    if closing is None:
        return "the front matter opened on line 1 is never closed by a `---` line"
    block = text[opening.end() : closing.start()]
    try:
        meta = load_yaml(block)
    except _NOT_YAML as exc:
        return clip(f"the front matter is not YAML: {_first_line(exc)}", 500)
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        return "the front matter is not a mapping"
    return _plain_mapping(meta), text[closing.end() :]


def _plain_mapping(mapping: dict[Any, Any]) -> dict[str, Any]:
    """A mapping with text keys, lists for sequences and sets, all the way down (keys in file order)."""
    return {k if isinstance(k, str) else str(k): _plain(v) for k, v in mapping.items()}


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return _plain_mapping(value)
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(v) for v in value]
    return value


def _version_problem(spec: KindSpec, meta: Mapping[str, Any], path: str) -> Reading | None:
    if spec.schema_version is None:
        return None
    field, supported = spec.schema_version
    value = meta.get(field)
    if value is not None and str(value) in supported:
        return None
    found = "none" if value is None else repr(clip(str(value), 80))
    return _fail(
        "unsupported_version",
        path,
        f"{path}: {field} is {found}; a {spec.name} is read at {', '.join(supported)}",
    )


def _schema_problem(spec: KindSpec, meta: dict[str, Any], where: str) -> tuple[str, str] | None:
    """The first JSON Schema finding of `meta` as (code, message), or None when it validates."""
    errors = list(spec.validator.iter_errors(meta))
    if not errors:
        return None
    for error in errors:
        if error.validator == "required" and not error.absolute_path:
            return "missing_field", f"{where}: {error.message} (schema {spec.schema})"
    for error in errors:
        if error.validator == "additionalProperties" and not error.absolute_path:
            allowed = error.schema.get("properties", {}) if isinstance(error.schema, dict) else {}
            extra = [k for k in meta if k not in allowed]
            return "unknown_key", f"{where}: unknown keys {', '.join(extra)} (schema {spec.schema})"
    first = min(errors, key=lambda e: list(e.absolute_path))
    at = "/".join(str(p) for p in first.absolute_path) or "(top)"
    return "schema_violation", clip(f"{where}: {at}: {first.message} (schema {spec.schema})", 500)


def _discover(repo: Repository, patterns: list[str]) -> list[str]:
    """Repository-relative paths matching any pattern: tracked files in Git, else files on disk."""
    if repo.git_dir is not None and patterns:
        globs = (f":(glob){p}" for p in patterns)
        listed = run_git(repo.root, "ls-files", "-z", "--cached", "--", *globs, timeout=_GIT_SECONDS)
        if listed is not None:
            return sorted({os.fsdecode(n) for n in listed.split(b"\0") if n})
    by_start: dict[str, list[re.Pattern[str]]] = {}
    for pattern in patterns:
        by_start.setdefault(literal_prefix(pattern), []).append(glob_regex(pattern))
    found: set[str] = set()
    for start, regexes in by_start.items():
        found.update(path for path in _walk(repo, start) if any(r.match(path) for r in regexes))
    return sorted(found)


def _glob_escape(text: str) -> str:
    """`text` as a `:(glob)` pattern matching exactly itself."""
    return re.sub(r"([*?\[])", r"[\1]", text)


def literal_prefix(pattern: str) -> str:
    """The directory a `:(glob)` pattern starts in (its segments before the first wildcard, the name left out)."""
    head: list[str] = []
    for segment in pattern.split("/")[:-1]:
        if any(ch in segment for ch in "*?["):
            break
        head.append(segment)
    return "/".join(head)


def _walk(repo: Repository, start: str) -> Iterable[str]:
    """Every file under `start` (repository-relative), skipping VCS, environments, caches and `.ai/local/`.

    Symlinked directories are not descended; every other entry is yielded, for the reader to refuse.
    """
    root = str(repo.root)
    local = str(repo.layer / "local")
    for dirpath, dirnames, filenames in os.walk(os.path.join(root, start) if start else root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS and os.path.join(dirpath, d) != local)
        here = os.path.relpath(dirpath, root).replace(os.sep, "/")
        for name in sorted(filenames):
            yield name if here == "." else f"{here}/{name}"


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, dict | list):
        return None
    text = " ".join(str(value)[: _TEXT_LIMIT * 4].split())
    return clip(text, _TEXT_LIMIT) or None


def _heading(text: str) -> str | None:
    """The text of the first level-1 ATX heading, its closing hashes dropped (linear: no backtracking)."""
    match = _HEADING.search(text)
    if match is None:
        return None
    line = match.group(1).rstrip()
    return line.rstrip(" \t#") or line
