"""Blobs stored as deltas in a pack, resolved here with a cache of resolved objects.

libgit2 resolves a delta chain keeping at most 16 MiB of resolved bases per pack, a
figure fixed when it is built (git keeps 96 MiB). Git deltas an object against any
similar one in the pack, not only against other versions of the same file: at one
commit, the 20,000 files of a 1,000-folder project hang off ~900 whole objects through
chains up to 50 deep that share their beginnings. Once those beginnings no longer fit
in libgit2's 16 MiB they are inflated again, file after file: libgit2 reads such a
commit's blobs in ~2.2 s, `git cat-file --batch` in ~0.65 s, this reader in ~1.1 s with
CACHE_BYTES of resolved objects (~2 s with 16 MiB, as libgit2).

The pack format is git's documented one (gitformat-pack): an entry header (type, size
in 7-bit groups), then for an offset delta the distance back to its base, for a
reference delta the base's id, then the zlib stream of the delta: the base's size and
the result's, then instructions that copy a piece of the base or insert new bytes.

Every blob handed out is checked against its id (SHA-1 of "blob SIZE\\0" and its
bytes): whatever this reader cannot do or gets wrong (a corrupt or unknown entry, a
base outside the packs, a cycle) answers None, and libgit2 reads the blob instead.

Thread-safe: the cache is shared by every FUSE thread under one lock, taken only to
look up and to store; the packs are read through read-only maps.
"""

from __future__ import annotations

import collections
import hashlib
import mmap
import threading
import zlib
from typing import Optional

from gitfs.repo.packindex import PACK_BLOB, SHA1_LENGTH, PackIndexes, parse_entry_header

OFS_DELTA = 6
REF_DELTA = 7
CACHE_BYTES = 32 << 20  # resolved objects kept (given back when the mount is idle)
LARGEST = 64 << 20  # a delta chain reaching a bigger object is left to libgit2
LONGEST_CHAIN = 10_000  # a longer one is corrupt (a cycle)

Location = tuple[str, int]  # (pack path, offset of the entry)


class DeltaError(Exception):
    """An entry this reader cannot resolve (libgit2 reads the blob instead)."""


