"""The record reader of `load_yaml`: for every document it accepts, exactly PyYAML's answer; otherwise PyYAML."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from svc.layer import YamlAliases, YamlError, load_yaml
from svc.layer._yaml import _ESCAPES, _RESOLVED_FIRST, _by_lines, _flat, _pyyaml, _read_records, _Slow, _Unsure
from tests.conftest import ROOT, SHARED_CORPUS

SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class _GaveUp:
    """The record reader's answer when it gives the document to PyYAML."""


GAVE_UP = _GaveUp()


def typed(value: Any) -> Any:
    """A comparable picture of a loaded value: every type, every key's place, -0.0 and nan told apart."""
    if isinstance(value, dict):
        return ("dict", [(typed(k), typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [typed(item) for item in value])
    if isinstance(value, float) and math.isnan(value):
        return ("float", "nan")
    return (type(value).__name__, repr(value))


def pyyaml(text: str | bytes) -> Any:
    """What PyYAML answers (the loader `load_yaml` falls back to): the typed value, or the error's type."""
    try:
        return typed(yaml.load(text, Loader=_pyyaml().loader))
    except Exception as exc:  # any refusal, compared by type
        return ("error", type(exc).__name__)


def fast(text: str | bytes) -> Any:
    """What the record reader answers: the typed value, or GAVE_UP."""
    try:
        return typed(_read_records(text))
    except _Unsure:
        return GAVE_UP


def through_load_yaml(text: str | bytes) -> Any:
    try:
        return typed(load_yaml(text))
    except YamlAliases as exc:
        return ("error", type(exc).__name__)
    except YamlError as exc:  # compared with PyYAML's refusal (which it carries) by type
        return ("error", type(exc.__cause__).__name__)
    except Exception as exc:  # what PyYAML raises that is not a YAML error (a text it cannot encode)
        return ("error", type(exc).__name__)


def assert_agrees(text: str | bytes) -> bool:
    """The record reader gives up or answers as PyYAML does; `load_yaml` answers as PyYAML does. True if accepted."""
    expected = pyyaml(text)
    got = fast(text)
    if got is not GAVE_UP:
        assert expected[0] != "error", f"accepted a document PyYAML refuses ({expected[1]}): {text!r}"
        assert got == expected, f"differs from PyYAML on {text!r}"
    if "*" not in (text if isinstance(text, str) else text.decode("utf-8", "replace")):
        assert through_load_yaml(text) == expected, f"load_yaml differs from PyYAML on {text!r}"
    return got is not GAVE_UP


# --- (a) differential: the shared corpus and a synthetic plan -------------------------------------------------


def _yaml_files(root: Path) -> list[Path]:
    return sorted(root.rglob("*.yaml"))


def test_every_corpus_document_reads_as_pyyaml_reads_it() -> None:
    if not (SHARED_CORPUS / ".ai" / "repo" / "project").is_dir():
        pytest.skip(f"the shared corpus is not at {SHARED_CORPUS} (clone shared/ beside the repository)")
    files = _yaml_files(SHARED_CORPUS)
    assert len(files) > 400
    accepted = sum(assert_agrees(path.read_bytes()) for path in files)
    assert accepted >= 0.9 * len(files), f"the record reader took only {accepted} of {len(files)}"


@pytest.fixture(scope="module")
def bench_plan() -> Iterator[ModuleType]:
    """`bench/bench_plan.py`, whose generator writes the synthetic plan the benchmarks read."""
    bench = ROOT / "bench"
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(bench))
        spec = importlib.util.spec_from_file_location("bench_plan", bench / "bench_plan.py")
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        patch.setitem(sys.modules, "bench_plan", module)
        spec.loader.exec_module(module)
        yield module


def test_every_synthetic_record_reads_as_pyyaml_reads_it(bench_plan: ModuleType, tmp_path: Path) -> None:
    root = bench_plan.generate(tmp_path / "plan", 20, 1_000)
    files = _yaml_files(root / ".ai")
    assert len(files) == 1 + 20 + 1_000
    accepted = sum(assert_agrees(path.read_bytes()) for path in files)
    assert accepted == len(files), "every synthetic record has the simple shape"
    issue = _read_records((root / ".ai" / "repo" / "project" / "issues" / "I0000.yaml").read_bytes())
    assert issue["parallel_safe"] is True
    assert issue["created_at"] == "2026-10-01"
    assert issue["evidence"] == [{"covers": "suite", "type": "test", "command": "pytest", "result": "passed"}]


# --- (b) properties: records of the supported shape, rendered many ways, with hostile scalars -------------------

HOSTILE = [
    "yes", "Yes", "YES", "yEs", "no", "NO", "on", "Off", "true", "True", "TRUE", "tRUE", "false", "y", "n",
    "~", "null", "Null", "NULL", "nULL", "", " ", "0", "-0", "+1", "12", "-12", "007", "0o17", "0x1F", "0b101",
    "1_000", "1:20", "-1:20", "190:20:30", ".5", "1.5", "-1.5e+3", "1e5", ".inf", "-.Inf", ".NaN", "nan",
    "2026-01-01", "2026-11-01T10:00:00Z", "2001-12-14 21:59:43.10 -5", "-", "--", "---", "...", "- x", "-x",
    "a: b", "a:b", "a:", ":a", "?", "? a", "#x", "a #b", "a#b", "'quoted'", '"quoted"', "it's", 'say "hi"',
    "back\\slash", "[a]", "{a: b}", "[]", "{}", "&anchor", "*alias", "!tag", "!!str x", "|", ">", "%x", "@x",
    "`x`", "=", "<<", "é", "日本語", "\xa0x", "x\xa0", "\u3000", "emoji 😀", "a  b", " lead", "trail ",
    "sha256:0123abcd", "http://x/y", "a, b", "x\ty", "x\ny", "\\", "'", '"', "''", "a'b", "12345678901234567890",
]  # fmt: skip
PLAIN_KEYS = st.sampled_from(["id", "title", "a-b", "_x", "x1", "scope", "yes", "null", "on", "Off", "NULL"])
ODD_KEYS = st.sampled_from(["a b", '"quoted"', "'q'", "1", "~", "<<", "-k", "k:", "é"])
KEYS = st.one_of(*[PLAIN_KEYS] * 8, ODD_KEYS)
WORD = st.text(st.sampled_from("abcxyz019_-./:"), min_size=1, max_size=8)
PRINTABLE = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=12)
SCALAR = st.one_of(
    WORD, WORD, WORD, st.sampled_from(HOSTILE), st.sampled_from(HOSTILE), PRINTABLE, st.text(max_size=12)
)


