"""current/: the branch's working tree, read-write.

Every change is made on the clone's working tree at once (so the program sees
POSIX behaviour), then described by a CommitJob for the sync worker, which
commits what the working tree holds at that path when the mount is quiet.
The job says which paths changed and why; the bytes come from the disk.
Paths are relative to the clone's root fd (see passthrough.py).
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Callable, Optional

from mfusepy import FuseOSError

from gitfs.handles import HandleTable, OpenFile
from gitfs.repo.repository import GIT_DIR, KEEP_FILE
from gitfs.sync.jobs import CommitJob, PendingJobs
from gitfs.sync.state import SyncState
from gitfs.views import keep
from gitfs.views.base import Owner, is_write_open
from gitfs.views.modes import apply_requested_mode, utime_ns
from gitfs.views.passthrough import PassthroughView, refuse_non_utf8


class CurrentView(PassthroughView):
    def __init__(self, owner: Owner, root: str, handles: HandleTable, sync_state: SyncState,
                 jobs: PendingJobs, *, max_size: int | None, extra_root_entries: tuple[str, ...] = (),
                 lfs_path: Callable[[str], bool] = lambda _relative: False,
                 lfs_placeholder: Callable[[str, int], bool] = lambda _relative, _fd: False):
        super().__init__(owner, root)
        self.handles = handles
        self.sync_state = sync_state
        self.jobs = jobs
        self.max_size = max_size
        self.lfs_path = lfs_path  # Git LFS: whether a path's content goes to the LFS store (no max_size)
        self.lfs_placeholder = lfs_placeholder  # Git LFS: whether an open file holds a pointer, not content
        self.extra_root_entries = extra_root_entries

    # -- helpers ------------------------------------------------------------

    def _check_size(self, size: int, path: str) -> None:
        if self.max_size is not None and size > self.max_size and not self.lfs_path(self._relative(path)):
            raise FuseOSError(errno.EFBIG)

    def _queue(self, message: str, add=(), remove=()) -> None:
        self.jobs.put(CommitJob(message, tuple(p.lstrip("/") for p in add), tuple(p.lstrip("/") for p in remove)))

    # -- reading --------------------------------------------------------------

    def readdir(self, path, fh):
        return [name for name, _type in self.readdir_with_attrs(path)]

    def readdir_with_attrs(self, path):
        """The names with their file types (see fuse_binding.GitFSFUSE): `find -type f` and
        `ls -R` learn what each entry is from the listing, without an lstat of each. The
        attributes themselves are left to getattr (the kernel caches them)."""
        with self._folder(self._relative(path)) as folder:
            typed, placeholder = keep.typed_listing(folder)
        hidden = {GIT_DIR} if path == "/" else set()
        if placeholder:
            hidden.add(KEEP_FILE)
        entries: list[tuple[str, Optional[int]]] = [(".", stat.S_IFDIR), ("..", stat.S_IFDIR)]
        entries.extend(entry for entry in typed if entry[0] not in hidden)
        if path == "/":
            entries.extend((name, None) for name in self.extra_root_entries)
        return entries

    def open(self, path, flags):
        relative = self._relative(path)
        if is_write_open(flags):
            with self.sync_state.mutation():
                # The kernel gives append offsets: O_APPEND would write them at the end again.
                fd = os.open(relative, flags & ~os.O_APPEND, dir_fd=self.root_fd)
                truncated = bool(flags & os.O_TRUNC)
                return self.handles.add(OpenFile(path, fd=fd, writable=True,
                                                 change="Update" if truncated else None))
        with self.sync_state.mutation(changes=False):  # not while remote changes are applied
            fd = os.open(relative, flags, dir_fd=self.root_fd)
            if self.lfs_placeholder(relative, fd):  # an LFS object that could not be had: never its pointer
                os.close(fd)
                raise FuseOSError(errno.EIO)
            return self.handles.add(OpenFile(path, fd=fd))

    def _fd(self, fh: int) -> int:
        """The descriptor of a file this view opened (every one of them has one)."""
        fd = self.handles.get(fh).fd
        if fd is None:
            raise FuseOSError(errno.EBADF)
        return fd

    def read(self, path, size, offset, fh):
        return os.pread(self._fd(fh), size, offset)

    # -- writing files -------------------------------------------------------------

    def create(self, path, mode, open_flags=None):
        # The router passes the open(2) flags from the raw file info (raw_fi).
        relative = self._new_name(path)
        flags = ((open_flags if isinstance(open_flags, int) else os.O_WRONLY) | os.O_CREAT) & ~os.O_APPEND
        with self.sync_state.mutation():
            try:  # O_EXCL: the mode is applied only to a file this call made
                fd = os.open(relative, flags | os.O_EXCL, stat.S_IMODE(mode), dir_fd=self.root_fd)
            except FileExistsError:
                if flags & os.O_EXCL:
                    raise
                fd = os.open(relative, flags & ~os.O_CREAT, dir_fd=self.root_fd)  # made meanwhile
                change = "Update" if flags & os.O_TRUNC else None
                return self.handles.add(OpenFile(path, fd=fd, writable=True, change=change))
            apply_requested_mode(fd, mode)
            return self.handles.add(OpenFile(path, fd=fd, writable=True, change="Created"))

    def write(self, path, data, offset, fh):
        open_file = self.handles.get(fh)
        self._check_size(offset + len(data), open_file.path)
        with self.sync_state.mutation():
            written = os.pwrite(self._fd(fh), data, offset)
            open_file.change = "Update"
        return written

    def truncate(self, path, length, fh=None):
        relative = self._relative(path)
        self._check_size(length, path)
        with self.sync_state.mutation():
            fd = os.open(relative, os.O_WRONLY, dir_fd=self.root_fd)  # truncate(2) has no *at form
            try:
                os.ftruncate(fd, length)
            finally:
                os.close(fd)
            self._queue(f"Update {path}", add=[path])

    def flush(self, path, fh):
        return 0

    def fsync(self, path, datasync, fh):
        fd = self._fd(fh)
        os.fdatasync(fd) if datasync else os.fsync(fd)
        return 0

    def release(self, path, fh):
        open_file = self.handles.pop(fh)
        if open_file is None:
            return 0
        if open_file.fd is not None:
            os.close(open_file.fd)
        if open_file.change is not None:
            # Named after the path at release: the file may have been renamed while open.
            self._queue(f"{open_file.change} {open_file.path}", add=[open_file.path])
        return 0

    # -- names ---------------------------------------------------------------------

    def unlink(self, path):
        relative = self._relative(path)
        with self.sync_state.mutation():
            os.unlink(relative, dir_fd=self.root_fd)
            self._queue(f"Deleted {path}", remove=[path])

    def mkdir(self, path, mode):
        relative = self._new_name(path)
        with self.sync_state.mutation():
            # Owner-writable until the placeholder is in, whatever mode was asked (mkdir -m 555).
            os.mkdir(relative, (mode & 0o7000) | 0o700, dir_fd=self.root_fd)
            with self._folder(relative) as folder:
                keep.write_placeholder(folder)  # git has no empty folders (see keep.py)
                apply_requested_mode(folder, mode)
            self._queue(f"Create the {path} directory", add=[f"{path}/{KEEP_FILE}"])

    def rmdir(self, path):
        relative = self._relative(path)
        with self.sync_state.mutation():
            with self._folder(relative) as folder:
                names, placeholder = keep.listing(folder)
                if len(names) > (1 if placeholder else 0):
                    raise FuseOSError(errno.ENOTEMPTY)  # a .keep with content counts: it is the user's
                if placeholder:
                    os.unlink(KEEP_FILE, dir_fd=folder)
            os.rmdir(relative, dir_fd=self.root_fd)
            if placeholder:  # without one git never had it (rm -rf removed its files already)
                self._queue(f"Delete the {path} directory", remove=[f"{path}/{KEEP_FILE}"])

    def rename(self, old, new):
        old_relative, new_relative = self._relative(old), self._new_name(new)
        with self.sync_state.mutation():
            cleared = self._clear_placeholder_of_empty_target(old_relative, new_relative)
            try:
                os.rename(old_relative, new_relative, src_dir_fd=self.root_fd, dst_dir_fd=self.root_fd)
            except OSError:
                if cleared:  # the target stays as it was
                    with self._folder(new_relative) as folder:
                        keep.write_placeholder(folder)
                raise
            self.handles.rename(old, new)
            self._queue(f"Rename {old} to {new}", add=[new], remove=[old])

    def _clear_placeholder_of_empty_target(self, old_relative: str, new_relative: str) -> bool:
        """A folder holding only the placeholder is empty: renaming a folder over it must work.
        True if the placeholder was removed."""
        try:
            if not (stat.S_ISDIR(os.lstat(old_relative, dir_fd=self.root_fd).st_mode)
                    and stat.S_ISDIR(os.lstat(new_relative, dir_fd=self.root_fd).st_mode)):
                return False
            with self._folder(new_relative) as folder:
                names, placeholder = keep.listing(folder)
                if not (placeholder and names == [KEEP_FILE]):
                    return False
                os.unlink(KEEP_FILE, dir_fd=folder)
                return True
        except (FileNotFoundError, NotADirectoryError):
            return False  # os.rename gives the answer

    def symlink(self, target, source):
        # fusepy's names: `target` is the new link, `source` the text it holds.
        relative = self._new_name(target)
        refuse_non_utf8(source)
        with self.sync_state.mutation():
            os.symlink(source, relative, dir_fd=self.root_fd)
            self._queue(f"Create symlink to {source} for {target}", add=[target])

    def link(self, target, source):
        # `target` is the new name, `source` the existing file (both relative to current/).
        source_relative, target_relative = self._relative(source), self._new_name(target)
        with self.sync_state.mutation():
            os.link(source_relative, target_relative, src_dir_fd=self.root_fd, dst_dir_fd=self.root_fd,
                    follow_symlinks=False)
            self._queue(f"Create link to {source} for {target}", add=[target])

    def mknod(self, path, mode, dev):
        if not stat.S_ISREG(mode):
            raise FuseOSError(errno.EPERM)  # git stores no device, FIFO or socket
        relative = self._new_name(path)
        with self.sync_state.mutation():
            fd = os.open(relative, os.O_WRONLY | os.O_CREAT | os.O_EXCL, stat.S_IMODE(mode), dir_fd=self.root_fd)
            try:
                apply_requested_mode(fd, mode)
            finally:
                os.close(fd)
            self._queue(f"Created {path}", add=[path])

    # -- metadata --------------------------------------------------------------------

    def chmod(self, path, mode):
        relative = self._relative(path)
        with self.sync_state.mutation():
            st = os.lstat(relative, dir_fd=self.root_fd)
            if stat.S_ISLNK(st.st_mode):
                raise FuseOSError(errno.EOPNOTSUPP)  # as Linux: a link has no mode of its own
            os.chmod(relative, stat.S_IMODE(mode), dir_fd=self.root_fd)
            # Git records only a file's exec bit (the owner's): any other change has
            # nothing to commit (tar x sets every file's mode, mostly to what it is).
            if not stat.S_ISDIR(st.st_mode) and (st.st_mode ^ mode) & stat.S_IXUSR:
                self._queue(f"Chmod to {stat.S_IMODE(mode):04o} on {path}", add=[path])

    def chown(self, path, uid, gid):
        # Git records no owner; every file shows the `user`/`group` options. A missing
        # path still answers ENOENT.
        os.lstat(self._relative(path), dir_fd=self.root_fd)
        return 0

    def utimens(self, path, times=None):
        relative = self._relative(path)
        ns = utime_ns(times, lambda: os.lstat(relative, dir_fd=self.root_fd))
        if ns is None:
            os.utime(relative, dir_fd=self.root_fd, follow_symlinks=False)
        else:
            os.utime(relative, ns=ns, dir_fd=self.root_fd, follow_symlinks=False)
        return 0
