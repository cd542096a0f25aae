"""GitFSFUSE: mfusepy's FUSE class with READDIRPLUS answered, and the libfuse 3
constants GitFS uses that mfusepy does not name.

This is the one module that reaches into mfusepy's internals (the per-version
callback `readdir_fuse_3`, `_readdir`, `c_stat`, `set_st_attrs` and the
attributes FUSE.__init__ sets). tests/views/test_fuse_binding.py pins every one
of those names and signatures (and the libfuse struct fields the Router sets),
so that an mfusepy upgrade that moves them fails a test rather than a mount.

Performance: one FUSE round trip costs ~40 µs in this binding, far more than any
lookup GitFS does, so the lever is fewer round trips. Answering READDIRPLUS with
full attributes (for the read-only views that can give them cheaply: history/,
days, commit folders) lets `ls -l` and `ls -R` go without a LOOKUP per entry.
"""

from __future__ import annotations

import ctypes
from typing import Any

import mfusepy

FUSE_CAP_READDIRPLUS_AUTO = 1 << 14  # fuse_common.h; cleared: every readdir call is "plus"
FUSE_READDIR_PLUS = 1  # enum fuse_readdir_flags
FUSE_FILL_DIR_PLUS = 2  # enum fuse_fill_dir_flags


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
    or (name, attrs or None) pairs; the Router does.
    """

    LISTINGS = 16  # directories whose listing is kept between the calls that read it

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
            stats: dict[int, mfusepy.c_stat] = {}  # attrs dicts are often shared: fill each once
            position = offset
            for item in items[offset:]:
                position += 1
                if isinstance(item, str):
                    name, attrs = item, None
                else:
                    name, attrs = item[0], item[1]
                if attrs is None:
                    full = filler(buf, name.encode(encoding, errors), None, position, 0)
                else:
                    st = stats.get(id(attrs))
                    if st is None:
                        st = stats[id(attrs)] = mfusepy.c_stat()
                        mfusepy.set_st_attrs(st, attrs, use_ns=use_ns)
                    full = filler(buf, name.encode(encoding, errors), ctypes.byref(st), position, FUSE_FILL_DIR_PLUS)
                if full:  # the kernel's buffer is full: it asks again from this entry's offset
                    break
            if not offset:
                # Kept for the calls that follow (the next page, and the last one that finds
                # the end): they come at once, on the same open directory, and an offset > 0
                # is only ever asked after an offset 0 that refreshed this.
                if len(listings) >= self.LISTINGS:
                    listings.clear()
                listings[decoded] = items
            return 0