def _double(text: str, style: int) -> str:
    if style == 0:
        return json.dumps(text, ensure_ascii=False)
    if style == 1:
        return json.dumps(text)
    out = []
    for ch in text:  # YAML's own escapes, one per character where there is one
        named = {v: k for k, v in _ESCAPES.items() if k not in "/ "}
        if ch in named:
            out.append("\\" + named[ch])
        elif ord(ch) < 0x100 and style == 2:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'


@st.composite
def rendered(draw: st.DrawFn) -> str:
    """One scalar written some way: plain as it is, double-quoted (JSON or YAML escapes), single-quoted."""
    text: str = draw(SCALAR)
    how = draw(st.integers(0, 5))
    written: str
    if how == 0:
        written = text
    elif how <= 3:
        written = _double(text, how - 1)
    elif how == 4:
        written = "'" + text.replace("'", "''") + "'"
    elif draw(st.booleans()):
        written = draw(st.sampled_from(["[]", "{}", "[a, b]", "[yes,1, '2', \"x\"]", "[ 1.5 ]", "[a,]", "[a b]"]))
    else:  # a flow sequence of words and quoted scalars
        items = draw(st.lists(st.one_of(WORD, st.sampled_from(HOSTILE).map(lambda h: _double(h, 0))), max_size=4))
        written = "[" + draw(st.sampled_from([",", ", ", " , "])).join(items) + "]"
    tail: str = draw(st.sampled_from(["", "", "", "", "", " ", "  # note", " #", "#x", "x", " y"]))
    return written + tail


