"""history/<day>/<HH-MM-SS>-<sha10>/...: one commit's tree, read-only.

Paths are looked up component by component, from the commit's tree (its oid
kept on the view, so no commit is parsed per call). An open file keeps a reader of
its blob on its handle (in the mount's HandleTable, Repository.blob_reader), which
reads nothing before the first read: a file opened again while the kernel's page
cache holds it (kept across opens, see router.open) costs no inflation at all.
Reading a file in order streams it out of its object file, never whole in memory;
the reader is closed when the file is released.
"""

from __future__ import annotations

import errno
import logging
import stat
from typing import Optional, Protocol

import pygit2
from mfusepy import FuseOSError

from gitfs.cache_policy import Pages
from gitfs.handles import HandleTable, OpenFile
from gitfs.lfs.errors import LfsError
from gitfs.lfs.pointer import Pointer
from gitfs.repo.blobstream import CorruptObject
from gitfs.repo.errors import NotADirectory, PathNotFound
from gitfs.repo.repository import FILEMODE_COMMIT, FILEMODE_EXEC, FILEMODE_LINK, FILEMODE_TREE, Repository, TreeItem
from gitfs.views.base import NS, Owner, ReadOnlyView, directory_stat, is_write_open

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


class BlobView(ReadOnlyView):
    """A read-only view whose files are blobs of `repo`: an open file keeps its blob's
    reader (a blobstream.BlobReader) on its handle in the mount's HandleTable, never on the view."""

    repo: Repository
    handles: HandleTable

    def _open_blob(self, path: str, oid: pygit2.Oid, pointer: Optional[Pointer] = None) -> int:
        """A handle on the blob's bytes, or on the LFS object its pointer names (EIO if that
        cannot be had: the pointer's text is never shown)."""
        try:
            reader = self.repo.open_content(oid, pointer, path)
        except LfsError:
            raise FuseOSError(errno.EIO) from None  # LfsContent logged it once, with the reason
        return self.handles.add(OpenFile(path=path, data=reader))

    def _link_text(self, oid: pygit2.Oid) -> str:
        return self.repo.blob_bytes(oid).decode("utf-8", "surrogateescape")

    def _readlink_entry(self, entry: Optional[BlobEntry]) -> str:
        """readlink of a found entry (None: a folder): EINVAL unless it is a link."""
        if entry is None or entry.mode != FILEMODE_LINK:
            raise FuseOSError(errno.EINVAL)
        return self._link_text(entry.oid)

    def _open_entry(self, path: str, entry: Optional[BlobEntry], pointer: Optional[Pointer] = None) -> int:
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


class CommitView(BlobView):
    pages = Pages.KEEP  # immutable content

    def __init__(self, owner: Owner, repo: Repository, handles: HandleTable, *,
                 commit: pygit2.Oid, commit_time: int):
        super().__init__(owner)
        self.repo = repo
        self.handles = handles
        self.commit = commit
        self.commit_time = commit_time
        self._root: Optional[pygit2.Oid] = None  # the commit's tree, read on first use

    def _root_tree(self) -> pygit2.Oid:
        if self._root is None:
            self._root = self.repo.root_tree(self.commit)
        return self._root

    def _item(self, path: str) -> TreeItem:
        if path == "/":
            return TreeItem("", FILEMODE_TREE, self._root_tree())
        parts = [part for part in path.split("/") if part]
        try:
            return self.repo.tree_item(self.commit, parts, root=self._root_tree())
        except PathNotFound:
            raise FuseOSError(errno.ENOENT) from None
        except NotADirectory:
            # A submodule shows as an empty folder: a name below it is missing, not ENOTDIR.
            code = errno.ENOENT if self._under_submodule(parts) else errno.ENOTDIR
            raise FuseOSError(code) from None

    def _under_submodule(self, parts: list[str]) -> bool:
        for depth in range(1, len(parts)):
            mode = self.repo.tree_item(self.commit, parts[:depth], root=self._root_tree()).mode
            if mode != FILEMODE_TREE:
                return mode == FILEMODE_COMMIT
        return False

    def getattr(self, path, fh=None):
        return self._stat(self._item(path))

    def _stat(self, item: TreeItem) -> dict:
        if item.mode in (FILEMODE_TREE, FILEMODE_COMMIT):  # a submodule shows as an empty folder
            return directory_stat(self.owner, self.commit_time)
        return blob_stat(self.owner, item.mode, item.size, self.commit_time)

    def readdir(self, path, fh):
        item = self._item(path)
        if item.mode == FILEMODE_COMMIT:
            return [".", ".."]
        if item.mode != FILEMODE_TREE:
            raise FuseOSError(errno.ENOTDIR)
        return [".", "..", *self.repo.list_tree(item.oid)]

    def readdir_with_attrs(self, path):
        """readdir with each entry's attributes (see fuse_binding.GitFSFUSE): one call, no LOOKUP per entry."""
        item = self._item(path)
        if item.mode == FILEMODE_COMMIT:
            return [(".", None), ("..", None)]
        if item.mode != FILEMODE_TREE:
            raise FuseOSError(errno.ENOTDIR)
        entries: list = [(".", None), ("..", None)]
        folder = None  # one dict for every folder entry
        for child in self.repo.list_tree_items(item.oid, sizes=True, where=(path.strip("/"), self.commit)):
            if child.mode in (FILEMODE_TREE, FILEMODE_COMMIT):
                folder = folder or self._stat(child)
                entries.append((child.name, folder))
            else:
                entries.append((child.name, self._stat(child)))
        return entries

    def readlink(self, path):
        return self._readlink_entry(self._item(path))

    def open(self, path, flags):
        if is_write_open(flags):
            raise FuseOSError(errno.EROFS)
        item = self._item(path)
        if item.mode in (FILEMODE_TREE, FILEMODE_COMMIT):
            raise FuseOSError(errno.EISDIR)
        return self._open_blob(path, item.oid, item.pointer)
