"""LfsContent: what the git core asks of LFS when it shows a commit's files.

A blob of a filter=lfs path that holds a pointer is shown as the object it names: its
size is the object's, and opening it opens the object in the clone's store, which
is filled from the remote on first open (a Transfer) if it is not there. An object
that cannot be had is reported once (one log line with the path, the object id and
why; an entry for the status file) and its file reads as an error, never as the
pointer's text.

Threading: FUSE threads and the sync worker call it at once. The caches are dicts
changed by single atomic operations; a download may run twice for one object at
worst (the store's rename into place makes that harmless).
"""

from __future__ import annotations

import logging
import os
import threading
from typing import BinaryIO, Callable, Optional

from gitfs.lfs import attributes, pointer
from gitfs.lfs.errors import LfsError, ObjectMissing, ObjectPending, UnsupportedPointer
from gitfs.lfs.pointer import Pointer
from gitfs.lfs.staging import Cleaner
from gitfs.lfs.store import ObjectStore
from gitfs.lfs.transfer import Transfer
from gitfs.repo.content_filter import FilterSource, ObjectId
from gitfs.repo.filemodes import FILEMODE_BLOB, FILEMODE_EXEC

log = logging.getLogger(__name__)

POINTERS = 16384  # blob oid -> pointer (or None) remembered
DOWNLOAD_WAIT = 10.0  # seconds an open waits for its object; the download goes on after that


