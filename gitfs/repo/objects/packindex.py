"""Where an object starts in a pack file, read from the pack's index (`.idx`, version 2),
and what its entry there says of it.

libgit2 answers only with a whole inflated object; to stream a big blob out of a
pack, GitFS needs the object's offset, which libgit2 does not tell, and the size of
a blob (every listing of a commit folder shows one per file) is in its entry's first
bytes. The index format is git's documented on-disk format (gitformat-pack): a magic
and version, 256 cumulative counts by first byte, the sorted object ids, their CRCs,
4-byte offsets whose top bit points into a table of 8-byte ones.

Thread-safe: the indexes are read with pread from files git never changes, and replaced
under a lock when the pack folder's listing changes.

Open files: a clone that fetched for weeks has thousands of packs, and a daemon run by
systemd gets 1,024 open files. The pack files are opened when an entry is read and kept
open only OPEN_PACKS at a time (OpenPacks), the least recently read closed first. An
index holds its file open: only the INDEXED_PACKS biggest packs are indexed here (a
clone's own pack, and what a repack made of the fetched ones); libgit2, with open packs
bounded of its own, reads what the others hold.
"""

from __future__ import annotations

import collections
import contextlib
import os
import struct
import threading
import weakref
import zlib
from collections.abc import Iterator, Sequence
from typing import Optional

IDX_MAGIC = b"\xfftOc"
IDX_VERSION = 2
FANOUT_AT = 8
ENTRIES_AT = FANOUT_AT + 256 * 4
SHA1_LENGTH = 20
LARGE_OFFSET = 0x80000000

# Object types in a pack entry's header (the deltas name a base instead of holding bytes).
PACK_COMMIT, PACK_TREE, PACK_BLOB, PACK_TAG = 1, 2, 3, 4
PACK_OFS_DELTA, PACK_REF_DELTA = 6, 7
ENTRY_HEADER_MAX = 16  # a type and a 64-bit size in 7-bit groups fit in 10 bytes
# An entry's header, its base's offset or id and the start of its zlib stream, whose
# first block may open with its Huffman tables (under 128 bytes in every entry of the
# packs tried; a longer one leaves the size to libgit2).
ENTRY_START_READ = 256
DELTA_SIZES_MAX = 20  # a delta's stream starts with two sizes in 7-bit groups
OPEN_PACKS = 16  # pack files kept open for their entries' headers
# An offset() reads the ids of a bucket (its first byte) whole once it has narrowed it to
# this many (2.5 KiB); in a bigger bucket it reads one id at each step before.
SEARCH_READ_ENTRIES = 128
INDEXED_PACKS = 48  # pack indexes open at once: the biggest packs'


class OpenPacks:
    """The pack files open for reading entries: at most `limit` (more only while that
    many are being read at once), the least recently read closed first. A pack deleted
    since it was closed (git repack replaced it) fails to open: OSError, as a read of a
    damaged pack does, and libgit2 answers instead."""

    def __init__(self, limit: int = OPEN_PACKS):
        self._limit = limit
        self._lock = threading.Lock()
        self._open: collections.OrderedDict[str, list[int]] = collections.OrderedDict()  # path -> [fd, readers]

    @contextlib.contextmanager
    def reading(self, path: str) -> Iterator[int]:
        """The pack's descriptor, open until the block ends (and maybe after)."""
        with self._lock:
            entry = self._open.get(path)
            if entry is None:
                entry = self._open[path] = [os.open(path, os.O_RDONLY | os.O_CLOEXEC), 0]
            else:
                self._open.move_to_end(path)
            entry[1] += 1
        try:
            yield entry[0]
        finally:
            with self._lock:
                entry[1] -= 1
                self._close_beyond(self._limit)

    def close_all(self) -> None:
        """Close every pack not being read (an idle mount; packs replaced by a repack)."""
        with self._lock:
            self._close_beyond(0)

    def count(self) -> int:
        return len(self._open)

    def _close_beyond(self, limit: int) -> None:
        surplus = len(self._open) - limit
        for path, (fd, readers) in list(self._open.items()):
            if surplus <= 0:
                return
            if readers == 0:
                os.close(fd)
                del self._open[path]
                surplus -= 1


