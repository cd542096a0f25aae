"""Moving LFS objects between the clone's store and the remote's.

A Transfer downloads objects into the clone's store and uploads them from it, and
says, per object, why one could not be moved. It may block (a network, a big copy):
callers never run one inside SyncState.frozen(), nor in a FUSE call beyond a bounded
wait. Path and file:// remotes are served by StandaloneTransfer (the remote's own
lfs/ folder, no server).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Callable, Protocol

from gitfs.lfs.errors import LfsError
from gitfs.lfs.pointer import Pointer
from gitfs.lfs.store import ObjectStore


class Transfer(Protocol):
    def download(self, pointers: Sequence[Pointer]) -> dict[str, str]:
        """Bring the objects into the clone's store; {oid: why} of those that are not there."""
        ...

    def upload(self, pointers: Sequence[Pointer]) -> dict[str, str]:
        """Put the objects of the clone's store on the remote; {oid: why} of those that failed."""
        ...


class StandaloneTransfer:
    """A path or file:// remote: objects are copied to and from its own store."""

    def __init__(self, local: ObjectStore, remote: ObjectStore):
        self.local = local
        self.remote = remote

    def download(self, pointers: Sequence[Pointer]) -> dict[str, str]:
        return _copy_each(self.remote, self.local, pointers)

    def upload(self, pointers: Sequence[Pointer]) -> dict[str, str]:
        return _copy_each(self.local, self.remote, pointers)


def _copy_each(source: ObjectStore, target: ObjectStore, pointers: Sequence[Pointer]) -> dict[str, str]:
    """Copy each object from one store to the other; {oid: why} of those that failed."""
    failed = {}
    for pointer in pointers:
        try:
            source.copy_to(target, pointer)
        except (LfsError, OSError) as error:
            failed[pointer.oid] = _why(error)
    return failed


class NoTransfer:
    """A remote GitFS cannot reach LFS objects on (yet): every object is missing."""

    def __init__(self, why: str):
        self.why = why

    def download(self, pointers: Sequence[Pointer]) -> dict[str, str]:
        return {pointer.oid: self.why for pointer in pointers}

    def upload(self, pointers: Sequence[Pointer]) -> dict[str, str]:
        return {pointer.oid: self.why for pointer in pointers}


def _why(error: Exception) -> str:
    if isinstance(error, OSError) and error.strerror:
        return f"{error.strerror} ({error.filename})" if error.filename else error.strerror
    return str(error)


class CountingTransfer:
    """A Transfer that reports what it moved: (direction, objects, bytes) after each call."""

    def __init__(self, transfer: Transfer, report: Callable[[str, int, int], None]):
        self.transfer = transfer
        self.report = report

    def download(self, pointers: Sequence[Pointer]) -> dict[str, str]:
        return self._counted("download", self.transfer.download(pointers), pointers)

    def upload(self, pointers: Sequence[Pointer]) -> dict[str, str]:
        return self._counted("upload", self.transfer.upload(pointers), pointers)

    def _counted(self, direction: str, failed: dict[str, str], pointers: Sequence[Pointer]) -> dict[str, str]:
        moved = {pointer.oid: pointer.size for pointer in pointers if pointer.oid not in failed}
        if moved:
            self.report(direction, len(moved), sum(moved.values()))
        return failed
