"""current/: the branch's working tree, read-write.

Every change is made on the clone's working tree at once (so the program sees
POSIX behaviour), then described by a CommitJob for the sync worker, which
commits what the working tree holds at that path when the mount is quiet.
The job says which paths changed and why; the bytes come from the disk.
"""

from __future__ import annotations

import errno
import os
import queue
import stat

from mfusepy import FuseOSError

from gitfs.handles import HandleTable, OpenFile
from gitfs.repo.repository import GIT_DIR, KEEP_FILE
from gitfs.sync.jobs import CommitJob
from gitfs.sync.state import SyncState
from gitfs.views.base import Owner, PassthroughView, is_write_open


class CurrentView(PassthroughView):
    def __init__(self, owner: Owner, root: str, handles: HandleTable, sync_state: SyncState,
                 jobs: queue.Queue, *, max_size: int | None, extra_root_entries: tuple[str, ...] = ()):
        super().__init__(owner, root)
        self.handles = handles
        self.sync_state = sync_state
        self.jobs = jobs
        self.max_size = max_size
        self.extra_root_entries = extra_root_entries

    # -- helpers ------------------------------------------------------------

    @staticmethod
    def _refuse_git_dir(*paths: str) -> None:
        """The clone's own .git is never written through the mount."""
        for path in paths:
            if path == "/" + GIT_DIR or path.startswith("/" + GIT_DIR + "/"):
                raise FuseOSError(errno.EACCES)

    @staticmethod
    def _refuse_non_utf8(*paths: str) -> None:
        """Git paths are UTF-8 here (pygit2): a name that is not (surrogate-escaped bytes)
        could never be committed, so it is refused at once instead of staying local forever."""
        for path in paths:
            try:
                path.encode("utf-8")
            except UnicodeEncodeError:
                raise FuseOSError(errno.EILSEQ) from None

    def _check_size(self, size: int) -> None:
        if self.max_size is not None and size > self.max_size:
            raise FuseOSError(errno.EFBIG)

    def _queue(self, message: str, add=(), remove=()) -> None:
        self.jobs.put(CommitJob(message, tuple(p.lstrip("/") for p in add), tuple(p.lstrip("/") for p in remove)))

    # -- reading --------------------------------------------------------------

    def readdir(self, path, fh):
        names = os.listdir(self.full(path))
        hidden = {KEEP_FILE, GIT_DIR} if path == "/" else {KEEP_FILE}
        entries = [".", ".."] + [name for name in names if name not in hidden]
        if path == "/":
            entries.extend(self.extra_root_entries)
        return entries

    def open(self, path, flags):
        writable = is_write_open(flags)
        if writable:
            self._refuse_git_dir(path)
            with self.sync_state.mutation():
                fd = os.open(self.full(path), flags & ~os.O_APPEND)  # the kernel gives append offsets
                truncated = bool(flags & os.O_TRUNC)
                return self.handles.add(OpenFile(path, fd=fd, writable=True,
                                                 change="Update" if truncated else None))
        with self.sync_state.mutation(changes=False):  # not while remote changes are applied
            return self.handles.add(OpenFile(path, fd=os.open(self.full(path), flags)))

    def read(self, path, size, offset, fh):
        return os.pread(self.handles.get(fh).fd, size, offset)

    # -- writing files -------------------------------------------------------------

    def create(self, path, mode, fi=None):
        self._refuse_git_dir(path)
        self._refuse_non_utf8(path)
        flags = (fi if isinstance(fi, int) else os.O_WRONLY) | os.O_CREAT
        with self.sync_state.mutation():
            fd = os.open(self.full(path), flags & ~os.O_APPEND, mode)
            return self.handles.add(OpenFile(path, fd=fd, writable=True, change="Created"))

    def write(self, path, data, offset, fh):
        open_file = self.handles.get(fh)
        self._check_size(offset + len(data))
        with self.sync_state.mutation():
            written = os.pwrite(open_file.fd, data, offset)
            open_file.change = "Update"
        return written

    def truncate(self, path, length, fh=None):
        self._refuse_git_dir(path)
        self._check_size(length)
        with self.sync_state.mutation():
            os.truncate(self.full(path), length)
            self._queue(f"Update {path}", add=[path])

    def flush(self, path, fh):
        return 0

    def fsync(self, path, datasync, fh):
        fd = self.handles.get(fh).fd
        os.fdatasync(fd) if datasync else os.fsync(fd)
        return 0

    def release(self, path, fh):
        open_file = self.handles.pop(fh)
        if open_file is None:
            return 0
        os.close(open_file.fd)
        if open_file.change is not None:
            # Named after the path at release: the file may have been renamed while open.
            self._queue(f"{open_file.change} {open_file.path}", add=[open_file.path])
        return 0

    # -- names ---------------------------------------------------------------------

    def unlink(self, path):
        self._refuse_git_dir(path)
        with self.sync_state.mutation():
            os.unlink(self.full(path))
            self._queue(f"Deleted {path}", remove=[path])

    def mkdir(self, path, mode):
        self._refuse_git_dir(path)
        self._refuse_non_utf8(path)
        with self.sync_state.mutation():
            os.mkdir(self.full(path), mode)
            # git has no empty directories: a hidden .keep makes it survive.
            keep = os.path.join(self.full(path), KEEP_FILE)
            os.close(os.open(keep, os.O_WRONLY | os.O_CREAT, 0o644))
            self._queue(f"Create the {path} directory", add=[f"{path}/{KEEP_FILE}"])

    def rmdir(self, path):
        self._refuse_git_dir(path)
        full = self.full(path)
        with self.sync_state.mutation():
            names = os.listdir(full)
            if any(name != KEEP_FILE for name in names):
                raise FuseOSError(errno.ENOTEMPTY)
            if names:
                os.unlink(os.path.join(full, KEEP_FILE))
            os.rmdir(full)
            if names:  # without a .keep git never had it (rm -rf removed its files already)
                self._queue(f"Delete the {path} directory", remove=[f"{path}/{KEEP_FILE}"])

    def rename(self, old, new):
        self._refuse_git_dir(old, new)
        self._refuse_non_utf8(new)
        full_old, full_new = self.full(old), self.full(new)
        with self.sync_state.mutation():
            self._clear_keep_of_empty_target(full_old, full_new)
            os.rename(full_old, full_new)
            self.handles.rename(old, new)
            self._queue(f"Rename {old} to {new}", add=[new], remove=[old])

    @staticmethod
    def _clear_keep_of_empty_target(full_old: str, full_new: str) -> None:
        """A directory holding only .keep looks empty: renaming a directory over it must work."""
        try:
            if not (os.path.isdir(full_old) and not os.path.islink(full_old)) or os.path.islink(full_new):
                return
            if os.listdir(full_new) == [KEEP_FILE]:
                os.unlink(os.path.join(full_new, KEEP_FILE))
        except (FileNotFoundError, NotADirectoryError):
            pass

    def symlink(self, target, source):
        # fusepy's names: `target` is the new link, `source` the text it holds.
        self._refuse_git_dir(target)
        self._refuse_non_utf8(target, source)
        with self.sync_state.mutation():
            os.symlink(source, self.full(target))
            self._queue(f"Create symlink to {source} for {target}", add=[target])

    def link(self, target, source):
        # `target` is the new name, `source` the existing file (both relative to current/).
        self._refuse_git_dir(target, source)
        self._refuse_non_utf8(target)
        with self.sync_state.mutation():
            os.link(self.full(source), self.full(target), follow_symlinks=False)
            self._queue(f"Create link to {source} for {target}", add=[target])

    def mknod(self, path, mode, dev):
        if not stat.S_ISREG(mode):
            raise FuseOSError(errno.EPERM)  # git stores no device, FIFO or socket
        self._refuse_git_dir(path)
        self._refuse_non_utf8(path)
        with self.sync_state.mutation():
            os.close(os.open(self.full(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, stat.S_IMODE(mode)))
            self._queue(f"Created {path}", add=[path])

    # -- metadata --------------------------------------------------------------------

    def chmod(self, path, mode):
        self._refuse_git_dir(path)
        with self.sync_state.mutation():
            full = self.full(path)
            os.chmod(full, stat.S_IMODE(mode))
            if not os.path.isdir(full):  # git records only a file's exec bit
                self._queue(f"Chmod to {stat.S_IMODE(mode):04o} on {path}", add=[path])

    def chown(self, path, uid, gid):
        # Git records no owner; every file shows the `user`/`group` options.
        self._refuse_git_dir(path)
        self.getattr(path)
        return 0

    def utimens(self, path, times=None):
        self._refuse_git_dir(path)
        if times is None:
            os.utime(self.full(path), follow_symlinks=False)
        else:
            os.utime(self.full(path), ns=times, follow_symlinks=False)
        return 0
