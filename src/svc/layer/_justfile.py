"""The recipes of a justfile, read from its text when `just` itself is not there to describe them.

The reading covers the top-level file only (an `import` or `mod` is not followed) and what the command graph
needs: each recipe's name, parameters, doc comment and attributes, and the aliases. A recipe line starts at
column 0 (`name param='default' *rest: deps`, an optional `@` before the name); the comment and attribute lines
directly above it (in any order, no blank line between) give its doc comment (the comment nearest the recipe)
and its attributes (`[confirm]`, `[group('x')]`, `[private]`, `[doc('x')]`, several in one bracket or one per
line, `name: 'arg'` or `name('arg')`). Settings, assignments, `export`, `import`, `mod` and bodies (indented)
are skipped. A line that is none of these is skipped too: `just` itself is the authority on what the file
means, and this reading only lists what it can name with certainty.

The result has the shape `just --dump --dump-format json` gives (`WorkflowDescriptor`), so both readings build
the same command nodes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from svc.layer._env_model import WorkflowDescriptor, WorkflowParameter
from svc.layer._env_workflows import natural_key
from svc.layer._read import clip

__all__ = ["JustfileReading", "read_justfile"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_KEYWORDS = frozenset({"set", "alias", "export", "import", "mod", "unexport"})
_ALIAS = re.compile(r"^alias\s+(?P<alias>[A-Za-z_][A-Za-z0-9_-]*)\s*:=\s*(?P<target>[A-Za-z_][A-Za-z0-9_:-]*)\s*$")
_ATTRIBUTE = re.compile(r"^\s*(?P<name>[A-Za-z_][A-Za-z0-9_-]*)\s*(?:\((?P<paren>.*)\)|:\s*(?P<colon>.*))?\s*$")
_BARE_DEFAULT = re.compile(r"[A-Za-z0-9_.-]+")


@dataclass(frozen=True, slots=True)
class JustfileReading:
    """The public recipes (natural order by name), every recipe name (private ones too) and the aliases.

    `aliases` maps each alias to the recipe it names, in file order.
    """

    recipes: tuple[WorkflowDescriptor, ...] = ()
    names: frozenset[str] = frozenset()
    aliases: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class _Preamble:
    """The comment and attribute lines read since the last blank line or item."""

    doc: str | None = None
    attributes: list[tuple[str, str | None]] = field(default_factory=list)

    def reset(self) -> None:
        self.doc = None
        self.attributes = []


def _unquote(text: str) -> str | None:
    """The value of a quoted string (`'x'`, `"x"`, triple-quoted too), None for anything else."""
    text = text.strip()
    for quote in ('"""', "'''", '"', "'"):
        if len(text) >= 2 * len(quote) and text.startswith(quote) and text.endswith(quote):
            inner = text[len(quote) : -len(quote)]
            return inner.replace('\\"', '"').replace("\\\\", "\\") if quote == '"' else inner
    return None


def _split_top(text: str) -> list[str]:
    """`text` split at the commas outside quotes and parentheses."""
    parts: list[str] = []
    depth, quote, start = 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in (part.strip() for part in parts) if p]


def _attributes(line: str) -> list[tuple[str, str | None]] | None:
    """The attributes of an attribute line `[a, b('x')]` (name, first argument), None if it is not one."""
    stripped = line.strip()
    if not (stripped.startswith("[") and stripped.endswith("]")):
        return None
    out: list[tuple[str, str | None]] = []
    for part in _split_top(stripped[1:-1]):
        match = _ATTRIBUTE.match(part)
        if match is None:
            return None
        raw = match["paren"] if match["paren"] is not None else match["colon"]
        argument = _unquote(_split_top(raw)[0]) if raw and _split_top(raw) else None
        out.append((match["name"], argument))
    return out


def _skip_value(text: str, i: int) -> int | None:
    """The index after the parameter default starting at `i`, None when none starts there.

    A default is a string, a backtick, a parenthesised expression or a bare word.
    """
    if i >= len(text):
        return None
    ch = text[i]
    if ch in "'\"`":
        triple = text[i : i + 3] == ch * 3
        closer = ch * 3 if triple else ch
        j = i + len(closer)
        while j < len(text):
            if ch == '"' and text[j] == "\\":
                j += 2
                continue
            if text.startswith(closer, j):
                return j + len(closer)
            j += 1
        return None
    if ch == "(":
        depth, j, quote = 0, i, ""
        while j < len(text):
            c = text[j]
            if quote:
                if c == quote:
                    quote = ""
            elif c in "'\"`":
                quote = c
            elif c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth == 0:
                    return j + 1
            j += 1
        return None
    match = _BARE_DEFAULT.match(text, i)
    return match.end() if match else None


def _recipe_header(line: str) -> tuple[str, tuple[WorkflowParameter, ...]] | None:
    """The name and parameters of a recipe line (`@name a b='x' *c: deps`), None if the line is not one."""
    text = line[1:] if line.startswith("@") else line
    name_match = _NAME.match(text)
    if name_match is None or name_match[0] in _KEYWORDS:
        return None
    params: list[WorkflowParameter] = []
    i = name_match.end()
    while True:
        while i < len(text) and text[i] in " \t":
            i += 1
        if i >= len(text):
            return None
        if text[i] == ":":
            if text[i + 1 : i + 2] == "=":
                return None  # an assignment `name := value`
            return name_match[0], tuple(params)
        kind = ""
        if text[i] in "*+":
            kind = text[i]
            i += 1
        if text[i : i + 1] == "$":
            i += 1
        param = _NAME.match(text, i)
        if param is None:
            return None
        i = param.end()
        has_default = False
        if text[i : i + 1] == "=":
            end = _skip_value(text, i + 1)
            if end is None:
                return None
            i, has_default = end, True
        variadic = kind in ("*", "+")
        params.append(WorkflowParameter(name=param[0], variadic=variadic, required=not has_default and kind != "*"))


def _doc(line: str) -> str:
    return clip(" ".join(line.lstrip("#").split()), 1000)


def read_justfile(text: str) -> JustfileReading:
    """The recipes and aliases of a justfile's text (see the module docstring for what is read)."""
    recipes: dict[str, WorkflowDescriptor] = {}
    names: set[str] = set()
    aliases: dict[str, str] = {}
    preamble = _Preamble()
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line.strip():
            preamble.reset()
            continue
        if line[0] in " \t":
            continue  # a recipe body or a continuation
        if line.startswith("#"):
            if not line.startswith("#!"):
                preamble.doc = _doc(line)
            continue
        attributes = _attributes(line)
        if attributes is not None:
            preamble.attributes.extend(attributes)
            continue
        alias = _ALIAS.match(line)
        if alias is not None:
            if not any(name == "private" for name, _ in preamble.attributes):
                aliases[alias["alias"]] = alias["target"]
            preamble.reset()
            continue
        header = _recipe_header(line)
        if header is None:
            preamble.reset()
            continue
        name, params = header
        names.add(name)
        found = dict(preamble.attributes)
        doc = found["doc"] if found.get("doc") is not None else preamble.doc
        preamble.reset()
        recipes.pop(name, None)  # a later definition replaces an earlier one
        if name.startswith("_") or "private" in found:
            continue
        recipes[name] = WorkflowDescriptor(
            name=name,
            description=clip(" ".join(doc.split()), 1000) if doc else None,
            group=found.get("group"),
            parameters=params,
            confirm="confirm" in found,
        )
    ordered = sorted(recipes.values(), key=lambda r: natural_key(r.name))
    return JustfileReading(recipes=tuple(ordered), names=frozenset(names), aliases=aliases)
