"""The directories of the layer and their context contracts: what each directory owes, and what applies to it.

Derived from the object index and from nothing else. The directories are the `provenance.directory` of every
object under `.ai`, with every directory between it and `.ai` added (holding 0 objects of its own). A
directory's contract is the object of kind `context` that sits in it (the first by path when two do).

- `requires_contract` / `governed_by`: the deepest `scope: subtree` contract at or above the directory that
  sets `children.require_contract` decides, and names itself in `governed_by`; with none, a contract is owed.
- `exempted_by`: the first `scope: subtree` contract at or above the directory (shallowest first) whose
  `children.exempt` holds the directory or a directory above it. An exempt entry is a repository-relative
  path when it starts with `.ai`, else a path relative to the contract's own directory.
- `state`: `documented` with a contract of its own, else `exempt` when exempted or not required, else `owed`.
- `effective`: every contract that is not `deprecated` and whose reach includes the directory (`directory`
  scope at the directory itself, `subtree` at or above it, `explicit` scope whose metadata `paths` holds the
  directory or one above it), least specific first: by depth, then `order`, then path. A `replace` entry
  removes from the chain the contracts whose ids its `supersedes` names.

Contract paths (`governed_by`, `exempted_by`, effective `path`) name the contract file. The tallies count the
whole layer before any filter. The paths served are repository-relative; a `path` asked for is normalised
(`./` and trailing `/` dropped) and refused when absolute, when it climbs (`..`) or when it lies outside `.ai`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from svc._errors import InvalidInput, NotFound

if TYPE_CHECKING:
    from svc.layer._objects import LayerObject, ObjectIndex

__all__ = [
    "LAYER_ROOT",
    "ContractView",
    "DirectoryNode",
    "DirectoryReport",
    "DirectoryState",
    "DirectoryTallies",
    "EffectiveEntry",
    "directory_report",
    "normalise_layer_path",
]

#: The directory every directory of the report sits in.
LAYER_ROOT = ".ai"
DirectoryState = Literal["documented", "exempt", "owed"]
_AUDIENCE = ("human", "agent")


class ContractView(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A context contract as its document declares it, before anything is inherited.

    `id` (its identity), `path` (the contract file), `title`, `description`, `status` (`active` unless it says;
    a `deprecated` contract is listed and never applied), `scope` (`directory`, `subtree` or `explicit`;
    `directory` unless it says), `composition` (`extend`, `replace` or `final`; `extend` unless it says),
    `order` (0 unless it says), `providers`, `audience` (human and agent unless it says), `tracks`,
    `children_require_contract` (`children.require_contract`) and `children_exempt` (`children.exempt`).
    """

    id: str
    path: str
    title: str | None = None
    description: str | None = None
    status: str
    scope: str
    composition: str
    order: int
    providers: list[str]
    audience: list[str]
    tracks: list[str] = []
    children_require_contract: bool | None = None
    children_exempt: list[str] = []


class EffectiveEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One contract of a directory's effective chain, in the order it applies.

    `id` and `path` name the contract; `depth` (below `.ai`) and `order` are its sort keys; `composition` how it
    composes; `reason` why it reaches the directory (with its scope); `local` is true for the directory's own.
    """

    id: str
    path: str
    depth: int
    order: int
    composition: str
    reason: str
    local: bool


class DirectoryNode(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One directory of the layer, what it owes and what applies to it.

    `path` (repository-relative), `depth` (`.ai` is 0), `parent` and `children` (directories of the report),
    `state`, `requires_contract`, `governed_by` (the contract that decided the requirement), `exempted_by` (the
    contract that released it), `objects` (objects directly in it), `contract` (its own) and `effective` (the
    chain, least specific first; present for a named path, or everywhere when asked).
    """

    path: str
    depth: int
    parent: str | None = None
    children: list[str] = []
    state: DirectoryState
    requires_contract: bool
    governed_by: str | None = None
    exempted_by: str | None = None
    objects: int
    contract: ContractView | None = None
    effective: list[EffectiveEntry] = []


class DirectoryTallies(msgspec.Struct, frozen=True, kw_only=True):
    """How many directories the whole layer has (`directories`), and how many are in each state."""

    directories: int
    documented: int
    exempt: int
    owed: int


class DirectoryReport(msgspec.Struct, frozen=True, kw_only=True):
    """The layer's directories.

    `root` is `.ai`; `tallies` count the whole layer; `directories` are the ones asked for, sorted by path.
    """

    root: str
    tallies: DirectoryTallies
    directories: list[DirectoryNode]


