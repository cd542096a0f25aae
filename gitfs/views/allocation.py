"""fallocate(2) with its mode, which os.posix_fallocate lacks: allocating space, punching
holes and zeroing ranges of a working-tree file (the clone's own file system does the work).

The FUSE kernel module passes on the modes it knows (FALLOC_FL_KEEP_SIZE,
FALLOC_FL_PUNCH_HOLE, and on newer kernels FALLOC_FL_ZERO_RANGE) and answers EOPNOTSUPP
for the others itself.
"""

from __future__ import annotations

import ctypes
import os

FALLOC_FL_KEEP_SIZE = 0x01
FALLOC_FL_PUNCH_HOLE = 0x02
FALLOC_FL_ZERO_RANGE = 0x10

_libc = ctypes.CDLL(None, use_errno=True)
_libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
_libc.fallocate.restype = ctypes.c_int


def fallocate(fd: int, mode: int, offset: int, length: int) -> None:
    """fallocate(fd, mode, offset, length); OSError with the system's errno if it fails."""
    if _libc.fallocate(fd, mode, offset, length) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
