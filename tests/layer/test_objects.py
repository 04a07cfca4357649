"""The layer's objects: discovery by source class, identities, `svc://` URIs, titles and media types."""

from __future__ import annotations

import gc
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from svc.layer import ObjectIndex, Repository, object_uri
from svc.layer import _objects as objects_module
from svc.layer._objects import _heading, glob_regex, source_classes
from tests.conftest import make_checkout


@pytest.fixture
def index(checkout: Path) -> ObjectIndex:
    return ObjectIndex.build(Repository.discover(checkout))


def test_every_kind_of_svcs_own_layer_is_indexed_with_its_identity(index: ObjectIndex) -> None:
    assert set(index.kinds) >= {"adr", "context", "issue", "milestone", "policy", "profile", "prompt", "rule"}
    assert index.state == "ok", index.diagnostics
    issue = index.get("svc://issue/I0001")
    assert issue is not None
    assert (issue.id, issue.kind, issue.identity) == ("issue.I0001", "issue", "I0001")
    assert issue.path == ".ai/repo/project/issues/I0001.yaml"
    assert issue.media_type == "application/yaml"
    assert issue.title
    assert issue.description
    milestone = index.get("svc://milestone/mcp")
    assert milestone is not None
    assert milestone.title == "The registry answers over MCP, and one server serves a checkout"
    assert milestone.description is not None
    assert milestone.description.startswith("Every capability exposed to MCP")
    rule = index.get("svc://rule/project.http-never-writes-the-repository@1")
    assert rule is not None
    assert (rule.media_type, rule.title) == ("text/markdown", "HTTP never writes the repository")
    assert "http" in rule.tags
    profile = index.get("svc://profile/deep-work")
    assert profile is not None
    assert profile.media_type == "application/yaml"
    prompt = index.get("svc://prompt/take-next-issue")
    assert prompt is not None
    assert prompt.media_type == "text/markdown"
    context = index.get("svc://context/ai.repo")
    assert context is not None
    assert context.path == ".ai/repo/README.md"


def test_kinds_without_identity_fields_are_named_by_their_path(index: ObjectIndex) -> None:
    policy = index.get("svc://policy/.ai/repo/policy.yaml")
    assert policy is not None
    assert policy.id == "policy..ai/repo/policy.yaml"
    adr = next(o for o in index.objects if o.source_class == "adr")
    assert adr.kind == "adr"
    assert adr.uri == object_uri("adr", adr.path)
    assert adr.title is not None
    assert adr.title.startswith("HTTP is loopback-only")


def test_objects_are_in_uri_byte_order_and_unique(index: ObjectIndex) -> None:
    uris = [o.uri for o in index.objects]
    assert uris == sorted(uris, key=str.encode)
    assert len(set(uris)) == len(uris) == len(index)


def test_read_answers_the_files_bytes(checkout: Path, index: ObjectIndex) -> None:
    issue = index.get("svc://issue/I0002")
    assert issue is not None
    repo = Repository.discover(checkout)
    assert index.read(issue, repo) == (checkout / issue.path).read_bytes()


def test_only_tracked_files_are_objects_in_git_and_every_file_outside_it(tmp_path: Path) -> None:
    tracked = make_checkout(tmp_path / "git")
    (tracked / ".ai/repo/project/issues/I9999.yaml").write_text("id: I9999\ntitle: untracked\n", encoding="utf-8")
    assert ObjectIndex.build(Repository.discover(tracked)).get("svc://issue/I9999") is None
    subprocess.run(["git", "add", "-A"], cwd=tracked, check=True, capture_output=True)
    assert ObjectIndex.build(Repository.discover(tracked)).get("svc://issue/I9999") is not None
    plain = make_checkout(tmp_path / "plain", git=False)
    (plain / ".ai/repo/project/issues/I9999.yaml").write_text("id: I9999\ntitle: on disk\n", encoding="utf-8")
    found = ObjectIndex.build(Repository.discover(plain)).get("svc://issue/I9999")
    assert found is not None
    assert found.title == "on disk"


def test_claims_are_one_object_per_member(tmp_path: Path) -> None:
    root = make_checkout(tmp_path / "claims", git=False)
    (root / "docs").mkdir()
    (root / "docs/CLAIMS.yaml").write_text(
        "claims:\n  - id: fast\n    title: It is fast\n    statement: answers in a millisecond\n  - id: small\n",
        encoding="utf-8",
    )
    index = ObjectIndex.build(Repository.discover(root))
    fast = index.get("svc://claim/fast")
    assert fast is not None
    assert (fast.title, fast.description, fast.member) == ("It is fast", "answers in a millisecond", "claims.0")
    assert fast.media_type == "application/json"
    assert index.get("svc://claim/small") is not None
    assert index.read(fast, Repository.discover(root)) == (
        b'{\n  "id": "fast",\n  "title": "It is fast",\n  "statement": "answers in a millisecond"\n}'
    )


