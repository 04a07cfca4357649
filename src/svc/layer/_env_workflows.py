"""The workflows of the checkout's justfile, as `just` itself describes them.

Only when the checkout has a justfile (`justfile`, `.justfile` or `Justfile` at its top) and `just` is on
the PATH: `just --justfile <file> --dump --dump-format json` and `just --justfile <file> --groups
--unsorted` run side by side, 2 s each. Otherwise the catalogue is `unavailable`, which is an answer, not an
error. Private recipes (`private: true` or a `_` prefix) are left out; a module's recipes are named
`<module> <recipe>` (nested modules joined by spaces); workflows are in natural order by name; `*` and `+`
parameters are variadic; a parameter is required without a default unless it is `*`; `[confirm]` sets
`confirm`. The entry point of a group is its public recipe named like the group: groups in the order `just`
declares them, then the other groups by name. Neither command runs a recipe.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from svc.layer._env_model import (
    EnvironmentDiagnostic,
    WorkflowCatalogue,
    WorkflowDescriptor,
    WorkflowEntrypoint,
    WorkflowParameter,
)
from svc.layer._env_probe import Probe
from svc.layer._read import clip

if TYPE_CHECKING:
    from svc.layer._repository import Repository

__all__ = [
    "JUSTFILES",
    "SOURCE",
    "WORKFLOW_SECONDS",
    "WorkflowProbes",
    "finish_workflows",
    "natural_key",
    "parse_dump",
    "start_workflows",
]

#: The names `just` finds at the top of a checkout, in the order svc looks for them.
JUSTFILES = ("justfile", ".justfile", "Justfile")
#: How long each `just` call may take.
WORKFLOW_SECONDS = 2.0
#: The command provenance quotes.
SOURCE = "just --dump --dump-format json"
_DIGITS = re.compile(r"([0-9]+)")
_MAX_DEPTH = 8


def natural_key(text: str) -> tuple[tuple[tuple[Any, ...], ...], str]:
    """Natural order: digit runs by value (more leading zeros first on a tie), the rest case-folded, then raw."""
    chunks: list[tuple[Any, ...]] = []
    for i, chunk in enumerate(_DIGITS.split(text)):
        if not chunk:
            continue
        chunks.append(("0", int(chunk), -len(chunk)) if i % 2 else (chunk.lower(),))
    return tuple(chunks), text


@dataclass(frozen=True, slots=True)
class WorkflowProbes:
    """The justfile found (repository-relative) and the two `just` calls started for it (None: no justfile)."""

    justfile: str | None
    dump: Probe | None = None
    groups: Probe | None = None


def start_workflows(
    repo: Repository, *, seconds: float = WORKFLOW_SECONDS, search_path: str | None = None
) -> WorkflowProbes:
    """Find the justfile and start both `just` calls for it (nothing when there is none)."""
    for name in JUSTFILES:
        path = repo.root / name
        if path.is_file() and not path.is_symlink():
            base = ["just", "--justfile", str(path), "--working-directory", str(repo.root)]
            return WorkflowProbes(
                justfile=name,
                dump=Probe.start(
                    [*base, "--dump", "--dump-format", "json"], cwd=repo.root, seconds=seconds, search_path=search_path
                ),
                groups=Probe.start(
                    [*base, "--groups", "--unsorted"], cwd=repo.root, seconds=seconds, search_path=search_path
                ),
            )
    return WorkflowProbes(justfile=None)


def _text(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    return clip(" ".join(value.split()), 1000) or None


def _attributes(recipe: dict[str, Any]) -> tuple[str | None, bool, bool]:
    """The recipe's group, whether it confirms, whether it is private (attributes as strings or mappings)."""
    group: str | None = None
    confirm = private = False
    attributes = recipe.get("attributes")
    for attr in attributes if isinstance(attributes, list) else ():
        if attr == "confirm":
            confirm = True
        elif attr == "private":
            private = True
        elif isinstance(attr, dict):
            if "confirm" in attr:
                confirm = True
            if group is None and isinstance(attr.get("group"), str):
                group = attr["group"]
    return group, confirm, private


def _parameter(param: Any) -> WorkflowParameter | None:
    if not isinstance(param, dict) or not isinstance(param.get("name"), str):
        return None
    kind = param.get("kind")
    variadic = kind in ("star", "plus")
    return WorkflowParameter(
        name=param["name"], variadic=variadic, required=param.get("default") is None and kind != "star"
    )


