"""ListedAttributes: which folders of current/ the kernel holds every entry's attributes of,
so that a listing carries them only where they spare round trips.

A listing of current/ can hand the kernel each entry's attributes (an fstatat per entry
in GitFS, ~5 us): worth it where the kernel lacks some, since each would cost a LOOKUP
or GETATTR round trip (~50-100 us) when a program opens or stats the entry (never looked
up, expired, or a file whose atime FUSE marked stale after a READ); wasted where it holds
them all (`find` or `ls -lR` again). The kernel asks GitFS (getattr) about every entry
whose attributes it lacks, and a READ is what marks a cached file's atime stale: so a
folder whose listing carried them, with no entry asked about or read since, is listed
with each entry's type only. A wrong guess costs one round trip or a few microseconds,
never a wrong answer: the kernel asks for whatever it lacks either way.
"""

from __future__ import annotations


def parent(path: str) -> str:
    """The folder of a mount path ("/" for a name at the root)."""
    return path.rpartition("/")[0] or "/"


class ListedAttributes:
    """The folders whose last listing handed the kernel every entry's attributes, with no
    entry asked about or read since. Set operations only (atomic under the GIL), called
    from any FUSE thread; at most `bound` folders, forgotten all at once when full (a
    forgotten folder only gets its attributes listed once more)."""

    def __init__(self, bound: int = 16384):
        self.bound = bound
        self._complete: set[str] = set()

    def wanted(self, folder: str) -> bool:
        """Whether a listing of `folder` starting now should carry attributes; if so, they
        count as handed over from now on: an entry asked about while the listing is read
        marks the folder again."""
        if folder in self._complete:
            return False
        if len(self._complete) >= self.bound:
            self._complete.clear()
        self._complete.add(folder)
        return True

    def asked(self, path: str) -> None:
        """The kernel asked about `path` (getattr: it lacked the attributes) or read it (its
        atime is stale there now): its folder's next listing carries attributes."""
        self._complete.discard(parent(path))
