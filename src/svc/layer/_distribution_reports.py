"""The answers of `distribution.*`, derived from a model and the release records (docs/distribution.md).

`distribution_report` (the model as a person reads it), `artifact_view` (what a target and a tag name),
`releases_report` (the records, newest first, and the latest), `installability` (whether the published
command installs, check by check, from local state alone: nothing here reaches the network) and
`build_report` (what this svc is: its version, the triple of the interpreter it runs on, its profile and
commit). Every name, URL and command comes from the model's derivations; nothing is restated here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import msgspec
from msgspec import Meta

from svc._errors import InvalidInput, NotFound
from svc._version import __version__
from svc.layer._distribution import (
    TAG_PLACEHOLDER,
    Arch,
    Channel,
    Distribution,
    Libc,
    Os,
    Release,
    TargetStatus,
    find_distribution,
    latest_release,
    record_findings,
    release_records,
    require_distribution,
)
from svc.layer._read import clip

if TYPE_CHECKING:
    from svc.layer._objects import ObjectIndex

__all__ = [
    "TAG_PATTERN",
    "BuildReport",
    "CheckState",
    "DistributionReport",
    "InstallCheck",
    "InstallabilityReport",
    "ReleaseArtifactView",
    "ReleaseView",
    "ReleasesReport",
    "TargetView",
    "artifact_view",
    "build_profile",
    "build_report",
    "distribution_artifact",
    "distribution_build",
    "distribution_model",
    "distribution_releases",
    "distribution_report",
    "distribution_status",
    "installability",
    "package_version",
    "platform_triple",
    "releases_report",
    "running_triple",
]

CheckState = Literal["ok", "failed", "unknown"]
Profile = Literal["release", "debug"]
Count = Annotated[int, Meta(ge=0)]
#: A tag `distribution.artifact` accepts (its input schema's pattern): the placeholder `{tag}`, or `v`, a digit,
#: then what a version may hold.
TAG_PATTERN = r"^(?:\{tag\}|v[0-9][0-9A-Za-z.+!_-]*)$"
_TAG = re.compile(r"v[0-9][0-9A-Za-z.+!_-]*")
#: The longest `observed` text of a check.
_OBSERVED_LIMIT = 4000
#: The package directory (`.../svc`): under `src/` beside a `pyproject.toml` in a source checkout.
_PACKAGE_DIR = Path(__file__).resolve().parents[1]
#: Architecture names as `sysconfig`/`platform` spell them, and as a triple does.
_ARCH = {
    "x86_64": "x86_64",
    "amd64": "x86_64",
    "aarch64": "aarch64",
    "arm64": "aarch64",
    "i386": "i686",
    "i686": "i686",
    "ppc64le": "powerpc64le",
    "s390x": "s390x",
    "riscv64": "riscv64gc",
}
_WINDOWS = {"win32": "i686", "win-amd64": "x86_64", "win-arm64": "aarch64"}
_MAC_FAT = frozenset({"universal2", "universal", "intel", "fat", "fat3", "fat64"})


class TargetView(msgspec.Struct, frozen=True, kw_only=True):
    """One target of the model: `title` in prose, `libc` on Linux only, `reason` unless it is supported.

    `artifact` is the name the naming function derives with `{tag}` (and `{version}`) where a release's go.
    """

    id: str
    title: str
    os: Os
    arch: Arch
    libc: Libc | None
    rust_target: Annotated[str, Meta(description="the platform triple (`x86_64-unknown-linux-gnu`)")]
    status: TargetStatus
    reason: str | None
    artifact: str


class DistributionReport(msgspec.Struct, frozen=True, kw_only=True):
    """How the project is installed, and every target with the artifact name it derives.

    `repository` is owner/name, the only host release assets come from; `installer_url` and the commands keep
    `{tag}`/`{version}` where the model's installer names them; `supported` counts the published targets.
    """

    binary: str
    repository: str
    installer_url: str
    install_command: str
    install_and_init_command: str
    next_command: str
    checksum: str
    install_dir: str
    prefix: str
    latest_url: str
    supported: Count
    targets: list[TargetView]


class ReleaseArtifactView(msgspec.Struct, frozen=True, kw_only=True):
    """The artifact a target and a tag name: its file `name`, `root` (the name without extension), `url`."""

    target: Annotated[str, Meta(description="the target's id in the model")]
    rust_target: str
    tag: str
    name: str
    root: str
    url: str


class BuildReport(msgspec.Struct, frozen=True, kw_only=True):
    """What this svc is: enough to tell two installations apart without asking a repository.

    `version` from the package metadata, `target` the triple of the interpreter it runs on, `profile`
    `release` for an installed package or `debug` for a source checkout, `commit` of its source tree or
    `unknown`, `distribution_target` the model's target of that triple (null without one, or without a model).
    """

    version: str
    target: str
    profile: Profile
    commit: str
    distribution_target: str | None


class ReleaseView(msgspec.Struct, frozen=True, kw_only=True):
    """One release record: `artifacts` counts what it published; `metadata_url` is where its metadata is."""

    tag: str
    version: str
    channel: Channel
    published_at: str
    commit: str
    yanked: bool
    artifacts: Count
    metadata_url: str


class ReleasesReport(msgspec.Struct, frozen=True, kw_only=True):
    """Every record, newest first, and `latest`: the release an unpinned installation resolves to."""

    count: Count
    latest: ReleaseView | None
    releases: list[ReleaseView]


class InstallCheck(msgspec.Struct, frozen=True, kw_only=True):
    """One check: what was seen, and when it does not hold, why (`cause`) and what changes it (`next`)."""

    id: Annotated[str, Meta(description="model, version, release, artifacts, metadata or public")]
    state: CheckState
    observed: str
    cause: str | None = None
    next: str | None = None


class InstallabilityReport(msgspec.Struct, frozen=True, kw_only=True):
    """Whether the published install command works now, from the model and the records alone.

    `installable` holds when no check failed; `summary` names the stable tag, or the first failure's cause.
    `required_targets` counts the targets a release must publish, `published_artifacts` what the stable
    release publishes.
    """

    installable: bool
    summary: str
    local_version: str
    stable_tag: str | None
    required_targets: Count
    published_artifacts: Count
    install_command: str
    installer_url: str
    latest_url: str
    checks: list[InstallCheck]


def distribution_report(dist: Distribution) -> DistributionReport:
    """The model as `distribution.model` answers it."""
    m = dist.model
    return DistributionReport(
        binary=m.project.binary,
        repository=m.project.repository,
        installer_url=m.installer_url(),
        install_command=m.install_command(),
        install_and_init_command=m.install_and_init_command(),
        next_command=m.next_command(),
        checksum=m.archive.checksum,
        install_dir=m.installer.install_dir,
        prefix=m.installer.prefix,
        latest_url=m.latest_url(),
        supported=len(m.published()),
        targets=[
            TargetView(
                id=t.id,
                title=m.title(t),
                os=t.os,
                arch=t.arch,
                libc=t.libc,
                rust_target=t.rust_target,
                status=t.status,
                reason=t.reason,
                artifact=m.artifact_name(t, TAG_PLACEHOLDER),
            )
            for t in m.targets
        ],
    )


def artifact_view(dist: Distribution, target: str, tag: str) -> ReleaseArtifactView:
    """The artifact of `target` (id or triple) for `tag` (`v` + version, or `{tag}`).

    Raises:
        NotFound: the model declares no such target.
        InvalidInput: the target is not published, or the tag is neither `{tag}` nor `v` and a version.
    """
    m = dist.model
    found = m.target(target)
    if found is None:
        known = ", ".join(t.id for t in m.targets)
        raise NotFound(f"the distribution model declares no target '{clip(target, 80)}' (targets: {known})")
    if not found.published:
        raise InvalidInput(f"target '{found.id}' is declared and not published: {found.reason or 'no reason given'}")
    if tag != TAG_PLACEHOLDER and not _TAG.fullmatch(tag):
        raise InvalidInput(f"'{clip(tag, 80)}' is not a tag: a tag is `v` followed by a version, or {TAG_PLACEHOLDER}")
    return ReleaseArtifactView(
        target=found.id,
        rust_target=found.rust_target,
        tag=tag,
        name=m.artifact_name(found, tag),
        root=m.archive_root(found, tag),
        url=m.artifact_url(found, tag),
    )


def _view(dist: Distribution, release: Release) -> ReleaseView:
    r = release.record
    return ReleaseView(
        tag=r.tag,
        version=r.version,
        channel=r.channel,
        published_at=r.published_at,
        commit=r.commit,
        yanked=r.yanked,
        artifacts=len(r.artifacts),
        metadata_url=dist.model.release_url(r.tag),
    )


def releases_report(dist: Distribution, releases: tuple[Release, ...]) -> ReleasesReport:
    """The records (already newest first) and the latest stable, unyanked one."""
    latest = latest_release(releases)
    return ReleasesReport(
        count=len(releases),
        latest=None if latest is None else _view(dist, latest),
        releases=[_view(dist, r) for r in releases],
    )


def installability(dist: Distribution, releases: tuple[Release, ...], local_version: str) -> InstallabilityReport:
    """The checks `model`, `version`, `release`, `artifacts`, `metadata` and `public`, in that order."""
    m = dist.model
    required = len(m.published())
    checks: list[InstallCheck] = []

    model_ok = required > 0
    checks.append(
        InstallCheck(
            id="model",
            state="ok" if model_ok else "failed",
            observed=f"{len(m.targets)} declared target(s), {required} published",
            cause=None if model_ok else "the model publishes no target, so a release could build nothing",
            next=None if model_ok else f"declare a target with `status: supported` in {dist.source}",
        )
    )

    checks.append(InstallCheck(id="version", state="ok", observed=f"this tree releases v{local_version}"))

    latest = latest_release(releases)
    stable_tag = None if latest is None else latest.record.tag
    tag = f"v{local_version}"
    checks.append(
        InstallCheck(
            id="release",
            state="failed" if latest is None else "ok",
            observed=(
                f"no stable release is recorded ({len(releases)} record(s) in total)"
                if latest is None
                else f"the stable channel resolves to {stable_tag}"
            ),
            cause=None
            if latest is not None
            else "no stable, unyanked release record, so an unpinned installation resolves to nothing",
            next=None
            if latest is not None
            else f"git tag {tag} && git push origin {tag}, then record .ai/repo/releases/{tag}.yaml (channel: stable)",
        )
    )

    published = 0 if latest is None else len(latest.record.artifacts)
    partial = latest is not None and published < required
    checks.append(
        InstallCheck(
            id="artifacts",
            state="unknown" if latest is None else "failed" if partial else "ok",
            observed="no release to count artifacts for"
            if latest is None
            else f"{published} of {required} required artifact(s)",
            cause="the stable release does not publish every target the model publishes" if partial else None,
            next="withdraw the record (yanked: true) and release again with every artifact" if partial else None,
        )
    )

    findings = record_findings(m, releases)
    checks.append(
        InstallCheck(
            id="metadata",
            state="failed" if findings else "ok",
            observed=clip(f"{len(findings)} finding(s): " + "; ".join(findings), _OBSERVED_LIMIT)
            if findings
            else f"{len(releases)} record(s) agree with the model",
            cause="a release record disagrees with the distribution model" if findings else None,
            next="correct the records the findings name (`observed` lists every one)" if findings else None,
        )
    )

    checks.append(
        InstallCheck(
            id="public",
            state="unknown",
            observed="not checked here; this report reaches no network",
            next=f"curl -fsSL {m.latest_url()} | head -1",
        )
    )

    failed = next((c for c in checks if c.state == "failed"), None)
    if failed is None:
        summary = (
            f"{stable_tag} is recorded, complete and consistent; the published command installs it"
            if stable_tag is not None
            else "installable"
        )
    else:
        summary = failed.cause or f"the {failed.id} check failed"
    return InstallabilityReport(
        installable=failed is None,
        summary=summary,
        local_version=local_version,
        stable_tag=stable_tag,
        required_targets=required,
        published_artifacts=published,
        install_command=m.install_command(),
        installer_url=m.installer_url(),
        latest_url=m.latest_url(),
        checks=checks,
    )


def platform_triple(plat: str, libc: tuple[str, str], machine: str) -> str:
    """The platform triple of a `sysconfig.get_platform()` value, the C library and the machine.

    `linux-<arch>` is `<arch>-unknown-linux-gnu` on glibc and `-musl` otherwise (musl is the other C library
    a Linux interpreter runs on, and `platform.libc_ver` does not always name it); `macosx-*-<arch>` is
    `<arch>-apple-darwin` (the machine for a universal interpreter); `win-amd64`, `win-arm64` and `win32` are
    `-pc-windows-msvc`; `freebsd-*-<arch>` is `<arch>-unknown-freebsd`. Anything else is answered unchanged.
    """
    p = plat.lower()
    if p.startswith("linux-"):
        arch = _ARCH.get(p.removeprefix("linux-"), p.removeprefix("linux-"))
        return f"{arch}-unknown-linux-{'gnu' if libc[0] == 'glibc' else 'musl'}"
    if p.startswith("macosx-"):
        cpu = p.rsplit("-", 1)[-1]
        cpu = machine.lower() if cpu in _MAC_FAT else cpu
        return f"{_ARCH.get(cpu, cpu)}-apple-darwin"
    if p in _WINDOWS:
        return f"{_WINDOWS[p]}-pc-windows-msvc"
    if p.startswith("freebsd-"):
        cpu = p.rsplit("-", 1)[-1]
        return f"{_ARCH.get(cpu, cpu)}-unknown-freebsd"
    return plat


def running_triple() -> str:
    """The triple of the interpreter svc runs on."""
    import platform  # these three are read only when the triple is asked for
    import sysconfig

    return platform_triple(sysconfig.get_platform(), platform.libc_ver(), platform.machine())


def build_profile(package_dir: Path | None = None) -> Profile:
    """`debug` when the package (`package_dir`) is a checkout's `src/svc` beside a `pyproject.toml`, else `release`."""
    src = (package_dir or _PACKAGE_DIR).parent
    return "debug" if src.name == "src" and (src.parent / "pyproject.toml").is_file() else "release"


