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
from collections.abc import Sized
from typing import Callable, Generic, TypeVar

import pygit2

KEPT_ENTRIES = 131_072  # entries of all kept trees together (~70 bytes each parsed)
KEPT_TREES = 2048  # trees kept (~1 kB each besides their entries: history/'s small root trees)
KEPT_SIZES = 262_144  # blob sizes of listed trees together (8 bytes each)
KEPT_SIZED_TREES = 16_384  # listed trees whose sizes are kept (~250 bytes each besides them)


V = TypeVar("V", bound=Sized)


class KeptTable(Generic[V]):
    """Values by oid, made once for every thread, kept up to `kept_weight` in all (a
    value weighs its len()) and `kept_count` values; emptied when full rather than
    ordered: an order would cost every hit, and a walk of more than fits makes the
    values it is in once more."""

    def __init__(self, kept_weight: int, kept_count: int):
        self.kept_weight = kept_weight
        self.kept_count = kept_count
        self._values: dict[pygit2.Oid, V] = {}
        self._weight = 0  # of the values in _values
        self._lock = threading.Lock()  # for a change of _values and _weight together

    def get(self, oid: pygit2.Oid, make: Callable[[pygit2.Oid], V]) -> V:
        """The value of `oid`, made by `make` (on the calling thread) if no thread has."""
        value = self._values.get(oid)
        if value is None:
            value = make(oid)
            weight = len(value)
            with self._lock:
                if self._weight + weight > self.kept_weight or len(self._values) >= self.kept_count:
                    self._values.clear()
                    self._weight = 0
                if oid not in self._values:
                    self._values[oid] = value
                    self._weight += weight
        return value

    def clear(self) -> None:
        """Keep nothing (parsed trees hold their handles' libgit2 caches alive)."""
        with self._lock:
            self._values.clear()
            self._weight = 0

    def __len__(self) -> int:
        return len(self._values)


class ParsedTrees(KeptTable[pygit2.Tree]):
    """Trees by oid, parsed by the handle of the thread that first asks."""

    def __init__(self, kept_entries: int = KEPT_ENTRIES, kept_trees: int = KEPT_TREES):
        super().__init__(kept_entries, kept_trees)


class TreeSizes(KeptTable[array]):
    """The sizes of a listed tree's entries, in the tree's order, by tree oid."""

    def __init__(self, kept_sizes: int = KEPT_SIZES, kept_trees: int = KEPT_SIZED_TREES):
        super().__init__(kept_sizes, kept_trees)
