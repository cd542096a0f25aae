"""PassthroughView: the working tree read (os.* on the clone, through one directory
fd): attributes, links, listings, opening for reading and reading. CurrentView adds
the writes.

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
import stat
import weakref
from collections.abc import Iterator
from typing import Callable, Optional

from mfusepy import FuseOSError

from gitfs.handles import HandleTable, OpenFile
from gitfs.repo import beneath
from gitfs.repo.repository import GIT_DIR, KEEP_FILE
from gitfs.repo.workdir import user_attributes
from gitfs.views import keep
from gitfs.views.base import Owner, View, is_write_open
from gitfs.views.listed_attributes import ListedAttributes
from gitfs.views.worktree_filter import NO_FILTER, WorktreeFilter

CLONE_GIT_DIR = "/" + GIT_DIR
# The clone's own folder is 0700 (private to the mounting user, whatever allow_other
# lets others see through the mount); the root of the tree shows an ordinary folder's mode.
TREE_ROOT_MODE = stat.S_IFDIR | 0o755


def refuse_non_utf8(path: str) -> None:
    """Git paths are UTF-8 here (pygit2): a name that is not (surrogate-escaped bytes)
    could never be committed, so it is refused at once instead of staying local forever."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise FuseOSError(errno.EILSEQ) from None


class PassthroughView(View):
    """Maps reading calls 1:1 onto os.* relative to the root of `root` (the clone's
    working tree); opening for writing is EROFS here. Open files live in `handles`."""

    def __init__(self, owner: Owner, root: str, handles: HandleTable, *, extra_root_entries: tuple[str, ...] = (),
                 worktree_filter: WorktreeFilter = NO_FILTER,
                 reading: Callable[[], contextlib.AbstractContextManager[object]] = contextlib.nullcontext,
                 releasing: Callable[[], contextlib.AbstractContextManager[object]] = contextlib.nullcontext,
                 listed: Optional[ListedAttributes] = None):
        super().__init__(owner)
        self.root = root
        self.handles = handles
        self.extra_root_entries = extra_root_entries  # listed in the root (history/ when current_path=/)
        self.worktree_filter = worktree_filter  # Git LFS's answers about working files
        self.reading = reading  # held while a file is opened for reading
        self.releasing = releasing  # held while a file is released
        self.listed = ListedAttributes() if listed is None else listed  # where listings carry attributes
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
        self.listed.asked(path)
        relative = self._relative(path)
        attributes = self._attributes(relative, beneath.lstat(self.root_fd, relative))
        if relative == ".":
            attributes["st_mode"] = TREE_ROOT_MODE
        return attributes

    def _attributes(self, relative: str, st: os.stat_result) -> dict:
        """What getattr and a listing tell of a path, from its lstat."""
        # One literal: the most frequent call of all (every lookup, every listed entry).
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

    def getxattr(self, path, name, position=0):
        return user_attributes.get(self.root_fd, self._relative(path), name)

    def listxattr(self, path):
        return user_attributes.names(self.root_fd, self._relative(path))

    def readdir(self, path, fh):
        return [name for name, _type in self.readdir_with_attrs(path)]

    def readdir_with_attrs(self, path):
        """The names with their attributes, or with their file types only where the kernel
        holds every entry's attributes already (ListedAttributes says which; see
        fuse_binding.GitFSFUSE for the forms). With attributes, a program that opens or
        stats each entry (grep -r, ls -l, cp -r) makes no LOOKUP or GETATTR round trip for
        it; with types, `find -type f` and `ls -R` still need no lstat of each."""
        relative = self._relative(path)
        with self._folder(relative) as folder:
            if self.listed.wanted(path):  # asked after the opening: a failed one hands nothing over
                stats, placeholder = keep.stat_listing(folder)
                prefix = "" if relative == "." else relative + "/"
                found: list = [(name, None if st is None else self._attributes(prefix + name, st))
                               for name, st in stats]
            else:
                found, placeholder = keep.typed_listing(folder)
        hidden = {GIT_DIR} if path == "/" else set()
        if placeholder:
            hidden.add(KEEP_FILE)
        entries: list[tuple[str, object]] = [(".", stat.S_IFDIR), ("..", stat.S_IFDIR)]
        entries.extend(entry for entry in found if entry[0] not in hidden)
        if path == "/":
            entries.extend((name, None) for name in self.extra_root_entries)
        return entries

    def open(self, path, flags):
        if is_write_open(flags):
            raise FuseOSError(errno.EROFS)
        relative = self._relative(path)
        with self.reading():
            fd = self._open_named(relative, flags)
            if self.worktree_filter.placeholder(relative, fd):  # an LFS object not had: never its pointer
                os.close(fd)
                raise FuseOSError(errno.EIO)
            return self.handles.add(OpenFile(path, fd=fd))

    def _open_named(self, relative: str, flags: int) -> int:
        """open_beneath for FUSE's open, which the kernel sends only for a name it holds.
        Missing, the file went behind the kernel's back: the remote removed it and the
        kernel is not told yet (that waits for the folder's lock, after the sync's freeze).
        ESTALE has the kernel look the name up again and then do what a disk does: answer
        ENOENT, or create the file for an O_CREAT it would otherwise fail."""
        try:
            return beneath.open_beneath(self.root_fd, relative, flags)
        except FileNotFoundError:
            raise FuseOSError(errno.ESTALE) from None

    def _fd(self, fh: int) -> int:
        """The descriptor of a file this view opened (every one of them has one)."""
        fd = self.handles.get(fh).fd
        if fd is None:
            raise FuseOSError(errno.EBADF)
        return fd

    def read(self, path, size, offset, fh):
        if path:  # FUSE marks the file's atime stale after a READ
            self.listed.asked(path)
        return os.pread(self._fd(fh), size, offset)

    def flush(self, path, fh):
        return 0

    def release(self, path, fh):
        try:
            open_file = self.handles.get(fh)
        except KeyError:
            return 0
        with self.releasing():
            try:
                if open_file.fd is not None:
                    os.close(open_file.fd)
                self._released(open_file)
            finally:
                # Last: a sync asked for now waits for this entry to go, and then finds the job.
                self.handles.pop(fh)
        return 0

    def _released(self, open_file: OpenFile) -> None:
        """What a closed file leaves behind, before its handle goes (CurrentView: a commit job)."""
