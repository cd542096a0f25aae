"""POSIX conformance of current/, in the manner of pjdfstest (not packaged for Debian 12
nor on PyPI): each case runs the same call on current/ and on a plain directory and
expects the same result and errno. Ownership (chown to other users) is left out: git
records no owner, so GitFS shows the `user`/`group` options for every file.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import stat
import subprocess

import pytest


def outcome(call):
    try:
        result = call()
        return "ok" if result is None or isinstance(result, int) else result
    except OSError as error:
        return errno.errorcode[error.errno]


def setup(root):
    os.mkdir(root / "dir")
    os.mkdir(root / "full")
    (root / "full" / "inner").write_text("x")
    (root / "file").write_text("content")
    os.symlink("file", root / "link")
    os.symlink("loop", root / "loop")
    os.symlink("nowhere", root / "dangling")


CASES = {
    # open / create
    "open missing": lambda r: os.open(r / "missing", os.O_RDONLY),
    "open O_CREAT|O_EXCL existing": lambda r: os.open(r / "file", os.O_CREAT | os.O_EXCL | os.O_WRONLY),
    "open dir for writing": lambda r: os.open(r / "dir", os.O_WRONLY),
    "open through a file": lambda r: os.open(r / "file" / "x", os.O_RDONLY),
    "open loop": lambda r: os.open(r / "loop", os.O_RDONLY),
    "open O_NOFOLLOW link": lambda r: os.open(r / "link", os.O_RDONLY | os.O_NOFOLLOW),
    "open O_DIRECTORY file": lambda r: os.open(r / "file", os.O_RDONLY | os.O_DIRECTORY),
    "create in missing dir": lambda r: os.open(r / "missing" / "x", os.O_CREAT | os.O_WRONLY, 0o644),
    "create through dangling link": lambda r: os.close(os.open(r / "dangling", os.O_CREAT | os.O_WRONLY, 0o644)),
    "create name too long": lambda r: os.open(r / ("n" * 256), os.O_CREAT | os.O_WRONLY, 0o644),
    # unlink
    "unlink missing": lambda r: os.unlink(r / "missing"),
    "unlink dir": lambda r: os.unlink(r / "dir"),
    "unlink link (not its target)": lambda r: (os.unlink(r / "link"), os.path.exists(r / "file"))[1],
    "unlink through a file": lambda r: os.unlink(r / "file" / "x"),
    # mkdir / rmdir
    "mkdir existing": lambda r: os.mkdir(r / "file"),
    "mkdir existing dir": lambda r: os.mkdir(r / "dir"),
    "mkdir in missing": lambda r: os.mkdir(r / "missing" / "x"),
    "mkdir over dangling link": lambda r: os.mkdir(r / "dangling"),
    "rmdir non-empty": lambda r: os.rmdir(r / "full"),
    "rmdir file": lambda r: os.rmdir(r / "file"),
    "rmdir missing": lambda r: os.rmdir(r / "missing"),
    "rmdir empty": lambda r: os.rmdir(r / "dir"),
    "rmdir dot": lambda r: os.rmdir(r / "dir" / "."),
    "rmdir link to dir": lambda r: (os.symlink("dir", r / "dl"), os.rmdir(r / "dl")),
    # rename
    "rename missing": lambda r: os.rename(r / "missing", r / "x"),
    "rename file over dir": lambda r: os.rename(r / "file", r / "dir"),
    "rename dir over file": lambda r: os.rename(r / "dir", r / "file"),
    "rename dir over non-empty dir": lambda r: os.rename(r / "dir", r / "full"),
    "rename dir over empty dir": lambda r: (os.mkdir(r / "e"), os.rename(r / "full", r / "e"),
                                            sorted(os.listdir(r / "e")))[2],
    "rename dir into itself": lambda r: os.rename(r / "full", r / "full" / "sub"),
    "rename to same name": lambda r: os.rename(r / "file", r / "file"),
    "rename link keeps it a link": lambda r: (os.rename(r / "link", r / "l2"), os.readlink(r / "l2"))[1],
    "rename over a link replaces the link": lambda r: (os.rename(r / "file", r / "link"),
                                                       os.path.islink(r / "link"))[1],
    "rename into missing dir": lambda r: os.rename(r / "file", r / "missing" / "x"),
    "rename name too long": lambda r: os.rename(r / "file", r / ("n" * 256)),
    # symlink / link
    "symlink existing": lambda r: os.symlink("x", r / "file"),
    "symlink in missing dir": lambda r: os.symlink("x", r / "missing" / "x"),
    "symlink absolute target kept": lambda r: (os.symlink("/etc/passwd", r / "abs"), os.readlink(r / "abs"))[1],
    "link existing": lambda r: os.link(r / "file", r / "link"),
    "link to dir": lambda r: os.link(r / "dir", r / "d2"),
    "link missing": lambda r: os.link(r / "missing", r / "x"),
    "link shares data": lambda r: (os.link(r / "file", r / "hard"), (r / "hard").write_text("new"),
                                   (r / "file").read_text(), os.stat(r / "file").st_nlink)[2:],
    # chmod / truncate / utimens
    "chmod missing": lambda r: os.chmod(r / "missing", 0o644),
    "chmod bits": lambda r: (os.chmod(r / "file", 0o751), oct(stat.S_IMODE(os.stat(r / "file").st_mode)))[1],
    "chmod setuid is kept or dropped alike": lambda r: (os.chmod(r / "file", 0o4755),
                                                         oct(stat.S_IMODE(os.stat(r / "file").st_mode)))[1],
    "chmod dir": lambda r: (os.chmod(r / "dir", 0o700), oct(stat.S_IMODE(os.stat(r / "dir").st_mode)))[1],
    "truncate missing": lambda r: os.truncate(r / "missing", 0),
    "truncate dir": lambda r: os.truncate(r / "dir", 0),
    "truncate negative": lambda r: os.truncate(r / "file", -1),
    "truncate grows with zeros": lambda r: (os.truncate(r / "file", 10), (r / "file").read_bytes())[1],
    "truncate through link": lambda r: (os.truncate(r / "link", 2), (r / "file").read_bytes())[1],
    "utimens": lambda r: (os.utime(r / "file", ns=(1_000_000_000, 2_000_000_000)),
                          os.stat(r / "file").st_mtime_ns)[1],
    "utimens on link itself": lambda r: (os.utime(r / "link", ns=(5 * 10**9, 6 * 10**9), follow_symlinks=False),
                                         os.lstat(r / "link").st_mtime_ns)[1],
    "utimens missing": lambda r: os.utime(r / "missing"),
    # directories
    "readdir": lambda r: sorted(os.listdir(r)),
    "readdir of a file": lambda r: os.listdir(r / "file"),
    "stat through dangling": lambda r: os.stat(r / "dangling"),
    "stat loop": lambda r: os.stat(r / "loop"),
    "mknod fifo": lambda r: os.mkfifo(r / "fifo"),
}

# Where GitFS differs on purpose: git cannot store it.
EXPECTED_DIFFERENCES = {
    "mknod fifo": "EPERM",  # git stores no FIFO, device or socket
}


@pytest.fixture(scope="module")
def roots(tmp_path_factory):
    return tmp_path_factory.mktemp("plain")


@pytest.fixture
def pair(remote, mount_gitfs, tmp_path):
    mount = mount_gitfs(remote)
    return mount


def test_posix_cases(pair, tmp_path):
    """All cases on one mount, each in its own directory; list every difference at once."""
    mount = pair
    failures = []
    for number, (name, case) in enumerate(CASES.items()):
        mine, plain = mount.current / f"c{number}", tmp_path / "plain" / f"c{number}"
        mine.mkdir()
        plain.mkdir(parents=True)
        setup(mine)
        setup(plain)
        got, expected = outcome(functools.partial(case, mine)), outcome(functools.partial(case, plain))
        expected = EXPECTED_DIFFERENCES.get(name, expected)
        if got != expected:
            failures.append(f"{name}: GitFS {got!r}, POSIX (the disk) {expected!r}")
    assert not failures, "POSIX differences:\n" + "\n".join(failures)


def test_history_is_erofs_and_exdev_across(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    day = sorted(os.listdir(mount.history))[0]
    commit = mount.history / day / sorted(os.listdir(mount.history / day))[0]
    for call in (lambda: os.open(commit / "testing", os.O_WRONLY), lambda: os.unlink(commit / "testing"),
                 lambda: os.mkdir(commit / "x"), lambda: os.chmod(commit / "testing", 0o755),
                 lambda: os.truncate(commit / "testing", 0), lambda: os.symlink("x", commit / "y"),
                 lambda: os.utime(commit / "testing"), lambda: os.rename(commit / "testing", commit / "t2")):
        with pytest.raises(OSError) as raised:
            call()
        assert raised.value.errno == errno.EROFS
    for call in (lambda: os.rename(mount.current / "testing", commit / "x"),
                 lambda: os.rename(commit / "testing", mount.current / "x"),
                 lambda: os.link(commit / "testing", mount.current / "x")):
        with pytest.raises(OSError) as raised:
            call()
        assert raised.value.errno in (errno.EXDEV, errno.EROFS)
    assert (mount.current / "testing").exists()


def first_commit_folder(mount):
    day = sorted(os.listdir(mount.history))[0]
    return mount.history / day / sorted(os.listdir(mount.history / day))[0]


def test_statvfs_is_the_clones_disk_everywhere(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    commit = first_commit_folder(mount)
    disk = os.statvfs(mount.repo_path)
    assert disk.f_namemax > 0
    for path in (mount.path, mount.current, mount.history, commit.parent, commit, commit / "testing"):
        st = os.statvfs(path)
        assert (st.f_namemax, st.f_bsize, st.f_blocks) == (disk.f_namemax, disk.f_bsize, disk.f_blocks), path
    # What `stat -f` shows, e.g. to a program that asks pathconf(_PC_NAME_MAX) before naming a file.
    shown = subprocess.run(["stat", "-f", "-c", "%l", str(commit / "testing")], capture_output=True, text=True)
    assert shown.stdout.strip() == str(disk.f_namemax)
    assert os.pathconf(commit, "PC_NAME_MAX") == disk.f_namemax


def access_errno(path, mode: int) -> int:
    """access(2)'s errno (0 if allowed): os.access says only yes or no."""
    libc = ctypes.CDLL(None, use_errno=True)
    return 0 if libc.access(os.fsencode(path), mode) == 0 else ctypes.get_errno()


