"""Layer 3: the clone is as private as the mount, proved as another local user.

A user made for the test (useradd, removed after) tries to list and read the clone, its
git directory and the mount; GitFS made the clone 0700 under a umask of 0, and the
folders above it are opened to others on purpose, so only the clone's own mode stands
in the way. Secret files that others can read are refused at mount, as ssh refuses a key.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import uuid

import pytest

from helpers import assert_one_line_error, start_gitfs, wait_for

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("useradd") or not shutil.which("setpriv"),
                                reason="needs root, useradd and setpriv")


@pytest.fixture
def other_user():
    """An unprivileged local user, made for the test and removed after. A test that uses it
    is marked `serial`: useradd and userdel change /etc/passwd for the whole machine, and
    refuse to run while another holds its lock."""
    name = f"gitfs-other-{uuid.uuid4().hex[:6]}"
    subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True)
    try:
        yield name
    finally:
        subprocess.run(["userdel", name], check=False)


def as_user(user: str, *command) -> subprocess.CompletedProcess:
    return subprocess.run(["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *command],
                          capture_output=True, text=True)


def open_parents(path) -> None:
    """Let others traverse every folder above path (pytest's own folder is 0700)."""
    for folder in path.parents:
        mode = folder.stat().st_mode
        if not mode & stat.S_IXOTH:
            folder.chmod(stat.S_IMODE(mode) | stat.S_IXOTH | stat.S_IROTH)


@pytest.fixture
def open_umask():
    saved = os.umask(0)
    yield
    os.umask(saved)


@pytest.mark.serial
def test_the_clone_gitfs_creates_is_private(remote, mount_gitfs, tmp_path, other_user, open_umask):
    clone = tmp_path / "state" / "clones" / "site"  # GitFS creates state/ and clones/ too
    open_parents(clone.parent.parent)
    mount = mount_gitfs(remote, repo_path=clone)
    (mount.current / "notes.txt").write_text("private notes\n")
    os.chmod(mount.current / "notes.txt", 0o644)
    wait_for(lambda: "notes.txt" in remote.files(), message="the push")
    for folder in (clone, clone.parent, clone.parent.parent):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    for command in (["ls", str(clone)], ["cat", str(clone / "notes.txt")], ["cat", str(clone / ".git" / "config")],
                    ["ls", str(clone / ".git" / "lfs" / "objects")], ["ls", str(mount.path)],
                    ["cat", str(mount.current / "notes.txt")], ["cat", str(mount.path / ".gitfs" / "status")]):
        denied = as_user(other_user, *command)
        assert denied.returncode != 0 and "Permission denied" in denied.stderr, (command, denied)
    assert "can be read by other users" not in mount.log_text()


@pytest.mark.serial
def test_with_allow_other_the_mount_is_shared_the_clone_is_not(remote, mount_gitfs, tmp_path, other_user,
                                                               open_umask):
    open_parents(tmp_path / "mnt0")
    mount = mount_gitfs(remote, allow_other=True, user="root", group="root")
    (mount.current / "public.txt").write_text("for everyone\n")
    os.chmod(mount.current / "public.txt", 0o644)
    (mount.current / "private.txt").write_text("root only\n")
    os.chmod(mount.current / "private.txt", 0o600)
    shown = as_user(other_user, "cat", str(mount.current / "public.txt"))
    assert shown.stdout == "for everyone\n", shown.stderr
    assert "Permission denied" in as_user(other_user, "cat", str(mount.current / "private.txt")).stderr
    wait_for(lambda: "private.txt" in remote.files(), message="the push")
    denied = as_user(other_user, "cat", str(mount.repo_path / "public.txt"))
    assert denied.returncode != 0 and "Permission denied" in denied.stderr, "the clone is open to others"


def test_a_clone_others_can_enter_is_warned_about_with_the_fix(remote, mount_gitfs, tmp_path):
    first = mount_gitfs(remote, repo_path=tmp_path / "shared-clone")
    first.stop()
    (tmp_path / "shared-clone").chmod(0o755)
    open_parents(tmp_path / "shared-clone")
    mount = mount_gitfs(remote, repo_path=tmp_path / "shared-clone")
    warnings = [line for line in mount.log_text().splitlines() if "can be read by other users" in line]
    assert len(warnings) == 1 and f"chmod 700 {tmp_path / 'shared-clone'}" in warnings[0], warnings


@pytest.mark.parametrize("option", ["password_file", "ssh_key_passphrase_file"])
def test_a_secret_file_others_can_read_is_refused(remote, tmp_path, option):
    secret = tmp_path / "secret"
    secret.write_text("s3cret\n")
    secret.chmod(0o644)
    result = start_gitfs(remote.url, tmp_path, f"{option}={secret}")
    line = assert_one_line_error(result, option, str(secret), f"chmod 600 {secret}")
    assert "s3cret" not in line
    secret.chmod(0o600)  # accepted: the start fails further on, at the branch
    result = start_gitfs(remote.url, tmp_path, f"{option}={secret}", "branch=nope")
    assert_one_line_error(result, "branch", "nope")
