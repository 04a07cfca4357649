"""svc's design system: one declaration (`svc/share/design/tokens.yaml`), read strictly, and what derives from it.

The declaration is svc's own, never the supervised repository's: it is package data, read from the share
directory (`svc/share`, or the directory the `SVC_SHARE` environment variable names) under the reading rule
(no symlink out of the share, at most 1 MiB). It is decoded strictly (unknown fields, wrong types and names
that are not `^[a-z][a-z0-9-]*$` refused), duplicate names are refused at the YAML level, every reference
is resolved, and the first inconsistency is an `Internal` error naming it and the file.

From it derive `design.system`'s `DesignReport` and, on request, the files svc serves (`svc.layer._design_render`:
`tokens.css`, `theme.js`). The fingerprint is SHA-256 of the declaration's compact JSON
(fields in model order, maps in declaration order); `design` is its first 12 hex digits.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import msgspec
import yaml
from msgspec import Meta

from svc._errors import Internal
from svc.layer._design_colour import srgb
from svc.layer._read import Unreadable
from svc.layer._share import ShareUnavailable, read_share, share_file_exists, share_name
from svc.layer._yaml import YamlError, load_yaml

__all__ = [
    "CONSUMERS",
    "DECLARATION",
    "DESIGN_ASSET_ROUTE",
    "IMAGE_TYPES",
    "PREFIX",
    "STATUS_ATTRIBUTE",
    "THEME_ATTRIBUTE",
    "DesignDeclaration",
    "DesignReport",
    "DesignSystem",
    "design_system",
    "load_design",
    "read_share_file",
]

#: The format version of the declaration svc reads.
SCHEMA = 2
#: The prefix of every custom property the design emits.
PREFIX = "--svc-"
#: The declaration, relative to the share directory.
DECLARATION = "design/tokens.yaml"
#: The stylesheets written over the tokens (relative to the share directory): the pairs `design.contrast` measures.
CONSUMERS: tuple[str, ...] = ("design/base.css", "design/kit.css", "design/cockpit.css")
#: Where svc's server serves the design's files (`tokens.css`, `theme.js`, `base.css`, `kit.css`, the marks).
DESIGN_ASSET_ROUTE = "/cockpit/assets/design"
#: The attribute the theme script sets on the root element when a person chose a theme (`light` or `dark`).
THEME_ATTRIBUTE = "data-theme"
#: The attribute that gives an element the colours of the status its state word is filed under.
STATUS_ATTRIBUTE = "data-status"
#: Custom properties the design reserves: the stamp and the status indirection a `[data-status]` rule sets.
RESERVED = ("design", "status-fg", "status-bg", "status-line")
#: The largest share file svc reads.
SHARE_LIMIT = 1024 * 1024
_NAME = r"^[a-z][a-z0-9-]*$"
_LENGTH = re.compile(r"(?:\d+(?:\.\d+)?|\.\d+)(?:px|rem|em)")
#: The media type of an identity file, by suffix (the suffixes an identity file may have).
IMAGE_TYPES = {".svg": "image/svg+xml", ".png": "image/png"}

Name = Annotated[str, Meta(pattern=_NAME)]
#: A file beside the declaration: relative, forward slashes, no segment starting with a dot.
SharePath = Annotated[
    str, Meta(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*(?:/[A-Za-z0-9][A-Za-z0-9._-]*)*$")
]
Text = Annotated[str, Meta(min_length=1)]


class DesignIdentity(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Who the design is for: the product name and its marks (files beside the declaration)."""

    name: Annotated[str, Meta(description="the product name every page shows")]
    mark: Annotated[SharePath, Meta(description="the mark (favicon), relative to the declaration's directory")]
    logo: Annotated[SharePath, Meta(description="the logo, relative to the declaration's directory")]
    social: Annotated[SharePath, Meta(description="the social preview, relative to the declaration's directory")]


