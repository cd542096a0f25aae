"""Security: nothing outside the clone is reached through current/, .git is never
written through the mount, allow_other enforces permission bits with the configured
owner, and a password in the URL shows neither in the log nor in the status file."""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import subprocess

import pytest

from helpers import Remote, wait_for
from servers import GitDaemon


def test_dotdot_and_outward_symlinks_are_stored_not_followed(remote, mount_gitfs, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("outside\n")
    mount = mount_gitfs(remote)
    with pytest.raises(OSError):
        (mount.current / ".." / "escape").write_text("x")  # the mount's root: read-only, not current/
    os.symlink("../../outside.txt", mount.current / "up")
    os.symlink(str(outside), mount.current / "abs")
    os.symlink("../..", mount.current / "updir")
    wait_for(lambda: {"up", "abs", "updir"} <= set(remote.files()), message="the links on the remote")
    assert remote.show("abs") == str(outside).encode()
    assert remote.show("up") == b"../../outside.txt"
    # GitFS itself never followed them: the clone holds links, the outside file is untouched.
    assert os.readlink(mount.repo_path / "abs") == str(outside)
    os.chmod(mount.current / "abs", 0o755)  # the kernel follows this one, to the real outside file
    assert outside.read_text() == "outside\n"
    assert not (mount.repo_path.parent / "escape").exists()


@pytest.mark.parametrize("action", ["truncate", "chmod", "link-in", "link-out", "rename-in", "rename-out",
                                    "symlink-inside", "mkdir-inside", "utime", "unlink-config"])
def test_dot_git_is_never_written(remote, mount_gitfs, action):
    mount = mount_gitfs(remote)
    git_dir, current = mount.current / ".git", mount.current
    config = mount.repo_path / ".git" / "config"
    before = config.read_bytes()
    calls = {
        "truncate": lambda: os.truncate(git_dir / "config", 0),
        "chmod": lambda: os.chmod(git_dir / "config", 0o777),
        "link-in": lambda: os.link(current / "testing", git_dir / "hooks" / "pre-commit"),
        "link-out": lambda: os.link(git_dir / "config", current / "stolen"),
        "rename-in": lambda: os.rename(current / "testing", git_dir / "testing"),
        "rename-out": lambda: os.rename(git_dir / "config", current / "config"),
        "symlink-inside": lambda: os.symlink("/etc/passwd", git_dir / "evil"),
        "mkdir-inside": lambda: os.mkdir(git_dir / "newdir"),
        "utime": lambda: os.utime(git_dir / "config", (0, 0)),
        "unlink-config": lambda: os.unlink(git_dir / "config"),
    }
    with pytest.raises(OSError) as raised:
        calls[action]()
    assert raised.value.errno == errno.ENOENT, raised.value  # the clone's .git does not exist here
    assert config.read_bytes() == before
    assert not (mount.repo_path / ".git" / "evil").exists()
    assert (current / "testing").exists()


def nobody(*command):
    return subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *command],
                          capture_output=True, text=True)


def test_allow_other_owner_and_permissions(remote, mount_gitfs, tmp_path):
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv")
    # `nobody` must reach the mount point: let others traverse every directory above it
    # (pytest's own /tmp/pytest-of-root is 0700).
    for directory in [tmp_path, *tmp_path.parents]:
        mode = directory.stat().st_mode
        if not mode & stat.S_IXOTH:
            directory.chmod(stat.S_IMODE(mode) | stat.S_IXOTH | stat.S_IROTH)
    mount = mount_gitfs(remote, allow_other=True, user="root", group="root")
    (mount.current / "private").write_text("secret\n")
    os.chmod(mount.current / "private", 0o600)
    (mount.current / "public").write_text("public\n")
    os.chmod(mount.current / "public", 0o644)
    st = os.stat(mount.current / "public")
    assert (st.st_uid, st.st_gid) == (0, 0)
    assert nobody("cat", str(mount.current / "public")).stdout == "public\n"
    denied = nobody("cat", str(mount.current / "private"))
    assert denied.returncode != 0 and "Permission denied" in denied.stderr
    write = nobody("sh", "-c", f"echo x > '{mount.current / 'public'}'")
    assert write.returncode != 0 and "Permission denied" in write.stderr
    create = nobody("touch", str(mount.current / "by-nobody"))
    assert create.returncode != 0, "nobody created a file in a root-owned 0755 directory"
    assert (mount.current / "public").read_text() == "public\n"


def test_password_in_the_url_is_not_logged_or_shown(tmp_path, mount_gitfs):
    remote = Remote(tmp_path)
    remote.commit({"testing": "x\n"}, "Initial test commit")
    daemon = GitDaemon(tmp_path)
    daemon.start()
    try:
        password = "S3cretPassw0rd"

        class Served:
            url = daemon.url("remote.git", f"user:{password}@")
            bare, branch = remote.bare, remote.branch

        mount = mount_gitfs(Served(), expect_errors=True)
        (mount.current / "new").write_text("new\n")
        wait_for(lambda: "new" in remote.files(), message="the push")
        text = json.dumps(json.loads((mount.path / ".gitfs" / "status").read_bytes()))
        assert password not in text
        assert password not in mount.log_text()
        mounts = open("/proc/self/mounts").read()
        assert password not in mounts, "the password is in the fsname of the mount"
    finally:
        daemon.stop()
