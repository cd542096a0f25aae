"""The push after the server refused one: the commits not pushed since go as one
replacement commit of the branch's tree on the remote's tip.

The server then never sees a commit it refused (a file over its size limit, a secret),
so removing what it named lets everything else through. The replacement waits for its
push under a ref of its own (the remote link uploads its Git LFS objects first); the
branch keeps the refused commits until the replacement is on the remote, then takes its
place (same tree: nothing in current/ changes).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Callable

import pygit2

from gitfs.repo.errors import PushRefused
from gitfs.repo.repository import Repository
from gitfs.sync.jobs import describe_changes
from gitfs.sync.remote_link import RemoteLink
from gitfs.sync.state import SyncState

log = logging.getLogger(__name__)

# Where the replacement waits for its push; not a branch: never mounted.
REPLACEMENT_REF = "refs/gitfs/replacement"
REPLACED_NAMED = 10  # refused commits named in the replacement's message


def push_replacement(repo: Repository, state: SyncState, remote: RemoteLink,
                     signature: Callable[[], pygit2.Signature], refused: PushRefused,
                     local_tip: pygit2.Oid, remote_tip: pygit2.Oid) -> pygit2.Oid:
    """Push local_tip's tree as one commit on remote_tip, in place of the commits between
    them, and return the commit the remote now has: remote_tip itself when those commits
    change nothing (what the server refused was undone), which is then not sent."""
    if repo.root_tree(local_tip) == repo.root_tree(remote_tip):
        with state.frozen():
            repo.set_branch_tip(remote_tip, "gitfs: the changes the server refused were undone")
        # Not pushed: libgit2 sends the update even when the remote has the commit, and the
        # server's hooks run again (and may say no again).
        remote.nothing_to_push()
        log.info("nothing left to push: the changes since the refused push were undone")
        return remote_tip
    unpushed = [oid for oid, _when in repo.walk_commits(local_tip, hide=remote_tip)]
    message = replacement_message(repo.changes_between(remote_tip, local_tip), unpushed, refused.reason)
    replacement = repo.write_replacement(REPLACEMENT_REF, local_tip, remote_tip, message, signature())
    try:
        remote.push(source_ref=REPLACEMENT_REF)
        with state.frozen():  # the worker alone commits: the branch is still at local_tip
            repo.set_branch_tip(replacement, "gitfs: replaces the commits the server refused")
    finally:
        repo.drop_reference(REPLACEMENT_REF)
    log.info("pushed %s, one commit in place of %d not pushed since the server refused a push",
             str(replacement)[:10], len(unpushed))
    return replacement


def replacement_message(changes: Mapping[str, str], unpushed: Sequence[pygit2.Oid], reason: str) -> str:
    """What the replacement changes, then the commits it replaces and why."""
    named = ", ".join(str(oid)[:10] for oid in unpushed[:REPLACED_NAMED])
    if len(unpushed) > REPLACED_NAMED:
        named += f" and {len(unpushed) - REPLACED_NAMED} more"
    return (f"{describe_changes(changes)}\n\n"
            f"Replaces the {len(unpushed)} commits not pushed since the server refused a push "
            f"({reason}): {named}.\n")
