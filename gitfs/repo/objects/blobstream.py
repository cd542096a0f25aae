"""A blob's bytes streamed out of its object file, as `git cat-file` does.

libgit2 hands out a blob only whole: it reads a loose object's file whole, then
inflates it into a second buffer of the blob's size, so a first read of a 100 MiB
file from history/ faulted in and zeroed 200 MiB of fresh memory before the first
byte (four fifths of its time went there, not into zlib). Here the object's
zlib stream is inflated straight from the file, a chunk per read, into a bounded
window: a loose object (the file is zlib of "blob SIZE\\0" and the bytes; every
object GitFS commits itself is one) or a whole object in a pack (after a fetch).
A pack entry stored as a delta, or an object this reader cannot find (an
alternate object store), is libgit2's to read.

Programs read files in order, but the kernel's readahead sends neighbouring
reads on several FUSE threads at once, so they may arrive slightly out of order:
the last WINDOW bytes inflated stay at hand. A read before the window starts the
stream again from the top once (a program that looked at a file's end first, as
zip readers do); after that, the reader asks for the whole blob (`whole`).
"""

from __future__ import annotations

import collections
import mmap
import os
import threading
import zlib
from typing import Callable, Optional, Union

from gitfs.repo.errors import GitCoreError
from gitfs.repo.objects.packindex import PACK_BLOB, PackIndexes

WINDOW = 4 << 20  # bytes of the blob kept behind the furthest read
INPUT_SLACK = 4096  # compressed bytes offered beyond the bytes wanted out (block headers)
DROP_BEHIND = 8 << 20  # mapped bytes behind the stream given back at a time
MAX_INFLATE = 1 << 20  # blob bytes inflated in one piece (a skip ahead goes in such steps)
HEADER_MAX = 32  # "blob " + 20 digits + NUL, with room


class CorruptObject(GitCoreError):
    """An object file whose stream does not hold what its header or index says."""


class ObjectFiles:
    """Where a blob's zlib stream is on disk, in one object folder (.git/objects)."""

    def __init__(self, objects_dir: str):
        self.objects_dir = objects_dir
        self.packs = PackIndexes(objects_dir)

    def loose_size(self, hex_id: str) -> Optional[int]:
        """A loose blob's size, from the first bytes of its file (`blob SIZE\\0`), or None
        (not loose, not a blob, unreadable: libgit2 must answer). Older pygit2 has no header
        read, and libgit2 1.5 reads a whole object for its size (and spins for ever on a
        truncated one)."""
        try:
            with open(os.path.join(self.objects_dir, hex_id[:2], hex_id[2:]), "rb") as handle:
                head = zlib.decompressobj().decompress(handle.read(512), 64)
        except (OSError, zlib.error):
            return None
        kind, space, rest = head.partition(b" ")
        size, nul, _ = rest.partition(b"\0")
        if kind != b"blob" or not space or not nul or not size.isdigit():
            return None
        return int(size)

    def blob_size(self, hex_id: str, raw_id: bytes) -> Optional[int]:
        """A blob's size without inflating it: from its entry in a pack already listed, else
        from its loose file's header; None: libgit2 must answer."""
        found = self.packs.find(raw_id, look_again=False)
        if found is not None:
            index, offset = found
            try:
                size = index.object_size(offset)
            except (OSError, ValueError, IndexError):
                size = None
            if size is not None:
                return size
        return self.loose_size(hex_id)

    def locate(self, hex_id: str, raw_id: bytes) -> Optional[tuple[str, int, bool]]:
        """(file, offset of the zlib stream, whether it starts with a loose header), or
        None: libgit2 must read it (a delta, another object store, a type mismatch).

        The packs already listed are asked first (a clone's objects are packed), then the
        object's loose file, then the pack folder again (a fetch may have added a pack)."""
        found = self.packs.find(raw_id, look_again=False)
        if found is None:
            loose = os.path.join(self.objects_dir, hex_id[:2], hex_id[2:])
            if os.path.exists(loose):
                return loose, 0, True
            found = self.packs.find(raw_id)
            if found is None:
                return None
        index, offset = found
        try:
            kind, _size, data_at = index.entry_header(offset)
        except (OSError, ValueError, IndexError):
            return None
        return (index.pack_path, data_at, False) if kind == PACK_BLOB else None


