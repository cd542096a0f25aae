"""Bring the working tree from one commit's tree to another's, file by file.

Used when the remote's changes are integrated. Each file is written to a
temporary name and renamed into place, so a program reading the old file
keeps a consistent old copy. Untracked and ignored files are never touched.
The caller holds SyncState.frozen(): no FUSE write runs meanwhile.

The kernel caches names, attributes and pages of current/ for long: apply_changes
returns the paths it removed or replaced, and the caller tells the kernel (a
WorktreeKernelView, the mount's, see wiring.py) to forget what it had of them and
of every changed path, once SyncState.frozen() is released (see sync/cycle.py).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import BinaryIO, Protocol, cast

import pygit2

from gitfs.lfs.checkout import open_object
from gitfs.lfs.index_entry import add_with_stat
from gitfs.repo.compat import DeltaStatus
from gitfs.repo.repository import FILEMODE_COMMIT, FILEMODE_EXEC, FILEMODE_LINK, Repository

_DELETED = DeltaStatus.DELETED


@dataclass
class TreeChanges:
    """The file-level difference between two trees, ready to apply."""

    deletions: list = field(default_factory=list)  # pygit2.DiffFile of removed files
    writes: list = field(default_factory=list)  # pygit2.DiffFile of added or changed files

    def paths(self) -> set[str]:
        return {entry.path for entry in self.deletions + self.writes}


def tree_changes(repo: Repository, old_tree: pygit2.Oid | None, new_tree: pygit2.Oid) -> TreeChanges:
    git = repo.git
    new = cast(pygit2.Tree, git[new_tree])
    diff = cast(pygit2.Tree, git[old_tree]).diff_to_tree(new) if old_tree is not None else new.diff_to_tree(swap=True)
    changes = TreeChanges()
    for delta in diff.deltas:
        if delta.status == _DELETED:
            changes.deletions.append(delta.old_file)
        else:
            changes.writes.append(delta.new_file)
    return changes


class WorktreeKernelView(Protocol):
    """What the kernel caches of the working tree, told of changes made behind its back."""

    def changed(self, paths: Collection[str], removed: Collection[str]) -> None:
        """`paths` (relative to the working tree's root) changed, and `removed` (from
        apply_changes) no longer name what they named: the kernel forgets the names of
        `removed`, and the attributes and pages of `paths` and of their folders."""
        ...


def apply_changes(repo: Repository, changes: TreeChanges) -> list[str]:
    """Apply the changes to the working tree and the index. Returns every path that
    was removed or replaced (files and folders; a written file is a new inode)."""
    git = repo.git
    index = repo.index()
    removed: list[str] = []
    for entry in changes.deletions:
        removed.extend(_remove_file(repo, entry.path))
        if entry.path in index:
            index.remove(entry.path)
    for entry in changes.writes:
        if entry.mode == FILEMODE_COMMIT:
            continue  # submodules are not checked out
        lfs_object = open_object(repo, entry.path, entry.id, entry.mode)  # Git LFS: the content, not the pointer
        if lfs_object is not None:
            with lfs_object:
                removed.extend(_write_file(repo, entry.path, entry.mode, lfs_object))
            add_with_stat(index, entry.path, entry.id, entry.mode, os.lstat(repo.full_path(entry.path)))
            continue
        removed.extend(_write_file(repo, entry.path, entry.mode, cast(pygit2.Blob, git[entry.id]).data))
        index.add(entry.path)
    index.write()
    return removed


def _remove_file(repo: Repository, relative: str) -> list[str]:
    """Remove the file and the folders it leaves empty; the relative paths removed."""
    full = repo.full_path(relative)
    try:
        os.unlink(full)
    except FileNotFoundError:
        pass
    except IsADirectoryError:
        shutil.rmtree(full)
    removed = [relative]
    parent = os.path.dirname(full)
    while parent != repo.workdir:  # drop directories the deletion left empty
        try:
            os.rmdir(parent)
        except OSError:
            break
        removed.append(os.path.relpath(parent, repo.workdir))
        parent = os.path.dirname(parent)
    return removed


def _write_file(repo: Repository, relative: str, mode: int, data: bytes | BinaryIO) -> list[str]:
    """Write the file (a new inode, renamed into place); the relative paths it replaced:
    itself (the old name now names another file) and files that stood where folders go."""
    full = repo.full_path(relative)
    parent = os.path.dirname(full)
    replaced = [os.path.relpath(path, repo.workdir) for path in _make_directories(repo, parent)]
    replaced.append(relative)
    if os.path.isdir(full) and not os.path.islink(full):
        shutil.rmtree(full)  # the remote replaced a directory by a file
    if mode == FILEMODE_LINK:
        temporary = tempfile.mktemp(prefix=".gitfs-", dir=parent)
        os.symlink(os.fsdecode(cast(bytes, data)), temporary)  # a link is never an LFS object
    else:
        fd, temporary = tempfile.mkstemp(prefix=".gitfs-", dir=parent)
        with os.fdopen(fd, "wb") as handle:
            if isinstance(data, bytes):
                handle.write(data)
            else:
                shutil.copyfileobj(data, handle, 1 << 20)  # an LFS object: in chunks, never whole
        os.chmod(temporary, 0o755 if mode == FILEMODE_EXEC else 0o644)
    os.replace(temporary, full)
    return replaced


def _make_directories(repo: Repository, directory: str) -> list[str]:
    """Make the folder and its missing parents; the files unlinked where a folder goes."""
    missing = []
    unlinked = []
    while directory != repo.workdir and not os.path.isdir(directory):
        missing.append(directory)
        directory = os.path.dirname(directory)
    for path in reversed(missing):
        if os.path.lexists(path):  # a file stands where the new tree has a folder
            os.unlink(path)
            unlinked.append(path)
        os.mkdir(path)
    return unlinked
