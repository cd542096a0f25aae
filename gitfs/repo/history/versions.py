"""Every version of a file: the commits of the branch's first-parent line that added or
changed it, for MOUNTPOINT/.gitfs/versions/PATH/.

A path's versions are found by one walk down the first-parent line from the tip, as
`git log -- PATH` does: each commit is read, and the path's entry in its tree compared
with the one in its parent's; a folder whose tree oid did not change is not opened, so
each commit costs one lookup in its root tree. Nothing is kept per commit of the
history, only per version (60 bytes: commit id, time, blob id, mode, size, in flat buffers),
so a file changed once costs the same on a history of a thousand or a million commits.
Each path's result is kept in an LRU (at most `cache_size` paths and KEPT_VERSIONS
versions in all) with the tip it was read at; when the branch moves forward, the walk
reads the new commits only, down to that tip. The whole line is read again only if the
branch was rewritten (the walk reaches the root without meeting that tip). An idle
mount lets go of the LRU (release()).

A walk reads on a pygit2 handle of its own, cleared every CLEAR_EVERY commits: libgit2
caches each tree it parses up to a limit that counts raw object bytes (4 MiB, global),
while a parsed small tree takes ~1.5 kB of heap, so a walk over 300,000 small trees
left ~80 MB in a handle's cache; and the heap's freed pages go back to the system as it
goes (release_free_memory). libgit2 shares a pack, and the cache of delta bases it keeps
with it (up to 16 MiB of raw bases, ~40 MB of heap for small trees), between every handle
that has it open: while the daemon's other handles held the pack, the walk's clearings never
closed it, and a walk of 300,000 commits grew the heap by ~39 MB. So every LONG_WALK
commits a walk has every other handle let go (Repository.release_caches, as an idle mount
does): then each clearing of its own handle closes the pack, and its delta bases with it,
until another thread opens a handle again (the fetch worker does every fetch_timeout).
A long walk lets every handle go again when it ends.

Renames are not followed: a file's versions are those under its present path; a path
that was deleted and added again lists the versions from both lives.

Thread-safe: one lock around the LRU and the walks (FUSE threads ask, any of them may
extend). A listing (VersionList) is a snapshot: a later walk appends to the buffers it
reads from, or replaces them, never changes what it holds.
"""

from __future__ import annotations

import bisect
import threading
import time
from array import array
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Callable, Optional

import pygit2

from gitfs.repo.commits.commit_walk import first_parent_line
from gitfs.repo.history.days import ID_BYTES, SHA_LENGTH, TWO_DIGITS, day_and_name, day_start
from gitfs.repo.libgit2 import release_free_memory
from gitfs.repo.repository import BLOB_MODES, Repository

CACHE_SIZE = 256  # paths kept
KEPT_VERSIONS = 1_000_000  # versions kept in all paths' indexes (~60 MB); the newest path is always kept
LONG_WALK = 10_000  # commits from which a walk has every handle's caches let go when it ends
CLEAR_EVERY = 1_000  # commits a walk reads between two clearings of its handle's object cache
TRIM_EVERY = 5_000  # commits a walk reads between two release_free_memory calls (20,000: peak +4 MB)
NAME_PREFIX_BYTES = SHA_LENGTH // 2  # a version's name ends in the first 10 hex digits of its commit id
PREFIX_TABLE_FROM = 4096  # versions from which a look-up by name searches a sorted table, not the ids
NUMBER_BITS = 24  # the table's low bits: a version's number (an index of more versions is scanned)
NUMBER_MASK = (1 << NUMBER_BITS) - 1
MEASURE_CHUNK = 8192  # versions whose sizes are measured in one batch (its lists: ~1 MB)
OBJECT_TREE, OBJECT_BLOB = 2, 3  # git_object_t, as pygit2's Object.type gives it (an int in every release)

Entry = tuple[pygit2.Oid, int]  # (blob oid, git filemode) of the path at one commit


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


