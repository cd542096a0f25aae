"""Layer 3: MOUNTPOINT/.gitfs/versions/PATH/ on a real mount: the folders of the branch's
tree, each file a folder of its versions (content, mode, size, links), restoring one
with cp, read-only; and every view of .gitfs/ and history/<id> following a remote
that moves while they are open."""

import errno
import filecmp
import os
import stat
import subprocess
import time

import pytest

from helpers import commit_with, errno_of, git, wait_for


def version_name(remote, sha):
    """YYYY-MM-DD_HH-MM-SS-<10 hex>, computed here: local time, committer time."""
    when = int(git("--git-dir", str(remote.bare), "log", "-1", "--format=%ct", sha))
    return time.strftime("%Y-%m-%d_%H-%M-%S-", time.localtime(when)) + sha[:10]


@pytest.fixture
def versioned(remote, local_timezone):
    local_timezone("XYZ+5")
    remote.v1 = remote.commit({"docs/report.txt": "first draft\n", "notes.txt": "n\n"}, "one",
                              date="2020-01-02T02:00:00+0000")
    remote.v2 = remote.commit({"docs/report.txt": "second draft, longer\n"}, "two", date="2020-01-03T10:00:00+0000")
    remote.other = remote.commit({"notes.txt": "n2\n"}, "notes only", date="2020-01-04T10:00:00+0000")

    def make_exec_and_link(work):
        os.chmod(work / "docs/report.txt", 0o755)
        os.symlink("docs/report.txt", work / "link")
    remote.v3 = commit_with(remote, make_exec_and_link, message="exec and link", date="2020-01-05T10:00:00+0000")
    return remote


def test_each_file_is_a_folder_of_its_versions(versioned, mount_gitfs):
    remote = versioned
    mount = mount_gitfs(remote)
    versions = mount.path / ".gitfs" / "versions"
    assert sorted(os.listdir(mount.path / ".gitfs")) == ["conflicts", "metrics", "status", "versions"]
    assert sorted(os.listdir(versions)) == sorted(os.listdir(mount.current))
    assert sorted(os.listdir(versions / "docs")) == ["report.txt"]
    assert os.path.isdir(versions / "docs" / "report.txt")

    names = [version_name(remote, sha) for sha in (remote.v1, remote.v2, remote.v3)]
    assert names[0].startswith("2020-01-01_21-00-00-")  # the local day and time, as in history/
    assert os.listdir(versions / "docs" / "report.txt") == names  # oldest first, no "notes only"
    for name, sha in zip(names, (remote.v1, remote.v2, remote.v3)):
        entry = versions / "docs" / "report.txt" / name
        assert entry.read_bytes() == remote.show("docs/report.txt", sha)
        st = os.stat(entry)
        assert st.st_size == len(remote.show("docs/report.txt", sha))
        assert stat.S_IMODE(st.st_mode) == (0o555 if sha == remote.v3 else 0o444)
        day, folder = name.split("_")
        assert filecmp.cmp(entry, mount.history / day / folder / "docs" / "report.txt", shallow=False)
    (link_version,) = os.listdir(versions / "link")
    assert os.readlink(versions / "link" / link_version) == "docs/report.txt"
    assert len(os.listdir(versions / "notes.txt")) == 2


def test_restoring_a_version_is_a_copy_into_current(versioned, mount_gitfs):
    remote = versioned
    mount = mount_gitfs(remote)
    first = mount.path / ".gitfs" / "versions" / "docs" / "report.txt" / version_name(remote, remote.v1)
    subprocess.run(["cp", str(first), str(mount.current / "docs" / "report.txt")], check=True)
    wait_for(lambda: remote.show("docs/report.txt") == b"first draft\n", timeout=30, message="the restore pushed")
    restored = remote.head()
    wait_for(lambda: len(os.listdir(first.parent)) == 4, message="the restore listed as a version")
    assert os.listdir(first.parent)[-1] == version_name(remote, restored)
    assert (first.parent / version_name(remote, restored)).read_bytes() == b"first draft\n"


