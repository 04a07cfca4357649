"""YAML as the `.ai/` layer writes it: timestamps and dates stay the text they were written as, no aliases.

Seals hash the stamp text, so a loader that turned `2026-09-04T02:54:00Z` into a datetime would break every
seal. Integers, booleans and null resolve as usual.

Aliases (`*name`) are refused (`YamlAliases`): a 530-byte document of nested ten-fold aliases expands to
gigabytes, and nothing svc reads needs one.

Plan records are many and simple, so a document is first offered to the record reader, a line-by-line reader
of that simple shape: block mappings of plain keys (`[A-Za-z_][A-Za-z0-9_-]*`) and block sequences, nested by
indentation, whose leaves are one-line scalars: plain (resolved as the loader's implicit resolvers do: null,
bool, int, float, else text; null, booleans and decimal integers built here, other numbers by PyYAML's own
constructors), double-quoted (with YAML's escapes),
single-quoted, `[]`, `{}` and flow sequences of words and quoted scalars (`[I0001, "a b"]`); comments, blank
lines, a leading `---`, trailing spaces and CRLF line ends. It answers exactly what the loader answers (types,
values, key order, a repeated key's last value at its first place) or gives up. It gives up on anything else:
a tab, a multi-line or block scalar (`|`, `>`), any other flow collection, an anchor, tag or alias, a `?` key,
a quoted key, a plain scalar that starts with an indicator or holds `: `, a document that is not a
collection, a text that is not UTF-8, starts with a byte order mark or holds a character outside YAML's
printable set, nesting deeper than 64 levels.

A document it gives up on goes through PyYAML unchanged, so a document the loader refuses is still refused,
the same way: a text without a `*` cannot hold an alias and is loaded in one pass of the C loader; a text with
one is first scanned event by event (nothing is expanded) and refused at its first alias.
"""

from __future__ import annotations

import codecs
import functools
import re
from itertools import chain
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from types import ModuleType

__all__ = ["YamlAliases", "YamlError", "dump_yaml", "load_yaml"]


class YamlError(ValueError):
    """The text is not YAML svc reads; `problem` and `problem_mark` are PyYAML's words and place, when it gave them."""

    def __init__(self, message: str, *, problem: str | None = None, problem_mark: Any = None) -> None:
        super().__init__(message)
        self.problem = problem
        self.problem_mark = problem_mark


class YamlAliases(YamlError):
    """The document uses an alias, which svc does not read."""

    def __init__(self, line: int) -> None:
        super().__init__(f"uses YAML aliases, which svc does not read (line {line})")
        self.line = line


class _PyYaml:
    """PyYAML as svc uses it, imported with the first document to parse or to dump.

    A read that finds every record in the plan's parse cache never imports it.
    """

    def __init__(self) -> None:
        import yaml

        base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

        class TextStampLoader(base):  # type: ignore[misc]
            """A safe loader without the implicit timestamp resolver."""

        TextStampLoader.yaml_implicit_resolvers = {
            first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
            for first, resolvers in base.yaml_implicit_resolvers.items()
        }

        class NoAliasDumper(yaml.SafeDumper):
            def ignore_aliases(self, data: Any) -> bool:
                return True

        self.yaml: ModuleType = yaml
        self.base: Any = base
        self.loader: Any = TextStampLoader
        self.dumper: Any = NoAliasDumper
        self.constructor = yaml.constructor.SafeConstructor()


@functools.cache
def _pyyaml() -> _PyYaml:
    return _PyYaml()


def load_yaml(text: str | bytes) -> Any:
    """Parse one YAML document, keeping timestamps as text.

    Raises:
        YamlAliases: the document uses an alias.
        YamlError: the text is not YAML.
    """
    try:
        return _read_records(text)
    except _Unsure:
        pass
    py = _pyyaml()
    yaml: Any = py.yaml
    try:
        if ("*" in text) if isinstance(text, str) else (b"*" in text):
            for event in yaml.parse(text, Loader=py.base):
                if isinstance(event, yaml.AliasEvent):
                    mark = event.start_mark
                    raise YamlAliases(mark.line + 1 if mark is not None else 0)
        return yaml.load(text, Loader=py.loader)
    except yaml.YAMLError as exc:
        problem, mark = getattr(exc, "problem", None), getattr(exc, "problem_mark", None)
        raise YamlError(str(exc), problem=problem, problem_mark=mark) from exc


