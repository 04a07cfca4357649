"""The packages of `src/svc` form layers: no circle, no import upwards, no web, MCP or CLI library in the core;
and no two modules import each other, however indirectly.

Every import of every module is read with `ast`: at module level, inside functions (lazy), and under
`if TYPE_CHECKING:` (type-only). Each is mapped to the svc package it names (`svc.registry._binding` is
`registry`; the top-level `svc._errors` and `svc._version` are `base`; `svc/__init__.py` and `svc/__main__.py`
are `svc`). The table is the one of `docs/architecture.md`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

#: The floors, bottom up. A package may import only packages on floors below its own (and itself).
FLOORS: tuple[tuple[str, ...], ...] = (
    ("base",),  # svc/_errors.py, svc/_gc.py, svc/_lazy.py, svc/_log.py, svc/_version.py
    ("layer",),
    ("registry", "plan"),
    ("surfaces", "runtime"),
    ("nursery",),
    ("mesh_udp",),
    ("capabilities",),
    ("api",),
    ("host",),
    ("cli",),
    ("svc",),  # svc/__init__.py, svc/__main__.py
)
#: The top-level modules of `svc` that form the `base` package.
BASE_MODULES = frozenset({"_errors", "_gc", "_lazy", "_log", "_version"})
#: The modules of `svc` itself that form the `svc` package (the top).
TOP_MODULES = frozenset({"__init__", "__main__"})
#: The modules and subpackages directly under `svc`; any other `svc.X` is a name of `svc/__init__.py`.
SUBMODULES = frozenset(
    path.stem for path in (SRC / "svc").iterdir() if path.suffix == ".py" or (path / "__init__.py").is_file()
)


def _below(package: str) -> frozenset[str]:
    names: set[str] = set()
    for floor in FLOORS:
        if package in floor:
            return frozenset(names)
        names.update(floor)
    raise KeyError(package)


#: What each package may import besides itself, at run time or for type checking. `base` (the exception
#: tree and the version) is open to every package.
MAY_IMPORT: dict[str, frozenset[str]] = {
    "base": frozenset(),
    "layer": frozenset({"base"}),
    "registry": frozenset({"base", "layer"}),
    "plan": frozenset({"base", "layer"}),
    "surfaces": frozenset({"base", "registry", "layer"}),
    "runtime": frozenset({"base", "registry", "layer"}),
    "nursery": frozenset({"base", "runtime", "registry"}),
    "mesh_udp": frozenset({"base", "runtime", "registry", "layer"}),
    "capabilities": _below("capabilities"),
    "api": _below("api"),
    "host": _below("host"),
    "cli": frozenset({"base", "layer", "registry", "surfaces", "runtime", "capabilities", "host"}),
    "svc": _below("svc"),
}
#: What a package may import only lazily: inside a function, or under `TYPE_CHECKING`. The command line loads
#: the execution plane, the mesh, the plan and the web and MCP stacks on the command that needs them.
MAY_IMPORT_LAZILY: dict[str, frozenset[str]] = {
    "cli": _below("cli"),
}

#: The sans-I/O core: the model, the runtime and its components, the capabilities; HTTP, MCP and CLI sit above.
CORE = frozenset({"base", "layer", "registry", "plan", "surfaces", "runtime", "nursery", "mesh_udp", "capabilities"})
#: The web, MCP and CLI libraries the core never imports, not even lazily.
WEB_MCP_CLI = (
    "quart",
    "quart_trio",
    "hypercorn",
    "mcp",
    "mcp_types",
    "asyncclick",
    "click",
    "starlette",
    "httpx",
    "httpx2",
    "wsproto",
    "trio_websocket",
    "h11",
    "markdown_it",
)


@dataclass(frozen=True, slots=True)
class Import:
    """One import statement's view of one module it names."""

    path: str
    line: int
    module: str
    #: Inside a function: runs only when the function is called.
    lazy: bool
    #: Under `if TYPE_CHECKING:`: never runs.
    type_only: bool
    #: The names a `from module import ...` takes (a submodule among them is imported too).
    names: tuple[str, ...] = ()

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def package_of(module: str) -> str | None:
    """The svc package a dotted module name belongs to, or None for a module outside svc."""
    parts = module.split(".")
    if parts[0] != "svc":
        return None
    if len(parts) == 1 or parts[1] in TOP_MODULES or parts[1] not in SUBMODULES:
        return "svc"
    if parts[1] in BASE_MODULES:
        return "base"
    return parts[1]


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


