"""Layer 3: Git LFS follows the branch, on read-write and read-only mounts alike.

A read-only mount shows an LFS file a colleague changes, with its content, and finds
nothing to keep at start. A remote that adopts LFS while mounted (a colleague pushes the
first `filter=lfs` rule, or the user writes it through the mount) gets pointers for the
files written under the rule afterwards, never raw blobs, with their objects uploaded.
"""

from __future__ import annotations

import os

from gitfs.lfs import pointer
from helpers import LFS_ATTRIBUTES, LFS_BIG, git, git_lfs, lfs_clone, wait_for, wait_synced


def test_a_read_only_mount_shows_a_colleagues_lfs_change(lfs_remote, mount_gitfs):
    mount = mount_gitfs(lfs_remote, ro=True)
    assert (mount.current / "big.bin").read_bytes() == LFS_BIG
    changed = b"changed by the colleague\n" * 8000
    lfs_remote.commit({"big.bin": changed, "new/added.bin": b"added\n" * 100}, "colleague")
    wait_for(lambda: (mount.current / "big.bin").read_bytes() == changed, timeout=60,
             message="the colleague's big.bin in the read-only mount")
    assert (mount.current / "new" / "added.bin").read_bytes() == b"added\n" * 100
    assert "uncommitted changes" not in mount.log_text()


def assert_pushed_as_lfs(remote, name: str, content: bytes) -> None:
    made = pointer.parse(remote.show(name))
    assert made is not None, f"{name} was pushed as a raw blob, not an LFS pointer"
    assert made.size == len(content) and remote.object_path(made.oid).read_bytes() == content


def test_a_remote_that_adopts_lfs_while_mounted(lfs_plain_remote, mount_gitfs, tmp_path):
    mount = mount_gitfs(lfs_plain_remote)
    before = os.urandom(64 * 1024)
    (mount.current / "early.iso").write_bytes(before)  # no rule yet: an ordinary blob
    wait_for(lambda: "early.iso" in lfs_plain_remote.files(), timeout=30, message="early.iso on the remote")
    assert lfs_plain_remote.show("early.iso") == before
    # The colleague tracks *.iso with git-lfs and pushes the rule and a first LFS file.
    other = lfs_plain_remote.work
    git("pull", "-q", cwd=other)
    git_lfs("track", "*.iso", cwd=other)
    lfs_plain_remote.commit({".gitattributes": (other / ".gitattributes").read_text(),
                             "theirs.iso": b"their disk\n" * 1000}, "track *.iso with Git LFS")
    wait_for(lambda: (mount.current / "theirs.iso").exists() and
             (mount.current / "theirs.iso").read_bytes() == b"their disk\n" * 1000, timeout=60,
             message="their LFS file, with its content, in current/")
    disk = os.urandom(2 * 1024 * 1024)
    (mount.current / "disk.iso").write_bytes(disk)
    wait_for(lambda: "disk.iso" in lfs_plain_remote.files(), timeout=60, message="disk.iso on the remote")
    assert_pushed_as_lfs(lfs_plain_remote, "disk.iso", disk)
    wait_synced(mount)
    fresh = lfs_clone(str(lfs_plain_remote.bare), tmp_path / "fresh")
    assert (fresh / "disk.iso").read_bytes() == disk


def test_a_rule_written_through_the_mount(lfs_plain_remote, mount_gitfs):
    mount = mount_gitfs(lfs_plain_remote)
    (mount.current / ".gitattributes").write_text(LFS_ATTRIBUTES)
    video = os.urandom(1024 * 1024)
    (mount.current / "video.bin").write_bytes(video)
    wait_for(lambda: "video.bin" in lfs_plain_remote.files(), timeout=60, message="video.bin on the remote")
    assert_pushed_as_lfs(lfs_plain_remote, "video.bin", video)
