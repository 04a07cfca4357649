"""svc's share: the data files svc ships about itself (design, distribution model, tool registry).

The share is the package data directory `svc/share`, or the directory the environment variable `SVC_SHARE`
names (which replaces it whole). Its files are read under the reading rule with the share as the root, so a
symlink cannot lead out of it, and are named by where they come from (`svc/share/design/tokens.yaml`,
`SVC_SHARE/design/tokens.yaml`), never by an absolute path.
"""

from __future__ import annotations

import os
from pathlib import Path

from svc.layer._read import Unreadable, check_repository_file, read_repository_file

__all__ = ["SHARE_ENV", "ShareUnavailable", "read_share", "share_directory", "share_file_exists", "share_name"]

#: The environment variable naming a directory that replaces svc's packaged share.
SHARE_ENV = "SVC_SHARE"
#: How the packaged share is named.
_PACKAGED = "svc/share"
#: Where the packaged share is: the package data directory beside `svc/layer`.
_PACKAGED_PATH = Path(__file__).resolve().parent.parent / "share"


class ShareUnavailable(OSError):
    """No share directory: `SVC_SHARE` names no directory, or the installation lacks `svc/share`."""


def share_directory() -> tuple[Path, str]:
    """The share directory and the name it is shown under (`svc/share` or `SVC_SHARE`).

    Raises:
        ShareUnavailable: `SVC_SHARE` names no directory, or svc's packaged share is missing.
    """
    override = os.environ.get(SHARE_ENV)
    if override:
        path = Path(override)
        if not path.is_dir():
            raise ShareUnavailable(f"{SHARE_ENV} names no directory; unset it to read svc's own share ({_PACKAGED})")
        return path, SHARE_ENV
    located = _PACKAGED_PATH
    if not located.is_dir():
        raise ShareUnavailable(f"svc's share directory ({_PACKAGED}) was not located: the installation is incomplete")
    return located, _PACKAGED


def share_name(rel: str) -> str:
    """How the share file `rel` is named in answers (`svc/share/<rel>` or `SVC_SHARE/<rel>`)."""
    return f"{SHARE_ENV if os.environ.get(SHARE_ENV) else _PACKAGED}/{rel}"


def read_share(rel: str, *, limit: int) -> tuple[bytes, str]:
    """The bytes of the share file `rel` (`design/base.css`) and its name, read under the reading rule.

    Raises:
        ShareUnavailable: there is no share directory.
        FileNotFoundError: the share has no such file.
        Unreadable: the file is refused (not a regular file, a symlink leaving the share, over `limit`).
    """
    root, shown = share_directory()
    return read_repository_file(root, root / rel, limit=limit), f"{shown}/{rel}"


def share_file_exists(rel: str, *, limit: int) -> bool:
    """Whether the share holds `rel` as a file it would read."""
    root, _ = share_directory()
    try:
        check_repository_file(root, root / rel, limit=limit)
    except (FileNotFoundError, Unreadable):
        return False
    return True