@st.composite
def value_lines(draw: st.DrawFn, key: str, col: int, depth: int) -> list[str]:
    """The lines of one `key: value` entry at column `col`."""
    pad = " " * col
    kind = draw(st.integers(0, 5 if depth < 2 else 1))
    if kind <= 1:
        return [f"{pad}{key}: {draw(rendered())}"]
    if kind == 2:
        return [f"{pad}{key}:" + draw(st.sampled_from(["", " ", " # c"]))]
    inner = col + draw(st.sampled_from([0, 2, 4]))
    lines = [f"{pad}{key}:"]
    if kind == 5:  # a nested mapping
        inner = max(inner, col + 1)
        for sub in draw(st.lists(KEYS, min_size=1, max_size=3)):
            lines += draw(value_lines(sub, inner, depth + 1))
        return lines
    gap = draw(st.sampled_from([" ", "  ", "   "]))
    for _ in range(draw(st.integers(1, 3))):
        if kind == 3:  # a block sequence of scalars
            lines.append(f"{' ' * inner}-{gap}{draw(rendered())}")
        else:  # a block sequence of flat mappings
            fields = draw(st.lists(KEYS, min_size=1, max_size=3))
            item_col = inner + 1 + len(gap)
            first, *rest = [draw(value_lines(name, item_col, depth + 1)) for name in fields]
            lines.append(f"{' ' * inner}-{gap}{first[0].lstrip(' ')}")
            lines += first[1:]
            for entry in rest:
                lines += entry
    return lines


@st.composite
def records(draw: st.DrawFn) -> str:
    """A record of the supported shape, with comments, blank lines, a `---`, trailing spaces, CRLF at random."""
    lines: list[str] = []
    if draw(st.booleans()):
        lines.append("---")
    for key in draw(st.lists(KEYS, min_size=1, max_size=6)):
        for line in draw(value_lines(key, 0, 0)):
            lines.append(line + draw(st.sampled_from(["", "", "", "  "])))
            if draw(st.integers(0, 9)) == 0:
                lines.append(draw(st.sampled_from(["", "# comment", "   # indented comment", "  "])))
    end = draw(st.sampled_from(["\n", "\r\n"]))
    return end.join(lines) + draw(st.sampled_from(["", end]))


@SETTINGS
@given(records())
def test_records_read_as_pyyaml_reads_them(text: str) -> None:
    assert_agrees(text)
    assert_agrees(text.encode("utf-8"))


def _outcome(read: Any, text: str) -> Any:
    try:
        return typed(read(text))
    except _Unsure:
        return GAVE_UP


@SETTINGS
@given(records())
def test_the_flat_pass_reads_what_the_line_reader_reads(text: str) -> None:
    """Where the flat pass takes a document whole, it answers what the line-by-line reader answers."""
    text = "\n".join(line.rstrip(" ") for line in text.replace("\r\n", "\n").split("\n")).rstrip(" ") + "\n"
    try:
        flat = typed(_flat(text))
    except _Slow:
        return
    except _Unsure:
        flat = GAVE_UP
    assert flat == _outcome(_by_lines, text), f"the flat pass differs on {text!r}"


def test_the_flat_pass_takes_every_synthetic_record_whole(bench_plan: ModuleType, tmp_path: Path) -> None:
    root = bench_plan.generate(tmp_path / "plan", 4, 200)
    for path in _yaml_files(root / ".ai" / "repo" / "project"):
        text = path.read_text(encoding="utf-8")
        assert typed(_flat(text)) == pyyaml(text), path.name


