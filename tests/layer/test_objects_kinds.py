"""The object index over a fixture layer: kind specs, every diagnostic code, collection files, URIs, golden."""

from __future__ import annotations

import shutil
from pathlib import Path

import msgspec
import pytest

from svc.layer import ObjectIndex, Repository
from svc.layer._objects import encode_identity
from tests.conftest import EXAMPLE_LAYER, make_checkout

SOURCES = """\
version: 1
sources:
  - {id: rule, kind: rule, pathspec: ':(glob).ai/repo/rules/**/*.md'}
  - {id: moment, kind: moment, pathspec: ':(glob).ai/repo/moments/*.yaml'}
  - {id: odd, kind: nope, pathspec: ':(glob).ai/repo/odd/*.md'}
  - {id: claims, kind: claim, pathspec: ':(glob)docs/CLAIMS.yaml'}
  - {id: document, kind: document, pathspec: ':(glob)docs/**/*.md'}
"""
KINDS = """\
schema: svc-kinds/v1
declared: []
kinds:
  moment:
    format: yaml
    schema: moment.schema.json
    identity: [id]
    title: title
  rule:
    format: text
"""
MOMENT_SCHEMA = """\
{"type": "object", "required": ["id", "at"], "additionalProperties": false,
 "properties": {"id": {"type": "string"}, "at": {"type": "string"}, "title": {"type": "string"}}}
"""
SCOPE = "version: 1\nin: [.ai/, docs/]\nout:\n  paths: [docs/private/]\n"


def context(cid: str, extra: str = "") -> str:
    return f"---\nschema: context/v1\nid: {cid}\nkind: context\ntitle: {cid} contract\n{extra}---\n\n# {cid}\n"


FILES: dict[str, str | bytes] = {
    ".ai/README.md": context("ai", "children:\n  require_contract: true\n"),
    ".ai/repo/knowledge/sources.yaml": SOURCES,
    ".ai/repo/knowledge/kinds.yaml": KINDS,
    ".ai/repo/knowledge/schemas/moment.schema.json": MOMENT_SCHEMA,
    ".ai/repo/scope.yaml": SCOPE,
    ".ai/repo/rules/README.md": context("ai.repo.rules"),
    ".ai/repo/rules/a.v1.md": "---\nid: a\nversion: 1\ntitle: Rule A\ntags: [x, 3]\n---\n\n# A\n",
    ".ai/repo/rules/b.v2.md": "---\nid: b\nversion: 2\ntitle: Rule B\ndepends_on: [a@1, gone@1]\n---\nbody\n",
    ".ai/repo/rules/plain.md": "# Just prose\n\nno front matter\n",
    ".ai/repo/rules/twin-1.md": "---\nid: twin\nversion: 1\n---\n",
    ".ai/repo/rules/twin-2.md": "---\nid: twin\nversion: 1\n---\n",
    ".ai/repo/rules/noversion.md": "---\nid: c\n---\n",
    ".ai/repo/rules/claims-adr.md": "---\nid: d\nversion: 1\nkind: adr\n---\n",
    ".ai/repo/rules/open.md": "---\nid: e\nversion: 1\n",
    ".ai/repo/rules/latin1.md": b"---\nid: f\nversion: 1\ntitle: caf\xe9\n---\n",
    ".ai/repo/rules/sub/README.md": "# no contract here\n",
    ".ai/repo/rules/sub/v2/README.md": "---\nschema: context/v2\nid: later\nkind: context\n---\n",
    ".ai/repo/rules/weird id.md": "---\nid: has space\nversion: 1\n---\n",
    ".ai/repo/adrs/0001-first.md": "---\nschema: adr/v1\nid: adr-0001\nkind: adr\ntitle: First decision\n---\n",
    ".ai/repo/use-cases/find.md": "---\nid: find-an-object\ntitle: Find an object\n---\n",
    ".ai/repo/moments/m1.yaml": "id: m1\nat: '2026-01-01'\ntitle: First\n",
    ".ai/repo/moments/m2.yaml": "id: m2\nat: x\nmood: good\ncolour: red\n",
    ".ai/repo/moments/m3.yaml": "title: no id\nat: y\n",
    ".ai/repo/moments/m4.yaml": "- not\n- a mapping\n",
    ".ai/repo/odd/x.md": "---\nid: x\n---\n",
    "docs/CLAIMS.yaml": "claims:\n  - id: fast\n    title: Fast\n  - plain text\n  - title: no id\n  - id: 'a:b'\n",
    "docs/guide.md": "# Guide\n\ntext\n",
    "docs/private/secret.md": "# Secret\n",
}


