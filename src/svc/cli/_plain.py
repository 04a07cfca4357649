"""The stable text of any answer, for a pipe, and the pieces of it the terminal view shares (`_terminal`).

Piped (stdout is not a terminal), the text is for `grep`, `cut` and `awk`: one record per line, fields separated
by tabs, nothing shortened, no colour, no box drawing.

- A scalar field is `path<TAB>value`, `path` being the dotted keys that lead to it (`project.name`).
- A list of records is a table: a header line `#path<TAB>column...`, then one line `path<TAB>value...` per
  record. A nested record's fields are dotted columns (`counts.total`); a list of records inside a record is a
  table of its own (`waves.issues`) whose first column is the parent's identity (its `id`, else its first
  column), named by its dotted path (`waves.wave`).
- An absent value, an empty text, an empty list and an empty record are `-`; booleans are `yes`/`no`; a list
  of scalars is comma-separated; whitespace (line breaks, tabs) folds to one space.

The mesh's peer tree (`mesh.peers`) keeps its own records (`cooperation`, `machine`, `runtime`, `session`,
`claim`, `review`, `refused`; see docs/mesh.md).
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["field_text", "flatten", "peer_drawing", "peer_records", "plain_lines"]


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def field_text(value: Any) -> str:
    """One tab-separated field: `-` when absent or empty, whitespace (tabs, line breaks) folded to one space."""
    if value is None or value == "" or value == [] or value == {}:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ",".join(field_text(v) for v in value)
    if isinstance(value, dict):
        return msgspec.json.encode(value).decode()
    return " ".join(str(value).split()) or "-"


def _record(*fields: Any) -> str:
    return "\t".join(field_text(f) for f in fields)


def flatten(
    row: dict[str, Any], cells: dict[str, Any], tables: dict[str, list[dict[str, Any]]], prefix: str = ""
) -> None:
    """Split a record into dotted scalar `cells` (nested records flattened) and its lists of records (`tables`)."""
    for key, value in row.items():
        name = prefix + key
        if isinstance(value, dict) and value:
            flatten(value, cells, tables, name + ".")
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            tables[name] = value
        else:
            cells[name] = value


def plain_lines(value: Any) -> list[str]:
    """The piped text of an answer, one record per line."""
    lines: list[str] = []
    if isinstance(value, dict):
        _plain_mapping(value, "", lines)
    elif isinstance(value, list):
        _plain_list(value, "-", lines)
    else:
        lines.append(field_text(value))
    return lines


def _plain_mapping(mapping: dict[str, Any], path: str, lines: list[str]) -> None:
    for key, value in mapping.items():
        here = f"{path}.{key}" if path else key
        if isinstance(value, dict) and value:
            _plain_mapping(value, here, lines)
        elif isinstance(value, list) and value and not all(_scalar(v) for v in value):
            _plain_list(value, here, lines)
        else:
            lines.append(_record(here, value))


def _plain_list(items: list[Any], path: str, lines: list[str]) -> None:
    if all(isinstance(item, dict) for item in items):
        lines.extend(_plain_table(path, [], [([], item) for item in items]))
        return
    for item in items:
        lines.append(_record(path, item))


def _plain_table(path: str, parents: list[str], rows: list[tuple[list[Any], dict[str, Any]]]) -> list[str]:
    """A header line, one line per record, then the tables nested in those records."""
    flat: list[tuple[list[Any], dict[str, Any], dict[str, list[dict[str, Any]]]]] = []
    columns: dict[str, None] = {}
    nested: dict[str, None] = {}
    for prefix, row in rows:
        cells: dict[str, Any] = {}
        tables: dict[str, list[dict[str, Any]]] = {}
        flatten(row, cells, tables)
        flat.append((prefix, cells, tables))
        columns.update(dict.fromkeys(cells))
        nested.update(dict.fromkeys(tables))
    lines = ["\t".join(["#" + path, *parents, *columns])]
    lines.extend(_record(path, *prefix, *(cells.get(c) for c in columns)) for prefix, cells, _ in flat)
    identity = "id" if "id" in columns else next(iter(columns), None)
    for key in nested:
        children = [
            ([*prefix, cells.get(identity) if identity else None], child)
            for prefix, cells, tables in flat
            for child in tables.get(key, [])
        ]
        named = [*parents, f"{path}.{identity}"] if identity else parents
        lines.extend(_plain_table(f"{path}.{key}", named, children))
    return lines


# -- the mesh's peer tree -----------------------------------------------------------------------------------


def _bare(key: str) -> str:
    """The id part of a `<stream>/<id>` key."""
    return key.partition("/")[2] or key


def peer_records(tree: dict[str, Any]) -> list[str]:
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


def peer_drawing(tree: dict[str, Any]) -> list[str]:
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