def test_the_flat_pass_leaves_doubtful_documents_to_the_line_reader() -> None:
    for text in (
        "a: 1\n\nb: 2\n",  # a blank line
        "# c\na: 1\n",  # a comment line
        "a: 1\n  # c\n",  # a comment under a scalar
        "a: # c\n  - x\n",  # a comment after the key
        "---\na: 1\n",
        "- a\n",
        "a: x\n  more\n",  # a continued scalar
        "a:\n  - x\n  b: y\n",  # a block the line reader refuses
        "a: 1\n!x\nb: 2\n",  # a line between entries that is no entry
        "a: 1\nb: 2\nc d\n",  # a last line that is no entry
        "[a]\nb: 2\n",  # a first line that is no entry
    ):
        with pytest.raises(_Slow):
            _flat(text)


LINE_PIECES = ["a", "b", "yes", "1", "-", " ", "  ", ":", ": ", "#", " #", "'", '"', "[", "]", "{", "}", ",", "\\"]


@SETTINGS
@given(st.lists(st.lists(st.sampled_from([*LINE_PIECES, "&", "*", "!", "|", ">", "\t", "\r", "é"]), max_size=8)))
def test_arbitrary_line_soup_is_never_misread(pieces: list[list[str]]) -> None:
    assert_agrees("\n".join("".join(line) for line in pieces))


def test_the_shapes_the_generator_covers_are_accepted() -> None:
    """The grammar's plain renderings of ordinary values are read by the record reader itself."""
    text = (
        "---\nid: I0001  \ntitle: 'It''s here'\nwhy: \"tab\\there \\u00e9 \\/ \\\"q\\\"\"\n"
        "count: 12\nratio: 1.5\nhex: 0x1F\nsexa: 1:20\nunder: 1_000\nnone: ~\nempty:\nflag: Off\n"
        "when: 2026-01-01\nlist:\n- a\n- 'b'\n-\nnested:\n  - - x\n    - y\n  - k: v\n    j: [a, 'b', 1]\n"
        "map:\n  inner: {}\n  deeper:\n    leaf: yes # comment\n"
    )
    assert fast(text) is not GAVE_UP
    assert fast(text) == pyyaml(text)
    assert fast(text.replace("\n", "\r\n")) == pyyaml(text)
    assert fast("a: \xe9 \u65e5 \U0001f600\r\nb: 1\r\n") == pyyaml("a: \xe9 \u65e5 \U0001f600\nb: 1\n")
    loaded = _read_records(text)
    assert (loaded["hex"], loaded["sexa"], loaded["under"]) == (31, 80, 1000)
    assert loaded["nested"] == [["x", "y"], {"k": "v", "j": ["a", "b", 1]}]


@pytest.mark.parametrize("scalar", HOSTILE)
def test_each_hostile_scalar_plain_and_quoted(scalar: str) -> None:
    for written in (scalar, json.dumps(scalar, ensure_ascii=False), "'" + scalar.replace("'", "''") + "'"):
        assert_agrees(f"key: {written}\n")
        assert_agrees(f"list:\n  - {written}\n")
        assert_agrees(f"- k: {written}\n  other: 1\n")


@pytest.mark.parametrize("escape", sorted(_ESCAPES))
def test_each_double_quoted_escape(escape: str) -> None:
    assert assert_agrees(f'key: "a\\{escape}b"\n')


def test_duplicate_keys_keep_the_first_place_and_the_last_value() -> None:
    text = "a: 1\nb: 2\na: 3\nyes: x\ntrue: y\n"
    assert fast(text) == pyyaml(text)
    assert list(_read_records(text).items()) == [("a", 3), ("b", 2), (True, "y")]


# --- (c) what the record reader leaves to PyYAML ---------------------------------------------------------------

