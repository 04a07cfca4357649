"""How a file read earlier is known again: its stat numbers, the racy rule over them, and its bytes' digest.

A cache of what a read gave (the plan's parse cache, the object index's readings) may keep a file unopened
while its `(size, mtime_ns, inode, ctime_ns)` equal those it was read with, and reuse a parse of the same
bytes by their BLAKE2b-128 digest. The ctime is in the numbers because no tool can set it back (an edit that
keeps the size and restores the mtime, or a file replaced by a rename onto a reused inode, still differs). A
file changed within `RACY_NS` of the read that looked at it is never kept by its numbers: an edit in the same
timestamp tick could keep all four (Git's racily clean entries; 2 s covers the coarsest timestamps, FAT's).
"""

from __future__ import annotations

import hashlib
import os

__all__ = ["RACY_NS", "Stat", "digest", "settled", "stat_key"]

#: How long before a read a file must have last changed for its stat numbers to be kept.
RACY_NS = 2_000_000_000

#: A file's size, mtime_ns, inode and ctime_ns.
Stat = tuple[int, int, int, int]


def stat_key(st: os.stat_result) -> Stat:
    """The stat numbers a file is known again by: size, mtime_ns, inode, ctime_ns."""
    return (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)


def settled(st: os.stat_result, started_ns: int) -> bool:
    """Whether the file last changed (mtime or ctime) at least `RACY_NS` before a read that began at `started_ns`."""
    return max(st.st_mtime_ns, st.st_ctime_ns) <= started_ns - RACY_NS


def digest(data: bytes) -> bytes:
    """The 16-byte BLAKE2b digest of bytes read."""
    return hashlib.blake2b(data, digest_size=16).digest()
