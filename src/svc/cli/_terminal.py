"""Answers drawn for a terminal: whole text wrapped to its width, tables, trees, colour by status.

- Scalar fields are aligned `key  value` lines; a long value wraps under itself, never cut. Nested records and
  lists follow under a `key:` heading, indented; an empty list reads `(none)`.
- A list of flat records (scalars and lists of scalars) is a table drawn by rich whose cells wrap. When the
  terminal is too narrow for every column to have 8 characters (or its whole width, when narrower), or the
  records nest, each record is a block of `key: value` lines instead, records separated by a blank line.
- Trees where the data is one: `plan waves` (wave → issues), `plan roadmap` (milestone → issues), `mesh peers`.
- `plan validate` is summarised: counts by level and code, the failures in full, then the other findings
  grouped by code, the first few of each with how many more (`--all` shows every finding); so are the
  findings of `plan` and those that serialise `plan waves`.
- Statuses, finding levels, execution states and health are coloured, unless colour is off (`NO_COLOR`).

rich is imported only when a table or a tree is drawn: a view of fields and text is written directly.
"""

from __future__ import annotations

import re
import textwrap
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from svc.cli._plain import field_text, flatten, peer_drawing

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.text import Text

__all__ = ["MIN_COLUMN", "SHOWN_PER_CODE", "SUMMARISED", "render_terminal", "visible_width"]

#: The fewest characters a table column gets before the records are drawn as blocks instead.
MIN_COLUMN = 8
#: A column never needs more than this many characters to be readable (a longer word wraps inside it).
_MAX_NEED = 20
#: How many findings of one code the summary of `plan validate` shows.
SHOWN_PER_CODE = 3

#: Styles by value, for the fields in `_STYLED_KEYS`: plan statuses, finding levels, execution states, health.
_STYLES: dict[str, str] = {
    "READY": "green",
    "ACTIVE": "cyan",
    "VERIFY": "magenta",
    "DONE": "bold green",
    "BLOCKED": "yellow",
    "PLANNED": "blue",
    "CANCELLED": "dim",
    "SUPERSEDED": "dim",
    "FAIL": "bold red",
    "WARN": "yellow",
    "INFO": "blue",
    "ok": "green",
    "pass": "green",
    "warn": "yellow",
    "fail": "bold red",
    "failed": "bold red",
    "error": "bold red",
    "unknown": "dim",
    "created": "blue",
    "queued": "blue",
    "running": "cyan",
    "succeeded": "green",
    "cancelled": "dim",
    "live": "green",
    "stale": "yellow",
    "lost": "red",
    "current": "green",
    "stale_copy": "yellow",
    "missing": "red",
}
_STYLED_KEYS = frozenset({"status", "state", "level", "severity", "liveness"})
_VERDICT_KEYS = frozenset({"valid", "ok", "alive", "ready", "installable"})
_SGR = {
    "bold": "1",
    "dim": "2",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "blue": "34",
    "magenta": "35",
    "cyan": "36",
}
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_TRAILING = re.compile(r"\s+((?:\x1b\[[0-9;]*m)*)$")


def visible_width(line: str) -> int:
    """The width of a line on screen (colour codes take none)."""
    return len(_ANSI.sub("", line))


def render_terminal(value: Any, *, capability: str, width: int, color: bool, full: bool) -> str:
    """The text of an answer for a terminal `width` columns wide."""
    view = _View(max(width, 20), color)
    shaped = _SHAPED.get(capability)
    if shaped is not None and isinstance(value, dict):
        lines = shaped(view, value, full)
    elif capability == "mesh.peers" and isinstance(value, dict):
        lines = peer_drawing(value)
    else:
        lines = view.value(value, 0)
    return "\n".join(_TRAILING.sub(r"\1", line) for line in lines) + "\n"


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _simple(value: Any) -> bool:
    """Shown on one field line: a scalar, a list of scalars, or something empty."""
    if isinstance(value, list):
        return all(_scalar(v) for v in value)
    return _scalar(value) or value == {}


def _text(value: Any) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(_text(v) for v in value) if value else "(none)"
    if value == {}:
        return "(none)"
    return str(value)


def _style_of(key: str, value: Any) -> str | None:
    if key in _STYLED_KEYS and isinstance(value, str):
        return _STYLES.get(value)
    if key in _VERDICT_KEYS and isinstance(value, bool):
        return "green" if value else "bold red"
    if value == [] or value is None or value == "":
        return "dim"
    return None