def test_write_access_in_read_only_views_is_erofs(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    commit = first_commit_folder(mount)
    for path in (mount.path, mount.history, commit.parent, commit, commit / "testing", mount.path / ".gitfs/status"):
        assert access_errno(path, os.W_OK) == errno.EROFS, path
        assert access_errno(path, os.R_OK) == 0, path
    assert access_errno(mount.current / "testing", os.W_OK) == 0


def test_with_allow_other_every_write_in_history_is_erofs_even_for_root(remote, mount_gitfs):
    # allow_other turns on the kernel's default_permissions: it answers access(2) itself
    # from the mode bits, and root may write anything, so `test -w` says yes there (see
    # README, Limitations). The writes themselves still reach GitFS and fail.
    if os.geteuid() != 0:
        pytest.skip("allow_other needs root (or user_allow_other in /etc/fuse.conf)")
    mount = mount_gitfs(remote, allow_other=True)
    commit = first_commit_folder(mount)
    for call in (lambda: open(commit / "testing", "ab"), lambda: os.truncate(commit / "testing", 0),
                 lambda: os.mkdir(commit / "x"), lambda: os.unlink(commit / "testing"),
                 lambda: os.utime(commit / "testing"), lambda: os.mkdir(mount.history / "x")):
        with pytest.raises(OSError) as raised:
            call()
        assert raised.value.errno == errno.EROFS


class Dirent(ctypes.Structure):
    _fields_ = [("d_ino", ctypes.c_uint64), ("d_off", ctypes.c_int64), ("d_reclen", ctypes.c_ushort),
                ("d_type", ctypes.c_ubyte), ("d_name", ctypes.c_char * 256)]


def listing_types(folder) -> dict[str, int]:
    """{name: d_type} as readdir(3) gives them to find and ls (DT_UNKNOWN = 0 makes them lstat)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.opendir.restype = ctypes.c_void_p
    libc.readdir.argtypes = libc.closedir.argtypes = [ctypes.c_void_p]
    libc.readdir.restype = ctypes.POINTER(Dirent)
    handle = libc.opendir(os.fsencode(folder))
    assert handle, os.strerror(ctypes.get_errno())
    types = {}
    try:
        while entry := libc.readdir(handle):
            types[entry.contents.d_name.decode()] = entry.contents.d_type
    finally:
        libc.closedir(handle)
    return types


def test_listings_of_current_give_each_entrys_type_as_a_disk_does(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    setup(mount.current)
    gitfs, disk = listing_types(mount.current), listing_types(mount.repo_path)
    del disk[".git"]  # hidden in current/
    assert gitfs == disk
    assert {gitfs["dir"], gitfs["file"], gitfs["link"]} == {4, 8, 10}  # DT_DIR, DT_REG, DT_LNK