class PackIndex:
    """One pack's index, read with pread, and its pack file, read through `packs` (a read
    of an entry's header is a pread, mostly not an open, a read and a close). Nothing of
    the index is mapped: a map's pages, which the kernel maps 64 KiB around each one
    touched, stayed counted in the daemon's RSS, the whole index of a busy clone's pack
    beside libgit2's own map of it. The descriptor is closed when the object is
    collected: a reader may still hold it after a fetch changed the pack folder, and git
    deletes a pack only by unlinking it."""

    def __init__(self, idx_path: str, packs: OpenPacks):
        self._fd = os.open(idx_path, os.O_RDONLY | os.O_CLOEXEC)
        weakref.finalize(self, os.close, self._fd)
        head = os.pread(self._fd, ENTRIES_AT, 0)
        if len(head) < ENTRIES_AT or head[:4] != IDX_MAGIC or struct.unpack_from(">I", head, 4)[0] != IDX_VERSION:
            raise ValueError(f"{idx_path}: not a version 2 pack index")
        self._fanout = struct.unpack_from(">256I", head, FANOUT_AT)  # objects whose first byte is <= each
        self.count = self._fanout[255]
        self._offsets_at = ENTRIES_AT + self.count * (SHA1_LENGTH + 4)
        self._large_at = self._offsets_at + self.count * 4
        self.pack_path = pack_path_of(idx_path)
        self._packs = packs
        if not os.path.exists(self.pack_path):
            raise FileNotFoundError(self.pack_path)

    def entry_header(self, offset: int) -> tuple[int, int, int]:
        """(type, size, offset of its zlib data) of the pack entry at offset."""
        with self._packs.reading(self.pack_path) as fd:
            header = os.pread(fd, ENTRY_HEADER_MAX, offset)
        return parse_entry_header(header, self.pack_path, offset)

    def object_size(self, offset: int) -> Optional[int]:
        """The size of the object at offset, from its entry alone, or None (libgit2 must
        answer). A whole object's header holds it; a delta's header holds the delta's own
        size, but its stream starts with its base's size and the object's (git's delta
        format), so a few bytes of it are inflated. libgit2's read_header walks the chain
        to the base for the type, which the caller knows already (a tree names a blob)."""
        with self._packs.reading(self.pack_path) as fd:
            start = os.pread(fd, ENTRY_START_READ, offset)
        kind, size, data_at = parse_entry_header(start, self.pack_path, offset)
        if kind in (PACK_COMMIT, PACK_TREE, PACK_BLOB, PACK_TAG):
            return size
        if kind not in (PACK_OFS_DELTA, PACK_REF_DELTA):
            return None  # no such type: a damaged pack
        at = data_at - offset
        if kind == PACK_REF_DELTA:
            at += SHA1_LENGTH
        else:  # the base's distance back, in 7-bit groups
            while at < len(start) and start[at] & 0x80:
                at += 1
            at += 1
        try:
            sizes = zlib.decompressobj().decompress(start[at:], DELTA_SIZES_MAX)
        except zlib.error:
            return None
        _base_size, used = read_size(sizes, 0)
        object_size, end = read_size(sizes, used)
        return object_size if end <= len(sizes) else None

    def _bucket(self, first: int) -> tuple[int, int]:
        """The entries of the ids whose first byte is `first`: [start, end)."""
        return (self._fanout[first - 1] if first else 0), self._fanout[first]

    def _ids(self, start: int, end: int) -> bytes:
        return os.pread(self._fd, (end - start) * SHA1_LENGTH, ENTRIES_AT + start * SHA1_LENGTH)

    def _offset_of(self, entry: int, offsets: bytes = b"", first: int = 0) -> int:
        """The pack offset of entry `entry`, from `offsets` (the 4-byte offsets of the
        entries from `first` on) if given."""
        if offsets:
            offset = struct.unpack_from(">I", offsets, (entry - first) * 4)[0]
        else:
            offset = struct.unpack(">I", os.pread(self._fd, 4, self._offsets_at + entry * 4))[0]
        if offset & LARGE_OFFSET:
            offset = struct.unpack(">Q", os.pread(self._fd, 8, self._large_at + (offset & ~LARGE_OFFSET) * 8))[0]
        return offset

    def offset(self, raw_id: bytes) -> Optional[int]:
        """Offset of the object in the pack file, or None if the pack lacks it."""
        low, high = self._bucket(raw_id[0])
        while high - low > SEARCH_READ_ENTRIES:  # a binary search, an id read at each step
            middle = (low + high) // 2
            name = self._ids(middle, middle + 1)
            if name < raw_id:
                low = middle + 1
            elif name > raw_id:
                high = middle
            else:
                return self._offset_of(middle)
        entry = _entry_of(self._ids(low, high), raw_id, 0)
        return None if entry is None else self._offset_of(low + entry)

    def offsets(self, sorted_ids: Sequence[bytes]) -> list[Optional[int]]:
        """offset() of each id, the ids sorted: the ids of each first byte asked read once,
        each search starting where the one before ended (a few entries further, for ids
        as dense as a file's versions), not a binary search in Python per id."""
        found: list[Optional[int]] = []
        bucket = -1
        names, offsets, first, at = b"", b"", 0, 0
        for raw_id in sorted_ids:
            if raw_id[0] != bucket:
                bucket = raw_id[0]
                first, end = self._bucket(bucket)
                names, at = self._ids(first, end), 0
                offsets = os.pread(self._fd, (end - first) * 4, self._offsets_at + first * 4)
            entry = _entry_of(names, raw_id, at)
            if entry is None:
                found.append(None)
                continue
            at = entry  # the next id sorts after this one (or is the same)
            found.append(self._offset_of(first + entry, offsets, first))
        return found


