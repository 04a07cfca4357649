"""A fixture layer for the graphs and the directory contracts, written into a fresh Git checkout.

Rules with `depends_on` (one stem reference, one dangling), two decisions (`supersedes`, typed `related`
references, one naming a rule the layer lacks), a use case naming commands, doctrines, a claim and MCP tools
(one unknown), a milestone with issues under it (one issue naming a milestone and an issue that do not
exist), a claims collection file, a document, and context contracts: `.ai/README.md` exempting
`repo/adrs`, `.ai/repo/README.md`, and `.ai/repo/rules/README.md` with `children.require_contract: false`,
plus an `explicit` contract and a `replace` contract that supersedes its ancestor.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import make_checkout

MANIFEST = """\
schema: ai-repository/v1
repo:
  path: repo
local:
  path: local
  tracked: false
  implicit_context: false
sections:
  policy: repo/policy.yaml
  scope: repo/scope.yaml
  profiles: repo/profiles
  rules: repo/rules
  prompts: repo/prompts
  skills: repo/skills
  workflows: repo/workflows
  knowledge: repo/knowledge
  adrs: repo/adrs
  project: repo/project
context:
  documents: [README.md]
"""

SOURCES = """\
version: 1
sources:
  - {id: rule, kind: rule, discovery: vcs, pathspec: ':(glob).ai/repo/rules/**/*.md', required: true}
  - {id: adr, kind: adr, discovery: vcs, pathspec: ':(glob).ai/repo/adrs/*.md', required: false}
  - {id: use-case, kind: use-case, discovery: vcs, pathspec: ':(glob).ai/repo/use-cases/*.md', required: false}
  - {id: milestone, kind: milestone, discovery: vcs, pathspec: ':(glob).ai/repo/project/milestones/*.yaml'}
  - {id: issue, kind: issue, discovery: vcs, pathspec: ':(glob).ai/repo/project/issues/*.yaml'}
  - {id: claims, kind: claim, discovery: vcs, pathspec: ':(glob)docs/CLAIMS.yaml'}
  - {id: document, kind: document, discovery: vcs, pathspec: ':(glob)docs/*.md'}
"""


def _context(cid: str, title: str, *extra: str) -> str:
    lines = ["---", "schema: context/v1", f"id: {cid}", "kind: context", f"title: {title}", *extra, "---", ""]
    return "\n".join(lines) + f"\n# {title}\n"


FILES: dict[str, str] = {
    ".ai/manifest.yaml": MANIFEST,
    ".ai/repo/knowledge/sources.yaml": SOURCES,
    ".ai/README.md": _context(
        "ai", "The layer", "scope: subtree", "order: 0", "children:", "  exempt: [repo/adrs]", "tracks: [docs/guide.md]"
    ),
    ".ai/repo/README.md": _context("ai.repo", "Tracked layer", "scope: subtree", "order: 10", "audience: [agent]"),
    ".ai/repo/rules/README.md": _context(
        "ai.repo.rules",
        "Rules",
        "scope: subtree",
        "composition: replace",
        "supersedes: [ai.repo]",
        "order: 5",
        "providers: ['*']",
        "children:",
        "  require_contract: false",
    ),
    ".ai/repo/knowledge/README.md": _context(
        "ai.repo.knowledge",
        "Knowledge",
        "scope: explicit",
        "paths: [.ai/repo/project/issues]",
        "order: 1",
    ),
    ".ai/repo/rules/project/a.v1.md": (
        "---\nid: project.a\nversion: 1\nkind: rule\ntitle: Rule A\nclass: blocking\nstatus: active\n"
        "depends_on: [project.b@1]\ntags: [core]\n---\n\nRule A's body.\n"
    ),
    ".ai/repo/rules/project/b.v1.md": (
        "---\nid: project.b\nversion: 1\nkind: rule\ntitle: Rule B\nclass: advisory\n"
        "depends_on: [project.gone@1, '-']\n---\n\nRule B's body.\n"
    ),
    ".ai/repo/rules/project/c.v2.md": (
        "---\nid: project.c\nversion: 2\nkind: rule\ntitle: Rule C\nclass: advisory\ndepends_on: [project.a]\n---\n"
    ),
    ".ai/repo/adrs/0001-first.md": (
        "---\nschema: adr/v1\nid: adr-0001\nkind: adr\ntitle: The first decision\nstatus: superseded\n"
        "date: '2026-01-01'\nrelated: [rule:project.a, 'file:docs/guide.md', 'test:tests/test_x.py', claim:C1]\n"
        "---\n\n# The first decision\n"
    ),
    ".ai/repo/adrs/0002-second.md": (
        "---\nschema: adr/v1\nid: adr-0002\nkind: adr\ntitle: The second decision\nstatus: accepted\n"
        "supersedes: [adr-0001]\nrelated: [rule:project.nope, skill:writing, 'file:src/x.py']\n---\n\n# Second\n"
    ),
    ".ai/repo/use-cases/find.md": (
        "---\nid: find-things\ntitle: Find things\nstatus: active\ncommands: [plan next]\n"
        "doctrines: [project.a, some-doctrine]\nclaims: [C1]\nmcp_tools: [svc_graph, svc_nope]\n---\n\n# Find\n"
    ),
    ".ai/repo/project/milestones/M1.yaml": "id: M1\ntitle: First milestone\noutcome: Things are found.\n",
    ".ai/repo/project/issues/I1.yaml": "id: I1\nmilestone: M1\ntitle: First issue\nobjective: Start.\n",
    ".ai/repo/project/issues/I2.yaml": (
        "id: I2\nmilestone: M1\ntitle: Second issue\nobjective: Go on.\ndepends_on: [I1]\npriority: p1\n"
    ),
    ".ai/repo/project/issues/I3.yaml": (
        "id: I3\nmilestone: M9\ntitle: Stray issue\nobjective: Wander.\ndepends_on: [I404]\n"
    ),
    "docs/CLAIMS.yaml": (
        "claims:\n  - id: C1\n    title: Things are findable\n    statement: Every thing can be found.\n"
        "    source: docs/guide.md\n    implementation: src/x.py\n    test: '-'\n"
    ),
    "docs/guide.md": "# The guide\n\nHow to find things.\n",
    "src/x.py": "print('x')\n",
}


def write_graph_layer(root: Path) -> Path:
    """A Git checkout at `root` holding the fixture layer (committed)."""
    for rel, text in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return make_checkout(root, layer=False)


def empty_layer(root: Path) -> Path:
    """A Git checkout at `root` whose layer holds a manifest and nothing else."""
    (root / ".ai").mkdir(parents=True)
    (root / ".ai/manifest.yaml").write_text(MANIFEST)
    return make_checkout(root, layer=False)


KINDS = """\
schema: svc-kinds/v1
kinds:
  moment:
    format: markdown
    front_matter: required
    identity: [id]
    title: title
    description: description
  audience:
    format: markdown
    front_matter: required
    identity: [id]
    title: title
  feature:
    format: markdown
    front_matter: required
    identity: [id]
    title: title
    description: description
