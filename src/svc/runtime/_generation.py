"""The repository generation: an answer cached under `generation` is kept until it changes.

Generation = (stamp, write counter). The stamp hashes (path, present, size, mtime_ns, inode) of Git's HEAD,
index, ORIG_HEAD, MERGE_HEAD, logs/HEAD, rebase-merge/, packed-refs and refs/, of every file under `.ai/`
except `.ai/local/`, and of the files outside `.ai/` that a source class of the object index names
(`knowledge/sources.yaml`, e.g. `docs/**/*.md`). A request compares one integer. svc bumps the counter itself,
before answering, on every repository write it makes, so the next read sees the write even before the watcher
looks.

A server's watcher decides when the stamp is recomputed (in a worker thread); the stamp alone decides whether
the generation moved, so a notification that changed nothing moves nothing. Two modes, logged once to stderr:

- **notify** (the default): the kernel's file notifications (watchfiles; inotify on Linux) over the whole
  work tree and the Git directories outside it. A worker thread waits on them and drops every path the stamp
  does not cover (`.git/` beyond HEAD, index and refs, `.ai/local/`, `.venv`, `node_modules`, caches) before
  it wakes the watcher. Changes less than `STEP_MS` apart (up to `DEBOUNCE_MS`) arrive as one batch, and
  rounds are at least `ROUND_SECONDS` apart, so a burst of writes is one step of the generation. Idle,
  nothing is stat-ed. One round runs as the notifications start, for what changed before.
- **poll** (`SVC_WATCH=poll`, or when notifications cannot run: watchfiles fails to start or stops, the
  inotify limits are reached, or the checkout is on a network or host-shared filesystem, where changes made
  elsewhere send no notification): every `POLL_SECONDS` the watcher stats the watched directories and Git's
  files. A directory's mtime moves when an entry is added, removed or renamed (Git's lock files, editors that
  save through a rename), so those start a round at once. An edit in place moves no directory: the full stamp
  is also recomputed every `FULL_SECONDS`, or less often when one stamp costs more than `FULL_SHARE` of a core
  over that period (every 13 s for a 10,000-issue layer on a machine where its stamp costs 130 ms).

The watcher outlives any failure of one round: a stamp that cannot be computed or a hook that raises (a
corrupt file, a `MemoryError`) is logged to stderr and the next round runs as usual; a hook is waited for at
most `HOOK_SECONDS` (it goes on in its thread). Cancelling the watcher ends its notification thread before
`watch` returns.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeAlias

import trio

from svc.layer import (
    SKIPPED_DIRS,
    Repository,
    check_repository_dir,
    glob_regex,
    literal_prefix,
    read_manifest,
    source_classes,
)

if TYPE_CHECKING:
    from watchfiles._rust_notify import RustNotify

__all__ = ["Generation", "WatchMode", "repository_stamp"]

_log = logging.getLogger("svc.runtime")

#: How the watcher learns of changes: file notifications, or polling directory mtimes.
WatchMode: TypeAlias = Literal["notify", "poll"]
#: Notify mode: the least time between two rounds.
ROUND_SECONDS = 0.25
#: Poll mode: the period of the directory check.
POLL_SECONDS = 0.5
#: Poll mode: the period of the full stamp, which is what sees a file edited in place.
FULL_SECONDS = 5.0
#: Poll mode: the largest share of one core the full stamp may take; a larger layer is stamped less often.
FULL_SHARE = 0.01
#: How long the watcher waits for one hook before it goes on watching.
HOOK_SECONDS = 30.0
#: Notify mode: a batch ends after this long without a new change...
STEP_MS = 100
#: ...or this long after its first change, whichever comes first.
DEBOUNCE_MS = 1600
#: The environment variable that forces a mode (`notify` or `poll`).
MODE_VARIABLE = "SVC_WATCH"
_MODES: tuple[WatchMode, ...] = ("notify", "poll")
_MOUNTINFO = "/proc/self/mountinfo"
#: Filesystems whose changes made by another machine or by the host send no notification here.
_EVENTLESS_FILESYSTEMS = frozenset(
    [
        "nfs",
        "nfs4",
        "cifs",
        "smb3",
        "smbfs",
        "9p",
        "drvfs",
        "afs",
        "ceph",
        "glusterfs",
        "fuse.glusterfs",
        "lustre",
        "gpfs",
        "fuse.sshfs",
        "fuse.rclone",
        "fuse.grpcfuse",
        "fakeowner",
        "virtiofs",
        "vboxsf",
        "vmhgfs",
        "fuse.vmhgfs-fuse",
    ]
)
#: Files of the per-worktree Git directory the stamp covers; `rebase-merge/` is covered whole.
_GIT_FILES = ("HEAD", "index", "ORIG_HEAD", "MERGE_HEAD", "logs/HEAD")
_GIT_TREES = ("rebase-merge",)
#: Files and directories of the common Git directory the stamp covers.
_COMMON_FILES = ("packed-refs",)
_COMMON_TREES = ("refs",)
#: The layer's own state, which never moves the generation.
_LOCAL = "local"


class Generation:
    """A monotonically increasing number that changes whenever the repository does."""

    def __init__(self, repo: Repository, *, stamp: bytes | None = None, mode: WatchMode | None = None) -> None:
        self.repo = repo
        self._stamp = repository_stamp(repo) if stamp is None else stamp
        self.value = 0
        #: Run in a worker thread after the watcher saw a change (rebuild resident state off the loop).
        self.hooks: list[Callable[[], object]] = []
        #: Whether a watcher runs (a server); a one-shot command's generation is pinned.
        self.watched = False
        #: The mode asked for; None reads `SVC_WATCH` when the watcher starts.
        self.mode = mode
        #: The mode the watcher runs in, once it runs (notify falls back to poll).
        self.running: WatchMode | None = None
        self._tree: _Tree | None = None
        self._probes: tuple[str, ...] | None = None
        #: Poll mode: the period of the full stamp (`FULL_SECONDS`, longer when a stamp costs more).
        self.full_seconds = FULL_SECONDS
        self._signature: list[tuple[int, int, int] | None] = []
        self._woken = trio.Event()
        self._listening = False

    def bump(self) -> int:
        """Record a write svc made; answers cached before it no longer hit."""
        self.value += 1
        return self.value

    def observe(self, stamp: bytes) -> bool:
        """Take a freshly computed stamp; bump and return True when it differs."""
        if stamp == self._stamp:
            return False
        self._stamp = stamp
        self.bump()
        return True

    async def refresh(self) -> bool:
        """Recompute the stamp now (in a worker thread); True when the repository changed."""
        survey = await trio.to_thread.run_sync(_survey, self.repo, self.running == "poll")
        self._tree = survey.tree
        if survey.probes is not None:
            self._probes, self._signature = survey.probes, survey.signature
            self.full_seconds = max(FULL_SECONDS, survey.seconds / FULL_SHARE)
        changed = self.observe(survey.stamp)
        if changed:
            for hook in self.hooks:
                await _run_hook(hook)
        return changed

    async def watch(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Watch the repository until cancelled: on notifications, else by polling (see the module)."""
        self.watched = True
        pending = [task_status]

        def started() -> None:
            if pending:
                pending.pop().started()

        self._tree = await trio.to_thread.run_sync(_Tree.of, self.repo)
        mode, reason = await trio.to_thread.run_sync(_choose_mode, self.mode, self.repo.root)
        if mode == "notify":
            try:
                await self._notify(started)
            except Exception as exc:  # the notification thread, or watchfiles itself, failed: poll instead
                reason = f"file notifications failed ({type(exc).__name__}: {exc})"
        if reason is not None:
            _log.warning("svc: %s; the repository watcher polls", reason)
        await self._poll(started)

    async def _round(self) -> None:
        try:
            await self.refresh()
        except Exception:
            _log.exception("svc: the repository watcher could not compute a generation; it goes on")

    async def _notify(self, started: Callable[[], None]) -> None:
        """Rounds on notifications; raises what stopped them (watchfiles failed to start, or its thread failed)."""
        assert self._tree is not None
        watcher = await trio.to_thread.run_sync(_open_notify, self._tree.notify_roots())
        self.running = "notify"
        _log.debug("svc: the repository watcher runs on file notifications")
        failure: list[Exception] = []
        async with trio.open_nursery() as nursery:
            await nursery.start(self._listen, watcher, failure)
            started()
            self._woken.set()  # one round at once: what changed before the notifications were in place
            last = -math.inf
            while not failure:  # a failure ends the loop between rounds: a round's hooks are never cut short
                await self._woken.wait()
                if failure:
                    break
                await trio.sleep_until(last + ROUND_SECONDS)
                self._woken = trio.Event()
                last = trio.current_time()
                await self._round()
        raise failure[0]

    async def _listen(
        self,
        watcher: RustNotify,
        failure: list[Exception],
        *,
        task_status: trio.TaskStatus[None],
    ) -> None:
        """Run the notification thread until cancelled; cancelling stops it and waits for it to end.

        When the thread fails, its error goes to `failure` and the watcher is woken to see it.
        """
        stop = threading.Event()

        async def stop_when_cancelled() -> None:
            try:
                await trio.sleep_forever()
            finally:
                stop.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(stop_when_cancelled)
            self._listening = True
            task_status.started()
            try:
                await trio.to_thread.run_sync(self._receive, watcher, stop)
            except Exception as exc:
                failure.append(exc)
                self._wake()
            finally:
                nursery.cancel_scope.cancel()

    def _receive(self, watcher: RustNotify, stop: threading.Event) -> None:
        """In a worker thread: wait for notification batches, and wake the watcher for each that matters."""
        try:
            with watcher:
                while not stop.is_set():
                    batch = watcher.watch(DEBOUNCE_MS, STEP_MS, 0, stop)
                    tree = self._tree
                    if isinstance(batch, set) and tree is not None and any(tree.matters(p) for _, p in batch):
                        trio.from_thread.run_sync(self._wake)
        except trio.RunFinishedError:
            return
        finally:
            self._listening = False

    def _wake(self) -> None:
        self._woken.set()

    async def _poll(self, started: Callable[[], None]) -> None:
        """Rounds when a watched directory or Git file changed, and every `full_seconds` in any case."""
        self.running = "poll"
        await self._round()
        started()
        _log.info(
            "svc: the repository watcher polls directories every %g s and every file every %.0f s",
            POLL_SECONDS,
            self.full_seconds,
        )
        full_at = trio.current_time() + self.full_seconds
        while True:
            await trio.sleep(POLL_SECONDS)
            due = self._probes is None or trio.current_time() >= full_at
            if not due:
                try:
                    due = await trio.to_thread.run_sync(_signature, self._probes or ()) != self._signature
                except Exception:
                    _log.exception("svc: the repository watcher could not stat the checkout; it goes on")
                    due = True
            if due:
                await self._round()
                full_at = trio.current_time() + self.full_seconds