def package_version() -> str:
    """The version of the installed svc package (its own `__version__` when it has no metadata)."""
    import importlib.metadata

    try:
        return importlib.metadata.version("svc")
    except importlib.metadata.PackageNotFoundError:
        return __version__


def build_report(dist: Distribution | None, commit: str | None) -> BuildReport:
    """This svc: version, triple, profile, commit (`unknown` without one) and the model's matching target."""
    triple = running_triple()
    match = None if dist is None else next((t for t in dist.model.targets if t.rust_target == triple), None)
    return BuildReport(
        version=package_version(),
        target=triple,
        profile=build_profile(),
        commit=commit or "unknown",
        distribution_target=None if match is None else match.id,
    )


def distribution_model(index: ObjectIndex) -> DistributionReport:
    """`distribution.model` over the index (blocking). Raises `NotFound` without a model, `Internal` for a bad one."""
    return distribution_report(require_distribution(index))


def distribution_artifact(index: ObjectIndex, target: str, tag: str) -> ReleaseArtifactView:
    """`distribution.artifact` over the index (blocking); the errors of `require_distribution` and `artifact_view`."""
    return artifact_view(require_distribution(index), target, tag)


def distribution_build(index: ObjectIndex, commit: str | None) -> BuildReport:
    """`distribution.build` over the index (blocking): answers without a model; `Internal` for a bad one."""
    return build_report(find_distribution(index), commit)


def distribution_releases(index: ObjectIndex, root: Path) -> ReleasesReport:
    """`distribution.releases` over the index of the checkout at `root` (blocking).

    Raises `NotFound` without a model, `Internal` for a bad model or a record that does not decode.
    """
    dist = require_distribution(index)
    return releases_report(dist, release_records(index, root))


def distribution_status(index: ObjectIndex, root: Path) -> InstallabilityReport:
    """`distribution.status` over the index of the checkout at `root` (blocking; no network).

    Raises `NotFound` without a model, `Internal` for a bad model or a record that does not decode.
    """
    dist = require_distribution(index)
    return installability(dist, release_records(index, root), package_version())
