"""The branch moved, the remote's tip recorded, and the commits between them (Repository's part)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Optional

import pygit2

from gitfs.repo.commits import commit_walk
from gitfs.repo.compat import SortMode
from gitfs.repo.errors import local_write
from gitfs.repo.objects.base import CloneBase
from gitfs.repo.refnames import branch_ref, remote_ref


class BranchRefs(CloneBase):
    """Moving the branch (its watchers told), recording the remote's tip, walking commits."""

    @local_write()
    def set_branch_tip(self, oid: pygit2.Oid, message: str) -> None:
        old = self.branch_tip()
        self.git.create_reference(branch_ref(self.branch), oid, force=True, message=message)
        self._branch_moved(old, oid)

    def _branch_moved(self, old: Optional[pygit2.Oid], new: pygit2.Oid) -> None:
        self.branch_moves += 1
        if self.on_branch_moved is not None and old != new:
            self.on_branch_moved(old, new)

    def set_remote_tip(self, oid: pygit2.Oid) -> None:
        self.git.references.create(remote_ref(self.branch), oid, force=True)

    def is_ancestor(self, ancestor: pygit2.Oid, descendant: pygit2.Oid) -> bool:
        return ancestor == descendant or self.git.descendant_of(descendant, ancestor)

    def count_ahead(self) -> int:
        """Commits on the local branch that the remote-tracking branch lacks."""
        local, remote = self.branch_tip(), self.remote_tip()
        if local is None:
            return 0
        if remote is None:
            return sum(1 for _ in self.git.walk(local))
        ahead, _behind = self.git.ahead_behind(local, remote)
        return ahead

    # -- reading commits and trees ---------------------------------------

    def commit_time(self, oid: pygit2.Oid) -> int:
        return self._commit(oid).commit_time

    def walk_commits(self, tip: pygit2.Oid, hide: Optional[pygit2.Oid] = None) -> Iterator[tuple[pygit2.Oid, int]]:
        """(oid, committer time) of every commit reachable from tip and not from hide, newest
        first; commits made in the same second come children first."""
        if hide is None:
            yield from commit_walk.newest_first(self.walk_handle(), tip)
            return
        # A few new commits: libgit2's walk stops where hide's history begins.
        walker = self.git.walk(tip, SortMode.TOPOLOGICAL | SortMode.TIME)
        walker.hide(hide)
        for commit in walker:
            yield commit.id, commit.commit_time

    def walk_handle(self) -> pygit2.Repository:
        """A pygit2 handle of its own, for a walk of a long history: the objects libgit2
        keeps parsed for the walk go with the handle, not into a thread's for good. (The
        pack's delta bases are shared by every handle in the process: release_caches.)"""
        return pygit2.Repository(self.path)

    def root_tree(self, commit_oid: pygit2.Oid) -> pygit2.Oid:
        return self._commit(commit_oid).tree_id
