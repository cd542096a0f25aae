"""Bring the working tree from one commit's tree to another's, file by file.

Used when the remote's changes are integrated, and for the first checkout of a
clone. Each file is written to a temporary name and renamed into place, so a
program reading the old file keeps a consistent old copy. Untracked and ignored
files are never touched. The caller holds SyncState.frozen(): no FUSE write
runs meanwhile.

Every access goes through a descriptor of the clone's root, one folder at a
time, never following a symlink (beneath.py): git paths have no length limit,
and a folder the kernel's cache of current/ still believes in may have become
a link. The bytes come from Repository.blob_buffer, the one way content comes
out of the git core. A path of the remote that cannot exist on this disk (a
name over 255 bytes, bytes the filesystem refuses, `.git`, `..`) is logged once,
left out of the working tree and recorded in Repository.skipped: it stays in
the index and the commits, and the sync goes on.

The kernel caches names, attributes and pages of current/ for long: apply_changes
returns the paths it removed or whose type changed, and the caller tells the kernel (a
WorktreeKernelView: cache_policy.WorktreeForgetter) to forget their names, and the
attributes and pages of every changed path, once SyncState.frozen() is released (see
sync/cycle.py). differing_paths and rewrite let the cycle check and mend its own work.
"""

from __future__ import annotations

import errno
import logging
import os
import secrets
import shutil
import stat
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import BinaryIO, Optional, Protocol, cast

import pygit2

from gitfs.repo import beneath, compat
from gitfs.repo.commits.index_entry import add_with_stat
from gitfs.repo.compat import DeltaStatus
from gitfs.repo.errors import local_write
from gitfs.repo.objects.reading import diff_trees
from gitfs.repo.repository import FILEMODE_BLOB, FILEMODE_COMMIT, FILEMODE_EXEC, FILEMODE_LINK, GIT_DIR, Repository
from gitfs.repo.workdir import user_attributes

log = logging.getLogger(__name__)

_DELETED = DeltaStatus.DELETED


@dataclass
class TreeChanges:
    """The file-level difference between two trees, ready to apply."""

    deletions: list = field(default_factory=list)  # pygit2.DiffFile of removed files
    writes: list = field(default_factory=list)  # pygit2.DiffFile of added or changed files

    def paths(self) -> set[str]:
        return {entry.path for entry in self.deletions + self.writes}


def tree_changes(repo: Repository, old_tree: pygit2.Oid | None, new_tree: pygit2.Oid) -> TreeChanges:
    changes = TreeChanges()
    for delta in diff_trees(repo.git, old_tree, new_tree).deltas:
        if delta.status == _DELETED:
            changes.deletions.append(delta.old_file)
        else:
            changes.writes.append(delta.new_file)
    return changes


class WorktreeKernelView(Protocol):
    """What the kernel caches of the working tree, told of changes made behind its back."""

    def rewritten(self, paths: Collection[str], replaced: Collection[str] = ()) -> None:
        """`paths` were just written or removed, while no FUSE call changes anything
        (SyncState.frozen()): the kernel drops the attributes and pages of each and of
        their folders. Never a name: that takes a folder's lock, which a FUSE call waiting
        for the freeze to end may hold. `replaced`: names of what stood there before and
        was removed or replaced by another kind of thing; they show missing until changed()."""
        ...

    def settled(self) -> None:
        """The change failed after rewritten(): changed() will not come for it."""
        ...

    def changed(self, paths: Collection[str], removed: Collection[str]) -> None:
        """`paths` (relative to the working tree's root) changed, and `removed` (from
        apply_changes) no longer name what they named: the kernel forgets the names of
        `removed`, and the attributes and pages of `paths` and of their folders."""
        ...

    def recheck(self) -> list[str]:
        """Of the paths told of since the last recheck, those the kernel still showed as
        they were before (told again now)."""
        ...


