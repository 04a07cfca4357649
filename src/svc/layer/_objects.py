"""The objects of the layer: every file a source class discovers, with its `svc://<kind>/<identity>` URI.

Source classes come from `knowledge/sources.yaml` (LAYER §1): each names a `kind` and a `:(glob)` pathspec.
Discovery lists tracked files with one `git ls-files`; outside a Git work tree (or when Git cannot answer)
the same globs are walked on disk. Under `:(glob)` a `*` never crosses a `/` and `**` spans directories.
Without a `sources.yaml` the layer's own sections are the classes (policy, scope, profiles, rules, prompts,
milestones, issues). Context documents (`README.md` files under `.ai/` that carry `schema: context/v1` front
matter) are objects of kind `context` in every layer.

An object's identity is the kind's identity fields joined by `@` (`rule`: `id@version`; `milestone`,
`issue`, `context`, `claim`: `id`; `prompt`, `profile`: `name`), or its repository-relative path when the
kind has none or the file does not carry them (slashes kept, other reserved characters percent-encoded).
Its id is `<kind>.<identity>` and its URI `svc://<kind>/<identity>`. The index is a pure reading of the
files: it never writes, and a file that cannot be read or parsed is still an object, identified by path.
Files are read under the reading rule (`read_repository_file`): discovery keeps only regular files whose
real path stays inside the checkout (a FIFO, a device or a symlink leaving it is no object), a file over
4 MiB is an object identified by path, and titles and descriptions are cut at 1,000 characters.
"""

from __future__ import annotations

import mimetypes
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any
from urllib.parse import quote

import msgspec

from svc.layer._git import run_git
from svc.layer._manifest import read_manifest
from svc.layer._read import check_repository_file, clip, read_repository_file
from svc.layer._repository import Repository
from svc.layer._yaml import YamlError, dump_yaml, load_yaml