class DeltaBlobs:
    """Blobs stored as pack deltas, by id: resolved through a bounded cache."""

    def __init__(self, packs: PackIndexes, cache_bytes: int = CACHE_BYTES):
        self._packs = packs
        self._cache_bytes = cache_bytes
        self._largest_kept = cache_bytes // 8  # a bigger object is resolved but not kept
        self._lock = threading.Lock()
        self._cache: collections.OrderedDict[Location, bytes] = collections.OrderedDict()
        self._kept = 0  # bytes in _cache
        self._packs_read: dict[str, memoryview] = {}  # pack path -> a view of its read-only map

    @property
    def kept_bytes(self) -> int:
        return self._kept

    def blob(self, raw_id: bytes) -> Optional[bytes]:
        """The bytes of the blob raw_id if a pack holds it as a delta this reader resolved
        and checked, else None (not packed, not a delta, or not resolved here)."""
        if len(raw_id) != SHA1_LENGTH:
            return None
        found = self._packs.find(raw_id)
        if found is None:
            return None
        try:
            kind, _size, _data_at = self._header(found)
            if kind not in (OFS_DELTA, REF_DELTA):
                return None  # a whole object: streamed from its pack (blobstream.py)
            data, base_kind = self._resolve(found)
        except (DeltaError, OSError, ValueError, IndexError, zlib.error):
            return None
        if base_kind != PACK_BLOB or not _is_blob(raw_id, data):
            return None
        return data

    def clear(self) -> None:
        """Forget every resolved object and every pack map (an idle mount)."""
        with self._lock:
            self._cache.clear()
            self._kept = 0
            self._packs_read = {}  # a map another thread still reads is unmapped once it lets go

    # -- resolving -----------------------------------------------------------

    def _resolve(self, location: Location) -> tuple[bytes, int]:
        """(bytes, type of the whole object at the chain's end) of the entry at location."""
        chain: list[tuple[Location, int]] = []  # deltas to apply, newest first: (where, data offset)
        at = location
        for _step in range(LONGEST_CHAIN):
            cached = self._cached(at)
            if cached is not None:
                data, kind = cached, PACK_BLOB
                break
            kind, size, data_at = self._header(at)
            if size > LARGEST:
                raise DeltaError("too big")
            if kind == OFS_DELTA:
                distance, data_at = self._base_distance(at[0], data_at)
                chain.append((at, data_at))
                at = (at[0], at[1] - distance)
            elif kind == REF_DELTA:
                base = self._packs.find(bytes(self._pack(at[0])[data_at:data_at + SHA1_LENGTH]))
                if base is None:
                    raise DeltaError("base outside the packs")
                chain.append((at, data_at + SHA1_LENGTH))
                at = base
            else:
                data = self._inflate(at[0], data_at, size)
                self._keep(at, data)
                break
        else:
            raise DeltaError("chain too long")
        for where, data_at in reversed(chain):
            _kind, size, _ = self._header(where)
            data = apply_delta(data, self._inflate(where[0], data_at, size))
            self._keep(where, data)
        return data, kind

    def _cached(self, at: Location) -> Optional[bytes]:
        with self._lock:
            data = self._cache.get(at)
            if data is not None:
                self._cache.move_to_end(at)
            return data

    def _keep(self, at: Location, data: bytes) -> None:
        if len(data) > self._largest_kept:
            return
        with self._lock:
            if at in self._cache:
                return
            self._cache[at] = data
            self._kept += len(data)
            while self._kept > self._cache_bytes:
                _oldest, dropped = self._cache.popitem(last=False)
                self._kept -= len(dropped)

    # -- the pack file ---------------------------------------------------------

    def _pack(self, pack: str) -> memoryview:
        """The pack's bytes, mapped (slices of the view copy nothing)."""
        view = self._packs_read.get(pack)
        if view is None:
            with open(pack, "rb") as handle:
                view = memoryview(mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ))
            with self._lock:
                view = self._packs_read.setdefault(pack, view)
        return view

    def _header(self, at: Location) -> tuple[int, int, int]:
        pack, offset = at
        return parse_entry_header(self._pack(pack), offset, pack)

    def _base_distance(self, pack: str, data_at: int) -> tuple[int, int]:
        """An offset delta's distance back to its base (git's big-endian 7-bit groups, each
        continuation adding one), and where its zlib stream starts."""
        mapped = self._pack(pack)
        byte = mapped[data_at]
        distance = byte & 0x7F
        data_at += 1
        while byte & 0x80:
            byte = mapped[data_at]
            distance = ((distance + 1) << 7) | (byte & 0x7F)
            data_at += 1
        if distance <= 0:
            raise DeltaError("bad base distance")
        return distance, data_at

    def _inflate(self, pack: str, data_at: int, size: int) -> bytes:
        """The `size` bytes of the zlib stream at data_at (exactly: anything else is corrupt)."""
        mapped = self._pack(pack)
        inflater = zlib.decompressobj()
        pieces, got, position = [], 0, data_at
        step = size + size // 512 + 64  # zlib's stream of `size` bytes is at most that long
        while got < size:
            data = mapped[position:position + step]
            if not data:
                raise DeltaError("truncated")
            piece = inflater.decompress(data, size - got)
            position += len(data) - len(inflater.unconsumed_tail)
            pieces.append(piece)
            got += len(piece)
            if inflater.eof:
                break
        if got != size:
            raise DeltaError("stream of the wrong size")
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)


def _varint(delta: bytes, at: int) -> tuple[int, int]:
    """A size at the start of a delta (little-endian 7-bit groups) and what follows it."""
    value, shift = 0, 0
    while True:
        byte = delta[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def apply_delta(base: bytes, delta: bytes) -> bytes:
    """The object a delta makes of its base."""
    base_size, at = _varint(delta, 0)
    result_size, at = _varint(delta, at)
    if base_size != len(base):
        raise DeltaError(f"the delta expects a base of {base_size} bytes, not {len(base)}")
    if result_size > LARGEST:
        raise DeltaError("too big")
    result = bytearray()
    source = memoryview(base)
    end = len(delta)
    while at < end:
        op = delta[at]
        at += 1
        if op & 0x80:  # copy from the base: offset and size bytes present per bit
            offset = size = 0
            for bit, shift in ((0x01, 0), (0x02, 8), (0x04, 16), (0x08, 24)):
                if op & bit:
                    offset |= delta[at] << shift
                    at += 1
            for bit, shift in ((0x10, 0), (0x20, 8), (0x40, 16)):
                if op & bit:
                    size |= delta[at] << shift
                    at += 1
            size = size or 0x10000
            if offset + size > len(base):
                raise DeltaError("a copy past the base's end")
            result += source[offset:offset + size]
        elif op:  # insert the next `op` bytes
            if at + op > end:
                raise DeltaError("an insert past the delta's end")
            result += delta[at:at + op]
            at += op
        else:
            raise DeltaError("instruction 0")
    if len(result) != result_size:
        raise DeltaError(f"the delta made {len(result)} bytes, not {result_size}")
    return bytes(result)


def _is_blob(raw_id: bytes, data: bytes) -> bool:
    """Whether data is the blob raw_id (git's object id: SHA-1 of the header and the bytes)."""
    digest = hashlib.sha1(b"blob %d\0" % len(data))
    digest.update(data)
    return digest.digest() == raw_id