async def _run_hook(hook: Callable[[], object]) -> None:
    """Run one hook in a worker thread: its failure is logged, and it is waited for at most `HOOK_SECONDS`."""
    with trio.move_on_after(HOOK_SECONDS) as scope:
        try:
            await trio.to_thread.run_sync(hook, abandon_on_cancel=True)
        except Exception:
            _log.exception("svc: a rebuild after a repository change failed; the watcher goes on")
    if scope.cancelled_caught:
        _log.warning(
            "svc: a rebuild after a repository change took over %.0f s; it goes on in the background", HOOK_SECONDS
        )


def repository_stamp(repo: Repository) -> bytes:
    """SHA-256 over the file facts that define a generation of `repo`."""
    return _Tree.of(repo).stamp()


@dataclass(frozen=True, slots=True)
class _Source:
    """Files of a source class outside the layer: the directory its pattern starts in, and the pattern."""

    prefix: str
    regex: re.Pattern[str]
    #: How many path segments below `prefix` a matching file has; None when the pattern has `**`.
    depth: int | None

    def near(self, rel: str) -> bool:
        """Whether a change at `rel` may add, remove or change a file of the class (a directory included)."""
        prefix = self.prefix
        if prefix and rel != prefix and not rel.startswith(f"{prefix}/"):
            return prefix.startswith(f"{rel}/")  # an ancestor of the class's directory
        inner = rel[len(prefix) + 1 :] if prefix else rel
        return self.depth is None or inner.count("/") < self.depth


