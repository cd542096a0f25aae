"""Repository: one clone with a working tree, read and written through pygit2 (threading:
objects/base.py). Put together from one part per concern: objects/base.py (state, per-thread
handles, the index), commits/refs.py (the branch and the remote's tip), objects/reading.py
(trees and blobs as readers see them), commits/writing.py (staging and commits),
commits/filter_source.py (what a content filter reads of the clone)."""

from __future__ import annotations

from gitfs.repo.commits.filter_source import FilterSourcing
from gitfs.repo.commits.writing import IndexWriting
from gitfs.repo.filemodes import (
    BLOB_MODES,
    FILEMODE_BLOB,
    FILEMODE_COMMIT,
    FILEMODE_EXEC,
    FILEMODE_LINK,
    FILEMODE_TREE,
    GIT_DIR,
    KEEP_FILE,
)
from gitfs.repo.objects.reading import TreeItem
from gitfs.repo.refnames import REMOTE_NAME, branch_ref, remote_ref

__all__ = ["BLOB_MODES", "FILEMODE_BLOB", "FILEMODE_COMMIT", "FILEMODE_EXEC", "FILEMODE_LINK", "FILEMODE_TREE",
           "GIT_DIR", "KEEP_FILE", "REMOTE_NAME", "Repository", "TreeItem", "branch_ref", "remote_ref"]


class Repository(IndexWriting, FilterSourcing):
    """A clone with its working tree, on one branch (`branch`) of the remote `origin`."""
