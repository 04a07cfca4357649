"""svc's design system: colour maths, the CSS reader, the declaration's rules, tokens.css, theme.js, contrast.

Pairs with `src/svc/layer/_design.py`, `_design_colour.py` and `_design_contrast.py`. A test that needs another
declaration copies svc's share to a temporary directory, edits it and points `SVC_SHARE` at it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import msgspec
import pytest

from svc._errors import Internal, NotFound
from svc.layer import design_asset, design_contrast, design_system
from svc.layer._design import DECLARATION, load_design
from svc.layer._design_colour import contrast_ratio, relative_luminance, srgb
from svc.layer._design_contrast import css_rules, measure_contrast, strip_comments
from svc.layer._design_render import asset_names, render_theme_js, render_tokens_css
from tests.layer.test_graphs import _golden

PACKAGED = Path(str(resources.files("svc") / "share"))
NAME = re.compile(r"^[a-z][a-z0-9-]*$")


@pytest.fixture
def share(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of svc's share, named by `SVC_SHARE` for the test."""
    copy = tmp_path / "share"
    shutil.copytree(PACKAGED, copy)
    monkeypatch.setenv("SVC_SHARE", str(copy))
    return copy


def edit(share: Path, rel: str, old: str, new: str) -> None:
    path = share / rel
    text = path.read_text()
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new))


def refused(share: Path, fragments: tuple[str, ...], load: Callable[[], object] = load_design) -> str:
    with pytest.raises(Internal) as caught:
        load()
    message = caught.value.message
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    assert str(share) not in message
    return message


# Colour maths.


def test_black_on_white_is_21_and_the_ratio_is_symmetric() -> None:
    assert contrast_ratio("#000", "#fff") == 21.0
    assert contrast_ratio("#fff", "#000") == 21.0
    assert contrast_ratio("#fff", "#ffffff") == 1.0
    assert contrast_ratio("#777", "#fff") == 4.48
    assert contrast_ratio("#767676", "#fff") == 4.54
    assert relative_luminance((255, 255, 255)) == pytest.approx(1.0)
    assert relative_luminance((0, 0, 0)) == 0.0


@pytest.mark.parametrize(
    ("literal", "rgb"),
    [
        ("#abc", (0xAA, 0xBB, 0xCC)),
        ("#0a1B2c", (0x0A, 0x1B, 0x2C)),
        # CSS Color 4's oklch forms of sRGB red, green (#008000) and blue.
        ("oklch(62.8% 0.2577 29.23)", (255, 0, 0)),
        ("oklch(51.975% 0.17686 142.495)", (0, 128, 0)),
        ("oklch(45.2% 0.313214 264.052)", (0, 0, 255)),
        # Tailwind v4's published hexes for its oklch steps: gray-900 #101828, blue-600 #155dfc, gray-400 #99a1af.
        ("oklch(21% 0.034 264.665)", (0x10, 0x18, 0x28)),
        ("oklch(54.6% 0.245 262.881)", (0x15, 0x5D, 0xFC)),
        ("oklch(70.7% 0.022 261.325)", (0x99, 0xA1, 0xAF)),
        ("oklch(100% 0 0)", (255, 255, 255)),
        ("oklch(0% 0 0)", (0, 0, 0)),
    ],
)
def test_a_literal_resolves_to_its_published_srgb(literal: str, rgb: tuple[int, int, int]) -> None:
    assert srgb(literal) == rgb


@pytest.mark.parametrize(
    "literal",
    [
        "#abcd",
        "#abcdef80",
        "oklch(55% 0.02 264 / 50%)",
        "color-mix(in oklab, white 50%, black)",
        "red",
        "oklch(55 0 0)",
    ],
)
def test_what_is_not_measurable_is_refused(literal: str) -> None:
    assert srgb(literal) is None
    assert contrast_ratio(literal, "#fff") is None


# The CSS reader.


def test_comments_are_stripped_even_unclosed_and_holding_braces() -> None:
    assert strip_comments("a/* { ; } */b/* c */d") == "abd"
    assert strip_comments("a { color: red } /* open") == "a { color: red } "


def test_the_scanner_follows_nested_at_rules_and_keeps_only_rules_with_declarations() -> None:
    css = """
    /* .ghost { color: var(--svc-fg); } */
    @layer kit {
      @media (min-width: 40rem) {
        .a,
        .b   >  .c { color: var(--svc-fg); background : var(--svc-raised) }
        .empty { }
      }
      .d { border-top: 1px solid var(--svc-line); content: "x;y{z}"; outline: 0 }
    }
    .e{color:var(--svc-muted)}
    """
    rules = css_rules(css)
    assert [r.selector for r in rules] == [".a, .b > .c", ".d", ".e"]
    assert rules[0].declarations == [("color", "var(--svc-fg)"), ("background", "var(--svc-raised)")]
    assert rules[1].declarations == [
        ("border-top", "1px solid var(--svc-line)"),
        ("content", '"x;y{z}"'),
        ("outline", "0"),
    ]
    assert rules[2].declarations == [("color", "var(--svc-muted)")]


