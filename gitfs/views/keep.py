"""The `.keep` rule: GitFS's placeholder versus a user's `.keep` file.

Git stores no empty folders, so GitFS keeps a folder made through the mount
by writing an empty `.keep` in it. An EMPTY regular file named `.keep` is that
placeholder, whoever wrote it: not listed, removed with its folder by rmdir,
and no obstacle to renaming a folder over its own. It still opens by name, so
`touch d/.keep` or `cat d/.keep` work as anywhere. A `.keep` WITH content (or
one that is a link or a folder) is an ordinary file: listed, and it makes its
folder non-empty. Both kinds are committed.

Every function takes the folder as an open fd: a `.keep` path can be longer than
the folder's, past what one system call takes (see passthrough.py).
"""

from __future__ import annotations

import os
import stat
from typing import Callable, Optional, TypeVar

from gitfs.repo.repository import KEEP_FILE


def is_placeholder(folder_fd: int) -> bool:
    """Whether the folder (an fd) holds GitFS's placeholder: `.keep`, an empty regular file."""
    try:
        st = os.lstat(KEEP_FILE, dir_fd=folder_fd)
    except FileNotFoundError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size == 0


def write_placeholder(folder_fd: int) -> None:
    """An empty `.keep` in the folder (left as it is if one exists)."""
    os.close(os.open(KEEP_FILE, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=folder_fd))


def listing(folder_fd: int) -> tuple[list[str], bool]:
    """(the folder's names, whether its .keep is the placeholder)."""
    names = os.listdir(folder_fd)
    return names, KEEP_FILE in names and is_placeholder(folder_fd)


def typed_listing(folder_fd: int) -> tuple[list[tuple[str, Optional[int]]], bool]:
    """listing, each name with its file type (stat.S_IFMT bits; None if neither a file,
    a folder nor a link), as the folder's own listing tells it: no lstat per name."""
    return _described_listing(folder_fd, _entry_type)


def stat_listing(folder_fd: int) -> tuple[list[tuple[str, Optional[os.stat_result]]], bool]:
    """listing, each name with its lstat (one fstatat in the folder, no path walked again;
    None for a name gone since the folder was read)."""
    return _described_listing(folder_fd, _entry_stat)


T = TypeVar("T")


def _described_listing(folder_fd: int, describe: Callable[[os.DirEntry], T]) -> tuple[list[tuple[str, T]], bool]:
    with os.scandir(folder_fd) as scan:
        entries = [(entry.name, describe(entry)) for entry in scan]
    has_keep = any(name == KEEP_FILE for name, _described in entries)
    return entries, has_keep and is_placeholder(folder_fd)


def _entry_type(entry: os.DirEntry) -> Optional[int]:
    if entry.is_file(follow_symlinks=False):  # files first: the most common, one call each
        return stat.S_IFREG
    if entry.is_dir(follow_symlinks=False):
        return stat.S_IFDIR
    return stat.S_IFLNK if entry.is_symlink() else None


def _entry_stat(entry: os.DirEntry) -> Optional[os.stat_result]:
    try:
        return entry.stat(follow_symlinks=False)
    except FileNotFoundError:
        return None
