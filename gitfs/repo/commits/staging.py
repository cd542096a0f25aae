"""Staging: make the index match the working tree, at some paths or as a whole.

Ignored files are left out unless already tracked; links are staged as links, never
followed; `.git` folders and files are never staged, at any depth.

Every look at the working tree goes through a descriptor of the clone's root, never
through a link (beneath.py), so any path a program could create in current/ (up to
4095 bytes) can be staged, however long the clone's own path. libgit2 opens a file by
its absolute path, so a file whose absolute path is longer than PATH_MAX is hashed
from its bytes here instead. A folder that cannot be read is an error, never taken
for an empty one: that would commit its files as deleted. Likewise a path of the
branch that cannot exist on this disk (`kept`, see skipped.py) is missing from the
working tree on purpose: its index entry is kept as it is, never staged as deleted.
"""

from __future__ import annotations

import bisect
import errno
import os
import stat
from collections.abc import Collection, Iterable, Iterator
from typing import Optional, Protocol

import pygit2

from gitfs.repo import beneath, compat
from gitfs.repo.commits.index_entry import add_with_stat
from gitfs.repo.content_filter import PLAIN_GIT, Cleaner
from gitfs.repo.filemodes import FILEMODE_BLOB, FILEMODE_COMMIT, FILEMODE_EXEC, FILEMODE_LINK, GIT_DIR

PATH_MAX = 4096  # bytes, with the terminating NUL


class Kept(Protocol):
    """Paths whose index entries stay whatever the disk holds (skipped.SkippedPaths)."""

    def inside(self, folder: str) -> list[str]: ...


class _NothingKept:
    def inside(self, folder: str) -> list[str]:
        return []


NOTHING_KEPT = _NothingKept()


def stage_paths(git: pygit2.Repository, workdir: str, index: pygit2.Index, paths: Iterable[str],
                kept: Kept = NOTHING_KEPT, cleaner: Cleaner = PLAIN_GIT.cleaner) -> None:
    """Make the index match the working tree at each path and below it.

    Only the topmost of the paths are staged: a path inside another one of the batch
    is covered by that one's walk, and staging it again after its folder was removed
    from the index would ask the index for an entry it no longer has (edit `d/f`,
    then rename `d`: the batch holds `d/f`, `d` and the new name).
    """
    tracked = sorted(entry.path for entry in index)
    with _Stager(git, workdir, index, cleaner) as stager:
        for relative in topmost(p.strip("/") for p in paths):
            if is_git_dir_path(relative):
                continue
            below = paths_below(tracked, relative)
            entries = _entries(index, kept.inside(relative))
            stager.unstage(relative, below)
            _add_entries(index, entries)
            mode = stager.mode(relative)
            if mode is None:
                continue
            if stat.S_ISDIR(mode):
                stager.add_folder(relative, set(below))
            elif stat.S_ISREG(mode) or stat.S_ISLNK(mode):
                stager.add(relative, tracked=relative in tracked)
    index.write()


def stage_everything(git: pygit2.Repository, workdir: str, index: pygit2.Index,
                     kept: Kept = NOTHING_KEPT, cleaner: Cleaner = PLAIN_GIT.cleaner) -> None:
    """Make the index match the whole working tree, as `git add -A` would: every file
    that is tracked or not ignored. Submodule entries whose folder is there are kept."""
    tracked = {entry.path for entry in index}
    gitlinks = [entry for entry in index if entry.mode == FILEMODE_COMMIT]
    entries = _entries(index, kept.inside(""))
    with _Stager(git, workdir, index, cleaner) as stager:
        gitlinks = [entry for entry in gitlinks if stager.mode(entry.path) is not None]
        index.clear()
        stager.add_folder("", tracked)
        _add_entries(index, gitlinks + entries)
    index.write()


def hold_back(git: pygit2.Repository, index: pygit2.Index, tree: Optional[pygit2.Oid], paths: Iterable[str]) -> None:
    """Put the index entries at `paths` (files) back to what `tree` holds, or remove them
    where it holds no file, whatever staging put there: what the working tree holds at
    those paths is not committed."""
    root = git[tree] if tree is not None else None
    changed = False
    try:
        for path in paths:
            entry = _blob_entry(root, path)
            if entry is not None:
                index.add(pygit2.IndexEntry(path, entry.id, entry.filemode))
                changed = True
            elif path in index:
                index.remove(path)
                changed = True
        if changed:
            index.write()
    except BaseException:
        index.read(True)  # nothing half-done left in memory (writing.py: _undone_on_failure)
        raise


def _blob_entry(root, path: str):
    """The tree entry of the file or link at path in the tree `root`, or None."""
    if root is None:
        return None
    try:
        entry = root[path]
    except (KeyError, ValueError):
        return None
    return entry if entry.filemode in (FILEMODE_BLOB, FILEMODE_EXEC, FILEMODE_LINK) else None


def _entries(index: pygit2.Index, paths: Collection[str]) -> list[pygit2.IndexEntry]:
    return [index[path] for path in paths if path in index]