# ---------------------------------------------------------------------------------------------------------------
# The record reader: the simple shape of `.ai/` records, read line by line.


class _Unsure(Exception):
    """The record reader cannot prove it reads this document as PyYAML does."""


# Characters the record reader accepts anywhere: line feed and YAML's printable set, minus what it leaves to
# PyYAML (tab, carriage return outside CRLF, NEL, the Unicode line and paragraph separators, the byte order mark,
# DEL, C0 and C1 controls, surrogates). `_OUTSIDE` finds any other character; a text whose UTF-8 bytes are all
# in `_ASCII` (carriage returns are checked apart) has none, which is cheaper to prove. `_OUTSIDE` is compiled
# on its first use (by `re`'s cache), not at import.
_OUTSIDE = "[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]"
_ASCII = bytes([0x0A, 0x0D, *range(0x20, 0x7F)])
# A plain key and the value indicator, `key:` ending the line or `key: ` before the rest (group 2), which is
# a value or a comment. Lines reach the reader without trailing spaces.
_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_-]{0,127}):(?: +(.+))?$")
# A double-quoted scalar without escapes that ends its line, the most common value of a record.
_SIMPLE_DOUBLE = re.compile(r'"([^"\\]*)"')
_DOUBLE = re.compile(r'"((?:[^"\\]|\\.)*)"')
_SINGLE = re.compile(r"'((?:[^']|'')*)'")
# An item of a one-line flow sequence: a word of safe characters, a double-quoted or a single-quoted scalar.
_FLOW_ITEM = re.compile(rf"([A-Za-z0-9_][A-Za-z0-9_./-]*)|{_DOUBLE.pattern}|{_SINGLE.pattern}")
_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)")
_ESCAPES = {
    "0": "\0",
    "a": "\x07",
    "b": "\x08",
    "t": "\t",
    "n": "\n",
    "v": "\x0b",
    "f": "\x0c",
    "r": "\r",
    "e": "\x1b",
    " ": " ",
    '"': '"',
    "/": "/",
    "\\": "\\",
    "N": "\x85",
    "_": "\xa0",
    "L": "\u2028",
    "P": "\u2029",
}
# First characters a plain scalar may not start with (`-` is handled apart: `-5` is plain, `- x` is not).
_INDICATORS = frozenset(",[]{}#&*!|>'\"%@`?:")
_DEPTH = 64
_NULL = "tag:yaml.org,2002:null"
_BOOL = "tag:yaml.org,2002:bool"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_MERGE = "tag:yaml.org,2002:merge"
_VALUE = "tag:yaml.org,2002:value"
_YAML = "tag:yaml.org,2002:yaml"
_BOMS = (codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


# Short plain scalars recur from record to record (keys, `true`, `p1`, dates): their values, up to a bound.
_PLAINS: dict[str, Any] = {}
_PLAINS_MAX = 4096


def _plain(value: str) -> Any:
    """A plain scalar resolved and constructed as the loader does: null, bool, int, float, else text."""
    try:
        return _PLAINS[value]
    except KeyError:
        pass
    result = _construct_plain(value)
    if len(value) <= 40 and len(_PLAINS) < _PLAINS_MAX:
        _PLAINS[value] = result
    return result


#: Every first character the loader has an implicit resolver for (null, bool, int, float, merge, value and the
#: indicators). A plain scalar starting with any other character is text (a test holds this set to the loader's
#: table): a record's keys and most of its values, all of a share file's.
_RESOLVED_FIRST = frozenset("!&*+-.0123456789<=FNOTYfnoty~")
# The loader's implicit resolvers (PyYAML's safe loader less the timestamp one), written out so that a record
# reads without importing PyYAML; a test holds them to the loader's own on every first character and on
# generated scalars. Words first, then the numeric patterns in the order the loader tries them (float, int).
_NULL_WORDS = frozenset(("", "~", "null", "Null", "NULL"))
_BOOL_WORDS = {
    word: value
    for words, value in (
        ("yes Yes YES true True TRUE on On ON", True),
        ("no No NO false False FALSE off Off OFF", False),
    )
    for word in words.split()
}
_FLOAT_SHAPE = (
    r"(?:[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?"
    r"|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))"
)
_INT_SHAPE = (
    r"(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)"
)
# The tags the safe constructor refuses: merge, value, and the indicators alone.
_WORD_TAGS = {"<<": _MERGE, "=": _VALUE, "!": _YAML, "&": _YAML, "*": _YAML}
# A decimal integer without `_`, which the loader constructs as Python's `int` would.
_DECIMAL = r"[-+]?(?:0|[1-9][0-9]*)"


def _tag(value: str) -> str | None:
    """The tag the loader's implicit resolvers give a plain scalar, None for text."""
    if value[0] not in _RESOLVED_FIRST:
        return None
    if value in _NULL_WORDS:
        return _NULL
    if value in _BOOL_WORDS:
        return _BOOL
    if value[0] in "+-.0123456789":
        if re.fullmatch(_FLOAT_SHAPE, value):
            return _FLOAT
        if value[0] != "." and re.fullmatch(_INT_SHAPE, value):
            return _INT
        return None
    return _WORD_TAGS.get(value)


def _construct_plain(value: str) -> Any:
    tag = _tag(value)
    if tag is None:
        return value
    if tag == _NULL:
        return None
    if tag == _BOOL:
        return _BOOL_WORDS[value]
    if tag == _INT and re.fullmatch(_DECIMAL, value):
        return int(value)
    py = _pyyaml()
    node = py.yaml.ScalarNode(tag, value)
    try:
        if tag == _INT:
            return py.constructor.construct_yaml_int(node)
        if tag == _FLOAT:
            return py.constructor.construct_yaml_float(node)
    except Exception as exc:  # whatever PyYAML makes of it (e.g. an int too long to convert) is PyYAML's to say
        raise _Unsure from exc
    raise _Unsure  # `_WORD_TAGS`: tags the safe constructor refuses


def _after(tail: str) -> None:
    """What may follow a quoted scalar or `[]`/`{}` on its line: nothing, or a comment after a space."""
    if tail and (tail[0] != " " or tail.lstrip(" ")[:1] != "#"):
        raise _Unsure


def _unescape(match: re.Match[str]) -> str:
    code = match.group(1)
    if len(code) == 1:
        try:
            return _ESCAPES[code]
        except KeyError:
            raise _Unsure from None
    point = int(code[1:], 16)
    if 0xD800 <= point <= 0xDFFF or point > 0x10FFFF:
        raise _Unsure
    return chr(point)


def _scalar(rest: str) -> Any:
    """The value written on the rest of a line (no leading space, no trailing space, not a comment)."""
    first = rest[0]
    if first == '"':
        match = _DOUBLE.match(rest)
        if match is None:
            raise _Unsure
        _after(rest[match.end() :])
        text = match.group(1)
        return _ESCAPE.sub(_unescape, text) if "\\" in text else text
    if first == "'":
        match = _SINGLE.match(rest)
        if match is None:
            raise _Unsure
        _after(rest[match.end() :])
        return match.group(1).replace("''", "'")
    if first in _INDICATORS:
        head = rest[:2]
        if head == "[]":
            _after(rest[2:])
            return []
        if head == "{}":
            _after(rest[2:])
            return {}
        if first == "[":
            return _flow_sequence(rest)
        raise _Unsure
    if first == "-" and (len(rest) == 1 or rest[1] == " "):
        raise _Unsure
    cut = rest.find(" #")
    if cut >= 0:
        rest = rest[:cut].rstrip(" ")
    if ": " in rest or rest[-1] == ":":
        raise _Unsure
    return _plain(rest)


def _flow_sequence(rest: str) -> list[Any]:
    """A one-line flow sequence of plain words (`[I0001, README.md]`) and quoted scalars."""
    items: list[Any] = []
    end = len(rest)
    pos = 1
    while True:
        while pos < end and rest[pos] == " ":
            pos += 1
        match = _FLOW_ITEM.match(rest, pos)
        if match is None:
            raise _Unsure
        word, double, single = match.groups()
        if word is not None:
            items.append(_plain(word))
        elif double is not None:
            items.append(_ESCAPE.sub(_unescape, double) if "\\" in double else double)
        else:
            items.append(single.replace("''", "'"))
        pos = match.end()
        while pos < end and rest[pos] == " ":
            pos += 1
        if pos < end and rest[pos] == ",":
            pos += 1
            continue
        if pos < end and rest[pos] == "]":
            _after(rest[pos + 1 :])
            return items
        raise _Unsure


def _starts_node(rest: str) -> bool:
    """Whether the rest of a `- ` line opens a collection (a nested entry or a mapping) rather than a scalar."""
    return rest == "-" or rest[:2] == "- " or _KEY.match(rest) is not None


def _node(lines: list[tuple[int, str]], i: int, col: int, depth: int) -> tuple[Any, int]:
    """The block collection whose first line is `lines[i]`, at column `col`; the value and the next line's index."""
    if depth > _DEPTH:
        raise _Unsure
    content = lines[i][1]
    if content == "-" or content[:2] == "- ":
        return _sequence(lines, i, col, depth)
    return _mapping(lines, i, col, depth)


def _mapping(lines: list[tuple[int, str]], i: int, col: int, depth: int) -> tuple[dict[Any, Any], int]:
    result: dict[Any, Any] = {}
    n = len(lines)
    while True:
        content = lines[i][1]
        match = _KEY.match(content)
        if match is None:
            raise _Unsure
        name, rest = match.groups()
        key = _PLAINS[name] if name in _PLAINS else _plain(name)
        i += 1
        if rest is not None and rest[0] != "#":
            simple = _SIMPLE_DOUBLE.fullmatch(rest)
            value = simple.group(1) if simple is not None else _scalar(rest)
        elif i < n:
            indent, following = lines[i]
            if indent > col:
                value, i = _node(lines, i, indent, depth + 1)
            elif indent == col and (following == "-" or following[:2] == "- "):
                value, i = _sequence(lines, i, col, depth + 1)
            else:
                value = None
        else:
            value = None
        result[key] = value
        if i >= n:
            return result, i
        indent = lines[i][0]
        if indent < col:
            return result, i
        if indent > col:
            raise _Unsure


def _sequence(lines: list[tuple[int, str]], i: int, col: int, depth: int) -> tuple[list[Any], int]:
    result: list[Any] = []
    n = len(lines)
    while True:
        content = lines[i][1]
        if content == "-":
            rest = ""
        elif content[:2] == "- ":
            rest = content[2:].lstrip(" ")
        else:  # the end of a sequence written at its mapping's column
            return result, i
        if rest and rest[0] != "#":
            simple = _SIMPLE_DOUBLE.fullmatch(rest)
            if simple is not None:
                value = simple.group(1)
                i += 1
            elif _starts_node(rest):
                column = col + len(content) - len(rest)
                lines[i] = (column, rest)
                value, i = _node(lines, i, column, depth + 1)
            else:
                value = _scalar(rest)
                i += 1
        else:
            i += 1
            if i < n and lines[i][0] > col:
                value, i = _node(lines, i, lines[i][0], depth + 1)
            else:
                value = None
        result.append(value)
        if i >= n:
            return result, i
        indent = lines[i][0]
        if indent < col:
            return result, i
        if indent > col:
            raise _Unsure


def _lines(text: str) -> list[tuple[int, str]]:
    """(indent, content without trailing spaces) of every line that is neither blank nor a comment."""
    lines: list[tuple[int, str]] = []
    for line in text.split("\n"):
        content = line.lstrip(" ")
        if content and content[0] != "#":
            lines.append((len(line) - len(content), content.rstrip(" ")))
    return lines


class _Slow(Exception):
    """The flat-record pass leaves this document to the line-by-line reader."""


# One entry of a top-level mapping: a key line (`key:`, or `key:`, spaces and a value) and the lines under it,
# which start with a space or a dash (group 4, each ending with its line feed).
_ENTRY = re.compile(r"([A-Za-z_][A-Za-z0-9_-]{0,127}):(?:( +)([^\n]+))?\n((?:[ -][^\n]*\n)*)")
_MISSING = object()


def _flat(text: str) -> dict[Any, Any]:
    """A top-level mapping read entry by entry, its lists of scalars a block at a time; `_Slow` on doubt.

    The common record, in fewer steps than line by line: a document of key lines with what belongs to each key
    under it, no blank or comment line at the top level, no trailing space, ending with a line feed. Each value
    is what the line-by-line reader would give for the same lines (a list of scalars on lines of the same
    indent is read whole; any other block is given to it), so any document this pass does not take whole goes
    to that reader instead. A plain scalar already resolved (`_PLAINS`) is known to be one whole scalar.
    """
    entries = _ENTRY.findall(text)
    # The entries found do not overlap: they are the whole text when their lengths (each with its `:` and its
    # key line's line feed) add up to the text's.
    if sum(map(len, chain.from_iterable(entries))) + 2 * len(entries) != len(text):
        raise _Slow
    result: dict[Any, Any] = {}
    plains = _PLAINS
    for name, _, rest, block in entries:
        key = plains[name] if name in plains else _plain(name)
        if rest:
            if block or rest[0] == "#":
                raise _Slow
            value = plains.get(rest, _MISSING)
            if value is _MISSING:
                simple = _SIMPLE_DOUBLE.fullmatch(rest)
                value = simple.group(1) if simple is not None else _scalar(rest)
            result[key] = value
        else:
            result[key] = _block(block) if block else None
    return result


def _block(block: str) -> Any:
    """The value written on the lines under a key: a list of scalars read whole, else the line-by-line reading."""
    indent = len(block) - len(block.lstrip(" "))
    lead = block[: indent + 2]
    # Every line starts with `lead`: the first, and each one after a line feed (the last ends the block).
    if lead[-2:] == "- " and block.count("\n" + lead) == block.count("\n") - 1:
        items: list[Any] = []
        plains = _PLAINS
        for rest in block[indent + 2 : -1].split(f"\n{lead}"):
            if rest in plains:
                items.append(plains[rest])
                continue
            rest = rest.lstrip(" ")
            simple = _SIMPLE_DOUBLE.fullmatch(rest)
            if simple is not None:
                items.append(simple.group(1))
            elif not rest or rest[0] == "#" or _starts_node(rest):
                break
            else:
                items.append(_scalar(rest))
        else:
            return items
    lines = _lines(block)
    if not lines:
        raise _Slow
    value, i = _node(lines, 0, lines[0][0], 1)
    if i != len(lines):
        raise _Slow
    return value


def _read_records(text: str | bytes) -> Any:
    """The document as the record reader reads it, or `_Unsure` when it cannot prove PyYAML reads the same."""
    try:
        if isinstance(text, bytes):
            if text.startswith(_BOMS):
                raise _Unsure
            data, text = text, text.decode("utf-8")
        elif isinstance(text, str):
            data = text.encode("utf-8")
        else:  # a buffer PyYAML may still take
            raise _Unsure
    except UnicodeError:  # not UTF-8, or a lone surrogate
        raise _Unsure from None
    if "\r" in text:
        text = text.replace("\r\n", "\n")
        if "\r" in text:
            raise _Unsure
    if data.translate(None, _ASCII) and re.search(_OUTSIDE, text):
        raise _Unsure
    if " \n" not in text and text[-1:] != " ":
        try:
            return _flat(text if text[-1:] == "\n" else text + "\n")
        except _Slow:
            pass
    return _by_lines(text)


def _by_lines(text: str) -> Any:
    """A text `_read_records` accepts, read line by line."""
    lines = _lines(text)
    if lines and lines[0] == (0, "---"):
        del lines[0]
    if not lines:
        return None
    if lines[0][0]:
        raise _Unsure
    value, i = _node(lines, 0, 0, 0)
    if i != len(lines):
        raise _Unsure
    return value


def dump_yaml(data: Any) -> str:
    """Render data as deterministic block YAML (key order kept, UTF-8, no aliases)."""
    py = _pyyaml()
    text: str = py.yaml.dump(
        data,
        Dumper=py.dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=1000,
    )
    return text
