"""Which paths are LFS: `filter=lfs` in the attributes in effect (what `git lfs track`
writes: `*.bin filter=lfs diff=lfs merge=lfs -text`).

libgit2 answers from the working tree's .gitattributes (and .git/info/attributes);
for a path of an older commit, pygit2 1.13 and later also read that commit's
.gitattributes, so a pointer committed under a rule removed since still reads as
its content. pygit2 1.11 (Debian 12) reads the working tree's only.
"""

from __future__ import annotations

import inspect
import os
from typing import Optional

import pygit2

from gitfs.repo import beneath
from gitfs.repo.reading import files_named

FILTER = "filter"
LFS = "lfs"
ATTRIBUTES_FILE = ".gitattributes"
_INCLUDE_COMMIT = 1 << 4  # GIT_ATTR_CHECK_INCLUDE_COMMIT; FILE_THEN_INDEX (0) before it
# pygit2 before 1.13 has get_attr(path, name, flags) only.
_COMMIT_ATTRIBUTES = "commit" in inspect.signature(pygit2.Repository.get_attr).parameters


def is_lfs_path(git: pygit2.Repository, path: str, commit: Optional[pygit2.Oid] = None) -> bool:
    """Whether path (relative to the root) is under a filter=lfs rule: the working tree's,
    and, given a commit, that commit's too where pygit2 can read them."""
    if commit is not None and _COMMIT_ATTRIBUTES:
        return git.get_attr(path, FILTER, _INCLUDE_COMMIT, commit) == LFS  # type: ignore[arg-type]
    return git.get_attr(path, FILTER) == LFS


def rules_use_lfs(text: bytes) -> bool:
    """Whether an attributes file's text sets filter=lfs for some pattern."""
    for line in text.decode("utf-8", "replace").splitlines():
        words = line.split()
        if words and not words[0].startswith("#") and f"{FILTER}={LFS}" in words[1:]:
            return True
    return False


def tree_uses_lfs(git: pygit2.Repository, tree: pygit2.Oid) -> bool:
    """Whether a .gitattributes of the tree, any folder's, has a filter=lfs rule (LFS's
    default: on then)."""
    for oid in files_named(git, tree, ATTRIBUTES_FILE).values():
        blob = git[oid]
        if isinstance(blob, pygit2.Blob) and rules_use_lfs(blob.data):
            return True
    return False


def file_uses_lfs(workdir: str, path: str) -> bool:
    """Whether the working tree's attributes file at path has a filter=lfs rule."""
    root = os.open(workdir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fd = beneath.open_beneath(root, path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:  # gone, a link or a folder: no rule
        return False
    finally:
        os.close(root)
    with os.fdopen(fd, "rb") as handle:
        return rules_use_lfs(handle.read(1 << 20))
