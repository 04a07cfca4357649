"""Readable terminal output for any answer: scalar fields as lines, lists of records as tables.

A few answers have a shape of their own: the mesh's peer tree (`mesh.peers`) is drawn as a tree on a
terminal and printed as one tab-separated record per line when piped (stable for `grep` and `awk`).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from typing import Any

import msgspec

__all__ = ["render"]

_MAX_CELL = 60


def render(body: bytes, *, capability: str | None = None, tty: bool = False) -> str:
    """Render an encoded JSON answer of `capability` for a person (`tty`: for a terminal rather than a pipe)."""
    value = msgspec.json.decode(body)
    shaped = _SHAPED.get(capability or "")
    if shaped is not None and isinstance(value, dict):
        return shaped(value, tty)
    lines: list[str] = []
    _render_value(value, lines, indent="")
    return "\n".join(lines) + "\n"


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list) and all(_scalar(v) for v in value):
        text = ", ".join(_cell(v) for v in value)
    elif _scalar(value):
        text = str(value)
    else:
        text = msgspec.json.encode(value).decode()
    text = " ".join(text.split())
    return text if len(text) <= _MAX_CELL else text[: _MAX_CELL - 1] + "…"


def _render_value(value: Any, lines: list[str], indent: str) -> None:
    if isinstance(value, dict):
        _render_mapping(value, lines, indent)
    elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        _table(value, lines, indent)
    else:
        lines.append(indent + _cell(value))


def _render_mapping(mapping: dict[str, Any], lines: list[str], indent: str) -> None:
    simple = {k: v for k, v in mapping.items() if _scalar(v) or (isinstance(v, list) and all(map(_scalar, v)))}
    width = max((len(k) for k in simple), default=0)
    for key, value in simple.items():
        lines.append(f"{indent}{key.ljust(width)}  {_cell(value)}")
    for key, value in mapping.items():
        if key in simple:
            continue
        lines.append("")
        lines.append(f"{indent}{key}:")
        if isinstance(value, list) and not value:
            lines.append(f"{indent}  (none)")
        elif isinstance(value, dict) and all(_scalar(v) for v in value.values()) and len(value) > 8:
            lines.append(indent + "  " + _cell(value))
        else:
            _render_value(value, lines, indent + "  ")


def _table(rows: list[dict[str, Any]], lines: list[str], indent: str) -> None:
    columns: list[str] = []
    for row in rows:
        for key, value in row.items():
            if key not in columns and (_scalar(value) or (isinstance(value, list) and all(map(_scalar, value)))):
                columns.append(key)
    budget = shutil.get_terminal_size((120, 24)).columns - len(indent)
    cells = [[_cell(row.get(c)) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    shown: list[int] = []
    used = 0
    for i, w in enumerate(widths):
        if used + w + 2 > budget and shown:
            break
        shown.append(i)
        used += w + 2
    lines.append(indent + "  ".join(columns[i].upper().ljust(widths[i]) for i in shown).rstrip())
    for row_cells in cells:
        lines.append(indent + "  ".join(row_cells[i].ljust(widths[i]) for i in shown).rstrip())


# -- the mesh's peer tree -----------------------------------------------------------------------------------


def _field(value: Any) -> str:
    """One tab-separated field: `-` when absent, whitespace (tabs, line breaks) folded to one space."""
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ",".join(_field(v) for v in value) or "-"
    return " ".join(str(value).split()) or "-"


def _record(*fields: Any) -> str:
    return "\t".join(_field(f) for f in fields)


def _bare(key: str) -> str:
    """The id part of a `<stream>/<id>` key."""
    return key.partition("/")[2] or key


def _peer_records(tree: dict[str, Any]) -> list[str]:
    """One record per line: `cooperation`, then `machine`, `runtime`, `session`, `claim`, `review`, `refused`."""
    if not tree.get("active"):
        lines = [_record("cooperation", "inactive", tree.get("reason"))]
    else:
        lines = [_record("cooperation", "active", tree.get("runtime"), tree.get("repository"), tree.get("digest"))]
    for machine in tree.get("machines", []):
        lines.append(_record("machine", machine["node"], "local" if machine["local"] else "remote", machine["name"]))
        for rt in machine["runtimes"]:
            this = "this" if rt["this_runtime"] else "other"
            link, beat = rt.get("link"), rt.get("last_beat_ms")
            lines.append(_record("runtime", rt["runtime"], rt["liveness"], link, beat, this))
            for session in rt["sessions"]:
                lines.extend(_session_records(session))
    for refused in tree.get("refused", []):
        lines.append(_record("refused", refused["endpoint"], refused["direction"], refused["refusal"], refused["at"]))
    return lines


def _session_records(session: dict[str, Any]) -> list[str]:
    key, info = session["key"], session.get("info", {})
    lines = [_record("session", key, session["state"], info.get("client"), info.get("intent"))]
    for claim in session["claims"]:
        standing = claim["state"]
        fields = (claim["key"], standing["state"], claim["mode"], key, standing.get("detail"), claim["scope"])
        lines.append(_record("claim", *fields))
    for review in session["reviews"]:
        lines.append(_record("review", review["key"], review["state"], key, review["subject"]))
    return lines


def _peer_drawing(tree: dict[str, Any]) -> list[str]:
    """The tree for a terminal: machine, runtime, session, then its claims and review requests."""
    if not tree.get("active"):
        return [f"cooperation does not run here: {tree.get('reason') or 'not started'}"]
    lines = [f"repository {tree.get('repository')}  digest {tree.get('digest')}"]
    for machine in tree.get("machines", []):
        where = "this machine" if machine["local"] else "another machine"
        lines.append(f"{machine['name']}  {machine['node']}  ({where})")
        runtimes = machine["runtimes"]
        for i, rt in enumerate(runtimes):
            last = i == len(runtimes) - 1
            facts = [rt["liveness"]]
            if rt["this_runtime"]:
                facts.append("this runtime")
            if rt.get("link"):
                facts.append(f"link {rt['link']}")
            if rt.get("last_beat_ms") is not None and not rt["this_runtime"]:
                facts.append(f"beat {rt['last_beat_ms']} ms ago")
            lines.append(f"{'└── ' if last else '├── '}runtime {rt['runtime']}  {', '.join(facts)}")
            _draw_sessions(rt["sessions"], "    " if last else "│   ", lines)
    if tree.get("refused"):
        lines.append("refused links:")
        for refused in tree["refused"]:
            lines.append(f"  {refused['endpoint']}  {refused['direction']}  {refused['refusal']}  {refused['at']}")
    return lines


def _draw_sessions(sessions: list[dict[str, Any]], prefix: str, lines: list[str]) -> None:
    for j, session in enumerate(sessions):
        last = j == len(sessions) - 1
        info = session.get("info", {})
        words = [session["state"], *(str(info[k]) for k in ("client", "branch", "issue") if info.get(k))]
        intent = f"  “{' '.join(str(info['intent']).split())}”" if info.get("intent") else ""
        lines.append(f"{prefix}{'└── ' if last else '├── '}session {_bare(session['key'])}  {', '.join(words)}{intent}")
        inner = prefix + ("    " if last else "│   ")
        items = [("claim", c) for c in session["claims"]] + [("review", r) for r in session["reviews"]]
        for k, (what, item) in enumerate(items):
            branch = "└── " if k == len(items) - 1 else "├── "
            if what == "claim":
                standing = item["state"]
                detail = f" ({standing['detail']})" if standing.get("detail") else ""
                scope = ", ".join(item["scope"])
                text = f"claim {_bare(item['key'])}  {standing['state']}{detail}  {item['mode']}  {scope}"
            else:
                text = f"review {_bare(item['key'])}  {item['state']}  {item['subject']}"
            lines.append(f"{inner}{branch}{text}")


def _peer_tree(tree: dict[str, Any], tty: bool) -> str:
    return "\n".join(_peer_drawing(tree) if tty else _peer_records(tree)) + "\n"


#: Answers with a rendering of their own, by capability id: `(answer, tty) -> text`.
_SHAPED: dict[str, Callable[[dict[str, Any], bool], str]] = {"mesh.peers": _peer_tree}
