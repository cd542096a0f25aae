"""A copy that failed is never published: a file whose last write through the mount
failed (EFBIG over max_size, ENOSPC on a full disk) stays in current/ as it is, is left
out of every commit and named in the status, and is committed once a write to it
succeeds (or goes once it is removed). Everything else syncs meanwhile."""

from __future__ import annotations

import errno
import os
import subprocess

import pytest

from helpers import read_status, run_gitfs, wait_for, wait_synced


def failed_paths(mount) -> list[str]:
    return [entry["path"] for entry in read_status(mount).get("failed_writes", [])]


def test_a_copy_over_max_size_is_never_on_the_remote(remote, mount_gitfs, tmp_path):
    scan = tmp_path / "scan.pdf"
    scan.write_bytes(os.urandom(3 << 20))
    mount = mount_gitfs(remote, max_size=1)
    copy = subprocess.run(["cp", str(scan), str(mount.current / "scan.pdf")], capture_output=True, text=True)
    assert copy.returncode != 0 and "File too large" in copy.stderr, copy.stderr
    assert 0 < os.path.getsize(mount.current / "scan.pdf") <= 1 << 20  # what cp wrote before EFBIG
    (mount.current / "notes.txt").write_text("written after the failed copy\n")
    wait_for(lambda: "notes.txt" in remote.files(), timeout=30, message="the other change on the remote")
    wait_synced(mount)
    assert "scan.pdf" not in remote.files()
    assert failed_paths(mount) == ["scan.pdf"]
    assert read_status(mount)["failed_writes"][0]["error"] == os.strerror(errno.EFBIG)
    shown = run_gitfs("status", mount.path).stdout
    assert "not committed: /scan.pdf: its last write failed (File too large)" in shown, shown

    mount.stop()  # a remount does not commit it either (it commits what a crash left)
    mount = mount_gitfs(remote, repo_path=mount.repo_path, max_size=1)
    wait_synced(mount)
    assert "scan.pdf" not in remote.files() and failed_paths(mount) == ["scan.pdf"]

    os.rename(mount.current / "scan.pdf", mount.current / "renamed.pdf")  # the mark goes with it
    wait_synced(mount)
    assert failed_paths(mount) == ["renamed.pdf"] and "renamed.pdf" not in remote.files()
    (mount.current / "renamed.pdf").write_bytes(b"%PDF-1.7 a small scan\n")  # written again, whole
    wait_for(lambda: "renamed.pdf" in remote.files(), timeout=30, message="the file once written whole")
    assert remote.show("renamed.pdf") == b"%PDF-1.7 a small scan\n"
    assert failed_paths(mount) == []


def test_a_program_that_finishes_after_an_error_is_committed_as_today(remote, mount_gitfs):
    mount = mount_gitfs(remote, max_size=1)
    fd = os.open(mount.current / "log.txt", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        with pytest.raises(OSError) as raised:
            os.pwrite(fd, b"x" * 4096, 1 << 20)
        assert raised.value.errno == errno.EFBIG
        assert os.pwrite(fd, b"finished normally\n", 0) == 18
    finally:
        os.close(fd)
    wait_for(lambda: "log.txt" in remote.files(), timeout=30, message="the finished file on the remote")
    assert remote.show("log.txt") == b"finished normally\n" and failed_paths(mount) == []


@pytest.fixture
def small_disk(tmp_path):
    """A 3 MiB tmpfs for the clone: a write that does not fit is ENOSPC. (Asked for before
    mount_gitfs, so that it is unmounted after the mount.)"""
    disk = tmp_path / "small-disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(disk)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


def test_a_write_that_fills_the_disk_is_not_published_and_its_removal_clears_it(small_disk, remote, mount_gitfs):
    mount = mount_gitfs(remote, repo_path=small_disk / "clone")
    with pytest.raises(OSError) as raised, open(mount.current / "video.mp4", "wb") as handle:
        for _ in range(64):
            handle.write(os.urandom(1 << 16))
            handle.flush()
    assert raised.value.errno == errno.ENOSPC
    wait_for(lambda: failed_paths(mount) == ["video.mp4"], timeout=10, message="the failed write in the status")
    os.unlink(mount.current / "video.mp4")  # the user frees the space: nothing is owed
    (mount.current / "notes.txt").write_text("after the full disk\n")
    wait_for(lambda: "notes.txt" in remote.files(), timeout=30, message="the next change on the remote")
    assert "video.mp4" not in remote.files() and failed_paths(mount) == []
