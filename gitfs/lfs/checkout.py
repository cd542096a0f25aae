"""LFS files in the working tree: their content, never their pointer, wherever it can be had.

libgit2 checks a clone out with the pointers' text. At mount, `check_out_tip` downloads
the objects of the index's pointers and puts each object's content where the working
tree holds its pointer's text (and nowhere else: a file the user changed is left
alone), staging the pointer again with the new file's stat data so that status sees it
clean. When the remote's changes are applied, `prefetch` has downloaded their objects
beforehand (outside the freeze of writes) and `open_object` gives apply_changes the
content to write.

An object that cannot be had is reported (LfsContent.missing) and its file keeps the
pointer's text, which staging commits as that same pointer: never as a deletion or a
change.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable
from typing import BinaryIO, Optional, cast

import pygit2

from gitfs.lfs import attributes, pointer
from gitfs.lfs.content import LfsContent
from gitfs.lfs.errors import LfsError, UnsupportedPointer
from gitfs.lfs.index_entry import add_with_stat
from gitfs.lfs.pointer import Pointer
from gitfs.repo.compat import DeltaStatus
from gitfs.repo.filemodes import FILEMODE_BLOB, FILEMODE_EXEC
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
    for oid, why in failed.items():
        path, found = lacking[oid]
        lfs.missing(path, found, why)


def prefetch(repo: Repository, old_tree: Optional[pygit2.Oid], new_tree: pygit2.Oid) -> None:
    """Download the objects of the LFS files that differ from old_tree in new_tree."""
    lfs = repo.lfs
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
        found = repo.lfs_pointer(entry.id, repo.blob_size(entry.id), entry.path)
        if found is not None and not lfs.unsupported(found):
            wanted.append((entry.path, found))
    fetch_objects(lfs, wanted)


def open_object(repo: Repository, path: str, oid: pygit2.Oid, mode: int) -> Optional[BinaryIO]:
    """The content to write at path for the blob oid, if it is an LFS pointer whose object
    is in the store; None otherwise (the blob's own bytes are written)."""
    lfs = repo.lfs
    if lfs is None or mode not in (FILEMODE_BLOB, FILEMODE_EXEC):
        return None
    found = repo.lfs_pointer(oid, repo.blob_size(oid), path)
    if found is None or lfs.unsupported(found) or not lfs.store.has(found):
        return None
    try:
        return lfs.store.open(found)
    except LfsError:
        return None


def check_out_tip(repo: Repository) -> None:
    """Put the objects' content where the working tree holds their pointers' text."""
    lfs = repo.lfs
    if lfs is None:
        return
    index = repo.index()
    git = repo.git
    pointers = []
    for entry in index:
        if entry.mode not in (FILEMODE_BLOB, FILEMODE_EXEC):
            continue
        found = repo.lfs_pointer(entry.id, repo.blob_size(entry.id), entry.path)
        if found is None:
            continue
        why = lfs.unsupported(found)
        if why is not None:
            lfs.missing(entry.path, found, why)  # its file keeps the pointer's text: EIO in current/
        else:
            pointers.append((entry.path, entry.id, entry.mode, found))
    if not pointers:
        return
    fetch_objects(lfs, [(path, found) for path, _oid, _mode, found in pointers])
    root = os.open(repo.workdir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    written = 0
    try:
        for path, oid, mode, found in pointers:
            if lfs.store.has(found) and _holds(root, path, cast(pygit2.Blob, git[oid]).data):
                _replace(repo.workdir, path, lfs, found, mode)
                add_with_stat(index, path, oid, mode, os.lstat(path, dir_fd=root))
                written += 1
    finally:
        os.close(root)
    index.write()
    if written:
        log.info("Git LFS: %d files of the working tree hold their content now", written)


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
        st = os.lstat(path, dir_fd=root)
        if not stat.S_ISREG(st.st_mode) or st.st_size != len(text):
            return False
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=root)
    except (FileNotFoundError, NotADirectoryError):
        return False
    with os.fdopen(fd, "rb") as handle:
        return handle.read(len(text) + 1) == text


def _replace(workdir: str, path: str, lfs: LfsContent, found: Pointer, mode: int) -> None:
    """Write the object's content at path: a new file renamed over the old one."""
    full = os.path.join(workdir, path)
    fd, temporary = tempfile.mkstemp(prefix=".gitfs-", dir=os.path.dirname(full))
    try:
        with os.fdopen(fd, "wb") as out, lfs.store.open(found) as source:
            shutil.copyfileobj(source, out, 1 << 20)
        os.chmod(temporary, 0o755 if mode == FILEMODE_EXEC else 0o644)
        os.replace(temporary, full)
    except BaseException:
        if os.path.lexists(temporary):
            os.unlink(temporary)
        raise
