"""A copy that failed is never published: a file whose last write through the mount
failed (EFBIG over max_size, ENOSPC on a full disk) stays in current/ as it is, is left
out of every commit and named in the status, and is committed once a write to it
succeeds (or goes once it is removed). Everything else syncs meanwhile."""

from __future__ import annotations

import errno
import os
import subprocess

import pytest

from helpers import commit_marker, commits_after, read_status, run_gitfs, wait_for, wait_synced


def write_until_the_disk_is_full(path) -> None:
    """Write 4 MiB in 64 KiB writes to path: the write that finds the disk full is ENOSPC."""
    with pytest.raises(OSError) as raised, open(path, "wb") as handle:
        for _ in range(64):
            handle.write(os.urandom(1 << 16))
            handle.flush()
    assert raised.value.errno == errno.ENOSPC


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

    before = remote.head()
    mount.stop()  # a remount does not commit it either (it commits what a crash left)
    mount = mount_gitfs(remote, repo_path=mount.repo_path, max_size=1)
    marker = commit_marker(mount, remote)
    assert commits_after(remote, before) == [marker] and failed_paths(mount) == ["scan.pdf"]

    os.rename(mount.current / "scan.pdf", mount.current / "renamed.pdf")  # the mark goes with it
    wait_synced(mount)
    assert failed_paths(mount) == ["renamed.pdf"] and "renamed.pdf" not in remote.files()
    (mount.current / "renamed.pdf").write_bytes(b"%PDF-1.7 a small scan\n")  # written again, whole
    wait_for(lambda: "renamed.pdf" in remote.files(), timeout=30, message="the file once written whole")
    assert remote.show("renamed.pdf") == b"%PDF-1.7 a small scan\n"
    assert failed_paths(mount) == []


def test_a_write_below_the_failed_one_finishing_after_it_keeps_the_file_back(remote, mount_gitfs):
    """Samba's asynchronous writes and multi-threaded copiers finish a lower write after
    the one that failed: the file still lacks the failed range, and stays uncommitted
    until it is written whole."""
    mount = mount_gitfs(remote, max_size=1)
    fd = os.open(mount.current / "scan.bin", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        with pytest.raises(OSError) as raised:
            os.pwrite(fd, b"y" * (64 << 10), (1 << 20) - (4 << 10))  # over max_size
        assert raised.value.errno == errno.EFBIG
        assert os.pwrite(fd, b"x" * (512 << 10), 0) == 512 << 10  # below it, finished after it
    finally:
        os.close(fd)
    (mount.current / "notes.txt").write_text("written after the failed copy\n")
    wait_for(lambda: "notes.txt" in remote.files(), timeout=30, message="the other change on the remote")
    wait_synced(mount)
    assert "scan.bin" not in remote.files() and failed_paths(mount) == ["scan.bin"]
    (mount.current / "scan.bin").write_bytes(b"finished normally\n")  # O_TRUNC: written whole
    wait_for(lambda: "scan.bin" in remote.files(), timeout=30, message="the file once written whole")
    assert remote.show("scan.bin") == b"finished normally\n" and failed_paths(mount) == []


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
    write_until_the_disk_is_full(mount.current / "video.mp4")
    wait_for(lambda: failed_paths(mount) == ["video.mp4"], timeout=10, message="the failed write in the status")
    os.unlink(mount.current / "video.mp4")  # the user frees the space: nothing is owed
    (mount.current / "notes.txt").write_text("after the full disk\n")
    wait_for(lambda: "notes.txt" in remote.files(), timeout=30, message="the next change on the remote")
    assert "video.mp4" not in remote.files() and failed_paths(mount) == []


def test_a_full_disk_that_kept_the_record_from_being_saved_holds_the_file_back_after_a_remount(
        small_disk, remote, mount_gitfs):
    """The record of failed writes lives on the disk that is full: unsaved, it must not
    let the next mount commit the truncated file."""
    filler = small_disk / "filler"  # beside the clone: freed before the remount
    mount = mount_gitfs(remote, repo_path=small_disk / "clone")
    filler.write_bytes(b"\0" * (3 << 19))
    write_until_the_disk_is_full(mount.current / "video.mp4")
    wait_for(lambda: failed_paths(mount) == ["video.mp4"], timeout=10, message="the failed write in the status")
    (entry,) = read_status(mount)["failed_writes"]
    assert entry.get("record", "").startswith("not saved"), entry  # the status says so
    assert "not saved:   the list of files whose last write failed" in run_gitfs("status", mount.path).stdout
    assert mount.stop() == 0
    filler.unlink()
    mount = mount_gitfs(remote, repo_path=small_disk / "clone")
    (mount.current / "notes.txt").write_text("after the full disk\n")
    wait_for(lambda: "notes.txt" in remote.files(), timeout=30, message="the next change on the remote")
    wait_synced(mount)
    assert "video.mp4" not in remote.files() and failed_paths(mount) == ["video.mp4"]


@pytest.fixture
def thin_disk(tmp_path):
    """An ext4 file system on a loop device whose backing file lies on a 32 MiB tmpfs,
    filled but for 2 MiB: writes succeed (delayed allocation), and fsync reports ENOSPC
    when the blocks cannot be written. Yields (the ext4 mount point, the filler to remove).
    Without a journal: mkfs leaves the journal's 16 MiB unwritten (a hole in the backing
    file), so a journal commit that came after the disk filled failed, aborted the journal
    and left the file system read-only (now and then, on a loaded machine)."""
    backing, disk = tmp_path / "backing", tmp_path / "thin-disk"
    backing.mkdir()
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", str(backing)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        subprocess.run(["truncate", "-s", "64m", str(backing / "disk.img")], check=True)
        subprocess.run(["mkfs.ext4", "-q", "-F", "-O", "^has_journal", str(backing / "disk.img")], check=True,
                       capture_output=True)
        if subprocess.run(["mount", "-o", "loop", str(backing / "disk.img"), str(disk)],
                          capture_output=True).returncode != 0:
            pytest.skip("cannot mount a loop device here")
        try:
            free = os.statvfs(backing)
            filler = backing / "filler"
            subprocess.run(["fallocate", "-l", str(free.f_bavail * free.f_frsize - (2 << 20)), str(filler)],
                           check=True)
            yield disk, filler
        finally:
            subprocess.run(["umount", "-l", str(disk)], capture_output=True)
    finally:
        subprocess.run(["umount", "-l", str(backing)], capture_output=True)


def test_an_error_only_fsync_reports_keeps_the_file_back(thin_disk, remote, mount_gitfs):
    disk, filler = thin_disk
    mount = mount_gitfs(remote, repo_path=disk / "clone")
    fd = os.open(mount.current / "video.mp4", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for _ in range(8):
            os.write(fd, os.urandom(1 << 20))  # accepted: the blocks are allocated later
        with pytest.raises(OSError) as raised:
            os.fsync(fd)
        assert raised.value.errno in (errno.ENOSPC, errno.EIO)
    finally:
        os.close(fd)
    wait_for(lambda: failed_paths(mount) == ["video.mp4"], timeout=10, message="the failed sync in the status")
    filler.unlink()
    (mount.current / "notes.txt").write_text("after the failed sync\n")
    wait_for(lambda: "notes.txt" in remote.files(), timeout=30, message="the next change on the remote")
    wait_synced(mount)
    assert "video.mp4" not in remote.files() and failed_paths(mount) == ["video.mp4"]
