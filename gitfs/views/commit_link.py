"""history/<commit id>: a symlink to the commit's folder, `<day>/<HH-MM-SS>-<sha10>`.

The id is a full sha or any prefix of at least 7 hex digits that names exactly one
commit of the branch; an unknown or ambiguous one is ENOENT. Not listed in history/:
it is reached by name only, so that links and scripts can name a commit without
knowing its date. Resolved at every call (the view may outlive a branch change).
"""

from __future__ import annotations

import errno
import stat

from mfusepy import FuseOSError

from gitfs.repo.history.days import CommitDays
from gitfs.views.base import NS, Owner, ReadOnlyView


class CommitLinkView(ReadOnlyView):
    def __init__(self, owner: Owner, days: CommitDays, *, sha: str):
        super().__init__(owner)
        self.days = days
        self.sha = sha

    def _target(self, path: str) -> tuple[str, int]:
        """(link target, commit time) of the commit; ENOENT if it names none, or several."""
        found = self.days.by_prefix(self.sha)
        if found is None:
            raise FuseOSError(errno.ENOENT)
        if path != "/":
            raise FuseOSError(errno.ENOTDIR)  # the kernel follows the link: never reached
        day, name = found
        commit = self.days.commit(day, name)
        return f"{day}/{name}", commit[1] if commit is not None else 0

    def getattr(self, path, fh=None):
        target, when = self._target(path)
        return {"st_mode": stat.S_IFLNK | 0o777, "st_nlink": 1, "st_size": len(target.encode()),
                "st_uid": self.owner.uid, "st_gid": self.owner.gid,
                "st_atime": when * NS, "st_mtime": when * NS, "st_ctime": when * NS}

    def readlink(self, path):
        return self._target(path)[0]

    def readdir(self, path, fh):
        self._target(path)
        raise FuseOSError(errno.ENOTDIR)
