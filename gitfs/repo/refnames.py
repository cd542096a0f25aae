"""The names of the refs GitFS keeps: the branch, and the remote's copy of it."""

REMOTE_NAME = "origin"


def branch_ref(branch: str) -> str:
    return f"refs/heads/{branch}"


def remote_ref(branch: str) -> str:
    return f"refs/remotes/{REMOTE_NAME}/{branch}"