@pytest.fixture(scope="module")
def layer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_checkout(tmp_path_factory.mktemp("fixture") / "repo", layer=False, git=False)
    (root / ".ai").mkdir()
    shutil.copy(EXAMPLE_LAYER / "manifest.yaml", root / ".ai/manifest.yaml")
    for rel, text in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
    (root / ".ai/repo/rules/huge.md").write_bytes(b"x" * (4 * 1024 * 1024 + 1))
    return root


@pytest.fixture(scope="module")
def index(layer: Path) -> ObjectIndex:
    return ObjectIndex.build(Repository.discover(layer))


def test_the_fixture_layers_objects(index: ObjectIndex) -> None:
    assert [(o.uri, o.path, o.member) for o in index.objects] == [
        ("svc://adr/.ai/repo/adrs/0001-first.md", ".ai/repo/adrs/0001-first.md", None),
        ("svc://claim/a:b", "docs/CLAIMS.yaml", "claims.3"),
        ("svc://claim/fast", "docs/CLAIMS.yaml", "claims.0"),
        ("svc://context/ai", ".ai/README.md", None),
        ("svc://context/ai.repo.rules", ".ai/repo/rules/README.md", None),
        ("svc://document/.ai/repo/rules/plain.md", ".ai/repo/rules/plain.md", None),
        ("svc://document/docs/guide.md", "docs/guide.md", None),
        ("svc://moment/m1", ".ai/repo/moments/m1.yaml", None),
        ("svc://rule/a@1", ".ai/repo/rules/a.v1.md", None),
        ("svc://rule/b@2", ".ai/repo/rules/b.v2.md", None),
        ("svc://use-case/find-an-object", ".ai/repo/use-cases/find.md", None),
    ]
    assert index.kinds == ("adr", "claim", "context", "document", "moment", "rule", "use-case")
    assert [o.uri for o in index.of_kind("claim")] == ["svc://claim/a:b", "svc://claim/fast"]
    assert index.state == "degraded"
    assert len(index.fingerprint) == 64


def test_every_diagnostic_code(index: ObjectIndex) -> None:
    codes = {(d.code, d.path, d.member) for d in index.diagnostics}
    assert codes == {
        ("kind_mismatch", ".ai/repo/knowledge/kinds.yaml", None),
        ("unknown_kind", ".ai/repo/odd/x.md", None),
        ("missing_field", ".ai/repo/moments/m3.yaml", None),
        ("malformed_yaml", ".ai/repo/moments/m4.yaml", None),
        ("unknown_key", ".ai/repo/moments/m2.yaml", None),
        ("kind_mismatch", ".ai/repo/rules/claims-adr.md", None),
        ("oversized", ".ai/repo/rules/huge.md", None),
        ("invalid_utf8", ".ai/repo/rules/latin1.md", None),
        ("missing_field", ".ai/repo/rules/noversion.md", None),
        ("malformed_front_matter", ".ai/repo/rules/open.md", None),
        ("missing_context_contract", ".ai/repo/rules/sub/README.md", None),
        ("unsupported_version", ".ai/repo/rules/sub/v2/README.md", None),
        ("duplicate_identity", ".ai/repo/rules/twin-1.md", None),
        ("duplicate_identity", ".ai/repo/rules/twin-2.md", None),
        ("schema_violation", ".ai/repo/rules/weird id.md", None),
        ("malformed_yaml", "docs/CLAIMS.yaml", "claims.1"),
        ("missing_field", "docs/CLAIMS.yaml", "claims.2"),
        ("out_of_scope", "docs/private/secret.md", None),
    }
    unknown = next(d for d in index.diagnostics if d.code == "unknown_key")
    assert "mood, colour" in unknown.message
    warnings = {d.code for d in index.diagnostics if d.severity == "warning"}
    assert warnings == {"kind_mismatch", "out_of_scope"}