class _Download:
    """One object's download, run by its own thread; `why` is set if it failed."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.why: Optional[str] = None


class ObjectReader:
    """An open LFS file's bytes: read from the store's file at an offset, never whole."""

    __slots__ = ("_fd",)

    def __init__(self, fd: int):
        self._fd = fd

    def read(self, size: int, offset: int) -> bytes:
        return os.pread(self._fd, size, offset)

    def close(self) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)


class LfsContent:
    active = True  # a blob of a filter=lfs path may stand for an object (content_filter.ContentFilter)

    def __init__(self, store: ObjectStore, transfer: Transfer, source: FilterSource, *,
                 on_missing: Optional[Callable[[str, str, str], None]] = None,
                 on_found: Optional[Callable[[str], None]] = None):
        self.store = store
        self.transfer = transfer
        self.source = source  # the repository, as bytes, ids and paths
        self.cleaner = Cleaner(store, source)  # the working tree's files to pointers (staging.py)
        self.on_missing = on_missing  # (path, oid, why): the status file's entry
        self.on_found = on_found  # (oid): a reported object is had after all; its entry goes
        # Working files left holding their pointer's text, path -> pointer (checkout.py):
        # the sync worker adds and removes them, the fetch worker reads them.
        self._placeholders: dict[str, tuple[Pointer, bytes]] = {}  # path -> (pointer, its text)
        self._placeholders_lock = threading.Lock()
        self._pointers: dict[ObjectId, Optional[Pointer]] = {}
        self._unsupported: dict[str, str] = {}  # oid -> why, for pointers with extensions
        self._reported: set[str] = set()  # oids whose absence was logged
        self._report_lock = threading.Lock()
        self._downloads: dict[str, _Download] = {}  # oid -> the download running for an open
        self._downloads_lock = threading.Lock()
        self.download_wait = DOWNLOAD_WAIT

    def pointer(self, oid: ObjectId, size: int, path: str, commit: Optional[ObjectId] = None) -> Optional[Pointer]:
        """The pointer a blob of `size` bytes at `path` holds, if the path is LFS; else None."""
        if not pointer.could_be_pointer(size):
            return None
        if oid in self._pointers:
            found = self._pointers[oid]
        else:
            found = self._parse(oid)
        if found is None or not attributes.is_lfs_path(self.source, path, commit):
            return None
        return found

    def _parse(self, oid: ObjectId) -> Optional[Pointer]:
        found: Optional[Pointer] = None
        try:
            found = pointer.parse(self.source.blob_bytes(oid))
        except UnsupportedPointer as error:
            found = error.pointer if isinstance(error.pointer, Pointer) else None
            if found is not None:
                self._unsupported[found.oid] = str(error)
        if len(self._pointers) >= POINTERS:
            self._pointers.clear()  # atomic; cheaper than an LRU's bookkeeping on every hit
        self._pointers[oid] = found
        return found

    def checkout_source(self, blob_size: int, path: str, oid: ObjectId, mode: int) -> Optional[BinaryIO]:
        """The content to write at path for the blob oid, if it is an LFS pointer whose
        object is in the store; None otherwise (the blob's own bytes are written: for a
        pointer whose object is not had, the file is remembered as a placeholder)."""
        if mode not in (FILEMODE_BLOB, FILEMODE_EXEC):
            return None
        found = self.pointer(oid, blob_size, path)
        if found is None or self.unsupported(found):
            return None
        try:
            if self.store.has(found):
                return self.store.open(found)
        except LfsError:
            pass
        self.left_as_pointer(path, found, self.source.blob_bytes(oid))
        return None

    def unsupported(self, found: Pointer) -> Optional[str]:
        """Why the object cannot be shown (a pointer with extensions), or None."""
        return self._unsupported.get(found.oid)

    def open(self, found: Pointer, path: str) -> ObjectReader:
        """The object's bytes for reading, downloaded first if the store lacks it.
        ObjectMissing or ObjectPending (ContentUnavailable: EIO for readers; a missing
        one is reported once) if it cannot be had."""
        why = self._unsupported.get(found.oid)
        if why is None and not self.store.has(found):
            why = self._download_for_open(found, path)
        if why is None:
            try:
                with self.store.open(found) as handle:
                    reader = ObjectReader(os.dup(handle.fileno()))
                self.arrived(found)
                return reader
            except LfsError as error:
                why = str(error)
        self.missing(path.lstrip("/"), found, why)
        raise ObjectMissing(f"LFS object {found.oid} of {path}: {why}")

    def _download_for_open(self, found: Pointer, path: str) -> Optional[str]:
        """Download the object in a thread of its own and wait for it, at most download_wait
        seconds: a FUSE call never waits on a big transfer. ObjectPending if it is still
        running (the next open finds it done); else why it failed, or None."""
        with self._downloads_lock:
            download = self._downloads.get(found.oid)
            if download is None:
                download = self._downloads[found.oid] = _Download()
                threading.Thread(target=self._download, args=(found, download), name="LfsDownload",
                                 daemon=True).start()
        if not download.done.wait(self.download_wait):
            log.info("LFS object of %s (%s) is still downloading", path.lstrip("/"), found.oid)
            raise ObjectPending(f"LFS object {found.oid} of {path}: still downloading")
        return download.why

    def _download(self, found: Pointer, download: _Download) -> None:
        try:
            download.why = self.transfer.download([found]).get(found.oid)
        except Exception as error:  # a failed download is reported, never lost
            download.why = str(error) or error.__class__.__name__
        finally:
            with self._downloads_lock:
                self._downloads.pop(found.oid, None)
            download.done.set()

    def left_as_pointer(self, path: str, found: Pointer, text: bytes) -> None:
        """The working file at path holds text, found's: its object could not be had."""
        with self._placeholders_lock:
            self._placeholders[path] = (found, text)

    def placeholders(self) -> dict[str, Pointer]:
        with self._placeholders_lock:
            return {path: found for path, (found, _text) in self._placeholders.items()}

    def placeholder(self, path: str) -> Optional[tuple[Pointer, bytes]]:
        """(pointer, its text) if the working file at path was left holding that text."""
        return self._placeholders.get(path)  # one atomic lookup: FUSE threads ask on every getattr

    def placeholder_done(self, path: str) -> None:
        """The working file at path holds content now, or no longer its pointer's text."""
        with self._placeholders_lock:
            self._placeholders.pop(path, None)

    def arrived(self, found: Pointer) -> None:
        """An object reported missing is in the store now: a later loss is reported again."""
        with self._report_lock:
            if found.oid not in self._reported:
                return
            self._reported.discard(found.oid)
        log.info("LFS object %s is here now", found.oid)
        if self.on_found is not None:
            self.on_found(found.oid)

    def missing(self, path: str, found: Pointer, why: str) -> None:
        """Report an object that cannot be had: logged and put in the status once per object."""
        with self._report_lock:
            if found.oid in self._reported:
                return
            self._reported.add(found.oid)
        log.error("LFS object of %s is missing (%s): %s", path, found.oid, why)
        if self.on_missing is not None:
            self.on_missing(path, found.oid, why)


def lfs_of(repo: FilterSource) -> Optional[LfsContent]:
    """The repository's content filter where it is Git LFS's (None: plain git)."""
    content = repo.content_filter
    return content if isinstance(content, LfsContent) else None
