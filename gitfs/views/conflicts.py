"""MOUNTPOINT/.gitfs/conflicts/<YYYY-MM-DD_HH-MM-SS>/PATH: the remote's version of a file
that "accept mine" replaced by the local one, read-only.

One folder per sync that resolved a conflict (its local time), holding the conflicted
paths in their folders; each file has the content, mode and size of
`git show REMOTE_COMMIT:PATH`. What is kept, and for how long: repo/merging/conflicts.py.
"""

from __future__ import annotations

import errno
from typing import Optional

from mfusepy import FuseOSError

from gitfs.cache_policy import Pages
from gitfs.handles import HandleTable
from gitfs.repo.errors import GitCoreError
from gitfs.repo.merging.conflicts import ConflictLog
from gitfs.repo.repository import Repository, TreeItem
from gitfs.views.base import Owner, directory_stat, is_write_open
from gitfs.views.blob import BlobView, blob_stat


class ConflictsView(BlobView):
    pages = Pages.KEEP  # immutable content

    def __init__(self, owner: Owner, log: ConflictLog, repo: Repository, handles: HandleTable, *, mount_time: int):
        super().__init__(owner)
        self.log = log
        self.repo = repo
        self.handles = handles
        self.mount_time = mount_time

    def _find(self, path: str) -> tuple[int, Optional[list[str]], Optional[TreeItem]]:
        """(time, the names in it if a folder, the remote's entry if a file); ENOENT if neither."""
        parts = [part for part in path.split("/") if part]
        if not parts:
            folders = self.log.folders()
            return (folders[-1][1] if folders else self.mount_time), [name for name, _time in folders], None
        when = dict(self.log.folders()).get(parts[0])
        files = self.log.files(parts[0])
        if when is None or files is None:
            raise FuseOSError(errno.ENOENT)
        relative = "/".join(parts[1:])
        if relative in files:
            try:
                return when, None, self.repo.tree_item(files[relative], parts[1:])
            except (GitCoreError, KeyError):  # the clone lost the commit (only by hand): nothing to show
                raise FuseOSError(errno.ENOENT) from None
        prefix = relative + "/" if relative else ""
        names = sorted({name[len(prefix):].split("/", 1)[0] for name in files if name.startswith(prefix)})
        if not names:
            raise FuseOSError(errno.ENOENT)
        return when, names, None

    def getattr(self, path, fh=None):
        when, names, item = self._find(path)
        if item is None:
            return directory_stat(self.owner, when)
        return blob_stat(self.owner, item.mode, item.size, when)

    def readdir(self, path, fh):
        _when, names, _item = self._find(path)
        if names is None:
            raise FuseOSError(errno.ENOTDIR)
        return [".", "..", *names]

    def readlink(self, path):
        _when, _names, item = self._find(path)
        return self._readlink_entry(item)

    def open(self, path, flags):
        if is_write_open(flags):
            raise FuseOSError(errno.EROFS)
        _when, _names, item = self._find(path)
        return self._open_entry(path, item, item.pointer if item is not None else None)
