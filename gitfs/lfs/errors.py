"""Typed errors of the LFS layer; each message is one line that names the object."""

from gitfs.repo.errors import ContentUnavailable, GitCoreError


class LfsError(GitCoreError):
    pass


class UnsupportedPointer(LfsError):
    """A pointer with extensions: its content needs an external program to rebuild.
    `pointer` is what it names (the object the extensions' output was stored as)."""

    def __init__(self, message: str, pointer: object = None):
        super().__init__(message)
        self.pointer = pointer


class ObjectMissing(LfsError, ContentUnavailable):
    """The object a pointer names is not in the store (or not where it was looked for)."""


class ObjectCorrupt(LfsError):
    """Bytes offered for an object do not have its size or its sha256."""


class ObjectPending(LfsError, ContentUnavailable):
    """The object is still being downloaded; it may be there at the next try."""
