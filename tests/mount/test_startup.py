"""Layer 3: starting GitFS from the command line: which branch is mounted, every
startup error as the user sees it (`python -m gitfs` in a subprocess), the
daemon mode, and reuse of repo_path across mounts.
"""

import os
import subprocess

import pytest

from gitfs import __version__
from helpers import Remote, assert_one_line_error, fusermount, git, gitfs_pids, run_gitfs, unmount, wait_for


@pytest.fixture
def place(tmp_path):
    """A mount point, a repo_path and a log file; fails if anything is left mounted."""
    class Place:
        mount_point = tmp_path / "mnt"
        repo_path = tmp_path / "clone"
        log = tmp_path / "gitfs.log"

        def options(self, extra=""):
            text = f"repo_path={self.repo_path},log={self.log}"
            return text + ("," + extra if extra else "")

    place = Place()
    place.mount_point.mkdir()
    yield place
    if os.path.ismount(place.mount_point):
        unmount(place.mount_point)
        pytest.fail("a failed start left a mount behind")


# -- which branch -------------------------------------------------------------------

def test_default_branch_is_the_remotes_head_even_when_not_master(tmp_path, mount_gitfs):
    remote = Remote(tmp_path / "trunk", branch="trunk")
    remote.commit({"which": "trunk\n"}, "on trunk")
    # A master branch exists too, with other content: it must not be the one mounted.
    git("push", "-q", "origin", "trunk:master", cwd=remote.work)
    git("checkout", "-q", "-b", "master", cwd=remote.work)
    (remote.work / "which").write_text("master\n")
    git("commit", "-q", "-am", "on master", cwd=remote.work)
    git("push", "-q", "origin", "master", cwd=remote.work)
    git("checkout", "-q", "trunk", cwd=remote.work)
    mount = mount_gitfs(remote)
    assert (mount.current / "which").read_text() == "trunk\n"
    assert git("symbolic-ref", "--short", "HEAD", cwd=mount.repo_path).strip() == "trunk"
    (day,) = os.listdir(mount.history)
    assert len(os.listdir(mount.history / day)) == 1  # only trunk's commit


def test_branch_option_follows_another_branch(remote, mount_gitfs):
    git("checkout", "-q", "-b", "other", cwd=remote.work)
    (remote.work / "testing").write_text("on other\n")
    git("commit", "-q", "-am", "other branch", cwd=remote.work)
    git("push", "-q", "origin", "other", cwd=remote.work)
    other_sha = git("rev-parse", "HEAD", cwd=remote.work).strip()
    mount = mount_gitfs(remote, branch="other")
    assert (mount.current / "testing").read_text() == "on other\n"
    names = [name for day in os.listdir(mount.history) for name in os.listdir(mount.history / day)]
    assert any(name.endswith(other_sha[:10]) for name in names)
    assert len(names) == 2


# -- startup errors: one line, non-zero, nothing mounted ------------------------------------

def test_missing_branch(remote, place):
    result = run_gitfs(remote.url, place.mount_point, "-o", place.options("branch=nope"))
    assert_one_line_error(result, "nope")
    assert not place.repo_path.exists() or not os.listdir(place.repo_path)


def test_empty_remote(tmp_path, place):
    empty = Remote(tmp_path / "empty")
    result = run_gitfs(empty.url, place.mount_point, "-o", place.options())
    line = assert_one_line_error(result, "empty")
    assert empty.url in line


def test_unreachable_remote(tmp_path, place):
    missing = tmp_path / "does-not-exist.git"
    result = run_gitfs(missing, place.mount_point, "-o", place.options())
    line = assert_one_line_error(result, str(missing))
    assert "protocol" not in line  # it is a path that does not exist, not a URL scheme problem


def test_mount_point_missing(remote, place, tmp_path):
    result = run_gitfs(remote.url, tmp_path / "no-such-dir", "-o", place.options())
    assert_one_line_error(result, "no-such-dir", "does not exist")


def test_mount_point_is_a_file(remote, place, tmp_path):
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    result = run_gitfs(remote.url, a_file, "-o", place.options())
    assert_one_line_error(result, "a-file", "not a directory")


def test_mount_point_already_a_mount(remote, mount_gitfs, place):
    mount = mount_gitfs(remote)
    result = run_gitfs(remote.url, mount.path, "-o", place.options())
    assert_one_line_error(result, str(mount.path), "already")
    assert (mount.current / "testing").read_text() == "just testing around here\n"  # still served


@pytest.mark.parametrize("options, words", [
    ("bogus=1", ["bogus"]),
    ("sync_timeout=abc", ["sync_timeout", "abc"]),
    ("merge_timeout=abc", ["sync_timeout", "abc"]),
    ("allow_other=perhaps", ["allow_other"]),
    ("user=no-such-user-xyz", ["no-such-user-xyz"]),
    ("group=no-such-group-xyz", ["no-such-group-xyz"]),
])
def test_bad_options(remote, place, options, words):
    result = run_gitfs(remote.url, place.mount_point, "-o", place.options(options))
    assert_one_line_error(result, *words)
    assert not place.repo_path.exists()  # rejected before cloning