# The declaration.


def test_svc_s_declaration_is_read_in_order_and_fingerprinted_over_its_compact_json() -> None:
    design = load_design()
    decl = design.declaration
    assert design.source == "svc/share/design/tokens.yaml"
    assert design.fingerprint == hashlib.sha256(msgspec.json.encode(decl)).hexdigest()
    assert design.design == design.fingerprint[:12]
    assert list(decl.roles)[:4] == ["bg", "raised", "sunken", "hover"]
    assert list(decl.status.roles) == ["ok", "info", "warn", "bad", "neutral"]
    compact = json.loads(msgspec.json.encode(decl))
    assert list(compact) == [
        "schema",
        "identity",
        "font",
        "palette",
        "roles",
        "status",
        "type",
        "layout",
        "radius",
        "motion",
        "theme",
        "viewports",
        "alias",
    ]
    assert compact["theme"] == {"class": "dark", "storage-key": "svc-theme"}


def test_the_status_vocabulary_files_svc_s_own_status_words() -> None:
    states = load_design().declaration.status.states
    filed = {word: status for status, words in states.items() for word in words}
    assert len(filed) == sum(len(words) for words in states.values())
    plan = ["planned", "ready", "active", "blocked", "verify", "done", "cancelled", "superseded"]
    executions = ["queued", "running", "cancelling", "succeeded", "failed", "cancelled"]
    mesh = ["connecting", "connected", "degraded", "unreachable", "expired", "held", "released", "conflicted"]
    health = ["ok", "warn", "fail", "unknown", "degraded"]
    for word in (*plan, *executions, *mesh, *health):
        assert word in filed, word
        assert NAME.match(word)
    assert (filed["succeeded"], filed["failed"], filed["running"], filed["blocked"]) == ("ok", "bad", "info", "bad")


def test_comments_do_not_move_the_fingerprint_and_an_order_does(share: Path) -> None:
    before = load_design().fingerprint
    edit(share, DECLARATION, "schema: 2\n", "# a new comment\nschema: 2\n")
    assert load_design().fingerprint == before
    text = (share / DECLARATION).read_text()
    grey = "  grey-50: oklch(98.4% 0.003 255)\n"
    (share / DECLARATION).write_text(text.replace(grey, "").replace('  white: "#fff"\n', '  white: "#fff"\n' + grey))
    assert load_design().fingerprint == before  # same place: nothing moved
    (share / DECLARATION).write_text(text.replace(grey, "").replace("palette:\n", "palette:\n" + grey))
    moved = load_design()
    assert moved.fingerprint != before
    assert list(moved.declaration.palette)[:2] == ["grey-50", "white"]
    assert moved.source == "SVC_SHARE/design/tokens.yaml"


@pytest.mark.parametrize(
    ("old", "new", "fragments"),
    [
        ("schema: 2", "schema: 3", ("schema:", "version 3")),
        ("  grey-50: oklch", "  white: oklch", ("palette.white is declared twice", "line")),
        ("  grey-50: oklch", "  Grey-50: oklch", ("regex", "$.palette")),
        ("    about: the page\n", "    about: the page\n    tint: white\n", ("unknown field `tint`", "$.roles")),
        ("    light: white\n    dark: grey-950", "    light: snow\n    dark: grey-950", ("roles.bg.light", "'snow'")),
        ("  red-950: oklch(25% 0.07 20)", "  red-950: oklch(25% 0.07 20 / 50%)", ("palette.red-950", "no colour")),
        ("[320, 390, 768, 1280, 1600]", "[320, 1280, 768]", ("viewports", "ascending")),
        ("    ok: [ok, done,", "    ok: [ok, failed, done,", ("status.states.bad", "'failed' is already filed")),
        (
            "    info: [info, ready,",
            "    info: [info, warn, ready,",
            ("status.states.info", "'warn' is another status"),
        ),
        ("      size: 0.75rem", "      size: 12pt", ("type.scale.meta.size", "no length")),
        ("    value: 48rem", '    value: "48rem; color: red"', ("layout.measure.value", "a declaration value may not")),
        ("  storage-key: svc-theme", "  storage-key: svc'theme", ("$.theme.storage-key",)),
        ("alias: {}", "alias:\n  site:\n    heading: nowhere", ("alias.site.heading", "'nowhere'")),
        ("mark: brand/mark.svg", "mark: brand/absent.svg", ("identity.mark", "brand/absent.svg")),
        ("mark: brand/mark.svg", "mark: ../../etc/passwd", ("$.identity.mark",)),
    ],
)
def test_an_inconsistent_declaration_is_internal_naming_the_file_and_the_first_problem(
    share: Path, old: str, new: str, fragments: tuple[str, ...]
) -> None:
    edit(share, DECLARATION, old, new)
    message = refused(share, ("SVC_SHARE/design/tokens.yaml", *fragments))
    assert message.startswith("SVC_SHARE/design/tokens.yaml")


