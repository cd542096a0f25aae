"""The view ladder: View and ReadOnlyView (EROFS for every mutation). Above them:
BlobView (blob.py: files that are git blobs) and PassthroughView (passthrough.py:
the working tree read; CurrentView adds the writes).

Views are thin adapters between FUSE and the git core: path in, stat dict or
bytes out, errno chosen here. `OSError` from os.* passes through (fusepy
returns its errno); nothing else may escape (fusepy would answer EINVAL).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import ClassVar

from mfusepy import FuseOSError, Operations

from gitfs.cache_policy import Pages

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


@dataclass(frozen=True)
class Owner:
    uid: int
    gid: int


def statvfs_dict(path: str) -> dict:
    """statfs figures of the disk that holds path (the clone's), as fusepy wants them."""
    st = os.statvfs(path)
    return {key: getattr(st, key) for key in (
        "f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree",
        "f_files", "f_flag", "f_frsize", "f_namemax")}


def is_write_open(flags: int) -> bool:
    return bool(flags & WRITE_FLAGS)


NS = 10**9  # the views give times in nanoseconds (View.use_ns)


def directory_stat(owner: Owner, mtime: int, ctime: int | None = None, *, mode: int = 0o555) -> dict:
    """A read-only directory; times in seconds."""
    ctime = mtime if ctime is None else ctime
    return {
        "st_mode": stat.S_IFDIR | mode, "st_nlink": 2, "st_size": 4096, "st_blocks": 8,
        "st_uid": owner.uid, "st_gid": owner.gid,
        "st_atime": mtime * NS, "st_mtime": mtime * NS, "st_ctime": ctime * NS,
    }


class StampedStat(Mapping):
    """A stat dict that is `template` with its times set to `seconds` (the change time to
    `changed`, if given): the entries of history/ (one per day) and of a day folder (one
    per commit) differ only in their times. A listing makes one per entry without
    building a dict, and the FUSE binding fills its struct from the template's once,
    setting only the times (GitFSFUSE.readdir_fuse_3)."""

    __slots__ = ("template", "seconds", "changed")
    TIMES = ("st_atime", "st_mtime")

    def __init__(self, template: dict, seconds: int, changed: int | None = None):
        self.template = template  # times 0
        self.seconds = seconds
        self.changed = seconds if changed is None else changed

    def __getitem__(self, key: str):
        if key == "st_ctime":
            return self.changed * NS
        return self.seconds * NS if key in self.TIMES else self.template[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.template)

    def __len__(self) -> int:
        return len(self.template)


class View(Operations):
    # Matches libfuse's timestamps in nanoseconds (see the FUSE(...) call).
    use_ns = True
    # What the kernel may do with the pages of a file this view opens (cache_policy.py).
    pages: ClassVar[Pages] = Pages.UNTIL_CHANGED

    def __init__(self, owner: Owner):
        self.owner = owner

    def fallocate(self, path, mode, offset, size, fh):
        """Only current/'s files can be allocated (CurrentView); the kernel refuses a file
        open for reading before it comes here."""
        # Not mfusepy's ENOSYS: the kernel takes that as "this mount has no fallocate" and
        # never asks again, for current/'s files either.
        raise FuseOSError(errno.EOPNOTSUPP)

    # Extended attributes: only the working tree's files keep some (PassthroughView reads
    # them, CurrentView writes them); everything else has none and is read-only. Defined
    # here, never left to mfusepy (ENOSYS would make the kernel stop asking, for every view).
    def getxattr(self, path, name, position=0):
        self.getattr(path)  # ENOENT for a path that does not exist
        raise FuseOSError(errno.ENODATA)

    def listxattr(self, path):
        self.getattr(path)
        return []

    def setxattr(self, path, name, value, options, position=0):
        self.getattr(path)
        raise FuseOSError(errno.EROFS)

    def removexattr(self, path, name):
        self.getattr(path)
        raise FuseOSError(errno.EROFS)


class ReadOnlyView(View):
    """Every mutating call is EROFS; so is opening for writing."""

    # Spelled out, with the parameter names the router calls them with (test_signatures.py).
    def create(self, path, mode, open_flags=None):
        raise FuseOSError(errno.EROFS)

    def mkdir(self, path, mode):
        raise FuseOSError(errno.EROFS)

    def mknod(self, path, mode, dev):
        raise FuseOSError(errno.EROFS)

    def unlink(self, path):
        raise FuseOSError(errno.EROFS)

    def rmdir(self, path):
        raise FuseOSError(errno.EROFS)

    def symlink(self, target, source):
        raise FuseOSError(errno.EROFS)

    def link(self, target, source):
        raise FuseOSError(errno.EROFS)

    def rename(self, old, new):
        raise FuseOSError(errno.EROFS)

    def chmod(self, path, mode):
        raise FuseOSError(errno.EROFS)

    def chown(self, path, uid, gid):
        raise FuseOSError(errno.EROFS)

    def truncate(self, path, length, fh=None):
        raise FuseOSError(errno.EROFS)

    def write(self, path, data, offset, fh):
        raise FuseOSError(errno.EROFS)

    def utimens(self, path, times=None):
        raise FuseOSError(errno.EROFS)

    def open(self, path, flags):
        if is_write_open(flags):
            raise FuseOSError(errno.EROFS)
        self.getattr(path)  # ENOENT for a missing path
        return 0

    def access(self, path, amode):
        self.getattr(path)
        if amode & os.W_OK:
            raise FuseOSError(errno.EROFS)
        return 0

    def release(self, path, fh):
        return 0
