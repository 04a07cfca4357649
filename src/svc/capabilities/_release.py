"""`release.changelog`: the repository's `CHANGELOG.md` read as keep-a-changelog sections."""

from __future__ import annotations

import re
from typing import Annotated

import msgspec
import trio
from msgspec import Meta

from svc._errors import NotFound
from svc.registry import Declarations, Example, McpResource, Module
from svc.runtime import Context

MODULE = Module(
    id="release",
    title="Release",
    description="What changed between releases of the repository, from its CHANGELOG.md.",
)
CHANGELOG = "CHANGELOG.md"

_RELEASE = re.compile(
    r"^##\s+\[?(?P<version>[^\]\s]+)\]?(?:\s+-\s+(?P<date>\d{4}-\d{2}-\d{2}))?(?P<yanked>\s+\[YANKED\])?\s*$",
    re.IGNORECASE,
)
_GROUP = re.compile(r"^###\s+(?P<kind>.+?)\s*$")
_ENTRY = re.compile(r"^\s*[-*]\s+(?P<text>.*)$")
_LINK = re.compile(r"^\[(?P<label>[^\]]+)\]:\s*(?P<url>\S+)\s*$")


class ChangelogInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Input of `release.changelog`."""

    version: Annotated[str | None, Meta(description="a version or `unreleased`; every section when absent")] = None


class ChangeGroup(msgspec.Struct, frozen=True, kw_only=True):
    """One `###` group of a release (Added, Changed, Deprecated, Removed, Fixed, Security)."""

    kind: str
    entries: list[str]


class ChangelogRelease(msgspec.Struct, frozen=True, kw_only=True):
    """One `##` section: a version (or `unreleased`), its date and its groups."""

    version: str
    unreleased: bool
    date: str | None
    yanked: bool
    url: str | None
    groups: list[ChangeGroup]


class ReleaseChangelog(msgspec.Struct, frozen=True, kw_only=True):
    """`release.changelog`: the sections asked for, newest first as the file orders them."""

    path: str
    present: bool
    format: str
    releases: list[ChangelogRelease]


def parse_changelog(text: str) -> list[ChangelogRelease]:
    """Parse keep-a-changelog Markdown; text outside `##`/`###` bullets is ignored."""
    links: dict[str, str] = {}
    for line in text.splitlines():
        match = _LINK.match(line)
        if match:
            links[match["label"].lower()] = match["url"]
    releases: list[ChangelogRelease] = []
    current: dict[str, object] | None = None
    groups: list[ChangeGroup] = []

    def close() -> None:
        if current is not None:
            releases.append(ChangelogRelease(groups=list(groups), **current))  # type: ignore[arg-type]

    for line in text.splitlines():
        release = _RELEASE.match(line)
        if release:
            close()
            groups = []
            version = release["version"]
            unreleased = version.lower() == "unreleased"
            current = {
                "version": "unreleased" if unreleased else version.removeprefix("v"),
                "unreleased": unreleased,
                "date": release["date"],
                "yanked": bool(release["yanked"]),
                "url": links.get(version.lower()),
            }
            continue
        if current is None:
            continue
        group = _GROUP.match(line)
        if group:
            groups.append(ChangeGroup(kind=group["kind"], entries=[]))
            continue
        entry = _ENTRY.match(line)
        if entry and groups:
            groups[-1].entries.append(entry["text"].strip())
        elif groups and groups[-1].entries and line.startswith("  ") and line.strip():
            groups[-1].entries[-1] += " " + line.strip()
    close()
    return releases


async def changelog(ctx: Context, params: ChangelogInput) -> ReleaseChangelog:
    """Read CHANGELOG.md; a version filter naming no section is `not_found`."""
    path = trio.Path(ctx.runtime.repository.root / CHANGELOG)
    try:
        text = await path.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        if params.version is not None:
            raise NotFound(f"this repository has no {CHANGELOG}") from None
        return ReleaseChangelog(path=CHANGELOG, present=False, format="keep-a-changelog", releases=[])
    releases = parse_changelog(text)
    if params.version is not None:
        wanted = params.version.lower().removeprefix("v")
        chosen = [r for r in releases if r.version.lower() == wanted]
        if not chosen:
            known = ", ".join(r.version for r in releases) or "none"
            raise NotFound(f"{CHANGELOG} has no section {params.version!r} (sections: {known})")
        releases = chosen
    return ReleaseChangelog(path=CHANGELOG, present=True, format="keep-a-changelog", releases=releases)


declare = Declarations[Context](MODULE, source=__name__)

CAPABILITIES = (
    declare.query(
        "changelog",
        title="Changelog",
        description=(
            "The repository's CHANGELOG.md as keep-a-changelog sections: every release, or one version, "
            "or `unreleased`."
        ),
        input=ChangelogInput,
        output=ReleaseChangelog,
        handler=changelog,
        examples=(
            Example(name="all", input={}),
            Example(name="unreleased", input={"version": "unreleased"}),
        ),
        http="GET /api/v1/changelog",
        tool="svc_changelog",
        resource=McpResource(uri="svc://changelog", name="changelog"),
        cli="release changelog",
    ),
)
