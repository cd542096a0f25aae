"""What the git core asks of a content filter: git's clean and smudge, as Git LFS is one.

A filter stands between what a commit holds and what a reader sees: a blob may stand
for other content (an LFS pointer names an object kept elsewhere), shown with that
content's size and bytes; a working file may be committed as something else (the
pointer of the content it holds). The core (Repository, staging, the working tree's
updates) knows a filter only by these protocols; plain git (PLAIN_GIT, blobs are what
they hold) is the default, and the mount plugs Git LFS in (lfs/content.py: LfsContent).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import BinaryIO, Optional, Protocol, TypeVar

import pygit2


class StoredContent(Protocol):
    """What a filtered blob stands for (an LFS pointer): the content's size."""

    @property
    def size(self) -> int: ...


class ContentReader(Protocol):
    """An open file's bytes, read at offsets."""

    def read(self, size: int, offset: int) -> bytes: ...
    def close(self) -> None: ...


class Cleaner(Protocol):
    """Working files in, what is committed out (sync worker only)."""

    def prepare(self, git: pygit2.Repository, workdir: str, paths: Iterable[str]) -> None:
        """Clean what staging will ask for, before writes are frozen."""

    def stage(self, git: pygit2.Repository, index: pygit2.Index, root: int, relative: str) -> bool:
        """Stage relative (under the root descriptor) as the filter commits it; False if
        the filter does not take the path (staged as it is)."""

    def cleans_to(self, git: pygit2.Repository, root: int, relative: str, blob: pygit2.Oid) -> bool:
        """Whether staging relative would stage blob (the file holds what blob stands for)."""


Stored = TypeVar("Stored", bound=StoredContent)


class ContentFilter(Protocol[Stored]):
    @property
    def cleaner(self) -> Cleaner: ...

    @property
    def active(self) -> bool:
        """Whether a blob may stand for other content (else sizes and bytes are the blobs')."""

    def pointer(self, git: pygit2.Repository, oid: pygit2.Oid, size: int, path: str,
                commit: Optional[pygit2.Oid] = None) -> Optional[Stored]:
        """What the blob of `size` bytes at path (of commit) stands for, or None: itself."""

    def open(self, stored: Stored, path: str) -> ContentReader:
        """A reader of the content stored stands for."""

    def checkout_source(self, git: pygit2.Repository, blob_size: int, path: str, oid: pygit2.Oid,
                        mode: int) -> Optional[BinaryIO]:
        """The bytes to write in the working tree for the blob, if the filter has them;
        None: the blob's own bytes are written."""


class _PlainCleaner:
    def prepare(self, git: pygit2.Repository, workdir: str, paths: Iterable[str]) -> None:
        return None

    def stage(self, git: pygit2.Repository, index: pygit2.Index, root: int, relative: str) -> bool:
        return False

    def cleans_to(self, git: pygit2.Repository, root: int, relative: str, blob: pygit2.Oid) -> bool:
        return False


class PlainGit:
    """No filter: every blob is what it holds, every working file is committed as it is."""

    cleaner: Cleaner = _PlainCleaner()
    active = False

    def pointer(self, git: pygit2.Repository, oid: pygit2.Oid, size: int, path: str,
                commit: Optional[pygit2.Oid] = None) -> Optional[StoredContent]:
        return None

    def open(self, stored: StoredContent, path: str) -> ContentReader:
        raise ValueError(f"{path}: plain git stores no other content")  # pointer() never names any

    def checkout_source(self, git: pygit2.Repository, blob_size: int, path: str, oid: pygit2.Oid,
                        mode: int) -> Optional[BinaryIO]:
        return None


PLAIN_GIT: ContentFilter[StoredContent] = PlainGit()
