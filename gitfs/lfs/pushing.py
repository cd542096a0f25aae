"""Upload before push: the remote gets every LFS object before a ref that names it.

The objects are those of the pointers that the commits about to be pushed add or
change, at filter=lfs paths. Only objects the clone's store holds are sent: a pointer
that came from the remote without its object (reported when it arrived) cannot be
sent by anyone, and must not hold back the user's own changes. If any upload fails,
nothing is pushed: UploadFailed is a RemoteError, reported like a failed push and
retried with the next cycle.
"""

from __future__ import annotations

from typing import Optional

from gitfs.lfs.content import lfs_of
from gitfs.lfs.pointer import Pointer
from gitfs.repo.content_filter import FilterSource, ObjectId
from gitfs.repo.errors import RemoteError
from gitfs.repo.filemodes import FILEMODE_BLOB, FILEMODE_EXEC


class UploadFailed(RemoteError):
    """An LFS object could not be put on the remote: the push waits for it."""


def pointers_to_push(repo: FilterSource, tip: Optional[ObjectId] = None) -> dict[str, tuple[str, Pointer]]:
    """{oid: (a path, pointer)} of the LFS objects the local commits ahead of the remote name
    (those of `tip` and its parents, if given: the commit a push sends in the branch's place)."""
    lfs = lfs_of(repo)
    if lfs is None:
        return {}
    found: dict[str, tuple[str, Pointer]] = {}
    for commit, changed in repo.commits_to_push(tip):
        for entry in changed:
            if entry.mode not in (FILEMODE_BLOB, FILEMODE_EXEC):
                continue
            pointer = lfs.pointer(entry.oid, repo.blob_size(entry.oid), entry.path, commit)
            if pointer is not None:
                found.setdefault(pointer.oid, (entry.path, pointer))
    return found


def upload_before_push(repo: FilterSource, tip: Optional[ObjectId] = None) -> int:
    """Upload the objects the push of the branch (or of the commit `tip`) will name; the
    number sent. UploadFailed if one failed. A push that replaces refused commits sends
    only its own commit: what the refused ones named and it does not is never sent."""
    lfs = lfs_of(repo)
    if lfs is None:
        return 0
    wanted = [pointer for _path, pointer in pointers_to_push(repo, tip).values() if lfs.store.has(pointer)]
    if not wanted:
        return 0
    failed = lfs.transfer.upload(wanted)
    if failed:
        oid, why = next(iter(failed.items()))
        more = f" (and {len(failed) - 1} more objects)" if len(failed) > 1 else ""
        raise UploadFailed(f"LFS upload failed for object {oid}{more}: {why}; nothing pushed")
    return len(wanted)