def _entry_of(names: bytes, raw_id: bytes, start: int) -> Optional[int]:
    """The entry of `raw_id` in `names` (ids of SHA1_LENGTH bytes, sorted), searched
    from entry `start` on, or None."""
    at = names.find(raw_id, start * SHA1_LENGTH)
    while at != -1 and at % SHA1_LENGTH:  # inside two entries: not an id
        at = names.find(raw_id, at + 1)
    return None if at == -1 else at // SHA1_LENGTH


def pack_path_of(idx_path: str) -> str:
    """The pack file an index (`pack-ID.idx`) belongs to: `pack-ID.pack`."""
    return idx_path[:-len(".idx")] + ".pack"


def parse_entry_header(header: bytes, pack_path: str, offset: int) -> tuple[int, int, int]:
    """(type, size, offset of its zlib data) of the pack entry whose first bytes are `header`."""
    if not header:
        raise ValueError(f"{pack_path}: no entry at {offset}")
    byte = header[0]
    kind, size, shift, used = (byte >> 4) & 7, byte & 15, 4, 1
    while byte & 0x80:
        if used >= len(header):
            raise ValueError(f"{pack_path}: bad entry header at {offset}")
        byte = header[used]
        size |= (byte & 0x7F) << shift
        shift += 7
        used += 1
    return kind, size, offset + used


def read_size(data: bytes, at: int) -> tuple[int, int]:
    """A size in a delta's stream (7-bit groups, low first, a set top bit for more) at `at`:
    (size, where the next field starts); past len(data) if the bytes end first."""
    size = shift = 0
    while at < len(data):
        byte = data[at]
        size |= (byte & 0x7F) << shift
        shift += 7
        at += 1
        if not byte & 0x80:
            return size, at
    return size, len(data) + 1


