"""Which paths are LFS: `filter=lfs` in the attributes in effect (what `git lfs track`
writes: `*.bin filter=lfs diff=lfs merge=lfs -text`).

The core answers from the working tree's .gitattributes (and .git/info/attributes);
for a path of an older commit, where pygit2 can (1.13 and later), from that commit's
.gitattributes too, so a pointer committed under a rule removed since still reads as
its content.
"""

from __future__ import annotations

import os
from typing import Optional

from gitfs.repo import beneath
from gitfs.repo.content_filter import FilterSource, ObjectId

FILTER = "filter"
LFS = "lfs"
ATTRIBUTES_FILE = ".gitattributes"


def is_lfs_path(source: FilterSource, path: str, commit: Optional[ObjectId] = None) -> bool:
    """Whether path (relative to the root) is under a filter=lfs rule: the working tree's,
    and, given a commit, that commit's too where the core can read them."""
    return source.attribute(path, FILTER, commit) == LFS


def rules_use_lfs(text: bytes) -> bool:
    """Whether an attributes file's text sets filter=lfs for some pattern."""
    for line in text.decode("utf-8", "replace").splitlines():
        words = line.split()
        if words and not words[0].startswith("#") and f"{FILTER}={LFS}" in words[1:]:
            return True
    return False


def tip_uses_lfs(source: FilterSource) -> bool:
    """Whether a .gitattributes of the branch tip, any folder's, has a filter=lfs rule
    (LFS's default: on then)."""
    return any(rules_use_lfs(text) for text in source.tip_texts_named(ATTRIBUTES_FILE).values())


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