GIVEN_UP = {
    "block scalar": "a: |\n  text\n",
    "folded scalar": "a: >-\n  text\n",
    "alias": "a: &x 1\nb: *x\n",
    "anchor": "a: &x 1\n",
    "tag": "a: !!str 1\n",
    "tab": "a:\t1\n",
    "tab in a value": "a: x\ty\n",
    "multi-line plain": "a: one\n  two\n",
    "multi-line double-quoted": 'a: "one\n  two"\n',
    "multi-line single-quoted": "a: 'one\n  two'\n",
    "flow mapping with content": "a: {b: 1}\n",
    "question-mark key": "? a\n: 1\n",
    "quoted key": '"a": 1\n',
    "two documents": "a: 1\n---\nb: 2\n",
    "document end": "a: 1\n...\n",
    "directive": "%YAML 1.1\n---\na: 1\n",
    "a scalar document": "text\n",
    "byte order mark": "\ufeffa: 1\n",
    "lone carriage return": "a: 1\rb: 2\n",
    "next line character": "a: x\x85y\n",
    "line separator": "a: x\u2028y\n",
    "control character": "a: x\x01y\n",
    "delete beside non-ASCII text": "a: \xe9\x7f\n",
    "lone surrogate": "a: \ud800\n",
    "merge key": "a: 1\n<<: {}\n",
    "value indicator inside a plain scalar": "a: b: c\n",
    "unknown escape": 'a: "\\q"\n',
    "surrogate escape": 'a: "\\ud800"\n',
    "indented root": "  a: 1\n",
    "uneven indentation": "a:\n  - x\n   - y\n",
}


@pytest.mark.parametrize("name", sorted(GIVEN_UP))
def test_the_record_reader_gives_up_and_pyyaml_answers(name: str) -> None:
    text = GIVEN_UP[name]
    assert fast(text) is GAVE_UP
    if "*" not in text:
        assert through_load_yaml(text) == pyyaml(text)


def test_a_document_pyyaml_refuses_is_refused_the_same_way() -> None:
    for text in (
        "a: b: c\n",
        "a: 'x\n",
        'a: "x" y\n',
        "a: [] x\n",
        "- [a]b\n",
        "a:\n  - x\n  b: 1\n",
        "a: [1, 2\n",
        "- a\nb: 1\n",
    ):
        with pytest.raises(yaml.YAMLError) as refused:
            yaml.load(text, Loader=_pyyaml().loader)
        with pytest.raises(YamlError) as ours:
            load_yaml(text)
        # PyYAML's error, its words and its place, behind svc's own.
        assert type(ours.value.__cause__) is type(refused.value)
        assert str(ours.value) == str(refused.value)
        assert ours.value.problem_mark is not None


def test_aliases_are_still_refused() -> None:
    with pytest.raises(YamlAliases) as refused:
        load_yaml("id: I0001\nbase: &b x\ncopy: *b\n")
    assert refused.value.line == 3
    with pytest.raises(YamlAliases):
        load_yaml(b"items:\n  - &a [1]\n  - *a\n")


def test_a_bytes_document_that_is_not_utf8_goes_to_pyyaml() -> None:
    utf16 = "a: é\n".encode("utf-16")
    assert fast(utf16) is GAVE_UP
    assert load_yaml(utf16) == {"a": "é"}
    assert fast(b"a: \xff\n") is GAVE_UP
    with pytest.raises(YamlError):
        load_yaml(b"a: \xff\n")


# --- (d) load_yaml reads a simple record without PyYAML -------------------------------------------------------


