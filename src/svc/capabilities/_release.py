"""`release.changelog`: the repository's `CHANGELOG.md` read as keep-a-changelog sections."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import msgspec
import trio
from msgspec import Meta

from svc._errors import NotFound, Unavailable
from svc.layer import Unreadable, read_repository_file
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
_GROUP = re.compile(r"^###\s+(?P<kind>\S.*)$")
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
    #: Each group's kind and entries, an entry as its lines (joined once, so a long entry costs linear time).
    groups: list[tuple[str, list[list[str]]]] = []

    def close() -> None:
        if current is not None:
            done = [ChangeGroup(kind=kind, entries=[" ".join(parts) for parts in entries]) for kind, entries in groups]
            releases.append(ChangelogRelease(groups=done, **current))  # type: ignore[arg-type]

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
            groups.append((group["kind"].rstrip(), []))
            continue
        entry = _ENTRY.match(line)
        if entry and groups:
            groups[-1][1].append([entry["text"].strip()])
        elif groups and groups[-1][1] and line.startswith("  ") and line.strip():
            groups[-1][1][-1].append(line.strip())
    close()
    return releases


def _read_changelog(root: Path) -> list[ChangelogRelease] | None:
    """Read and parse CHANGELOG.md under the reading rule (None when absent); blocking, for a worker thread.

    Raises:
        Unavailable: the file is over the 4 MiB limit.
        NotFound: it is no regular file of the checkout (a FIFO, a symlink leaving it, ...).
    """
    try:
        data = read_repository_file(root, Path(CHANGELOG))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except Unreadable as exc:
        error = Unavailable if exc.too_large else NotFound
        raise error(f"{CHANGELOG} cannot be read: {exc.reason}") from None
    return parse_changelog(data.decode("utf-8", "replace"))


async def changelog(ctx: Context, params: ChangelogInput) -> ReleaseChangelog:
    """Read CHANGELOG.md (in a worker thread); a version filter naming no section is `not_found`."""
    releases = await trio.to_thread.run_sync(_read_changelog, ctx.runtime.repository.root)
    if releases is None:
        if params.version is not None:
            raise NotFound(f"this repository has no {CHANGELOG}")
        return ReleaseChangelog(path=CHANGELOG, present=False, format="keep-a-changelog", releases=[])
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
