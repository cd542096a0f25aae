"""MOUNTPOINT/.gitfs/: generated read-only files about the mount (status, metrics).

Not listed in the mount root (it is not part of the repository) but opens by
name. `status` is the sync status as JSON, `metrics` the mount's counters in
Prometheus' text format; the folders listed beside them (conflicts/, versions/)
are served by views of their own (see routes.py). Each file is rendered once per
open, so a reader sees one consistent snapshot.
"""

from __future__ import annotations

import errno
import stat
import time
from collections.abc import Callable, Mapping, Sequence

from mfusepy import FuseOSError

from gitfs.cache_policy import Pages
from gitfs.handles import HandleTable, OpenFile
from gitfs.views.base import NS, Owner, ReadOnlyView, directory_stat, is_write_open

STATUS_FILE = "status"
METRICS_FILE = "metrics"


class GeneratedFilesView(ReadOnlyView):
    pages = Pages.NEVER  # its size changes between stat and read

    def __init__(self, owner: Owner, files: Mapping[str, Callable[[], bytes]], handles: HandleTable, *,
                 mount_time: int, folders: Sequence[str] = ()):
        super().__init__(owner)
        self.files = files  # name -> what renders its bytes
        self.folders = folders  # only listed here: another route serves them
        self.handles = handles
        self.mount_time = mount_time

    def _render(self, path: str) -> bytes:
        render = self.files.get(path[1:])
        if render is None:
            raise FuseOSError(errno.ENOENT)
        return render()

    def getattr(self, path, fh=None):
        if path == "/":
            return directory_stat(self.owner, self.mount_time)
        size = len(self._render(path))
        now = int(time.time()) * NS
        return {"st_mode": stat.S_IFREG | 0o444, "st_nlink": 1, "st_size": size,
                "st_uid": self.owner.uid, "st_gid": self.owner.gid,
                "st_atime": now, "st_mtime": now, "st_ctime": now}

    def readdir(self, path, fh):
        if path != "/":
            raise FuseOSError(errno.ENOTDIR if path[1:] in self.files else errno.ENOENT)
        return [".", "..", *self.files, *self.folders]

    def open(self, path, flags):
        if is_write_open(flags):
            raise FuseOSError(errno.EROFS)
        if path == "/":
            raise FuseOSError(errno.EISDIR)
        return self.handles.add(OpenFile(path=path, data=self._render(path)))

    def read(self, path, size, offset, fh):
        return self.handles.get(fh).data[offset:offset + size]

    def release(self, path, fh):
        self.handles.pop(fh)
        return 0
