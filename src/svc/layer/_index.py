"""The index of the tracked layer: every file under `.ai/repo/`, with a fingerprint of their content.

Built once at start and again when the repository generation changes; `health.ready` reports its size and
the registry fingerprint folds its fingerprint in.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from svc.layer._repository import Repository

__all__ = ["LayerIndex"]


@dataclass(frozen=True, slots=True)
class LayerIndex:
    """Repository-relative paths of the tracked layer files (byte order) and their fingerprint."""

    paths: tuple[str, ...]
    fingerprint: str

    @classmethod
    def build(cls, repo: Repository) -> LayerIndex:
        """Walk `.ai/repo/` (nothing when the layer is absent)."""
        base = repo.layer / "repo"
        found: list[str] = []
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            for name in filenames:
                found.append(repo.relative(Path(dirpath) / name))
        found.sort(key=lambda p: p.encode())
        digest = hashlib.sha256()
        for rel in found:
            try:
                content = (repo.root / rel).read_bytes()
            except OSError:
                continue
            digest.update(rel.encode() + b"\0" + hashlib.sha256(content).digest())
        return cls(paths=tuple(found), fingerprint=digest.hexdigest())

    def __len__(self) -> int:
        return len(self.paths)
