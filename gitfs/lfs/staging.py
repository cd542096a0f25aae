"""The working file's bytes in, a pointer's text out: cleaning an LFS file for staging.

A regular, non-empty file at a filter=lfs path is copied into the clone's object store
(hashed as it is copied) and cleaned to the canonical pointer, which the core stages
with the working file's stat data, its exec bit kept. An empty file stays an empty blob; a
file that already holds a pointer (an object that could not be had) is staged as that
pointer, never as a change. Links are staged as links.

Hashing a big file is slow, and staging runs while writes are frozen: `prepare` cleans
the files of a batch beforehand, outside the freeze, and remembers each file's pointer
with its stat signature; staging then reuses it if the file has not changed since.

Working files are reached beneath the clone's root (gitfs/repo/beneath.py), as the rest
of the core reaches them: a folder replaced by a symlink is never followed, so no file
outside the clone is ever copied into the store or committed.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from typing import BinaryIO, Optional

from gitfs.lfs import attributes, pointer
from gitfs.lfs.errors import UnsupportedPointer
from gitfs.lfs.pointer import Pointer
from gitfs.lfs.store import ObjectStore
from gitfs.repo import beneath
from gitfs.repo.content_filter import FilterSource

Signature = tuple[int, int, int, int, int]


def signature(st: os.stat_result) -> Signature:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


class Cleaner:
    """Working files to pointers, remembering the last pointer of each path (sync worker only)."""

    def __init__(self, store: ObjectStore, source: FilterSource):
        self.store = store
        self.source = source  # which paths are LFS (their attributes), and the working tree
        self._cleaned: dict[str, tuple[Signature, bytes, Optional[Pointer]]] = {}  # path -> the blob to stage

    def prepare(self, paths: Iterable[str]) -> None:
        """Clean the LFS files among paths now, so that staging them later finds them done.
        Files that vanish or change meanwhile are simply cleaned again when staged."""
        root = os.open(self.source.workdir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            for relative in paths:
                try:
                    self.clean(root, relative)
                except (FileNotFoundError, NotADirectoryError):
                    continue
                except OSError as error:
                    # ELOOP: it runs through a link now; ENAMETOOLONG: no disk here holds it.
                    # Gone, as staging sees it (it never follows a link either).
                    if error.errno not in (errno.ELOOP, errno.ENAMETOOLONG):
                        raise
        finally:
            os.close(root)

    def clean(self, root: int, relative: str) -> Optional[tuple[bytes, os.stat_result]]:
        """The pointer's text to stage for relative (under the root descriptor) and the
        file's lstat, if it is an LFS file; None if it is not one (staged as it is). ELOOP
        for a path that runs through a link."""
        st = beneath.lstat(root, relative)
        if not _lfs_content(self.source, relative, st):
            return None
        return self.blob_text(root, relative, st), st

    def blob_text(self, root: int, relative: str, st: os.stat_result) -> bytes:
        """The pointer text to stage for the file, its content copied into the store first.
        A file whose text already is a pointer is staged as it is (cleaned to itself)."""
        known = self._cleaned.get(relative)
        if known is not None and known[0] == signature(st) and (known[2] is None or self.store.has(known[2])):
            return known[1]
        fd = beneath.open_beneath(root, relative, os.O_RDONLY | os.O_NOFOLLOW)
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


def _lfs_content(source: FilterSource, relative: str, st: os.stat_result) -> bool:
    return stat.S_ISREG(st.st_mode) and st.st_size > 0 and attributes.is_lfs_path(source, relative)


def _pointer_text(handle: BinaryIO, size: int) -> Optional[bytes]:
    """The file's bytes if they are a pointer already (with extensions too), else None."""
    if not pointer.could_be_pointer(size):
        return None
    data = handle.read(pointer.MAX_BYTES + 1)
    try:
        return data if pointer.parse(data) is not None else None
    except UnsupportedPointer:
        return data
