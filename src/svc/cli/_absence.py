"""One line on stderr when a command answers although what it would read is absent.

A capability that reads only the `.ai/` layer refuses a checkout without one (`svc.layer._required`: exit 10,
one line). The others keep answering, because they describe svc itself or say the absence in their answer; for
those whose readable view would otherwise look like the checkout's own (svc's distribution model in a checkout
that declares none) or like an empty list with no word (no CHANGELOG.md), the command line adds one sentence on
stderr after the view: `svc: <sentence>`. Piped stdout keeps its records unchanged, and `--json` adds nothing.
"""

from __future__ import annotations

from typing import Any

import msgspec

from svc.layer import Repository

__all__ = ["absence_note"]

#: Answers drawn from svc's own distribution model when the checkout declares none.
_SVC_MODEL = frozenset({"distribution.model", "distribution.artifact"})


def absence_note(capability: str, repo: Repository, body: bytes) -> str | None:
    """The sentence naming what is absent from `repo` for this answer, or None when nothing needs saying."""
    if capability == "release.changelog":
        answer: Any = msgspec.json.decode(body)
        if isinstance(answer, dict) and answer.get("present") is False:
            return f"{answer.get('path') or 'CHANGELOG.md'} is absent from {repo.name}/: there is no release to show"
        return None
    if repo.has_layer:
        return None
    missing = f"{repo.name}/ has no .ai/ layer"
    if capability in _SVC_MODEL:
        return f"{missing}, so this is svc's own distribution model, not one the checkout declares"
    if capability == "health.ready":
        return f"{missing}: no object is served (`svc health report` says how to start one)"
    return None
