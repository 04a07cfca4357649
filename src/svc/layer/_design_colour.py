"""Colour arithmetic of the design system: a CSS colour literal to 8-bit sRGB, and the WCAG 2.1 contrast ratio.

The literals understood are the ones a design declaration may hold: `#rgb`, `#rrggbb` and `oklch(L% C H)`. A
value with an alpha channel (`oklch(… / 50%)`, `#rgba`, `#rrggbbaa`) is refused: what it looks like depends on
what lies beneath it. Oklch is turned into Oklab, then linear sRGB with Björn Ottosson's matrices (as CSS Color
4 states them), then sRGB with the sRGB transfer function, then scaled to 0…255, rounded half up and clamped: the value
a browser paints, so a ratio is computed on what is shown.

The ratio is WCAG 2.1's: relative luminance with the 0.03928 knee and the 0.2126/0.7152/0.0722 weights,
(lighter + 0.05) / (darker + 0.05), rounded half up to two decimals (the precision reported and judged).
"""

from __future__ import annotations

import math
import re

__all__ = ["contrast_ratio", "relative_luminance", "srgb"]

_HEX = re.compile(r"#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})")
_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)"
_OKLCH = re.compile(rf"oklch\(\s*({_NUMBER})%\s+({_NUMBER})\s+({_NUMBER})\s*\)")


def srgb(literal: str) -> tuple[int, int, int] | None:
    """The 8-bit sRGB channels of a colour literal, or None for a form not understood (or carrying alpha)."""
    text = literal.strip()
    if _HEX.fullmatch(text):
        digits = text[1:]
        if len(digits) == 3:
            digits = "".join(c * 2 for c in digits)
        return (int(digits[0:2], 16), int(digits[2:4], 16), int(digits[4:6], 16))
    found = _OKLCH.fullmatch(text)
    if found is None:
        return None
    lightness, chroma, hue = (float(part) for part in found.groups())
    if chroma < 0:
        return None
    angle = math.radians(hue)
    return _oklab_to_srgb(lightness / 100, chroma * math.cos(angle), chroma * math.sin(angle))


def _oklab_to_srgb(lightness: float, a: float, b: float) -> tuple[int, int, int]:
    l_ = lightness + 0.3963377774 * a + 0.2158037573 * b
    m_ = lightness - 0.1055613458 * a - 0.0638541728 * b
    s_ = lightness - 0.0894841775 * a - 1.2914855480 * b
    lc, mc, sc = l_**3, m_**3, s_**3
    linear = (
        4.0767416621 * lc - 3.3077115913 * mc + 0.2309699292 * sc,
        -1.2684380046 * lc + 2.6097574011 * mc - 0.3413193965 * sc,
        -0.0041960863 * lc - 0.7034186147 * mc + 1.7076147010 * sc,
    )
    return tuple(_channel(value) for value in linear)  # type: ignore[return-value]


def _channel(linear: float) -> int:
    encoded = 12.92 * linear if linear <= 0.0031308 else 1.055 * max(linear, 0.0) ** (1 / 2.4) - 0.055
    return min(255, max(0, math.floor(encoded * 255 + 0.5)))


def relative_luminance(rgb: tuple[int, int, int]) -> float:
    """WCAG 2.1 relative luminance of 8-bit sRGB channels."""

    def linear(channel: int) -> float:
        s = channel / 255
        return s / 12.92 if s <= 0.03928 else ((s + 0.055) / 1.055) ** 2.4

    red, green, blue = rgb
    return 0.2126 * linear(red) + 0.7152 * linear(green) + 0.0722 * linear(blue)


def contrast_ratio(foreground: str, ground: str) -> float | None:
    """The WCAG 2.1 contrast ratio of two colour literals to two decimals (symmetric), or None if one is not one."""
    first, second = srgb(foreground), srgb(ground)
    if first is None or second is None:
        return None
    high, low = sorted((relative_luminance(first), relative_luminance(second)), reverse=True)
    return math.floor((high + 0.05) / (low + 0.05) * 100 + 0.5) / 100
