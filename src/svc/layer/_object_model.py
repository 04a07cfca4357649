"""What building the object index gives: objects, diagnostics, and the reading of one file (docs/objects.md)."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

__all__ = ["IndexDiagnostic", "LayerObject", "ObjectProvenance", "Reading", "Severity"]

Severity = Literal["error", "warning"]


class ObjectProvenance(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """Where an object was read from.

    `path` is the repository-relative file, `directory` its folder (`.` for the root), `source_class` the class
    that found it, `section` the manifest section the path falls under, `bytes` the size of the file's UTF-8
    text, and `member` (`<list>.<index>`) the item of a collection file the object is.
    """

    path: str
    directory: str
    source_class: str
    section: str | None = None
    bytes: int
    member: str | None = None


class IndexDiagnostic(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """A finding of building the index: an excluded file (`error`) or a note (`warning`)."""

    severity: Severity
    code: str
    path: str
    message: str
    member: str | None = None


class LayerObject(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """One object of the layer: how it is named, what its file says, and where it comes from.

    `metadata` is the parsed front matter (Markdown), the whole mapping (YAML) or the item (a collection
    member), keys in file order; `content` is the file's text as read, or the item as pretty-printed JSON.
    """

    uri: str
    id: str
    kind: str
    identity: str
    title: str | None = None
    description: str | None = None
    tags: tuple[str, ...] = ()
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    provenance: ObjectProvenance
    media_type: str
    content: str = ""

    @property
    def path(self) -> str:
        """The repository-relative path of the object's file."""
        return self.provenance.path

    @property
    def member(self) -> str | None:
        """`<list>.<index>` for a member of a collection file, else None."""
        return self.provenance.member

    @property
    def source_class(self) -> str:
        """The source class that found the object's file."""
        return self.provenance.source_class


class Reading(msgspec.Struct, kw_only=True):
    """What reading one file gave: its objects, and its diagnostics."""

    objects: list[LayerObject] = msgspec.field(default_factory=list)
    diagnostics: list[IndexDiagnostic] = msgspec.field(default_factory=list)
