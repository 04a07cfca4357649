"""Node identity: the Ed25519 key file, and the ids derived from it and from the checkout (docs/mesh.md).

The key file `$XDG_STATE_HOME/svc/node.json` (fallback `$HOME/.local/state/svc/node.json`) holds
`{schema: svc-mesh-identity/v1, secret_key: <64-hex seed>, display_name?, created_at}`. It is created on
the first enabled start (directory 0700, file 0600, created exclusively so two processes starting at once
agree on one key), and a malformed file is an error that is never repaired or replaced: the key is who
this machine is to its peers.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from svc.layer import run_git, temp_beside
from svc.mesh_udp._canonical import node_id_of

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

__all__ = [
    "IDENTITY_SCHEMA",
    "IdentityError",
    "IdentityReading",
    "NodeIdentity",
    "RepositoryIdentity",
    "create_identity",
    "display_path",
    "identity_path",
    "load_identity",
    "new_instance_id",
    "read_identity",
    "repository_id",
    "runtime_id",
]

IDENTITY_SCHEMA = "svc-mesh-identity/v1"
_HEX64 = re.compile(r"[0-9a-f]{64}")
_NAME_MAX = 64


class IdentityError(Exception):
    """The key file cannot be read or is malformed; the message says which, and the file stays as it is."""


@dataclass(frozen=True, slots=True)
class NodeIdentity:
    """This machine's key and the public ids derived from it."""

    key: Ed25519PrivateKey
    public_key: str
    node_id: str
    display_name: str
    created_at: str | None

    @classmethod
    def from_seed(cls, seed: bytes, *, display_name: str | None = None, created_at: str | None = None) -> NodeIdentity:
        """The identity of a 32-byte Ed25519 seed."""
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        key = Ed25519PrivateKey.from_private_bytes(seed)
        public = key.public_key().public_bytes_raw().hex()
        node = node_id_of(public)
        return cls(
            key=key,
            public_key=public,
            node_id=node,
            display_name=(display_name or node[:8])[:_NAME_MAX],
            created_at=created_at,
        )

    @classmethod
    def generate(cls, *, display_name: str | None = None) -> NodeIdentity:
        """A fresh random identity (held in memory only)."""
        return cls.from_seed(secrets.token_bytes(32), display_name=display_name)


@dataclass(frozen=True, slots=True)
class IdentityReading:
    """What the key file holds now: `absent`, `present` (with the identity) or `broken` (with the error)."""

    path: Path | None
    state: Literal["absent", "present", "broken", "no_home"]
    identity: NodeIdentity | None = None
    error: str | None = None
    warning: str | None = None


def identity_path(environ: dict[str, str] | None = None) -> Path | None:
    """Where the key file lives, or None when neither `XDG_STATE_HOME` nor `HOME` is set."""
    env = os.environ if environ is None else environ
    state = env.get("XDG_STATE_HOME")
    if state and os.path.isabs(state):
        return Path(state) / "svc" / "node.json"
    home = env.get("HOME")
    if home:
        return Path(home) / ".local" / "state" / "svc" / "node.json"
    return None


def display_path(path: Path | None, environ: dict[str, str] | None = None) -> str | None:
    """`path` with the home directory written as `~`."""
    if path is None:
        return None
    home = (os.environ if environ is None else environ).get("HOME")
    if home:
        with contextlib.suppress(ValueError):
            rest = path.relative_to(home)
            return "~" if str(rest) == "." else f"~/{rest.as_posix()}"
    return str(path)