__all__ = ["LayerObject", "ObjectIndex", "SourceClass", "glob_regex", "object_uri"]

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
_MEDIA: dict[str, str] = {
    "rule": "text/markdown",
    "prompt": "text/markdown",
    "document": "text/markdown",
    "context": "text/markdown",
    "profile": "application/yaml",
    "policy": "application/yaml",
    "scope": "application/yaml",
    "milestone": "application/yaml",
    "issue": "application/yaml",
    "claim": "application/yaml",
    "implementation": "text/plain",
    "test": "text/plain",
}
_FRONT_MATTER = re.compile(rb"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)
_HEADING = re.compile(r"^#[ \t]+(\S.*)$", re.M)
_GIT_SECONDS = 10.0
_SKIPPED_DIRS = frozenset({".git", ".venv", "node_modules", "__pycache__", ".mypy_cache", ".ruff_cache"})
#: What a YAML text that does not load raises (aliases and libyaml's nesting bound are `YamlError`s).
_NOT_YAML = (YamlError, ValueError, TypeError, RecursionError)
#: The longest title or description an object carries.
_TEXT_LIMIT = 1000


class LayerObject(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One object of the layer: where it comes from and how it is named."""

    uri: str
    id: str
    kind: str
    identity: str
    path: str
    media_type: str
    source_class: str
    title: str | None = None
    description: str | None = None
    tags: tuple[str, ...] = ()
    member: str | None = None


@dataclass(frozen=True, slots=True)
class SourceClass:
    """A class of `sources.yaml`: its id, the kind its files become, and its glob (without `:(glob)`)."""

    id: str
    kind: str
    pattern: str
    required: bool = False


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
    """Every object of one checkout's layer, in URI byte order, with lookups by URI and kind."""

    def __init__(self, objects: Iterable[LayerObject], classes: Iterable[SourceClass] = ()) -> None:
        unique: dict[str, LayerObject] = {}
        for obj in objects:
            unique.setdefault(obj.uri, obj)
        self.objects: tuple[LayerObject, ...] = tuple(sorted(unique.values(), key=lambda o: o.uri.encode()))
        self.by_uri: Mapping[str, LayerObject] = MappingProxyType({o.uri: o for o in self.objects})
        self.kinds: tuple[str, ...] = tuple(sorted({o.kind for o in self.objects}))
        self.classes: tuple[SourceClass, ...] = tuple(classes)

    def __len__(self) -> int:
        return len(self.objects)

    def get(self, uri: str) -> LayerObject | None:
        """The object with this URI, or None."""
        return self.by_uri.get(uri)

    @classmethod
    def build(cls, repo: Repository) -> ObjectIndex:
        """Discover and read every object of `repo` (nothing when the layer is absent or refused)."""
        reading = read_manifest(repo)
        if not repo.has_layer or not reading.usable:
            return cls(())
        classes = source_classes(repo, reading.sections)
        paths = _discover(repo, [c.pattern for c in classes])
        objects: list[LayerObject] = []
        for source in classes:
            regex = glob_regex(source.pattern)
            for path in paths:
                if regex.match(path):
                    objects.extend(_objects_of(repo, source, path))
        documents = set(reading.context_documents)
        for path in _walk(repo, ".ai"):
            if path.rsplit("/", 1)[-1] in documents:
                context = _context_object(repo, path)
                if context is not None:
                    objects.append(context)
        return cls(objects, classes)

    def read(self, obj: LayerObject, repo: Repository) -> bytes:
        """The object's content: its file's bytes, or the YAML of its member for a collection file.

        Raises:
            OSError: the file cannot be read any more, or the reading rule refuses it (`Unreadable`).
        """
        data = read_repository_file(repo.root, Path(obj.path))
        if obj.member is None:
            return data
        for member in _claim_members(data):
            if str(member.get("id")) == obj.member:
                return dump_yaml(member).encode()
        raise FileNotFoundError(f"{obj.path} no longer holds {obj.member}")


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


def _discover(repo: Repository, patterns: list[str]) -> list[str]:
    """Repository-relative paths matching any pattern: tracked files in Git, else files on disk."""
    if repo.git_dir is not None and patterns:
        globs = (f":(glob){p}" for p in patterns)
        listed = run_git(repo.root, "ls-files", "-z", "--cached", "--", *globs, timeout=_GIT_SECONDS)
        if listed is not None:
            names = [os.fsdecode(n) for n in listed.split(b"\0") if n]
            return sorted({n for n in names if _admissible(repo, n)}, key=str.encode)
    regexes = [glob_regex(p) for p in patterns]
    found: set[str] = set()
    for pattern, regex in zip(patterns, regexes, strict=True):
        for path in _walk(repo, _literal_prefix(pattern)):
            if regex.match(path):
                found.add(path)
    return sorted(found, key=str.encode)


def _literal_prefix(pattern: str) -> str:
    """The directory a pattern starts in (its path before the first wildcard segment)."""
    head: list[str] = []
    for segment in pattern.split("/")[:-1]:
        if any(ch in segment for ch in "*?["):
            break
        head.append(segment)
    return "/".join(head)


def _admissible(repo: Repository, rel: str) -> bool:
    """Whether `rel` is a regular file whose real path stays inside the checkout (any size)."""
    try:
        check_repository_file(repo.root, Path(rel), limit=2**62)
    except OSError:
        return False
    return True


def _walk(repo: Repository, start: str) -> Iterable[str]:
    """Regular files under `start` (repository-relative), skipping VCS, environments, caches and `.ai/local/`.

    Symlinked directories are not descended; a file symlink counts only when it resolves inside the checkout.
    """
    base = repo.root / start if start else repo.root
    local = repo.layer / "local"
    for dirpath, dirnames, filenames in os.walk(base):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIPPED_DIRS and (here / d) != local)
        for name in sorted(filenames):
            rel = repo.relative(Path(dirpath) / name)
            if _admissible(repo, rel):
                yield rel


def _path_identity(path: str) -> str:
    return quote(path, safe="/")


def _field_identity(*fields: Any) -> str | None:
    values = [str(f) for f in fields]
    if not all(v and v != "None" for v in values):
        return None
    return quote("@".join(values), safe="@")


def _media_type(kind: str, path: str) -> str:
    known = _MEDIA.get(kind)
    if known is not None:
        return known
    if path.endswith((".yaml", ".yml")):
        return "application/yaml"
    if path.endswith(".md"):
        return "text/markdown"
    guessed, _ = mimetypes.guess_type(path)
    return guessed or "text/plain"


def _front_matter(data: bytes) -> tuple[dict[str, Any], bytes]:
    match = _FRONT_MATTER.match(data)
    if match is None:
        return {}, data
    try:
        meta = load_yaml(match.group(1))
    except _NOT_YAML:
        meta = None
    return (meta if isinstance(meta, dict) else {}), data[match.end() :]


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, dict | list):
        return None
    text = " ".join(str(value)[: _TEXT_LIMIT * 4].split())
    return clip(text, _TEXT_LIMIT) or None