class _PathIndex:
    """The versions of one path on the line down from `tip`, oldest first, in flat buffers."""

    __slots__ = ("tip", "commits", "times", "blobs", "modes", "sizes", "last", "trail", "_by_prefix")

    def __init__(self) -> None:
        self.tip: Optional[pygit2.Oid] = None  # the branch tip these versions were read at
        self.commits = bytearray()  # each version's commit id, ID_BYTES each
        self.times = array("q")  # each version's commit time
        self.blobs = bytearray()  # each version's blob id, ID_BYTES each
        self.modes = array("L")  # each version's git filemode
        self.sizes = array("q")  # each version's size as a reader sees it, once a listing asked; -1 before
        self.last: Optional[Entry] = None  # the path's entry at tip; None: no file there
        self.trail: list[Optional[pygit2.Oid]] = []  # tree oids down the path at tip
        # Each version's name prefix (the commit id's first NAME_PREFIX_BYTES) and number, as
        # `prefix << NUMBER_BITS | number`, sorted: made at the first look-up by name of a long index.
        self._by_prefix: Optional[array] = None

    def __len__(self) -> int:
        return len(self.times)

    def numbers_named(self, prefix: bytes) -> Iterator[int]:
        """The numbers of the versions whose commit id starts with prefix (NAME_PREFIX_BYTES).

        A LOOKUP of each name of a listing the kernel forgot (memory pressure, drop_caches)
        comes once per version: a scan of the ids each time made that quadratic (10 minutes
        for 300,000 versions). A long index is searched in a sorted table instead (8 bytes a
        version, kept with the index from its first such look-up)."""
        count = len(self)
        if count < PREFIX_TABLE_FROM or count > NUMBER_MASK:
            at = self.commits.find(prefix)
            while at != -1:
                if at % ID_BYTES == 0:
                    yield at // ID_BYTES
                at = self.commits.find(prefix, at + 1)
            return
        table = self._by_prefix
        if table is None or len(table) != count:
            commits = self.commits
            table = self._by_prefix = array("Q", sorted(
                int.from_bytes(commits[number * ID_BYTES:number * ID_BYTES + NAME_PREFIX_BYTES], "big") << NUMBER_BITS
                | number for number in range(count)))
        key = int.from_bytes(prefix, "big")
        at = bisect.bisect_left(table, key << NUMBER_BITS)
        while at < count and table[at] >> NUMBER_BITS == key:
            yield table[at] & NUMBER_MASK
            at += 1

    def add(self, found: _Found) -> None:
        """Append versions found by a walk (newest first)."""
        self.commits += _reversed_ids(found.commits)
        self.times.extend(reversed(found.times))
        self.blobs += _reversed_ids(found.blobs)
        self.modes.extend(reversed(found.modes))
        self.sizes.extend(array("q", [-1]) * len(found.modes))


class _Found:
    """What one walk found, newest first (the walk's order)."""

    __slots__ = ("commits", "times", "blobs", "modes", "met")

    def __init__(self) -> None:
        self.commits, self.times, self.blobs, self.modes = bytearray(), array("q"), bytearray(), array("L")
        self.met = False  # the walk ended at the tip it was given (else at the line's root)

    def add(self, commit: pygit2.Oid, when: int, entry: Entry) -> None:
        self.commits += commit.raw
        self.times.append(when)
        self.blobs += entry[0].raw
        self.modes.append(entry[1])


def _reversed_ids(ids: bytearray) -> bytearray:
    """Ids in the reverse order, copied into one buffer (no object per id on the way)."""
    out = bytearray(len(ids))
    last = len(ids) - ID_BYTES
    for at in range(0, len(ids), ID_BYTES):
        out[last - at:last - at + ID_BYTES] = ids[at:at + ID_BYTES]
    return out


class VersionList:
    """The versions of one path as a listing sees them, oldest first: names and entries made
    when asked, from the index's buffers (a snapshot of their first `count` versions)."""

    __slots__ = ("_index", "_count", "_stamps")

    def __init__(self, index: _PathIndex):
        self._index = index
        self._count = len(index)
        self._stamps = _Stamps()

    def __len__(self) -> int:
        return self._count

    def name(self, number: int) -> str:
        index = self._index
        at = number * ID_BYTES
        return self._stamps(index.times[number]) + "-" + index.commits[at:at + NAME_PREFIX_BYTES].hex()

    def names(self) -> list[str]:
        return [self.name(number) for number in range(self._count)]

    def commit_time(self, number: int) -> int:
        return self._index.times[number]

    def commit(self, number: int) -> pygit2.Oid:
        return pygit2.Oid(raw=bytes(self._index.commits[number * ID_BYTES:(number + 1) * ID_BYTES]))

    def blob(self, number: int) -> pygit2.Oid:
        return pygit2.Oid(raw=bytes(self._index.blobs[number * ID_BYTES:(number + 1) * ID_BYTES]))

    def mode(self, number: int) -> int:
        return self._index.modes[number]

    def size(self, number: int, measure: Callable[[int], int]) -> int:
        """The version's size as a reader sees it: measure(number) the first time, then kept
        with the index (8 bytes a version; a blob's size costs ~10 µs to read)."""
        sizes = self._index.sizes
        size = sizes[number]
        if size < 0:
            size = sizes[number] = measure(number)
        return size

    def measure_all(self, measure: Callable[[list[bytes]], list[int]]) -> None:
        """Every size not known yet, measured a chunk of versions at a time: measure(blob ids)
        gives their sizes (a batch through the pack index costs far less than a look-up each)."""
        index = self._index
        sizes, blobs = index.sizes, index.blobs
        for first in range(0, self._count, MEASURE_CHUNK):
            numbers = [number for number in range(first, min(first + MEASURE_CHUNK, self._count)) if sizes[number] < 0]
            if numbers:
                measured = measure([bytes(blobs[number * ID_BYTES:(number + 1) * ID_BYTES]) for number in numbers])
                for number, size in zip(numbers, measured):
                    sizes[number] = size

    def version(self, number: int) -> Version:
        return Version(self.name(number), self.commit(number), self._index.times[number], self.blob(number),
                       self._index.modes[number])