def test_wrong_argument_count():
    assert_one_line_error(run_gitfs("only-one-argument"), "usage")


def test_version_and_help():
    result = run_gitfs("-v")
    assert (result.returncode, result.stdout, result.stderr) == (0, f"GitFS {__version__}\n", "")
    result = run_gitfs("--help")
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout.startswith("usage: gitfs REMOTE_URL MOUNTPOINT")


# -- daemon mode -------------------------------------------------------------------------------

def test_without_foreground_returns_once_mounted_and_unmount_ends_the_daemon(remote, place):
    try:
        result = run_gitfs(remote.url, place.mount_point, "-o", place.options("sync_timeout=0.5"))
        assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
        assert os.path.ismount(place.mount_point)  # ready the moment the command returns
        assert (place.mount_point / "current" / "testing").read_text() == "just testing around here\n"
        (pid,) = gitfs_pids(place.mount_point)
        assert os.getsid(pid) == pid  # detached in its own session
    finally:
        subprocess.run([fusermount(), "-u", str(place.mount_point)], capture_output=True)
    wait_for(lambda: not gitfs_pids(place.mount_point), timeout=30, message="the daemon to exit")
    assert not os.path.ismount(place.mount_point)
    log = place.log.read_text() if place.log.exists() else ""
    assert "Traceback" not in log and " ERROR " not in log, log
    assert (place.repo_path / ".git").is_dir()  # the clone is kept


def test_without_foreground_a_failure_is_still_one_line(remote, place):
    result = run_gitfs(remote.url, place.mount_point, "-o", place.options("branch=nope"))
    assert_one_line_error(result, "nope")
    assert not gitfs_pids(place.mount_point)


# -- repo_path reuse ---------------------------------------------------------------------------

def test_repo_path_is_reused_not_recloned_and_never_deleted(remote, mount_gitfs, tmp_path):
    repo_path = tmp_path / "kept-clone"
    first = mount_gitfs(remote, repo_path=repo_path)
    assert (first.current / "testing").read_text() == "just testing around here\n"
    assert first.stop() == 0
    assert (repo_path / ".git").is_dir() and (repo_path / "testing").is_file()  # not deleted at unmount
    marker = repo_path / ".git" / "gitfs-test-marker"
    marker.write_text("still the same clone")
    inode = os.stat(repo_path / ".git" / "HEAD").st_ino
    new_sha = remote.commit({"later": "pushed while unmounted\n"}, "later")

    second = mount_gitfs(remote, repo_path=repo_path)
    assert marker.read_text() == "still the same clone"
    assert os.stat(repo_path / ".git" / "HEAD").st_ino == inode
    assert (second.current / "testing").read_text() == "just testing around here\n"
    # The reused clone is fetched: the commit made meanwhile shows up.
    wait_for(lambda: (second.current / "later").exists(), timeout=20, message="the new commit in current/")
    assert (second.current / "later").read_text() == "pushed while unmounted\n"
    assert second.stop() == 0
    assert marker.exists() and (repo_path / "later").exists()
    assert git("rev-parse", "HEAD", cwd=repo_path).strip() == new_sha


def test_repo_path_of_another_remote_is_refused(remote, mount_gitfs, tmp_path, place):
    repo_path = tmp_path / "kept-clone"
    assert mount_gitfs(remote, repo_path=repo_path).stop() == 0
    other = Remote(tmp_path / "other-remote")
    other.commit({"x": "y"})
    result = run_gitfs(other.url, place.mount_point, "-o", f"repo_path={repo_path},log={place.log}")
    assert_one_line_error(result, str(repo_path))
    assert (repo_path / "testing").exists()  # left alone


# -- mount words and option forms on a real mount --------------------------------------------------

def test_mount_words_and_repeated_o_on_a_real_mount(remote, mount_gitfs, tmp_path):
    mount = mount_gitfs(remote, **{"rw": True, "nofail": True, "_netdev": True, "noauto": True, "user": True,
                                   "dev": True, "suid": True, "x-systemd.automount": True, "allow_root": True,
                                   "merge_timeout": 0.5, "key": tmp_path / "no-key"})
    assert os.listdir(mount.path) == ["current", "history"]
    assert (mount.current / "testing").read_text() == "just testing around here\n"


def test_o_may_repeat_on_the_command_line(remote, tmp_path, place):
    try:
        result = run_gitfs(remote.url, place.mount_point, "-o", f"repo_path={place.repo_path}",
                           "-o", f"log={place.log}", "-o", "current_path=tree,history_path=past")
        assert result.returncode == 0, result.stderr
        assert os.listdir(place.mount_point) == ["tree", "past"]
    finally:
        subprocess.run([fusermount(), "-u", str(place.mount_point)], capture_output=True)
    wait_for(lambda: not gitfs_pids(place.mount_point), timeout=30, message="the daemon to exit")
