"""history/<day>/<HH-MM-SS>-<sha10>/...: one commit's tree, read-only.

Paths are looked up component by component. An open file keeps its blob on
its handle (in the mount's HandleTable), so reading a big file in 128 KiB
chunks inflates it once, not once per read.
"""

from __future__ import annotations

import errno
import stat

import pygit2
from mfusepy import FuseOSError

from gitfs.handles import HandleTable, OpenFile
from gitfs.repo.errors import NotADirectory, PathNotFound
from gitfs.repo.repository import FILEMODE_COMMIT, FILEMODE_EXEC, FILEMODE_LINK, FILEMODE_TREE, Repository, TreeItem
from gitfs.views.base import NS, Owner, ReadOnlyView, directory_stat, is_write_open


class CommitView(ReadOnlyView):
    # Immutable content: the kernel may keep it in its page cache (see router.open).
    kernel_cache = True

    def __init__(self, owner: Owner, repo: Repository, handles: HandleTable, *,
                 commit: pygit2.Oid, commit_time: int):
        super().__init__(owner)
        self.repo = repo
        self.handles = handles
        self.commit = commit
        self.commit_time = commit_time

    def _item(self, path: str) -> TreeItem:
        parts = [part for part in path.split("/") if part]
        try:
            return self.repo.tree_item(self.commit, parts)
        except PathNotFound:
            raise FuseOSError(errno.ENOENT) from None
        except NotADirectory:
            # A submodule shows as an empty folder: a name below it is missing, not ENOTDIR.
            code = errno.ENOENT if self._under_submodule(parts) else errno.ENOTDIR
            raise FuseOSError(code) from None

    def _under_submodule(self, parts: list[str]) -> bool:
        for depth in range(1, len(parts)):
            mode = self.repo.tree_item(self.commit, parts[:depth]).mode
            if mode != FILEMODE_TREE:
                return mode == FILEMODE_COMMIT
        return False

    def getattr(self, path, fh=None):
        item = self._item(path)
        if item.mode in (FILEMODE_TREE, FILEMODE_COMMIT):  # a submodule shows as an empty folder
            return directory_stat(self.owner, self.commit_time)
        if item.mode == FILEMODE_LINK:
            mode = stat.S_IFLNK | 0o777
        else:
            mode = stat.S_IFREG | (0o555 if item.mode == FILEMODE_EXEC else 0o444)
        when = self.commit_time * NS
        return {
            "st_mode": mode, "st_nlink": 1, "st_size": item.size, "st_blocks": (item.size + 511) // 512,
            "st_uid": self.owner.uid, "st_gid": self.owner.gid,
            "st_atime": when, "st_mtime": when, "st_ctime": when,
        }

    def readdir(self, path, fh):
        item = self._item(path)
        if item.mode == FILEMODE_COMMIT:
            return [".", ".."]
        if item.mode != FILEMODE_TREE:
            raise FuseOSError(errno.ENOTDIR)
        return [".", "..", *self.repo.list_tree(item.oid)]

    def readlink(self, path):
        item = self._item(path)
        if item.mode != FILEMODE_LINK:
            raise FuseOSError(errno.EINVAL)
        return self.repo.blob_bytes(item.oid).decode("utf-8", "surrogateescape")

    def open(self, path, flags):
        if is_write_open(flags):
            raise FuseOSError(errno.EROFS)
        item = self._item(path)
        if item.mode in (FILEMODE_TREE, FILEMODE_COMMIT):
            raise FuseOSError(errno.EISDIR)
        return self.handles.add(OpenFile(path=path, data=self.repo.blob_bytes(item.oid)))

    def read(self, path, size, offset, fh):
        data = self.handles.get(fh).data
        return data[offset:offset + size]

    def release(self, path, fh):
        self.handles.pop(fh)
        return 0