"""

#: Moments, an audience and features, read through the repository's own kinds (`why` and `product`).
WHY_AND_PRODUCT: dict[str, str] = {
    ".ai/repo/knowledge/kinds.yaml": KINDS,
    ".ai/repo/knowledge/sources.yaml": SOURCES
    + "  - {id: moment, kind: moment, discovery: vcs, pathspec: ':(glob).ai/repo/why/moments/*.md'}\n"
    + "  - {id: audience, kind: audience, discovery: vcs, pathspec: ':(glob).ai/repo/why/audiences/*.md'}\n"
    + "  - {id: feature, kind: feature, discovery: vcs, pathspec: ':(glob).ai/repo/features/*.md'}\n",
    ".ai/repo/why/moments/lost.md": (
        "---\nid: lost\ntitle: Lost in the layer\ndescription: Nobody knows what applies.\nstatus: stable\n"
        "severity: high\naudiences: [maintainer, newcomer]\ncapabilities: [graph.get, svc_plan_next, nope.nope]\n"
        "commands: [plan next]\nclaims: [C1]\ndoctrines: [project.a]\nuse_cases: [find-things]\nrelated: [drift]\n"
        "---\n"
    ),
    ".ai/repo/why/moments/drift.md": "---\nid: drift\ntitle: Drift\nstatus: draft\n---\n",
    ".ai/repo/why/audiences/maintainer.md": "---\nid: maintainer\ntitle: Maintainers\n---\n",
    ".ai/repo/features/graphs.md": (
        "---\nid: graphs\ntitle: Graphs of the layer\ndescription: See the layer whole.\nfeatured: true\n"
        "modules: [graph, nope]\ncommands: [plan next, fly]\nkinds: [rule, moment, gizmo]\ndocs: [docs/guide.md]\n"
        "related: [plans, hidden]\n---\n"
    ),
    ".ai/repo/features/plans.md": "---\nid: plans\ntitle: Plans\nstatus: beta\nmodules: [plan]\n---\n",
    ".ai/repo/features/hidden.md": "---\nid: hidden\ntitle: Hidden\nvisibility: internal\n---\n",
}


def write_why_and_product_layer(root: Path) -> Path:
    """The fixture layer plus moments, an audience and features (kinds the repository adds itself)."""
    for rel, text in {**FILES, **WHY_AND_PRODUCT}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return make_checkout(root, layer=False)
