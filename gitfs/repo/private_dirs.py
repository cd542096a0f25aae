"""Folders private to the user: what GitFS creates for a clone and its state is 0700,
whatever the umask, so that no other local user reads a repository the mount keeps private."""

from __future__ import annotations

import os
import stat

PRIVATE_DIR_MODE = 0o700


def make_private_dirs(path: str) -> None:
    """Create path and its missing parents, each 0700 whatever the umask (folders that
    exist are left as they are)."""
    missing = []
    current = os.path.abspath(path)
    while not os.path.isdir(current):
        missing.append(current)
        current = os.path.dirname(current)
    for folder in reversed(missing):
        try:
            os.mkdir(folder, PRIVATE_DIR_MODE)
        except FileExistsError:  # another mount starting at the same time made it
            continue
        os.chmod(folder, PRIVATE_DIR_MODE)  # mkdir's mode is masked by the umask


def state_folder(git_dir: str) -> str:
    """git_dir/gitfs/: GitFS's own records in a clone (the conflicts log, the failed writes,
    a crash's stacks), made 0700 if missing and if it can be: a caller whose write then
    fails says so in its own words."""
    folder = os.path.join(git_dir, "gitfs")
    try:
        make_private_dirs(folder)
    except OSError:
        pass
    return folder


def open_to_others(path: str) -> bool:
    """Whether users other than the owner may enter path: it and every folder above it
    let group or others through (a 0700 home keeps a 0755 folder in it private)."""
    current = os.path.abspath(path)
    while True:
        if not os.stat(current).st_mode & (stat.S_IXGRP | stat.S_IXOTH):
            return False
        parent = os.path.dirname(current)
        if parent == current:
            return True
        current = parent
