"""history/ (one folder per day with commits) and history/<day>/ (one per commit)."""

from __future__ import annotations

import errno
import time
from typing import Optional

from mfusepy import FuseOSError

from gitfs.repo.days import CommitDays
from gitfs.views.base import Owner, ReadOnlyView, StampedStat, directory_stat


class HistoryView(ReadOnlyView):
    def __init__(self, owner: Owner, days: CommitDays, *, day: Optional[str] = None, mount_time: int = 0):
        super().__init__(owner)
        self.days = days
        self.day = day
        self.mount_time = mount_time

    def getattr(self, path, fh=None):
        if self.day is None:
            if path != "/":
                raise FuseOSError(errno.ENOENT)
            return directory_stat(self.owner, self._newest_time())
        span = self.days.span(self.day)
        if span is None or path != "/":
            # path != "/" is a commit folder name the commit route did not match
            raise FuseOSError(errno.ENOENT)
        first, last = span
        return directory_stat(self.owner, last, first)

    def readdir(self, path, fh):
        if self.day is None:
            return [".", "..", *self.days.days()]
        names = self.days.names(self.day)
        if names is None or path != "/":
            raise FuseOSError(errno.ENOENT)
        return [".", "..", *names]

    def readdir_with_attrs(self, path):
        """readdir with each folder's attributes (see fuse_binding.GitFSFUSE): no LOOKUP per entry after."""
        entries: list = [(".", None), ("..", None)]
        if self.day is None:
            if path != "/":
                raise FuseOSError(errno.ENOENT)
            for day, (first, last) in self.days.spans():
                entries.append((day, directory_stat(self.owner, last, first)))
            return entries
        commits = self.days.entries(self.day)
        if commits is None or path != "/":
            raise FuseOSError(errno.ENOENT)
        template = directory_stat(self.owner, 0)
        entries += [(name, StampedStat(template, timestamp)) for name, timestamp in commits]
        return entries

    def _newest_time(self) -> int:
        newest = self.days.newest_time()
        return newest if newest is not None else self.mount_time or int(time.time())
