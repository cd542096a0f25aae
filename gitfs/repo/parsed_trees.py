"""Parsed trees, shared by every thread's pygit2 handle.

libgit2 keeps parsed objects per handle, and GitFS has one handle per thread; its
budget for them is one figure for all handles together, and once the sum passes it,
each object it keeps evicts others at random. The lookups in a commit folder walk the
same few trees (the root, a folder of thousands of folders, the folder being read)
from whichever FUSE thread takes the call, so with every thread keeping its own copy
of each, a 100,000-file commit passed the budget and a lookup parsed its 5,000-entry
folder again, now and then: `grep -r` over it took 470 us a file instead of 300.
Here a tree is parsed once for every thread. A parsed tree never changes and pygit2
holds the GIL while it reads one, so any thread may read a tree another one parsed.

A kept tree may also keep the sizes of its blobs: a listing of a commit folder gives
every file's size, and on a libfuse that cannot keep listings in the kernel (before
3.16) every `grep -r` lists every folder again; looking each blob's header up again
cost ~25 us a file, a tenth of a warm grep over 20,000 files.
"""

from __future__ import annotations

import threading
from array import array
from typing import Callable

import pygit2

KEPT_ENTRIES = 131_072  # entries of all kept trees together (~70 bytes each parsed)
KEPT_TREES = 2048  # trees kept (~1 kB each besides their entries: history/'s small root trees)


class ParsedTrees:
    def __init__(self, kept_entries: int = KEPT_ENTRIES, kept_trees: int = KEPT_TREES):
        self.kept_entries = kept_entries
        self.kept_trees = kept_trees
        self._trees: dict[pygit2.Oid, pygit2.Tree] = {}
        self._entries = 0  # of the trees in _trees
        self._sizes: dict[pygit2.Oid, array] = {}  # a kept tree's blob sizes, by entry index
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
                    self._trees.clear()  # (under the lock already: clear() would wait on it)
                    self._sizes.clear()
                    self._entries = 0
                if oid not in self._trees:
                    self._trees[oid] = tree
                    self._entries += size
        return tree

    def blob_sizes(self, oid: pygit2.Oid, tree: pygit2.Tree, measure: Callable[[pygit2.Tree], array]) -> array:
        """The sizes of tree `oid`'s entries in their order, measured by `measure` if no
        thread has; kept while the tree is (8 bytes an entry)."""
        sizes = self._sizes.get(oid)
        if sizes is None:
            sizes = measure(tree)
            with self._lock:
                if oid in self._trees:
                    self._sizes[oid] = sizes
        return sizes

    def clear(self) -> None:
        """Keep nothing (the trees hold their handles' libgit2 caches alive)."""
        with self._lock:
            self._trees.clear()
            self._sizes.clear()
            self._entries = 0

    def __len__(self) -> int:
        return len(self._trees)
