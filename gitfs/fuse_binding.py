"""GitFSFUSE: mfusepy's FUSE class with READDIRPLUS answered and blob reads copied once,
and the libfuse 3 constants GitFS uses that mfusepy does not name.

This is the one module that reaches into mfusepy's internals (the callbacks
`readdir_fuse_3` and `read`, `_readdir`, `c_stat`, `set_st_attrs` and the
attributes FUSE.__init__ sets). tests/views/test_fuse_binding.py pins every one
of those names and signatures (and the libfuse struct fields the Router sets),
so that an mfusepy upgrade that moves them fails a test rather than a mount.

Performance: one FUSE round trip costs far more than any lookup GitFS does
(README.md, "Performance and kernel caching", has the figures), so the lever is
fewer round trips. Answering READDIRPLUS with full attributes (every view that can
give them cheaply: history/, days, commit folders, current/) lets `ls -l`, `ls -R`
and `grep -r` go without a LOOKUP per entry;
with libfuse >= 3.16, opening a folder of history/ asks the kernel to keep its
listing (cache_readdir, keep_cache), so a second listing costs OPENDIR and
RELEASEDIR only; and KernelCache tells the kernel what GitFS changed behind its
back, so that the kernel may cache entries and attributes for long (router.py).
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import select
import threading
from collections.abc import Iterable
from typing import Any, Optional

import mfusepy

from gitfs import cache_policy
from gitfs.views.base import StampedStat

log = logging.getLogger(__name__)

FUSE_CAP_READDIRPLUS_AUTO = 1 << 14  # fuse_common.h; cleared: every readdir call is "plus"
FUSE_READDIR_PLUS = 1  # enum fuse_readdir_flags
FUSE_FILL_DIR_PLUS = 2  # enum fuse_fill_dir_flags

# libfuse's high-level API hands the cache_readdir and keep_cache bits that opendir sets
# on to the kernel only from libfuse 3.16 on (3.14, Debian 12's, drops them: every
# listing reaches GitFS again). Before that, GitFS answers no opendir at all: libfuse
# then answers OPENDIR itself, without a call into Python.
DIR_CACHE_FROM_OPENDIR = (mfusepy.fuse_version_major, mfusepy.fuse_version_minor) >= (3, 16)


TIMESPECS = {"st_atime": "st_atimespec", "st_mtime": "st_mtimespec", "st_ctime": "st_ctimespec"}


def fill_stat(st: mfusepy.c_stat, attrs: dict[str, int]) -> None:
    """mfusepy.set_st_attrs for times in nanoseconds, without its checks of each key
    (a listing of current/ fills one per entry: 1.4 instead of 2.4 us here)."""
    for key, value in attrs.items():
        spec = TIMESPECS.get(key)
        if spec is None:
            setattr(st, key, value)
        else:
            timespec = getattr(st, spec)
            timespec.tv_sec, timespec.tv_nsec = divmod(value, 1_000_000_000)


@functools.lru_cache(maxsize=64)
def byte_array(size: int) -> type[ctypes.Array[ctypes.c_ubyte]]:
    """The ctypes type of libfuse's read buffer of `size` bytes. ctypes keeps an array type
    only while something holds it, so one made for each read's length (a file's size, on
    the first read of a small file) was a new class per read: ~10 us and work for the
    garbage collector each. Reads ask for a few sizes (pages up to max_read): kept here."""
    return ctypes.c_ubyte * size


class GitFSFUSE(mfusepy.FUSE):
    """mfusepy's FUSE with READDIRPLUS answered (mfusepy always fills names only).

    With a stat per entry and FUSE_FILL_DIR_PLUS, libfuse hands the kernel the
    entry and its attributes in the READDIRPLUS reply, so the `lstat` that `ls -l`
    and `ls -R` make of every entry is answered from the kernel's cache, without a
    LOOKUP round trip. libfuse 3.14 drops the attributes of entries filled with
    offset 0 (its buffered mode), so entries carry their position as offset and a
    call resumes at the offset asked; the listing of a big directory is kept for
    the calls that follow its first. Only with libfuse 3; elsewhere mfusepy's
    readdir runs.

    The operations object answers `readdir_with_attrs(path, fh)` with a list of names
    or (name, attrs or None) pairs; the Router does. attrs is a stat dict (complete:
    the kernel caches it as the entry's attributes) or an int, the entry's file type
    alone (stat.S_IFMT bits): libfuse then passes it on as the entry's d_type only,
    which spares `find -type f` and `ls -R` an lstat per entry.
    """

    LISTINGS = 16  # directories whose listing is kept between the calls that read it
    TEMPLATE_STRUCTS = 1024  # structs filled from StampedStat templates, kept across calls
    PINNED_THREADS = 64  # libfuse threads that keep their Python thread state (see _wrapper)

    def _wrapper(self, func, *args, **kwargs):
        """mfusepy's wrapper, in a libfuse thread that keeps its Python thread state.

        ctypes makes a Python thread state for a thread that has none at the start of
        every callback and destroys it at the end: for libfuse's threads, at every
        FUSE call. One extra PyGILState_Ensure (never released) in each new libfuse
        thread keeps its state between calls. A thread that libfuse ends leaves its
        state behind (a few kB), so only the first PINNED_THREADS threads are pinned;
        libfuse keeps max_idle_threads of them alive between bursts."""
        pinned: set[int] = self.__dict__.setdefault("_pinned", set())
        thread = threading.get_ident()
        if thread not in pinned and len(pinned) < self.PINNED_THREADS:
            pinned.add(thread)
            ctypes.pythonapi.PyGILState_Ensure()
        return super()._wrapper(func, *args, **kwargs)

    def opendir(self, path: bytes, fip) -> int:
        """No view keeps anything per open folder: answered here, without the router.

        A folder under history/ (the `kernel_cached_dirs` prefix of the operations) is
        immutable, or forgotten when the branch moves (cache_policy.LISTINGS): the kernel
        may keep its listing across opens (cache_readdir) and not drop it at the next open
        (keep_cache). Other folders are listed afresh at every opendir."""
        fi = fip.contents
        fi.fh = 0
        prefix = self.__dict__.get("_cached_prefix")
        if prefix is None:
            prefix = self._cached_prefix = self.operations.kernel_cached_dirs.encode(self.encoding, self.errors)
        if cache_policy.listing_kept(path, prefix) and hasattr(fi, "cache_readdir"):
            fi.cache_readdir = 1
            fi.keep_cache = 1
        return 0

    def read(self, path: Optional[bytes], buf, size: int, offset: int, fip) -> int:
        """mfusepy's read, one copy fewer for a view that answers with a memoryview (the
        blob of an open history/ file, GitFS's biggest reads): its bytes are copied
        straight into libfuse's buffer instead of through a bytes object first."""
        fh = fip.contents if self.raw_fi else fip.contents.fh
        data = self.operations.read(None if path is None else path.decode(self.encoding, self.errors),
                                    size, offset, fh)
        count = len(data)
        if count > size:
            raise ValueError(f"read returned {count} bytes, more than the {size} asked")
        if isinstance(data, memoryview):
            target = byte_array(size).from_address(ctypes.addressof(buf.contents))
            memoryview(target).cast("B")[:count] = data.cast("B")
        elif count:
            ctypes.memmove(buf, data, count)
        return count

    def _template_struct(self, template: dict) -> mfusepy.c_stat:
        """A struct of its own for one call, copied from the one filled from `template` the
        first time any call met it. The templates of StampedStat live long (one per file size
        and mode of a mount's commit folders, views/blob.py): filling a struct field by field
        cost more than the rest of a commit folder's listing. Each call gets a copy, as it
        sets the times of each entry while other threads list other folders."""
        structs: dict[int, tuple[dict, mfusepy.c_stat]] = self.__dict__.setdefault("_template_structs", {})
        kept = structs.get(id(template))
        if kept is None or kept[0] is not template:
            if len(structs) >= self.TEMPLATE_STRUCTS:
                structs.clear()
            filled = mfusepy.c_stat()
            mfusepy.set_st_attrs(filled, template, use_ns=self.use_ns)
            kept = structs[id(template)] = (template, filled)  # holding the template keeps its id() its own
        return mfusepy.c_stat.from_buffer_copy(kept[1])

    if mfusepy.fuse_version_major == 3:
        def readdir_fuse_3(self, path, buf, filler, offset, fip, flags):
            if not flags & FUSE_READDIR_PLUS:
                return self._readdir(path, buf, filler, offset, fip)
            decoded = path.decode(self.encoding, self.errors)
            listings: dict[str, Any] = self.__dict__.setdefault("_listings", {})
            items = listings.get(decoded) if offset else None
            if items is None:
                items = self.operations.readdir_with_attrs(decoded, fip.contents.fh)
            encoding, errors, use_ns = self.encoding, self.errors, self.use_ns
            # Structs filled once per attrs dict (often shared) or StampedStat template, each
            # kept with the object it was filled from: a listing made as it is read frees an
            # entry's attrs once passed, and a new one may then take the same id().
            stats: dict[int, tuple[Any, mfusepy.c_stat]] = {}
            typed: dict[int, mfusepy.c_stat] = {}
            # One struct per StampedStat template and call, its times set for each entry:
            # libfuse copies the attributes before the filler returns.
            stamped: dict[int, tuple[Any, mfusepy.c_stat]] = {}
            position = offset
            end = len(items)
            while position < end:
                item = items[position]
                position += 1
                if isinstance(item, str):
                    name, attrs = item, None
                else:
                    name, attrs = item[0], item[1]
                if attrs is None:
                    full = filler(buf, name.encode(encoding, errors), None, position, 0)
                elif type(attrs) is StampedStat:  # a template's struct with its own times
                    kept = stamped.get(id(attrs.template))
                    if kept is None:
                        kept = stamped[id(attrs.template)] = (attrs.template, self._template_struct(attrs.template))
                    st = kept[1]
                    st.st_atimespec.tv_sec = st.st_mtimespec.tv_sec = attrs.seconds
                    st.st_ctimespec.tv_sec = attrs.changed
                    full = filler(buf, name.encode(encoding, errors), ctypes.byref(st), position, FUSE_FILL_DIR_PLUS)
                elif isinstance(attrs, int):  # the type alone: the entry's d_type, no attributes
                    st = typed.get(attrs)
                    if st is None:
                        st = typed[attrs] = mfusepy.c_stat()
                        st.st_mode = attrs
                    full = filler(buf, name.encode(encoding, errors), ctypes.byref(st), position, 0)
                else:
                    kept = stats.get(id(attrs))
                    if kept is None:
                        kept = stats[id(attrs)] = (attrs, mfusepy.c_stat())
                        if use_ns:
                            fill_stat(kept[1], attrs)
                        else:
                            mfusepy.set_st_attrs(kept[1], attrs)
                    full = filler(buf, name.encode(encoding, errors), ctypes.byref(kept[1]), position,
                                  FUSE_FILL_DIR_PLUS)
                if full:  # the kernel's buffer is full: it asks again from this entry's offset
                    break
            if offset and offset >= end:
                # The call that finds the end, the last of a listing: it goes (a big folder's
                # listing held hundreds of MB until 16 other folders were listed).
                listings.pop(decoded, None)
            elif not offset:
                # Kept for the calls that follow (the next page, and the last one that finds
                # the end): they come at once, on the same open directory, and an offset > 0
                # is only ever asked after an offset 0 that refreshed this.
                if len(listings) >= self.LISTINGS:
                    listings.clear()
                listings[decoded] = items
            return 0


def _disconnected(fd: int) -> bool:
    """Whether a /dev/fuse descriptor no longer serves a mount: closed (-1), or the kernel
    has ended its connection (unmounted, aborted), which poll reports as POLLERR."""
    if fd < 0:
        return True
    poller = select.poll()
    poller.register(fd, 0)  # no event asked: only POLLERR, POLLHUP, POLLNVAL come back
    return any(events & (select.POLLERR | select.POLLNVAL) for _fd, events in poller.poll(0))


class KernelCache:
    """What the kernel caches of the mount, told about the changes GitFS makes behind
    its back (libfuse 3's notifications, from a thread that serves no FUSE request,
    but for invalidate_while_serving).

    - invalidate(paths): drops the attributes and cached pages of each mount path
      (`fuse_invalidate_path`); a path the kernel does not know is skipped.
    - attributes(path): what lstat through the mount shows of it now.
    - invalidate_while_serving(paths): the same from a FUSE call, for what a change
      through one name changed under the file's other names (views/links.py). The
      kernel takes no folder or inode lock for it (only the other names' pages), so the
      call may make it.
    - forget_entries(parents, removed): drops the kernel's name entry (dentry) of each
      removed path (`fuse_lowlevel_notify_inval_entry`, which needs the parent folder's
      node id: `parents` maps a parent's mount path to its st_ino, which is the node id
      in libfuse's high-level API, read with lstat through the mount before the change).

    Active between attach() (FUSE init, in a libfuse thread) and the unmount (asked
    before every notification); a no-op outside, and on a libfuse without these calls.
    Not until detach() (destroy): libfuse calls destroy only after fuse_destroy has freed
    the node table that fuse_invalidate_path reads, and a sync worker still notifying
    then read freed memory (a crash at unmount).
    """

    def __init__(self, mount_point: str):
        self.mount_point = mount_point
        self._fuse: Optional[int] = None
        self._session: Optional[int] = None
        self._lock = threading.Lock()
        # libfuse's functions (ctypes), None on a libfuse without them
        self._invalidate_path: Any = None
        self._notify_inval_entry: Any = None
        self._session_exited: Any = None
        self._session_fd: Any = None
        library = getattr(mfusepy, "_libfuse", None)
        if mfusepy.fuse_version_major == 3 and library is not None and hasattr(library, "fuse_invalidate_path"):
            self._invalidate_path = library.fuse_invalidate_path
            self._invalidate_path.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
            self._invalidate_path.restype = ctypes.c_int
            library.fuse_get_session.argtypes = [ctypes.c_void_p]
            library.fuse_get_session.restype = ctypes.c_void_p
            self._get_session = library.fuse_get_session
            self._notify_inval_entry = library.fuse_lowlevel_notify_inval_entry
            self._notify_inval_entry.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_char_p, ctypes.c_size_t]
            self._notify_inval_entry.restype = ctypes.c_int
            self._session_exited = library.fuse_session_exited
            self._session_exited.argtypes = [ctypes.c_void_p]
            self._session_exited.restype = ctypes.c_int
            self._session_fd = library.fuse_session_fd
            self._session_fd.argtypes = [ctypes.c_void_p]
            self._session_fd.restype = ctypes.c_int

    @property
    def active(self) -> bool:
        return self._fuse is not None

    def attach(self) -> None:
        """In FUSE init: libfuse's context names the `struct fuse *` of this mount."""
        if self._invalidate_path is None:
            return
        fuse = mfusepy._libfuse.fuse_get_context().contents.fuse
        if fuse:
            with self._lock:
                self._fuse = fuse
                self._session = self._get_session(fuse)

    def detach(self) -> None:
        with self._lock:
            self._fuse = self._session = None

    def _serving(self) -> bool:
        """Under self._lock: attached, and the mount still there. libfuse frees the session
        only after destroy, so asking it is safe while attached; its node table goes first,
        once the loop has ended and the mount is gone, and that is what this tells: the
        kernel has dropped the connection (/dev/fuse polls POLLERR), libfuse has closed it
        (fd -1), or its loop is ending (a flag libfuse clears again once the loop is over)."""
        if self._session is None:
            return False
        if self._session_exited(self._session) or _disconnected(self._session_fd(self._session)):
            self._fuse = self._session = None
            return False
        return True

    def node_ids(self, paths: Iterable[str]) -> dict[str, int]:
        """{mount path: node id} of the folders among `paths` that exist now, read through the mount."""
        found: dict[str, int] = {}
        if not self.active:
            return found
        for path in paths:
            try:
                found[path] = os.lstat(self.mount_point + path).st_ino
            except OSError:
                continue
        return found

    def invalidate(self, paths: Iterable[str]) -> None:
        with self._lock:
            for path in paths:
                if not self._serving():  # asked before each: the loop may end meanwhile
                    return
                self._invalidate_path(self._fuse, path.encode("utf-8", "surrogateescape"))

    def attributes(self, path: str) -> Optional[os.stat_result]:
        """What a program's lstat of the mount path shows now (the kernel's cached attributes
        while they last); None when unmounted or missing."""
        if not self.active:
            return None
        try:
            return os.lstat(self.mount_point + path)
        except OSError:
            return None

    def invalidate_while_serving(self, paths: Iterable[str]) -> None:
        """invalidate(), from a FUSE call of this mount: the session lives at least as long
        as the call, so no lock is taken. Taking it could deadlock: the sync worker holds
        it while the kernel waits, in forget_entries, for a folder's lock that the program
        whose call this is may hold (a `ln` in that folder) until the call answers."""
        fuse = self._fuse
        if fuse is None or self._invalidate_path is None:
            return
        for path in paths:
            self._invalidate_path(fuse, path.encode("utf-8", "surrogateescape"))

    def forget_entries(self, parents: dict[str, int], removed: Iterable[str]) -> None:
        with self._lock:
            for path in removed:
                parent, name = path.rsplit("/", 1)
                node = parents.get(parent or "/")
                if node is None:
                    continue  # the kernel never looked into that folder
                if not self._serving():
                    return
                encoded = name.encode("utf-8", "surrogateescape")
                self._notify_inval_entry(self._session, node, encoded, len(encoded))
