"""LFS files in the working tree: their content, never their pointer, wherever it can be had.

libgit2 checks a clone out with the pointers' text. At mount, `check_out_tip` downloads
the objects of the index's pointers and puts each object's content where the working
tree holds its pointer's text (and nowhere else: a file the user changed is left
alone), staging the pointer again with the new file's stat data so that status sees it
clean. When the remote's changes are applied, `prefetch` has downloaded their objects
beforehand (outside the freeze of writes) and LfsContent.checkout_source gives
apply_changes the content to write. When LFS turns on while mounted, `adopt` does what
check_out_tip does, without network in the freeze. A file whose object cannot be had
keeps the pointer's text and waits (placeholders.py).
"""

from __future__ import annotations

import contextlib
import logging
import os
from typing import Callable, Optional

from gitfs.lfs.content import LfsContent, lfs_of
from gitfs.lfs.placeholders import fetch_objects, fill_placeholders, holds_text
from gitfs.lfs.pointer import Pointer
from gitfs.repo import beneath
from gitfs.repo.content_filter import FileEntry, FilterSource, ObjectId
from gitfs.repo.filemodes import FILEMODE_BLOB, FILEMODE_EXEC

log = logging.getLogger(__name__)


def prefetch(repo: FilterSource, old_tree: Optional[ObjectId], new_tree: ObjectId) -> None:
    """Download the objects of the LFS files that differ from old_tree in new_tree."""
    lfs = lfs_of(repo)
    if lfs is None:
        return
    wanted = []
    for entry in repo.changed_files(old_tree, new_tree):
        if entry.mode not in (FILEMODE_BLOB, FILEMODE_EXEC):
            continue
        found = lfs.pointer(entry.oid, repo.blob_size(entry.oid), entry.path)
        if found is not None and not lfs.unsupported(found):
            wanted.append((entry.path, found))
    fetch_objects(lfs, wanted)


def _index_pointers(repo: FilterSource, lfs: LfsContent) -> list[tuple[FileEntry, Pointer]]:
    """(index entry, pointer) of the index's LFS pointers that GitFS can read; those it
    cannot are reported (their files keep the pointer's text: EIO in current/)."""
    pointers = []
    for entry in repo.index_files():
        if entry.mode not in (FILEMODE_BLOB, FILEMODE_EXEC):
            continue
        found = lfs.pointer(entry.oid, repo.blob_size(entry.oid), entry.path)
        if found is None:
            continue
        why = lfs.unsupported(found)
        if why is not None:
            lfs.missing(entry.path, found, why)
        else:
            pointers.append((entry, found))
    return pointers


def adopt(repo: FilterSource, lfs: LfsContent,
          frozen: Callable[[], contextlib.AbstractContextManager[object]]) -> list[str]:
    """Git LFS turned on while mounted (a first filter=lfs rule arrived): the working files
    that hold a pointer's text get their object's content. The objects are downloaded
    first (network, no freeze); LFS is on for readers and staging from the freeze that
    puts the content in, so that no reader ever sees such a file as a placeholder (EIO).
    The paths changed."""
    root = os.open(repo.workdir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for entry, found in _index_pointers(repo, lfs):
            text = repo.blob_bytes(entry.oid)
            if holds_text(root, entry.path, text):
                lfs.left_as_pointer(entry.path, found, text)
    finally:
        os.close(root)
    waiting = lfs.placeholders()
    if waiting:
        fetch_objects(lfs, list(waiting.items()))
    return fill_placeholders(repo, frozen, turning_on=lfs)


def check_out_tip(repo: FilterSource) -> None:
    """Put the objects' content where the working tree holds their pointers' text."""
    lfs = lfs_of(repo)
    if lfs is None:
        return
    pointers = _index_pointers(repo, lfs)
    if not pointers:
        return
    fetch_objects(lfs, [(entry.path, found) for entry, found in pointers])
    root = os.open(repo.workdir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    written: list[tuple[FileEntry, os.stat_result]] = []
    try:
        for entry, found in pointers:
            text = repo.blob_bytes(entry.oid)
            if not holds_text(root, entry.path, text):
                continue
            if lfs.store.has(found):
                written.append((entry, _replace(root, entry.path, lfs, found, entry.mode)))
            else:
                lfs.left_as_pointer(entry.path, found, text)
    finally:
        os.close(root)
    if written:
        repo.restage(written)
        log.info("Git LFS: %d files of the working tree hold their content now", len(written))


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
