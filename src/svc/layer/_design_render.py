"""The files svc derives from its design declaration and serves: `tokens.css`, `theme.js`, and the packaged ones.

`tokens.css` holds every token as a `--svc-<name>` custom property, light on `:root`, dark under the theme
class and under `prefers-color-scheme: dark` unless a light choice is stored, and the status vocabulary as
`[data-status="<word>"]` rules. `theme.js` is the pre-paint bootstrap and the toggle hook. Both are derived on
request, so they cannot drift from the declaration. `design_asset` serves these and the packaged stylesheets
and identity files by exact name, never joining a name from a request to a directory.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from svc._errors import NotFound
from svc.layer._design import (
    CONSUMERS,
    DECLARATION,
    IMAGE_TYPES,
    PREFIX,
    STATUS_ATTRIBUTE,
    THEME_ATTRIBUTE,
    DesignSystem,
    load_design,
    read_share_file,
)
from svc.layer._design_colour import srgb

__all__ = ["DesignAsset", "asset_names", "design_asset", "render_theme_js", "render_tokens_css"]


# What derives from the declaration.


def _hex(literal: str) -> str:
    rgb = srgb(literal)
    assert rgb is not None  # validated: every palette literal parses
    return "#{:02x}{:02x}{:02x}".format(*rgb)


def _colours(design: DesignSystem, dark: bool) -> list[str]:
    """The colour declarations of one theme: a role or status part naming a role reads that role's property."""
    decl = design.declaration
    out: list[str] = []
    for token in design.colour_tokens():
        reference = design.reference(token, dark)
        assert reference is not None
        value = _hex(decl.palette[reference]) if reference in decl.palette else f"var({PREFIX}{reference})"
        out.append(f"  {PREFIX}{token}: {value};")
    return out


def render_tokens_css(design: DesignSystem) -> str:
    """`tokens.css`: every token as a `--svc-` custom property, both themes, and the status vocabulary.

    Colours are written as the `#rrggbb` the contrast measurement computes from each literal, so what is
    measured is what a browser paints. Light is on `:root`; dark applies under the theme class, and under
    `prefers-color-scheme: dark` unless the root carries `data-theme="light"` (a stored light choice).
    """
    decl = design.declaration
    lines = [
        f"/* svc design tokens, design {design.design}: derived from {design.source}; do not edit. */",
        ":root {",
        f'  {PREFIX}design: "{design.design}";',
        "  color-scheme: light;",
        f"  {PREFIX}font-sans: {decl.font.sans};",
        f"  {PREFIX}font-mono: {decl.font.mono};",
    ]
    for name, step in decl.type_.scale.items():
        lines += [f"  {PREFIX}text-{name}: {step.size};", f"  {PREFIX}leading-{name}: {step.leading:g};"]
    lines += [f"  {PREFIX}tracking-{n}: {v.value};" for n, v in decl.type_.tracking.items()]
    for section, entries in (("layout", decl.layout), ("radius", decl.radius), ("motion", decl.motion)):
        lines += [f"  {PREFIX}{section}-{n}: {v.value};" for n, v in entries.items()]
    lines += _colours(design, dark=False)
    lines += [f"  {PREFIX}{v}-{n}: var({PREFIX}{t});" for v, names in decl.alias.items() for n, t in names.items()]
    dark = ["  color-scheme: dark;", *_colours(design, dark=True)]
    lines += ["}", "", f":root.{decl.theme.class_} {{", *dark, "}", ""]
    lines += [
        "@media (prefers-color-scheme: dark) {",
        f'  :root:not([{THEME_ATTRIBUTE}="light"]) {{',
        *(f"  {line}" for line in dark),
        "  }",
        "}",
        "",
    ]
    if decl.motion:
        lines += ["@media (prefers-reduced-motion: reduce) {", "  :root {"]
        lines += [f"    {PREFIX}motion-{n}: 0s;" for n in decl.motion]
        lines += ["  }", "}", ""]
    for status, words in decl.status.states.items():
        selectors = ",\n".join(f'[{STATUS_ATTRIBUTE}="{w}"]' for w in dict.fromkeys([status, *words]))
        lines += [
            f"{selectors} {{",
            f"  {PREFIX}status-fg: var({PREFIX}{status});",
            f"  {PREFIX}status-bg: var({PREFIX}{status}-bg);",
            f"  {PREFIX}status-line: var({PREFIX}{status}-line);",
            "}",
            "",
        ]
    return "\n".join(lines)


