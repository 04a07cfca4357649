"""Handover records of this checkout (`.ai/local/state/handovers/`) as the mesh reads and writes them.

`read_handover` reads the newest record (greatest `created_at`, then name) or the named one with svc's
reading rule for hostile input: only plain files directly in that directory, each at most `RECORD_LIMIT` bytes,
nothing a symlink leads to outside it. The front matter (YAML between `---` lines) is read as scalar strings;
the Markdown after it is the body, which travels when it is at most 32 KiB. The handover that travels holds
the record's task, issue, milestone, branch, head, creation time and file name (never a path) and the body,
identified by its digest.

`materialize_handover` writes a record of a published handover into this checkout, once: its name ends with
the first 16 hex of the handover id, so a second consumption finds it and writes nothing. It is written like
every record of that directory (mode 0600, a temp file fsynced, then hard-linked to its name, which fails
when taken), with front matter computed here: the published branch and head (this checkout's when the
handover carries none), this checkout's repository digest and worktree. The oldest records beyond
`RETENTION` are removed by the writer.

Both are blocking (file reads, fsync); call them from a worker thread.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from svc._errors import InvalidInput, NotFound, Refused
from svc.layer import (
    Unreadable,
    check_repository_dir,
    ensure_local_state,
    front_matter,
    read_repository_dir,
    read_repository_file,
    write_all,
)
from svc.mesh_udp._canonical import canonical_json
from svc.mesh_udp._events import MAX_EVENT_BYTES, MAX_HANDOVER_BODY, handover_id

if TYPE_CHECKING:
    from svc.layer import Repository

__all__ = ["HANDOVERS", "RECORD_LIMIT", "RETENTION", "materialize_handover", "read_handover"]

#: The records' directory, repository-relative.
HANDOVERS: Final = ".ai/local/state/handovers"
#: The most bytes a record may have to be read at all (its body must still fit 32 KiB to travel).
RECORD_LIMIT: Final = 1024 * 1024
#: How many records the directory keeps; the writer removes the oldest beyond it.
RETENTION: Final = 200
#: Room left in an event for everything beside the handover (stream, stamps, key, signature, kind).
_EVENT_ROOM: Final = 1024
_MAX_FIELD: Final = 512
_LINE_BREAK = re.compile(r"[\r\n\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_BRANCH_KEY = re.compile(r"[^A-Za-z0-9._-]")
_RECORD_NAME = re.compile(r"^[0-9]{8}T[0-9]{6}Z--.*\.md$")
_PLAIN = re.compile(r"^[A-Za-z0-9/][A-Za-z0-9._/@+:-]*$")


def _directory(repo: Repository) -> Path:
    return repo.root / HANDOVERS


def _front_matter(text: str) -> tuple[dict[str, str], str]:
    """The front matter as scalar strings and the body after it (the whole text when there is none)."""
    fields, body = front_matter(text)
    return fields or {}, body


def _line(value: str | None) -> str | None:
    """`value` when it can travel as a front field (single-line, at most 512 characters, not empty)."""
    if not value or len(value) > _MAX_FIELD or _LINE_BREAK.search(value) is not None:
        return None
    return value


def _inside(directory: str, name: str) -> bool:
    """Whether the entry `name` of the real directory `directory` stays in it (a symlink may lead out)."""
    return os.path.dirname(os.path.realpath(os.path.join(directory, name))) == directory


def _decode(name: str, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise Refused(f"refused: the handover record {name} is not UTF-8 text") from None


def _check_name(name: str) -> None:
    if name in (".", "..") or "/" in name or "\\" in name or _CONTROL.search(name) is not None:
        raise InvalidInput(f"{name!r} is not the name of a file in {HANDOVERS}/ (no path, no `..`)")


def _named(repo: Repository, name: str) -> tuple[str, bytes]:
    _check_name(name)
    directory = _directory(repo)
    try:
        real = str(check_repository_dir(repo.root, directory))
    except FileNotFoundError:
        raise NotFound(f"no handover record {name} under {HANDOVERS}/ (the directory does not exist)") from None
    except Unreadable as exc:
        raise Refused(f"refused: {exc}") from None
    if not os.path.lexists(os.path.join(real, name)):
        raise NotFound(f"no handover record {name} under {HANDOVERS}/")
    if not _inside(real, name):
        raise Refused(f"refused: {HANDOVERS}/{name} leads out of {HANDOVERS}/")
    try:
        return name, read_repository_file(repo.root, directory / name, limit=RECORD_LIMIT)
    except FileNotFoundError:
        raise NotFound(f"no handover record {name} under {HANDOVERS}/") from None
    except Unreadable as exc:
        raise Refused(f"refused: {exc}") from None


def _newest(repo: Repository) -> tuple[str, bytes]:
    directory = _directory(repo)
    none = f"no handover record under {HANDOVERS}/"
    try:
        real = str(check_repository_dir(repo.root, directory))
    except FileNotFoundError:
        raise NotFound(none) from None
    except Unreadable as exc:
        raise Refused(f"refused: {exc}") from None
    best: tuple[tuple[str, str], bytes] | None = None

    def wanted(name: str) -> bool:
        return name.endswith(".md") and not name.startswith(".") and _inside(real, name)

    try:
        for name, data in read_repository_dir(repo.root, directory, wanted, limit=RECORD_LIMIT):
            if isinstance(data, Unreadable):
                continue
            try:
                fields, _ = _front_matter(data.decode("utf-8"))
            except UnicodeDecodeError:
                continue
            rank = (fields.get("created_at", ""), name)
            if best is None or rank > best[0]:
                best = (rank, data)
    except FileNotFoundError:
        raise NotFound(none) from None
    except Unreadable as exc:
        raise Refused(f"refused: {exc}") from None
    if best is None:
        raise NotFound(none)
    return best[0][1], best[1]


def read_handover(
    repo: Repository, name: str | None, *, issue: str | None = None, milestone: str | None = None
) -> dict[str, Any]:
    """The handover of the newest record (or the one named), as it travels in `handover_published`.

    `issue` and `milestone` override the record's own (`bound_issue`, `milestone`).

    Raises:
        InvalidInput: `name` is not a plain file name.
        NotFound: no such record, or none at all.
        Refused: the record cannot be read (not a plain file, leads out of the directory, over 1 MiB, not
            UTF-8), or its body is over 32 KiB, or the handover does not fit one journal event.
    """
    chosen, data = _named(repo, name) if name is not None else _newest(repo)
    fields, body = _front_matter(_decode(chosen, data))
    size = len(body.encode("utf-8"))
    if size > MAX_HANDOVER_BODY:
        raise Refused(
            f"refused: the handover record {chosen} has a body of {size} bytes; at most {MAX_HANDOVER_BODY} "
            "bytes travel (shorten it, or publish another record)"
        )
    task = fields.get("task_id")
    handover: dict[str, Any] = {"id": handover_id(body)}
    found = {
        "task": task if task != "none" else None,
        "issue": issue or fields.get("bound_issue") or fields.get("issue"),
        "milestone": milestone or fields.get("milestone"),
        "branch": fields.get("branch"),
        "head": fields.get("head"),
        "created_at": fields.get("created_at"),
        "name": chosen,
    }
    handover |= {key: value for key, raw in found.items() if (value := _line(raw)) is not None}
    handover["body"] = body
    encoded = len(canonical_json(handover))
    if encoded > MAX_EVENT_BYTES - _EVENT_ROOM:
        raise Refused(
            f"refused: the handover record {chosen} encodes to {encoded} bytes, more than one journal event "
            f"carries ({MAX_EVENT_BYTES - _EVENT_ROOM}); shorten its body"
        )
    return handover


def _scalar(value: str) -> str:
    """A front matter value: plain when YAML reads it back as the same text, else double-quoted."""
    if _PLAIN.match(value) and not value.endswith(":") and value.lower() not in ("true", "false", "null", "yes", "no"):
        return value
    return json.dumps(value, ensure_ascii=False)


def _record(
    repo: Repository, handover: dict[str, Any], *, publisher: str, branch: str, head: str, stamp: dt.datetime
) -> bytes:
    common = repo.common_dir
    repository = hashlib.sha256(os.fsencode(os.path.realpath(common))).hexdigest() if common else "none"
    task = handover.get("task") or "none"
    fields: list[tuple[str, str]] = [
        ("schema_version", "1"),
        ("created_at", _scalar(stamp.strftime("%Y-%m-%dT%H:%M:%SZ"))),
        ("task_id", _scalar(task)),
        ("profile", "none"),
        ("owner", json.dumps(f"mesh:{publisher}", ensure_ascii=False)),
        ("repository_id", _scalar(repository)),
        ("worktree", _scalar(str(repo.root))),
        ("branch", _scalar(branch)),
        ("head", _scalar(head)),
    ]
    if handover.get("issue"):
        fields.append(("bound_issue", _scalar(str(handover["issue"]))))
    fields.append(("handover_id", str(handover["id"])))
    body = str(handover.get("body", ""))
    text = "---\n" + "".join(f"{key}: {value}\n" for key, value in fields) + "---\n\n" + body
    return (text if text.endswith("\n") else text + "\n").encode("utf-8")


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _publish(directory: Path, name: str, data: bytes) -> bool:
    """Write `data` to `directory/name` through a temp file and a hard link; False when the name is taken."""
    temp = directory / f".{name}.{secrets.token_hex(4)}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        try:
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(temp, directory / name)
        except FileExistsError:
            return False
    finally:
        os.unlink(temp)
    _fsync_directory(directory)
    return True


def _retain(directory: Path, keep: str) -> None:
    """Remove the oldest records beyond `RETENTION` (by name, which starts with the UTC stamp)."""
    names = sorted(n for n in os.listdir(directory) if _RECORD_NAME.match(n))
    for name in names[: max(0, len(names) - RETENTION)]:
        if name != keep:
            try:
                os.unlink(directory / name)
            except OSError:
                continue


def materialize_handover(
    repo: Repository, handover: dict[str, Any], *, publisher: str, wall: float
) -> tuple[str, bool]:
    """Write the published `handover` as a record of this checkout, once.

    Answers the record's repository-relative path and whether this call wrote it (a second call finds the
    record by the handover id's first 16 hex and writes nothing).

    Raises:
        Refused: the handovers directory leads out of the checkout.
        OSError: the record could not be written.
    """
    directory = ensure_local_state(repo.layer / "local") / "handovers"
    directory.mkdir(mode=0o700, exist_ok=True)
    try:
        check_repository_dir(repo.root, directory)
    except Unreadable as exc:
        raise Refused(f"refused: {exc}") from None
    tag = str(handover["id"])[:16]
    taken = sorted(n for n in os.listdir(directory) if n.endswith(f"--{tag}.md") and not n.startswith("."))
    if taken:
        return f"{HANDOVERS}/{taken[0]}", False
    git = repo.git()
    branch = str(handover.get("branch") or git.branch or "DETACHED")
    head = str(handover.get("head") or git.head or "")
    stamp = dt.datetime.fromtimestamp(wall, dt.UTC)
    short = _BRANCH_KEY.sub("-", head[:7]) if head else "0000000"
    name = f"{stamp.strftime('%Y%m%dT%H%M%SZ')}--{_BRANCH_KEY.sub('-', branch)}--{short}--{tag}.md"
    data = _record(repo, handover, publisher=publisher, branch=branch, head=head, stamp=stamp)
    wrote = _publish(directory, name, data)
    if wrote:
        _retain(directory, name)
    return f"{HANDOVERS}/{name}", wrote
