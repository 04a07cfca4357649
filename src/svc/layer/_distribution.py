"""The distribution model (how a project is packaged, published and installed) and its release records.

**The model** (`schema: svc-distribution/v1`, docs/distribution.md) comes from one of two places, the first
that has one: an object of kind `distribution` the repository indexes (it declares the kind and a class for
it), else svc's share: `$SVC_SHARE/distribution.yaml` when the environment names a share directory, else
svc's packaged `share/distribution.yaml`. Neither → no model. A model is decoded strictly (unknown keys,
wrong types and values outside each vocabulary refused), then every rule the types cannot state is checked
(`model_findings`); a model that breaks one is `Internal`, naming where it came from and the first problem.

**Release records** are the objects of kind `release-record` (`.ai/repo/releases/<tag>.yaml`):
`schema: release/v1`, a PEP 440 `version`, `tag` = `v` + version, the file named by its tag. A record that
does not decode, or a file of a release-record class the index could not read, is `Internal` naming its
repository-relative path. Records sort newest first by `packaging.version` (a final release above its own
pre-releases), ties by tag; the latest is the first stable record not yanked.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import msgspec
from msgspec import Meta

from svc._errors import Internal, NotFound
from svc.layer._objects import ObjectIndex, glob_regex
from svc.layer._read import Unreadable, clip, read_repository_file
from svc.layer._share import ShareUnavailable, read_share, share_name
from svc.layer._yaml import YamlError, load_yaml

if TYPE_CHECKING:
    from packaging.version import Version

__all__ = [
    "MODEL_KIND",
    "RECORD_KIND",
    "SCHEMA",
    "TAG_PLACEHOLDER",
    "Distribution",
    "DistributionModel",
    "Release",
    "ReleaseArtifact",
    "ReleaseRecord",
    "Target",
    "find_distribution",
    "latest_release",
    "model_findings",
    "parse_model",
    "record_findings",
    "release_records",
    "require_distribution",
]

#: The contract a model follows.
SCHEMA = "svc-distribution/v1"
#: The contract a release record follows.
RECORD_SCHEMA = "release/v1"
#: The kind a repository's own model is indexed as.
MODEL_KIND = "distribution"
#: The kind release records are indexed as.
RECORD_KIND = "release-record"
#: The model's file name in a share directory.
MODEL_FILE = "distribution.yaml"
#: The environment variable naming a share directory that replaces svc's packaged one.
#: What stands where a release's tag goes in a name not yet derived for one.
TAG_PLACEHOLDER = "{tag}"
#: What stands where the version goes in such a name.
VERSION_PLACEHOLDER = "{version}"
#: Where a packaged model is said to come from.
PACKAGED_SOURCE = "svc's share/distribution.yaml"
#: The largest model file svc reads.
_MODEL_LIMIT = 1024 * 1024
#: What a YAML text that does not load raises.
_NOT_YAML = (YamlError, ValueError, TypeError, RecursionError)
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_REPOSITORY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9._-]+")
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
_HEX64 = re.compile(r"[0-9a-fA-F]{64}")
_glob = lru_cache(maxsize=256)(glob_regex)

Os = Literal["macos", "linux", "windows"]
Arch = Literal["x86_64", "aarch64"]
Libc = Literal["gnu", "musl"]
Format = Literal["tar.gz", "zip"]
TargetStatus = Literal["supported", "experimental", "unavailable"]
Channel = Literal["stable", "prerelease"]


class Project(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What is installed (`binary`, the command a person types) and where it comes from (`repository`)."""

    binary: str
    repository: str
    license: str