class _Reader(ast.NodeVisitor):
    def __init__(self, path: str, module: str, is_package: bool) -> None:
        self.path = path
        self.package = module if is_package else module.rpartition(".")[0]
        self.functions = 0
        self.type_checking = 0
        self.found: list[Import] = []

    def _add(self, node: ast.stmt, module: str, names: tuple[str, ...] = ()) -> None:
        lazy, type_only = self.functions > 0, self.type_checking > 0
        self.found.append(Import(self.path, node.lineno, module, lazy, type_only, names))

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.functions += 1
        self.generic_visit(node)
        self.functions -= 1

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_If(self, node: ast.If) -> None:
        if not _is_type_checking(node.test):
            self.generic_visit(node)
            return
        self.type_checking += 1
        for child in node.body:
            self.visit(child)
        self.type_checking -= 1
        for child in node.orelse:
            self.visit(child)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:
            anchor = self.package.split(".")
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join([*anchor, *([node.module] if node.module else [])])
        if base == "svc" or node.module is None:
            # `from svc import registry` names the subpackage; `from svc import SvcError` names the top.
            for alias in node.names:
                self._add(node, f"{base}.{alias.name}")
        else:
            self._add(node, base, tuple(alias.name for alias in node.names))


def read_imports(source: str, path: str, module: str, *, is_package: bool = False) -> list[Import]:
    """Every import in `source`, with relative imports resolved against `module`."""
    reader = _Reader(path, module, is_package)
    reader.visit(ast.parse(source, filename=path))
    return reader.found


def svc_files() -> Iterator[tuple[str, Path]]:
    for path in sorted((SRC / "svc").rglob("*.py")):
        yield module_name(path, SRC), path


def all_imports() -> list[tuple[str, Import]]:
    """(the importing module's package, the import) for every import of src/svc."""
    found: list[tuple[str, Import]] = []
    for module, path in svc_files():
        package = package_of(module)
        assert package is not None
        where = str(path.relative_to(SRC.parent))
        for imp in read_imports(path.read_text(), where, module, is_package=path.stem == "__init__"):
            found.append((package, imp))
    return found


def package_graph(imports: Iterable[tuple[str, Import]], *, type_only: bool) -> dict[str, set[str]]:
    """Package → the svc packages it imports (type-only imports counted if asked)."""
    graph: dict[str, set[str]] = {}
    for source, imp in imports:
        graph.setdefault(source, set())
        target = package_of(imp.module)
        if target is None or target == source or (imp.type_only and not type_only):
            continue
        graph[source].add(target)
    return graph


def module_graph(*, type_only: bool) -> dict[str, set[str]]:
    """Module → the svc modules it imports, at module level or lazily (type-only imports counted if asked).

    `from svc.plan import read_snapshot` names the module `svc.plan` (the package's `__init__`); `from svc.cli
    import _main` names `svc.cli._main`.
    """
    modules = dict(svc_files())
    graph: dict[str, set[str]] = {module: set() for module in modules}
    for module, path in modules.items():
        for imp in read_imports(path.read_text(), str(path), module, is_package=path.stem == "__init__"):
            if imp.type_only and not type_only:
                continue
            submodules = {f"{imp.module}.{name}" for name in imp.names} & modules.keys()
            target = imp.module
            while target not in modules and "." in target:
                target = target.rpartition(".")[0]
            if not imp.names or len(submodules) < len(imp.names):
                submodules.add(target)
            graph[module].update(named for named in submodules if named in modules and named != module)
    return graph


