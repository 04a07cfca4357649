"""A page read into a small element tree, for the cockpit page tests: find elements by id, attribute or tag.

Built with `html.parser` (no dependency): void elements close themselves, every other element closes at its
end tag (an unclosed one at its parent's end). Text is kept per element, unescaped, whitespace collapsed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from html.parser import HTMLParser

__all__ = ["Element", "parse"]

_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
)


class Element:
    """One element: its tag, attributes, children (elements and text, in order)."""

    def __init__(self, tag: str, attrs: dict[str, str | None], parent: Element | None) -> None:
        self.tag = tag
        self.attrs = attrs
        self.parent = parent
        self.children: list[Element | str] = []

    def get(self, name: str) -> str | None:
        """The value of attribute `name` (None when absent or valueless)."""
        return self.attrs.get(name)

    def has(self, name: str) -> bool:
        """Whether the element carries attribute `name`."""
        return name in self.attrs

    @property
    def text(self) -> str:
        """Every text inside, whitespace collapsed."""
        return re.sub(r"\s+", " ", "".join(self._texts())).strip()

    def _texts(self) -> Iterator[str]:
        for child in self.children:
            if isinstance(child, str):
                yield child
            else:
                yield from child._texts()

    def iter(self) -> Iterator[Element]:
        """This element and every element inside it, in document order."""
        yield self
        for child in self.children:
            if isinstance(child, Element):
                yield from child.iter()

    def find_all(self, tag: str | None = None, **attrs: str | bool) -> list[Element]:
        """Every element inside (itself included) of `tag` whose attributes match (`True`: present at all).

        An attribute name's `_` stands for `-` (`data_state="running"`); `class_` matches one class word.
        """
        found = []
        for element in self.iter():
            if tag is not None and element.tag != tag:
                continue
            if all(element._matches(name, want) for name, want in attrs.items()):
                found.append(element)
        return found

    def _matches(self, name: str, want: str | bool) -> bool:
        if name == "class_":
            return isinstance(want, str) and want in (self.attrs.get("class") or "").split()
        key = name.replace("_", "-")
        if want is True:
            return key in self.attrs
        return self.attrs.get(key) == want

    def one(self, tag: str | None = None, **attrs: str | bool) -> Element:
        """The one element that matches; an AssertionError otherwise."""
        found = self.find_all(tag, **attrs)
        assert len(found) == 1, f"{len(found)} elements match {tag} {attrs}"
        return found[0]

    def by_id(self, ident: str) -> Element:
        """The element of id `ident`; an AssertionError when there is not exactly one."""
        return self.one(id=ident)

    def maybe_id(self, ident: str) -> Element | None:
        """The element of id `ident`, or None."""
        found = self.find_all(id=ident)
        assert len(found) <= 1, f"{len(found)} elements have id {ident}"
        return found[0] if found else None

    def hrefs(self) -> list[str]:
        """Every `href` and `src` inside."""
        return [v for e in self.iter() for k, v in e.attrs.items() if k in ("href", "src") and v]


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {}, None)
        self.current = self.root

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, dict(attrs), self.current)
        self.current.children.append(element)
        if tag not in _VOID:
            self.current = element

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.current.children.append(Element(tag, dict(attrs), self.current))

    def handle_endtag(self, tag: str) -> None:
        node: Element | None = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:
            self.current = node.parent

    def handle_data(self, data: str) -> None:
        self.current.children.append(data)


def parse(text: str) -> Element:
    """The element tree of an HTML page or fragment."""
    builder = _Builder()
    builder.feed(text)
    builder.close()
    return builder.root