def test_a_role_naming_roles_in_a_circle_is_refused(share: Path) -> None:
    edit(share, DECLARATION, "    light: grey-500\n    dark: grey-500", "    light: line-strong\n    dark: grey-500")
    refused(share, ("roles.line-strong.light", "circle"))


def test_two_tokens_that_become_one_custom_property_are_refused(share: Path) -> None:
    edit(share, DECLARATION, "alias: {}", "alias:\n  accent:\n    soft: bg")
    refused(share, ("alias.accent.soft", "--svc-accent-soft", "roles.accent-soft"))


def test_a_role_may_name_a_role_and_resolves_through_it(share: Path) -> None:
    edit(share, DECLARATION, "    light: grey-500\n    dark: grey-500", "    light: muted\n    dark: muted")
    design = load_design()
    assert design.colour("line-strong", dark=False) == ("grey-600", "oklch(49.5% 0.022 255)")
    assert design.colour("line-strong", dark=True) == ("grey-400", "oklch(71% 0.018 255)")
    assert "--svc-line-strong: var(--svc-muted);" in render_tokens_css(design)


@pytest.mark.parametrize(
    ("setup", "fragments"),
    [
        (lambda share: (share / DECLARATION).unlink(), ("SVC_SHARE/design/tokens.yaml is missing",)),
        (lambda share: (share / DECLARATION).write_text("roles: [\n"), ("not readable YAML",)),
        (lambda share: (share / DECLARATION).write_text("a: &x 1\nb: *x\n"), ("aliases",)),
        (lambda share: (share / DECLARATION).write_bytes(b"#" * (1024 * 1024 + 1)), ("over the 1 MiB limit",)),
        (lambda share: shutil.rmtree(share), ("SVC_SHARE names no directory",)),
    ],
)
def test_a_missing_or_unreadable_declaration_is_internal(
    share: Path, setup: Callable[[Path], object], fragments: tuple[str, ...]
) -> None:
    setup(share)
    refused(share, fragments)