class _KeyFile(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    schema: str
    secret_key: str
    created_at: str
    display_name: str | None = None


def _parse(data: bytes) -> NodeIdentity:
    try:
        raw = msgspec.json.decode(data, type=_KeyFile)
    except msgspec.DecodeError as exc:
        raise IdentityError(f"not a key file of svc: {exc}") from None
    if raw.schema != IDENTITY_SCHEMA:
        raise IdentityError(f"schema is {raw.schema!r}, expected {IDENTITY_SCHEMA!r}")
    if not _HEX64.fullmatch(raw.secret_key):
        raise IdentityError("secret_key is not 64 lowercase hex digits")
    if raw.display_name is not None and not 1 <= len(raw.display_name) <= _NAME_MAX:
        raise IdentityError(f"display_name must be 1 to {_NAME_MAX} characters")
    return NodeIdentity.from_seed(
        bytes.fromhex(raw.secret_key), display_name=raw.display_name, created_at=raw.created_at
    )


def read_identity(path: Path | None) -> IdentityReading:
    """Read the key file without creating it; never raises."""
    if path is None:
        return IdentityReading(path=None, state="no_home", error="neither XDG_STATE_HOME nor HOME is set")
    try:
        data = path.read_bytes()
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        return IdentityReading(path=path, state="absent")
    except OSError as exc:
        return IdentityReading(path=path, state="broken", error=f"cannot read the key file: {exc.strerror or exc}")
    try:
        identity = _parse(data)
    except IdentityError as exc:
        return IdentityReading(path=path, state="broken", error=str(exc))
    warning = f"the key file has mode {mode:04o}; it should be 0600" if mode & 0o077 else None
    return IdentityReading(path=path, state="present", identity=identity, warning=warning)


def create_identity(path: Path, *, display_name: str | None = None) -> NodeIdentity:
    """Create the key file at `path` unless one exists; answer the identity it holds.

    The directory is made 0700, the file written 0600 through a temporary file and linked into place
    exclusively: a file that appeared meanwhile wins and is read instead.

    Raises:
        IdentityError: the existing file is malformed, or the file cannot be written.
    """
    reading = read_identity(path)
    if reading.identity is not None:
        return reading.identity
    if reading.state == "broken":
        raise IdentityError(f"{display_path(path)}: {reading.error}")
    identity = NodeIdentity.generate(display_name=display_name)
    seed = identity.key.private_bytes_raw().hex()
    body: dict[str, Any] = {
        "schema": IDENTITY_SCHEMA,
        "secret_key": seed,
        "created_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    if display_name:
        body["display_name"] = identity.display_name
    try:
        _create_exclusive(path, msgspec.json.format(msgspec.json.encode(body)) + b"\n")
    except FileExistsError:
        return load_identity(path)
    except OSError as exc:
        raise IdentityError(f"cannot write {display_path(path)}: {exc.strerror or exc}") from None
    return load_identity(path)


def load_identity(path: Path) -> NodeIdentity:
    """The identity in the key file.

    Raises:
        IdentityError: the file is absent, unreadable or malformed.
    """
    reading = read_identity(path)
    if reading.identity is None:
        raise IdentityError(f"{display_path(path)}: {reading.error or 'absent'}")
    return reading.identity


def _create_exclusive(path: Path, data: bytes) -> None:
    directory = path.parent
    if not directory.exists():
        directory.mkdir(parents=True, mode=0o700)
        os.chmod(directory, 0o700)
    fd, tmp = temp_beside(path)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.link(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def new_instance_id() -> str:
    """8 random bytes, 16 hex: a new one per process start."""
    return secrets.token_hex(8)


def runtime_id(top_level: Path) -> str:
    """First 16 hex of SHA-256(`svc-mesh-runtime/v1` LF + the checkout's canonical top-level path)."""
    digest = hashlib.sha256(b"svc-mesh-runtime/v1\n" + os.fsencode(os.path.realpath(top_level)))
    return digest.hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class RepositoryIdentity:
    """The repository id links are matched on, how it was found, or why there is none."""

    id: str | None
    basis: Literal["declared", "root_commits"] | None
    detail: str


def _declared(value: str) -> str:
    return hashlib.sha256(b"svc-mesh-repository/v1\ndeclared\n" + value.encode()).hexdigest()[:32]


def repository_id(top_level: Path, declared: str | None) -> RepositoryIdentity:
    """The repository id: declared, else from the root commits reachable from HEAD (through `git`).

    A shallow clone or a repository without commits has no id unless one is declared.
    """
    if declared is not None:
        return RepositoryIdentity(id=_declared(declared), basis="declared", detail="declared by cooperation.repository")

    def git(*args: str) -> str | None:
        out = run_git(top_level, *args, timeout=30)
        return out.decode("utf-8", "replace").strip() if out is not None else None

    if git("rev-parse", "--is-shallow-repository") == "true":
        return RepositoryIdentity(
            id=None, basis=None, detail="a shallow clone has no root commits; declare cooperation.repository"
        )
    roots = git("rev-list", "--max-parents=0", "HEAD")
    if not roots:
        return RepositoryIdentity(
            id=None, basis=None, detail="no commit (or no Git) to derive an id from; declare cooperation.repository"
        )
    unique = sorted(set(roots.split()))
    digest = hashlib.sha256(b"svc-mesh-repository/v1\nroots\n" + "\n".join(unique).encode())
    count = len(unique)
    return RepositoryIdentity(
        id=digest.hexdigest()[:32],
        basis="root_commits",
        detail=f"{count} root commit{'s' if count != 1 else ''} reachable from HEAD",
    )
