"""pygit2 from 1.11 (Debian 12's python3-pygit2, on libgit2 1.5) to today's.

pygit2 1.14 grouped libgit2's constants into `pygit2.enums`; older releases
have only the flat `GIT_*` names. GitFS names them as the enums do; on an
older pygit2 the same libgit2 values stand in. Methods added since 1.11 have
a fallback here. libgit2 before 1.7 has no server timeouts and no HOMEDIR
option: `set_option` says whether an option was applied.
"""

from __future__ import annotations

import ctypes
import enum
import inspect
import os
import sys
from typing import cast

import pygit2

try:
    from pygit2.enums import CredentialType, DeltaStatus, DiffOption, FileStatus, RepositoryOpenFlag, SortMode
except ImportError:  # pygit2 < 1.14: the same values, libgit2's own (stable across releases)
    class CredentialType(enum.IntFlag):  # type: ignore[no-redef]  # git_credential_t
        USERPASS_PLAINTEXT = 1 << 0
        SSH_KEY = 1 << 1
        USERNAME = 1 << 5

    class DeltaStatus(enum.IntEnum):  # type: ignore[no-redef]  # git_delta_t
        ADDED = 1
        DELETED = 2

    class DiffOption(enum.IntFlag):  # type: ignore[no-redef]  # git_diff_option_t
        FORCE_TEXT = 1 << 20

    class FileStatus(enum.IntFlag):  # type: ignore[no-redef]  # git_status_t
        WT_MODIFIED = 1 << 8
        IGNORED = 1 << 14

    class RepositoryOpenFlag(enum.IntFlag):  # type: ignore[no-redef]  # git_repository_open_flag_t
        NO_SEARCH = 1 << 0

    class SortMode(enum.IntFlag):  # type: ignore[no-redef]  # git_sort_t
        NONE = 0
        TOPOLOGICAL = 1 << 0
        TIME = 1 << 1
        REVERSE = 1 << 2

__all__ = ["CredentialType", "DeltaStatus", "DiffOption", "FileStatus", "SortMode", "blob_size", "remove_directory",
           "push", "set_mwindow_file_limit", "set_option", "set_ssh_home", "tree_entry",
           "RepositoryOpenFlag"]
GIT_OPT_SET_MWINDOW_FILE_LIMIT = 30  # libgit2's git_libgit2_opt_t, the same from 1.1 to today


def set_option(name: str, *values) -> bool:
    """pygit2.option(pygit2.NAME, *values); False if this pygit2 or libgit2 lacks NAME."""
    option = getattr(pygit2, name, None)
    if option is None:
        return False
    try:
        pygit2.option(option, *values)
    except (ValueError, pygit2.GitError):  # known to pygit2, not to the libgit2 it runs on
        return False
    return True


def set_mwindow_file_limit(limit: int) -> bool:
    """The most pack files libgit2 keeps open at once, process-wide (0: no limit, its
    default). pygit2 before 1.15 does not name the option, though every libgit2 it runs
    on (1.1 and later) has it: then git_libgit2_opts is called directly, through the
    library pygit2 loaded."""
    if set_option("GIT_OPT_SET_MWINDOW_FILE_LIMIT", limit):
        return True
    try:
        git_libgit2_opts = ctypes.CDLL(pygit2._pygit2.__file__).git_libgit2_opts
    except (OSError, AttributeError):
        return False
    git_libgit2_opts.restype = ctypes.c_int
    return git_libgit2_opts(ctypes.c_int(GIT_OPT_SET_MWINDOW_FILE_LIMIT), ctypes.c_size_t(limit)) == 0


def blob_size(git: pygit2.Repository, oid: pygit2.Oid) -> int:
    """The size of a blob, read from its header where this pygit2 can (Odb.read_header)."""
    read_header = getattr(git.odb, "read_header", None)
    if read_header is not None:
        return read_header(oid)[1]
    return cast(pygit2.Blob, git[oid]).size  # older pygit2: reads the whole object


def tree_entry(tree: pygit2.Tree, name: str) -> pygit2.Object:
    """tree[name] (KeyError if missing). pygit2 1.21 (not 1.11) keeps a reference to the
    name it is given for good: a name made for each lookup (a FUSE path split in parts)
    was kept once per lookup, ~60 bytes each, so a daemon grew by ~20 MB per grep -r over
    100,000 files of a commit folder. The interned name is kept once per distinct name."""
    return tree[sys.intern(name)]


def remove_directory(index: pygit2.Index, path: str) -> None:
    """Remove every entry under the directory path from the index (Index.remove_directory)."""
    if hasattr(index, "remove_directory"):
        index.remove_directory(path)
        return
    prefix = path.rstrip("/") + "/"
    for entry_path in [entry.path for entry in index if entry.path.startswith(prefix)]:
        index.remove(entry_path)


def set_ssh_home(home: str) -> bool:
    """Where libgit2 looks for .ssh/known_hosts (GIT_OPT_SET_HOMEDIR, libgit2 1.7 and later).

    False on an older libgit2, which reads only $HOME/.ssh/known_hosts."""
    if set_option("GIT_OPT_SET_HOMEDIR", home):
        return True
    return os.path.realpath(home) == os.path.realpath(os.path.expanduser("~"))  # the default is enough


def push(remote: pygit2.Remote, specs: list[str], callbacks: pygit2.RemoteCallbacks, threads: int) -> None:
    """remote.push with `threads` pack-building threads (0: one per processor); pygit2
    before 1.15 has no such parameter and builds the pack in one thread."""
    if "threads" in inspect.signature(remote.push).parameters:
        remote.push(specs, callbacks=callbacks, threads=threads)
    else:
        remote.push(specs, callbacks=callbacks)
