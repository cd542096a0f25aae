"""Trees and blobs as readers see them: entries, sizes, readers, with the content filter
applied (a Git LFS pointer shows as its object). Repository's part."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import BinaryIO, Optional, cast

import pygit2

from gitfs.repo import compat
from gitfs.repo.content_filter import ContentReader, StoredContent
from gitfs.repo.errors import GitCoreError, NotADirectory, PathNotFound
from gitfs.repo.filemodes import BLOB_MODES, FILEMODE_LINK, FILEMODE_TREE
from gitfs.repo.objects.base import CloneBase
from gitfs.repo.objects.blobstream import BlobReader

BLOB_SIZES = 16384  # blob sizes remembered by oid (a tree's unchanged files repeat across commits)


@dataclass(frozen=True)
class TreeItem:
    """One entry of a commit's tree, as plain values."""

    name: str
    mode: int  # git filemode
    oid: pygit2.Oid
    size: int = 0  # blob size, 0 for trees and submodules (an LFS file's: its object's)
    pointer: Optional[StoredContent] = None  # an LFS file: the object its pointer blob names


def files_named(git: pygit2.Repository, tree: pygit2.Oid, name: str) -> dict[str, pygit2.Oid]:
    """{path: blob} of the files called `name` in any folder of the tree. A walk of its
    folders: reading an index's entries one by one took seconds for 170,000 files."""
    found: dict[str, pygit2.Oid] = {}
    folders = [("", cast(pygit2.Tree, git[tree]))]
    while folders:
        prefix, folder = folders.pop()
        if name in folder:
            found[prefix + name] = folder[name].id
        for entry in folder:
            if entry.type_str == "tree":
                folders.append((f"{prefix}{entry.name}/", cast(pygit2.Tree, git[entry.id])))
    return found


def diff_trees(git: pygit2.Repository, old_tree: Optional[pygit2.Oid], new_tree: pygit2.Oid) -> pygit2.Diff:
    """What changes from old_tree (None: from nothing) to new_tree, file by file."""
    new = cast(pygit2.Tree, git[new_tree])
    if old_tree is None:
        return new.diff_to_tree(swap=True)
    return cast(pygit2.Tree, git[old_tree]).diff_to_tree(new)