def test_unknown_paths_and_every_write_under_gitfs(versioned, mount_gitfs):
    remote = versioned
    mount = mount_gitfs(remote)
    versions = mount.path / ".gitfs" / "versions"
    report = versions / "docs" / "report.txt"
    entry = report / version_name(remote, remote.v1)
    for missing in (versions / "nothing", versions / "docs" / "nothing", report / "2020-01-01_00-00-00-0000000000",
                    report / version_name(remote, remote.other), entry / "below"):
        assert errno_of(os.stat, missing) in (errno.ENOENT, errno.ENOTDIR), missing
    assert errno_of(os.stat, report / version_name(remote, remote.other)) == errno.ENOENT
    assert errno_of(os.listdir, entry) == errno.ENOTDIR
    for attempt in (lambda: open(entry, "w"), lambda: open(entry, "a"), lambda: os.unlink(entry),
                    lambda: os.truncate(entry, 0), lambda: os.chmod(entry, 0o644),
                    lambda: os.rename(entry, report / "x"), lambda: os.mkdir(report / "x"),
                    lambda: os.rmdir(report), lambda: open(report / "new", "w"),
                    lambda: os.symlink("x", versions / "docs" / "l"), lambda: open(versions / "new", "w"),
                    lambda: open(mount.path / ".gitfs" / "new", "w"), lambda: os.mkdir(mount.path / ".gitfs" / "d"),
                    lambda: os.unlink(mount.path / ".gitfs" / "status")):
        assert errno_of(attempt) == errno.EROFS
    assert ".gitfs" not in os.listdir(mount.current) and not any(".gitfs" in f for f in remote.files())


def test_views_follow_a_remote_that_moves_while_they_are_open(versioned, mount_gitfs):
    remote = versioned
    fetch_timeout = 1
    mount = mount_gitfs(remote, fetch_timeout=fetch_timeout)
    report = mount.path / ".gitfs" / "versions" / "docs" / "report.txt"
    folder = os.open(report, os.O_RDONLY | os.O_DIRECTORY)  # held open while the remote moves
    try:
        assert len(os.listdir(report)) == 3
        with open(report / version_name(remote, remote.v2), "rb") as held:
            sha = remote.commit({"docs/report.txt": "from the other person\n", "docs/new.txt": "new\n"}, "theirs")
            name = version_name(remote, sha)

            def arrived():
                return (name in os.listdir(report) and os.path.islink(mount.history / sha[:7])
                        and "new.txt" in os.listdir(report.parent))
            # Seen within one fetch period plus the kernel's 1 s cache of names and attributes.
            wait_for(arrived, timeout=fetch_timeout + 1 + 5, message="the remote's commit in the views")
            assert held.read() == remote.show("docs/report.txt", remote.v2)
        assert os.listdir(report)[-1] == name
        assert (report / name).read_bytes() == b"from the other person\n"
        assert (mount.history / sha[:7] / "docs" / "report.txt").read_bytes() == b"from the other person\n"
        assert os.listdir(os.path.join(f"/proc/self/fd/{folder}")) == os.listdir(report)
    finally:
        os.close(folder)


def test_an_idle_mount_has_the_kernel_forget_the_versions_it_listed(versioned, mount_gitfs):
    """libfuse keeps a node for each name the kernel holds, and the kernel lets names go
    only under memory pressure: an idle mount asks it to forget the versions listed. A name
    forgotten is looked up afresh and gets a new node, so a new inode number; the folder of
    the file's versions stays known (a shell may sit in it)."""
    remote = versioned
    mount = mount_gitfs(remote, sync_timeout=0.5, min_idle_times=2, fetch_timeout=1)
    report = mount.path / ".gitfs" / "versions" / "docs" / "report.txt"
    names = os.listdir(report)
    before = {name: os.lstat(report / name).st_ino for name in names}
    folder = os.lstat(report).st_ino

    def forgotten():
        return all(os.lstat(report / name).st_ino != number for name, number in before.items())
    # Idle 1 s after the last call, told at the fetch worker's next round (1 s).
    wait_for(forgotten, timeout=15, interval=0.5, message="the versions' names forgotten once idle")
    assert os.lstat(report).st_ino == folder
    assert os.listdir(report) == names  # listed again, by a fresh walk
    assert [(report / name).read_bytes() for name in names] == [
        remote.show("docs/report.txt", sha) for sha in (remote.v1, remote.v2, remote.v3)]
