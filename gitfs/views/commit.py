"""history/<day>/<HH-MM-SS>-<sha10>/...: one commit's tree, read-only.

Paths are looked up component by component, from the commit's tree (its oid
kept on the view, so no commit is parsed per call). Files are opened and read as
BlobView's (blob.py): a reader that reads nothing before the first read, so a file
opened again while the kernel's page cache holds it (Pages.KEEP) costs no inflation
at all, and streams a file read in order out of its object file.
"""

from __future__ import annotations

import errno
import logging
from typing import Optional

import pygit2
from mfusepy import FuseOSError

from gitfs.cache_policy import Pages
from gitfs.handles import HandleTable
from gitfs.repo.errors import NotADirectory, PathNotFound
from gitfs.repo.repository import FILEMODE_COMMIT, FILEMODE_TREE, Repository, TreeItem
from gitfs.views.base import Owner, StampedStat, directory_stat, is_write_open
from gitfs.views.blob import BlobTemplates, BlobView, blob_stat

log = logging.getLogger(__name__)


class CommitView(BlobView):
    pages = Pages.KEEP  # immutable content

    def __init__(self, owner: Owner, repo: Repository, handles: HandleTable, *,
                 commit: pygit2.Oid, commit_time: int, templates: Optional[BlobTemplates] = None):
        super().__init__(owner)
        self.templates = templates or BlobTemplates(owner)  # shared by every commit folder of a mount
        self.repo = repo
        self.handles = handles
        self.commit = commit
        self.commit_time = commit_time
        self._root: Optional[pygit2.Oid] = None  # the commit's tree, read on first use

    def _root_tree(self) -> pygit2.Oid:
        if self._root is None:
            self._root = self.repo.root_tree(self.commit)
        return self._root

    def _item(self, path: str, sized: bool = True) -> TreeItem:
        """The entry at `path`; sized=False: a file's size may be left out (see Repository.tree_item)."""
        if path == "/":
            return TreeItem("", FILEMODE_TREE, self._root_tree())
        parts = [part for part in path.split("/") if part]
        try:
            return self.repo.tree_item(self.commit, parts, root=self._root_tree(), sized=sized)
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
        if path == "/":  # the commit folder itself: no need to read the commit
            return directory_stat(self.owner, self.commit_time)
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
        when, templates = self.commit_time, self.templates
        folder = StampedStat(templates.folder, when)
        for name, mode, size in self.repo.sized_entries(item.oid, where=(path.strip("/"), self.commit)):
            if mode == FILEMODE_TREE or mode == FILEMODE_COMMIT:  # a submodule shows as an empty folder
                entries.append((name, folder))
            else:
                entries.append((name, StampedStat(templates.file(mode, size), when)))
        return entries

    def readlink(self, path):
        return self._readlink_entry(self._item(path))

    def open(self, path, flags):
        if is_write_open(flags):
            raise FuseOSError(errno.EROFS)
        item = self._item(path, sized=False)
        if item.mode in (FILEMODE_TREE, FILEMODE_COMMIT):
            raise FuseOSError(errno.EISDIR)
        return self._open_blob(path, item.oid, item.pointer)
