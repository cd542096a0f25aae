"""Typed errors of the LFS layer; each message is one line that names the object."""

from gitfs.repo.errors import GitCoreError


class LfsError(GitCoreError):
    pass


class UnsupportedPointer(LfsError):
    """A pointer with extensions: its content needs an external program to rebuild."""


class ObjectMissing(LfsError):
    """The object a pointer names is not in the store (or not where it was looked for)."""


class ObjectCorrupt(LfsError):
    """Bytes offered for an object do not have its size or its sha256."""
