"""Git LFS's answers to current/ about working files (views/worktree_filter.py), asked
of the repository's LFS content as it is at each call: LFS may turn on while mounted."""

from __future__ import annotations

from typing import Optional

from gitfs.lfs import attributes, placeholders
from gitfs.lfs.content import lfs_of
from gitfs.repo.content_filter import FilterSource


class LfsWorktree:
    def __init__(self, repo: FilterSource):
        self.repo = repo

    def takes(self, relative: str) -> bool:
        """A filter=lfs path, with Git LFS on: its content goes to the LFS store."""
        return lfs_of(self.repo) is not None and attributes.is_lfs_path(self.repo, relative)

    def placeholder(self, relative: str, fd: int) -> bool:
        """The open file holds an LFS pointer's text (its object could not be had)."""
        return lfs_of(self.repo) is not None and placeholders.holds_pointer(self.repo, relative, fd)

    def shown_size(self, root_fd: int, relative: str, size: int) -> Optional[int]:
        return placeholders.shown_size(lfs_of(self.repo), root_fd, relative, size)