def test_without_sources_yaml_the_layer_sections_are_the_classes(tmp_path: Path) -> None:
    root = make_checkout(tmp_path / "bare", git=False)
    (root / ".ai/repo/knowledge/sources.yaml").unlink()
    repo = Repository.discover(root)
    assert {c.kind for c in source_classes(repo, {})} == {
        "policy",
        "scope",
        "profile",
        "rule",
        "prompt",
        "milestone",
        "issue",
    }
    index = ObjectIndex.build(repo)
    assert index.get("svc://issue/I0001") is not None
    assert not any(o.kind == "document" and not o.path.startswith(".ai/") for o in index.objects)


def test_the_build_reads_every_file_with_the_collector_paused_and_restores_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_checkout(tmp_path / "paused", git=False)
    collecting: list[bool] = []
    read_bytes = objects_module._Builder.read_bytes

    def watched(self: Any, *args: Any) -> Any:
        collecting.append(gc.isenabled())
        return read_bytes(self, *args)

    monkeypatch.setattr(objects_module._Builder, "read_bytes", watched)
    assert gc.isenabled()
    assert len(ObjectIndex.build(Repository.discover(root))) > 0
    assert collecting
    assert not any(collecting), "no collection while the files are read"
    assert gc.isenabled()


def test_a_checkout_without_a_layer_has_no_object(tmp_path: Path) -> None:
    assert len(ObjectIndex.build(Repository.discover(tmp_path))) == 0


def test_an_unparseable_record_is_no_object_but_a_diagnostic(tmp_path: Path) -> None:
    root = make_checkout(tmp_path / "broken", git=False)
    (root / ".ai/repo/project/issues/I0001.yaml").write_text("id: [unclosed\n", encoding="utf-8")
    index = ObjectIndex.build(Repository.discover(root))
    assert index.get("svc://issue/.ai/repo/project/issues/I0001.yaml") is None
    assert index.get("svc://issue/I0001") is None
    assert [(d.code, d.path) for d in index.diagnostics] == [("malformed_yaml", ".ai/repo/project/issues/I0001.yaml")]
    assert index.state == "degraded"


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("docs/*.md", "docs/a.md", True),
        ("docs/*.md", "docs/sub/a.md", False),
        ("*.md", "README.md", True),
        ("*.md", "docs/README.md", False),
        ("src/**/*.py", "src/a.py", True),
        ("src/**/*.py", "src/x/y/a.py", True),
        ("tests/**/test_*.py", "tests/api/test_mcp.py", True),
        ("tests/**/test_*.py", "tests/api/conftest.py", False),
        (".ai/repo/rules/**/*.md", ".ai/repo/rules/project/x.v1.md", True),
    ],
)
def test_glob_patterns_keep_star_inside_one_segment(pattern: str, path: str, matches: bool) -> None:
    assert bool(glob_regex(pattern).match(path)) is matches


def test_a_heading_is_found_in_linear_time() -> None:
    assert _heading("intro\n# Title ##\n") == "Title"
    assert _heading("#  Spaced  \n") == "Spaced"
    assert _heading("no heading") is None
    started = time.perf_counter()
    assert _heading("# a" + "#" * 200_000 + "b") is not None
    assert time.perf_counter() - started < 0.5


def test_discovery_keeps_only_regular_files_of_the_checkout(tmp_path: Path) -> None:
    root = make_checkout(tmp_path / "c", git=False)
    rules = root / ".ai" / "repo" / "rules"
    os.mkfifo(rules / "pipe.md")
    os.symlink("/etc/passwd", rules / "passwd.md")
    index = ObjectIndex.build(Repository.discover(root))
    paths = {o.path for o in index.objects}
    assert ".ai/repo/rules/pipe.md" not in paths
    assert ".ai/repo/rules/passwd.md" not in paths
    assert any(p.startswith(".ai/repo/rules/") for p in paths)
    assert {(d.code, d.path) for d in index.diagnostics} == {
        ("not_a_file", ".ai/repo/rules/pipe.md"),
        ("symlink", ".ai/repo/rules/passwd.md"),
    }


def test_titles_descriptions_and_tags_of_an_object_are_bounded(tmp_path: Path) -> None:
    root = make_checkout(tmp_path / "c", git=False)
    milestones = root / ".ai" / "repo" / "project" / "milestones"
    milestones.mkdir(parents=True, exist_ok=True)
    tags = "".join(f"  - {'t' * 300}\n" for _ in range(100))
    (milestones / "MBIG.yaml").write_text(f"id: MBIG\ntitle: {'x' * 5000}\noutcome: {'y ' * 5000}\ntags:\n{tags}")
    obj = ObjectIndex.build(Repository.discover(root)).get(object_uri("milestone", "MBIG"))
    assert obj is not None
    assert obj.title is not None
    assert len(obj.title) == 1000
    assert obj.description is not None
    assert len(obj.description) == 1000
    assert len(obj.tags) == 64
    assert all(len(t) == 200 for t in obj.tags)
