"""current/: the branch's working tree, read-write.

Every change is made on the clone's working tree at once (so the program sees
POSIX behaviour), then described by a CommitJob for the sync worker, which
commits what the working tree holds at that path when the mount is quiet.
The job says which paths changed and why; the bytes come from the disk.
Paths are relative to the clone's root fd, never through a symlink (see passthrough.py).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterable, Iterator
from typing import Optional

from mfusepy import FuseOSError

from gitfs.handles import HandleTable, OpenFile
from gitfs.repo import beneath
from gitfs.repo.repository import KEEP_FILE
from gitfs.repo.workdir import user_attributes
from gitfs.sync.failed_writes import FailedWrites
from gitfs.sync.jobs import CommitJob, PendingJobs
from gitfs.sync.state import SyncState
from gitfs.views import keep
from gitfs.views.allocation import FALLOC_FL_KEEP_SIZE, fallocate
from gitfs.views.base import Owner, is_write_open
from gitfs.views.links import KernelAttributes, folder_of, lstat_or_none, same_file_names
from gitfs.views.listed_attributes import ListedAttributes
from gitfs.views.modes import apply_requested_mode, utime_ns
from gitfs.views.passthrough import PassthroughView, refuse_non_utf8
from gitfs.views.worktree_filter import NO_FILTER, WorktreeFilter


class CurrentView(PassthroughView):
    def __init__(self, owner: Owner, root: str, handles: HandleTable, sync_state: SyncState,
                 jobs: PendingJobs, *, max_size: int | None, extra_root_entries: tuple[str, ...] = (),
                 kernel: Optional[KernelAttributes] = None, worktree_filter: WorktreeFilter = NO_FILTER,
                 listed: Optional[ListedAttributes] = None, failed_writes: Optional[FailedWrites] = None):
        super().__init__(owner, root, handles, extra_root_entries=extra_root_entries, worktree_filter=worktree_filter,
                         reading=lambda: sync_state.mutation(changes=False),  # not while remote changes are applied
                         # Open to the sync worker until its freeze ends (sync/state.py).
                         releasing=lambda: sync_state.mutation(changes=False, patient=True),
                         listed=listed)
        self.sync_state = sync_state
        self.jobs = jobs
        self.max_size = max_size
        self.kernel = kernel  # told when a change through one name changes a file's other names
        self.failed_writes = failed_writes or FailedWrites()  # told how each write ended

    # -- helpers ------------------------------------------------------------

    def _check_size(self, size: int, path: str) -> None:
        if self.max_size is not None and size > self.max_size and not self.worktree_filter.takes(self._relative(path)):
            raise FuseOSError(errno.EFBIG)

    def _queue(self, message: str, add=(), remove=(), linked: Optional[tuple[int, int]] = None) -> None:
        self.jobs.put(CommitJob(message, tuple(p.lstrip("/") for p in add), tuple(p.lstrip("/") for p in remove),
                                linked=(linked,) if linked is not None else ()))

    def _other_names(self, file: os.stat_result, folders: Iterable[str], besides: str) -> tuple[str, ...]:
        """The names of `file` in `folders` ("/d", "" for the root) but `besides`, if the
        kernel is to be told of them (links.py); () at once for a file with one name."""
        if self.kernel is None or file.st_nlink < 2 or not stat.S_ISREG(file.st_mode):
            return ()
        others: list[str] = []
        for folder in dict.fromkeys(folders):
            try:
                with self._folder(self._relative(folder or "/")) as folder_fd:
                    others += [name for name in same_file_names(folder_fd, folder, file) if name != besides]
            except OSError:
                continue  # the folder went meanwhile: nothing of it is cached
        return tuple(others)

    def _other_names_changed(self, file: os.stat_result, folders: Iterable[str], besides: str) -> None:
        """A change through the name `besides` changed `file`, which has (or had) other
        names: the kernel forgets what it holds of those in `folders`, each cached apart."""
        self._forget(self._other_names(file, folders, besides))

    def _forget(self, names: tuple[str, ...]) -> None:
        if names and self.kernel is not None:
            self.kernel.forget_attributes(names)

    def _written(self, path: str, fd: int, flags: int) -> OpenFile:
        """The handle of a file opened for writing. A file with other names in its folder
        keeps them: each write through this one changes what they show (links.py)."""
        file = os.fstat(fd)
        others = self._other_names(file, [folder_of(path)], path) if self.kernel is not None else ()
        if flags & os.O_TRUNC:
            self._forget(others)
        return OpenFile(path, fd=fd, writable=True, change="Update" if flags & os.O_TRUNC else None,
                        other_names=others, linked=_linked(file))

    # -- reading --------------------------------------------------------------------

    def _attributes(self, relative, st):
        attributes = super()._attributes(relative, st)
        if stat.S_ISREG(st.st_mode):
            # An LFS file whose object could not be had holds the pointer's text: shown
            # with the object's size, as in history/ (and read as EIO, see open).
            size = self.worktree_filter.shown_size(self.root_fd, relative, st.st_size)
            if size is not None:
                attributes["st_size"] = size
        return attributes

    # -- opening ----------------------------------------------------------------------

    def getattr(self, path, fh=None):
        # libfuse's high-level API asks getattr for a lookup as well as for a node's
        # attributes: either way, missing until the kernel has forgotten the old name.
        if fh is None and self.kernel is not None and self.kernel.replaced_meanwhile(path):
            raise FuseOSError(errno.ENOENT)
        return super().getattr(path, fh)

    def open(self, path, flags):
        if not is_write_open(flags):
            return super().open(path, flags)
        with self.sync_state.mutation():
            # The kernel gives append offsets: O_APPEND would write them at the end again.
            fd = self._open_named(self._relative(path), flags & ~os.O_APPEND)
            if flags & os.O_TRUNC:
                self.failed_writes.truncated(path, 0)
            return self.handles.add(self._written(path, fd, flags))

    def _made(self, path: str) -> None:
        """A call made `path`, under mutation(): the name is the new thing's, also if the
        sync removed the old one a moment ago and the kernel is not told yet (getattr)."""
        if self.kernel is not None:
            self.kernel.made(path)

    # -- writing files -------------------------------------------------------------

    def create(self, path, mode, open_flags=None):
        # The router passes the open(2) flags from the raw file info (raw_fi).
        relative = self._new_name(path)
        flags = ((open_flags if isinstance(open_flags, int) else os.O_WRONLY) | os.O_CREAT) & ~os.O_APPEND
        with self.sync_state.mutation():
            try:  # O_EXCL: the mode is applied only to a file this call made
                fd = beneath.open_beneath(self.root_fd, relative, flags | os.O_EXCL, stat.S_IMODE(mode))
            except FileExistsError:
                if flags & os.O_EXCL:
                    raise
                fd = beneath.open_beneath(self.root_fd, relative, flags & ~os.O_CREAT)  # made meanwhile
                self._made(path)
                if flags & os.O_TRUNC:
                    self.failed_writes.truncated(path, 0)
                return self.handles.add(self._written(path, fd, flags))
            self.failed_writes.truncated(path, 0)  # a new file
            self._made(path)
            apply_requested_mode(fd, mode)
            return self.handles.add(OpenFile(path, fd=fd, writable=True, change="Created"))

    def write(self, path, data, offset, fh):
        open_file = self.handles.get(fh)
        with self._failure_told(open_file.path, offset, offset + len(data)):
            self._check_size(offset + len(data), open_file.path)
            with self.sync_state.mutation():
                written = os.pwrite(self._fd(fh), data, offset)
                open_file.change = "Update"
        self.failed_writes.written(open_file.path, offset, offset + written)
        self._forget(open_file.other_names)
        return written

    @contextlib.contextmanager
    def _failure_told(self, path: str, start: int, end: Optional[int] = None) -> Iterator[None]:
        """Tell failed_writes of a failure (max_size, a full disk) that may leave bytes
        [start, end) of the file missing (end None: the file's size or more): the file is
        not committed until it is written whole (failed_writes.py)."""
        try:
            yield
        except OSError as error:  # FuseOSError is one
            if error.errno is not None:
                self.failed_writes.failed(path, error.errno, start, end if end is not None else 1 << 63)
            raise

    def fallocate(self, path, mode, offset, size, fh):
        """Space allocated, a hole punched or a range zeroed, by the clone's file system
        (allocation.py). An allocation that grows the file counts against max_size."""
        open_file = self.handles.get(fh)
        with self._failure_told(open_file.path, offset, offset + size):  # allocated or not, no data
            if not mode & FALLOC_FL_KEEP_SIZE:
                self._check_size(offset + size, open_file.path)
            with self.sync_state.mutation():
                fallocate(self._fd(fh), mode, offset, size)  # a mode the clone's disk lacks: its EOPNOTSUPP
                open_file.change = "Update"
        self._forget(open_file.other_names)

    def truncate(self, path, length, fh=None):
        relative = self._relative(path)
        with self._failure_told(path, 0, length):
            self._check_size(length, path)
            with self.sync_state.mutation():
                fd = beneath.open_beneath(self.root_fd, relative, os.O_WRONLY)  # truncate(2) has no *at form
                try:
                    os.ftruncate(fd, length)
                    file = os.fstat(fd)
                finally:
                    os.close(fd)
                self._queue(f"Update {path}", add=[path], linked=_linked(file))
        self.failed_writes.truncated(path, length)
        self._other_names_changed(file, [folder_of(path)], besides=path)

    def fsync(self, path, datasync, fh):
        # With delayed allocation the disk may say ENOSPC, EDQUOT or EIO only now: which
        # bytes were lost is unknown, so the whole file counts as missed.
        open_file = self.handles.get(fh)
        fd = self._fd(fh)
        with self._failure_told(open_file.path, 0):
            os.fdatasync(fd) if datasync else os.fsync(fd)
        return 0

    def flush(self, path, fh):
        """At each close(2) of the program's descriptor: a file system that reports write
        errors at close (NFS, FUSE ones) says so through a duplicate's close, as it would
        to the program; local ones report nothing here and cost one dup."""
        open_file = self.handles.get(fh)
        if open_file.writable and open_file.fd is not None:
            with self._failure_told(open_file.path, 0):
                os.close(os.dup(open_file.fd))
        return 0

    def _released(self, open_file: OpenFile) -> None:
        if open_file.change is not None:
            # Named after the path at release: the file may have been renamed while open.
            self._queue(f"{open_file.change} {open_file.path}", add=[open_file.path], linked=open_file.linked)

    # -- names ---------------------------------------------------------------------

    def unlink(self, path):
        relative = self._relative(path)
        with self.sync_state.mutation(), beneath.parent(self.root_fd, relative) as (folder, name):
            file = os.lstat(name, dir_fd=folder)
            os.unlink(name, dir_fd=folder)
            self._queue(f"Deleted {path}", remove=[path])
            self.failed_writes.removed(path)
        self._other_names_changed(file, [folder_of(path)], besides=path)  # one link fewer, a new ctime

    def mkdir(self, path, mode):
        relative = self._new_name(path)
        with self.sync_state.mutation():
            # Owner-writable until the placeholder is in, whatever mode was asked (mkdir -m 555).
            with beneath.parent(self.root_fd, relative) as (parent, name):
                os.mkdir(name, (mode & 0o7000) | 0o700, dir_fd=parent)
            self._made(path)
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
            with beneath.parent(self.root_fd, relative) as (parent, name):
                os.rmdir(name, dir_fd=parent)
            if placeholder:  # without one git never had it (rm -rf removed its files already)
                self._queue(f"Delete the {path} directory", remove=[f"{path}/{KEEP_FILE}"])

    def rename(self, old, new):
        old_relative, new_relative = self._relative(old), self._new_name(new)
        with self.sync_state.mutation():
            cleared = self._clear_placeholder_of_empty_target(old_relative, new_relative)
            replaced = lstat_or_none(new_relative, self.root_fd) if self.kernel is not None else None
            try:
                with beneath.parent(self.root_fd, old_relative) as (old_folder, old_name), \
                        beneath.parent(self.root_fd, new_relative) as (new_folder, new_name):
                    os.rename(old_name, new_name, src_dir_fd=old_folder, dst_dir_fd=new_folder)
            except OSError:
                if cleared:  # the target stays as it was
                    with self._folder(new_relative) as folder:
                        keep.write_placeholder(folder)
                raise
            self._made(new)
            self.handles.rename(old, new)
            self.failed_writes.renamed(old, new)
            self._queue(f"Rename {old} to {new}", add=[new], remove=[old])
        if self.kernel is not None:
            folders = [folder_of(old), folder_of(new)]
            if replaced is not None:  # the file renamed over lost a link
                self._other_names_changed(replaced, folders, besides=new)
            self._other_names_changed(beneath.lstat(self.root_fd, new_relative), folders, besides=new)

    def _clear_placeholder_of_empty_target(self, old_relative: str, new_relative: str) -> bool:
        """A folder holding only the placeholder is empty: renaming a folder over it must work.
        True if the placeholder was removed."""
        try:
            if not (stat.S_ISDIR(beneath.lstat(self.root_fd, old_relative).st_mode)
                    and stat.S_ISDIR(beneath.lstat(self.root_fd, new_relative).st_mode)):
                return False
            with self._folder(new_relative) as folder:
                names, placeholder = keep.listing(folder)
                if not (placeholder and names == [KEEP_FILE]):
                    return False
                os.unlink(KEEP_FILE, dir_fd=folder)
                return True
        except OSError:
            return False  # os.rename gives the answer

    def symlink(self, target, source):
        # fusepy's names: `target` is the new link, `source` the text it holds.
        relative = self._new_name(target)
        refuse_non_utf8(source)
        with self.sync_state.mutation():
            with beneath.parent(self.root_fd, relative) as (folder, name):
                os.symlink(source, name, dir_fd=folder)
            self._made(target)
            self._queue(f"Create symlink to {source} for {target}", add=[target])

    def link(self, target, source):
        # `target` is the new name, `source` the existing file (both relative to current/).
        source_relative, target_relative = self._relative(source), self._new_name(target)
        with self.sync_state.mutation():
            with beneath.parent(self.root_fd, source_relative) as (source_folder, source_name), \
                    beneath.parent(self.root_fd, target_relative) as (target_folder, target_name):
                os.link(source_name, target_name, src_dir_fd=source_folder, dst_dir_fd=target_folder,
                        follow_symlinks=False)
            self._made(target)
            self._queue(f"Create link to {source} for {target}", add=[target])
            file = beneath.lstat(self.root_fd, target_relative)
        # The kernel learns the new name from this call; the source and any other name it
        # had show one link more from now on.
        self._other_names_changed(file, [folder_of(source), folder_of(target)], besides=target)

    def mknod(self, path, mode, dev):
        if not stat.S_ISREG(mode):
            raise FuseOSError(errno.EPERM)  # git stores no device, FIFO or socket
        relative = self._new_name(path)
        with self.sync_state.mutation():
            fd = beneath.open_beneath(self.root_fd, relative, os.O_WRONLY | os.O_CREAT | os.O_EXCL, stat.S_IMODE(mode))
            self._made(path)
            try:
                apply_requested_mode(fd, mode)
            finally:
                os.close(fd)
            self._queue(f"Created {path}", add=[path])

    # -- metadata --------------------------------------------------------------------

    def setxattr(self, path, name, value, options, position=0):
        # Kept on the clone's file, never committed: no job, and not a change for the
        # quiet period (Samba sets user.DOSATTRIB at every file it creates).
        with self.sync_state.mutation(changes=False):
            user_attributes.set_value(self.root_fd, self._relative(path), name, value, options)
        return 0

    def removexattr(self, path, name):
        with self.sync_state.mutation(changes=False):
            user_attributes.remove(self.root_fd, self._relative(path), name)
        return 0

    def chmod(self, path, mode):
        relative = self._relative(path)
        if relative == ".":
            return  # the clone's folder stays private; git records no folder's mode
        with self.sync_state.mutation():
            try:
                st = beneath.chmod(self.root_fd, relative, stat.S_IMODE(mode))
            except OSError as error:
                if error.errno == errno.EOPNOTSUPP:
                    raise FuseOSError(errno.EOPNOTSUPP) from None  # as Linux: a link has no mode of its own
                raise
            # Git records only a file's exec bit (the owner's): any other change has
            # nothing to commit (tar x sets every file's mode, mostly to what it is).
            if not stat.S_ISDIR(st.st_mode) and (st.st_mode ^ mode) & stat.S_IXUSR:
                self._queue(f"Chmod to {stat.S_IMODE(mode):04o} on {path}", add=[path])
        self._other_names_changed(st, [folder_of(path)], besides=path)

    def chown(self, path, uid, gid):
        # Git records no owner; every file shows the `user`/`group` options. A missing
        # path still answers ENOENT.
        beneath.lstat(self.root_fd, self._relative(path))
        return 0

    def utimens(self, path, times=None):
        relative = self._relative(path)
        ns = utime_ns(times, lambda: beneath.lstat(self.root_fd, relative))
        with beneath.parent(self.root_fd, relative) as (folder, name):
            if ns is None:
                os.utime(name, dir_fd=folder, follow_symlinks=False)
            else:
                os.utime(name, ns=ns, dir_fd=folder, follow_symlinks=False)
        if self.kernel is not None:
            self._other_names_changed(beneath.lstat(self.root_fd, relative), [folder_of(path)], besides=path)
        return 0


def _linked(file: os.stat_result) -> Optional[tuple[int, int]]:
    """(device, inode) of a regular file with several hard links, else None."""
    return (file.st_dev, file.st_ino) if file.st_nlink > 1 and stat.S_ISREG(file.st_mode) else None
