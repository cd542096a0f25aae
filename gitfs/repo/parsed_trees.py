"""Parsed trees, shared by every thread's pygit2 handle, and the sizes of listed trees' blobs.

libgit2 keeps parsed objects per handle, and GitFS has one handle per thread; its
budget for them is one figure for all handles together, and once the sum passes it,
each object it keeps evicts others at random. The lookups in a commit folder walk the
same few trees (the root, a folder of thousands of folders, the folder being read)
from whichever FUSE thread takes the call, so with every thread keeping its own copy
of each, a 100,000-file commit passed the budget and a lookup parsed its 5,000-entry
folder again, now and then: `grep -r` over it took 470 us a file instead of 300.
Here a tree is parsed once for every thread. A parsed tree never changes and pygit2
holds the GIL while it reads one, so any thread may read a tree another one parsed.

A listing of a commit folder gives every file's size, and on a libfuse that cannot keep
listings in the kernel (before 3.16) every `grep -r` lists every folder again: looking
each blob's header up again cost ~25 us a file, a tenth of a warm grep. TreeSizes keeps
them, 8 bytes an entry, for more folders than ParsedTrees keeps trees (a parsed tree
costs ~1 kB besides its entries; a 100,000-file project has 5,000 folders, and a diff
of two of its commits lists 10,000 different ones).
"""

from __future__ import annotations

import threading
from array import array
from typing import Callable

import pygit2

KEPT_ENTRIES = 131_072  # entries of all kept trees together (~70 bytes each parsed)
KEPT_TREES = 2048  # trees kept (~1 kB each besides their entries: history/'s small root trees)
KEPT_SIZES = 262_144  # blob sizes of listed trees together (8 bytes each)
KEPT_SIZED_TREES = 16_384  # listed trees whose sizes are kept (~250 bytes each besides them)


class ParsedTrees:
    def __init__(self, kept_entries: int = KEPT_ENTRIES, kept_trees: int = KEPT_TREES):
        self.kept_entries = kept_entries
        self.kept_trees = kept_trees
        self._trees: dict[pygit2.Oid, pygit2.Tree] = {}
        self._entries = 0  # of the trees in _trees
        self._lock = threading.Lock()  # for a change of _trees and _entries together

    def get(self, oid: pygit2.Oid, parse: Callable[[pygit2.Oid], pygit2.Tree]) -> pygit2.Tree:
        """The tree `oid`, parsed by `parse` (the calling thread's handle) if no thread has it."""
        tree = self._trees.get(oid)
        if tree is None:
            tree = parse(oid)
            size = len(tree)
            with self._lock:
                if self._entries + size > self.kept_entries or len(self._trees) >= self.kept_trees:
                    # Emptied rather than ordered: an order would cost every hit, and a
                    # walk of more entries than fit parses the folders it is in once more.
                    self._trees.clear()
                    self._entries = 0
                if oid not in self._trees:
                    self._trees[oid] = tree
                    self._entries += size
        return tree

    def clear(self) -> None:
        """Keep nothing (the trees hold their handles' libgit2 caches alive)."""
        with self._lock:
            self._trees.clear()
            self._entries = 0

    def __len__(self) -> int:
        return len(self._trees)


class TreeSizes:
    """The sizes of a listed tree's entries, in the tree's order, by tree oid."""

    def __init__(self, kept_sizes: int = KEPT_SIZES, kept_trees: int = KEPT_SIZED_TREES):
        self.kept_sizes = kept_sizes
        self.kept_trees = kept_trees
        self._sizes: dict[pygit2.Oid, array] = {}
        self._count = 0  # sizes in _sizes
        self._lock = threading.Lock()  # for a change of _sizes and _count together

    def get(self, oid: pygit2.Oid, tree: pygit2.Tree, measure: Callable[[pygit2.Tree], array]) -> array:
        """The sizes of tree `oid` (parsed: `tree`), measured by `measure` if no thread has."""
        sizes = self._sizes.get(oid)
        if sizes is None:
            sizes = measure(tree)
            with self._lock:
                if self._count + len(sizes) > self.kept_sizes or len(self._sizes) >= self.kept_trees:
                    self._sizes.clear()  # emptied, as ParsedTrees is
                    self._count = 0
                if oid not in self._sizes:
                    self._sizes[oid] = sizes
                    self._count += len(sizes)
        return sizes

    def clear(self) -> None:
        with self._lock:
            self._sizes.clear()
            self._count = 0

    def __len__(self) -> int:
        return len(self._sizes)
