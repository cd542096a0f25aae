"""The "accept mine" merge: replay local commits on top of the remote's tip.

History stays linear (no merge commits). Where a local commit and the remote
changed the same file in a way git cannot merge, the local version of the
whole file wins, byte for byte; where the local commit deleted it, it goes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

import pygit2

from gitfs.repo.compat import SortMode
from gitfs.repo.errors import local_write
from gitfs.repo.repository import Repository


@dataclass
class Replay:
    tip: pygit2.Oid
    conflicts: list[str] = field(default_factory=list)  # paths where the local version won


@local_write()
def replay_local_commits(repo: Repository, local: pygit2.Oid, remote: pygit2.Oid,
                         committer: pygit2.Signature) -> Replay:
    git = repo.git
    if repo.is_ancestor(remote, local):
        return Replay(local)
    if repo.is_ancestor(local, remote):
        return Replay(remote)
    walker = git.walk(local, SortMode.TOPOLOGICAL | SortMode.REVERSE)
    walker.hide(remote)
    result = Replay(remote)
    for commit in walker:
        base_tree = commit.parents[0].tree if commit.parents else cast(pygit2.Tree, git[git.TreeBuilder().write()])
        onto_tree = git[result.tip].tree
        index = git.merge_trees(base_tree, onto_tree, commit.tree)
        if index.conflicts is not None:
            result.conflicts.extend(_resolve_for_mine(index))
        tree = index.write_tree(git)
        if tree == onto_tree.id:
            continue  # the remote already has this change
        result.tip = git.create_commit(None, commit.author, committer, commit.message, tree, [result.tip])
    return result


def _resolve_for_mine(index: pygit2.Index) -> list[str]:
    """Resolve every conflict with the local ("theirs" in merge_trees) side."""
    resolved = []
    for ancestor, _remote, mine in list(index.conflicts):
        path = (mine or _remote or ancestor).path
        del index.conflicts[path]
        if mine is not None:
            index.add(pygit2.IndexEntry(path, mine.id, mine.mode))
        elif path in index:
            index.remove(path)
        resolved.append(path)
    return resolved
