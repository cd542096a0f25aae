"""The working file's bytes in, a pointer blob out: staging an LFS file.

A regular, non-empty file at a filter=lfs path is copied into the clone's object store
(hashed as it is copied) and staged as the canonical pointer, with the working file's
stat data (repo/index_entry.py), its exec bit kept. An empty file stays an empty blob; a
file that already holds a pointer (an object that could not be had) is staged as that
pointer, never as a change. Links are staged as links.

Hashing a big file is slow, and staging runs while writes are frozen: `prepare` cleans
the files of a batch beforehand, outside the freeze, and remembers each file's pointer
with its stat signature; staging then reuses it if the file has not changed since.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from typing import BinaryIO, Optional

import pygit2

from gitfs.lfs import attributes, pointer
from gitfs.lfs.errors import UnsupportedPointer
from gitfs.lfs.pointer import Pointer
from gitfs.lfs.store import ObjectStore
from gitfs.repo.filemodes import FILEMODE_BLOB, FILEMODE_EXEC
from gitfs.repo.index_entry import add_with_stat

Signature = tuple[int, int, int, int, int]


def signature(st: os.stat_result) -> Signature:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


class Cleaner:
    """Working files to pointers, remembering the last pointer of each path (sync worker only)."""

    def __init__(self, store: ObjectStore):
        self.store = store
        self._cleaned: dict[str, tuple[Signature, bytes, Optional[Pointer]]] = {}  # path -> the blob to stage

    def prepare(self, git: pygit2.Repository, workdir: str, paths: Iterable[str]) -> None:
        """Clean the LFS files among paths now, so that staging them later finds them done.
        Files that vanish or change meanwhile are simply cleaned again when staged."""
        root = os.open(workdir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            for relative in paths:
                try:
                    st = os.lstat(relative, dir_fd=root)
                    if _lfs_content(git, relative, st):
                        self.blob_text(root, relative, st)
                except (FileNotFoundError, NotADirectoryError, pygit2.GitError):
                    continue
        finally:
            os.close(root)

    def stage(self, git: pygit2.Repository, index: pygit2.Index, root: int, relative: str) -> bool:
        """Stage relative (under the root descriptor) as a pointer if it is an LFS file;
        False if it is not one (the caller stages it as usual)."""
        st = os.lstat(relative, dir_fd=root)
        if not _lfs_content(git, relative, st):
            return False
        blob = git.create_blob(self.blob_text(root, relative, st))
        add_with_stat(index, relative, blob, FILEMODE_EXEC if st.st_mode & 0o100 else FILEMODE_BLOB, st)
        return True

    def cleans_to(self, git: pygit2.Repository, root: int, relative: str, blob: pygit2.Oid) -> bool:
        """Whether staging relative would stage blob: an LFS file that holds the content
        of that pointer (git's status, which compares bytes, calls it modified)."""
        try:
            st = os.lstat(relative, dir_fd=root)
        except (FileNotFoundError, NotADirectoryError):
            return False
        return _lfs_content(git, relative, st) and pygit2.hash(self.blob_text(root, relative, st)) == blob

    def blob_text(self, root: int, relative: str, st: os.stat_result) -> bytes:
        """The pointer text to stage for the file, its content copied into the store first.
        A file whose text already is a pointer is staged as it is (cleaned to itself)."""
        known = self._cleaned.get(relative)
        if known is not None and known[0] == signature(st) and (known[2] is None or self.store.has(known[2])):
            return known[1]
        fd = os.open(relative, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=root)
        with os.fdopen(fd, "rb") as handle:
            text = _pointer_text(handle, st.st_size)
            found = None
            if text is None:
                handle.seek(0)
                found = self.store.add(handle)
                text = found.encode()
        self._cleaned[relative] = (signature(st), text, found)
        return text

    def forget(self, relative: str) -> None:
        self._cleaned.pop(relative, None)


def _lfs_content(git: pygit2.Repository, relative: str, st: os.stat_result) -> bool:
    return stat.S_ISREG(st.st_mode) and st.st_size > 0 and attributes.is_lfs_path(git, relative)


def _pointer_text(handle: BinaryIO, size: int) -> Optional[bytes]:
    """The file's bytes if they are a pointer already (with extensions too), else None."""
    if not pointer.could_be_pointer(size):
        return None
    data = handle.read(pointer.MAX_BYTES + 1)
    try:
        return data if pointer.parse(data) is not None else None
    except UnsupportedPointer:
        return data
