"""MOUNTPOINT/.gitfs/status: the sync status as JSON, read-only.

Not listed in the mount root (it is not part of the repository) but opens by
name. Rendered once per open, so a reader sees one consistent snapshot.
"""

from __future__ import annotations

import errno
import stat
import time

from mfusepy import FuseOSError

from gitfs.handles import HandleTable, OpenFile
from gitfs.sync.status import SyncStatus
from gitfs.views.base import NS, Owner, ReadOnlyView, directory_stat, is_write_open

STATUS_FILE = "status"


class StatusView(ReadOnlyView):
    # Its size changes between stat and read: bypass the page cache (see router.open).
    direct_io = True

    def __init__(self, owner: Owner, status: SyncStatus, handles: HandleTable, *, mount_time: int):
        super().__init__(owner)
        self.status = status
        self.handles = handles
        self.mount_time = mount_time

    def getattr(self, path, fh=None):
        if path == "/":
            return directory_stat(self.owner, self.mount_time)
        if path != "/" + STATUS_FILE:
            raise FuseOSError(errno.ENOENT)
        now = int(time.time()) * NS
        return {"st_mode": stat.S_IFREG | 0o444, "st_nlink": 1, "st_size": len(self.status.render()),
                "st_uid": self.owner.uid, "st_gid": self.owner.gid,
                "st_atime": now, "st_mtime": now, "st_ctime": now}

    def readdir(self, path, fh):
        if path != "/":
            raise FuseOSError(errno.ENOTDIR)
        return [".", "..", STATUS_FILE]

    def open(self, path, flags):
        if is_write_open(flags):
            raise FuseOSError(errno.EROFS)
        self.getattr(path)
        if path == "/":
            raise FuseOSError(errno.EISDIR)
        return self.handles.add(OpenFile(path=path, data=self.status.render()))

    def read(self, path, size, offset, fh):
        return self.handles.get(fh).data[offset:offset + size]

    def release(self, path, fh):
        self.handles.pop(fh)
        return 0
