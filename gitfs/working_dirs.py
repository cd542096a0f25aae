"""The folders of a mount that processes work in (their current directory), as mount paths.

Forgetting a name makes the kernel unhash its entry: a shell whose working directory
it is would then be told by getcwd() that the folder is gone (`pwd` fails, `/proc/PID/cwd`
ends in " (deleted)"). The forgetters of cache_policy.py leave these names alone.

Read from /proc: every process the daemon may look at (its own user's; all, as root).
A folder only an open descriptor holds (a program in the middle of a listing) is not
seen; its descriptor keeps working, only its name in /proc shows as deleted.
"""

from __future__ import annotations

import os

PROC = "/proc"


def working_dirs(mount_point: str, proc: str = PROC) -> set[str]:
    """Mount paths ("/", "/history/2024-05-01", ...) of the working directories of processes under mount_point."""
    root = os.path.abspath(mount_point)
    found: set[str] = set()
    try:
        entries = os.listdir(proc)
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            cwd = os.readlink(os.path.join(proc, entry, "cwd"))
        except OSError:  # gone, or another user's
            continue
        if cwd == root:
            found.add("/")
        elif cwd.startswith(root + "/"):
            found.add(cwd[len(root):])
    return found
