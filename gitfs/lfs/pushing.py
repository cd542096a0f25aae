"""Upload before push: the remote gets every LFS object before a ref that names it.

The objects are those of the pointers that the commits about to be pushed add or
change, at filter=lfs paths. Only objects the clone's store holds are sent: a pointer
that came from the remote without its object (reported when it arrived) cannot be
sent by anyone, and must not hold back the user's own changes. If any upload fails,
nothing is pushed: UploadFailed is a RemoteError, reported like a failed push and
retried with the next cycle.
"""

from __future__ import annotations

from typing import Optional, cast

import pygit2

from gitfs.lfs.content import lfs_of
from gitfs.lfs.pointer import Pointer
from gitfs.repo.compat import DeltaStatus
from gitfs.repo.errors import RemoteError
from gitfs.repo.filemodes import FILEMODE_BLOB, FILEMODE_EXEC
from gitfs.repo.repository import Repository


class UploadFailed(RemoteError):
    """An LFS object could not be put on the remote: the push waits for it."""


def pointers_to_push(repo: Repository) -> dict[str, tuple[str, Pointer]]:
    """{oid: (a path, pointer)} of the LFS objects the local commits ahead of the remote name."""
    local = repo.branch_tip()
    lfs = lfs_of(repo)
    if local is None or lfs is None:
        return {}
    git = repo.git
    found: dict[str, tuple[str, Pointer]] = {}
    for oid, _when in repo.walk_commits(local, hide=repo.remote_tip()):
        commit = cast(pygit2.Commit, git[oid])
        parent: Optional[pygit2.Tree] = commit.parents[0].tree if commit.parents else None
        diff = parent.diff_to_tree(commit.tree) if parent is not None else commit.tree.diff_to_tree(swap=True)
        for delta in diff.deltas:
            entry = delta.new_file
            if delta.status == DeltaStatus.DELETED or entry.mode not in (FILEMODE_BLOB, FILEMODE_EXEC):
                continue
            pointer = lfs.pointer(git, entry.id, repo.blob_size(entry.id), entry.path, oid)
            if pointer is not None:
                found.setdefault(pointer.oid, (entry.path, pointer))
    return found


def upload_before_push(repo: Repository) -> int:
    """Upload the objects the push will name; the number sent. UploadFailed if one failed."""
    lfs = lfs_of(repo)
    if lfs is None:
        return 0
    wanted = [pointer for _path, pointer in pointers_to_push(repo).values() if lfs.store.has(pointer)]
    if not wanted:
        return 0
    failed = lfs.transfer.upload(wanted)
    if failed:
        oid, why = next(iter(failed.items()))
        more = f" (and {len(failed) - 1} more objects)" if len(failed) > 1 else ""
        raise UploadFailed(f"LFS upload failed for object {oid}{more}: {why}; nothing pushed")
    return len(wanted)
