"""`design.contrast`: every foreground svc's stylesheets put on a ground, in both themes, against WCAG 2.1 AA.

The pairs are not a list: they are derived from the stylesheets written over the tokens (`CONSUMERS`:
`design/base.css`, `design/kit.css`) and resolved through the declaration.

Reading a stylesheet: comments are stripped; a character scanner reads the rest, where `{` opens a rule (its
selector is the whitespace-normalised text before it), `;` ends a declaration, `}` closes the innermost rule
(kept when it holds declarations), and nested at-rules are followed. A quoted string is read as text (a `;`
or a brace inside quotes neither ends nor opens anything). Slots: `color` is text; `background` and
`background-color` are grounds; `border*` and `outline*` are lines. Only values naming a `--svc-` custom
property count; a value with `color-mix(` is skipped and counted as `composed`.

Bindings: every `--svc-` property a value names, in order. `--svc-status-fg`, `--svc-status-bg` and
`--svc-status-line` (set per state word by tokens.css) expand to one binding per status (`<s>`, `<s>-bg`,
`<s>-line`). A plain token first in the value, or in a value without a status indirection, pairs with anything;
the fallbacks after a status indirection pair with plain bindings and with each other, never with a
per-status binding, so a badge is measured status-on-same-status. A binding that is no colour is dropped.

Pairs: within a rule, every text or line binding on every compatible ground binding. A foreground with no
ground in its rule lands on every ambient ground: the grounds of rules that set no text, except tokens ever
used as a line and per-status grounds. The first place a pair is seen is kept (`"<file> <selector>"`; an
ambient one adds ", on every ground a container sets"). Every pair is measured in both themes: text needs 4.5
and is enforced, a line needs 3.0 and is reported only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from svc.layer._design import CONSUMERS, PREFIX, DesignSystem, load_design, read_share_file
from svc.layer._design_colour import contrast_ratio

__all__ = [
    "MINIMUM_NON_TEXT",
    "MINIMUM_TEXT",
    "STANDARD",
    "ContrastReport",
    "ContrastSource",
    "CssRule",
    "MeasuredPair",
    "css_rules",
    "design_contrast",
    "measure_contrast",
    "strip_comments",
]

STANDARD = "WCAG 2.1 AA"
#: What WCAG 2.1 AA asks of text (1.4.3); every text pair is held to it, large or not.
MINIMUM_TEXT = 4.5
#: What it asks of a non-text element that carries meaning (1.4.11); measured and reported, not enforced.
MINIMUM_NON_TEXT = 3.0
_INDIRECTIONS = {"status-fg": "", "status-bg": "-bg", "status-line": "-line"}
_TOKEN = re.compile(re.escape(PREFIX) + r"([a-z0-9-]*)")
_THEMES: tuple[tuple[Literal["light", "dark"], bool], ...] = (("light", False), ("dark", True))

Slot = Literal["text", "ground", "line"]
Theme = Literal["light", "dark"]
Carries = Literal["text", "non_text"]


class ContrastSource(msgspec.Struct, frozen=True, kw_only=True):
    """A stylesheet the pairs were read from."""

    path: Annotated[str, Meta(description="share-relative, e.g. svc/share/design/kit.css")]
    rules: Annotated[int, Meta(description="rules with a colour slot naming a --svc- custom property")]


class MeasuredPair(msgspec.Struct, frozen=True, kw_only=True):
    """One foreground on one ground, in one theme, measured."""

    foreground: Annotated[str, Meta(description="the foreground token (a role or a status colour)")]
    foreground_entry: Annotated[str, Meta(description="the palette entry it resolves to in this theme")]
    foreground_value: Annotated[str, Meta(description="the literal that entry holds")]
    ground: str
    ground_entry: str
    ground_value: str
    theme: Theme
    carries: Annotated[Carries, Meta(description="text (a color) or non_text (a border or an outline)")]
    ratio: Annotated[float, Meta(description="the WCAG 2.1 contrast ratio, two decimals")]
    required: float
    passes: bool
    enforced: Annotated[bool, Meta(description="whether falling short is a finding (text only)")]
    seen: Annotated[str, Meta(description="the first place the pair was read: '<file> <selector>'")]


class ContrastReport(msgspec.Struct, frozen=True, kw_only=True):
    """`design.contrast`: every pair the stylesheets state over the declaration, measured in both themes."""

    fingerprint: Annotated[str, Meta(description="the fingerprint of the declaration measured")]
    standard: str
    minimum_text: float
    minimum_non_text: float
    sources: list[ContrastSource]
    measured: Annotated[int, Meta(description="how many pairs were measured (both themes)")]
    pairs: Annotated[
        list[MeasuredPair], Meta(description="sorted by theme (light first), text before non_text, foreground, ground")
    ]
    composed: Annotated[int, Meta(description="declarations skipped because their value is composed (color-mix)")]
    findings: Annotated[list[str], Meta(description="one line per enforced pair that falls short")]
    readable: Annotated[bool, Meta(description="every enforced pair reaches its threshold")]


# Reading a stylesheet.


@dataclass(slots=True)
class CssRule:
    """A declaration block: its selector and its `(property, value)` declarations in order."""

    selector: str
    declarations: list[tuple[str, str]] = field(default_factory=list)


def strip_comments(css: str) -> str:
    """The text without its `/* … */` comments (an unclosed comment runs to the end)."""
    out: list[str] = []
    rest = css
    while (start := rest.find("/*")) != -1:
        out.append(rest[:start])
        end = rest.find("*/", start + 2)
        if end == -1:
            return "".join(out)
        rest = rest[end + 2 :]
    out.append(rest)
    return "".join(out)


def css_rules(css: str) -> list[CssRule]:
    """Every rule holding declarations, in the order they close (a nested rule before the at-rule around it)."""
    out: list[CssRule] = []
    stack: list[CssRule] = []
    buffer: list[str] = []
    quote: str | None = None
    escaped = False

    def flush(rule: CssRule) -> None:
        prop, colon, value = "".join(buffer).partition(":")
        if colon and prop.strip() and value.strip():
            rule.declarations.append((prop.strip(), value.strip()))

    for ch in strip_comments(css):
        if quote is not None:
            buffer.append(ch)
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
            buffer.append(ch)
        elif ch == "{":
            stack.append(CssRule(selector=" ".join("".join(buffer).split())))
            buffer.clear()
        elif ch == "}":
            if stack:
                rule = stack.pop()
                flush(rule)
                if rule.declarations:
                    out.append(rule)
            buffer.clear()
        elif ch == ";":
            if stack:
                flush(stack[-1])
            buffer.clear()
        else:
            buffer.append(ch)
    return out


def _slot(prop: str) -> Slot | None:
    name = prop.strip().lower()
    if name == "color":
        return "text"
    if name in ("background", "background-color"):
        return "ground"
    if name.startswith(("border", "outline")):
        return "line"
    return None


def _references(value: str) -> list[str]:
    """Every `--svc-` token a value names, in order (the first is used when declared, the rest are fallbacks)."""
    return [name.rstrip("-") for name in _TOKEN.findall(value) if name.rstrip("-")]


# Deriving the pairs.


@dataclass(frozen=True, slots=True, order=True)
class _Binding:
    """A token in a slot and what it may pair with: `*` anything, `status:<s>` its own status, `fallback`."""

    variant: str
    token: str

    def compatible(self, other: _Binding) -> bool:
        return self.variant == "*" or other.variant == "*" or self.variant == other.variant


def _bindings(design: DesignSystem, value: str) -> list[_Binding]:
    out: list[_Binding] = []
    primary_is_status = False
    for position, token in enumerate(_references(value)):
        suffix = _INDIRECTIONS.get(token)
        if suffix is not None:
            out += [_Binding(f"status:{s}", f"{s}{suffix}") for s in design.declaration.status.roles]
            primary_is_status = primary_is_status or position == 0
            continue
        out.append(_Binding("*" if position == 0 or not primary_is_status else "fallback", token))
    return [b for b in out if design.colour(b.token, dark=False) is not None]


@dataclass(slots=True)
class _Coloured:
    seen: str
    slots: list[tuple[Slot, list[_Binding]]]


@dataclass(frozen=True, slots=True, order=True)
class _Derived:
    carries_text: bool
    foreground: str
    ground: str


def _derive(
    design: DesignSystem, sources: list[tuple[str, str]]
) -> tuple[dict[_Derived, str], list[ContrastSource], int]:
    composed = 0
    described: list[ContrastSource] = []
    coloured: list[_Coloured] = []
    for name, text in sources:
        rules = css_rules(text)
        count = sum(1 for r in rules if any(_slot(p) and PREFIX in v for p, v in r.declarations))
        described.append(ContrastSource(path=name, rules=count))
        for rule in rules:
            found: list[tuple[Slot, list[_Binding]]] = []
            for prop, value in rule.declarations:
                slot = _slot(prop)
                if slot is None or PREFIX not in value:
                    continue
                if "color-mix(" in value:
                    composed += 1
                    continue
                bound = _bindings(design, value)
                if bound:
                    found.append((slot, bound))
            if found:
                coloured.append(_Coloured(seen=f"{name} {rule.selector}", slots=found))
    edges = {b.token for each in coloured for slot, bound in each.slots if slot == "line" for b in bound}
    ambient: set[_Binding] = set()
    for each in coloured:
        if any(slot == "text" for slot, _ in each.slots):
            continue
        for slot, bound in each.slots:
            if slot == "ground":
                ambient.update(b for b in bound if b.token not in edges and not b.variant.startswith("status:"))
    pairs: dict[_Derived, str] = {}
    for each in coloured:
        grounds = [b for slot, bound in each.slots if slot == "ground" for b in bound]
        for slot, bound in each.slots:
            if slot == "ground":
                continue
            for binding in bound:
                landed = False
                for ground in grounds:
                    if ground.compatible(binding):
                        landed = True
                        pairs.setdefault(_Derived(slot == "text", binding.token, ground.token), each.seen)
                if not landed:
                    for ground in sorted(ambient):
                        key = _Derived(slot == "text", binding.token, ground.token)
                        pairs.setdefault(key, f"{each.seen}, on every ground a container sets")
    return pairs, described, composed


def measure_contrast(design: DesignSystem, sources: list[tuple[str, str]]) -> ContrastReport:
    """Measure every pair the stylesheets `sources` (`(shown name, text)`) state over `design`, in both themes."""
    derived, described, composed = _derive(design, sources)
    pairs: list[MeasuredPair] = []
    for theme, dark in _THEMES:
        for pair, seen in derived.items():
            fg, bg = design.colour(pair.foreground, dark), design.colour(pair.ground, dark)
            if fg is None or bg is None:
                continue
            ratio = contrast_ratio(fg[1], bg[1])
            if ratio is None:
                continue
            required = MINIMUM_TEXT if pair.carries_text else MINIMUM_NON_TEXT
            pairs.append(
                MeasuredPair(
                    foreground=pair.foreground,
                    foreground_entry=fg[0],
                    foreground_value=fg[1],
                    ground=pair.ground,
                    ground_entry=bg[0],
                    ground_value=bg[1],
                    theme=theme,
                    carries="text" if pair.carries_text else "non_text",
                    ratio=ratio,
                    required=required,
                    passes=ratio >= required,
                    enforced=pair.carries_text,
                    seen=seen,
                )
            )
    order = {"light": 0, "dark": 1}
    pairs.sort(key=lambda p: (order[p.theme], p.carries != "text", p.foreground, p.ground))
    findings = [
        f"{p.foreground} ({p.foreground_entry} {p.foreground_value}) on {p.ground} ({p.ground_entry} "
        f"{p.ground_value}) in the {p.theme} theme measures {p.ratio:.2f}:1; {STANDARD} asks {p.required} of "
        f"text — {p.seen}"
        for p in pairs
        if p.enforced and not p.passes
    ]
    return ContrastReport(
        fingerprint=design.fingerprint,
        standard=STANDARD,
        minimum_text=MINIMUM_TEXT,
        minimum_non_text=MINIMUM_NON_TEXT,
        sources=described,
        measured=len(pairs),
        pairs=pairs,
        composed=composed,
        findings=findings,
        readable=not findings,
    )


def design_contrast() -> ContrastReport:
    """`design.contrast` over the share's declaration and stylesheets (blocking: call it in a worker thread).

    Raises:
        Internal: the share, the declaration or a stylesheet is missing or unreadable, or the declaration is
            inconsistent (the message names the file by its share-relative path).
    """
    design = load_design()
    sources: list[tuple[str, str]] = []
    for rel in CONSUMERS:
        data, shown = read_share_file(rel)
        sources.append((shown, data.decode("utf-8", "replace")))
    return measure_contrast(design, sources)