@local_write()
def apply_changes(repo: Repository, changes: TreeChanges) -> list[str]:
    """Apply the changes to the working tree and the index. Returns every path that
    was removed or now names another kind of thing (files, links and folders); a file
    rewritten as a file is not among them."""
    index = repo.index()
    removed: list[str] = []
    root = os.open(repo.workdir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for entry in changes.deletions:
            removed.extend(_remove_file(root, entry.path))
            if entry.path in index:
                index.remove(entry.path)
        repo.skipped.discard(entry.path for entry in changes.deletions)
        for entry in changes.writes:
            # A content filter's bytes (Git LFS: the object's, not the pointer), or None: the blob's.
            lfs_object = repo.checkout_source(entry.path, entry.id, entry.mode)
            try:
                if entry.mode == FILEMODE_COMMIT:  # a submodule: its empty folder, as git makes it
                    removed.extend(_make_submodule_folder(root, entry.path))
                    index.add(pygit2.IndexEntry(entry.path, entry.id, entry.mode))
                    continue
                if lfs_object is not None:
                    with lfs_object:
                        removed.extend(_write_file(root, entry.path, entry.mode, lfs_object))
                else:
                    removed.extend(_write_file(root, entry.path, entry.mode, repo.blob_buffer(entry.id)))
            except OSError as error:
                if error.errno not in CANNOT_EXIST:
                    raise
                _skip(repo, entry, error)
                index.add(pygit2.IndexEntry(entry.path, entry.id, entry.mode))  # as committed: no deletion
            else:
                repo.skipped.discard([entry.path])
                if lfs_object is not None:  # the pointer, with the content's stat data
                    add_with_stat(index, entry.path, entry.id, entry.mode, beneath.lstat(root, entry.path))
                else:
                    _index_written(repo, index, entry)
    finally:
        os.close(root)
    index.write()
    return removed


CHECKED_PATHS = 256  # paths of one update compared with the tree afterwards: a pull of thousands costs no more
CHECKED_BYTES = 1 << 20  # a larger file is compared by size and type only, never read again whole


@dataclass(frozen=True)
class TreeEntry:
    """A file of a tree as apply_changes takes it (the fields of a pygit2.DiffFile it reads)."""

    path: str
    id: pygit2.Oid
    mode: int


def differing_paths(repo: Repository, tree: pygit2.Oid, paths: Collection[str]) -> list[str]:
    """Of `paths` (at most CHECKED_PATHS of them), those whose working file is not what
    `tree` holds there: missing, there although the tree lacks it, of another type, or
    with other bytes. The paths a content filter writes (Git LFS: the object, not the
    blob) and those this disk cannot hold are not compared."""
    git = repo.git
    root_tree = cast(pygit2.Tree, git[tree])
    differing = []
    root = os.open(repo.workdir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for path in sorted(paths)[:CHECKED_PATHS]:
            if path in repo.skipped:
                continue
            try:
                entry = compat.tree_entry(root_tree, path)
            except KeyError:
                entry = None
            if entry is not None and (entry.filemode == FILEMODE_COMMIT or entry.type_str == "tree"):
                continue  # a folder, or a submodule's: its files are compared themselves
            if not _holds(repo, root, path, entry):
                differing.append(path)
    finally:
        os.close(root)
    return differing


def _holds(repo: Repository, root: int, path: str, entry: Optional[pygit2.Object]) -> bool:
    """Whether the working tree holds at path what the tree entry says (None: nothing)."""
    try:
        st = beneath.lstat(root, path)
    except (FileNotFoundError, NotADirectoryError):
        return entry is None
    except OSError as error:
        if error.errno == errno.ELOOP:  # a link where a folder of the path was: not the tree's file
            return entry is None
        raise
    if entry is None:
        return stat.S_ISDIR(st.st_mode)  # a file the tree lacks; a folder may hold untracked files
    source = repo.checkout_source(path, entry.id, entry.filemode)
    if source is not None:
        source.close()
        return True
    if entry.filemode == FILEMODE_LINK:
        return stat.S_ISLNK(st.st_mode) and os.fsencode(beneath.readlink(root, path)) == repo.blob_bytes(entry.id)
    if not stat.S_ISREG(st.st_mode) or bool(st.st_mode & 0o100) != (entry.filemode == FILEMODE_EXEC):
        return False
    size = repo.blob_size(entry.id)
    if st.st_size != size or size > CHECKED_BYTES:
        return st.st_size == size
    with os.fdopen(beneath.open_beneath(root, path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC), "rb") as handle:
        return pygit2.hash(handle.read(CHECKED_BYTES + 1)) == entry.id


def named_in(repo: Repository, tree: Optional[pygit2.Oid], paths: Collection[str]) -> list[str]:
    """Those of `paths` that `tree` has (a file, a link or a folder)."""
    if tree is None:
        return []
    root_tree = cast(pygit2.Tree, repo.git[tree])
    found = []
    for path in paths:
        try:
            compat.tree_entry(root_tree, path)
        except KeyError:
            continue
        found.append(path)
    return found


def rewrite(repo: Repository, tree: pygit2.Oid, paths: Collection[str]) -> list[str]:
    """Write `paths` as `tree` holds them (removed where it lacks them), as apply_changes
    does; the paths removed or replaced."""
    root_tree = cast(pygit2.Tree, repo.git[tree])
    changes = TreeChanges()
    for path in paths:
        try:
            entry = compat.tree_entry(root_tree, path)
        except KeyError:
            changes.deletions.append(TreeEntry(path, pygit2.Oid(raw=b"\0" * 20), 0))
        else:
            changes.writes.append(TreeEntry(path, entry.id, entry.filemode))
    return apply_changes(repo, changes)


@local_write()
def check_out(repo: Repository) -> None:
    """Write the branch tip's tree into the working tree of a new clone, and the index.

    Until it is done, a mark in .git says so: a working tree half written (the daemon
    killed meanwhile) would otherwise be committed as the deletion of what is missing."""
    mark = os.path.join(repo.path, GIT_DIR, _CHECKING_OUT)
    with open(mark, "wb"):
        pass
    tip = repo.branch_tip()
    if tip is not None:
        apply_changes(repo, tree_changes(repo, None, repo.root_tree(tip)))
    os.unlink(mark)


def check_out_unfinished(repo: Repository) -> bool:
    """Whether check_out was interrupted: to be run again."""
    return os.path.exists(os.path.join(repo.path, GIT_DIR, _CHECKING_OUT))


_CHECKING_OUT = "gitfs-checking-out"


# What a disk answers for a path it can never hold: a name too long, bytes or
# characters it refuses, or a name refused here (EXDEV: "..", see _names).
CANNOT_EXIST = (errno.ENAMETOOLONG, errno.EILSEQ, errno.EINVAL, errno.EXDEV)


def _skip(repo: Repository, entry: pygit2.DiffFile, error: OSError) -> None:
    if entry.path not in repo.skipped:
        log.error("%s cannot exist on this disk (%s): left out of current/, kept in the commits",
                  entry.path, error.strerror)
        repo.skipped.add(entry.path)


def _index_written(repo: Repository, index: pygit2.Index, entry: pygit2.DiffFile) -> None:
    """The index entry of a file just written. libgit2 records its stat data (so that
    status need not hash it again) when it can reach it by its absolute path; the
    entry is the tree's own when not, or when what libgit2 hashed is not the blob."""
    if len(os.fsencode(repo.workdir)) + 1 + len(os.fsencode(entry.path)) < beneath.PATH_MAX:
        try:
            index.add(entry.path)
            if index[entry.path].id == entry.id:
                return
        except (OSError, pygit2.GitError):
            pass
    index.add(pygit2.IndexEntry(entry.path, entry.id, entry.mode))


def _names(relative: str) -> list[str]:
    """The path's components; EXDEV for one that must never be written: `..` or `.`
    (outside, or beside, where the tree says) and `.git` (a repository's own files)."""
    names = relative.split("/")
    if any(name in ("", ".", "..", GIT_DIR) for name in names):
        raise OSError(errno.EXDEV, "a name git itself refuses to check out", relative)
    return names


def _remove_file(root: int, relative: str) -> list[str]:
    """Remove the file and the folders it leaves empty; the relative paths removed."""
    names = _names(relative)
    try:
        with beneath.parent(root, relative) as (folder, name):
            try:
                os.unlink(name, dir_fd=folder)
            except FileNotFoundError:
                pass
            except IsADirectoryError:
                _remove_tree(folder, name)
    except (FileNotFoundError, NotADirectoryError):
        return [relative]  # its folder is gone already
    except OSError as error:
        if error.errno != errno.ELOOP:
            raise
        return [relative]  # a link where its folder was: the link stays, nothing beyond it is touched
    removed = [relative]
    for depth in range(len(names) - 1, 0, -1):  # drop directories the deletion left empty
        parent = "/".join(names[:depth])
        try:
            with beneath.parent(root, parent) as (folder, name):
                os.rmdir(name, dir_fd=folder)
        except OSError:
            break
        removed.append(parent)
    return removed


def _remove_tree(folder: int, name: str) -> None:
    """rm -r of `name` inside the folder fd, never following a link."""
    for _folder, dirs, files, parent_fd in os.fwalk(name, dir_fd=folder, topdown=False):
        for file in files:
            os.unlink(file, dir_fd=parent_fd)
        for directory in dirs:  # links to folders are listed here, and removed as links
            if stat.S_ISLNK(os.lstat(directory, dir_fd=parent_fd).st_mode):
                os.unlink(directory, dir_fd=parent_fd)
            else:
                os.rmdir(directory, dir_fd=parent_fd)
    os.rmdir(name, dir_fd=folder)


def _write_file(root: int, relative: str, mode: int, data: memoryview | BinaryIO) -> list[str]:
    """Write the file (a new inode, renamed into place); the relative paths it replaced:
    itself where it was no file before (a folder, a link, nothing), and files that stood
    where folders go."""
    names = _names(relative)
    folder, replaced = _make_directories(root, names[:-1])
    name = names[-1]
    try:
        try:
            before = os.lstat(name, dir_fd=folder).st_mode
        except FileNotFoundError:
            before = None
        # A file rewritten as a file keeps its name in the kernel: only its attributes and
        # pages go (the caller's kernel view is told of every written path). Its node then
        # stays, and the kernel drops a reply read from the old file that lands after the
        # notification; a forgotten name's new node would take such a reply as current.
        if not (before is not None and stat.S_ISREG(before) and mode in (FILEMODE_BLOB, FILEMODE_EXEC)):
            replaced.append(relative)
        if before is not None and stat.S_ISDIR(before):
            _remove_tree(folder, name)  # the remote replaced a directory by a file
        temporary = f".gitfs-{secrets.token_hex(4)}"
        if mode == FILEMODE_LINK:
            target = bytes(cast(memoryview, data))  # a link is never an LFS object
            if b"\0" in target:
                raise OSError(errno.EINVAL, "a link's target with a NUL byte", relative)
            os.symlink(target, temporary, dir_fd=folder)
        else:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                         dir_fd=folder)
            try:
                user_attributes.carry_over(folder, name, fd)  # kept with the name (user_attributes.py)
                with os.fdopen(fd, "wb", closefd=False) as handle:
                    if isinstance(data, memoryview):
                        handle.write(data)
                    else:
                        shutil.copyfileobj(data, handle, 1 << 20)  # an LFS object: in chunks, never whole
                os.fchmod(fd, 0o755 if mode == FILEMODE_EXEC else 0o644)
            finally:
                os.close(fd)
        try:
            os.replace(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
        except OSError:
            os.unlink(temporary, dir_fd=folder)
            raise
        return replaced
    finally:
        if folder != root:
            os.close(folder)


def _make_submodule_folder(root: int, relative: str) -> list[str]:
    """The (empty) folder of a submodule, which is not checked out; the paths it replaced."""
    names = _names(relative)
    folder, replaced = _make_directories(root, names)
    if folder != root:
        os.close(folder)
    return replaced


def _make_directories(root: int, names: list[str]) -> tuple[int, list[str]]:
    """An fd of the folder `names` (root itself for none), made with its missing parents
    one at a time; and the relative paths of files (or links) unlinked where a folder goes."""
    if not names:
        return root, []
    try:
        return beneath.open_beneath(root, "/".join(names), _FOLDER), []  # mostly there already
    except OSError as error:
        if error.errno not in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.ENAMETOOLONG):
            raise
    unlinked = []
    fd = root
    try:
        for depth, name in enumerate(names, 1):
            try:
                following = os.open(name, _FOLDER | os.O_NOFOLLOW, dir_fd=fd)
            except (FileNotFoundError, NotADirectoryError):
                if _exists(fd, name):
                    os.unlink(name, dir_fd=fd)  # a file (or link) stands where the new tree has a folder
                    unlinked.append("/".join(names[:depth]))
                os.mkdir(name, dir_fd=fd)
                following = os.open(name, _FOLDER | os.O_NOFOLLOW, dir_fd=fd)
            if fd != root:
                os.close(fd)
            fd = following
    except BaseException:
        if fd != root:
            os.close(fd)
        raise
    return fd, unlinked


_FOLDER = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC


def _exists(folder: int, name: str) -> bool:
    try:
        os.lstat(name, dir_fd=folder)
    except FileNotFoundError:
        return False
    return True
