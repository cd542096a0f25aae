"""Every version of a file: the commits of the branch's first-parent line that added or
changed it, for MOUNTPOINT/.gitfs/versions/PATH/.

The first-parent line is read once (commit, tree, time per commit, oldest first, in
flat buffers: 48 bytes a commit, no Python object per commit) and extended when the
branch moves forward: only the new commits are read. It is read again from the tip
only if the branch was rewritten. The versions of a path are found
by one pass over that line, comparing the path's entry in each commit's tree with the
one before; a folder whose tree oid did not change is not opened, so each commit costs
one lookup in its root tree. Each path's result is kept in an LRU (at most `cache_size`
paths) and extended, like the line, by the new commits only.

Renames are not followed: a file's versions are those under its present path; a path
that was deleted and added again lists the versions from both lives.

Thread-safe: one lock around the line and the LRU (FUSE threads ask, any of them may
extend). A few new commits are read on the calling thread's pygit2 handle
(Repository.git); a pass over 10,000 commits or more on a handle of its own.
"""

from __future__ import annotations

import threading
from array import array
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Optional

import pygit2

from gitfs.repo.commit_walk import first_parent_line
from gitfs.repo.days import ID_BYTES, day_and_name
from gitfs.repo.libgit2 import release_free_memory
from gitfs.repo.repository import BLOB_MODES, Repository

CACHE_SIZE = 256
LONG_WALK = 10_000  # commits of the line from which a path's pass takes a handle of its own
NAME_PREFIX_BYTES = 5  # a version's name ends in the first 10 hex digits of its commit id
OBJECT_TREE, OBJECT_BLOB = 2, 3  # git_object_t, as pygit2's Object.type gives it (an int in every release)


def version_name(commit_hex: str, commit_time: int) -> str:
    """YYYY-MM-DD_HH-MM-SS-<10 hex>: the commit's day and folder name in history/, joined by `_`."""
    day, name = day_and_name(commit_hex, commit_time)
    return f"{day}_{name}"


@dataclass(frozen=True)
class Version:
    name: str  # version_name(): sorts oldest first
    commit: pygit2.Oid
    commit_time: int
    oid: pygit2.Oid  # the blob
    mode: int  # git filemode: FILEMODE_BLOB, FILEMODE_EXEC or FILEMODE_LINK


@dataclass
class _PathIndex:
    """The versions of one path up to the first `upto` commits of the line, oldest first,
    in flat buffers (~37 bytes a version: a file changed in most of a million commits
    does not make a Python object per version; the versions are made when asked)."""

    upto: int = 0
    positions: array = field(default_factory=lambda: array("q"))  # each version's commit, as a place in the line
    blobs: bytearray = field(default_factory=bytearray)  # each version's blob id, ID_BYTES each
    modes: array = field(default_factory=lambda: array("l"))  # each version's git filemode
    prefixes: bytearray = field(default_factory=bytearray)  # the start of each commit id (NAME_PREFIX_BYTES)
    last: Optional[tuple[pygit2.Oid, int]] = None  # (oid, mode) at the last commit read; None: no file there
    trail: list[Optional[pygit2.Oid]] = field(default_factory=list)  # tree oids down the path at that commit

    def __len__(self) -> int:
        return len(self.positions)


class _Line:
    """The first-parent line, oldest first: raw commit ids, raw root tree ids (ID_BYTES
    each) and commit times, in flat buffers."""

    __slots__ = ("commits", "trees", "times")

    def __init__(self, commits: bytes = b"", trees: bytes = b"", times: Optional[array] = None):
        # bytes, not bytearray: pygit2.Oid takes a slice of bytes without a copy first
        self.commits = commits
        self.trees = trees
        self.times = array("q") if times is None else times

    def __len__(self) -> int:
        return len(self.times)

    def extend(self, newest_first: _Line) -> None:
        """Append commits read newest first (a walk's order)."""
        self.commits += _reversed_ids(newest_first.commits)
        self.trees += _reversed_ids(newest_first.trees)
        self.times.extend(reversed(newest_first.times))

    def commit(self, index: int) -> pygit2.Oid:
        return pygit2.Oid(raw=self.commits[index * ID_BYTES:(index + 1) * ID_BYTES])

    def tree(self, index: int) -> pygit2.Oid:
        return pygit2.Oid(raw=self.trees[index * ID_BYTES:(index + 1) * ID_BYTES])


def _reversed_ids(ids: bytes) -> bytes:
    return b"".join(ids[at:at + ID_BYTES] for at in range(len(ids) - ID_BYTES, -1, -ID_BYTES))


