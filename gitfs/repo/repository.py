"""The git core: one clone with a working tree, read and written through pygit2.

Threading: libgit2 objects must not be shared between threads, so every thread
gets its own `pygit2.Repository` handle on the same clone (`self.git`). Bytes
and plain values cross threads; pygit2 objects do not. Handles are keyed by the
OS thread id, not kept in a threading.local: a FUSE callback arrives through
ctypes with a fresh Python thread state each time, which empties a
threading.local, and a new handle per call also means a cold object cache. Only the sync worker
writes (index, commits, refs, working tree); FUSE threads only read objects.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import threading
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Optional, cast

import pygit2

from gitfs.repo import commit_walk, compat, staging
from gitfs.repo.blobstream import BlobReader, ObjectFiles
from gitfs.repo.compat import DeltaStatus, FileStatus, SortMode
from gitfs.repo.errors import GitCoreError, NotADirectory, PathNotFound, local_write
from gitfs.repo.filemodes import (  # noqa: F401
    BLOB_MODES,
    FILEMODE_BLOB,
    FILEMODE_COMMIT,
    FILEMODE_EXEC,
    FILEMODE_LINK,
    FILEMODE_TREE,
    GIT_DIR,
    KEEP_FILE,
)
from gitfs.repo.libgit2 import release_free_memory
from gitfs.repo.parsed_trees import ParsedTrees, TreeSizes
from gitfs.repo.skipped import SkippedPaths

if TYPE_CHECKING:
    from gitfs.lfs.content import LfsContent, ObjectReader
    from gitfs.lfs.pointer import Pointer
    from gitfs.lfs.staging import Cleaner

log = logging.getLogger(__name__)

REMOTE_NAME = "origin"
MAX_HANDLES = 64
BLOB_SIZES = 16384  # blob sizes remembered by oid (a tree's unchanged files repeat across commits)


def branch_ref(branch: str) -> str:
    return f"refs/heads/{branch}"


def remote_ref(branch: str) -> str:
    return f"refs/remotes/{REMOTE_NAME}/{branch}"


@dataclass(frozen=True)
class TreeItem:
    """One entry of a commit's tree, as plain values."""

    name: str
    mode: int  # git filemode
    oid: pygit2.Oid
    size: int = 0  # blob size, 0 for trees and submodules (an LFS file's: its object's)
    pointer: Optional[Pointer] = None  # an LFS file: the object its pointer blob names


