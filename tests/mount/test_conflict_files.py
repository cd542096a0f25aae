"""Layer 3: the losing side of a conflict as a file, MOUNTPOINT/.gitfs/conflicts/<time>/PATH,
on a real mount: its bytes are `git show REMOTE_COMMIT:PATH`, it is read-only, the status
and `gitfs status` name it, and it is still there after a remount."""

import errno
import os
import signal
import subprocess

import pytest

from helpers import read_status, run_gitfs, wait_for


def make_conflict(mount, remote, files_mine, files_theirs):
    """Write mine in current/, push theirs meanwhile, sync now: accept mine keeps mine."""
    changes = len(files_mine)
    for name, text in files_mine.items():
        path = mount.current / name
        new_folders = [parent for parent in path.parents if not parent.exists()]
        changes += len(new_folders)  # each mkdir is a change of its own
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    wait_for(lambda: read_status(mount)["pending"]["changes_not_committed"] == changes,
             message="the local changes")
    theirs = remote.commit(files_theirs, "their change")
    os.kill(mount.process.pid, signal.SIGUSR1)
    wait_for(lambda: remote.head() != theirs, timeout=30, message="the push after accept-mine")
    return theirs


def git_show(remote, rev, path) -> bytes:
    return subprocess.run(["git", "--git-dir", str(remote.bare), "show", f"{rev}:{path}"],
                          capture_output=True, check=True).stdout


def test_the_remote_version_that_lost_is_a_read_only_file(remote, mount_gitfs):
    mount = mount_gitfs(remote, sync_timeout=60, fetch_timeout=60)
    assert sorted(os.listdir(mount.path / ".gitfs")) == ["conflicts", "metrics", "status", "versions"]
    assert os.listdir(mount.path / ".gitfs" / "conflicts") == []
    theirs = make_conflict(mount, remote, {"testing": "mine\n", "docs/deep/notes.txt": "my notes\n"},
                           {"testing": "theirs\n", "docs/deep/notes.txt": "their notes, longer\n"})
    assert remote.show("testing") == b"mine\n"

    (folder,) = os.listdir(mount.path / ".gitfs" / "conflicts")
    assert len(folder) == len("2026-12-03_14-32-12") and folder[10] == "_"
    base = mount.path / ".gitfs" / "conflicts" / folder
    assert sorted(os.listdir(base)) == ["docs", "testing"]
    for path in ("testing", "docs/deep/notes.txt"):
        assert (base / path).read_bytes() == git_show(remote, theirs, path)
        assert os.stat(base / path).st_mode & 0o777 == 0o444
        assert os.stat(base / path).st_size == len(git_show(remote, theirs, path))

    state = read_status(mount)
    files = {entry["path"]: entry["file"] for entry in state["conflicts"]}
    assert files == {"testing": f".gitfs/conflicts/{folder}/testing",
                     "docs/deep/notes.txt": f".gitfs/conflicts/{folder}/docs/deep/notes.txt"}
    result = run_gitfs("status", mount.path, timeout=30)
    assert result.returncode == 0
    assert str(base / "testing") in result.stdout and str(base / "docs/deep/notes.txt") in result.stdout

    for attempt in (lambda: open(base / "testing", "w"), lambda: os.unlink(base / "testing"),
                    lambda: os.mkdir(base / "new"), lambda: os.rmdir(base / "docs"),
                    lambda: open(base / "new", "w"), lambda: os.rename(base / "testing", base / "x"),
                    lambda: os.chmod(base / "testing", 0o644), lambda: os.mkdir(mount.path / ".gitfs/conflicts/x")):
        with pytest.raises(OSError) as raised:
            attempt()
        assert raised.value.errno == errno.EROFS, raised.value
    for missing in (base / "nothing", base / "docs/other", mount.path / ".gitfs/conflicts/2020-01-01_00-00-00"):
        with pytest.raises(OSError) as raised:
            os.stat(missing)
        assert raised.value.errno == errno.ENOENT
    assert ".gitfs" not in os.listdir(mount.current) and ".gitfs" not in remote.files()


def test_lost_versions_are_kept_across_remounts(remote, mount_gitfs, tmp_path):
    clone = tmp_path / "kept-clone"
    mount = mount_gitfs(remote, repo_path=clone, sync_timeout=60, fetch_timeout=60)
    theirs = make_conflict(mount, remote, {"testing": "mine\n"}, {"testing": "theirs\n"})
    (folder,) = os.listdir(mount.path / ".gitfs" / "conflicts")
    assert mount.stop() == 0

    again = mount_gitfs(remote, repo_path=clone)
    assert os.listdir(again.path / ".gitfs" / "conflicts") == [folder]
    assert (again.path / ".gitfs" / "conflicts" / folder / "testing").read_bytes() == git_show(remote, theirs,
                                                                                             "testing")
    (entry,) = read_status(again)["conflicts"]
    assert (entry["path"], entry["remote_commit"]) == ("testing", theirs)
    assert entry["file"] == f".gitfs/conflicts/{folder}/testing"
