"""Stage an index entry with the working file's stat data (an LFS file's pointer, mostly).

The index holds the pointer's blob while the working tree holds the content. An entry
made with pygit2.IndexEntry carries no stat data, so libgit2 would take the file for
possibly modified and hash it at every status (a 4 GB video each time), then find it
differs from the pointer. An entry carrying the working file's ctime, mtime, device,
inode, owner and size lets status see it unchanged without reading it, as git does
with git-lfs installed. pygit2 has no public way to give stat data (1.11 to 1.21), so
this goes through its cffi layer, in this one function, with the plain entry as the
fallback should that layer change.
"""

from __future__ import annotations

import logging
import os

import pygit2

log = logging.getLogger(__name__)

_NS = 10**9
_UINT32 = 0xFFFFFFFF  # the index keeps 32 bits of each stat field


def add_with_stat(index: pygit2.Index, path: str, oid: pygit2.Oid, mode: int, st: os.stat_result) -> None:
    entry = pygit2.IndexEntry(path, oid, mode)  # type: ignore[arg-type]  # an int mode: pygit2 < 1.14
    try:
        centry, _path_buffer = entry._to_c()  # _path_buffer must live until the add
        centry.ctime.seconds, centry.ctime.nanoseconds = divmod(st.st_ctime_ns, _NS)
        centry.mtime.seconds, centry.mtime.nanoseconds = divmod(st.st_mtime_ns, _NS)
        centry.dev, centry.ino = st.st_dev & _UINT32, st.st_ino & _UINT32
        centry.uid, centry.gid = st.st_uid & _UINT32, st.st_gid & _UINT32
        centry.file_size = st.st_size & _UINT32
        error = pygit2.C.git_index_add(index._index, centry)
    except (AttributeError, TypeError) as unexpected:  # pygit2's private layer changed
        log.debug("staging %s without stat data: %s", path, unexpected)
        index.add(entry)
        return
    if error < 0:
        pygit2.errors.check_error(error)