def normalise_layer_path(raw: str) -> str:
    """`raw` as a repository-relative path inside `.ai` (`./` and trailing `/` dropped).

    Raises:
        InvalidInput: the path is empty, absolute, climbs with `..`, or lies outside `.ai`.
    """
    text = raw.strip()
    if not text:
        raise InvalidInput("path is empty; name a directory of the layer, e.g. .ai/repo")
    if text.startswith(("/", "\\", "~")) or (len(text) > 1 and text[1] == ":"):
        raise InvalidInput("path must be repository-relative (e.g. .ai/repo), not absolute")
    if "\\" in text or "\0" in text:
        raise InvalidInput("path must use forward slashes and no control characters (e.g. .ai/repo)")
    segments = [s for s in text.split("/") if s not in ("", ".")]
    if ".." in segments:
        raise InvalidInput("path must not climb with '..'; name a directory of the layer, e.g. .ai/repo")
    path = "/".join(segments)
    if not _under(LAYER_ROOT, path):
        raise InvalidInput(f"path '{path or '.'}' is outside {LAYER_ROOT}; the directory contracts are the layer's")
    return path


def _under(parent: str, child: str) -> bool:
    return child == parent or child.startswith(parent + "/")


def _depth(directory: str) -> int:
    return 0 if directory == LAYER_ROOT else directory.count("/")


def _parent(directory: str) -> str | None:
    head, slash, _ = directory.rpartition("/")
    return head if slash else None


def _texts(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(v) for v in value if isinstance(v, str | int) and not isinstance(v, bool)]
    if isinstance(value, str):
        return [value]
    return []


def _text(metadata: Mapping[str, Any], key: str, default: str) -> str:
    value = metadata.get(key)
    return value if isinstance(value, str) and value else default


def _exempt_entry(entry: str, directory: str) -> str:
    parts = [s for s in entry.split("/") if s not in ("", ".")]
    if parts and parts[0] == LAYER_ROOT:
        return "/".join(parts)
    return "/".join([directory, *parts]) if parts else directory


def _contract(obj: LayerObject) -> ContractView:
    meta = obj.metadata
    order = meta.get("order")
    children = meta.get("children")
    children = children if isinstance(children, dict) else {}
    require = children.get("require_contract")
    audience = _texts(meta.get("audience"))
    return ContractView(
        id=obj.identity,
        path=obj.provenance.path,
        title=obj.title,
        description=obj.description,
        status=_text(meta, "status", "active"),
        scope=_text(meta, "scope", "directory"),
        composition=_text(meta, "composition", "extend"),
        order=order if isinstance(order, int) and not isinstance(order, bool) else 0,
        providers=_texts(meta.get("providers")),
        audience=audience or list(_AUDIENCE),
        tracks=_texts(meta.get("tracks")),
        children_require_contract=require if isinstance(require, bool) else None,
        children_exempt=[_exempt_entry(e, obj.provenance.directory) for e in _texts(children.get("exempt"))],
    )


@dataclass(frozen=True, slots=True)
class _Contract:
    directory: str
    view: ContractView
    paths: tuple[str, ...]
    supersedes: tuple[str, ...]


