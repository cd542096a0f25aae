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

from gitfs.repo import beneath
from gitfs.repo.filemodes import GIT_DIR

_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


def other_names(workdir: str, paths: Iterable[str], linked: Iterable[tuple[int, int]] = ()) -> set[str]:
    """The names, relative to workdir, of the files at `paths` (relative) that have
    several links, and of the files `linked` names by (device, inode), but for `paths`
    themselves. One walk of the working tree, only when there is such a file. Every
    folder is reached through its parent's descriptor, never followed through a link:
    a path of any length is found."""
    given = {path.strip("/") for path in paths}
    inodes = set(linked)
    try:
        root_fd = os.open(workdir, _FOLDER)
    except OSError:
        return set()
    try:
        for relative in given:
            try:
                status = beneath.lstat(root_fd, relative)
            except (OSError, ValueError):
                continue
            if stat.S_ISREG(status.st_mode) and status.st_nlink > 1:
                inodes.add((status.st_dev, status.st_ino))
        if not inodes:
            return set()
        return _names_of(root_fd, inodes) - given
    finally:
        os.close(root_fd)


def _names_of(root_fd: int, inodes: set[tuple[int, int]]) -> set[str]:
    """The relative names of the files with these (device, inode) in the tree under root_fd."""
    numbers = {number for _device, number in inodes}
    found = set()
    folders = [(os.dup(root_fd), "")]
    while folders:
        folder_fd, prefix = folders.pop()
        try:
            entries = list(os.scandir(folder_fd))
            for entry in entries:
                name = prefix + entry.name
                if entry.is_dir(follow_symlinks=False):
                    if name == GIT_DIR:
                        continue
                    try:
                        folders.append((os.open(entry.name, _FOLDER | os.O_NOFOLLOW, dir_fd=folder_fd), name + "/"))
                    except OSError:  # gone meanwhile, or replaced by a link
                        continue
                elif entry.inode() in numbers:  # from the listing: no stat for the other files
                    try:
                        status = os.stat(entry.name, dir_fd=folder_fd, follow_symlinks=False)
                    except OSError:
                        continue
                    if (status.st_dev, status.st_ino) in inodes:
                        found.add(name)
        except OSError:  # the folder gone meanwhile
            pass
        finally:
            os.close(folder_fd)
    return found
