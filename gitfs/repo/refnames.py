"""The names of the refs GitFS keeps: the branch, and the remote's copy of it.

Each is made once per branch and the same string handed out ever after: pygit2 1.21
keeps a reference to the name a reference lookup is given for good, so a name made
anew for each lookup (the fetch worker's, every second) was kept once per lookup,
~65 bytes each, ~0.5 MB an hour of a mount's life."""

import functools

REMOTE_NAME = "origin"


@functools.lru_cache(maxsize=64)
def branch_ref(branch: str) -> str:
    return f"refs/heads/{branch}"


@functools.lru_cache(maxsize=64)
def remote_ref(branch: str) -> str:
    return f"refs/remotes/{REMOTE_NAME}/{branch}"