@dataclass(frozen=True, slots=True)
class _Tree:
    """What the stamp of one checkout covers (absolute paths), and which notified paths may change it."""

    root: str
    git_dir: str | None
    common_dir: str | None
    #: The layer's path when it is a directory inside the checkout (never one that resolves outside).
    layer: str | None
    #: The relative paths a notification names the layer by (`.ai`, and its real path when it differs).
    layer_names: tuple[str, ...]
    outside: tuple[_Source, ...]

    @classmethod
    def of(cls, repo: Repository) -> _Tree:
        """The tree of `repo` as it is now (the layer's manifest and `sources.yaml` name the outside sources)."""
        root = str(repo.root)
        names = [repo.relative(repo.layer)]
        try:
            real = check_repository_dir(repo.root, repo.layer)
        except OSError:  # absent, or not a directory of the checkout (a symlink leaving it is never walked)
            layer = None
        else:
            layer = str(repo.layer)
            if (rel := _under(str(real), root)) is not None and rel not in names:
                names.append(rel)
        return cls(
            root=root,
            git_dir=None if repo.git_dir is None else str(repo.git_dir),
            common_dir=None if repo.common_dir is None else str(repo.common_dir),
            layer=layer,
            layer_names=tuple(names),
            outside=_outside_sources(repo, names[0]) if layer is not None else (),
        )

    def stamp(self) -> bytes:
        """SHA-256 over (label, size, mtime_ns, inode) of every covered file; a missing one counts as absent."""
        digest = hashlib.sha256()
        for label, path in sorted(self._covered()):
            try:
                st = os.stat(path)
            except OSError:
                digest.update(f"{label}\0absent\n".encode())
                continue
            digest.update(f"{label}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}\n".encode())
        return digest.digest()

    def _covered(self) -> Iterator[tuple[str, str]]:
        if self.git_dir is not None:
            yield from self._git("git", self.git_dir, _GIT_FILES, _GIT_TREES)
        if self.common_dir is not None:
            yield from self._git("common", self.common_dir, _COMMON_FILES, _COMMON_TREES)
        if self.layer is not None:
            for rel in _files(self.layer, skip=frozenset({_LOCAL})):
                yield f".ai/{rel}", os.path.join(self.layer, rel)
        matched: set[str] = set()
        for prefix, depth in self._walks():
            top = os.path.join(self.root, prefix) if prefix else self.root
            for rel in _files(top, skip=self._layer_under(prefix), names=SKIPPED_DIRS, depth=depth):
                full = f"{prefix}/{rel}" if prefix else rel
                if full not in matched and any(s.regex.match(full) for s in self.outside):
                    matched.add(full)
                    yield f"tree/{full}", os.path.join(self.root, full)

    @staticmethod
    def _git(label: str, base: str, files: tuple[str, ...], trees: tuple[str, ...]) -> Iterator[tuple[str, str]]:
        for name in files:
            yield f"{label}/{name}", os.path.join(base, name)
        for tree in trees:
            top = os.path.join(base, tree)
            for rel in _files(top):
                yield f"{label}/{tree}/{rel}", os.path.join(top, rel)

    def _walks(self) -> list[tuple[str, int | None]]:
        """(directory, depth) of the walks that find the outside sources' files.

        Each directory is one of the checkout; a walk that a whole-depth walk covers is left out.
        """
        whole = {s.prefix for s in self.outside if s.depth is None}

        def covered(prefix: str, depth: int | None) -> bool:
            if prefix in whole and depth is not None:
                return True
            return any(w != prefix and (not w or prefix.startswith(f"{w}/")) for w in whole)

        kept: list[tuple[str, int | None]] = []
        for prefix, depth in sorted({(s.prefix, s.depth) for s in self.outside}, key=lambda w: (w[0], w[1] or 0)):
            if covered(prefix, depth):
                continue
            try:
                check_repository_dir(Path(self.root), Path(self.root, prefix))
            except OSError:
                continue
            kept.append((prefix, depth))
        return kept

    def _layer_under(self, prefix: str) -> frozenset[str]:
        """The layer's names relative to the directory `prefix` (it is walked on its own)."""
        if not prefix:
            return frozenset(self.layer_names)
        return frozenset(n[len(prefix) + 1 :] for n in self.layer_names if n.startswith(f"{prefix}/"))

    def matters(self, path: str) -> bool:
        """Whether a change notified at `path` (absolute) may move the stamp."""
        in_git = False
        for base, files, trees in (
            (self.git_dir, _GIT_FILES, _GIT_TREES),
            (self.common_dir, _COMMON_FILES, _COMMON_TREES),
        ):
            rel = None if base is None else _under(path, base)
            if rel is None:
                continue
            in_git = True
            if rel in files or any(rel == t or rel.startswith(f"{t}/") for t in trees):
                return True
        rel = _under(path, self.root)
        if in_git or not rel:
            return False
        for name in self.layer_names:
            if rel == name or rel.startswith(f"{name}/"):
                inner = rel[len(name) + 1 :]
                return inner != _LOCAL and not inner.startswith(f"{_LOCAL}/")
        if any(part in SKIPPED_DIRS for part in rel.split("/")):
            return False
        return any(s.near(rel) for s in self.outside)

    def notify_roots(self) -> list[str]:
        """The directories notifications are asked for: the work tree, and Git's directories outside it."""
        roots = [self.root]
        for base in (self.git_dir, self.common_dir):
            if base is not None and _under(base, self.root) is None and base not in roots:
                roots.append(base)
        return roots

    def probes(self) -> tuple[str, ...]:
        """Poll mode: the directories whose mtime moves with an entry added, removed or renamed, and Git's files."""
        found: list[str] = [self.root]
        for base, files, trees in (
            (self.git_dir, _GIT_FILES, _GIT_TREES),
            (self.common_dir, _COMMON_FILES, _COMMON_TREES),
        ):
            if base is None:
                continue
            found += [base, *(os.path.join(base, name) for name in files)]
            for tree in trees:
                top = os.path.join(base, tree)
                found += [top, *(os.path.join(top, d) for d in _directories(top))]
        if self.layer is not None:
            layer_dirs = _directories(self.layer, skip=frozenset({_LOCAL}))
            found += [self.layer, *(os.path.join(self.layer, d) for d in layer_dirs)]
        for source in self.outside:  # the ancestors of a source's directory see it appear
            parts = source.prefix.split("/") if source.prefix else []
            found += [os.path.join(self.root, *parts[:n]) for n in range(1, len(parts) + 1)]
        for prefix, depth in self._walks():
            top = os.path.join(self.root, prefix) if prefix else self.root
            dirs = _directories(top, skip=self._layer_under(prefix), names=SKIPPED_DIRS, depth=depth)
            found += [top, *(os.path.join(top, d) for d in dirs)]
        return tuple(dict.fromkeys(found))