class FileVersions:
    def __init__(self, repo: Repository, *, cache_size: int = CACHE_SIZE):
        self.repo = repo
        self.cache_size = cache_size
        self._lock = threading.Lock()
        self._tip: Optional[pygit2.Oid] = None
        self._line = _Line()
        self._paths: OrderedDict[str, _PathIndex] = OrderedDict()
        self.commits_read = 0  # commits of the line read so far (a figure for tests and benchmarks)

    def versions(self, path: str) -> list[Version]:
        """The versions of path ("a/b.txt") on the branch, oldest first; [] if none."""
        with self._lock:
            index = self._index(path)
            return [self._version(index, number) for number in range(len(index))] if index is not None else []

    def version(self, path: str, name: str) -> Optional[Version]:
        """One version of path by its name, or None."""
        try:
            prefix = bytes.fromhex(name[-2 * NAME_PREFIX_BYTES:])
        except ValueError:
            return None
        with self._lock:
            index = self._index(path)
            if index is None:
                return None
            at = index.prefixes.find(prefix)
            while at != -1:
                if at % NAME_PREFIX_BYTES == 0:
                    version = self._version(index, at // NAME_PREFIX_BYTES)
                    if version.name == name:
                        return version
                at = index.prefixes.find(prefix, at + 1)
            return None

    def span(self, path: str) -> Optional[tuple[int, int]]:
        """Commit times of path's oldest and newest versions, or None without versions."""
        with self._lock:
            index = self._index(path)
            if not index:
                return None
            return self._line.times[index.positions[0]], self._line.times[index.positions[-1]]

    def _version(self, index: _PathIndex, number: int) -> Version:
        position = index.positions[number]
        commit, when = self._line.commit(position), self._line.times[position]
        blob = pygit2.Oid(raw=bytes(index.blobs[number * ID_BYTES:(number + 1) * ID_BYTES]))
        return Version(version_name(str(commit), when), commit, when, blob, index.modes[number])

    def _index(self, path: str) -> Optional[_PathIndex]:
        """The path's index, up to date with the branch (caller holds the lock)."""
        parts = [part for part in path.split("/") if part]
        if not parts:
            return None
        walked = self._refresh()  # commits read, of the line and then of the path's trees
        key = "/".join(parts)
        index = self._paths.pop(key, None)
        if index is None:
            index = _PathIndex()
        self._paths[key] = index  # the newest in the LRU
        while len(self._paths) > self.cache_size:
            self._paths.popitem(last=False)
        if index.upto < len(self._line):
            walked += len(self._line) - index.upto
            self._extend(index, parts)
        if walked:
            release_free_memory()
        return index

    def cached_paths(self) -> int:
        """How many paths the LRU holds (at most cache_size)."""
        with self._lock:
            return len(self._paths)

    # -- the first-parent line -------------------------------------------------------

    def _refresh(self) -> int:
        """Brings the line up to the branch; how many commits it read."""
        tip = self.repo.branch_tip()
        if tip == self._tip:
            return 0
        if tip is None:
            self._line, self._paths, self._tip = _Line(), OrderedDict(), None
            return 0
        new, rewritten = self._read_line(tip, self._tip)
        if rewritten:  # the new commits are the whole line
            self._paths.clear()
            self._line = _Line()
        self._line.extend(new)
        self._tip = tip
        return len(new)

    def _read_line(self, tip: pygit2.Oid, known: Optional[pygit2.Oid]) -> tuple[_Line, bool]:
        """The commits after `known` on tip's first-parent line, newest first, and whether
        `known` is not on that line (moved back or rewritten): the commits are then the
        whole line."""
        commits, trees, times = bytearray(), bytearray(), array("q")
        last = None
        # The whole line on a handle of its own (Repository.walk_handle); a few new commits on this thread's.
        git = self.repo.walk_handle() if known is None else self.repo.git
        for commit in first_parent_line(git, tip, known):
            commits += commit.id.raw
            trees += commit.tree_id.raw
            times.append(commit.commit_time)
            last = commit
        new = _Line(bytes(commits), bytes(trees), times)
        self.commits_read += len(new)
        if known is None:
            return new, False
        met = last is None or (bool(last.parent_ids) and last.parent_ids[0] == known)
        return new, not met

    # -- one path ----------------------------------------------------------------------

    def _extend(self, index: _PathIndex, parts: list[str]) -> None:
        line = self._line
        git = self.repo.walk_handle() if len(line) - index.upto >= LONG_WALK else self.repo.git
        depth = len(parts)
        trail = index.trail or [None] * depth  # trail[d]: the tree searched for parts[d]
        last = index.last
        for at in range(index.upto, len(line)):
            current: Optional[pygit2.Oid] = line.tree(at)
            found: Optional[tuple[pygit2.Oid, int]] = None
            for level in range(depth):
                if current == trail[level]:  # same tree as at the commit before: same answer
                    found = last
                    break
                trail[level] = current
                for below in range(level + 1, depth):
                    trail[below] = None
                try:
                    entry = git[current][parts[level]]  # type: ignore[index]
                except KeyError:
                    break
                # The object type first: pygit2 makes an enum of each filemode read (~4 µs,
                # more than the rest of a commit's lookup), so a commit reads at most one.
                if level == depth - 1:
                    if entry.type == OBJECT_BLOB:
                        mode = entry.filemode
                        if mode in BLOB_MODES:
                            found = (entry.id, mode)
                elif entry.type == OBJECT_TREE:  # a tree entry's mode is always FILEMODE_TREE
                    current = entry.id
                    continue
                break
            if found is not None and found != last:
                index.positions.append(at)
                index.blobs += found[0].raw
                index.modes.append(found[1])
                index.prefixes += line.commits[at * ID_BYTES:at * ID_BYTES + NAME_PREFIX_BYTES]
            last = found
        index.upto = len(self._line)
        index.last = last
        index.trail = trail