class DesignFont(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The two type stacks (system fonts only; nothing is fetched)."""

    sans: Annotated[Text, Meta(description="the text stack (`--svc-font-sans`)")]
    mono: Annotated[Text, Meta(description="the monospace stack (`--svc-font-mono`)")]


class DesignRole(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A semantic colour: what it is for, and the palette entry (or role) it is in each theme."""

    about: Text
    light: Name
    dark: Name


class DesignPair(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A palette entry or role per theme."""

    light: Name
    dark: Name


class DesignStatusRole(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A status meaning: its text (`--svc-<s>`), ground (`--svc-<s>-bg`) and border (`--svc-<s>-line`)."""

    about: Text
    fg: DesignPair
    bg: DesignPair
    line: DesignPair


class DesignStatus(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The status meanings, and the state words filed under each."""

    roles: dict[Name, DesignStatusRole]
    states: dict[Name, list[Name]]


class DesignTypeStep(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One step of the type scale: `--svc-text-<step>` and `--svc-leading-<step>`."""

    about: Text
    size: Text
    leading: Annotated[float, Meta(gt=0)]


class DesignNamed(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A named CSS value with its reason."""

    about: Text
    value: Text


class DesignType(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The type scale and the letter-spacings (`--svc-tracking-<name>`)."""

    scale: dict[Name, DesignTypeStep]
    tracking: dict[Name, DesignNamed]


class DesignTheme(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The theme contract: the root element's class that means dark, and the localStorage key of the choice."""

    class_: Name = msgspec.field(name="class")
    storage_key: Annotated[str, Meta(pattern=r"^[A-Za-z0-9._:-]+$")] = msgspec.field(name="storage-key")


class DesignDeclaration(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The whole declaration (schema 2); every map keeps its declaration order."""

    schema: int
    identity: DesignIdentity
    font: DesignFont
    palette: dict[Name, str]
    roles: dict[Name, DesignRole]
    status: DesignStatus
    type_: DesignType = msgspec.field(name="type")
    layout: dict[Name, DesignNamed]
    radius: dict[Name, DesignNamed]
    motion: dict[Name, DesignNamed]
    theme: DesignTheme
    viewports: list[Annotated[int, Meta(gt=0)]]
    alias: dict[Name, dict[Name, Name]]


@dataclass(frozen=True, slots=True)
class DesignSystem:
    """A validated declaration, where it was read from, and its fingerprint."""

    declaration: DesignDeclaration
    #: The declaration's path as served: `svc/share/design/tokens.yaml` (or `SVC_SHARE/design/tokens.yaml`).
    source: str
    #: SHA-256 hex of the declaration's compact JSON.
    fingerprint: str

    @property
    def design(self) -> str:
        """The first 12 hex digits of the fingerprint: the stamp every stylesheet carries (`--svc-design`)."""
        return self.fingerprint[:12]

    def reference(self, token: str, dark: bool) -> str | None:
        """What a colour token (a role, `<status>`, `<status>-bg`, `<status>-line`, an alias) names in a theme."""
        decl = self.declaration
        role = decl.roles.get(token)
        if role is not None:
            return role.dark if dark else role.light
        status = decl.status.roles.get(token)
        if status is not None:
            return status.fg.dark if dark else status.fg.light
        for suffix, part in (("-bg", "bg"), ("-line", "line")):
            status = decl.status.roles.get(token.removesuffix(suffix)) if token.endswith(suffix) else None
            if status is not None:
                pair: DesignPair = getattr(status, part)
                return pair.dark if dark else pair.light
        target = _aliases(decl).get(token)
        if target is not None and target != token:
            return self.reference(target, dark)
        return None

    def colour(self, token: str, dark: bool) -> tuple[str, str] | None:
        """The palette entry a colour token ends at in a theme and the literal it holds (None: not a colour)."""
        reference = self.reference(token, dark)
        return None if reference is None else self.resolve(reference, dark)

    def resolve(self, reference: str, dark: bool) -> tuple[str, str] | None:
        """A palette entry or a role followed to a palette entry: `(entry, literal)`, or None (unknown, cyclic)."""
        decl = self.declaration
        for _ in range(len(decl.roles) + 1):
            literal = decl.palette.get(reference)
            if literal is not None:
                return reference, literal
            role = decl.roles.get(reference)
            if role is None:
                return None
            reference = role.dark if dark else role.light
        return None

    def colour_tokens(self) -> list[str]:
        """Every colour token a stylesheet may name, in declaration order: roles, then each status's three parts."""
        decl = self.declaration
        statuses = [f"{s}{suffix}" for s in decl.status.roles for suffix in ("", "-bg", "-line")]
        return [*decl.roles, *statuses]

    def bootstrap(self) -> str:
        """The one pre-paint statement: the stored choice, else the system preference, sets the dark class."""
        theme = self.declaration.theme
        key, cls, attr = json.dumps(theme.storage_key), json.dumps(theme.class_), json.dumps(THEME_ATTRIBUTE)
        return (
            f"(function(){{try{{var d=document.documentElement,t=localStorage.getItem({key});"
            'if(t!=="light"&&t!=="dark"){t=null}'
            f'd.classList.toggle({cls},t==="dark"||(t===null&&matchMedia("(prefers-color-scheme: dark)").matches));'
            f"if(t){{d.setAttribute({attr},t)}}}}catch(e){{}}}})();"
        )


def _aliases(decl: DesignDeclaration) -> dict[str, str]:
    return {
        f"{vocabulary}-{name}": target for vocabulary, names in decl.alias.items() for name, target in names.items()
    }


# Locating and reading the share.


def read_share_file(rel: str) -> tuple[bytes, str]:
    """The bytes of a share file (`design/base.css`) and the name it is shown under, read under the reading rule.

    Raises:
        Internal: the share is not located, or the file is missing, not a regular file, leaves the share, or
            is over 1 MiB (the message names the file by its share-relative path, never an absolute one).
    """
    try:
        return read_share(rel, limit=SHARE_LIMIT)
    except ShareUnavailable as exc:
        raise Internal(str(exc)) from None
    except FileNotFoundError:
        raise Internal(f"{share_name(rel)} is missing from svc's share") from None
    except Unreadable as exc:
        raise Internal(f"{share_name(rel)} cannot be read: {exc.reason}") from None


def _exists(rel: str) -> bool:
    try:
        return share_file_exists(rel, limit=SHARE_LIMIT)
    except ShareUnavailable as exc:
        raise Internal(str(exc)) from None


def load_design() -> DesignSystem:
    """Read and validate the declaration of the share (blocking: call it in a worker thread).

    Raises:
        Internal: the share or the declaration is missing or unreadable, or the declaration is inconsistent
            (the message names the file and the first problem).
    """
    data, name = read_share_file(DECLARATION)
    design = _parse(data, name)
    base = DECLARATION.rpartition("/")[0]
    for field in ("mark", "logo", "social"):
        rel = getattr(design.declaration.identity, field)
        if not _exists(f"{base}/{rel}"):
            raise Internal(f"{name}: identity.{field}: {rel} is not a file beside the declaration")
        if Path(rel).suffix not in IMAGE_TYPES:
            raise Internal(f"{name}: identity.{field}: {rel} is neither .svg nor .png")
    return design


#: One parse at a time: the page's assets are asked for at once, each in a worker thread, and msgspec building
#: the declaration's types in two threads at their first conversion has crashed the process.
_PARSING = threading.Lock()


def _parse(data: bytes, name: str) -> DesignSystem:
    """The validated declaration of these bytes (cached: the share rarely changes), one parse at a time."""
    with _PARSING:
        return _parse_once(data, name)


@functools.lru_cache(maxsize=4)
def _parse_once(data: bytes, name: str) -> DesignSystem:
    try:
        raw = load_yaml(data)
        _refuse_duplicates(yaml.compose(data, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)), "")
    except _Duplicate as exc:
        raise Internal(f"{name}: {exc}") from None
    except YamlError as exc:
        raise Internal(f"{name} is not readable YAML: {_yaml_reason(exc)}") from None
    try:
        decl = msgspec.convert(raw, DesignDeclaration, strict=True)
    except msgspec.ValidationError as exc:
        raise Internal(f"{name}: {exc}") from None
    problem = _first_problem(decl)
    if problem is not None:
        raise Internal(f"{name}: {problem}")
    fingerprint = hashlib.sha256(msgspec.json.encode(decl)).hexdigest()
    return DesignSystem(declaration=decl, source=name, fingerprint=fingerprint)


def _yaml_reason(exc: YamlError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    return f"{problem} (line {mark.line + 1})" if mark is not None else str(problem)


class _Duplicate(YamlError):
    pass


def _refuse_duplicates(node: yaml.Node | None, path: str) -> None:
    """Refuse a mapping that names one key twice (a YAML loader would keep the last silently)."""
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            text = str(key.value)
            where = f"{path}.{text}" if path else text
            if text in seen:
                raise _Duplicate(f"{where} is declared twice (line {key.start_mark.line + 1}); names are unique")
            seen.add(text)
            _refuse_duplicates(value, where)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _refuse_duplicates(item, f"{path}[{index}]")


# Validation: the first inconsistency, as `<key path>: <reason>`.


def _first_problem(decl: DesignDeclaration) -> str | None:
    for problem in _problems(decl):
        return problem
    return None


def _problems(decl: DesignDeclaration) -> list[str]:
    out: list[str] = []
    if decl.schema != SCHEMA:
        out.append(f"schema: the declaration is version {decl.schema}; svc reads version {SCHEMA}")
    for name, literal in decl.palette.items():
        if srgb(literal) is None:
            out.append(f"palette.{name}: {literal!r} is no colour literal (#rgb, #rrggbb or oklch(L% C H))")
    for field in ("sans", "mono"):
        reason = _malformed(getattr(decl.font, field))
        if reason:
            out.append(f"font.{field}: {reason}")
    out.extend(_role_problems(decl))
    out.extend(_status_problems(decl))
    for name, step in decl.type_.scale.items():
        if not _LENGTH.fullmatch(step.size):
            out.append(f"type.scale.{name}.size: {step.size!r} is no length (px, rem or em)")
    sections = (("type.tracking", decl.type_.tracking), ("layout", decl.layout), ("radius", decl.radius))
    for section, entries in (*sections, ("motion", decl.motion)):
        for name, named in entries.items():
            reason = _malformed(named.value)
            if reason:
                out.append(f"{section}.{name}.value: {reason}")
    if not decl.viewports:
        out.append("viewports: at least one width is needed")
    elif any(a >= b for a, b in zip(decl.viewports, decl.viewports[1:], strict=False)):
        out.append("viewports: widths are listed ascending, each once")
    colours = set(decl.roles) | {f"{s}{x}" for s in decl.status.roles for x in ("", "-bg", "-line")}
    for vocabulary, names in decl.alias.items():
        for name, target in names.items():
            if target not in colours:
                out.append(f"alias.{vocabulary}.{name}: {target!r} is neither a role nor a status colour")
    out.extend(_collisions(decl))
    return out


def _role_problems(decl: DesignDeclaration) -> list[str]:
    out: list[str] = []
    design = DesignSystem(declaration=decl, source="", fingerprint="")
    for name, role in decl.roles.items():
        if name in decl.palette:
            out.append(f"roles.{name}: a role may not carry the name of a palette entry")
        for theme, reference in (("light", role.light), ("dark", role.dark)):
            if reference not in decl.palette and reference not in decl.roles:
                out.append(f"roles.{name}.{theme}: {reference!r} is neither a palette entry nor a role")
            elif design.resolve(reference, theme == "dark") is None:
                out.append(f"roles.{name}.{theme}: {reference!r} names roles in a circle")
    return out


def _status_problems(decl: DesignDeclaration) -> list[str]:
    out: list[str] = []
    for name, status in decl.status.roles.items():
        if name in decl.roles or name in decl.palette:
            out.append(f"status.roles.{name}: a status may not carry the name of a role or a palette entry")
        for part in ("fg", "bg", "line"):
            pair: DesignPair = getattr(status, part)
            for theme, reference in (("light", pair.light), ("dark", pair.dark)):
                if reference not in decl.palette and reference not in decl.roles:
                    out.append(
                        f"status.roles.{name}.{part}.{theme}: {reference!r} is neither a palette entry nor a role"
                    )
    filed: dict[str, str] = {}
    for meaning, words in decl.status.states.items():
        if meaning not in decl.status.roles:
            out.append(f"status.states.{meaning}: not a status (the statuses are {', '.join(decl.status.roles)})")
        for word in words:
            if word in filed:
                out.append(f"status.states.{meaning}: {word!r} is already filed under {filed[word]!r}")
            elif word != meaning and word in decl.status.roles:
                out.append(f"status.states.{meaning}: {word!r} is another status and cannot be filed here")
            filed.setdefault(word, meaning)
    return out


def _collisions(decl: DesignDeclaration) -> list[str]:
    """Two tokens that would become one custom property."""
    seen: dict[str, str] = {name: "reserved" for name in RESERVED}
    out: list[str] = []
    for prop, where in _properties(decl):
        if prop in seen:
            out.append(f"{where}: becomes {PREFIX}{prop}, which {seen[prop]} already is")
        else:
            seen[prop] = where
    return out


def _properties(decl: DesignDeclaration) -> list[tuple[str, str]]:
    """Every custom property the design emits (without the prefix) and the key that declares it."""
    out = [(f"font-{f}", f"font.{f}") for f in ("sans", "mono")]
    for name in decl.type_.scale:
        out += [(f"text-{name}", f"type.scale.{name}"), (f"leading-{name}", f"type.scale.{name}")]
    out += [(f"tracking-{n}", f"type.tracking.{n}") for n in decl.type_.tracking]
    for section, entries in (("layout", decl.layout), ("radius", decl.radius), ("motion", decl.motion)):
        out += [(f"{section}-{n}", f"{section}.{n}") for n in entries]
    out += [(n, f"roles.{n}") for n in decl.roles]
    out += [(f"{s}{x}", f"status.roles.{s}") for s in decl.status.roles for x in ("", "-bg", "-line")]
    out += [(f"{v}-{n}", f"alias.{v}.{n}") for v, names in decl.alias.items() for n in names]
    return out


def _malformed(value: str) -> str | None:
    """Why a CSS value would break the stylesheet it is written into, or None."""
    if any(c in value for c in ";{}<>\\\n\r"):
        return f"{value!r} holds a character a declaration value may not (; {{ }} < > \\ or a line break)"
    if value.count('"') % 2 or value.count("'") % 2:
        return f"{value!r} has an unbalanced quote"
    return None


# design.system.


class DesignThemeView(msgspec.Struct, frozen=True, kw_only=True):
    """The theme contract as a page reads it."""

    class_: Annotated[str, Meta(description="the class on the root element that means dark")] = msgspec.field(
        name="class"
    )
    storage_key: Annotated[str, Meta(description="the localStorage key of a person's choice (light or dark)")]
    bootstrap: Annotated[
        str,
        Meta(
            description=(
                "the one pre-paint statement (the first of theme.js): the stored choice, else the system "
                "preference, sets the dark class"
            )
        ),
    ]


class DesignTallies(msgspec.Struct, frozen=True, kw_only=True):
    """How many tokens of each kind the declaration holds."""

    palette: int
    roles: int
    statuses: int
    states: Annotated[int, Meta(description="state words filed under the statuses, summed")]
    type_steps: int
    aliases: int


class DesignProjection(msgspec.Struct, frozen=True, kw_only=True):
    """A file derived from the declaration, and what reads it."""

    path: Annotated[str, Meta(description="where svc serves it")]
    read_by: str


class DesignReport(msgspec.Struct, frozen=True, kw_only=True):
    """`design.system`: svc's design declaration, fingerprinted, and where it is projected."""

    fingerprint: Annotated[str, Meta(description="SHA-256 hex of the declaration's compact JSON")]
    design: Annotated[str, Meta(description="the fingerprint's first 12 hex digits, as tokens.css carries it")]
    schema: int
    source: Annotated[str, Meta(description="the declaration, share-relative (svc/share/design/tokens.yaml)")]
    identity: DesignIdentity
    font: DesignFont
    theme: DesignThemeView
    viewports: Annotated[list[int], Meta(description="the widths a browser audit measures every page at")]
    tallies: DesignTallies
    projections: list[DesignProjection]


def design_system() -> DesignReport:
    """`design.system` over the share's declaration (blocking: call it in a worker thread).

    Raises:
        Internal: the declaration is missing, unreadable or inconsistent.
    """
    design = load_design()
    decl = design.declaration
    return DesignReport(
        fingerprint=design.fingerprint,
        design=design.design,
        schema=decl.schema,
        source=design.source,
        identity=decl.identity,
        font=decl.font,
        theme=DesignThemeView(
            class_=decl.theme.class_, storage_key=decl.theme.storage_key, bootstrap=design.bootstrap()
        ),
        viewports=list(decl.viewports),
        tallies=DesignTallies(
            palette=len(decl.palette),
            roles=len(decl.roles),
            statuses=len(decl.status.roles),
            states=sum(len(words) for words in decl.status.states.values()),
            type_steps=len(decl.type_.scale),
            aliases=sum(len(names) for names in decl.alias.values()),
        ),
        projections=[
            DesignProjection(
                path=f"{DESIGN_ASSET_ROUTE}/tokens.css",
                read_by="every svc page (home, /docs/, the cockpit): the --svc- properties and the status vocabulary",
            ),
            DesignProjection(
                path=f"{DESIGN_ASSET_ROUTE}/theme.js",
                read_by="a page with a theme switch (the cockpit), first in <head>: the bootstrap and the toggle hook",
            ),
        ],
    )
