"""The dependencies are declared exactly: `[project] dependencies` is what src/svc imports, and the test extra
covers what tests/ and bench/ import besides.

Imports are read with `ast` (every import, at any depth) and their top-level modules are mapped to
distributions with `importlib.metadata.packages_distributions()`, so the installed environment decides which
distribution provides `yaml` or `mcp_types`.
"""

from __future__ import annotations

import ast
import importlib.metadata
import sys
import tomllib
from collections.abc import Iterable
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]

#: Declared but not imported by src, on purpose (none now: `trio-websocket`, the live channel's client, is
#: imported by `svc executions follow`).
DECLARED_NOT_IMPORTED: frozenset[str] = frozenset()


def _top_level_imports(paths: Iterable[Path], own: frozenset[str]) -> dict[str, list[str]]:
    """Top-level module → where it is imported, leaving out the standard library, relative and `own` imports."""
    found: dict[str, list[str]] = {}
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.partition(".")[0]
                if top in sys.stdlib_module_names or top in own:
                    continue
                found.setdefault(top, []).append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def _distributions(imports: dict[str, list[str]]) -> dict[str, list[str]]:
    """Distribution (normalised name) → where a module it provides is imported."""
    providers = importlib.metadata.packages_distributions()
    found: dict[str, list[str]] = {}
    unknown: list[str] = []
    for module, where in sorted(imports.items()):
        dists = sorted({canonicalize_name(d) for d in providers.get(module, [])})
        if len(dists) != 1:
            unknown.append(f"{module} ({where[0]}): provided by {dists or 'no installed distribution'}")
            continue
        found.setdefault(dists[0], []).extend(where)
    assert not unknown, "\n".join(unknown)
    return found


def _declared(requirements: Iterable[str]) -> set[str]:
    return {canonicalize_name(Requirement(r).name) for r in requirements}


def _project() -> dict[str, object]:
    with (ROOT / "pyproject.toml").open("rb") as file:
        project: dict[str, object] = tomllib.load(file)["project"]
    return project


def _dependencies() -> set[str]:
    requirements = _project()["dependencies"]
    assert isinstance(requirements, list)
    return _declared(requirements)


def _test_extra() -> set[str]:
    extras = _project()["optional-dependencies"]
    assert isinstance(extras, dict)
    return _declared(extras["test"])


def test_src_imports_exactly_the_declared_dependencies() -> None:
    imported = _distributions(_top_level_imports(sorted((ROOT / "src" / "svc").rglob("*.py")), frozenset({"svc"})))
    declared = _dependencies()
    undeclared = {dist: where for dist, where in imported.items() if dist not in declared}
    assert not undeclared, f"imported by src/svc, missing from [project] dependencies: {undeclared}"
    unused = declared - imported.keys()
    extra = sorted(unused - DECLARED_NOT_IMPORTED)
    assert not extra, (
        f"in [project] dependencies, never imported by src/svc (move test-only ones to the extra): {extra}"
    )
    stale = sorted(DECLARED_NOT_IMPORTED - unused)
    assert not stale, f"now imported by src/svc: drop {stale} from DECLARED_NOT_IMPORTED"


def test_tests_and_bench_import_only_what_is_declared_for_them() -> None:
    bench = ROOT / "bench"
    own = frozenset({"svc", "tests"} | {path.stem for path in bench.glob("*.py")})
    paths = sorted([*(ROOT / "tests").rglob("*.py"), *bench.rglob("*.py")])
    imported = _distributions(_top_level_imports(paths, own))
    covered = _dependencies() | _test_extra()
    uncovered = {dist: where for dist, where in imported.items() if dist not in covered}
    assert not uncovered, f"imported by tests/ or bench/, missing from dependencies and the test extra: {uncovered}"