class _Contracts:
    """The contracts of the layer keyed by directory (shallowest first), and the rules that read them."""

    def __init__(self, contexts: Iterable[LayerObject]) -> None:
        by_dir: dict[str, _Contract] = {}
        for obj in sorted(contexts, key=lambda o: o.provenance.path):
            directory = obj.provenance.directory
            if directory in by_dir:
                continue
            by_dir[directory] = _Contract(
                directory=directory,
                view=_contract(obj),
                paths=tuple(p for p in (_clean(t) for t in _texts(obj.metadata.get("paths"))) if p),
                supersedes=tuple(_texts(obj.metadata.get("supersedes"))),
            )
        self.by_dir = {d: by_dir[d] for d in sorted(by_dir, key=lambda d: (_depth(d), d))}

    def requirement(self, directory: str) -> tuple[bool, str | None]:
        best: _Contract | None = None
        for c in self.by_dir.values():
            view = c.view
            if view.children_require_contract is None or view.scope != "subtree" or not _under(c.directory, directory):
                continue
            if best is None or _depth(c.directory) > _depth(best.directory):
                best = c
        if best is None or best.view.children_require_contract is None:
            return True, None
        return best.view.children_require_contract, best.view.path

    def exemption(self, directory: str) -> str | None:
        for c in self.by_dir.values():
            if c.view.scope != "subtree" or not _under(c.directory, directory):
                continue
            if any(_under(entry, directory) for entry in c.view.children_exempt):
                return c.view.path
        return None

    def effective(self, directory: str) -> list[EffectiveEntry]:
        rows: list[EffectiveEntry] = []
        for c in self.by_dir.values():
            view = c.view
            if view.status == "deprecated":
                continue
            depth = _depth(c.directory)
            if view.scope == "directory" and c.directory == directory:
                reason = "the target directory (scope directory)"
            elif view.scope == "subtree" and c.directory == directory:
                reason = "the target directory (scope subtree)"
            elif view.scope == "subtree" and _under(c.directory, directory):
                reason = "an ancestor (scope subtree)"
            elif view.scope == "explicit":
                declared = next((p for p in c.paths if _under(p, directory)), None)
                if declared is None:
                    continue
                depth = _depth(declared)
                reason = f"a declared path, {declared} (scope explicit)"
            else:
                continue
            rows.append(
                EffectiveEntry(
                    id=view.id,
                    path=view.path,
                    depth=depth,
                    order=view.order,
                    composition=view.composition,
                    reason=reason,
                    local=c.directory == directory,
                )
            )
        rows.sort(key=lambda e: (e.depth, e.order, e.path))
        present = {e.id for e in rows}
        superseded: set[str] = set()
        by_id = {c.view.id: c for c in self.by_dir.values()}
        for entry in rows:
            if entry.composition == "replace":
                superseded.update(s for s in by_id[entry.id].supersedes if s in present and s != entry.id)
        return [e for e in rows if e.id not in superseded]


def _clean(path: str) -> str:
    return "/".join(s for s in path.split("/") if s not in ("", "."))


def _directories(index: ObjectIndex) -> dict[str, int]:
    counts: dict[str, int] = {}
    for obj in index.objects:
        directory = obj.provenance.directory
        if not _under(LAYER_ROOT, directory):
            continue
        counts[directory] = counts.get(directory, 0) + 1
        parent = _parent(directory)
        while parent is not None and _under(LAYER_ROOT, parent):
            counts.setdefault(parent, 0)
            parent = _parent(parent)
    return dict(sorted(counts.items()))


def directory_report(
    index: ObjectIndex,
    *,
    path: str | None = None,
    effective: bool = False,
    state: DirectoryState | None = None,
) -> DirectoryReport:
    """The directories of the layer (or the one at `path`), in `state` when given, with their chains when asked.

    Raises:
        InvalidInput: `path` is not a repository-relative path inside `.ai`.
        NotFound: no object of the index sits at or below `path`.
    """
    counts = _directories(index)
    target = None if path is None else normalise_layer_path(path)
    if target is not None and target not in counts:
        raise NotFound(f"no directory '{target}' in the layer: the index holds no object at or below it")
    contracts = _Contracts(index.of_kind("context"))
    children: dict[str, list[str]] = {}
    for directory in counts:
        parent = _parent(directory)
        if parent is not None and parent in counts:
            children.setdefault(parent, []).append(directory)
    tallies = {"documented": 0, "exempt": 0, "owed": 0}
    chains = effective or target is not None
    out: list[DirectoryNode] = []
    for directory, objects in counts.items():
        own = contracts.by_dir.get(directory)
        requires, governed_by = contracts.requirement(directory)
        exempted_by = contracts.exemption(directory)
        found: DirectoryState
        if own is not None:
            found = "documented"
        elif exempted_by is not None or not requires:
            found = "exempt"
        else:
            found = "owed"
        tallies[found] += 1
        if (target is not None and directory != target) or (state is not None and state != found):
            continue
        parent = _parent(directory)
        out.append(
            DirectoryNode(
                path=directory,
                depth=_depth(directory),
                parent=parent if parent in counts else None,
                children=children.get(directory, []),
                state=found,
                requires_contract=requires,
                governed_by=governed_by,
                exempted_by=exempted_by,
                objects=objects,
                contract=None if own is None else own.view,
                effective=contracts.effective(directory) if chains else [],
            )
        )
    return DirectoryReport(
        root=LAYER_ROOT,
        tallies=DirectoryTallies(directories=len(counts), **tallies),
        directories=out,
    )
