"""LFS files of the working tree left holding their pointer's text: waiting for objects.

An object that cannot be had is reported (LfsContent.missing) and its file keeps the
pointer's text, which staging commits as that same pointer: never as a deletion or a
change. Such a file is remembered (LfsContent.left_as_pointer): each round of the fetch
worker tries its object again (`download_placeholders`, network, no freeze), and once it
is here the sync cycle puts the content in (`fill_placeholders`: the copy is made
beforehand, under the freeze only a rename over a file that still holds the pointer's
text, and the pointer staged again with the new file's stat data). Meanwhile current/
shows such a file with its object's size (`shown_size`) and reads it as EIO
(`holds_pointer`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Callable, Optional

from gitfs.lfs import attributes, pointer
from gitfs.lfs.content import LfsContent, lfs_of
from gitfs.lfs.errors import LfsError, UnsupportedPointer
from gitfs.lfs.pointer import Pointer
from gitfs.repo import beneath
from gitfs.repo.content_filter import FileEntry, FilterSource
from gitfs.repo.filemodes import FILEMODE_EXEC

log = logging.getLogger(__name__)


def fetch_objects(lfs: LfsContent, wanted: Iterable[tuple[str, Pointer]]) -> None:
    """Download the objects the store lacks; report each that could not be had."""
    lacking: dict[str, tuple[str, Pointer]] = {}
    for path, found in wanted:
        if not lfs.store.has(found):
            lacking.setdefault(found.oid, (path, found))
    if not lacking:
        return
    failed = lfs.transfer.download([found for _path, found in lacking.values()])
    for oid, (path, found) in lacking.items():
        if oid in failed:
            lfs.missing(path, found, failed[oid])
        else:
            lfs.arrived(found)


def download_placeholders(repo: FilterSource) -> bool:
    """Try again the objects of the working files left holding their pointer's text;
    whether any of them is here now, for fill_placeholders (network: never in the freeze)."""
    lfs = lfs_of(repo)
    if lfs is None:
        return False
    waiting = lfs.placeholders()
    if not waiting:
        return False
    fetch_objects(lfs, list(waiting.items()))
    return any(lfs.store.has(found) for found in waiting.values())


def shown_size(lfs: Optional[LfsContent], root_fd: int, relative: str, size: int) -> Optional[int]:
    """The size current/ shows for a working file of `size` bytes that holds its pointer's
    text (its object could not be had, its reads are EIO): the object's, as in history/.
    None for any other file (most calls: one dict lookup)."""
    if lfs is None:
        return None
    known = lfs.placeholder(relative)
    if known is None or size != len(known[1]):
        return None
    try:
        fd = beneath.open_beneath(root_fd, relative, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        held = os.pread(fd, size + 1, 0)
    finally:
        os.close(fd)
    return known[0].size if held == known[1] else None


def placeholders_waiting(repo: FilterSource) -> int:
    """How many working files hold their pointer's text for an object not here yet."""
    lfs = lfs_of(repo)
    return 0 if lfs is None else sum(not lfs.store.has(found) for found in lfs.placeholders().values())


@dataclass(frozen=True)
class _Filling:
    entry: FileEntry  # the index's entry for the path: the pointer's blob
    content: str  # the object's bytes in a file of the store's tmp/, renamed over the working file


def fill_placeholders(repo: FilterSource, frozen: Callable[[], contextlib.AbstractContextManager[object]], *,
                      turning_on: Optional[LfsContent] = None) -> list[str]:
    """Put the content in where a working file holds the pointer's text of an object that
    is here now; the paths changed. Copies are made first; only the renames run in
    frozen() (writes held), each over a file that still holds the pointer's text, which
    is then staged as that same pointer: no change to commit (sync worker only).
    `turning_on`: the LfsContent that becomes the repository's in that freeze (adopt)."""
    lfs = turning_on or lfs_of(repo)
    if lfs is None:
        return []
    fillings = _copies(repo, lfs)
    if not fillings:
        if turning_on is not None:
            with frozen():
                repo.content_filter = turning_on
        return []
    filled: list[str] = []
    try:
        with frozen():
            if turning_on is not None:
                repo.content_filter = turning_on
            staged = {entry.path: entry for entry in repo.index_files([filling.entry.path for filling in fillings])}
            restaged: list[tuple[FileEntry, os.stat_result]] = []
            root = os.open(repo.workdir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                for filling in fillings:
                    path = filling.entry.path
                    lfs.placeholder_done(path)
                    if staged.get(path) != filling.entry \
                            or not holds_text(root, path, repo.blob_bytes(filling.entry.oid)):
                        continue  # changed meanwhile: what is there now is the user's
                    try:
                        with beneath.parent(root, path) as (folder, name):
                            os.replace(filling.content, name, dst_dir_fd=folder)
                            restaged.append((filling.entry, os.lstat(name, dir_fd=folder)))
                    except OSError as error:  # its folder replaced by a link meanwhile...: left as it is
                        log.warning("Git LFS: cannot put the content of %s in: %s", path, error)
                        continue
                    filled.append(path)
            finally:
                os.close(root)
            if restaged:
                repo.restage(restaged)
    finally:
        for filling in fillings:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(filling.content)
    if filled:
        log.info("Git LFS: %s hold their content now", ", ".join(filled))
    return filled


def _copies(repo: FilterSource, lfs: LfsContent) -> list[_Filling]:
    """The object's bytes, ready to be renamed in, for each placeholder whose object is here."""
    placeholders = lfs.placeholders()
    if not placeholders:
        return []  # the common case, every cycle: no index read
    staged = {entry.path: entry for entry in repo.index_files(list(placeholders))}
    fillings = []
    for path, found in placeholders.items():
        if not lfs.store.has(found):
            continue
        entry = staged.get(path)
        if entry is None or lfs.pointer(entry.oid, repo.blob_size(entry.oid), path) != found:
            lfs.placeholder_done(path)  # no longer that pointer's file
            continue
        try:
            content = lfs.store.copy_out(found, 0o755 if entry.mode == FILEMODE_EXEC else 0o644)
        except (OSError, LfsError) as error:  # a full disk, a damaged object: tried again at the next mount
            log.warning("Git LFS: cannot copy the object of %s (%s): %s", path, found.oid, error)
            lfs.placeholder_done(path)
            continue
        fillings.append(_Filling(entry, content))
    return fillings


def holds_pointer(source: FilterSource, relative: str, fd: int) -> bool:
    """Whether the open working file at relative, a filter=lfs path, holds a pointer's text
    (its object could not be had when it was checked out)."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or not pointer.could_be_pointer(st.st_size):
        return False
    if not attributes.is_lfs_path(source, relative):
        return False
    data = os.pread(fd, pointer.MAX_BYTES + 1, 0)
    try:
        return pointer.parse(data) is not None
    except UnsupportedPointer:
        return True


def holds_text(root: int, path: str, text: bytes) -> bool:
    """Whether the working file at path is a regular file whose bytes are text."""
    try:
        st = beneath.lstat(root, path)
        if not stat.S_ISREG(st.st_mode) or st.st_size != len(text):
            return False
        fd = beneath.open_beneath(root, path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:  # gone, or a link on the way: not the pointer's file
        return False
    with os.fdopen(fd, "rb") as handle:
        return handle.read(len(text) + 1) == text
