"""Hard links in current/: the kernel's view of a file's other names.

libfuse's high-level API gives each name its own node, so the kernel caches each
name's attributes (and pages) apart, for an hour (cache_policy.ATTRIBUTES). A change
through one name (chmod, a write, truncate, new times, a link added or removed)
changes the file under its other names too: CurrentView tells the kernel to forget
what it holds of the other names in the same folder. Names in other folders are not
looked for (that would take a walk of the tree); they show the change once the
kernel asks again (README, "Performance and kernel caching").
"""

from __future__ import annotations

import os
import stat
from collections.abc import Collection
from typing import Optional, Protocol

from gitfs.repo import beneath


class KernelAttributes(Protocol):
    def forget_attributes(self, paths: Collection[str]) -> None:
        """The kernel forgets the attributes and pages it holds of these paths of current/
        ("/d/f"); called while serving a FUSE call."""
        ...

    def replaced_meanwhile(self, path: str) -> bool:
        """Whether the kernel may still hold the name `path` ("/d/f") for what the sync
        just removed or replaced by another kind of thing (cache_policy.WorktreeForgetter)."""
        ...

    def made(self, path: str) -> None:
        """A call made the name `path` ("/d/f") anew: replaced_meanwhile no longer holds for it."""
        ...


def same_file_names(folder_fd: int, folder: str, file: os.stat_result) -> list[str]:
    """The paths ("/d/f", folder being "/d" or "") of the names in the folder that name `file`."""
    names = []
    with os.scandir(folder_fd) as entries:
        for entry in entries:
            if not entry.is_file(follow_symlinks=False):
                continue
            try:
                found = os.lstat(entry.name, dir_fd=folder_fd)
            except OSError:
                continue  # gone meanwhile
            if (found.st_ino, found.st_dev) == (file.st_ino, file.st_dev) and stat.S_ISREG(found.st_mode):
                names.append(f"{folder}/{entry.name}")
    return names


def folder_of(path: str) -> str:
    """The folder of a path of current/: "/d" for "/d/f", "" for "/f"."""
    return path.rpartition("/")[0]


def lstat_or_none(relative: str, root_fd: int) -> Optional[os.stat_result]:
    try:
        return beneath.lstat(root_fd, relative)
    except OSError:
        return None
