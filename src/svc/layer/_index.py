"""The index of the tracked layer: every file under `.ai/repo/`, with a fingerprint of their content.

Built once at start and again when the repository generation changes (in a worker thread); `health.ready`
reports its size and the registry fingerprint folds its fingerprint in. Files are read under the reading
rule (`read_repository_file`): a FIFO, a device, a symlink leaving the checkout or a file over 4 MiB is
left out of the index and named in `unreadable`; symlinked directories are not descended.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from svc.layer._read import Unreadable, clip, read_repository_dir
from svc.layer._repository import Repository

__all__ = ["LayerIndex"]


@dataclass(frozen=True, slots=True)
class LayerIndex:
    """Repository-relative paths of the readable layer files (byte order), their fingerprint, and the refusals.

    `unreadable` names each file left out and why (`.ai/repo/x.yaml: not a regular file (a FIFO)`).
    """

    paths: tuple[str, ...]
    fingerprint: str
    unreadable: tuple[str, ...] = ()

    @classmethod
    def build(cls, repo: Repository) -> LayerIndex:
        """Walk `.ai/repo/` (nothing when the layer is absent). Blocking: call it from a worker thread."""
        base = repo.layer / "repo"
        found: list[tuple[str, bytes]] = []
        refused: list[str] = []
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            here = Path(dirpath)
            prefix = repo.relative(here) + "/"
            try:
                for name, data in read_repository_dir(repo.root, here, set(filenames).__contains__):
                    if isinstance(data, Unreadable):
                        refused.append(clip(str(data)))
                    else:
                        found.append((prefix + name, hashlib.sha256(data).digest()))
            except FileNotFoundError:
                continue
            except Unreadable as exc:
                refused.append(clip(str(exc)))
        found.sort(key=lambda item: item[0].encode())
        digest = hashlib.sha256()
        for rel, content in found:
            digest.update(rel.encode() + b"\0" + content)
        return cls(
            paths=tuple(rel for rel, _ in found), fingerprint=digest.hexdigest(), unreadable=tuple(sorted(refused))
        )

    def __len__(self) -> int:
        return len(self.paths)
