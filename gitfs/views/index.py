"""The mount root: lists the working-tree folder and the history folder."""

from __future__ import annotations

import errno

from mfusepy import FuseOSError

from gitfs.views.base import Owner, ReadOnlyView, directory_stat


class IndexView(ReadOnlyView):
    def __init__(self, owner: Owner, *, entries: list[str], mount_time: int):
        super().__init__(owner)
        self.entries = entries
        self.mount_time = mount_time

    def getattr(self, path, fh=None):
        if path != "/":
            raise FuseOSError(errno.ENOENT)
        return directory_stat(self.owner, self.mount_time)

    def readdir(self, path, fh):
        return [".", "..", *self.entries]