def _tags(value: Any) -> tuple[str, ...]:
    return tuple(clip(str(t), 200) for t in value[:64]) if isinstance(value, list) else ()


def _heading(text: str) -> str | None:
    """The text of the first level-1 ATX heading, its closing hashes dropped (linear: no backtracking)."""
    match = _HEADING.search(text)
    if match is None:
        return None
    line = match.group(1).rstrip()
    return line.rstrip(" \t#") or line


def _make(
    source: SourceClass,
    path: str,
    identity: str | None,
    *,
    title: Any = None,
    description: Any = None,
    tags: Any = None,
    member: str | None = None,
) -> LayerObject:
    ident = identity if identity is not None else _path_identity(path)
    kind = source.kind
    return LayerObject(
        uri=object_uri(kind, ident),
        id=f"{kind}.{ident}",
        kind=kind,
        identity=ident,
        path=path,
        media_type=_media_type(kind, path),
        source_class=source.id,
        title=_text(title),
        description=_text(description),
        tags=_tags(tags),
        member=member,
    )


def _objects_of(repo: Repository, source: SourceClass, path: str) -> list[LayerObject]:
    kind = source.kind
    if kind in ("policy", "scope", "implementation", "test"):
        return [_make(source, path, None)]
    try:
        data = read_repository_file(repo.root, Path(path))
    except OSError:
        return [_make(source, path, None)]
    if kind == "claim":
        members = [
            _make(
                source,
                path,
                _field_identity(m.get("id")),
                title=m.get("title"),
                description=m.get("statement", m.get("description")),
                tags=m.get("tags"),
                member=str(m.get("id")),
            )
            for m in _claim_members(data)
            if m.get("id") is not None
        ]
        return members or [_make(source, path, None)]
    if path.endswith((".yaml", ".yml")):
        return [_yaml_object(source, path, data)]
    meta, body = _front_matter(data)
    if kind == "rule":
        identity = _field_identity(meta.get("id"), meta.get("version"))
    elif kind in ("prompt", "profile"):
        identity = _field_identity(meta.get("name"))
    elif kind in ("milestone", "issue", "context"):
        identity = _field_identity(meta.get("id"))
    else:
        identity = None
    title = meta.get("title")
    if title is None and kind not in ("rule", "prompt", "profile"):
        title = _heading(body.decode("utf-8", "replace"))
    if title is None and kind in ("prompt", "profile"):
        title = meta.get("name")
    return [_make(source, path, identity, title=title, description=meta.get("description"), tags=meta.get("tags"))]


def _yaml_object(source: SourceClass, path: str, data: bytes) -> LayerObject:
    try:
        meta = load_yaml(data)
    except _NOT_YAML:
        meta = None
    if not isinstance(meta, dict):
        return _make(source, path, None)
    kind = source.kind
    if kind == "milestone":
        return _make(
            source,
            path,
            _field_identity(meta.get("id")),
            title=meta.get("title"),
            description=meta.get("outcome"),
            tags=meta.get("tags"),
        )
    if kind == "issue":
        return _make(
            source,
            path,
            _field_identity(meta.get("id")),
            title=meta.get("title"),
            description=meta.get("objective"),
            tags=meta.get("tags"),
        )
    if kind == "profile":
        name = meta.get("name")
        return _make(
            source, path, _field_identity(name), title=name, description=meta.get("description"), tags=meta.get("tags")
        )
    return _make(
        source, path, None, title=meta.get("title"), description=meta.get("description"), tags=meta.get("tags")
    )


def _claim_members(data: bytes) -> list[dict[str, Any]]:
    try:
        loaded = load_yaml(data)
    except _NOT_YAML:
        return []
    claims = loaded.get("claims") if isinstance(loaded, dict) else None
    return [c for c in claims if isinstance(c, dict)] if isinstance(claims, list) else []


def _context_object(repo: Repository, path: str) -> LayerObject | None:
    try:
        data = read_repository_file(repo.root, Path(path))
    except OSError:
        return None
    meta, _ = _front_matter(data)
    if meta.get("schema") != "context/v1" and meta.get("kind") != "context":
        return None
    source = SourceClass(id="context", kind="context", pattern=path)
    return _make(
        source,
        path,
        _field_identity(meta.get("id")),
        title=meta.get("title"),
        description=meta.get("description"),
        tags=meta.get("tags"),
    )