def render_theme_js(design: DesignSystem) -> str:
    """`theme.js`: the pre-paint bootstrap (its first statement), then the toggle hook.

    Loaded by `<script src>` first in `<head>` (never inline: the pages' CSP allows no inline script). The
    hook keeps the class in step with the system while no choice is stored, wires every element carrying
    `data-theme-toggle` (a click stores the other theme) and exposes `window.svcTheme`
    (`get()`, `stored()`, `set("light" | "dark" | null)`, `toggle()`).
    """
    theme = design.declaration.theme
    key, cls, attr = json.dumps(theme.storage_key), json.dumps(theme.class_), json.dumps(THEME_ATTRIBUTE)
    hook = f"""(function () {{
  var root = document.documentElement, key = {key}, cls = {cls}, attr = {attr};
  var media = window.matchMedia("(prefers-color-scheme: dark)");
  function stored() {{
    try {{
      var t = window.localStorage.getItem(key);
      return t === "light" || t === "dark" ? t : null;
    }} catch (e) {{
      return null;
    }}
  }}
  function current() {{
    return root.classList.contains(cls) ? "dark" : "light";
  }}
  function label() {{
    var dark = current() === "dark";
    document.querySelectorAll("[data-theme-toggle]").forEach(function (button) {{
      button.setAttribute("aria-pressed", dark ? "true" : "false");
      button.setAttribute("title", dark ? "Use the light theme" : "Use the dark theme");
    }});
  }}
  function apply(t) {{
    root.classList.toggle(cls, t === "dark" || (t === null && media.matches));
    if (t) {{
      root.setAttribute(attr, t);
    }} else {{
      root.removeAttribute(attr);
    }}
    label();
  }}
  function set(t) {{
    try {{
      if (t) {{
        window.localStorage.setItem(key, t);
      }} else {{
        window.localStorage.removeItem(key);
      }}
    }} catch (e) {{}}
    apply(t === "light" || t === "dark" ? t : null);
  }}
  function toggle() {{
    set(current() === "dark" ? "light" : "dark");
  }}
  media.addEventListener("change", function () {{
    if (stored() === null) {{
      apply(null);
    }}
  }});
  window.addEventListener("storage", function (event) {{
    if (event.key === key) {{
      apply(stored());
    }}
  }});
  document.addEventListener("click", function (event) {{
    var target = event.target;
    if (target instanceof Element && target.closest("[data-theme-toggle]")) {{
      toggle();
    }}
  }});
  document.addEventListener("DOMContentLoaded", label);
  window.svcTheme = {{ get: current, stored: stored, set: set, toggle: toggle }};
}})();
"""
    head = f"/* svc theme, design {design.design}: derived from {design.source}; do not edit. */\n"
    return head + design.bootstrap() + "\n" + hook


# The files served at DESIGN_ASSET_ROUTE.


@dataclass(frozen=True, slots=True)
class DesignAsset:
    """One file of the design as served: its bytes and media type."""

    body: bytes
    media_type: str


_CSS = "text/css; charset=utf-8"
#: The stylesheets served as packaged, by served name.
_STYLESHEETS = {rel.rpartition("/")[2]: rel for rel in CONSUMERS}


def asset_names(design: DesignSystem) -> list[str]:
    """Every name served at `DESIGN_ASSET_ROUTE`: the derived files, the stylesheets, the identity's files."""
    identity = design.declaration.identity
    return ["tokens.css", "theme.js", *_STYLESHEETS, *dict.fromkeys((identity.mark, identity.logo, identity.social))]


def design_asset(name: str) -> DesignAsset:
    """The file served at `DESIGN_ASSET_ROUTE/<name>` (blocking), chosen by exact name, never joined to a directory.

    Raises:
        NotFound: `name` is none of `asset_names`.
        Internal: the share, the declaration or the file is missing, unreadable or inconsistent.
    """
    design = load_design()
    if name == "tokens.css":
        return DesignAsset(body=render_tokens_css(design).encode(), media_type=_CSS)
    if name == "theme.js":
        return DesignAsset(body=render_theme_js(design).encode(), media_type="text/javascript; charset=utf-8")
    if name in _STYLESHEETS:
        return DesignAsset(body=read_share_file(_STYLESHEETS[name])[0], media_type=_CSS)
    names = asset_names(design)
    if name not in names:
        raise NotFound(f"no design asset {name!r}; the assets are {', '.join(names)}")
    base = DECLARATION.rpartition("/")[0]
    body, _ = read_share_file(f"{base}/{name}")
    return DesignAsset(body=body, media_type=IMAGE_TYPES[Path(name).suffix])