class _Stamps:
    """Local `YYYY-MM-DD_HH-MM-SS` of commit times, the day's start kept from one to the
    next (a listing formats its versions in time order: strftime per version cost 2 µs)."""

    __slots__ = ("_start", "_end", "_day")

    def __init__(self) -> None:
        self._start = self._end = 0
        self._day = ""

    def __call__(self, when: int) -> str:
        if not self._start <= when < self._end:
            start = day_start(when)
            if start is None:  # a day with a change of UTC offset: local time of each
                return time.strftime("%Y-%m-%d_%H-%M-%S", time.localtime(when))
            self._start, self._end = start, start + 86400
            self._day = time.strftime("%Y-%m-%d", time.localtime(when))
        seconds = when - self._start
        two = TWO_DIGITS
        return f"{self._day}_{two[seconds // 3600]}-{two[seconds // 60 % 60]}-{two[seconds % 60]}"


class FileVersions:
    def __init__(self, repo: Repository, *, cache_size: int = CACHE_SIZE, kept_versions: int = KEPT_VERSIONS):
        self.repo = repo
        self.cache_size = cache_size
        self.kept_versions = kept_versions
        self._lock = threading.Lock()
        self._paths: OrderedDict[str, _PathIndex] = OrderedDict()
        self.commits_read = 0  # commits read by walks so far (a figure for tests and benchmarks)

    def listing(self, path: str) -> VersionList:
        """The versions of path ("a/b.txt") on the branch, oldest first; empty if none."""
        with self._lock:
            index = self._index(path)
        return VersionList(index if index is not None else _PathIndex())

    def versions(self, path: str) -> list[Version]:
        """The versions of path, oldest first, as objects; [] if none."""
        listing = self.listing(path)
        return [listing.version(number) for number in range(len(listing))]

    def version(self, path: str, name: str) -> Optional[Version]:
        """One version of path by its name, or None."""
        try:
            prefix = bytes.fromhex(name[-2 * NAME_PREFIX_BYTES:])
        except ValueError:
            return None
        if len(prefix) != NAME_PREFIX_BYTES:
            return None
        with self._lock:
            index = self._index(path)
            if index is None:
                return None
            listing = VersionList(index)
            for number in index.numbers_named(prefix):
                if listing.name(number) == name:
                    return listing.version(number)
            return None

    def span(self, path: str) -> Optional[tuple[int, int]]:
        """Commit times of path's oldest and newest versions, or None without versions."""
        with self._lock:
            index = self._index(path)
            if not index:
                return None
            return index.times[0], index.times[-1]

    def cached_paths(self) -> int:
        """How many paths the LRU holds (at most cache_size)."""
        with self._lock:
            return len(self._paths)

    def kept_paths(self) -> list[str]:
        """The paths whose versions the LRU holds."""
        with self._lock:
            return list(self._paths)

    def kept(self) -> int:
        """How many versions the LRU holds, in all its paths."""
        with self._lock:
            return sum(len(index) for index in self._paths.values())

    def release(self) -> dict[str, VersionList]:
        """Let go of every path's index (an idle mount): the next listing walks again. Gives
        the listings let go of, by path: the kernel may hold their names."""
        with self._lock:
            dropped = {path: VersionList(index) for path, index in self._paths.items()}
            self._paths.clear()
        return dropped

    def _index(self, path: str) -> Optional[_PathIndex]:
        """The path's index, up to date with the branch (caller holds the lock)."""
        parts = [part for part in path.split("/") if part]
        if not parts:
            return None
        key = "/".join(parts)
        tip = self.repo.branch_tip()
        index = self._paths.pop(key, None)
        if tip is None:
            return None
        if index is None or index.tip != tip:
            index = self._walk(index, tip, parts)
        self._paths[key] = index  # the newest in the LRU
        kept = sum(len(each) for each in self._paths.values())
        while len(self._paths) > 1 and (len(self._paths) > self.cache_size or kept > self.kept_versions):
            kept -= len(self._paths.popitem(last=False)[1])
        return index

    def _walk(self, index: Optional[_PathIndex], tip: pygit2.Oid, parts: list[str]) -> _PathIndex:
        """The index brought to tip: extended by the commits after its tip, or read anew from
        tip if it has none or the branch was rewritten."""
        walked, read = _walk_line(self.repo.walk_handle(), tip, parts, index, self.repo.release_caches)
        self.commits_read += read
        if index is None or not walked.met:
            index = _PathIndex()
        index.add(walked.found)
        index.tip, index.last, index.trail = tip, walked.tip_entry, walked.tip_trail
        if read >= LONG_WALK:
            # What the other handles read while it ran: every handle goes, as when the mount is idle.
            self.repo.release_caches()
        elif read >= CLEAR_EVERY:
            release_free_memory()
        return index


