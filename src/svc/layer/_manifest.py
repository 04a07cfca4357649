"""`.ai/manifest.yaml`: the section registry of the layer, with closed keys.

An unknown key or a newer `schema` is refused and the layer reads as absent; the reason is a health
`layer` failure naming the key.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from svc.layer._read import Unreadable, clip, read_repository_file
from svc.layer._repository import Repository
from svc.layer._yaml import YamlAliases, YamlError, load_yaml

__all__ = ["DEFAULT_SECTIONS", "LayerReading", "read_manifest"]

SCHEMA = "ai-repository/v1"
DEFAULT_SECTIONS: dict[str, str] = {
    "policy": "repo/policy.yaml",
    "scope": "repo/scope.yaml",
    "profiles": "repo/profiles",
    "rules": "repo/rules",
    "prompts": "repo/prompts",
    "skills": "repo/skills",
    "workflows": "repo/workflows",
    "knowledge": "repo/knowledge",
    "adrs": "repo/adrs",
    "project": "repo/project",
}
_KEYS: dict[str, set[str] | None] = {
    "schema": None,
    "repo": {"path"},
    "local": {"path", "tracked", "implicit_context"},
    "sections": None,
    "context": {"documents"},
}
#: The most problems one reading reports (then one line says how many more there are).
MAX_PROBLEMS = 20


class LayerReading(msgspec.Struct, frozen=True):
    """What the manifest says, or why the layer reads as absent.

    `state` is `ok` (a valid manifest), `absent` (no `.ai/` or no manifest: defaults apply when `.ai/`
    exists) or `fail` (refused: `problems` names each key or fault, and the layer reads as absent).
    """

    state: Literal["ok", "absent", "fail"]
    sections: dict[str, str] = msgspec.field(default_factory=dict)
    context_documents: tuple[str, ...] = ("README.md",)
    problems: tuple[str, ...] = ()

    @property
    def usable(self) -> bool:
        """Whether the layer's records may be read (a valid manifest, or defaults without one)."""
        return self.state != "fail"


def read_manifest(repo: Repository) -> LayerReading:
    """Read and check `.ai/manifest.yaml` of `repo`."""
    path = repo.layer / "manifest.yaml"
    if not repo.has_layer:
        return LayerReading(state="absent")
    try:
        raw = read_repository_file(repo.root, path)
    except FileNotFoundError:
        return LayerReading(state="absent", sections=dict(DEFAULT_SECTIONS))
    except Unreadable as exc:
        return LayerReading(state="fail", problems=(f".ai/manifest.yaml cannot be read: {exc.reason}",))
    except OSError as exc:
        return LayerReading(state="fail", problems=(f".ai/manifest.yaml cannot be read: {exc.strerror}",))
    try:
        data = load_yaml(raw)
    except YamlAliases:
        return LayerReading(state="fail", problems=(".ai/manifest.yaml uses YAML aliases, which svc does not read",))
    except (YamlError, ValueError, RecursionError) as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        return LayerReading(state="fail", problems=(f".ai/manifest.yaml is not YAML{where}",))
    return _check(data)


def _check(data: Any) -> LayerReading:
    if not isinstance(data, dict):
        return LayerReading(state="fail", problems=(".ai/manifest.yaml is not a mapping",))
    problems: list[str] = []
    for key, value in data.items():
        if key not in _KEYS:
            problems.append(clip(f".ai/manifest.yaml: unknown key {key!r}"))
            continue
        allowed = _KEYS[key]
        if allowed is not None:
            if not isinstance(value, dict):
                problems.append(f".ai/manifest.yaml: {key} must be a mapping")
                continue
            problems.extend(
                clip(f".ai/manifest.yaml: unknown key '{key}.{sub}'") for sub in value if sub not in allowed
            )
    schema = data.get("schema")
    if schema != SCHEMA:
        problems.append(clip(f".ai/manifest.yaml: schema {schema!r} is not {SCHEMA!r}"))
    sections = data.get("sections", DEFAULT_SECTIONS)
    if not isinstance(sections, dict) or not all(isinstance(v, str) for v in sections.values()):
        problems.append(".ai/manifest.yaml: sections must map names to paths")
        sections = {}
    context = data.get("context")
    documents = context.get("documents", ["README.md"]) if isinstance(context, dict) else ["README.md"]
    if not isinstance(documents, list):
        problems.append(".ai/manifest.yaml: context.documents must be a list")
        documents = []
    if len(problems) > MAX_PROBLEMS:
        problems[MAX_PROBLEMS:] = [f".ai/manifest.yaml: {len(problems) - MAX_PROBLEMS} more problems"]
    if problems:
        return LayerReading(state="fail", problems=tuple(problems))
    return LayerReading(
        state="ok",
        sections={str(k): str(v) for k, v in sections.items()},
        context_documents=tuple(str(d) for d in documents),
    )