def test_a_declaration_symlinked_out_of_the_share_is_refused(share: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.yaml"
    outside.write_text((share / DECLARATION).read_text())
    (share / DECLARATION).unlink()
    os.symlink(outside, share / DECLARATION)
    refused(share, ("SVC_SHARE/design/tokens.yaml cannot be read", "leaving"))


# design.system.


def test_design_system_is_its_golden_answer_and_names_no_absolute_path() -> None:
    report = design_system()
    _golden("design-system", report)
    assert str(PACKAGED) not in msgspec.json.encode(report).decode()
    assert report.theme.bootstrap == load_design().bootstrap()
    assert report.tallies.states == sum(len(w) for w in load_design().declaration.status.states.values())


# tokens.css and theme.js.


def _block(css: str, opener: str) -> str:
    start = css.index(opener)
    return css[start : css.index("}", start)]


def test_tokens_css_carries_every_token_in_both_themes_and_the_status_vocabulary() -> None:
    design = load_design()
    decl = design.declaration
    css = render_tokens_css(design)
    root = _block(css, ":root {")
    assert f'--svc-design: "{design.design}";' in root
    for name, step in decl.type_.scale.items():
        assert f"--svc-text-{name}: {step.size};" in root
    for section, entries in (("layout", decl.layout), ("radius", decl.radius), ("motion", decl.motion)):
        for name, named in entries.items():
            assert f"--svc-{section}-{name}: {named.value};" in root
    dark_class = _block(css, ":root.dark {")
    dark_media = _block(css, ':root:not([data-theme="light"]) {')
    for token in design.colour_tokens():
        for block, dark in ((root, False), (dark_class, True), (dark_media, True)):
            declared = re.search(rf"--svc-{re.escape(token)}: ([^;]+);", block)
            assert declared is not None, (token, dark)
            value = declared.group(1)
            resolved = design.colour(token, dark)
            assert resolved is not None
            if value.startswith("var("):
                assert value == f"var(--svc-{design.reference(token, dark)})"
            else:
                assert srgb(value) == srgb(resolved[1]), (token, dark)
    assert "@media (prefers-color-scheme: dark)" in css
    for status, words in decl.status.states.items():
        rule = _block(css, f'[data-status="{words[-1]}"]')
        assert f"--svc-status-bg: var(--svc-{status}-bg);" in rule
    assert css.count("{") == css.count("}")


def test_theme_js_begins_with_the_bootstrap_and_names_the_contract() -> None:
    design = load_design()
    script = render_theme_js(design)
    assert script.splitlines()[1] == design.bootstrap()
    assert '"svc-theme"' in design.bootstrap()
    assert '"dark"' in design.bootstrap()
    assert "data-theme-toggle" in script
    assert "window.svcTheme" in script


_NODE_PROBE = """
const [script, stored, systemDark] = [process.argv[1], process.argv[2], process.argv[3] === "true"];
const classes = new Set();
const attrs = {};
globalThis.document = {documentElement: {
  classList: {toggle(c, on) { if (on) classes.add(c); else classes.delete(c); }, contains: (c) => classes.has(c)},
  setAttribute(k, v) { attrs[k] = v; }, removeAttribute(k) { delete attrs[k]; },
}};
globalThis.localStorage = {getItem: () => (stored === "-" ? null : stored)};
globalThis.matchMedia = () => ({matches: systemDark});
eval(script);
console.log(JSON.stringify({dark: classes.has("dark"), theme: attrs["data-theme"] ?? null}));
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run the bootstrap")
@pytest.mark.parametrize(
    ("stored", "system_dark", "dark", "theme"),
    [
        ("-", False, False, None),
        ("-", True, True, None),
        ("dark", False, True, "dark"),
        ("light", True, False, "light"),
        ("purple", True, True, None),
    ],
)
def test_the_bootstrap_follows_the_stored_choice_else_the_system(
    stored: str, system_dark: bool, dark: bool, theme: str | None
) -> None:
    node = shutil.which("node")
    assert node is not None
    bootstrap = load_design().bootstrap()
    result = subprocess.run(
        [node, "-e", _NODE_PROBE, bootstrap, stored, str(system_dark).lower()],
        capture_output=True,
        check=True,
        timeout=30,
    )
    assert json.loads(result.stdout) == {"dark": dark, "theme": theme}


def test_the_assets_are_served_by_exact_name_only() -> None:
    design = load_design()
    names = asset_names(design)
    identity = design.declaration.identity
    assert names == [
        "tokens.css",
        "theme.js",
        "base.css",
        "kit.css",
        "cockpit.css",
        identity.mark,
        identity.logo,
        identity.social,
    ]
    assert design_asset("tokens.css").body == render_tokens_css(design).encode()
    assert design_asset("base.css").body == (PACKAGED / "design" / "base.css").read_bytes()
    assert design_asset("brand/mark.svg").media_type == "image/svg+xml"
    for name in ("tokens.yaml", "../design/base.css", "brand/../base.css", "/etc/passwd", "design/kit.css", ""):
        with pytest.raises(NotFound):
            design_asset(name)


# design.contrast.


def test_svc_s_own_stylesheets_are_readable_in_both_themes() -> None:
    report = design_contrast()
    assert report.readable is True
    assert report.findings == []
    assert [s.path for s in report.sources] == [
        "svc/share/design/base.css",
        "svc/share/design/kit.css",
        "svc/share/design/cockpit.css",
    ]
    assert all(s.rules > 0 for s in report.sources)
    assert report.measured == len(report.pairs) > 0
    light = {(p.carries, p.foreground, p.ground) for p in report.pairs if p.theme == "light"}
    dark = {(p.carries, p.foreground, p.ground) for p in report.pairs if p.theme == "dark"}
    assert light == dark
    keys = [(p.theme != "light", p.carries != "text", p.foreground, p.ground) for p in report.pairs]
    assert keys == sorted(keys)
    for pair in report.pairs:
        assert pair.enforced is (pair.carries == "text")
        assert pair.required == (4.5 if pair.carries == "text" else 3.0)
        assert pair.passes is (pair.ratio >= pair.required)
        assert pair.ratio == contrast_ratio(pair.foreground_value, pair.ground_value)
        assert pair.seen.startswith("svc/share/design/")
        if pair.enforced:
            assert pair.passes, pair
    pairs = {(p.foreground, p.ground) for p in report.pairs if p.carries == "text"}
    # a badge: each status on its own ground, never on another's
    for status in ("ok", "info", "warn", "bad", "neutral"):
        assert (status, f"{status}-bg") in pairs
    assert ("ok", "bad-bg") not in pairs
    assert ("on-accent", "accent-fill") in pairs
    assert ("muted", "sunken") in pairs
    assert ("focus", "bg") in {(p.foreground, p.ground) for p in report.pairs if p.carries == "non_text"}


def test_a_text_token_darkened_below_4_5_is_a_finding(share: Path) -> None:
    edit(share, DECLARATION, "    light: grey-600\n    dark: grey-400", "    light: grey-400\n    dark: grey-400")
    report = design_contrast()
    assert report.readable is False
    failing = [p for p in report.pairs if p.enforced and not p.passes]
    assert failing
    assert {(p.foreground, p.theme) for p in failing} == {("muted", "light")}
    assert len(report.findings) == len(failing)
    on_raised = next(p for p in failing if p.ground == "raised")
    assert on_raised.ratio == contrast_ratio("oklch(71% 0.018 255)", "#fff")
    assert on_raised.ratio < 4.5
    assert on_raised.seen.startswith("SVC_SHARE/design/")
    assert (
        f"muted (grey-400 oklch(71% 0.018 255)) on raised (white #fff) in the light theme measures "
        f"{on_raised.ratio:.2f}:1; WCAG 2.1 AA asks 4.5 of text — {on_raised.seen}"
    ) in report.findings
    assert str(share) not in msgspec.json.encode(report).decode()


@pytest.mark.parametrize("rel", ["design/kit.css", "design/base.css"])
def test_a_missing_stylesheet_is_internal_naming_it(share: Path, rel: str) -> None:
    (share / rel).unlink()
    refused(share, (f"SVC_SHARE/{rel} is missing",), design_contrast)


def _measure(css: str) -> dict[tuple[str, str, str], str]:
    report = measure_contrast(load_design(), [("fixture.css", css)])
    return {(p.carries, p.foreground, p.ground): p.seen for p in report.pairs if p.theme == "light"}


def test_a_rule_that_sets_both_states_a_pair_and_nothing_else() -> None:
    pairs = _measure("@layer x { .t { color: var(--svc-on-accent); background: var(--svc-accent-fill); } }")
    assert pairs == {("text", "on-accent", "accent-fill"): "fixture.css .t"}


def test_a_foreground_alone_lands_on_every_ground_a_container_sets_but_not_on_an_edge() -> None:
    pairs = _measure(
        """
        .card { background: var(--svc-raised); border: 1px solid var(--svc-line); }
        .well { background-color: var(--svc-sunken); }
        .rule { background: var(--svc-line); }
        .row { color: var(--svc-fg); background: var(--svc-accent-soft); }
        .note { color: var(--svc-muted); }
        .mix { color: color-mix(in oklab, var(--svc-fg) 50%, transparent); }
        """
    )
    ambient = "fixture.css .note, on every ground a container sets"
    assert pairs[("text", "muted", "raised")] == ambient
    assert pairs[("text", "muted", "sunken")] == ambient
    assert ("text", "muted", "line") not in pairs  # a token drawn as a line is no ground
    assert ("text", "muted", "accent-soft") not in pairs  # that ground carries its own text
    assert pairs[("non_text", "line", "raised")] == "fixture.css .card"
    report = measure_contrast(
        load_design(), [("fixture.css", ".mix { color: color-mix(in oklab, var(--svc-fg), red) }")]
    )
    assert (report.composed, report.pairs) == (1, [])


def test_a_status_indirection_pairs_each_status_with_its_own_ground_and_fallbacks_together() -> None:
    pairs = _measure(
        ".badge { color: var(--svc-status-fg, var(--svc-body)); background: var(--svc-status-bg, var(--svc-sunken)); }"
    )
    statuses = list(load_design().declaration.status.roles)
    expected = {("text", s, f"{s}-bg") for s in statuses} | {("text", "body", "sunken")}
    assert set(pairs) == expected


def test_a_declaration_is_parsed_under_the_lock_once_per_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two threads asking for the page's assets at once never convert the declaration together."""
    from svc.layer import _design

    seen: list[bool] = []
    convert = msgspec.convert

    def watched(*args: Any, **kwargs: Any) -> Any:
        seen.append(_design._PARSING.locked())
        return convert(*args, **kwargs)

    monkeypatch.setattr(msgspec, "convert", watched)
    _design._parse_once.cache_clear()
    try:
        data, name = _design.read_share_file(_design.DECLARATION)
        first = _design._parse(data, name)
        assert _design._parse(data, name) is first
    finally:
        _design._parse_once.cache_clear()
    assert seen == [True]
