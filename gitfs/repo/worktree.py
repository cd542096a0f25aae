"""Bring the working tree from one commit's tree to another's, file by file.

Used when the remote's changes are integrated. Each file is written to a
temporary name and renamed into place, so a program reading the old file
keeps a consistent old copy. Untracked and ignored files are never touched.
The caller holds SyncState.frozen(): no FUSE write runs meanwhile.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import cast

import pygit2

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


def apply_changes(repo: Repository, changes: TreeChanges) -> None:
    """Apply the changes to the working tree and the index."""
    git = repo.git
    index = repo.index()
    for entry in changes.deletions:
        _remove_file(repo, entry.path)
        if entry.path in index:
            index.remove(entry.path)
    for entry in changes.writes:
        if entry.mode == FILEMODE_COMMIT:
            continue  # submodules are not checked out
        _write_file(repo, entry.path, entry.mode, cast(pygit2.Blob, git[entry.id]).data)
        index.add(entry.path)
    index.write()


def _remove_file(repo: Repository, relative: str) -> None:
    full = repo.full_path(relative)
    try:
        os.unlink(full)
    except FileNotFoundError:
        pass
    except IsADirectoryError:
        shutil.rmtree(full)
    parent = os.path.dirname(full)
    while parent != repo.workdir:  # drop directories the deletion left empty
        try:
            os.rmdir(parent)
        except OSError:
            break
        parent = os.path.dirname(parent)


def _write_file(repo: Repository, relative: str, mode: int, data: bytes) -> None:
    full = repo.full_path(relative)
    parent = os.path.dirname(full)
    _make_directories(repo, parent)
    if os.path.isdir(full) and not os.path.islink(full):
        shutil.rmtree(full)  # the remote replaced a directory by a file
    if mode == FILEMODE_LINK:
        temporary = tempfile.mktemp(prefix=".gitfs-", dir=parent)
        os.symlink(os.fsdecode(data), temporary)
    else:
        fd, temporary = tempfile.mkstemp(prefix=".gitfs-", dir=parent)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(temporary, 0o755 if mode == FILEMODE_EXEC else 0o644)
    os.replace(temporary, full)


def _make_directories(repo: Repository, directory: str) -> None:
    # A file may stand where the new tree has a directory.
    missing = []
    while directory != repo.workdir and not os.path.isdir(directory):
        missing.append(directory)
        directory = os.path.dirname(directory)
    for path in reversed(missing):
        if os.path.lexists(path):
            os.unlink(path)
        os.mkdir(path)
