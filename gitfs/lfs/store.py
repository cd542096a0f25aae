"""An LFS object store in git-lfs's layout: objects/OID[0:2]/OID[2:4]/OID below a folder.

A clone's store is its .git/lfs (so `git lfs` commands run in the clone agree with
GitFS); a path or file:// remote's is lfs/ in the remote's git directory, where
git-lfs's standalone transfer keeps them, with no server.

An object enters only through a temporary file in tmp/ that is renamed into place
once its size and sha256 are known (and, for bytes that name an object already,
checked): a reader never sees part of an object, and a crash leaves at most a
temporary file. Bytes are copied in chunks and hashed as they pass, so a 4 GB file
never sits in memory.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import tempfile
import urllib.parse
from typing import BinaryIO, Optional

from gitfs.lfs.errors import ObjectCorrupt, ObjectMissing
from gitfs.lfs.pointer import Pointer

CHUNK = 1 << 20
OBJECT_MODE = 0o644  # readable by whoever may read the repository, as git-lfs leaves them
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def is_local(url: str) -> bool:
    """Whether url names a repository on this machine: a path or a file:// URL, not a
    network URL nor scp-like host:path."""
    return url.startswith("file://") or not (_SCHEME.match(url) or ":" in url.split("/", 1)[0])


class ObjectStore:
    def __init__(self, root: str):
        self.root = root  # the folder that holds objects/ and tmp/

    @classmethod
    def of_clone(cls, git_dir: str) -> ObjectStore:
        return cls(os.path.join(git_dir, "lfs"))

    def path(self, oid: str) -> str:
        """Where the object lives (whether or not it is there); oid is checked by Pointer."""
        return os.path.join(self.root, "objects", oid[0:2], oid[2:4], oid)

    def has(self, pointer: Pointer) -> bool:
        try:
            st = os.stat(self.path(pointer.oid))
        except (FileNotFoundError, NotADirectoryError):
            return False
        return stat.S_ISREG(st.st_mode) and st.st_size == pointer.size

    def open(self, pointer: Pointer) -> BinaryIO:
        """The object's bytes, for reading: ObjectMissing if it is not here, ObjectCorrupt
        if what is here has another size."""
        try:
            handle = open(self.path(pointer.oid), "rb")  # the caller closes it
        except (FileNotFoundError, NotADirectoryError):
            raise ObjectMissing(f"LFS object {pointer.oid} is not in {self.root}") from None
        size = os.fstat(handle.fileno()).st_size
        if size != pointer.size:
            handle.close()
            raise ObjectCorrupt(f"LFS object {pointer.oid} in {self.root} has {size} bytes, not {pointer.size}")
        return handle

    def add(self, source: BinaryIO) -> Pointer:
        """Copy source (read to its end) into the store; the pointer that names it."""
        return self._copy_in(source, None)

    def add_checked(self, source: BinaryIO, pointer: Pointer) -> None:
        """Copy source into the store as the object pointer names: ObjectCorrupt, and
        nothing stored, if its bytes are not that object's."""
        self._copy_in(source, pointer)

    def copy_to(self, other: ObjectStore, pointer: Pointer) -> None:
        """Copy an object of this store into another (a no-op if it is there already)."""
        if other.has(pointer):
            return
        with self.open(pointer) as source:
            other.add_checked(source, pointer)

    def copy_out(self, pointer: Pointer, mode: int) -> str:
        """A new file in tmp/ (on the clone's file system) with the object's bytes and the
        given mode, for the caller to rename into the working tree: nothing half-copied
        ever shows there."""
        tmp_dir = os.path.join(self.root, "tmp")
        os.makedirs(tmp_dir, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=tmp_dir)
        try:
            with os.fdopen(fd, "wb") as out, self.open(pointer) as source:
                shutil.copyfileobj(source, out, CHUNK)
                os.fchmod(out.fileno(), mode)
        except BaseException:
            os.unlink(temporary)
            raise
        return temporary

    def _copy_in(self, source: BinaryIO, expected: Optional[Pointer]) -> Pointer:
        tmp_dir = os.path.join(self.root, "tmp")
        os.makedirs(tmp_dir, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=tmp_dir)
        try:
            digest = hashlib.sha256()
            size = 0
            with os.fdopen(fd, "wb") as out:
                while True:
                    chunk = source.read(CHUNK)
                    if not chunk:
                        break
                    size += len(chunk)
                    if expected is not None and size > expected.size:
                        raise ObjectCorrupt(f"LFS object {expected.oid}: more than its {expected.size} bytes")
                    digest.update(chunk)
                    out.write(chunk)
                out.flush()
                os.fchmod(out.fileno(), OBJECT_MODE)
                os.fsync(out.fileno())  # a commit may name it next: it must outlive a crash
            pointer = Pointer(digest.hexdigest(), size)
            if expected is not None and pointer != expected:
                raise ObjectCorrupt(f"LFS object {expected.oid}: the bytes offered are {size} bytes "
                                    f"with sha256 {pointer.oid}")
            self._place(temporary, pointer)
            return pointer
        finally:
            if os.path.lexists(temporary):
                os.unlink(temporary)

    def _place(self, temporary: str, pointer: Pointer) -> None:
        if self.has(pointer):
            return  # the same bytes are there already
        final = self.path(pointer.oid)
        os.makedirs(os.path.dirname(final), exist_ok=True)
        os.replace(temporary, final)


def standalone_store(url: str) -> Optional[ObjectStore]:
    """The object store of a path or file:// remote (lfs/ in its git directory), None
    for a remote reached over the network (ssh, scp-like, http...)."""
    if not is_local(url):
        return None
    path = urllib.parse.unquote(urllib.parse.urlsplit(url).path) if url.startswith("file://") else url
    path = os.path.abspath(path)
    git_dir = os.path.join(path, ".git")
    return ObjectStore.of_clone(git_dir if os.path.isdir(git_dir) else path)
