"""LFS files in the working tree: their content, never their pointer, wherever it can be had.

libgit2 checks a clone out with the pointers' text. At mount, `check_out_tip` downloads
the objects of the index's pointers and puts each object's content where the working
tree holds its pointer's text (and nowhere else: a file the user changed is left
alone), staging the pointer again with the new file's stat data so that status sees it
clean. When the remote's changes are applied, `prefetch` has downloaded their objects
beforehand (outside the freeze of writes) and LfsContent.checkout_source gives
apply_changes the content to write.

An object that cannot be had is reported (LfsContent.missing) and its file keeps the
pointer's text, which staging commits as that same pointer: never as a deletion or a
change. Such a file is remembered (LfsContent.left_as_pointer): each round of the fetch
worker tries its object again (`download_placeholders`, network, no freeze), and once it
is here the sync cycle puts the content in (`fill_placeholders`: the copy is made
beforehand, under the freeze only a rename over a file that still holds the pointer's
text, and the pointer staged again with the new file's stat data).
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Callable, Optional, cast

import pygit2

from gitfs.lfs import attributes, pointer
from gitfs.lfs.content import LfsContent, lfs_of
from gitfs.lfs.errors import LfsError, UnsupportedPointer
from gitfs.lfs.pointer import Pointer
from gitfs.repo import beneath
from gitfs.repo.compat import DeltaStatus
from gitfs.repo.filemodes import FILEMODE_BLOB, FILEMODE_EXEC
from gitfs.repo.index_entry import add_with_stat
from gitfs.repo.repository import Repository

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


def prefetch(repo: Repository, old_tree: Optional[pygit2.Oid], new_tree: pygit2.Oid) -> None:
    """Download the objects of the LFS files that differ from old_tree in new_tree."""
    lfs = lfs_of(repo)
    if lfs is None:
        return
    git = repo.git
    new = cast(pygit2.Tree, git[new_tree])
    diff = cast(pygit2.Tree, git[old_tree]).diff_to_tree(new) if old_tree is not None else new.diff_to_tree(swap=True)
    wanted = []
    for delta in diff.deltas:
        entry = delta.new_file
        if delta.status == DeltaStatus.DELETED or entry.mode not in (FILEMODE_BLOB, FILEMODE_EXEC):
            continue
        found = lfs.pointer(git, entry.id, repo.blob_size(entry.id), entry.path)
        if found is not None and not lfs.unsupported(found):
            wanted.append((entry.path, found))
    fetch_objects(lfs, wanted)


def _index_pointers(repo: Repository, lfs: LfsContent,
                    index: pygit2.Index) -> list[tuple[str, pygit2.Oid, int, Pointer]]:
    """(path, blob, mode, pointer) of the index's LFS pointers that GitFS can read;
    those it cannot are reported (their files keep the pointer's text: EIO in current/)."""
    pointers = []
    for entry in index:
        if entry.mode not in (FILEMODE_BLOB, FILEMODE_EXEC):
            continue
        found = lfs.pointer(repo.git, entry.id, repo.blob_size(entry.id), entry.path)
        if found is None:
            continue
        why = lfs.unsupported(found)
        if why is not None:
            lfs.missing(entry.path, found, why)
        else:
            pointers.append((entry.path, entry.id, entry.mode, found))
    return pointers


def adopt(repo: Repository, lfs: LfsContent,
          frozen: Callable[[], contextlib.AbstractContextManager[object]]) -> list[str]:
    """Git LFS turned on while mounted (a first filter=lfs rule arrived): the working files
    that hold a pointer's text get their object's content. The objects are downloaded
    first (network, no freeze); LFS is on for readers and staging from the freeze that
    puts the content in, so that no reader ever sees such a file as a placeholder (EIO).
    The paths changed."""
    git = repo.git
    root = os.open(repo.workdir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for path, oid, _mode, found in _index_pointers(repo, lfs, repo.index()):
            text = cast(pygit2.Blob, git[oid]).data
            if _holds(root, path, text):
                lfs.left_as_pointer(path, found, text)
    finally:
        os.close(root)
    waiting = lfs.placeholders()
    if waiting:
        fetch_objects(lfs, list(waiting.items()))
    return fill_placeholders(repo, frozen, turning_on=lfs)


def check_out_tip(repo: Repository) -> None:
    """Put the objects' content where the working tree holds their pointers' text."""
    lfs = lfs_of(repo)
    if lfs is None:
        return
    index = repo.index()
    git = repo.git
    pointers = _index_pointers(repo, lfs, index)
    if not pointers:
        return
    fetch_objects(lfs, [(path, found) for path, _oid, _mode, found in pointers])
    root = os.open(repo.workdir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    written = 0
    try:
        for path, oid, mode, found in pointers:
            text = cast(pygit2.Blob, git[oid]).data
            if not _holds(root, path, text):
                continue
            if lfs.store.has(found):
                add_with_stat(index, path, oid, mode, _replace(root, path, lfs, found, mode))
                written += 1
            else:
                lfs.left_as_pointer(path, found, text)
    finally:
        os.close(root)
    index.write()
    if written:
        log.info("Git LFS: %d files of the working tree hold their content now", written)


def download_placeholders(repo: Repository) -> bool:
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


def placeholders_waiting(repo: Repository) -> int:
    """How many working files hold their pointer's text for an object not here yet."""
    lfs = lfs_of(repo)
    return 0 if lfs is None else sum(not lfs.store.has(found) for found in lfs.placeholders().values())


@dataclass(frozen=True)
class _Filling:
    path: str
    blob: pygit2.Oid  # the pointer's blob: the index's entry for path
    mode: int
    content: str  # the object's bytes in a file of the store's tmp/, renamed over the working file


def fill_placeholders(repo: Repository, frozen: Callable[[], contextlib.AbstractContextManager[object]], *,
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
                repo.lfs = turning_on
        return []
    filled: list[str] = []
    try:
        with frozen():
            if turning_on is not None:
                repo.lfs = turning_on
            index = repo.index()
            git = repo.git
            root = os.open(repo.workdir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                for filling in fillings:
                    lfs.placeholder_done(filling.path)
                    entry = index[filling.path] if filling.path in index else None
                    if entry is None or entry.id != filling.blob or entry.mode != filling.mode \
                            or not _holds(root, filling.path, cast(pygit2.Blob, git[filling.blob]).data):
                        continue  # changed meanwhile: what is there now is the user's
                    try:
                        with beneath.parent(root, filling.path) as (folder, name):
                            os.replace(filling.content, name, dst_dir_fd=folder)
                            st = os.lstat(name, dir_fd=folder)
                    except OSError as error:  # its folder replaced by a link meanwhile...: left as it is
                        log.warning("Git LFS: cannot put the content of %s in: %s", filling.path, error)
                        continue
                    add_with_stat(index, filling.path, filling.blob, filling.mode, st)
                    filled.append(filling.path)
            finally:
                os.close(root)
            index.write()
    finally:
        for filling in fillings:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(filling.content)
    if filled:
        log.info("Git LFS: %s hold their content now", ", ".join(filled))
    return filled


def _copies(repo: Repository, lfs: LfsContent) -> list[_Filling]:
    """The object's bytes, ready to be renamed in, for each placeholder whose object is here."""
    placeholders = lfs.placeholders()
    if not placeholders:
        return []  # the common case, every cycle: no index read
    index = repo.index()
    fillings = []
    for path, found in placeholders.items():
        if not lfs.store.has(found):
            continue
        entry = index[path] if path in index else None
        if entry is None or lfs.pointer(repo.git, entry.id, repo.blob_size(entry.id), path) != found:
            lfs.placeholder_done(path)  # no longer that pointer's file
            continue
        try:
            content = lfs.store.copy_out(found, 0o755 if entry.mode == FILEMODE_EXEC else 0o644)
        except (OSError, LfsError) as error:  # a full disk, a damaged object: tried again at the next mount
            log.warning("Git LFS: cannot copy the object of %s (%s): %s", path, found.oid, error)
            lfs.placeholder_done(path)
            continue
        fillings.append(_Filling(path, entry.id, entry.mode, content))
    return fillings


def holds_pointer(git: pygit2.Repository, relative: str, fd: int) -> bool:
    """Whether the open working file at relative, a filter=lfs path, holds a pointer's text
    (its object could not be had when it was checked out)."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or not pointer.could_be_pointer(st.st_size):
        return False
    if not attributes.is_lfs_path(git, relative):
        return False
    data = os.pread(fd, pointer.MAX_BYTES + 1, 0)
    try:
        return pointer.parse(data) is not None
    except UnsupportedPointer:
        return True


def _holds(root: int, path: str, text: bytes) -> bool:
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


def _replace(root: int, path: str, lfs: LfsContent, found: Pointer, mode: int) -> os.stat_result:
    """Put the object's content at path (under the root descriptor, never through a link):
    a copy made in the store's tmp/, renamed over the file. The new file's stat data."""
    content = lfs.store.copy_out(found, 0o755 if mode == FILEMODE_EXEC else 0o644)
    try:
        with beneath.parent(root, path) as (folder, name):
            os.replace(content, name, dst_dir_fd=folder)
            return os.lstat(name, dir_fd=folder)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(content)
        raise
