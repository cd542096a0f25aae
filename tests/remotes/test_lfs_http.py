"""Git LFS over HTTP(S): giftless behind the nginx that serves git, basic auth on the batch
API, the real git-lfs client as the other person.
"""

from __future__ import annotations

import os

import pytest

from helpers import at, wait_for
from servers import HTTP_PASSWORD, HTTP_USER

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/fuse"), reason="/dev/fuse is missing")

BIG = bytes(range(256)) * 8192


def test_content_pushed_by_git_lfs_reads_right(lfs_http, mount_gitfs):
    mount = mount_gitfs(at(lfs_http.http_url), username=HTTP_USER, password=HTTP_PASSWORD)
    assert os.stat(mount.current / "big.bin").st_size == len(BIG)
    assert (mount.current / "big.bin").read_bytes() == BIG