@dataclass(frozen=True, slots=True)
class _Survey:
    """One round's findings: the tree, its stamp and, in poll mode, the probes and their signature."""

    tree: _Tree
    stamp: bytes
    probes: tuple[str, ...] | None
    signature: list[tuple[int, int, int] | None]
    #: The CPU time the survey took (its thread's).
    seconds: float


def _survey(repo: Repository, polled: bool) -> _Survey:
    """The tree, its probes and their signature (poll mode), then the stamp.

    In that order, a change made after the signature was taken is seen by the next check.
    """
    started = time.thread_time()
    tree = _Tree.of(repo)
    probes = tree.probes() if polled else None
    signature = _signature(probes) if probes is not None else []
    stamp = tree.stamp()
    return _Survey(tree, stamp, probes, signature, seconds=time.thread_time() - started)


def _signature(paths: tuple[str, ...]) -> list[tuple[int, int, int] | None]:
    """(mtime_ns, inode, size) of each path; None when it is absent."""
    found: list[tuple[int, int, int] | None] = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            found.append(None)
            continue
        found.append((st.st_mtime_ns, st.st_ino, st.st_size))
    return found


def _outside_sources(repo: Repository, layer: str) -> tuple[_Source, ...]:
    """The source classes of the object index whose files lie outside the layer."""
    reading = read_manifest(repo)
    if not reading.usable:
        return ()
    found: list[_Source] = []
    for source in source_classes(repo, reading.sections):
        pattern = source.pattern.removeprefix("./")
        if pattern == layer or pattern.startswith(f"{layer}/"):
            continue
        prefix = literal_prefix(pattern)
        depth = None if "**" in pattern else pattern.count("/") + 1 - (prefix.count("/") + 1 if prefix else 0)
        found.append(_Source(prefix=prefix, regex=glob_regex(pattern), depth=depth))
    return tuple(found)


