"""The other names of hard-linked files in the working tree.

A write or truncate through one name of a file with several hard links changes every
name, but a commit job names only the one written through: the batch must stage the
others too, or their change would wait for an unrelated later write. Git keeps no hard
links, so such names exist only where a program made them (link(2) in current/).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable

from gitfs.repo.filemodes import GIT_DIR


def other_names(workdir: str, paths: Iterable[str], linked: Iterable[tuple[int, int]] = ()) -> set[str]:
    """The names, relative to workdir, of the files at `paths` (relative) that have
    several links, and of the files `linked` names by (device, inode), but for `paths`
    themselves. One walk of the working tree, only when there is such a file."""
    given = {path.strip("/") for path in paths}
    inodes = set(linked)
    for relative in given:
        try:
            status = os.lstat(os.path.join(workdir, relative))
        except (OSError, ValueError):
            continue
        if stat.S_ISREG(status.st_mode) and status.st_nlink > 1:
            inodes.add((status.st_dev, status.st_ino))
    if not inodes:
        return set()
    numbers = {number for _device, number in inodes}
    found = set()
    folders = [workdir]
    while folders:
        folder = folders.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:  # gone meanwhile, or a path too long for one call: nothing to find there
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if not (folder == workdir and entry.name == GIT_DIR):
                    folders.append(entry.path)
            elif entry.inode() in numbers:  # from the listing: no stat for the other files
                try:
                    status = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if (status.st_dev, status.st_ino) in inodes:
                    found.add(os.path.relpath(entry.path, workdir))
    return found - given
