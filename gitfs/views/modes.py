"""Modes and times as the caller asked for them, for files GitFS makes or touches on its behalf."""

from __future__ import annotations

import os
import stat
import time
from typing import Callable, Optional

# utimensat(2)'s special tv_nsec values. libfuse hands them over with tv_sec 0 and
# mfusepy (use_ns) turns each timespec into tv_sec * 10**9 + tv_nsec, so they arrive
# as these plain numbers. (A real time of 1.073741822 or 1.073741823 s after the
# epoch reads the same; no program asks for those.)
UTIME_NOW = (1 << 30) - 1
UTIME_OMIT = (1 << 30) - 2


def apply_requested_mode(fd: int, requested: int) -> None:
    """Give a file or folder GitFS just made the permission bits the caller asked for.

    The kernel has applied the caller's umask to `requested` already (GitFS does not
    ask libfuse for FUSE_CAP_DONT_MASK); open(2) and mkdir(2) in the daemon would
    apply the daemon's own umask a second time: `umask 002; mkdir d` gave 755, not
    775. GitFS keeps its umask for everything else it writes (the clone, logs, the
    remote's changes) and sets the asked bits here. Special bits (an inherited
    setgid on a folder) stay as the disk set them.
    """
    actual = stat.S_IMODE(os.fstat(fd).st_mode)
    if actual & 0o777 != requested & 0o777:
        os.fchmod(fd, (actual & ~0o777) | (requested & 0o777))


def utime_ns(times: Optional[tuple[int, int]], current: Callable[[], os.stat_result]) -> Optional[tuple[int, int]]:
    """os.utime's `ns` for FUSE's utimens `times`: UTIME_NOW is now, UTIME_OMIT keeps the
    time the file has (`current()` is its lstat, taken only if needed). None: both now,
    left to the kernel's clock."""
    if times is None or times == (UTIME_NOW, UTIME_NOW):
        return None
    now, st = None, None
    result = []
    for value, key in zip(times, ("st_atime_ns", "st_mtime_ns")):
        if value == UTIME_NOW:
            now = now or time.time_ns()
            value = now
        elif value == UTIME_OMIT:
            st = st or current()
            value = getattr(st, key)
        result.append(value)
    return result[0], result[1]