def find_cycle(graph: Mapping[str, Iterable[str]]) -> list[str] | None:
    """One circle of the graph as a path that returns to its start, or None."""
    done: set[str] = set()
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return None
        path.append(node)
        for target in sorted(graph.get(node, ())):
            cycle = visit(target)
            if cycle is not None:
                return cycle
        path.pop()
        done.add(node)
        return None

    for node in sorted(graph):
        cycle = visit(node)
        if cycle is not None:
            return cycle
    return None


# The reader and the checker themselves.


def test_the_reader_sees_lazy_type_only_relative_and_top_imports() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "import svc.layer\n"
        "from svc import registry, SvcError\n"
        "from . import _a\n"
        "from .._errors import Refused\n"
        "if TYPE_CHECKING:\n"
        "    from svc.runtime import Executor\n"
        "else:\n"
        "    import trio\n"
        "class C:\n"
        "    async def m(self) -> None:\n"
        "        import quart\n"
    )
    found = read_imports(source, "x.py", "svc.plan._x")
    seen = {(i.module, package_of(i.module), i.lazy, i.type_only) for i in found}
    assert seen == {
        ("typing", None, False, False),
        ("svc.layer", "layer", False, False),
        ("svc.registry", "registry", False, False),
        ("svc.SvcError", "svc", False, False),
        ("svc.plan._a", "plan", False, False),
        ("svc._errors", "base", False, False),
        ("svc.runtime", "runtime", False, True),
        ("trio", None, False, False),
        ("quart", None, True, False),
    }


def test_the_reader_keeps_the_names_an_import_takes() -> None:
    found = read_imports("from svc.cli import _main, build_cli\nimport svc.plan\n", "x.py", "svc.cli")
    assert [(i.module, i.names) for i in found] == [("svc.cli", ("_main", "build_cli")), ("svc.plan", ())]


def test_the_cycle_finder_finds_a_circle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_the_table_points_only_down_and_names_every_package() -> None:
    packages = {package_of(module) for module, _ in svc_files()}
    assert packages == set(MAY_IMPORT), "every package of src/svc has a row in MAY_IMPORT, and only those"
    assert {p for floor in FLOORS for p in floor} == set(MAY_IMPORT)
    for package, allowed in MAY_IMPORT.items():
        assert allowed <= _below(package), package
    for package, allowed in MAY_IMPORT_LAZILY.items():
        assert allowed <= _below(package), package


# The rules.


@pytest.mark.parametrize("type_only", [False, True], ids=["run time", "with type-only imports"])
def test_no_circle_among_packages(type_only: bool) -> None:
    graph = package_graph(all_imports(), type_only=type_only)
    cycle = find_cycle(graph)
    assert cycle is None, " -> ".join(cycle or [])


@pytest.mark.parametrize("type_only", [False, True], ids=["run time", "with type-only imports"])
def test_no_circle_among_modules(type_only: bool) -> None:
    cycle = find_cycle(module_graph(type_only=type_only))
    assert cycle is None, " -> ".join(cycle or [])


def test_no_package_imports_one_it_may_not() -> None:
    breaches: list[str] = []
    for source, imp in all_imports():
        target = package_of(imp.module)
        if target is None or target == source:
            continue
        allowed = MAY_IMPORT[source]
        if imp.lazy or imp.type_only:
            allowed = allowed | MAY_IMPORT_LAZILY.get(source, frozenset())
        if target not in allowed:
            how = " lazily" if imp.lazy else " for type checking" if imp.type_only else ""
            breaches.append(f"{imp.where}: {source} imports {imp.module}{how}; it may import only {sorted(allowed)}")
    assert not breaches, "\n".join(breaches)


def test_the_core_imports_no_web_mcp_or_cli_library_not_even_lazily() -> None:
    breaches = [
        f"{imp.where}: {source} imports {imp.module}"
        for source, imp in all_imports()
        if source in CORE and imp.module.split(".")[0] in WEB_MCP_CLI
    ]
    assert not breaches, "\n".join(breaches)