def _entries(
    top: str, *, skip: frozenset[str] = frozenset(), names: frozenset[str] = frozenset(), depth: int | None = None
) -> Iterator[tuple[str, bool]]:
    """(relative path, is a directory) of everything under `top`, at most `depth` segments deep.

    A symlinked directory is neither entered nor listed; a directory whose name is in `names`, or whose path
    relative to `top` is in `skip`, is left out with everything under it.
    """
    stack = [""]
    while stack:
        here = stack.pop()
        try:
            with os.scandir(os.path.join(top, here) if here else top) as listing:
                entries = list(listing)
        except OSError:
            continue
        for entry in entries:
            rel = f"{here}/{entry.name}" if here else entry.name
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if not is_dir:
                yield rel, False
            elif (
                (depth is None or rel.count("/") + 1 < depth)
                and not entry.is_symlink()
                and entry.name not in names
                and rel not in skip
            ):
                yield rel, True
                stack.append(rel)


def _files(
    top: str, *, skip: frozenset[str] = frozenset(), names: frozenset[str] = frozenset(), depth: int | None = None
) -> Iterator[str]:
    return (rel for rel, is_dir in _entries(top, skip=skip, names=names, depth=depth) if not is_dir)


def _directories(
    top: str, *, skip: frozenset[str] = frozenset(), names: frozenset[str] = frozenset(), depth: int | None = None
) -> Iterator[str]:
    return (rel for rel, is_dir in _entries(top, skip=skip, names=names, depth=depth) if is_dir)