class Repository:
    def __init__(self, path: str, branch: str):
        self.path = os.path.abspath(path)
        self.workdir = self.path
        self.branch = branch
        self._handles: dict[int, pygit2.Repository] = {}
        self._handles_lock = threading.Lock()
        self._sizes: dict[pygit2.Oid, int] = {}  # blob oid -> size, bounded by BLOB_SIZES
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
        # Git LFS (gitfs/lfs), set by the mount when the repository uses it: a pointer blob of a
        # filter=lfs path is then shown as its object (TreeItem.pointer, lfs_pointer).
        self.lfs: Optional[LfsContent] = None

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

    # -- refs -------------------------------------------------------------

    def branch_tip(self) -> Optional[pygit2.Oid]:
        return self._ref_target(branch_ref(self.branch))

    def remote_tip(self) -> Optional[pygit2.Oid]:
        return self._ref_target(remote_ref(self.branch))

    def _ref_target(self, name: str) -> Optional[pygit2.Oid]:
        ref = self.git.references.get(name)
        return cast(pygit2.Oid, ref.resolve().target) if ref is not None else None  # a direct ref: an Oid

    @local_write()
    def set_branch_tip(self, oid: pygit2.Oid, message: str) -> None:
        old = self.branch_tip()
        self.git.create_reference(branch_ref(self.branch), oid, force=True, message=message)
        self._branch_moved(old, oid)

    def _branch_moved(self, old: Optional[pygit2.Oid], new: pygit2.Oid) -> None:
        self.branch_moves += 1
        if self.on_branch_moved is not None and old != new:
            self.on_branch_moved(old, new)

    def set_remote_tip(self, oid: pygit2.Oid) -> None:
        self.git.references.create(remote_ref(self.branch), oid, force=True)

    def is_ancestor(self, ancestor: pygit2.Oid, descendant: pygit2.Oid) -> bool:
        return ancestor == descendant or self.git.descendant_of(descendant, ancestor)

    def count_ahead(self) -> int:
        """Commits on the local branch that the remote-tracking branch lacks."""
        local, remote = self.branch_tip(), self.remote_tip()
        if local is None:
            return 0
        if remote is None:
            return sum(1 for _ in self.git.walk(local))
        ahead, _behind = self.git.ahead_behind(local, remote)
        return ahead

    # -- reading commits and trees ---------------------------------------

    def commit_time(self, oid: pygit2.Oid) -> int:
        return self._commit(oid).commit_time

    def walk_commits(self, tip: pygit2.Oid, hide: Optional[pygit2.Oid] = None) -> Iterator[tuple[pygit2.Oid, int]]:
        """(oid, committer time) of every commit reachable from tip and not from hide, newest
        first; commits made in the same second come children first."""
        if hide is None:
            yield from commit_walk.newest_first(self.walk_handle(), tip)
            return
        # A few new commits: libgit2's walk stops where hide's history begins.
        walker = self.git.walk(tip, SortMode.TOPOLOGICAL | SortMode.TIME)
        walker.hide(hide)
        for commit in walker:
            yield commit.id, commit.commit_time

    def walk_handle(self) -> pygit2.Repository:
        """A pygit2 handle of its own, for a walk of a long history: the objects libgit2
        keeps parsed for the walk go with the handle, not into a thread's for good. (The
        pack's delta bases are shared by every handle in the process: release_caches.)"""
        return pygit2.Repository(self.path)

    def root_tree(self, commit_oid: pygit2.Oid) -> pygit2.Oid:
        return self._commit(commit_oid).tree_id

    def _commit(self, oid: pygit2.Oid) -> pygit2.Commit:
        return cast(pygit2.Commit, self.git[oid])

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
        if item.mode in BLOB_MODES and (sized or self.lfs is not None):
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
                    ) -> Optional[Pointer]:
        """The LFS object a blob of `size` bytes at `path` (of `commit`) stands for; None if
        it is plain content (or LFS is off)."""
        return None if self.lfs is None else self.lfs.pointer(self.git, oid, size, path, commit)

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

    def list_tree(self, tree_oid: pygit2.Oid) -> list[str]:
        return [cast(str, entry.name) for entry in self._tree(tree_oid)]  # a tree's entries are named

    def list_tree_items(self, tree_oid: pygit2.Oid, *, sizes: bool = False,
                        where: Optional[tuple[str, pygit2.Oid]] = None) -> list[TreeItem]:
        """Every entry of a tree; with sizes=True, blobs and links carry their size. `where`,
        (the tree's path, its commit), lets an LFS file carry its object's size instead."""
        tree = self._tree(tree_oid)
        if sizes and self.lfs is None:  # the sizes are the blobs' own: kept per tree (TreeSizes)
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

    def _measure_blobs(self, tree: pygit2.Tree) -> array:
        """Each entry's size in the tree's order: a blob's or a link's, 0 for the rest."""
        return array("q", [self.blob_size(entry.id) if entry.filemode in BLOB_MODES else 0 for entry in tree])

    def open_content(self, oid: pygit2.Oid, pointer: Optional[Pointer], path: str) -> BlobReader | ObjectReader:
        """A reader of what a file of a commit holds (read(size, offset), close()): the LFS
        object its pointer names (`pointer`, from blob_item; LfsError if it cannot be had),
        else its blob. The one way views read a file's bytes."""
        if pointer is None or self.lfs is None:
            return self.blob_reader(oid)
        return self.lfs.open(pointer, path)

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

    # -- writing: index and commits (sync worker only) --------------------

    def is_ignored(self, relative: str) -> bool:
        return self.git.path_is_ignored(relative)

    def would_commit(self, relative: str) -> bool:
        """Whether a change at this path would be committed: tracked, or not ignored."""
        return bool(self.committable([relative]))

    def committable(self, paths: Iterable[str]) -> list[str]:
        """The paths whose changes would be committed (tracked, or not ignored)."""
        index, git = self.index(), self.git
        result = []
        for path in paths:
            relative = path.strip("/")
            try:
                if relative in index or not git.path_is_ignored(relative):
                    result.append(path)
            except pygit2.GitError:  # libgit2 cannot build the path: no rule is known to match it
                result.append(path)
        return result

    def gitignore_paths(self) -> set[str]:
        """The `.gitignore` files of the branch tip. A walk of its folders: reading the
        index's entries one by one took seconds for 170,000 files."""
        tip = self.branch_tip()
        found: set[str] = set()
        folders = [("", self._commit(tip).tree)] if tip is not None else []
        while folders:
            prefix, tree = folders.pop()
            if ".gitignore" in tree:
                found.add(prefix + ".gitignore")
            for entry in tree:
                if entry.type_str == "tree":
                    folders.append((f"{prefix}{entry.name}/", cast(pygit2.Tree, self.git[entry.id])))
        return found

    @local_write()
    def stage_paths(self, paths: Iterable[str]) -> None:
        """Make the index match the working tree at each path and below it (staging.py)."""
        index = self.index()
        with _undone_on_failure(index):
            staging.stage_paths(self.git, self.workdir, index, paths, self.skipped, self._lfs_cleaner())

    @local_write()
    def stage_everything(self) -> None:
        """Make the index match the whole working tree, as `git add -A` would (staging.py)."""
        index = self.index()
        with _undone_on_failure(index):
            staging.stage_everything(self.git, self.workdir, index, self.skipped, self._lfs_cleaner())

    @local_write()
    def staged_changes(self) -> dict[str, str]:
        """What committing the index would change, file by file: {path: "Created",
        "Update" or "Deleted"} (a tree-to-tree diff: unchanged folders are skipped)."""
        git = self.git
        tree = cast(pygit2.Tree, git[self.index().write_tree()])
        parent = self.branch_tip()
        diff = tree.diff_to_tree(swap=True) if parent is None else self._commit(parent).tree.diff_to_tree(tree)
        changes = {}
        for delta in diff.deltas:
            if delta.status == DeltaStatus.DELETED:
                changes[delta.old_file.path] = "Deleted"
            else:
                changes[delta.new_file.path] = "Created" if delta.status == DeltaStatus.ADDED else "Update"
        return changes

    @local_write()
    def prepare_staging(self, paths: Iterable[str]) -> None:
        """Work staging can do before writes are frozen: LFS files hashed into the store."""
        if self.lfs is not None:
            self.lfs.cleaner.prepare(self.git, self.workdir, paths)

    def _lfs_cleaner(self) -> Optional[Cleaner]:
        return self.lfs.cleaner if self.lfs is not None else None

    @local_write()
    def commit_index(self, message: str, signature: pygit2.Signature) -> Optional[pygit2.Oid]:
        """Commit the index on the branch; None when it equals the tip's tree."""
        git = self.git
        tree = self.index().write_tree()
        parent = self.branch_tip()
        if parent is not None and git[parent].tree.id == tree:
            return None
        parents = [parent] if parent is not None else []
        oid = git.create_commit(branch_ref(self.branch), signature, signature, message, tree, parents)
        self._branch_moved(parent, oid)
        return oid

    @local_write()
    def changed_paths(self) -> list[str]:
        """Working-tree paths that differ from the branch tip (ignored files excluded)."""
        git = self.git
        self.index()  # repairs a corrupt index first: status reads it
        paths = []
        for path, flags in git.status(untracked_files="all").items():
            if flags & FileStatus.IGNORED or staging.is_git_dir_path(path):
                continue
            paths.append(path)
        return sorted(paths)


@contextlib.contextmanager
def _undone_on_failure(index: pygit2.Index) -> Iterator[None]:
    """Staging that fails half-way (a full disk) must leave nothing half-done in memory:
    this thread's index object is kept, and index() reloads it only when the file on
    disk changed. A cleared index left in memory was once committed as "delete all"."""
    try:
        yield
    except BaseException:
        index.read(True)  # back to what the index file holds
        raise
