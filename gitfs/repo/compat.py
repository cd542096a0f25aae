"""pygit2 from 1.11 (Debian 12's python3-pygit2, on libgit2 1.5) to today's.

pygit2 1.14 grouped libgit2's constants into `pygit2.enums`; older releases
have only the flat `GIT_*` names. GitFS names them as the enums do; on an
older pygit2 the same libgit2 values stand in. libgit2 before 1.7 has no
server timeouts and no HOMEDIR option: `set_option` says whether the option
was applied, so the caller can fall back or carry on without it.
"""

from __future__ import annotations

import enum

import pygit2

try:
    from pygit2.enums import CredentialType, DeltaStatus, FileStatus, SortMode
except ImportError:  # pygit2 < 1.14: the same values, libgit2's own (stable across releases)
    class CredentialType(enum.IntFlag):  # git_credential_t
        USERPASS_PLAINTEXT = 1 << 0
        SSH_KEY = 1 << 1
        USERNAME = 1 << 5

    class DeltaStatus(enum.IntEnum):  # git_delta_t
        DELETED = 2

    class FileStatus(enum.IntFlag):  # git_status_t
        IGNORED = 1 << 14

    class SortMode(enum.IntFlag):  # git_sort_t
        TOPOLOGICAL = 1 << 0
        TIME = 1 << 1
        REVERSE = 1 << 2

__all__ = ["CredentialType", "DeltaStatus", "FileStatus", "SortMode", "blob_size", "set_option"]


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


def blob_size(git: pygit2.Repository, oid: pygit2.Oid) -> int:
    """The size of a blob, from its header where pygit2 can read one (1.15 and later)."""
    read_header = getattr(git.odb, "read_header", None)
    if read_header is not None:
        return read_header(oid)[1]
    return git[oid].size  # older pygit2: reads the whole object
