"""A second content filter, for the seam's tests: a file at a `filter=seal` path is
committed sealed (a header, then its bytes in base64: where git-crypt would encrypt) and
is read, checked out and cleaned open. Written from gitfs/repo/content_filter.py alone:
the protocols it answers, the FilterSource it asks, ContentUnavailable for a seal it
cannot open."""

from __future__ import annotations

import base64
import binascii
import io
import os
import stat
from typing import BinaryIO, Optional

from gitfs.repo.content_filter import FilterSource, ObjectId
from gitfs.repo.errors import ContentUnavailable

HEADER = b"sealed v1\n"


def seal(data: bytes) -> bytes:
    return HEADER + base64.b64encode(data) + b"\n"


class Sealed:
    """A sealed blob's content: its bytes, or None if the seal cannot be opened."""

    def __init__(self, text: bytes):
        try:
            self.data: Optional[bytes] = base64.b64decode(text[len(HEADER):].strip(), validate=True)
        except binascii.Error:
            self.data = None
        self.size = len(text) if self.data is None else len(self.data)


class OpenReader:
    def __init__(self, data: bytes):
        self.data = data

    def read(self, size: int, offset: int) -> bytes:
        return self.data[offset:offset + size]

    def close(self) -> None:
        self.data = b""


class SealCleaner:
    def __init__(self, source: FilterSource):
        self.source = source
        self.prepared: list[str] = []

    def prepare(self, paths) -> None:
        self.prepared.extend(paths)

    def clean(self, root: int, relative: str) -> Optional[tuple[bytes, os.stat_result]]:
        st = os.lstat(relative, dir_fd=root)
        if not stat.S_ISREG(st.st_mode) or self.source.attribute(relative, "filter") != "seal":
            return None
        fd = os.open(relative, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=root)
        with os.fdopen(fd, "rb") as handle:
            return seal(handle.read()), st


class SealFilter:
    active = True

    def __init__(self, source: FilterSource):
        self.source = source
        self.cleaner = SealCleaner(source)

    def pointer(self, oid: ObjectId, size: int, path: str, commit: Optional[ObjectId] = None) -> Optional[Sealed]:
        if self.source.attribute(path, "filter", commit) != "seal":
            return None
        text = self.source.blob_bytes(oid)
        return Sealed(text) if text.startswith(HEADER) else None

    def open(self, stored: Sealed, path: str) -> OpenReader:
        if stored.data is None:
            raise ContentUnavailable(f"{path}: a seal that cannot be opened")
        return OpenReader(stored.data)

    def checkout_source(self, blob_size: int, path: str, oid: ObjectId, mode: int) -> Optional[BinaryIO]:
        found = self.pointer(oid, blob_size, path)
        return io.BytesIO(found.data) if found is not None and found.data is not None else None
