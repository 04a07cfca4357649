"""The layer index: every readable file under `.ai/repo/`, by repository-relative path, and their fingerprint."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from svc.layer import LayerIndex, Repository


def test_the_index_names_every_file_by_its_repository_path_in_byte_order_and_fingerprints_them(
    tmp_path: Path,
) -> None:
    files = {
        ".ai/repo/project/project.yaml": b"name: demo\n",
        ".ai/repo/project/issues/I0001.yaml": b"id: I0001\n",
        ".ai/repo/project/issues/I0002.yaml": b"id: I0002\n",
        ".ai/repo/Z.md": b"# upper case sorts first\n",
        ".ai/repo/rules/deep/er/rule.md": b"rule\n",
    }
    for rel, data in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    os.mkfifo(tmp_path / ".ai" / "repo" / "rules" / "pipe")
    index = LayerIndex.build(Repository(root=tmp_path, git_dir=None, common_dir=None))
    expected = sorted(files, key=str.encode)
    assert index.paths == tuple(expected)
    digest = hashlib.sha256()
    for rel in expected:
        digest.update(rel.encode() + b"\0" + hashlib.sha256(files[rel]).digest())
    assert index.fingerprint == digest.hexdigest()
    assert len(index.unreadable) == 1
    assert ".ai/repo/rules/pipe" in index.unreadable[0]
