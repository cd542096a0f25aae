"""Layer 3 fixtures shared by the mount tests (the mount itself is conftest.py's mount_gitfs)."""

import pytest


@pytest.fixture(params=["openat2", "walk"])
def resolver(request, monkeypatch):
    """Each test twice: the daemons it starts resolve paths beneath the clone with openat2
    (where the kernel has it), then with the walk of one component at a time."""
    if request.param == "walk":
        monkeypatch.setenv("GITFS_NO_OPENAT2", "1")
    return request.param