def test_load_yaml_reads_simple_records_without_pyyaml(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("PyYAML was asked to read a simple record")

    monkeypatch.setattr(yaml, "load", refuse)
    monkeypatch.setattr(yaml, "parse", refuse)
    record = b'id: I0001\ntitle: "A *star*"\ndepends_on: []\nscope:\n  - src/a\nparallel_safe: true\n'
    assert load_yaml(record) == {
        "id": "I0001",
        "title": "A *star*",
        "depends_on": [],
        "scope": ["src/a"],
        "parallel_safe": True,
    }
    with pytest.raises(AssertionError, match="PyYAML was asked"):
        load_yaml("a: |\n  block\n")


def test_pyyaml_is_imported_only_to_parse() -> None:
    import subprocess

    probe = (
        "import sys\n"
        "from svc.layer._yaml import load_yaml\n"
        "print('yaml' in sys.modules)\n"
        "load_yaml(b'id: I0001\\ntitle: t\\norder: 3\\ndone: true\\nat: 2026-10-01\\nnone: null\\n')\n"
        "print('yaml' in sys.modules)\n"
        "load_yaml(b'ratio: 0.5\\n')\n"
        "print('yaml' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, check=True, timeout=60)
    assert result.stdout.decode().split() == ["False", "False", "True"]


def _loader_tag(value: str) -> str | None:
    """The tag PyYAML's loader (timestamps left as text) resolves a plain scalar to; None for text."""
    table = _pyyaml().loader.yaml_implicit_resolvers
    for tag, regexp in [*table.get(value[:1], []), *table.get(None, [])]:
        if regexp.match(value):
            return str(tag)
    return None


def test_only_plain_scalars_the_loader_may_resolve_consult_it() -> None:
    table = _pyyaml().loader.yaml_implicit_resolvers
    assert None not in table, "a resolver for any first character: every plain scalar would need the loader"
    first = {key for key in table if key}
    assert first <= _RESOLVED_FIRST, f"first characters resolved but not listed: {sorted(first - _RESOLVED_FIRST)}"


# Scalars on the edges of the loader's patterns: every word it resolves, numbers of each form, near misses.
PLAIN_EDGES = [
    "~", "null", "Null", "NULL", "nULL", "yes", "Yes", "YES", "yEs", "no", "No", "NO", "true", "True", "TRUE",
    "tRUE", "false", "False", "FALSE", "on", "On", "ON", "oN", "off", "Off", "OFF", "y", "n", "Y", "N", "t",
    "f", "o", "O", "0", "-0", "+0", "00", "07", "08", "010", "-010", "0_10", "0o7", "0b101", "0b12", "-0b1",
    "0x1F", "0xg", "+0x_1", "1_000", "1__0", "_1", "1_", "190:20:30", "1:60", "1:5:7", "-1:30", "0:30", "1.5",
    "-1.5", "+1.", ".5", "-.5", "1e5", "1.0e5", "1.0e+5", "1.0E-5", "1.e+3", ".inf", "-.inf", "+.Inf", ".INF",
    ".nan", ".NaN", "-.nan", ".Nan", "1:30.5", "2026-10-01", "2026-10-01T10:00:00Z", "2026-10-01t10:00:00",
    "2001-12-14", "12:00", "1.2.3", "v1.2", "<<", "=", "!", "&", "*", "3rd", "4-5",
    "123456789012345678901234567890",
]  # fmt: skip


@pytest.mark.parametrize("value", PLAIN_EDGES)
def test_an_edge_scalar_resolves_as_the_loader_resolves_it(value: str) -> None:
    from svc.layer._yaml import _tag

    assert _tag(value) == _loader_tag(value)
    assert fast(f"v: {value}\n") in (pyyaml(f"v: {value}\n"), GAVE_UP)


@SETTINGS
@given(st.text(alphabet="0123456789_.:+-eEbxXaAfFiInNoOtTyYsSlLuUrR<=~", min_size=1, max_size=12))
def test_a_plain_scalar_resolves_and_constructs_as_the_loader_does(value: str) -> None:
    from svc.layer._yaml import _tag

    assert _tag(value) == _loader_tag(value)
    text = f"v: {value}\n"
    assert fast(text) in (pyyaml(text), GAVE_UP)


def test_a_share_file_of_plain_text_reads_without_pyyaml() -> None:
    code = (
        "import sys\n"
        "from svc.layer import load_yaml\n"
        "assert load_yaml(b'schema: svc-seal-domains/v1\\ndomains:\\n  - majordomus.plan-event/v1\\n') == "
        "{'schema': 'svc-seal-domains/v1', 'domains': ['majordomus.plan-event/v1']}\n"
        "assert 'yaml' not in sys.modules, 'PyYAML was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
