"""The index and commits: staging the working tree, committing, what changed (the sync
worker only). Repository's part."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from typing import Optional, cast

import pygit2

from gitfs.repo.commits import staging
from gitfs.repo.commits.refs import BranchRefs, branch_ref
from gitfs.repo.compat import DeltaStatus, FileStatus
from gitfs.repo.content_filter import Cleaner
from gitfs.repo.errors import local_write
from gitfs.repo.objects.reading import files_named


class IndexWriting(BranchRefs):
    """Staging the working tree into the index and committing it (the sync worker only)."""

    def is_ignored(self, relative: str) -> bool:
        return self.git.path_is_ignored(relative)

    def would_commit(self, relative: str) -> bool:
        """Whether a change at this path would be committed: tracked, or not ignored."""
        return bool(self.committable([relative]))

    def committable(self, paths: Iterable[str]) -> list[str]:
        """The paths whose changes would be committed (tracked, or not ignored)."""
        index, git = self.index(), self.git
        result = []
        for path in paths:
            relative = path.strip("/")
            try:
                if relative in index or not git.path_is_ignored(relative):
                    result.append(path)
            except pygit2.GitError:  # libgit2 cannot build the path: no rule is known to match it
                result.append(path)
        return result

    def gitignore_paths(self) -> set[str]:
        """The `.gitignore` files of the branch tip (reading.files_named)."""
        tip = self.branch_tip()
        return set(files_named(self.git, self._commit(tip).tree_id, ".gitignore")) if tip is not None else set()

    @local_write()
    def stage_paths(self, paths: Iterable[str]) -> None:
        """Make the index match the working tree at each path and below it (staging.py)."""
        index = self.index()
        with _undone_on_failure(index):
            staging.stage_paths(self.git, self.workdir, index, paths, self.skipped, self.content_filter.cleaner)

    @local_write()
    def stage_everything(self) -> None:
        """Make the index match the whole working tree, as `git add -A` would (staging.py)."""
        index = self.index()
        with _undone_on_failure(index):
            staging.stage_everything(self.git, self.workdir, index, self.skipped, self.content_filter.cleaner)

    @local_write()
    def hold_back(self, paths: Iterable[str]) -> None:
        """Put the index entries at `paths` (files) back as the branch holds them, however
        they were staged: what the working tree holds there is not committed (staging.py)."""
        tip = self.branch_tip()
        staging.hold_back(self.git, self.index(), self.root_tree(tip) if tip is not None else None, sorted(paths))

    @local_write()
    def staged_changes(self) -> dict[str, str]:
        """What committing the index would change, file by file: {path: "Created",
        "Update" or "Deleted"} (a tree-to-tree diff: unchanged folders are skipped)."""
        git = self.git
        tree = cast(pygit2.Tree, git[self.index().write_tree()])
        parent = self.branch_tip()
        diff = tree.diff_to_tree(swap=True) if parent is None else self._commit(parent).tree.diff_to_tree(tree)
        return _named_changes(diff)

    @local_write()
    def changes_between(self, old: pygit2.Oid, new: pygit2.Oid) -> dict[str, str]:
        """What commit `new` changes against commit `old`, file by file, as staged_changes."""
        return _named_changes(self._commit(old).tree.diff_to_tree(self._commit(new).tree))

    @local_write()
    def write_replacement(self, ref: str, replaced_tip: pygit2.Oid, parent: pygit2.Oid, message: str,
                          signature: pygit2.Signature) -> pygit2.Oid:
        """One commit on `parent` with replaced_tip's tree, kept under `ref` (not the branch)."""
        oid = self.git.create_commit(None, signature, signature, message, self.root_tree(replaced_tip), [parent])
        self.git.references.create(ref, oid, force=True)
        return oid

    def keep_reference(self, ref: str, oid: pygit2.Oid) -> None:
        """`ref` (not the branch) names the commit `oid`: a commit to push that is not the branch's."""
        self.git.references.create(ref, oid, force=True)

    def drop_reference(self, ref: str) -> None:
        with contextlib.suppress(KeyError, pygit2.GitError):
            self.git.references.delete(ref)

    @local_write()
    def prepare_staging(self, paths: Iterable[str]) -> None:
        """Work staging can do before writes are frozen: LFS files hashed into the store."""
        self.content_filter.cleaner.prepare(paths)

    @local_write()
    def commit_index(self, message: str, signature: pygit2.Signature) -> Optional[pygit2.Oid]:
        """Commit the index on the branch; None when it equals the tip's tree."""
        git = self.git
        tree = self.index().write_tree()
        parent = self.branch_tip()
        if parent is not None and git[parent].tree.id == tree:
            return None
        parents = [parent] if parent is not None else []
        oid = git.create_commit(branch_ref(self.branch), signature, signature, message, tree, parents)
        self._branch_moved(parent, oid)
        return oid

    @local_write()
    def changed_paths(self) -> list[str]:
        """Working-tree paths that differ from the branch tip (ignored files excluded)."""
        git = self.git
        self.index()  # repairs a corrupt index first: status reads it
        paths: list[str] = []
        content_only: list[str] = []  # changed in the working tree alone: an LFS file may hold its pointer's content
        for path, flags in git.status(untracked_files="all").items():
            if flags & FileStatus.IGNORED or staging.is_git_dir_path(path):
                continue
            (content_only if flags == FileStatus.WT_MODIFIED else paths).append(path)
        cleaner = self.content_filter.cleaner
        if not self.content_filter.active or not content_only:
            return sorted(paths + content_only)
        index = self.index()
        root = os.open(self.workdir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            paths += [path for path in content_only
                      if path not in index or not _cleans_to(cleaner, root, path, index[path].id)]
        finally:
            os.close(root)
        return sorted(paths)


def _cleans_to(cleaner: Cleaner, root: int, relative: str, blob: pygit2.Oid) -> bool:
    """Whether staging relative would stage blob: a file the content filter takes that
    holds what that blob stands for (git's status, which compares bytes, calls it modified)."""
    try:
        cleaned = cleaner.clean(root, relative)
    except (FileNotFoundError, NotADirectoryError):
        return False
    return cleaned is not None and pygit2.hash(cleaned[0]) == blob


@contextlib.contextmanager
def _undone_on_failure(index: pygit2.Index) -> Iterator[None]:
    """Staging that fails half-way (a full disk) must leave nothing half-done in memory:
    this thread's index object is kept, and index() reloads it only when the file on
    disk changed. A cleared index left in memory was once committed as "delete all"."""
    try:
        yield
    except BaseException:
        index.read(True)  # back to what the index file holds
        raise


def _named_changes(diff: pygit2.Diff) -> dict[str, str]:
    changes = {}
    for delta in diff.deltas:
        if delta.status == DeltaStatus.DELETED:
            changes[delta.old_file.path] = "Deleted"
        else:
            changes[delta.new_file.path] = "Created" if delta.status == DeltaStatus.ADDED else "Update"
    return changes
