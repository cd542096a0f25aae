"""history/ (one folder per day with commits) and history/<day>/ (one per commit)."""

from __future__ import annotations

import errno
import time
from typing import Optional

from mfusepy import FuseOSError

from gitfs.repo.history.days import CommitDays
from gitfs.views.base import Owner, ReadOnlyView, StampedStat, directory_stat


class HistoryView(ReadOnlyView):
    """history/: a folder per local day with commits."""

    def __init__(self, owner: Owner, days: CommitDays, *, mount_time: int = 0, folder: Optional[dict] = None):
        super().__init__(owner)
        self.days = days
        self.mount_time = mount_time
        self.folder = folder or directory_stat(owner, 0)  # a day's attributes but its times

    def getattr(self, path, fh=None):
        if path != "/":
            raise FuseOSError(errno.ENOENT)
        return directory_stat(self.owner, self._newest_time())

    def readdir(self, path, fh):
        return [".", "..", *self.days.days()]

    def readdir_with_attrs(self, path):
        """readdir with each folder's attributes (see fuse_binding.GitFSFUSE): no LOOKUP per entry after."""
        if path != "/":
            raise FuseOSError(errno.ENOENT)
        entries: list = [(".", None), ("..", None)]
        entries += [(day, StampedStat(self.folder, last, first)) for day, (first, last) in self.days.spans()]
        return entries

    def _newest_time(self) -> int:
        newest = self.days.newest_time()
        return newest if newest is not None else self.mount_time or int(time.time())


class DayView(ReadOnlyView):
    """history/<day>/: a folder per commit of that day (the commit route serves each)."""

    def __init__(self, owner: Owner, days: CommitDays, day: str, *, folder: Optional[dict] = None):
        super().__init__(owner)
        self.days = days
        self.day = day
        # A commit folder's attributes but its times: one for every day of a mount, so that
        # the FUSE binding fills its struct once (GitFSFUSE._template_struct).
        self.folder = folder or directory_stat(owner, 0)

    def getattr(self, path, fh=None):
        span = self.days.span(self.day)
        if span is None or path != "/":
            # path != "/" is a commit folder name the commit route did not match
            raise FuseOSError(errno.ENOENT)
        first, last = span
        return directory_stat(self.owner, last, first)

    def readdir(self, path, fh):
        names = self.days.names(self.day)
        if names is None or path != "/":
            raise FuseOSError(errno.ENOENT)
        return [".", "..", *names]

    def readdir_with_attrs(self, path):
        """readdir with each folder's attributes (see fuse_binding.GitFSFUSE): no LOOKUP per entry after."""
        commits = self.days.entries(self.day)
        if commits is None or path != "/":
            raise FuseOSError(errno.ENOENT)
        entries: list = [(".", None), ("..", None)]
        entries += [(name, StampedStat(self.folder, timestamp)) for name, timestamp in commits]
        return entries