class _Walked:
    __slots__ = ("found", "met", "tip_entry", "tip_trail")

    def __init__(self, found: _Found, tip_entry: Optional[Entry], tip_trail: list[Optional[pygit2.Oid]]):
        self.found = found
        self.met = found.met
        self.tip_entry = tip_entry
        self.tip_trail = tip_trail


def _walk_line(git: pygit2.Repository, tip: pygit2.Oid, parts: list[str],
               known: Optional[_PathIndex], release_others: Callable[[], None]) -> tuple[_Walked, int]:
    """The versions of `parts` on tip's first-parent line, newest first, down to known's tip
    (excluded) or the root; and how many commits it read. Every LONG_WALK commits,
    release_others() lets the other handles on the clone go (see the module's docstring).

    A commit is a version when the path's entry there differs from its parent's and is a
    file; the parent's entry is compared at the next commit read (the root's parent, and
    known's tip's entry, close the walk)."""
    found = _Found()
    stop = known.tip if known is not None else None
    depth = len(parts)
    trail: list[Optional[pygit2.Oid]] = [None] * depth  # trail[d]: the tree searched for parts[d], at the child
    tip_trail: list[Optional[pygit2.Oid]] = []
    tip_entry: Optional[Entry] = None
    child: Optional[tuple[pygit2.Oid, int, Optional[Entry]]] = None  # the commit read before, and its entry
    parents: list[pygit2.Oid] = []  # of the last commit read
    read = 0
    for commit in first_parent_line(git, tip, stop):
        entry = _entry(git, commit.tree_id, parts, trail, child[2] if child is not None else None)
        if child is None:
            tip_entry, tip_trail = entry, list(trail)
        elif child[2] is not None and child[2] != entry:
            found.add(child[0], child[1], child[2])
        child = (commit.id, commit.commit_time, entry)
        parents = commit.parent_ids
        read += 1
        if read % LONG_WALK == 0:
            release_others()
        if read % CLEAR_EVERY == 0:
            git.free()  # its object cache and its packs: the trees this walk parsed and their delta bases
            if read % TRIM_EVERY == 0:
                release_free_memory()
    # Met `stop` (else the line's root, or a rewritten branch's).
    found.met = stop is not None and (parents[0] == stop if child is not None and parents else tip == stop)
    if found.met and known is not None and child is None:  # the branch did not move: nothing read
        tip_entry, tip_trail = known.last, known.trail
    before = known.last if found.met and known is not None else None  # the entry below the last commit read
    if child is not None and child[2] is not None and child[2] != before:
        found.add(child[0], child[1], child[2])
    return _Walked(found, tip_entry, tip_trail), read


def _entry(git: pygit2.Repository, root: pygit2.Oid, parts: list[str], trail: list[Optional[pygit2.Oid]],
           same: Optional[Entry]) -> Optional[Entry]:
    """The path's (blob oid, mode) in the tree `root`, or None. `trail` holds the trees
    searched at the commit read before, whose entry was `same`: where a tree on the way is
    the same, so is the answer; `trail` is updated to this commit's trees."""
    current: Optional[pygit2.Oid] = root
    depth = len(parts)
    for level in range(depth):
        if current == trail[level]:  # same tree as at the commit before: same answer
            return same
        trail[level] = current
        for below in range(level + 1, depth):
            trail[below] = None
        try:
            entry = git[current][parts[level]]  # type: ignore[index]
        except KeyError:
            return None
        # The object type first: pygit2 makes an enum of each filemode read (~4 µs,
        # more than the rest of a commit's lookup), so a commit reads at most one.
        if level == depth - 1:
            if entry.type == OBJECT_BLOB:
                mode = entry.filemode
                if mode in BLOB_MODES:
                    return entry.id, mode
            return None
        if entry.type != OBJECT_TREE:  # a tree entry's mode is always FILEMODE_TREE
            return None
        current = entry.id
    return None
