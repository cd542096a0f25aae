"""The git core: one clone with a working tree, read and written through pygit2.

Threading: libgit2 objects must not be shared between threads, so every thread
gets its own `pygit2.Repository` handle on the same clone (`self.git`). Bytes
and plain values cross threads; pygit2 objects do not. Handles are keyed by the
OS thread id, not kept in a threading.local: a FUSE callback arrives through
ctypes with a fresh Python thread state each time, which empties a
threading.local, and a new handle per call also means a cold object cache. Only the sync worker
writes (index, commits, refs, working tree); FUSE threads only read objects.

CloneBase holds the clone's state and its per-thread handles; the Repository is put
together from one part per concern (repository.py): refs.py (the branch and the
remote's tip), reading.py (trees and blobs as readers see them), writing.py (the
index and commits).
"""

from __future__ import annotations

import gc
import logging
import os
import threading
from typing import Any, Callable, Optional, cast

import pygit2

from gitfs.repo.content_filter import PLAIN_GIT, ContentFilter
from gitfs.repo.filemodes import GIT_DIR
from gitfs.repo.libgit2 import release_free_memory
from gitfs.repo.objects.blobstream import ObjectFiles
from gitfs.repo.objects.parsed_trees import ParsedTrees, TreeSizes
from gitfs.repo.objects.skipped import SkippedPaths
from gitfs.repo.refnames import branch_ref, remote_ref

log = logging.getLogger(__name__)

MAX_HANDLES = 64


class CloneBase:
    """The clone's state, its handles and its index: what every part of the Repository uses."""

    def __init__(self, path: str, branch: str):
        self.path = os.path.abspath(path)
        self.workdir = self.path
        self.branch = branch
        self._handles: dict[int, pygit2.Repository] = {}
        self._handles_lock = threading.Lock()
        self._sizes: dict[pygit2.Oid, int] = {}  # blob oid -> size, bounded by reading.BLOB_SIZES
        self._trees = ParsedTrees()
        self._tree_sizes = TreeSizes()  # of listed trees
        # Paths of the branch this disk cannot hold: left out of the working tree, kept in the index.
        self.skipped = SkippedPaths(os.path.join(self.path, GIT_DIR, "gitfs-skipped-paths"))
        self._object_files = ObjectFiles(os.path.join(self.path, GIT_DIR, "objects"))
        # The branch moves only through this object (the sync worker's commits and merges):
        # `branch_moves` counts the moves, so readers that index the branch (CommitDays)
        # need not read the ref at every call; `on_branch_moved(old, new)` is told of each.
        self.branch_moves = 0
        self.on_branch_moved: Optional[Callable[[Optional[pygit2.Oid], pygit2.Oid], None]] = None
        # The content filter (content_filter.py): plain git, or Git LFS set by the mount when
        # the repository uses it (a pointer blob of a filter=lfs path then shows as its object:
        # TreeItem.pointer, lfs_pointer).
        self.content_filter: ContentFilter[Any] = PLAIN_GIT

    # -- handles -----------------------------------------------------------

    @property
    def git(self) -> pygit2.Repository:
        """This thread's pygit2 handle on the clone."""
        thread = threading.get_ident()
        handle = self._handles.get(thread)
        if handle is None:
            handle = pygit2.Repository(self.path)
            with self._handles_lock:
                if len(self._handles) >= MAX_HANDLES:
                    # libfuse ends idle threads and starts new ones: forget the oldest
                    # handle (a thread still holding it keeps using it safely).
                    del self._handles[next(iter(self._handles))]
                self._handles[thread] = handle
        return handle

    def release_caches(self) -> None:
        """Give back what libgit2 keeps of the clone's objects (for an idle mount): every
        thread's handle and the parsed trees are dropped; a thread opens a handle again at
        its next call. libgit2 keeps up to 16 MiB of a pack's delta bases, a figure it
        does not let anyone change, for as long as any handle has that pack open. GitFS's
        own maps of the pack indexes go too."""
        with self._handles_lock:
            handles = len(self._handles)
            self._handles.clear()
        self._trees.clear()
        self._tree_sizes.clear()
        self._sizes.clear()
        self._object_files.packs.forget()
        # A pygit2 handle is in reference cycles with its collections (references,
        # branches, remotes): only the cycle collector frees it.
        gc.collect()
        release_free_memory()
        log.debug("libgit2's caches given back (%d handles closed)", handles)

    def index(self) -> pygit2.Index:
        """This thread's index, reloaded if another thread's handle wrote it since."""
        try:
            index = self.git.index
            index.read(False)
        except pygit2.GitError as error:
            return self._rebuild_index(error)
        return index

    def _rebuild_index(self, error: Exception) -> pygit2.Index:
        """A corrupt index (garbage, a torn write) holds nothing the branch tip and the
        working tree do not: rebuild it from the tip; pending changes are staged again."""
        log.warning("the index of %s is unreadable (%s); rebuilding it from the branch", self.path, error)
        os.unlink(os.path.join(self.path, GIT_DIR, "index"))
        index = self.git.index
        index.read(False)
        tip = self.branch_tip()
        if tip is not None:
            index.read_tree(self.git[tip].tree)
        index.write()
        return index

    def full_path(self, relative: str) -> str:
        """Absolute path in the working tree for a path relative to its root."""
        return os.path.join(self.workdir, relative.lstrip("/"))

    def _commit(self, oid: pygit2.Oid) -> pygit2.Commit:
        return cast(pygit2.Commit, self.git[oid])

    # -- the branch's and the remote's tips ----------------------------------

    def branch_tip(self) -> Optional[pygit2.Oid]:
        return self._ref_target(branch_ref(self.branch))

    def remote_tip(self) -> Optional[pygit2.Oid]:
        return self._ref_target(remote_ref(self.branch))

    def reference_target(self, name: str) -> Optional[pygit2.Oid]:
        """The commit a reference of the clone names (`refs/...`), or None if there is none."""
        return self._ref_target(name)

    def _ref_target(self, name: str) -> Optional[pygit2.Oid]:
        ref = self.git.references.get(name)
        return cast(pygit2.Oid, ref.resolve().target) if ref is not None else None  # a direct ref: an Oid

