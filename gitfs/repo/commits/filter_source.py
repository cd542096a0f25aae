"""What a content filter reads and stages through the core (content_filter.FilterSource):
bytes, object ids and paths out of pygit2's objects, so that a filter never holds one.
Repository's part."""

from __future__ import annotations

import contextlib
import inspect
import os
from collections.abc import Collection, Iterable, Iterator
from typing import Optional, cast

import pygit2

from gitfs.repo.commits.index_entry import add_with_stat
from gitfs.repo.commits.refs import BranchRefs
from gitfs.repo.compat import DeltaStatus
from gitfs.repo.content_filter import FileEntry
from gitfs.repo.errors import GitCoreError
from gitfs.repo.objects.reading import TreeReading, diff_trees, files_named

_INCLUDE_COMMIT = 1 << 4  # GIT_ATTR_CHECK_INCLUDE_COMMIT; FILE_THEN_INDEX (0) before it
# libgit2 reads a commit's .gitattributes for pygit2 1.13 and later; 1.11 (Debian 12) has
# get_attr(path, name, flags) only, and answers from the working tree's rules.
COMMIT_ATTRIBUTES = "commit" in inspect.signature(pygit2.Repository.get_attr).parameters


def _changed(diff: pygit2.Diff) -> list[FileEntry]:
    return [FileEntry(delta.new_file.path, delta.new_file.id, delta.new_file.mode)
            for delta in diff.deltas if delta.status != DeltaStatus.DELETED]


class FilterSourcing(BranchRefs, TreeReading):
    """The FilterSource of content_filter.py, on this clone."""

    def attribute(self, path: str, name: str, commit: Optional[pygit2.Oid] = None) -> Optional[str]:
        """The git attribute `name` of path: from the working tree's .gitattributes (and
        .git/info/attributes); given a commit, that commit's too where pygit2 can read them,
        so a file committed under a rule removed since keeps it. None if no rule gives it
        a value, or for a path libgit2 cannot build (no rule is known to match it)."""
        try:
            if commit is not None and COMMIT_ATTRIBUTES:
                value = self.git.get_attr(path, name, _INCLUDE_COMMIT, commit)  # type: ignore[arg-type]
            else:
                value = self.git.get_attr(path, name)
        except pygit2.GitError:
            return None
        return value if isinstance(value, str) else None  # set or unset without a value: no text to compare

    def tip_texts_named(self, name: str) -> dict[str, bytes]:
        tip = self.branch_tip()
        if tip is None:
            return {}
        texts = {}
        for path, oid in files_named(self.git, self.root_tree(tip), name).items():
            with contextlib.suppress(GitCoreError):  # a folder of that name holds no text
                texts[path] = self.blob_bytes(oid)
        return texts

    def changed_files(self, old_tree: Optional[pygit2.Oid], new_tree: pygit2.Oid) -> list[FileEntry]:
        return _changed(diff_trees(self.git, old_tree, new_tree))

    def commits_to_push(self, tip: Optional[pygit2.Oid] = None) -> Iterator[tuple[pygit2.Oid, list[FileEntry]]]:
        local = self.branch_tip() if tip is None else tip
        if local is None:
            return
        git = self.git
        for oid, _when in self.walk_commits(local, hide=self.remote_tip()):
            commit = self._commit(oid)
            parent = commit.parents[0].tree_id if commit.parents else None
            yield oid, _changed(diff_trees(git, parent, commit.tree_id))

    def index_files(self, paths: Optional[Collection[str]] = None) -> list[FileEntry]:
        index = self.index()
        entries = index if paths is None else (index[path] for path in paths if path in index)
        return [FileEntry(cast(str, entry.path), entry.id, entry.mode) for entry in entries]

    def restage(self, staged: Iterable[tuple[FileEntry, os.stat_result]]) -> None:
        index = self.index()
        for entry, st in staged:
            add_with_stat(index, entry.path, entry.oid, entry.mode, st)
        index.write()

    def config_value(self, key: str, file: Optional[str] = None) -> str:
        try:
            config = self.git.config if file is None else pygit2.Config(file)
            return str(config[key])
        except (KeyError, pygit2.GitError, ValueError):
            return ""
