"""What the git core asks of a content filter (git's clean and smudge, as Git LFS is one),
and what a filter may ask of the core.

A filter stands between what a commit holds and what a reader sees: a blob may stand
for other content (an LFS pointer names an object kept elsewhere), shown with that
content's size and bytes; a working file may be committed as something else (the
pointer of the content it holds). The core (Repository, staging, the working tree's
updates) knows a filter only by the ContentFilter and Cleaner protocols; plain git
(PLAIN_GIT, blobs are what they hold) is the default, and the mount plugs Git LFS in.

A filter knows the repository only as a FilterSource: bytes, object ids and paths,
never a pygit2 object or handle, so a filter needs to know nothing of pygit2, of
GitFS's per-thread handles or of how the core reads objects. The Repository is one
(filter_source.py). Ids are opaque to a filter: it compares them, keeps them, gives
them back, and str() of one is its hex form.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO, Optional, Protocol, TypeVar

import pygit2

ObjectId = pygit2.Oid


@dataclass(frozen=True)
class FileEntry:
    """A file (or link) of a tree or of the index, as plain values."""

    path: str  # from the root, '/'-separated
    oid: ObjectId  # its blob
    mode: int  # git's filemode (filemodes.py)


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

    def prepare(self, paths: Iterable[str]) -> None:
        """Clean what staging will ask for, before writes are frozen."""

    def clean(self, root: int, relative: str) -> Optional[tuple[bytes, os.stat_result]]:
        """The bytes to commit for the working file at relative (under the root descriptor)
        and the file's lstat it was cleaned from; None if the filter does not take the
        path (committed as it is). OSError if the file cannot be read."""


Stored = TypeVar("Stored", bound=StoredContent)


class ContentFilter(Protocol[Stored]):
    @property
    def cleaner(self) -> Cleaner: ...

    @property
    def active(self) -> bool:
        """Whether a blob may stand for other content (else sizes and bytes are the blobs')."""

    def pointer(self, oid: ObjectId, size: int, path: str, commit: Optional[ObjectId] = None) -> Optional[Stored]:
        """What the blob of `size` bytes at path (of commit) stands for, or None: itself."""

    def open(self, stored: Stored, path: str) -> ContentReader:
        """A reader of the content stored stands for; ContentUnavailable (errors.py) if it
        cannot be had now."""

    def checkout_source(self, blob_size: int, path: str, oid: ObjectId, mode: int) -> Optional[BinaryIO]:
        """The bytes to write in the working tree for the blob, if the filter has them;
        None: the blob's own bytes are written."""


class FilterSource(Protocol):
    """What a content filter may ask of the repository."""

    path: str  # the clone: its .git folder holds the filter's own files
    workdir: str  # the working tree
    branch: str
    content_filter: ContentFilter[Any]  # a filter turns itself on by setting it (sync worker, writes frozen)

    def blob_bytes(self, oid: ObjectId) -> bytes: ...

    def blob_size(self, oid: ObjectId) -> int: ...

    def attribute(self, path: str, name: str, commit: Optional[ObjectId] = None) -> Optional[str]:
        """The git attribute `name` of path (.gitattributes); given a commit, that commit's rules count too."""

    def tip_texts_named(self, name: str) -> dict[str, bytes]:
        """{path: bytes} of the files called `name` in any folder of the branch tip."""

    def changed_files(self, old_tree: Optional[ObjectId], new_tree: ObjectId) -> list[FileEntry]:
        """The entries new_tree adds or changes from old_tree (None: from nothing)."""

    def commits_to_push(self, tip: Optional[ObjectId] = None) -> Iterator[tuple[ObjectId, list[FileEntry]]]:
        """Each commit the remote lacks of the branch (or of the commit `tip`, the one a
        push sends instead), with the entries it adds or changes."""

    def index_files(self, paths: Optional[Collection[str]] = None) -> list[FileEntry]:
        """The index's entries (at `paths` only, those it has, if given)."""

    def restage(self, staged: Iterable[tuple[FileEntry, os.stat_result]]) -> None:
        """Stage each entry again with the working file's stat data (the file holds what
        its blob stands for, so status sees it unchanged without reading it)."""

    def config_value(self, key: str, file: Optional[str] = None) -> str:
        """A git config value: the clone's, or of the config-format file at `file`; "" if unset."""


class _PlainCleaner:
    def prepare(self, paths: Iterable[str]) -> None:
        return None

    def clean(self, root: int, relative: str) -> Optional[tuple[bytes, os.stat_result]]:
        return None


class PlainGit:
    """No filter: every blob is what it holds, every working file is committed as it is."""

    cleaner: Cleaner = _PlainCleaner()
    active = False

    def pointer(self, oid: ObjectId, size: int, path: str,
                commit: Optional[ObjectId] = None) -> Optional[StoredContent]:
        return None

    def open(self, stored: StoredContent, path: str) -> ContentReader:
        raise ValueError(f"{path}: plain git stores no other content")  # pointer() never names any

    def checkout_source(self, blob_size: int, path: str, oid: ObjectId, mode: int) -> Optional[BinaryIO]:
        return None


PLAIN_GIT: ContentFilter[StoredContent] = PlainGit()
