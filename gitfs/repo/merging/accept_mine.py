"""The "accept mine" merge: replay local commits on top of the remote's tip.

History stays linear (no merge commits). libgit2 merges each replayed commit's tree
with the remote's (merge_trees: different lines of one file, `merge=union`); a text file
it calls a conflict is merged again line by line (line_merge.py): both sides' insertions
at one point are kept, and only the lines both sides changed take the local version.
What is never merged line by line keeps the local version whole, byte for byte: binary
files, a path whose `merge` attribute is unset (`-merge`) or names another driver
(`merge=binary`, `merge=lfs`), a symlink, a file both sides added, and a file one side
deleted (where the local commit deleted it, it goes).

A replayed commit that kept local lines or files against the remote's says so in its
message's body, naming each file and the remote commit that changed it, so that the
whole team sees it in history/ and `git log`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Optional, cast

import pygit2

from gitfs.repo.compat import SortMode, tree_entry
from gitfs.repo.errors import local_write
from gitfs.repo.filemodes import FILEMODE_BLOB, FILEMODE_EXEC
from gitfs.repo.merging.line_merge import merge_lines
from gitfs.repo.repository import Repository

log = logging.getLogger(__name__)

LINE_MERGED_DRIVERS = (None, True, "text")  # the `merge` attribute's values git merges as text
AUTHOR_SEARCH_LIMIT = 1000  # remote commits looked through for the one that changed a file


@dataclass
class Replay:
    tip: pygit2.Oid
    conflicts: list[str] = field(default_factory=list)  # paths where (some of) the local version won
    merged: list[str] = field(default_factory=list)  # paths whose both sides' lines were kept whole


@dataclass(frozen=True)
class _Resolved:
    path: str
    whole_file: bool  # the local version won whole, not only in the lines both changed
    deleted: bool = False  # the local commit deleted it


@local_write()
def replay_local_commits(repo: Repository, local: pygit2.Oid, remote: pygit2.Oid,
                         committer: pygit2.Signature, on_remote: Optional[pygit2.Oid] = None) -> Replay:
    """`on_remote`: a local commit whose changes (and its parents') the remote has already,
    replayed and pushed while the branch could not move: only the commits after it are
    replayed (replayed again, its own lines would be merged in twice)."""
    git = repo.git
    if repo.is_ancestor(remote, local):
        return Replay(local)
    if repo.is_ancestor(local, remote):
        return Replay(remote)
    walker = git.walk(local, SortMode.TOPOLOGICAL | SortMode.REVERSE)
    walker.hide(remote)
    if on_remote is not None:
        walker.hide(on_remote)
    result = Replay(remote)
    for commit in walker:
        base_tree = commit.parents[0].tree if commit.parents else cast(pygit2.Tree, git[git.TreeBuilder().write()])
        onto_tree = git[result.tip].tree
        index = git.merge_trees(base_tree, onto_tree, commit.tree)
        message = commit.message
        if index.conflicts is not None:
            resolved, merged = _resolve_for_mine(git, index)
            result.conflicts.extend(item.path for item in resolved)
            result.merged.extend(merged)
            if resolved:
                message = _with_resolutions(message, resolved,
                                            _last_changes(git, remote, local, [item.path for item in resolved]))
        tree = index.write_tree(git)
        if tree == onto_tree.id:
            continue  # the remote already has this change
        result.tip = git.create_commit(None, commit.author, committer, message, tree, [result.tip])
    return result


def _resolve_for_mine(git: pygit2.Repository, index: pygit2.Index) -> tuple[list[_Resolved], list[str]]:
    """Resolve every conflict of merge_trees(base, remote, local): line by line where
    line_merge allows, else with the local ("theirs" to merge_trees) side whole.
    (the paths where the local version won something, the paths merged without loss)."""
    resolved: list[_Resolved] = []
    merged: list[str] = []
    for ancestor, remote, mine in list(index.conflicts):
        path = (mine or remote or ancestor).path
        del index.conflicts[path]
        if mine is None:
            if path in index:
                index.remove(path)
            resolved.append(_Resolved(path, whole_file=True, deleted=True))
            continue
        merge = _merge_text(git, path, ancestor, remote, mine) if ancestor is not None and remote is not None else None
        if merge is None:
            index.add(pygit2.IndexEntry(path, mine.id, mine.mode))
            resolved.append(_Resolved(path, whole_file=True))
            continue
        content, conflicting = merge
        index.add(pygit2.IndexEntry(path, git.create_blob(content), mine.mode))
        if conflicting:
            resolved.append(_Resolved(path, whole_file=False))
        else:
            merged.append(path)
    return resolved, merged


def _merge_text(git: pygit2.Repository, path: str, ancestor: pygit2.IndexEntry, remote: pygit2.IndexEntry,
                mine: pygit2.IndexEntry) -> Optional[tuple[bytes, int]]:
    """(the merged bytes, the regions where the local lines won), or None to keep mine whole."""
    text_modes = (FILEMODE_BLOB, FILEMODE_EXEC)
    if not all(entry.mode in text_modes for entry in (ancestor, remote, mine)):
        return None
    if git.get_attr(path, "merge") not in LINE_MERGED_DRIVERS:
        return None
    merged = merge_lines(*(cast(pygit2.Blob, git[entry.id]).data for entry in (ancestor, remote, mine)))
    if merged is None:
        return None
    return merged.content, merged.conflicts


def _last_changes(git: pygit2.Repository, remote: pygit2.Oid, local: pygit2.Oid,
                  paths: list[str]) -> dict[str, pygit2.Commit]:
    """For each path, the newest of the remote's new commits that changed it (the
    colleague's commit a resolution names): one walk, at most AUTHOR_SEARCH_LIMIT commits;
    the remote's tip for a path not found in them."""
    found: dict[str, pygit2.Commit] = {}
    walker = git.walk(remote, SortMode.TOPOLOGICAL)
    walker.hide(local)
    for count, commit in enumerate(walker):
        if count >= AUTHOR_SEARCH_LIMIT or len(found) == len(paths):
            break
        parent = commit.parents[0].tree if commit.parents else None
        for path in paths:
            if path not in found and _entry_id(commit.tree, path) != (
                    _entry_id(parent, path) if parent is not None else None):
                found[path] = commit
    tip = cast(pygit2.Commit, git[remote])
    return {path: found.get(path, tip) for path in paths}


def _entry_id(tree: pygit2.Tree, path: str) -> Optional[pygit2.Oid]:
    try:
        return tree_entry(tree, path).id
    except KeyError:
        return None


def _with_resolutions(message: str, resolved: list[_Resolved], changed_by: dict[str, pygit2.Commit]) -> str:
    lines = ["Conflicts with a colleague's changes, resolved with this version:"]
    for item in resolved:
        what = "deleted here" if item.deleted else "the whole file" if item.whole_file else "the lines both changed"
        commit = changed_by[item.path]
        lines.append(f"  {item.path} ({what}) against {str(commit.id)[:10]} by {commit.author.name}")
    return message.rstrip("\n") + "\n\n" + "\n".join(lines) + "\n"
