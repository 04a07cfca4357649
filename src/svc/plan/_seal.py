"""Lifecycle stamps and their seals (docs/layer.md): which move writes which field, and what proves a stamp.

A seal is ``sha256:`` + the hex SHA-256 of four LF-terminated lines: the seal domain, the ledger event, the
issue id and the stamp text. svc's domain is `SEAL_SCHEMA`; another tool that writes this record format seals
under its own domain, and its seals prove nothing under svc's (`svc plan reseal` re-seals them). The seal
lives in the tracked record beside the stamp, because the ledger is local to one checkout; a seal copied from
another issue or left beside an edited stamp proves nothing.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from collections.abc import Iterable
from typing import Literal

import msgspec

from svc._log import LazyLogger
from svc.layer import YamlError, load_yaml
from svc.layer._share import SHARE_ENV, read_share

__all__ = [
    "DOMAINS_FILE",
    "LEGACY_CUTOFF",
    "MOVES",
    "SEAL_SCHEMA",
    "Move",
    "domain_problem",
    "known_domains",
    "proven",
    "seal",
    "sealing_domain",
]

_log = LazyLogger("svc.plan")

#: The first line of every sealed text (the reference tool's own name is replaced by `svc`).
SEAL_SCHEMA = "svc.plan-event/v1"
#: Stamps strictly below this text may be excused by `unsealed_stamps` (legacy records).
LEGACY_CUTOFF = "2026-10-01T00:00:00Z"
#: The share file listing the seal domains of other tools that write this record format.
DOMAINS_FILE = "plan/seal-domains.yaml"
_DOMAIN = re.compile(r"[!-~]{1,128}")


class Move(msgspec.Struct, frozen=True):
    """One lifecycle move: the stamp it writes, the seal field and the ledger event."""

    transition: Literal["start", "verify", "done"]
    field: Literal["started_at", "verified_at", "completed_at"]
    seal_field: Literal["started_event", "verified_event", "completed_event"]
    event: Literal["plan_start", "plan_verify", "plan_done"]


#: The three moves, in stamp order (start, verify, done).
MOVES: dict[str, Move] = {
    "start": Move("start", "started_at", "started_event", "plan_start"),
    "verify": Move("verify", "verified_at", "verified_event", "plan_verify"),
    "done": Move("done", "completed_at", "completed_event", "plan_done"),
}


def seal(event: str, issue: str, stamp: str, *, domain: str | None = None) -> str:
    """The seal of `stamp` for `event` on `issue` under `domain` (svc's by default): ``sha256:<64 lowercase hex>``."""
    text = f"{SEAL_SCHEMA if domain is None else domain}\n{event}\n{issue}\n{stamp}\n"
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def domain_problem(domain: str) -> str | None:
    """Why `domain` cannot be a seal domain, or None: it must be 1 to 128 printable ASCII characters, no space."""
    if _DOMAIN.fullmatch(domain) is None:
        return f"the seal domain {domain!r} is not 1 to 128 printable ASCII characters without spaces"
    return None


def sealing_domain(move: Move, issue: str, stamp: str, sealed_by: str, domains: Iterable[str]) -> str | None:
    """The first of `domains` under which `sealed_by` seals `stamp` for `move` on `issue`, or None."""
    if not sealed_by.startswith("sha256:"):
        return None
    return next((d for d in domains if sealed_by == seal(move.event, issue, stamp, domain=d)), None)


def known_domains() -> tuple[str, ...]:
    """The seal domains of other tools that write this record format (the share's `plan/seal-domains.yaml`).

    Read once per share location. A share without the file, or a file svc cannot read, names none (with a
    warning on stderr for a file that is there but unusable); svc's own domain and malformed entries are
    left out.
    """
    return _known_domains(os.environ.get(SHARE_ENV, ""))


@functools.lru_cache(maxsize=4)
def _known_domains(share: str) -> tuple[str, ...]:
    try:
        data, shown = read_share(DOMAINS_FILE, limit=64 * 1024)
    except FileNotFoundError:
        return ()
    except OSError as exc:
        _log.warning("svc: the seal domains of other tools are not read (%s); none is recognised", exc)
        return ()
    try:
        document = load_yaml(data)
    except (YamlError, ValueError, RecursionError):
        document = None
    listed = document.get("domains") if isinstance(document, dict) else None
    if not isinstance(listed, list):
        _log.warning("svc: %s holds no `domains` list; no seal domain of another tool is recognised", shown)
        return ()
    return tuple(
        d for d in dict.fromkeys(listed) if isinstance(d, str) and d != SEAL_SCHEMA and domain_problem(d) is None
    )


def proven(move: Move, issue: str, stamp: str, sealed_by: str, unsealed: frozenset[str]) -> bool:
    """Whether a stamp is proven: empty, sealed by its seal field, or excused as a legacy stamp.

    The legacy excuse holds only for a stamp that sorts (as text) below `LEGACY_CUTOFF` and whose exact
    ``"<field> <stamp>"`` string is listed in the record's `unsealed_stamps`.
    """
    if not stamp:
        return True
    if sealed_by and sealed_by == seal(move.event, issue, stamp):
        return True
    return stamp < LEGACY_CUTOFF and f"{move.field} {stamp}" in unsealed
