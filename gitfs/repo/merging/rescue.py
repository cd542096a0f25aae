"""Rescue branches: the local history as it was when the remote's branch was rewritten.

When the remote's branch no longer contains what this clone last saw of it (a
force-push, a branch deleted and made again), the sync replays the local work on
the new branch; the local history as it was before is kept on a branch of the
clone, `gitfs-rescue-YYYYMMDD-HHMMSS` (local time), in case the replay is not what
the user wants. The branches themselves are the record: a later mount lists them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Optional, cast

import pygit2

from gitfs.repo.errors import local_write
from gitfs.repo.repository import Repository, branch_ref

PREFIX = "gitfs-rescue-"
TIME_FORMAT = "%Y%m%d-%H%M%S"


@dataclass(frozen=True)
class Rescue:
    branch: str  # the branch in the clone that keeps the local history
    saved: pygit2.Oid  # the local tip it keeps
    timestamp: float  # when it was saved (Unix time)


@local_write()
def save_local_history(repo: Repository, local_tip: pygit2.Oid, timestamp: Optional[float] = None) -> Rescue:
    """Keep local_tip on a new rescue branch named after the time."""
    timestamp = time.time() if timestamp is None else timestamp
    name = PREFIX + time.strftime(TIME_FORMAT, time.localtime(timestamp))
    while branch_ref(name) in repo.git.references:  # two rewrites in one second
        name += "-1"
    repo.git.create_reference(branch_ref(name), local_tip)
    return Rescue(name, local_tip, timestamp)


def saved_histories(repo: Repository) -> list[Rescue]:
    """The clone's rescue branches, oldest first (earlier mounts' too)."""
    found = []
    branches = repo.git.branches.local  # pygit2 1.11 (Debian 12) has no References.iterator
    for name in branches:
        if not name.startswith(PREFIX):
            continue
        stamp = name[len(PREFIX):len(PREFIX) + len("YYYYMMDD-HHMMSS")]
        try:
            timestamp = time.mktime(time.strptime(stamp, TIME_FORMAT))
        except ValueError:
            continue  # a branch someone named like ours: not one GitFS made
        found.append(Rescue(name, cast(pygit2.Oid, branches[name].target), timestamp))  # a branch: an Oid
    return sorted(found, key=lambda rescue: (rescue.timestamp, rescue.branch))