class ZlibStream:
    """One pass through a blob's zlib stream, from the file at `path`, `offset`.

    The file is mapped, not read: zlib takes its input straight from the page cache
    (a read() would copy every compressed byte once more). Pages behind the stream are
    dropped from the mapping as it goes, so the daemon's memory does not grow by the
    file's size. Git never changes an object or pack file in place (it writes new
    ones and renames them), so the mapping cannot shrink under the reader.

    Not thread-safe: BlobReader serialises its reads."""

    def __init__(self, path: str, offset: int, size: int, loose_header: bool):
        self.size = size
        self._name = path
        with open(path, "rb") as handle:
            try:
                self._map = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
            except ValueError:  # an empty file
                raise CorruptObject(f"{path}: empty") from None
        self._input = memoryview(self._map)
        self._next_input = offset  # the next compressed byte zlib has not taken
        self._mapped_from = offset - offset % mmap.PAGESIZE  # pages before it were dropped
        self._inflater = zlib.decompressobj()
        self._position = 0  # blob bytes inflated so far
        self._chunks: collections.deque[tuple[int, bytes]] = collections.deque()  # (start, bytes) behind it
        self._kept = 0  # bytes in _chunks
        if loose_header:
            self._skip_header()

    def close(self) -> None:
        self._input.release()
        self._map.close()
        self._chunks.clear()

    def read(self, size: int, offset: int) -> Optional[bytes]:
        """The blob's bytes at [offset, offset+size), short at its end; None if they lie
        before the window (the stream cannot go back)."""
        end = min(offset + size, self.size)
        if offset >= end:
            return b""
        start = self._chunks[0][0] if self._chunks else self._position
        if offset < start:
            return None
        while self._position < end:
            self._keep(self._inflate(min(end - self._position, MAX_INFLATE)))
        return self._slice(offset, end)

    def _slice(self, offset: int, end: int) -> bytes:
        pieces = []
        for start, chunk in self._chunks:
            if start + len(chunk) <= offset:
                continue
            if start >= end:
                break
            if start == offset and start + len(chunk) == end:
                return chunk  # the usual case: one read, one chunk, no copy
            pieces.append(memoryview(chunk)[max(offset - start, 0):end - start])
        return b"".join(pieces)

    def _keep(self, chunk: bytes) -> None:
        self._chunks.append((self._position, chunk))
        self._position += len(chunk)
        self._kept += len(chunk)
        while self._kept - len(self._chunks[0][1]) >= WINDOW:
            self._kept -= len(self._chunks.popleft()[1])

    def _inflate(self, want: int) -> bytes:
        """The next `want` bytes of the stream (exactly: a short stream is corrupt)."""
        pieces, got = [], 0
        while got < want:
            piece = self._decompress(want - got)
            pieces.append(piece)
            got += len(piece)
            if self._inflater.eof and got < want:
                raise CorruptObject(f"{self._name}: the stream ends {want - got} bytes early")
        self._drop_behind()
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)

    def _decompress(self, most: int) -> bytes:
        """Up to `most` bytes out of the input that follows (about as much in: random bytes
        hardly shrink, and zlib copies what it leaves of its input)."""
        data = self._input[self._next_input:self._next_input + most + INPUT_SLACK]
        try:  # released at once: a slice left in a traceback would keep the map from closing
            if not data:
                raise CorruptObject(f"{self._name}: truncated")
            piece = self._inflater.decompress(data, most)
            self._next_input += len(data) - len(self._inflater.unconsumed_tail)
        except zlib.error as error:
            raise CorruptObject(f"{self._name}: {error}") from None
        finally:
            data.release()
        return piece

    def _drop_behind(self) -> None:
        behind = self._next_input - self._mapped_from
        if behind >= DROP_BEHIND and hasattr(mmap, "MADV_DONTNEED"):
            behind -= behind % mmap.PAGESIZE
            self._map.madvise(mmap.MADV_DONTNEED, self._mapped_from, behind)  # the page cache keeps them
            self._mapped_from += behind

    def _skip_header(self) -> None:
        """A loose object's "blob SIZE\\0": checked, then dropped; what follows is kept."""
        head = b""
        while b"\0" not in head and len(head) < HEADER_MAX and not self._inflater.eof:
            head += self._decompress(HEADER_MAX - len(head))
        header, nul, rest = head.partition(b"\0")
        if not nul or header != b"blob %d" % self.size:
            raise CorruptObject(f"{self._name}: header {header[:HEADER_MAX]!r}, expected a blob of {self.size}")
        if rest:
            self._keep(rest)


Bytes = Union[bytes, memoryview]


class BlobReader:
    """An open history file's bytes, read at offsets: streamed from its object file when
    it has one (ObjectFiles.locate), else `whole()` (libgit2's buffer of the whole blob).
    Nothing is read before the first read; close() frees everything.

    Thread-safe: one lock, since several FUSE threads may read one open file at once."""

    RESTARTS = 1  # reads before the window that start the stream again before `whole` takes over

    def __init__(self, measure: Callable[[], int], locate: Callable[[], Optional[tuple[str, int, bool]]],
                 whole: Callable[[], memoryview]):
        self._measure = measure  # the blob's size: asked only to stream it (a warm open reads nothing)
        self._locate = locate
        self._whole = whole
        self._lock = threading.Lock()
        self._stream: Optional[ZlibStream] = None
        self._buffer: Optional[memoryview] = None
        self._starts = 0  # streams opened so far

    @property
    def loaded(self) -> bool:
        """Whether anything is held: an open stream or the whole blob."""
        return self._stream is not None or self._buffer is not None

    def read(self, size: int, offset: int) -> Bytes:
        buffer = self._buffer
        if buffer is not None:
            return buffer[offset:offset + size]  # no copy: GitFSFUSE.read copies it into libfuse's buffer
        with self._lock:
            if self._buffer is None:
                data = self._from_stream(size, offset)
                if data is not None:
                    return data
                self._buffer = self._whole()
            return self._buffer[offset:offset + size]

    def _from_stream(self, size: int, offset: int) -> Optional[bytes]:
        """The bytes from a stream (one opened or opened again as needed), or None: read the whole blob."""
        if self._stream is not None:
            data = self._stream.read(size, offset)
            if data is not None:
                return data
            self._stream.close()
            self._stream = None
        if self._starts > self.RESTARTS:
            return None
        self._starts += 1
        where = self._locate()
        if where is None:
            self._starts = self.RESTARTS + 1  # nothing to stream: never ask again
            return None
        path, at, loose_header = where
        try:
            self._stream = ZlibStream(path, at, self._measure(), loose_header)
        except FileNotFoundError:  # packed or pruned since locate() looked
            self._starts = self.RESTARTS + 1
            return None
        return self._stream.read(size, offset)

    def close(self) -> None:
        with self._lock:
            if self._stream is not None:
                self._stream.close()
                self._stream = None
            self._buffer = None  # the last reference: libgit2's buffer is freed now