class TreeReading(CloneBase):
    """Entries of a commit's trees and what their files hold, sized and opened for readers."""

    def _tree(self, oid: pygit2.Oid) -> pygit2.Tree:
        return self._trees.get(oid, self._parse_tree)

    def _parse_tree(self, oid: pygit2.Oid) -> pygit2.Tree:
        return cast(pygit2.Tree, self.git[oid])

    def tree_item(self, commit_oid: pygit2.Oid, parts: Iterable[str], *,
                  root: Optional[pygit2.Oid] = None, sized: bool = True) -> TreeItem:
        """The entry at `parts` (path components) of a commit's tree, or PathNotFound.

        Walks one component at a time: O(depth), never a scan of the tree. `root`, the
        commit's tree oid if the caller knows it, saves parsing the commit. sized=False
        leaves a file's size out (0) where it is not needed to know what the file is
        (without Git LFS): opening a file reads its size only when it reads the file.
        """
        tree_oid = root if root is not None else self._commit(commit_oid).tree_id
        parts = list(parts)
        item = TreeItem("", FILEMODE_TREE, tree_oid)
        tree = None
        for part in parts:
            if item.mode != FILEMODE_TREE:
                raise NotADirectory(part)
            tree = self._tree(item.oid) if tree is None else tree
            try:
                entry = compat.tree_entry(tree, part)
            except KeyError:
                raise PathNotFound(part) from None
            item = TreeItem(part, entry.filemode, entry.id)
            tree = None
        if item.mode in BLOB_MODES and (sized or self.content_filter.active):
            item = self.blob_item(item.name, item.mode, item.oid, "/".join(parts), commit_oid)
        return item

    # -- content: what a file of a commit shows, its size and its bytes ----------

    def blob_item(self, name: str, mode: int, oid: pygit2.Oid, path: str, commit: pygit2.Oid) -> TreeItem:
        """A file or link of a commit (at `path` of `commit`) with the size a reader sees:
        the blob's, or an LFS file's object's. The one way views learn a file's size."""
        size = self.blob_size(oid)
        pointer = self.lfs_pointer(oid, size, path, commit) if mode != FILEMODE_LINK else None
        return TreeItem(name, mode, oid, size, None) if pointer is None else TreeItem(name, mode, oid, pointer.size,
                                                                                      pointer)

    def lfs_pointer(self, oid: pygit2.Oid, size: int, path: str, commit: Optional[pygit2.Oid] = None
                    ) -> Optional[StoredContent]:
        """The LFS object a blob of `size` bytes at `path` (of `commit`) stands for; None if
        it is plain content (or LFS is off)."""
        return self.content_filter.pointer(oid, size, path, commit)

    def blob_size(self, oid: pygit2.Oid) -> int:
        size = self._sizes.get(oid)
        if size is None:
            # The header alone: the pack entry's or the loose object's own first bytes, else
            # libgit2's read_header (where this pygit2 has it); none inflates the blob.
            size = self._object_files.blob_size(str(oid), oid.raw)
            if size is None:
                size = compat.blob_size(self.git, oid)
            if len(self._sizes) >= BLOB_SIZES:
                self._sizes.clear()  # atomic; cheaper than an LRU's bookkeeping on every hit
            self._sizes[oid] = size
        return size

    def blob_sizes(self, raw_ids: Sequence[bytes]) -> list[int]:
        """blob_size() of each blob (raw ids), the packed ones in one pass through the packs
        (PackIndexes.sizes): 300,000 blobs in ~1 s instead of ~2.5 s one by one. Not kept in
        blob_size's memory: the caller keeps them."""
        sizes = self._object_files.packs.sizes(raw_ids)
        return [size if size is not None else self.blob_size(pygit2.Oid(raw=raw_id))
                for raw_id, size in zip(raw_ids, sizes)]

    def list_tree(self, tree_oid: pygit2.Oid) -> list[str]:
        return [cast(str, entry.name) for entry in self._tree(tree_oid)]  # a tree's entries are named

    def list_tree_items(self, tree_oid: pygit2.Oid, *, sizes: bool = False,
                        where: Optional[tuple[str, pygit2.Oid]] = None) -> list[TreeItem]:
        """Every entry of a tree; with sizes=True, blobs and links carry their size. `where`,
        (the tree's path, its commit), lets an LFS file carry its object's size instead."""
        tree = self._tree(tree_oid)
        if sizes and not self.content_filter.active:  # the sizes are the blobs' own: kept per tree (TreeSizes)
            measured = self._tree_sizes.get(tree_oid, lambda _oid: self._measure_blobs(tree))
            return [TreeItem(cast(str, entry.name), entry.filemode, entry.id, size)
                    for entry, size in zip(tree, measured)]
        items = []
        for entry in tree:
            mode = entry.filemode
            name = cast(str, entry.name)  # a tree's entries are named
            if not sizes or mode not in BLOB_MODES:
                items.append(TreeItem(name, mode, entry.id))
            elif where is not None:
                folder, commit = where
                items.append(self.blob_item(name, mode, entry.id, f"{folder}/{name}".lstrip("/"), commit))
            else:
                items.append(TreeItem(name, mode, entry.id, self.blob_size(entry.id)))
        return items

    def sized_entries(self, tree_oid: pygit2.Oid, *, where: Optional[tuple[str, pygit2.Oid]] = None
                      ) -> list[tuple[str, int, int]]:
        """(name, git mode, size) of every entry of a tree, as list_tree_items(sizes=True)
        gives them but without an object per entry: a listing of history/ reads a tree for
        each of its commit folders (`ls -R` of 17,000 commits: 204,000 entries)."""
        if self.content_filter.active:  # an LFS file's size is its object's: blob_item knows it
            return [(item.name, item.mode, item.size) for item in self.list_tree_items(tree_oid, sizes=True,
                                                                                        where=where)]
        tree = self._tree(tree_oid)
        sizes = self._tree_sizes.get(tree_oid, lambda _oid: self._measure_blobs(tree))
        return [(cast(str, entry.name), entry.filemode, size)  # a tree's entries are named
                for entry, size in zip(tree, sizes)]

    def _measure_blobs(self, tree: pygit2.Tree) -> array:
        """Each entry's size in the tree's order: a blob's or a link's, 0 for the rest."""
        return array("q", [self.blob_size(entry.id) if entry.filemode in BLOB_MODES else 0 for entry in tree])

    def open_content(self, oid: pygit2.Oid, pointer: Optional[StoredContent], path: str) -> BlobReader | ContentReader:
        """A reader of what a file of a commit holds (read(size, offset), close()): what its
        pointer stands for (`pointer`, from blob_item: an LFS object; ContentUnavailable if
        that cannot be had), else its blob. The one way views read a file's bytes."""
        if pointer is None:
            return self.blob_reader(oid)
        return self.content_filter.open(pointer, path)

    def checkout_source(self, path: str, oid: pygit2.Oid, mode: int) -> Optional[BinaryIO]:
        """The bytes the working tree gets for the blob at path, if the content filter has
        them (Git LFS: the object's content); None: the blob's own."""
        if not self.content_filter.active or mode not in BLOB_MODES:  # a submodule's commit is no blob
            return None
        return self.content_filter.checkout_source(self.blob_size(oid), path, oid, mode)

    def blob_bytes(self, oid: pygit2.Oid) -> bytes:
        return bytes(self.blob_buffer(oid))

    def blob_reader(self, oid: pygit2.Oid) -> BlobReader:
        """The blob's bytes for reading at offsets (an open history/ file), streamed from its
        object file where it has one, never whole in memory; nothing is read before the first read."""
        hex_id, raw_id = str(oid), oid.raw
        return BlobReader(lambda: self.blob_size(oid), lambda: self._object_files.locate(hex_id, raw_id),
                          lambda: self.blob_buffer(oid))

    def blob_buffer(self, oid: pygit2.Oid) -> memoryview:
        """A read-only view of the blob's bytes, inflated once, never copied.

        The memoryview keeps the pygit2 Blob (and libgit2's buffer) alive until the
        view is dropped; reading the bytes from another thread is safe (they are
        immutable, and a blob is never in libgit2's object cache).
        """
        obj = self.git[oid]
        if not isinstance(obj, pygit2.Blob):
            raise GitCoreError(f"{oid} is not a blob")
        return memoryview(obj)
