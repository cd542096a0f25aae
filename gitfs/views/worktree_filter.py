"""What current/ asks of a content filter about the working tree's files (Git LFS's
answers: lfs/worktree.py). The view gets one such object; plain git is NO_FILTER."""

from __future__ import annotations

from typing import Optional, Protocol


class WorktreeFilter(Protocol):
    def takes(self, relative: str) -> bool:
        """Whether the path's content goes to the filter's store (max_size does not apply)."""

    def placeholder(self, relative: str, fd: int) -> bool:
        """Whether the open working file holds a stand-in for content that could not be
        had (an LFS pointer's text): read as EIO, never as the stand-in."""

    def shown_size(self, root_fd: int, relative: str, size: int) -> Optional[int]:
        """The content's size for a working file of `size` bytes that holds such a
        stand-in, as history/ shows it; None for any other file."""


class _NoFilter:
    def takes(self, relative: str) -> bool:
        return False

    def placeholder(self, relative: str, fd: int) -> bool:
        return False

    def shown_size(self, root_fd: int, relative: str, size: int) -> Optional[int]:
        return None


NO_FILTER: WorktreeFilter = _NoFilter()
