"""BlobView: the base of the read-only views whose files are git blobs (history/'s
commit folders, .gitfs/versions/, .gitfs/conflicts/).

An open file keeps a reader of what it shows on its handle (in the mount's
HandleTable, never on the view), from Repository.open_content: the blob, streamed
out of its object file and read only from the first read on, or an LFS file's
object. The reader is closed when the file is released.
"""

from __future__ import annotations

import errno
import logging
import stat
from typing import Optional, Protocol

import pygit2
from mfusepy import FuseOSError

from gitfs.handles import HandleTable, OpenFile
from gitfs.repo.content_filter import StoredContent
from gitfs.repo.errors import ContentUnavailable
from gitfs.repo.objects.blobstream import CorruptObject
from gitfs.repo.repository import FILEMODE_EXEC, FILEMODE_LINK, Repository
from gitfs.views.base import NS, Owner, ReadOnlyView, directory_stat

log = logging.getLogger(__name__)


class BlobEntry(Protocol):
    """What names a blob in a view: a TreeItem of a commit, a Version of a file."""

    @property
    def mode(self) -> int: ...

    @property
    def oid(self) -> pygit2.Oid: ...


def blob_stat(owner: Owner, git_mode: int, size: int, when: int) -> dict:
    """stat of a blob or link of a commit, read-only: 0444, 0555 with the exec bit."""
    if git_mode == FILEMODE_LINK:
        mode = stat.S_IFLNK | 0o777
    else:
        mode = stat.S_IFREG | (0o555 if git_mode == FILEMODE_EXEC else 0o444)
    return {"st_mode": mode, "st_nlink": 1, "st_size": size, "st_blocks": (size + 511) // 512,
            "st_uid": owner.uid, "st_gid": owner.gid,
            "st_atime": when * NS, "st_mtime": when * NS, "st_ctime": when * NS}


class BlobTemplates:
    """stat dicts of read-only blobs with their times 0, one per (git mode, size), for the
    listings of commit folders: an entry is a StampedStat of its template and its commit's
    time, and the FUSE binding fills a struct once per template instead of once per entry
    (GitFSFUSE.readdir_fuse_3). The files of a history keep their sizes from commit to
    commit: a few templates serve every folder."""

    KEPT = 4096  # templates kept (~500 bytes each); emptied when full

    def __init__(self, owner: Owner):
        self.owner = owner
        self.folder = directory_stat(owner, 0)  # a folder (or a submodule) of a commit
        self._templates: dict[tuple[int, int], dict] = {}

    def file(self, git_mode: int, size: int) -> dict:
        template = self._templates.get((git_mode, size))
        if template is None:
            if len(self._templates) >= self.KEPT:
                self._templates.clear()
            template = self._templates[git_mode, size] = blob_stat(self.owner, git_mode, size, 0)
        return template


class BlobView(ReadOnlyView):
    """A read-only view whose files are blobs of `repo`: an open file keeps its blob's
    reader (a blobstream.BlobReader) on its handle in the mount's HandleTable, never on the view."""

    repo: Repository
    handles: HandleTable

    def _open_blob(self, path: str, oid: pygit2.Oid, pointer: Optional[StoredContent] = None) -> int:
        """A handle on the blob's bytes, or on the content its pointer stands for (an LFS
        object; EIO if that cannot be had: the pointer's text is never shown)."""
        try:
            reader = self.repo.open_content(oid, pointer, path)
        except ContentUnavailable:
            raise FuseOSError(errno.EIO) from None  # the content filter reported it once, with the reason
        return self.handles.add(OpenFile(path=path, data=reader))

    def _link_text(self, oid: pygit2.Oid) -> str:
        return self.repo.blob_bytes(oid).decode("utf-8", "surrogateescape")

    def _readlink_entry(self, entry: Optional[BlobEntry]) -> str:
        """readlink of a found entry (None: a folder): EINVAL unless it is a link."""
        if entry is None or entry.mode != FILEMODE_LINK:
            raise FuseOSError(errno.EINVAL)
        return self._link_text(entry.oid)

    def _open_entry(self, path: str, entry: Optional[BlobEntry], pointer: Optional[StoredContent] = None) -> int:
        """open of a found entry for reading (None: a folder, EISDIR); `pointer`: an LFS file's."""
        if entry is None:
            raise FuseOSError(errno.EISDIR)
        return self._open_blob(path, entry.oid, pointer)

    def read(self, path, size, offset, fh):
        try:
            return self.handles.get(fh).data.read(size, offset)
        except CorruptObject as error:
            log.error("cannot read %s: %s", path, error)
            raise FuseOSError(errno.EIO) from None

    def release(self, path, fh):
        open_file = self.handles.pop(fh)
        if open_file is not None:
            open_file.data.close()
        return 0