def _under(path: str, base: str) -> str | None:
    """`path` relative to `base` with `/` separators ("" for `base` itself), or None when it is not inside."""
    if path == base:
        return ""
    if path.startswith(base.rstrip(os.sep) + os.sep):
        return path[len(base.rstrip(os.sep)) + 1 :].replace(os.sep, "/")
    return None


def _choose_mode(asked: WatchMode | None, root: os.PathLike[str]) -> tuple[WatchMode, str | None]:
    """The mode to start in, and why it is not notifications when it is not (None when asked for)."""
    if asked is None:
        value = os.environ.get(MODE_VARIABLE, "").strip().lower()
        if value == "poll":
            return "poll", None
        if value not in ("", "notify"):
            _log.warning(
                "svc: %s=%r is not one of %s; the repository watcher uses notifications",
                MODE_VARIABLE,
                value,
                ", ".join(_MODES),
            )
    elif asked == "poll":
        return "poll", None
    fstype = _filesystem(os.path.realpath(root))
    if fstype in _EVENTLESS_FILESYSTEMS:
        return "poll", f"the checkout is on {fstype}, which sends no notification of changes made elsewhere"
    return "notify", None


def _filesystem(path: str, mountinfo: str | None = None) -> str | None:
    """The filesystem type of the mount holding `path` (`/proc/self/mountinfo`); None when it is not known."""
    if mountinfo is None:
        try:
            with open(_MOUNTINFO, encoding="utf-8", errors="replace") as file:
                mountinfo = file.read()
        except OSError:
            return None
    best, fstype = -1, None
    for line in mountinfo.splitlines():
        fields = line.split(" - ", 1)
        head, tail = fields[0].split(), fields[1].split() if len(fields) == 2 else []
        if len(head) < 5 or not tail:
            continue
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), head[4])
        if _under(path, point) is not None and len(point) >= best:
            best, fstype = len(point), tail[0]
    return fstype


def _open_notify(roots: list[str]) -> RustNotify:
    """Start watching `roots` recursively (watchfiles' Rust watcher: one inotify watch per directory)."""
    from watchfiles._rust_notify import RustNotify

    return RustNotify(roots, False, False, 0, True, True)