def test_one_rule_whole(index: ObjectIndex) -> None:
    rule = index.get("svc://rule/b@2")
    assert rule is not None
    assert msgspec.to_builtins(rule) == {
        "uri": "svc://rule/b@2",
        "id": "rule.b@2",
        "kind": "rule",
        "identity": "b@2",
        "title": "Rule B",
        "metadata": {"id": "b", "version": 2, "title": "Rule B", "depends_on": ["a@1", "gone@1"]},
        "provenance": {
            "path": ".ai/repo/rules/b.v2.md",
            "directory": ".ai/repo/rules",
            "source_class": "rule",
            "section": "rules",
            "bytes": len(FILES[".ai/repo/rules/b.v2.md"]),
        },
        "media_type": "text/markdown",
        "content": FILES[".ai/repo/rules/b.v2.md"],
    }
    a = index.get("svc://rule/a@1")
    assert a is not None
    assert a.tags == ("x",)


def test_a_collection_member_is_json_and_named_by_its_list_position(index: ObjectIndex) -> None:
    claim = index.get("svc://claim/fast")
    assert claim is not None
    assert msgspec.to_builtins(claim) == {
        "uri": "svc://claim/fast",
        "id": "claim.fast",
        "kind": "claim",
        "identity": "fast",
        "title": "Fast",
        "metadata": {"id": "fast", "title": "Fast"},
        "provenance": {
            "path": "docs/CLAIMS.yaml",
            "directory": "docs",
            "source_class": "claims",
            "bytes": len(FILES["docs/CLAIMS.yaml"]),
            "member": "claims.0",
        },
        "media_type": "application/json",
        "content": '{\n  "id": "fast",\n  "title": "Fast"\n}',
    }


def test_context_contracts_titles_and_the_root_directory(index: ObjectIndex) -> None:
    root = index.get("svc://context/ai")
    assert root is not None
    assert (root.title, root.provenance.directory, root.provenance.source_class) == ("ai contract", ".ai", "context")
    assert root.metadata["children"] == {"require_contract": True}
    plain = index.get("svc://document/.ai/repo/rules/plain.md")
    assert plain is not None
    assert (plain.title, plain.provenance.source_class) == ("Just prose", "rule")
    guide = index.get("svc://document/docs/guide.md")
    assert guide is not None
    assert guide.provenance.section is None


def test_identities_are_percent_encoded_path_segments_and_lookups_decode() -> None:
    assert encode_identity("rule.x@1") == "rule.x@1"
    assert encode_identity("a:b/c d?e#f%") == "a:b/c%20d%3Fe%23f%25"
    assert encode_identity("ü") == "%C3%BC"


def test_a_lookup_accepts_the_decoded_uri(tmp_path: Path) -> None:
    root = make_checkout(tmp_path / "c", git=False)
    (root / ".ai/repo/rules/project/odd name.md").write_text("# Odd\n", encoding="utf-8")
    index = ObjectIndex.build(Repository.discover(root))
    served = "svc://document/.ai/repo/rules/project/odd%20name.md"
    obj = index.get(served)
    assert obj is not None
    assert index.get("svc://document/.ai/repo/rules/project/odd name.md") is obj


def test_the_reference_corpus_loads_and_lists(corpus_copy: Path) -> None:
    index = ObjectIndex.build(Repository.discover(corpus_copy))
    assert len(index.of_kind("issue")) == 406
    assert len(index.of_kind("milestone")) == 65
    assert index.state == "degraded"
    refused = sorted(d.path.rsplit("/", 1)[-1] for d in index.diagnostics if d.code == "malformed_yaml")
    assert refused == [f"I{n}.yaml" for n in ("0823", "1105", "1108", "1109", "1111", "2067")]
    assert all(not d.path.startswith("/") for d in index.diagnostics)