class Installer(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How a person installs: `download_command` fetches `base_url/script`, piped into `shell` when it has one.

    `script` may hold `{tag}` and `{version}`, left as written in the answers. `next` is what the person runs
    after installing (`<binary> <next>`). `latest_url` and `release_url` (with `{tag}`) locate the release
    metadata; without them, `base_url/releases/latest.json` and `base_url/releases/{tag}.json`.
    """

    base_url: str
    script: str
    download_command: str
    shell: str | None = None
    install_dir: str
    prefix: str
    next: str = "init"
    latest_url: str | None = None
    release_url: str | None = None


class Archive(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How an artifact is packaged (`format`, `extension`), named (`name`) and verified (`checksum`)."""

    format: Format
    extension: str
    name: str
    checksum: str
    checksums_file: str | None = None


class OsTitles(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The operating systems' names in prose."""

    macos: str
    linux: str
    windows: str


class ArchTitles(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The architectures' names in prose."""

    x86_64: str
    aarch64: str


class LibcTitles(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The C libraries' names in prose."""

    gnu: str
    musl: str


class Titles(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How each vocabulary term is written in prose."""

    os: OsTitles
    arch: ArchTitles
    libc: LibcTitles


class Build(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How a release builds a target: where (`runner`), with which system packages, and whether it runs there."""

    runner: str
    packages: tuple[str, ...] = ()
    native: bool = False


class Target(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One platform the project has an opinion about; published when `supported` or `experimental`."""

    id: str
    os: Os
    arch: Arch
    libc: Libc | None = None
    rust_target: str
    format: Format | None = None
    binary_suffix: str | None = None
    status: TargetStatus
    reason: str | None = None
    build: Build | None = None

    @property
    def published(self) -> bool:
        """Whether a release builds and publishes this target."""
        return self.status != "unavailable"


class DistributionModel(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The whole model, and everything derived from it (names, URLs, commands)."""

    schema: str
    project: Project
    installer: Installer
    archive: Archive
    titles: Titles
    targets: tuple[Target, ...]

    def published(self) -> tuple[Target, ...]:
        """The targets a release builds, in the model's order."""
        return tuple(t for t in self.targets if t.published)

    def target(self, key: str) -> Target | None:
        """The target whose id or triple is `key`."""
        return next((t for t in self.targets if key in (t.id, t.rust_target)), None)

    def title(self, target: Target) -> str:
        """`macOS ARM64`, `Linux x86_64 musl`: the OS title, the architecture title, the C library's."""
        parts = [getattr(self.titles.os, target.os), getattr(self.titles.arch, target.arch)]
        if target.libc is not None:
            parts.append(getattr(self.titles.libc, target.libc))
        return " ".join(parts)

    def extension(self, target: Target) -> str:
        """The artifact's extension: the model's, unless the target names another format."""
        if target.format is None or target.format == self.archive.format:
            return self.archive.extension
        return target.format

    def artifact_name(self, target: Target, tag: str) -> str:
        """The one naming function: `archive.name` with the binary, tag, version, triple and extension."""
        values = {
            "binary": self.project.binary,
            "target": target.rust_target,
            "extension": self.extension(target),
            **_tag_values(tag),
        }
        return _render(self.archive.name, values)

    def archive_root(self, target: Target, tag: str) -> str:
        """The artifact's name without its extension."""
        return self.artifact_name(target, tag).removesuffix("." + self.extension(target))

    def download_prefix(self) -> str:
        """The prefix every release asset URL starts with."""
        return f"https://github.com/{self.project.repository}/releases/download/"

    def artifact_url(self, target: Target, tag: str) -> str:
        """Where a release publishes the target's artifact."""
        return f"{self.download_prefix()}{tag}/{self.artifact_name(target, tag)}"

    def installer_url(self) -> str:
        """The installer's URL, `{tag}` and `{version}` left in."""
        script = _render(self.installer.script, _tag_values(TAG_PLACEHOLDER))
        return f"{self.installer.base_url}/{script}"

    def install_command(self) -> str:
        """The one-line install command: the download command and the installer URL, piped into the shell."""
        command = f"{self.installer.download_command} {self.installer_url()}"
        return command if self.installer.shell is None else f"{command} | {self.installer.shell}"

    def next_command(self) -> str:
        """What a person runs once installed."""
        return f"{self.project.binary} {self.installer.next}"

    def install_and_init_command(self) -> str:
        """Install, then initialise: the shell installer's `--init`, or the next command chained after it."""
        if self.installer.shell is None:
            return f"{self.install_command()} && {self.next_command()}"
        return f"{self.install_command()} -s -- --init"

    def release_url(self, tag: str) -> str:
        """The URL of one release's metadata."""
        if self.installer.release_url is None:
            return f"{self.installer.base_url}/releases/{tag}.json"
        return _render(self.installer.release_url, _tag_values(tag))

    def latest_url(self) -> str:
        """The URL of the stable release's metadata."""
        if self.installer.latest_url is None:
            return f"{self.installer.base_url}/releases/latest.json"
        return self.installer.latest_url


@dataclass(frozen=True, slots=True)
class Distribution:
    """A model and where it came from: a repository-relative path, or svc's share."""

    model: DistributionModel
    source: str


class ReleaseArtifact(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One published artifact: the target id, its file name, where it is served, its digest and size."""

    target: str
    name: str
    url: str
    sha256: str
    size: Annotated[int, Meta(ge=0)]


class ReleaseRecord(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One release as its record states it (`.ai/repo/releases/<tag>.yaml`)."""

    schema: str
    version: str
    tag: str
    channel: Channel
    commit: str
    published_at: str
    notes_url: str | None = None
    yanked: bool = False
    artifacts: tuple[ReleaseArtifact, ...]
    required_targets: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class Release:
    """A decoded record, its file and its parsed version."""

    record: ReleaseRecord
    path: str
    version: Version

    @property
    def stable(self) -> bool:
        """Whether an unpinned installation may resolve to it: stable and not yanked."""
        return self.record.channel == "stable" and not self.record.yanked


def _tag_values(tag: str) -> dict[str, str]:
    version = VERSION_PLACEHOLDER if tag == TAG_PLACEHOLDER else tag.removeprefix("v")
    return {"tag": tag, "version": version}


def _render(template: str, values: Mapping[str, str]) -> str:
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def _placeholders(template: str) -> set[str]:
    return set(_PLACEHOLDER.findall(template))


def _template_findings(where: str, template: str, allowed: tuple[str, ...]) -> list[str]:
    unknown = sorted(_placeholders(template) - set(allowed))
    if not unknown:
        return []
    named = ", ".join("{" + u + "}" for u in unknown)
    known = ", ".join("{" + a + "}" for a in allowed)
    return [f"{where} `{template}` holds {named}; it may hold only {known}"]


def _url_findings(where: str, url: str) -> list[str]:
    if not url.startswith("https://") or any(c.isspace() for c in url):
        return [f"{where} `{url}` is not an https URL"]
    return []


def model_findings(model: DistributionModel) -> list[str]:
    """Every rule of the model its types cannot state that it breaks, in a stable order."""
    out: list[str] = []
    if model.schema != SCHEMA:
        out.append(f"schema is `{model.schema}`, not `{SCHEMA}`")
    project, installer, archive = model.project, model.installer, model.archive
    if not _WORD.fullmatch(project.binary):
        out.append(f"project.binary `{project.binary}` is not a command name")
    if not _REPOSITORY.fullmatch(project.repository):
        out.append(f"project.repository `{project.repository}` is not owner/name")
    out += _url_findings("installer.base_url", installer.base_url)
    if installer.base_url.endswith("/"):
        out.append(f"installer.base_url `{installer.base_url}` ends with `/`; every URL is built by appending one")
    if not installer.script or installer.script.startswith("/"):
        out.append(f"installer.script `{installer.script}` is not a path under installer.base_url")
    out += _template_findings("installer.script", installer.script, ("tag", "version"))
    for name, value in (("download_command", installer.download_command), ("next", installer.next)):
        if not value.strip():
            out.append(f"installer.{name} is empty")
    if installer.latest_url is not None:
        out += _url_findings("installer.latest_url", installer.latest_url)
    if installer.release_url is not None:
        out += _url_findings("installer.release_url", installer.release_url)
        out += _template_findings("installer.release_url", installer.release_url, ("tag", "version"))
        if TAG_PLACEHOLDER not in installer.release_url:
            out.append(f"installer.release_url `{installer.release_url}` holds no {TAG_PLACEHOLDER}")
    if not archive.extension or archive.extension.startswith(".") or "/" in archive.extension:
        out.append(f"archive.extension `{archive.extension}` is not an extension without its leading dot")
    out += _template_findings("archive.name", archive.name, ("binary", "tag", "version", "target", "extension"))
    if not archive.name.endswith(".{extension}"):
        out.append(f"archive.name `{archive.name}` does not end with `.{{extension}}`")
    if not _placeholders(archive.name) & {"tag", "version"}:
        out.append(f"archive.name `{archive.name}` holds neither {{tag}} nor {{version}}; releases would collide")
    if archive.checksum != "sha256":
        out.append(f"archive.checksum is `{archive.checksum}`; svc verifies sha256 and nothing else")
    if not model.targets:
        out.append("targets is empty; nothing could be installed")
    ids: set[str] = set()
    triples: set[str] = set()
    for t in model.targets:
        if not t.id or not _WORD.fullmatch(t.id):
            out.append(f"target id `{t.id}` is not a word of letters, digits, `.`, `_`, `+` or `-`")
        if t.id in ids:
            out.append(f"two targets claim the id `{t.id}`")
        ids.add(t.id)
        if not _WORD.fullmatch(t.rust_target):
            out.append(f"target `{t.id}` has the triple `{t.rust_target}`, which is not a platform triple")
        if t.rust_target in triples:
            out.append(f"two targets claim the triple `{t.rust_target}`")
        triples.add(t.rust_target)
        if t.os == "linux" and t.libc is None:
            out.append(f"target `{t.id}` is linux and declares no libc")
        if t.os != "linux" and t.libc is not None:
            out.append(f"target `{t.id}` is {t.os} and declares a libc, which only a linux target has")
        if t.status != "supported" and not (t.reason or "").strip():
            out.append(f"target `{t.id}` is {t.status} and records no reason")
        if t.published and t.build is None:
            out.append(f"target `{t.id}` is {t.status} and declares no build; nothing would build it")
        if not t.published and t.build is not None:
            out.append(f"target `{t.id}` is unavailable and declares a build")
    return out


def parse_model(data: Any, source: str) -> Distribution:
    """Decode a model (a mapping) strictly and check its rules.

    Raises:
        Internal: the model does not decode or breaks a rule; the message names `source` and the first problem.
    """
    try:
        model = msgspec.convert(data, DistributionModel)
    except msgspec.ValidationError as exc:
        raise Internal(f"the distribution model ({source}) is invalid: {clip(str(exc))}") from None
    findings = model_findings(model)
    if findings:
        more = f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""
        raise Internal(f"the distribution model ({source}) is invalid: {clip(findings[0])}{more}")
    return Distribution(model=model, source=source)


@lru_cache(maxsize=8)
def _parse_share(data: bytes) -> Distribution:
    try:
        loaded = load_yaml(data)
    except _NOT_YAML as exc:
        message = " ".join(str(exc).split())
        raise Internal(f"the distribution model ({PACKAGED_SOURCE}) is not YAML: {clip(message)}") from None
    if not isinstance(loaded, dict):
        raise Internal(f"the distribution model ({PACKAGED_SOURCE}) does not hold a mapping")
    return parse_model(loaded, PACKAGED_SOURCE)


def _share_bytes() -> bytes | None:
    """The bytes of the share's model, or None when the share has none."""
    try:
        return read_share(MODEL_FILE, limit=_MODEL_LIMIT)[0]
    except (ShareUnavailable, FileNotFoundError):
        return None
    except Unreadable as exc:
        raise Internal(f"the distribution model ({share_name(MODEL_FILE)}) cannot be read: {exc.reason}") from None


def _class_kind(index: ObjectIndex, path: str) -> str | None:
    """The kind of the first class of the index whose pattern matches `path` (the class that read it)."""
    for source in index.classes:
        if _glob(source.pattern).match(path):
            return source.kind
    return None


def _unreadable(index: ObjectIndex, kind: str) -> list[tuple[str, str, str]]:
    """(path, code, message) of every error the index reports on a file a class of `kind` claims."""
    return [
        (d.path, d.code, d.message)
        for d in index.diagnostics
        if d.severity == "error" and _class_kind(index, d.path) == kind
    ]


def find_distribution(index: ObjectIndex) -> Distribution | None:
    """The model: the repository's own `distribution` object, else svc's share; None when neither has one.

    Blocking (it may read the share). Raises `Internal` for a model that does not decode or breaks a rule,
    for a repository model file the index could not read, and for two repository models.
    """
    problems = _unreadable(index, MODEL_KIND)
    if problems:
        path, _, message = problems[0]
        raise Internal(f"the distribution model ({path}) cannot be read: {clip(message)}")
    objects = index.of_kind(MODEL_KIND)
    if len(objects) > 1:
        paths = ", ".join(sorted(o.path for o in objects))
        raise Internal(f"the repository indexes {len(objects)} distribution models ({paths}); it may hold one")
    if objects:
        return parse_model(objects[0].metadata, objects[0].path)
    data = _share_bytes()
    return None if data is None else _parse_share(data)


def require_distribution(index: ObjectIndex) -> Distribution:
    """`find_distribution`, or `NotFound` when there is no model."""
    found = find_distribution(index)
    if found is None:
        raise NotFound(
            f"no distribution model: the repository indexes no object of kind `{MODEL_KIND}` and svc's share "
            f"carries no {MODEL_FILE}"
        )
    return found


def _record(meta: Mapping[str, Any], path: str) -> Release:
    from packaging.version import InvalidVersion, Version  # only release records need it

    def bad(problem: str) -> Internal:
        return Internal(f"the release record {path} is invalid: {clip(problem)}")

    try:
        record = msgspec.convert(meta, ReleaseRecord)
    except msgspec.ValidationError as exc:
        raise bad(str(exc)) from None
    if record.schema != RECORD_SCHEMA:
        raise bad(f"schema is `{record.schema}`, not `{RECORD_SCHEMA}`")
    try:
        version = Version(record.version)
    except InvalidVersion:
        raise bad(f"version `{record.version}` is not a version") from None
    if record.tag != f"v{record.version}":
        raise bad(f"tag `{record.tag}` is not `v` followed by the version `{record.version}`")
    stem = posixpath.basename(path).removesuffix(".yaml")
    if stem != record.tag:
        raise bad(f"the file is named `{stem}` and the tag is `{record.tag}`; a record is named by its tag")
    return Release(record=record, path=path, version=version)


def release_records(index: ObjectIndex, root: Path) -> tuple[Release, ...]:
    """Every release record, newest first (two records of one tag both kept: `record_findings` names them).

    Blocking. Raises `Internal` naming the repository-relative path of the first record that does not decode
    or that the index could not read.
    """
    releases = [_record(o.metadata, o.path) for o in index.of_kind(RECORD_KIND)]
    for path, code, message in sorted(_unreadable(index, RECORD_KIND)):
        if code != "duplicate_identity":
            raise Internal(f"the release record {path} cannot be read: {clip(message)}")
        # The index serves neither of two records claiming one tag; read them here so the findings name both.
        try:
            loaded = load_yaml(read_repository_file(root, Path(path)))
        except (OSError, *_NOT_YAML) as exc:
            raise Internal(f"the release record {path} cannot be read: {clip(str(exc))}") from None
        if not isinstance(loaded, dict):
            raise Internal(f"the release record {path} does not hold a mapping")
        releases.append(_record(loaded, path))
    releases.sort(key=lambda r: (r.version, r.record.tag, r.path), reverse=True)
    return tuple(releases)


def latest_release(releases: tuple[Release, ...]) -> Release | None:
    """The release an unpinned installation resolves to: the first stable, unyanked record."""
    return next((r for r in releases if r.stable), None)


def record_findings(model: DistributionModel, releases: tuple[Release, ...]) -> list[str]:
    """Every way the records disagree with the model or with each other, record by record."""
    out: list[str] = []
    prefix = model.download_prefix()
    tags: set[str] = set()
    for release in releases:
        r = release.record
        if r.tag in tags:
            out.append(f"two records claim the tag `{r.tag}`")
        tags.add(r.tag)
        present = {a.target for a in r.artifacts}
        out += [
            f"{r.tag}: no artifact for `{t.id}`, which the model publishes"
            for t in model.published()
            if t.id not in present
        ]
        seen: set[str] = set()
        for a in r.artifacts:
            if a.target in seen:
                out.append(f"{r.tag}: two artifacts for `{a.target}`")
            seen.add(a.target)
            target = next((t for t in model.targets if t.id == a.target), None)
            if target is None:
                out.append(f"{r.tag}: an artifact for `{a.target}`, which the model does not declare")
                continue
            if not target.published:
                out.append(f"{r.tag}: an artifact for `{a.target}`, which the model does not publish")
            expected = model.artifact_name(target, r.tag)
            if a.name != expected:
                out.append(
                    f"{r.tag}: the artifact for `{a.target}` is named `{a.name}`; the model derives `{expected}`"
                )
            if not a.url.startswith(prefix):
                out.append(f"{r.tag}: the artifact for `{a.target}` is served from `{a.url}`, not from {prefix}")
            if not a.url.endswith(f"/{r.tag}/{a.name}"):
                out.append(f"{r.tag}: the URL of `{a.target}` does not end with /{r.tag}/{a.name}")
            if not _HEX64.fullmatch(a.sha256):
                out.append(f"{r.tag}: the digest of `{a.target}` is not 64 hexadecimal characters")
            if a.size == 0:
                out.append(f"{r.tag}: the size of `{a.target}` is zero")
    return out
