"""Layer 3: the `lfs` and `lfs_url` options and a committed .lfsconfig, on real mounts."""

from __future__ import annotations

import shutil

from gitfs.lfs import pointer
from helpers import LFS_BIG, git, wait_for


def test_lfs_off_shows_pointers(lfs_remote, mount_gitfs):
    mount = mount_gitfs(lfs_remote, lfs="false")
    text = lfs_remote.show("big.bin")
    assert (mount.current / "big.bin").read_bytes() == text
    assert (mount.history / lfs_remote.head()[:7] / "big.bin").read_bytes() == text
    assert not (mount.repo_path / ".git" / "lfs").exists()


def _move_store(lfs_remote, tmp_path):
    """The objects leave the remote for another repository's lfs/ folder."""
    elsewhere = tmp_path / "objects-elsewhere.git"
    git("init", "-q", "--bare", str(elsewhere))
    shutil.move(str(lfs_remote.bare / "lfs"), str(elsewhere / "lfs"))
    return elsewhere


def test_lfs_url_option_names_the_store(lfs_remote, mount_gitfs, tmp_path):
    elsewhere = _move_store(lfs_remote, tmp_path)
    mount = mount_gitfs(lfs_remote, lfs_url=f"file://{elsewhere}")
    assert (mount.current / "big.bin").read_bytes() == LFS_BIG
    (mount.current / "new.bin").write_bytes(b"new content\n" * 50)
    wait_for(lambda: "new.bin" in lfs_remote.files(), timeout=60, message="new.bin on the remote")
    made = pointer.parse(lfs_remote.show("new.bin"))
    assert (elsewhere / "lfs" / "objects" / made.oid[:2] / made.oid[2:4] / made.oid).is_file()


def test_committed_lfsconfig_names_the_store(lfs_remote, mount_gitfs, tmp_path):
    elsewhere = _move_store(lfs_remote, tmp_path)
    (lfs_remote.work / ".lfsconfig").write_text(f"[lfs]\n\turl = file://{elsewhere}\n")
    git("add", ".lfsconfig", cwd=lfs_remote.work)
    lfs_remote.commit_staged("objects live elsewhere", push=False)
    git("push", "-q", "--no-verify", "origin", "main", cwd=lfs_remote.work)  # git-lfs's hook: nothing to send
    mount = mount_gitfs(lfs_remote)
    assert (mount.current / "big.bin").read_bytes() == LFS_BIG
