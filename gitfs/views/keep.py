"""The `.keep` rule: GitFS's placeholder versus a user's `.keep` file.

Git stores no empty folders, so GitFS keeps a folder made through the mount
by writing an empty `.keep` in it. An EMPTY regular file named `.keep` is that
placeholder, whoever wrote it: not listed, removed with its folder by rmdir,
and no obstacle to renaming a folder over its own. It still opens by name, so
`touch d/.keep` or `cat d/.keep` work as anywhere. A `.keep` WITH content (or
one that is a link or a folder) is an ordinary file: listed, and it makes its
folder non-empty. Both kinds are committed.
"""

from __future__ import annotations

import os
import stat

from gitfs.repo.repository import KEEP_FILE


def is_placeholder(dir_fd: int, relative: str) -> bool:
    """Whether the `.keep` at `relative` (to dir_fd) is GitFS's placeholder: an empty regular file."""
    try:
        st = os.lstat(relative, dir_fd=dir_fd)
    except (FileNotFoundError, NotADirectoryError):
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size == 0


def write_placeholder(dir_fd: int, relative: str = KEEP_FILE) -> None:
    """An empty `.keep` at `relative` to dir_fd (left as it is if one exists)."""
    os.close(os.open(relative, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=dir_fd))


def only_placeholder(names: list[str], dir_fd: int, relative_keep: str) -> bool:
    """Whether a folder listing `names` holds GitFS's placeholder and nothing else."""
    return names == [KEEP_FILE] and is_placeholder(dir_fd, relative_keep)