def _dependency(dep: Any) -> str | None:
    if isinstance(dep, dict) and isinstance(dep.get("recipe"), str):
        return str(dep["recipe"])
    return dep if isinstance(dep, str) else None


def _recipes(module: dict[str, Any], path: tuple[str, ...], depth: int = 0) -> list[WorkflowDescriptor]:
    out: list[WorkflowDescriptor] = []
    recipes = module.get("recipes")
    for key, recipe in recipes.items() if isinstance(recipes, dict) else ():
        if not isinstance(recipe, dict):
            continue
        name = str(recipe.get("name", key))
        group, confirm, private = _attributes(recipe)
        if private or recipe.get("private") is True or name.startswith("_"):
            continue
        params = recipe.get("parameters")
        deps = recipe.get("dependencies")
        out.append(
            WorkflowDescriptor(
                name=" ".join((*path, name)),
                namespace="::".join(path) or None,
                description=_text(recipe.get("doc")),
                group=group,
                parameters=tuple(p for p in map(_parameter, params if isinstance(params, list) else ()) if p),
                dependencies=tuple(d for d in map(_dependency, deps if isinstance(deps, list) else ()) if d),
                confirm=confirm,
            )
        )
    modules = module.get("modules")
    if depth < _MAX_DEPTH:
        for name, sub in modules.items() if isinstance(modules, dict) else ():
            if isinstance(sub, dict):
                out.extend(_recipes(sub, (*path, str(name)), depth + 1))
    return out


def parse_dump(
    dump: bytes, groups: bytes | None
) -> tuple[tuple[WorkflowDescriptor, ...], tuple[WorkflowEntrypoint, ...]]:
    """The public workflows of a `--dump-format json` dump and the entry points of its groups.

    Raises:
        ValueError: the dump is not a JSON object.
    """
    try:
        loaded = json.loads(dump)
    except RecursionError:
        raise ValueError("the dump nests too deeply") from None
    if not isinstance(loaded, dict):
        raise ValueError("the dump is not a JSON object")
    workflows = sorted(_recipes(loaded, ()), key=lambda w: natural_key(w.name))
    declared: list[str] = []
    for line in (groups or b"").decode("utf-8", "replace").splitlines()[1:]:
        name = line.strip()
        if name and name not in declared:
            declared.append(name)
    used = {w.group for w in workflows if w.group is not None}
    order = [g for g in declared if g in used] + sorted(used - set(declared), key=natural_key)
    by_name = {w.name: w for w in workflows}
    entrypoints = tuple(
        WorkflowEntrypoint(group=g, workflow=g, command=f"just {g}", description=by_name[g].description)
        for g in order
        if g in by_name
    )
    return tuple(workflows), entrypoints


def finish_workflows(probes: WorkflowProbes) -> tuple[WorkflowCatalogue, list[EnvironmentDiagnostic]]:
    """The catalogue the started calls answer (waiting for them), and what went wrong."""
    if probes.justfile is None or probes.dump is None:
        return WorkflowCatalogue(state="unavailable"), []
    dump = probes.dump.finish()
    groups = probes.groups.finish() if probes.groups is not None else None
    where = probes.justfile
    if dump.outcome == "missing":
        diagnostic = EnvironmentDiagnostic(
            severity="info",
            code="workflow_runner_missing",
            path=where,
            message="the checkout has a justfile and `just` is not on the PATH",
        )
        return WorkflowCatalogue(state="unavailable"), [diagnostic]
    problem: str | None = None
    if dump.outcome == "timeout":
        problem = f"`{SOURCE}` did not answer within {WORKFLOW_SECONDS:g} s"
    elif dump.outcome != "ok":
        problem = f"`{SOURCE}` failed"
    else:
        try:
            workflows, entrypoints = parse_dump(
                dump.stdout, groups.stdout if groups and groups.outcome == "ok" else None
            )
        except ValueError:
            problem = f"`{SOURCE}` printed no JSON object"
        else:
            catalogue = WorkflowCatalogue(state="resolved", source=SOURCE, workflows=workflows, entrypoints=entrypoints)
            return catalogue, []
    diagnostic = EnvironmentDiagnostic(severity="warning", code="workflows_unreadable", path=where, message=problem)
    return WorkflowCatalogue(state="unavailable"), [diagnostic]
