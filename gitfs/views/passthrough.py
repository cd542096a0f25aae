"""PassthroughView: os.* on the clone's working tree, through one directory fd.

Every call names its path relative to an fd of the clone's root (the *at forms
of the system calls: openat, fstatat, mkdirat, renameat...), never as an
absolute path, and resolves it without following a symlink in any component
(beneath.py): a folder that became a link behind the kernel's cached view never
leads the daemon out of the clone. The kernel takes at most PATH_MAX (4096 bytes with the NUL) in
one path argument; prefixing the clone's own location would make a path that
fits on a native disk fail with ENAMETOOLONG. Relative to the root fd, a path
of current/ works up to the same 4095 bytes as on a native disk (counted from
current/, since FUSE hands over paths from the mount's root).

The clone's own `.git` is not part of the tree: every call that names it, or
anything below it, is ENOENT, as if it did not exist (creating that name is
EACCES: it is taken). A `.git` in a subfolder is an ordinary folder here.
"""

from __future__ import annotations

import contextlib
import errno
import os
import weakref
from collections.abc import Iterator

from mfusepy import FuseOSError

from gitfs.repo import beneath
from gitfs.repo.repository import GIT_DIR
from gitfs.views.base import Owner, View

CLONE_GIT_DIR = "/" + GIT_DIR


def refuse_non_utf8(path: str) -> None:
    """Git paths are UTF-8 here (pygit2): a name that is not (surrogate-escaped bytes)
    could never be committed, so it is refused at once instead of staying local forever."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise FuseOSError(errno.EILSEQ) from None


class PassthroughView(View):
    """Maps calls 1:1 onto os.* relative to the root of `root` (the clone's working tree)."""

    def __init__(self, owner: Owner, root: str):
        super().__init__(owner)
        self.root = root
        self.root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
        # The router's view cache may drop this view while calls are in flight: the fd
        # is closed once the last of them lets go of the view, never under one.
        weakref.finalize(self, os.close, self.root_fd)

    def _relative(self, path: str) -> str:
        """The path relative to the root fd ("." for the root); ENOENT for the clone's .git."""
        if path == CLONE_GIT_DIR or path.startswith(CLONE_GIT_DIR + "/"):
            raise FuseOSError(errno.ENOENT)
        return path.lstrip("/") or "."

    def _new_name(self, path: str) -> str:
        """_relative for a name a call creates: the name .git at the root is taken (EACCES),
        and the name must be UTF-8 (EILSEQ)."""
        if path == CLONE_GIT_DIR:
            raise FuseOSError(errno.EACCES)
        relative = self._relative(path)
        refuse_non_utf8(path)
        return relative

    @contextlib.contextmanager
    def _folder(self, relative: str) -> Iterator[int]:
        """An fd of a folder: names inside it are then relative to it (they may not fit
        after the folder's path in one call), and listing it needs one."""
        fd = beneath.open_beneath(self.root_fd, relative, os.O_RDONLY | os.O_DIRECTORY)
        try:
            yield fd
        finally:
            os.close(fd)

    def getattr(self, path, fh=None):
        st = beneath.lstat(self.root_fd, self._relative(path))
        # One literal: the most frequent call of all (every lookup, and libfuse asks
        # again after each create and setattr).
        return {"st_mode": st.st_mode, "st_nlink": st.st_nlink, "st_size": st.st_size, "st_blocks": st.st_blocks,
                "st_ino": st.st_ino, "st_uid": self.owner.uid, "st_gid": self.owner.gid,
                "st_atime": st.st_atime_ns, "st_mtime": st.st_mtime_ns, "st_ctime": st.st_ctime_ns}

    def readlink(self, path):
        return beneath.readlink(self.root_fd, self._relative(path))

    def access(self, path, amode):
        with beneath.parent(self.root_fd, self._relative(path)) as (folder, name):
            if not os.access(name, amode, dir_fd=folder, follow_symlinks=False):
                raise FuseOSError(errno.EACCES)
        return 0
