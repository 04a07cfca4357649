"""Where a checkout's plan records live: the manifest's `project` section under `.ai/`, and which names are records."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from svc.layer import DEFAULT_SECTIONS, Repository, clip, read_manifest
from svc.plan._model import PlanFinding

__all__ = ["locate", "project_directory", "select_record"]


def project_directory(repo: Repository) -> Path | None:
    """The plan records' directory (the manifest's `project` section), or None when the layer is absent."""
    return locate(repo)[0]


def _layer_finding(message: str) -> PlanFinding:
    return PlanFinding(level="FAIL", code="layer", subject="layer", message=clip(message))


def locate(repo: Repository) -> tuple[Path | None, list[PlanFinding]]:
    """The records' directory, or None with the findings that say why the layer cannot be read."""
    if not repo.has_layer:
        return None, []
    reading = read_manifest(repo)
    if not reading.usable:
        return None, [_layer_finding(f"{p}; the layer reads as absent, so the plan is empty") for p in reading.problems]
    rel = reading.sections.get("project", DEFAULT_SECTIONS["project"])
    parts = PurePosixPath(rel).parts
    if not parts or PurePosixPath(rel).is_absolute() or ".." in parts:
        return None, [_layer_finding(f"the project section {rel!r} is not a path inside .ai/; the plan is empty")]
    return repo.layer / rel, []


def select_record(name: str) -> bool:
    """Whether a directory entry's name is a record file's (`*.yaml`, dot files skipped)."""
    return not name.startswith(".") and name.endswith(".yaml")
