"""Which paths are LFS: `filter=lfs` in the attributes in effect (what `git lfs track`
writes: `*.bin filter=lfs diff=lfs merge=lfs -text`).

libgit2 answers from the working tree's .gitattributes (and .git/info/attributes);
for a path of an older commit, pygit2 1.13 and later also read that commit's
.gitattributes, so a pointer committed under a rule removed since still reads as
its content. pygit2 1.11 (Debian 12) reads the working tree's only.
"""

from __future__ import annotations

import inspect
from typing import Optional

import pygit2

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
    """Whether a tree's top .gitattributes has a filter=lfs rule (LFS's default: on then)."""
    root = git[tree]
    if not isinstance(root, pygit2.Tree) or ATTRIBUTES_FILE not in root:
        return False
    blob = git[root[ATTRIBUTES_FILE].id]
    return isinstance(blob, pygit2.Blob) and rules_use_lfs(blob.data)
