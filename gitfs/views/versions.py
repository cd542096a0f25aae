"""MOUNTPOINT/.gitfs/versions/PATH/: every version of a file, read-only.

The folders mirror current/'s tree at the branch tip (submodules are left out); each
file PATH there is a folder with one entry per commit of the branch (first-parent
line) that added or changed it, named `YYYY-MM-DD_HH-MM-SS-<10 hex>` (oldest first),
with the file's content, mode and size at that commit; a symlink's versions are
symlinks. The index behind it is the git core's (repo/history/versions.py).
"""

from __future__ import annotations

import errno
from typing import Optional

from mfusepy import FuseOSError

from gitfs.cache_policy import Pages
from gitfs.handles import HandleTable
from gitfs.repo.errors import NotADirectory, PathNotFound
from gitfs.repo.history.versions import FileVersions, Version, VersionList
from gitfs.repo.libgit2 import release_free_memory
from gitfs.repo.repository import FILEMODE_COMMIT, FILEMODE_TREE, Repository, TreeItem
from gitfs.views.base import Owner, StampedStat, directory_stat, is_write_open
from gitfs.views.blob import BlobView, blob_stat


class VersionsView(BlobView):
    pages = Pages.KEEP  # a version's bytes never change

    def __init__(self, owner: Owner, repo: Repository, versions: FileVersions, handles: HandleTable, *,
                 mount_time: int):
        super().__init__(owner)
        self.repo = repo
        self.versions = versions
        self.handles = handles
        self.mount_time = mount_time

    def _find(self, path: str) -> tuple[Optional[TreeItem], str, Optional[Version]]:
        """(the tip's entry at path or at its parent, the file's path, the version named by the
        last component): a folder of the tree, a file's folder, or one version; else ENOENT."""
        parts = [part for part in path.split("/") if part]
        tip = self.repo.branch_tip()
        if tip is None:
            if parts:
                raise FuseOSError(errno.ENOENT)
            return None, "", None
        try:
            item: Optional[TreeItem] = self.repo.tree_item(tip, parts)
        except (PathNotFound, NotADirectory):  # below a file: maybe one of its versions
            item = None
        if item is not None:
            if item.mode == FILEMODE_COMMIT:
                raise FuseOSError(errno.ENOENT)  # submodules have no versions here
            return item, "/".join(parts), None
        if len(parts) < 2:
            raise FuseOSError(errno.ENOENT)
        try:
            parent = self.repo.tree_item(tip, parts[:-1])
        except (PathNotFound, NotADirectory):
            raise FuseOSError(errno.ENOENT) from None
        if parent.mode == FILEMODE_TREE:
            raise FuseOSError(errno.ENOENT)
        file_path = "/".join(parts[:-1])
        version = self.versions.version(file_path, parts[-1])
        if version is None:
            raise FuseOSError(errno.ENOENT)
        return parent, file_path, version

    def getattr(self, path, fh=None):
        item, file_path, version = self._find(path)
        if version is not None:
            return self._version_stat(file_path, version)
        if item is None or item.mode == FILEMODE_TREE:
            tip = self.repo.branch_tip()
            when = self.repo.commit_time(tip) if tip is not None else self.mount_time
            return directory_stat(self.owner, when)
        span = self.versions.span(file_path)
        return directory_stat(self.owner, span[1] if span else self.mount_time, span[0] if span else None)

    def _item(self, file_path: str, version: Version) -> TreeItem:
        """The version as a file of its commit: its size, and its LFS object if it has one."""
        return self.repo.blob_item(version.name, version.mode, version.oid, file_path, version.commit)

    def _version_stat(self, file_path: str, version: Version) -> dict:
        return blob_stat(self.owner, version.mode, self._item(file_path, version).size, version.commit_time)

    def readdir(self, path, fh):
        item, file_path, version = self._find(path)
        if version is not None:
            raise FuseOSError(errno.ENOTDIR)
        if item is None:
            return [".", ".."]
        if item.mode == FILEMODE_TREE:
            return [".", "..", *(child.name for child in self.repo.list_tree_items(item.oid)
                                 if child.mode != FILEMODE_COMMIT)]
        return [".", "..", *self.versions.listing(file_path).names()]

    def readdir_with_attrs(self, path):
        """readdir with each version's attributes (see fuse_binding.GitFSFUSE): `ls -l` of a
        file with many versions needs no LOOKUP per entry. Folders of the tree give names only."""
        item, file_path, version = self._find(path)
        if version is not None:
            raise FuseOSError(errno.ENOTDIR)
        if item is None or item.mode == FILEMODE_TREE:
            return [(name, None) for name in self.readdir(path, None)]
        return ListedVersions(self.repo, self.owner, file_path, self.versions.listing(file_path))

    def readlink(self, path):
        _item, _file_path, version = self._find(path)
        return self._readlink_entry(version)

    def open(self, path, flags):
        if is_write_open(flags):
            raise FuseOSError(errno.EROFS)
        _item, file_path, version = self._find(path)
        return self._open_entry(path, version, self._item(file_path, version).pointer if version is not None else None)


class ListedVersions:
    """The entries of a file's folder as the FUSE binding reads them: `.`, `..`, then
    (name, attributes) of each version, made when read, so that a listing of 300,000
    versions holds no Python object per version (the binding keeps a listing until its
    last call, and reads it a page at a time)."""

    TEMPLATES = 256  # stat templates kept, one per (mode, size)
    LONG = 10_000  # versions from which the heap's free pages go back once the last entry is read

    def __init__(self, repo: Repository, owner: Owner, file_path: str, listing: VersionList):
        self.repo = repo
        self.owner = owner
        self.file_path = file_path
        self.listing = listing
        self._templates: dict[tuple[int, int], dict] = {}

    def __len__(self) -> int:
        return len(self.listing) + 2

    def __getitem__(self, number: int) -> tuple[str, Optional[StampedStat]]:
        if number < 2:
            return ("." if number == 0 else ".."), None
        number -= 2
        listing = self.listing
        mode, size = listing.mode(number), listing.size(number, self._size)
        template = self._templates.get((mode, size))
        if template is None:
            if len(self._templates) >= self.TEMPLATES:
                self._templates.clear()
            template = self._templates[mode, size] = blob_stat(self.owner, mode, size, 0)
        if number == len(listing) - 1 and number >= self.LONG:
            # The entries made and dropped on the way left free pages in the heap (~20 MB for
            # 300,000 versions): what the daemon holds while the listing is in use is then the
            # index and libfuse's nodes.
            release_free_memory()
        return listing.name(number), StampedStat(template, listing.commit_time(number))

    def _size(self, number: int) -> int:
        """The size a reader sees of one version (an LFS file's object's). Without a content
        filter, a blob's own: the first size asked measures every version's at once."""
        listing = self.listing
        if not self.repo.content_filter.active:
            listing.measure_all(self.repo.blob_sizes)
            size = listing.size(number, lambda _number: -1)
            if size >= 0:
                return size
        return self.repo.blob_item("", listing.mode(number), listing.blob(number), self.file_path,
                                   listing.commit(number)).size