class PackIndexes:
    """Every pack of one object folder: which pack holds an object, and where."""

    def __init__(self, objects_dir: str):
        self._pack_dir = os.path.join(objects_dir, "pack")
        self._lock = threading.Lock()
        self._indexes: dict[str, PackIndex] = {}  # pack path -> its index
        self._listed: Optional[frozenset[str]] = None  # the .idx names last read
        self.open_packs = OpenPacks()

    def find(self, raw_id: bytes, *, look_again: bool = True) -> Optional[tuple[PackIndex, int]]:
        """(the pack's index, offset) of the object, or None: not in any pack (or not a SHA-1 id).

        Looks again at the pack folder only after a miss (a fetch adds packs), and only
        with look_again, or if it was never read."""
        if len(raw_id) != SHA1_LENGTH:
            return None
        found = self._search(raw_id)
        if found is None and (look_again or self._listed is None) and self._relist():
            found = self._search(raw_id)
        return found

    def sizes(self, raw_ids: Sequence[bytes]) -> list[Optional[int]]:
        """The size of each object (PackIndex.object_size), None where no pack answers: the
        ids looked up in sorted order, one pass through each pack index, the entries'
        headers read in the pack's order (a read ahead through the file, not a seek each)."""
        if self._listed is None:
            self._relist()
        sizes: list[Optional[int]] = [None] * len(raw_ids)
        left = sorted(range(len(raw_ids)), key=raw_ids.__getitem__)
        for index in list(self._indexes.values()):
            if not left:
                break
            located = sorted((offset, number) for number, offset
                             in zip(left, index.offsets([raw_ids[number] for number in left])) if offset is not None)
            for offset, number in located:
                try:
                    sizes[number] = index.object_size(offset)
                except (OSError, ValueError, IndexError):
                    pass  # libgit2 answers
            left = [number for number in left if sizes[number] is None]
        return sizes

    def forget(self) -> None:
        """Drop every index and pack descriptor (an idle mount gives its memory back); the
        next find reads the pack folder again. A reader still holding one keeps it until done."""
        with self._lock:
            self._indexes, self._listed = {}, None
        self.open_packs.close_all()

    def _search(self, raw_id: bytes) -> Optional[tuple[PackIndex, int]]:
        for index in list(self._indexes.values()):
            offset = index.offset(raw_id)
            if offset is not None:
                return index, offset
        return None

    def _relist(self) -> bool:
        """Read the pack folder again; True if its packs changed."""
        try:
            names = frozenset(name for name in os.listdir(self._pack_dir) if name.endswith(".idx"))
        except OSError:
            names = frozenset()
        with self._lock:
            if names == self._listed:
                return False
            indexes: dict[str, PackIndex] = {}
            for name in _biggest_packs(self._pack_dir, names, INDEXED_PACKS):
                pack = pack_path_of(os.path.join(self._pack_dir, name))
                index = self._indexes.get(pack)
                if index is None:
                    try:
                        index = PackIndex(os.path.join(self._pack_dir, name), self.open_packs)
                    except (OSError, ValueError):
                        continue  # being written, or a format this reader does not know: libgit2 reads it
                indexes[pack] = index
            # Dropped packs' maps are left to the garbage collector: a reader may still hold one.
            self._indexes, self._listed = indexes, names
        self.open_packs.close_all()  # a pack deleted by a repack is not held open
        return True


def _biggest_packs(pack_dir: str, idx_names: frozenset[str], count: int) -> list[str]:
    """The index names of the `count` biggest packs (all of them if there are no more)."""
    if len(idx_names) <= count:
        return sorted(idx_names)
    sizes = {}
    for name in idx_names:
        try:
            sizes[name] = os.stat(pack_path_of(os.path.join(pack_dir, name))).st_size
        except OSError:
            continue  # being written or deleted
    return sorted(sizes, key=lambda name: (-sizes[name], name))[:count]