def _wrap(text: str, width: int) -> list[str]:
    """Lines of at most `width` characters: words wrapped, a longer word split, line breaks kept."""
    out: list[str] = []
    for paragraph in text.splitlines() or [""]:
        wrapped = textwrap.wrap(paragraph, max(width, 1), break_long_words=True, break_on_hyphens=False)
        out.extend(wrapped or [""])
    return out


class _View:
    """Lines of text for a terminal of `width` columns, in colour or not."""

    def __init__(self, width: int, color: bool) -> None:
        self.width = width
        self.color = color

    def paint(self, text: str, style: str | None) -> str:
        """`text` in `style` (words of `_SGR`) when in colour."""
        if not self.color or not style or not text:
            return text
        codes = ";".join(_SGR[word] for word in style.split())
        return f"\x1b[{codes}m{text}\x1b[0m"

    def value(self, value: Any, indent: int) -> list[str]:
        """Any part of an answer: a record, a list of records, a list, or a scalar wrapped to the width."""
        if isinstance(value, dict):
            return self.mapping(value, indent)
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            return self.records(value, indent)
        if isinstance(value, list) and value:
            return [line for item in value for line in self.value(item, indent)]
        return [" " * indent + line for line in _wrap(_text(value), self.width - indent)]

    def fields(self, pairs: list[tuple[str, Any]], indent: int, *, colon: bool = False) -> list[str]:
        """Aligned `key  value` lines; a value wraps under itself."""
        if not pairs:
            return []
        keys = [f"{key}:" if colon else key for key, _ in pairs]
        key_width = max(len(k) for k in keys)
        room = self.width - indent - key_width - 2
        if room < 16:
            key_width, room = 0, self.width - indent - 2
        lines: list[str] = []
        for shown, (key, value) in zip(keys, pairs, strict=True):
            wrapped = _wrap(_text(value), room)
            style = _style_of(key, value)
            if key_width == 0:  # too narrow for a key column: the value goes under its key
                lines.append(" " * indent + self.paint(shown, "bold"))
                lines.extend(" " * (indent + 2) + self.paint(part, style) for part in wrapped)
                continue
            head = " " * indent + self.paint(shown.ljust(key_width), "bold")
            lines.append(f"{head}  {self.paint(wrapped[0], style)}")
            lines.extend(" " * (indent + key_width + 2) + self.paint(part, style) for part in wrapped[1:])
        return lines

    def mapping(self, mapping: dict[str, Any], indent: int) -> list[str]:
        """A record: its simple fields first, then each nested part under its `key:` heading, indented."""
        lines = self.fields([(k, v) for k, v in mapping.items() if _simple(v)], indent)
        for key, value in mapping.items():
            if _simple(value):
                continue
            if lines and indent == 0:
                lines.append("")
            lines.append(" " * indent + self.paint(f"{key}:", "bold"))
            lines.extend(self.value(value, indent + 2))
        return lines

    def records(self, rows: list[dict[str, Any]], indent: int) -> list[str]:
        """A table when no record holds a list of records and every column fits; one block per record otherwise.

        A nested record's fields are dotted columns (`counts.total`) in both.
        """
        flat: list[dict[str, Any]] = []
        columns: dict[str, None] = {}
        nested = False
        for row in rows:
            cells: dict[str, Any] = {}
            tables: dict[str, list[dict[str, Any]]] = {}
            flatten(row, cells, tables)
            nested = nested or bool(tables)
            flat.append(cells)
            columns.update(dict.fromkeys(cells))
        if not columns and not nested:
            return [" " * indent + f"({len(rows)} empty record{'' if len(rows) == 1 else 's'})"]
        widths = None if nested else self.widths(list(columns), flat, indent)
        if widths is None:
            return self.blocks(rows, indent)
        return self.table(list(columns), widths, flat, indent)

    def widths(self, columns: list[str], rows: list[dict[str, Any]], indent: int) -> list[int] | None:
        """Each column's width, or None when the terminal is too narrow for a readable table.

        A column wants its widest cell (or header); it needs at least its longest word or header, between
        `MIN_COLUMN` and `_MAX_NEED` characters (or its whole width, when narrower). What is left over once
        every column has what it needs goes to the columns in proportion to what they still want.
        """
        wants: list[int] = []
        needs: list[int] = []
        for column in columns:
            texts = [_text(row.get(column)) for row in rows]
            want = max(len(column), *(len(t) for t in texts))
            word = max((len(w) for t in texts for w in t.split()), default=0)
            wants.append(want)
            needs.append(min(want, max(MIN_COLUMN, min(max(len(column), word), _MAX_NEED))))
        room = self.width - indent - 2 * (len(columns) - 1)
        if sum(needs) > room:
            return None
        if sum(wants) <= room:
            return wants
        spare, lacking = room - sum(needs), sum(wants) - sum(needs)
        widths = [need + (want - need) * spare // lacking for want, need in zip(wants, needs, strict=True)]
        return widths

    def blocks(self, items: list[Any], indent: int) -> list[str]:
        """One block of `key: value` lines per record (nested fields dotted), separated by a blank line."""
        lines: list[str] = []
        for item in items:
            if lines:
                lines.append("")
            if isinstance(item, dict):
                cells: dict[str, Any] = {}
                tables: dict[str, list[dict[str, Any]]] = {}
                flatten(item, cells, tables)
                lines.extend(self.fields(list(cells.items()), indent, colon=True))
                for key, rows in tables.items():
                    lines.append(" " * indent + self.paint(f"{key}:", "bold"))
                    lines.extend(self.blocks(rows, indent + 2))
            else:
                lines.extend(self.value(item, indent))
        return lines

    def text(self, value: Any, style: str | None = None) -> Text:
        """A rich text of a value that wraps (a word longer than its room is split, never cut)."""
        from rich.text import Text

        return Text(_text(value), style=style or "", overflow="fold")

    def table(self, columns: list[str], widths: list[int], rows: list[dict[str, Any]], indent: int) -> list[str]:
        """A rich table with these column widths; cells wrap, headers are the keys in capitals."""
        from rich import box
        from rich.table import Table

        table = Table(
            box=box.SIMPLE_HEAD,
            show_edge=False,
            pad_edge=False,
            header_style="bold",
            expand=False,
            padding=(0, 1, 0, 0),
        )
        for column, width in zip(columns, widths, strict=True):
            table.add_column(column.upper(), overflow="fold", width=width)
        for row in rows:
            table.add_row(*(self.text(row.get(c), _style_of(c, row.get(c))) for c in columns))
        return self.draw(table, indent)

    def draw(self, renderable: RenderableType, indent: int) -> list[str]:
        """The lines rich draws for `renderable` in the width left after `indent`."""
        from io import StringIO

        from rich.console import Console

        out = StringIO()
        console = Console(
            file=out,
            width=self.width - indent,
            color_system="standard" if self.color else None,
            force_terminal=self.color,
            no_color=not self.color,
            highlight=False,
            emoji=False,
            markup=False,
            legacy_windows=False,
            _environ={},
        )
        console.print(renderable)
        return [" " * indent + line for line in out.getvalue().splitlines()]


# -- shaped views -----------------------------------------------------------------------------------------


def _label(issue: dict[str, Any]) -> Text:
    """A tree node of an issue or a milestone: id, status, priority, milestone, then the title."""
    from rich.text import Text

    label = Text(overflow="fold")
    label.append(str(issue.get("id", "-")), style="bold")
    for key in ("status", "priority", "milestone"):
        if issue.get(key) is not None:
            label.append("  ")
            label.append(str(issue[key]), style=_style_of(key, issue[key]) or "")
    if issue.get("title"):
        label.append("  " + " ".join(str(issue["title"]).split()))
    return label


def _waves(view: _View, answer: dict[str, Any], full: bool) -> list[str]:
    """`plan waves`: a tree of waves, each holding its issues (id, status, priority, milestone, title)."""
    from rich.tree import Tree

    rest = {k: v for k, v in answer.items() if k not in ("waves", "serialised_by_scope")}
    lines = view.mapping(rest, 0)
    if "serialised_by_scope" in answer:
        serialised = answer["serialised_by_scope"] or []
        if lines:
            lines.append("")
        if serialised:
            lines += [view.paint(f"serialised_by_scope ({len(serialised)}):", "bold")]
            lines += _grouped(view, serialised, full, "svc plan waves --all", indent=2)
        else:
            lines.append(f"serialised_by_scope  {view.paint('(none)', 'dim')}")
    waves = answer.get("waves") or []
    if lines:
        lines.append("")
    if not waves:
        return [*lines, "waves  (none)"]
    tree = Tree(view.text("waves", "bold"))
    for wave in waves:
        issues = wave.get("issues") or []
        facts = "  ".join(f"{k} {_text(v)}" for k, v in wave.items() if k not in ("wave", "issues") and _simple(v))
        count = f"{len(issues)} issue{'' if len(issues) == 1 else 's'}"
        node = tree.add(view.text(f"wave {_text(wave.get('wave'))}  ({count}){'  ' + facts if facts else ''}", "bold"))
        for issue in issues:
            node.add(_label(issue))
    return [*lines, *view.draw(tree, 0)]


def _roadmap(view: _View, answer: dict[str, Any], full: bool) -> list[str]:
    """`plan roadmap`: a tree of milestones in order (status, priority, title, what they wait on), holding issues."""
    from rich.text import Text
    from rich.tree import Tree

    lines = view.mapping({k: v for k, v in answer.items() if k != "milestones"}, 0)
    milestones = answer.get("milestones") or []
    if lines:
        lines.append("")
    if not milestones:
        return [*lines, "milestones  (none)"]
    tree = Tree(view.text("milestones, in order", "bold"))
    for milestone in milestones:
        label = _label({k: milestone.get(k) for k in ("id", "status", "priority", "title")})
        node = tree.add(label)
        if milestone.get("blocked_by"):
            node.add(Text("blocked by " + ", ".join(map(str, milestone["blocked_by"])), style="dim", overflow="fold"))
        for issue in milestone.get("issues") or []:
            node.add(Text(issue if isinstance(issue, str) else field_text(issue), overflow="fold"))
        if not milestone.get("issues"):
            node.add(Text("(no issues)", style="dim"))
    return [*lines, *view.draw(tree, 0)]


def _validate(view: _View, answer: dict[str, Any], full: bool) -> list[str]:
    """`plan validate`: the counts, then the failures in full, then other findings grouped by code.

    The answer's own `counts` (of every finding, whatever the filters) are shown as they are; an answer
    without them gets counts by level and code of the findings it holds.
    """
    lines = view.mapping({k: v for k, v in answer.items() if k != "findings"}, 0)
    if lines:
        lines.append("")
    more = "svc plan validate --all --code {code}"
    return lines + _findings(view, answer.get("findings") or [], full, more, counted="counts" in answer)


def _model(view: _View, answer: dict[str, Any], full: bool) -> list[str]:
    """`plan`: the whole plan as fields and tables, its findings summarised as `plan validate` does."""
    lines = view.mapping({k: v for k, v in answer.items() if k != "findings"}, 0)
    if "findings" in answer:
        if lines:
            lines.append("")
        lines += _findings(view, answer["findings"] or [], full, "svc plan --all", counted=False)
    return lines


def _findings(view: _View, findings: list[dict[str, Any]], full: bool, more: str, *, counted: bool) -> list[str]:
    """Counts by level and code (unless `counted`), the failures in full, the rest grouped by code."""
    if not findings:
        return ["findings  (none)"]
    lines: list[str] = []
    if not counted:
        counts = Counter((f.get("level", "-"), f.get("code", "-")) for f in findings)
        table = [{"level": level, "code": code, "count": n} for (level, code), n in counts.items()]
        lines += [view.paint("findings by level and code:", "bold"), *view.records(table, 2), ""]
    if full:
        return [*lines, view.paint(f"findings ({len(findings)}):", "bold"), *view.records(findings, 2)]
    failures = [f for f in findings if f.get("level") == "FAIL"]
    lines.append(view.paint(f"findings ({len(findings)}): the failures in full, the others by code", "bold"))
    lines.append("")
    if failures:
        rows = [{k: v for k, v in f.items() if k != "level"} for f in failures]
        lines += [view.paint(f"failures ({len(failures)}):", "bold"), *view.records(rows, 2), ""]
    others = [f for f in findings if f.get("level") != "FAIL"]
    lines += _grouped(view, others, False, more, indent=0)
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _grouped(view: _View, findings: list[dict[str, Any]], full: bool, more: str, *, indent: int) -> list[str]:
    """Findings grouped by level and code, each group's first few (all with `full`) and how many more."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for finding in findings:
        groups.setdefault((str(finding.get("level", "-")), str(finding.get("code", "-"))), []).append(finding)
    pad = " " * indent
    lines: list[str] = []
    for (level, code), group in groups.items():
        heading = f"{pad}{view.paint(level, _STYLES.get(level))} {view.paint(code, 'bold')} ({len(group)}):"
        shown = group if full else group[:SHOWN_PER_CODE]
        rows = [{k: v for k, v in f.items() if k not in ("level", "code")} for f in shown]
        lines += [heading, *view.records(rows, indent + 2)]
        if len(group) > len(rows):
            lines.append(f"{pad}  and {len(group) - len(rows)} more ({more.format(code=code)})")
        lines.append("")
    if lines:
        lines.pop()
    return lines


#: Answers with a terminal view of their own, by capability id: `(view, answer, full) -> lines`.
_SHAPED: dict[str, Callable[[_View, dict[str, Any], bool], list[str]]] = {
    "plan.model": _model,
    "plan.roadmap": _roadmap,
    "plan.validate": _validate,
    "plan.waves": _waves,
}

#: The capabilities whose terminal view summarises, so that `--all` means something to them.
SUMMARISED = frozenset({"plan.model", "plan.validate", "plan.waves"})
