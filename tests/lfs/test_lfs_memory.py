"""Layer 3: a big LFS file streams through the mount; the daemon never holds it in memory.

A 512 MiB object pushed by git-lfs is checked out at mount and read whole through
history/; the daemon's peak resident memory (VmHWM) grows by less than 64 MiB.
"""

from __future__ import annotations

import hashlib
import os

from gitfs.lfs import pointer
from helpers import git

SIZE = 512 * 1024 * 1024
CHUNK = 1024 * 1024
LIMIT = 64 * 1024 * 1024


def peak_rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def test_a_512_mib_file_streams_through_history(lfs_remote, mount_gitfs):
    digest = hashlib.sha256()
    with open(lfs_remote.work / "video.bin", "wb") as out:
        block = os.urandom(CHUNK)
        for number in range(SIZE // CHUNK):
            chunk = number.to_bytes(8, "big") + block[8:]
            digest.update(chunk)
            out.write(chunk)
    git("add", "video.bin", cwd=lfs_remote.work)
    sha = lfs_remote.commit_staged("a big video")
    assert pointer.parse(lfs_remote.show("video.bin")).size == SIZE

    mount = mount_gitfs(lfs_remote)
    before = peak_rss(mount.process.pid)
    read = hashlib.sha256()
    with open(mount.history / sha[:7] / "video.bin", "rb") as handle:
        while True:
            chunk = handle.read(CHUNK)
            if not chunk:
                break
            read.update(chunk)
    assert read.hexdigest() == digest.hexdigest()
    grown = peak_rss(mount.process.pid) - before
    assert grown < LIMIT, f"the daemon's peak RSS grew by {grown // 2**20} MiB"