def _add_entries(index: pygit2.Index, entries: list[pygit2.IndexEntry]) -> None:
    for entry in entries:
        index.add(entry)


class _Stager:
    def __init__(self, git: pygit2.Repository, workdir: str, index: pygit2.Index, cleaner: Cleaner):
        self.git = git
        self.index = index
        self.cleaner = cleaner  # the content filter's: Git LFS stages files of filter=lfs paths as pointers
        self.workdir_bytes = len(os.fsencode(workdir))
        self.root = os.open(workdir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)

    def __enter__(self) -> _Stager:
        return self

    def __exit__(self, *exc_info) -> None:
        os.close(self.root)

    def mode(self, relative: str) -> Optional[int]:
        """lstat's mode of a working-tree path; None if it is gone. A path that now runs
        through a link (a folder replaced by a symlink, maybe a loop) is gone: never followed."""
        try:
            return beneath.lstat(self.root, relative).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as error:
            # ELOOP: through a link; ENAMETOOLONG: a name no disk here holds. Not there.
            if error.errno in (errno.ELOOP, errno.ENAMETOOLONG):
                return None
            raise

    def unstage(self, relative: str, tracked_below: list[str]) -> None:
        """Drop the index entries at relative, below it, and of any parent that was a file."""
        parts = relative.split("/")
        for depth in range(1, len(parts) + 1):
            prefix = "/".join(parts[:depth])
            if prefix in self.index:
                self.index.remove(prefix)
        if tracked_below:
            compat.remove_directory(self.index, relative)

    def add_folder(self, relative: str, tracked: set[str]) -> None:
        for path in self._files_below(relative):
            self.add(path, tracked=path in tracked)

    def add(self, relative: str, *, tracked: bool) -> None:
        if not tracked and self._ignored(relative):
            return
        cleaned = self.cleaner.clean(self.root, relative)
        if cleaned is not None:  # as the content filter commits it (Git LFS: a pointer; the content in its store)
            text, st = cleaned
            mode = FILEMODE_EXEC if st.st_mode & 0o100 else FILEMODE_BLOB
            add_with_stat(self.index, relative, self.git.create_blob(text), mode, st)
            return
        if self.workdir_bytes + 1 + len(os.fsencode(relative)) < PATH_MAX:
            self.index.add(relative)
        else:
            self._add_from_bytes(relative)

    def _ignored(self, relative: str) -> bool:
        try:
            return self.git.path_is_ignored(relative)
        except pygit2.GitError:  # libgit2 cannot build the path: no rule is known to match it
            return False

    def _add_from_bytes(self, relative: str) -> None:
        st = beneath.lstat(self.root, relative)
        if stat.S_ISLNK(st.st_mode):
            data = os.fsencode(beneath.readlink(self.root, relative))
            mode = FILEMODE_LINK
        else:
            fd = beneath.open_beneath(self.root, relative, os.O_RDONLY)
            with os.fdopen(fd, "rb") as handle:
                data = handle.read()
            mode = FILEMODE_EXEC if st.st_mode & 0o100 else FILEMODE_BLOB
        # An int mode: pygit2 before 1.14 has no FileMode enum to give.
        self.index.add(pygit2.IndexEntry(relative, self.git.create_blob(data), mode))  # type: ignore[arg-type]

    def _files_below(self, relative: str) -> Iterator[str]:
        """Every file and link below a folder ("" for the root), `.git` left out."""
        top = beneath.open_beneath(self.root, relative or ".", os.O_RDONLY | os.O_DIRECTORY)
        base = relative + "/" if relative else ""
        try:
            for folder, dirs, files, folder_fd in os.fwalk(".", dir_fd=top, onerror=_raise):
                folder = os.path.normpath(folder)
                prefix = base if folder == "." else base + folder + "/"
                links = [name for name in dirs if stat.S_ISLNK(os.lstat(name, dir_fd=folder_fd).st_mode)]
                dirs[:] = [name for name in dirs if name != GIT_DIR and name not in links]
                for name in files + links:
                    if name != GIT_DIR:  # a .git file: a worktree's or a submodule's, never committed
                        yield prefix + name
        finally:
            os.close(top)


def _raise(error: OSError) -> None:
    raise error


def topmost(paths: Iterable[str]) -> list[str]:
    """The paths not inside another of them, sorted; "" (the root) is never staged."""
    result: list[str] = []
    for path in sorted(set(paths)):
        if path and not (result and path.startswith(result[-1] + "/")):
            result.append(path)
    return result


def paths_below(sorted_paths: list[str], directory: str) -> list[str]:
    """The paths of sorted_paths inside directory, found by bisection."""
    start = bisect.bisect_left(sorted_paths, directory + "/")
    end = bisect.bisect_left(sorted_paths, directory + "0")  # "0" sorts right after "/"
    return sorted_paths[start:end]


def is_git_dir_path(relative: str) -> bool:
    return GIT_DIR in relative.split("/")

