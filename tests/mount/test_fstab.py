"""Layer 3: mounting through the system's mount helper: an fstab line and
`mount -t fuse.gitfs`, with the real `mount` and `umount` commands.

mount(8) runs mount.fuse3, which runs `gitfs ...` through /bin/sh with no PATH and
no HOME (as at boot) and expects it to daemonize. Every test uses an fstab file of
its own (`mount -T FILE`), never /etc/fstab.

`gitfs` must be on /bin/sh's default PATH: the Debian package installs
/usr/bin/gitfs; a pip install gets /usr/local/bin/gitfs from .ci/install-deps.
Whichever is found, the daemon runs this checkout's code: the tests pass
PYTHONPATH (and nothing else) through mount's environment.
"""

import os
import shutil
import subprocess

import pytest

from helpers import ROOT, fusermount, gitfs_pids, wait_for

BOOT_ENV = {"PYTHONPATH": str(ROOT)}  # no PATH, no HOME: as mount at boot


def run(*args, timeout=90):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, env=BOOT_ENV, timeout=timeout)


def environment_of(pid: int) -> dict:
    with open(f"/proc/{pid}/environ", "rb") as handle:
        items = [item.decode(errors="replace") for item in handle.read().split(b"\0") if item]
    return dict(item.split("=", 1) for item in items if "=" in item)


@pytest.fixture
def helper(tmp_path):
    """Paths for one mount by mount(8); unmounts and checks that the daemon is gone."""
    if not os.path.exists("/dev/fuse"):
        pytest.skip("/dev/fuse is missing")
    if os.getuid() != 0:
        pytest.skip("mount -T and umount need root")
    if not shutil.which("mount.fuse3", path="/usr/sbin:/sbin:/usr/bin:/bin"):
        pytest.fail("mount.fuse3 is missing: install fuse3 (.ci/install-deps)")
    found = run("/bin/sh", "-c", "command -v gitfs")
    if found.returncode != 0:
        pytest.fail("`gitfs` is not on /bin/sh's default PATH, so mount.fuse3 cannot start it: "
                    "run .ci/install-deps (links /usr/local/bin/gitfs) or install the Debian package")

    class Helper:
        mount_point = tmp_path / "mnt"
        repo_path = tmp_path / "clone"
        log = tmp_path / "gitfs.log"
        fstab = tmp_path / "fstab"

        def options(self, extra: str) -> str:
            return f"repo_path={self.repo_path},log={self.log},log_level=info,{extra}"

        def log_text(self) -> str:
            return self.log.read_text(errors="replace") if self.log.exists() else ""

    place = Helper()
    place.mount_point.mkdir()
    yield place
    if os.path.ismount(place.mount_point):
        subprocess.run([fusermount(), "-u", str(place.mount_point)], capture_output=True)
    for pid in gitfs_pids(place.mount_point):
        os.kill(pid, 9)


def test_fstab_line_mounts_without_path_or_home_and_umount_pushes_and_ends_the_daemon(remote, helper):
    line = (f"{remote.url} {helper.mount_point} fuse.gitfs "
            f"{helper.options('sync_timeout=60,fetch_timeout=60')},nofail,_netdev 0 0\n")
    helper.fstab.write_text("# GitFS test fstab\n" + line)

    result = run("mount", "-T", helper.fstab, helper.mount_point)
    assert result.returncode == 0, result.stderr + helper.log_text()
    assert os.path.ismount(helper.mount_point)  # ready when mount returns
    (daemon,) = gitfs_pids(helper.mount_point)
    environment = environment_of(daemon)
    assert "PATH" not in environment, environment  # really the boot case (mount.fuse3 sets HOME itself here)

    assert (helper.mount_point / "current" / "testing").read_text() == "just testing around here\n"
    (helper.mount_point / "current" / "from-fstab.txt").write_text("written under an fstab mount\n")
    assert "from-fstab.txt" not in remote.files()  # sync_timeout=60: it waits for umount

    result = run("umount", helper.mount_point)
    assert result.returncode == 0, result.stderr
    wait_for(lambda: not gitfs_pids(helper.mount_point), timeout=60, message="the daemon to exit")
    assert not os.path.ismount(helper.mount_point)
    # Committed and pushed at unmount: git worked without HOME and PATH.
    assert remote.show("from-fstab.txt") == b"written under an fstab mount\n"
    assert len(remote.log()) == 2  # one commit, made by the daemon
    log = helper.log_text()
    assert "Traceback" not in log and " ERROR " not in log and " CRITICAL " not in log, log
    assert "exits with status 0" in log, log
    assert (helper.repo_path / ".git").is_dir()


def test_mount_t_fuse_gitfs_with_options(remote, helper):
    result = run("mount", "-t", "fuse.gitfs", remote.url, helper.mount_point,
                 "-o", helper.options("sync_timeout=0.5,fetch_timeout=1"))
    assert result.returncode == 0, result.stderr + helper.log_text()
    assert os.path.ismount(helper.mount_point)
    (helper.mount_point / "current" / "typed.txt").write_text("mount -t\n")
    wait_for(lambda: "typed.txt" in remote.files(), timeout=30, message="the push while mounted")

    result = run("umount", helper.mount_point)
    assert result.returncode == 0, result.stderr
    wait_for(lambda: not gitfs_pids(helper.mount_point), timeout=60, message="the daemon to exit")
    log = helper.log_text()
    assert "Traceback" not in log and " ERROR " not in log, log
    assert "exits with status 0" in log, log


def test_a_failing_fstab_line_fails_mount_with_the_reason_on_stderr(tmp_path, helper):
    missing = tmp_path / "no-such-remote.git"
    helper.fstab.write_text(f"{missing} {helper.mount_point} fuse.gitfs {helper.options('')}nofail,_netdev 0 0\n")
    result = run("mount", "-T", helper.fstab, helper.mount_point)
    assert result.returncode != 0
    assert str(missing) in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert not os.path.ismount(helper.mount_point)
    assert not gitfs_pids(helper.mount_point)
    assert str(missing) in helper.log_text()  # the log has it too


def test_started_as_mount_fuse3_starts_it_without_path_and_home(remote, helper):
    """What mount.fuse3 runs, by hand with an empty environment: /bin/sh -c 'gitfs SOURCE MOUNTPOINT -o ...'."""
    command = (f"gitfs '{remote.url}' '{helper.mount_point}' "
               f"-o rw,{helper.options('sync_timeout=0.5,fetch_timeout=1')},dev,suid")
    result = run("/bin/sh", "-c", command)
    assert (result.returncode, result.stderr) == (0, ""), helper.log_text()
    (daemon,) = gitfs_pids(helper.mount_point)
    environment = environment_of(daemon)
    assert "PATH" not in environment and "HOME" not in environment, environment
    (helper.mount_point / "current" / "no-home.txt").write_text("committed without HOME\n")
    wait_for(lambda: "no-home.txt" in remote.files(), timeout=30, message="the push")
    assert run("umount", helper.mount_point).returncode == 0
    wait_for(lambda: not gitfs_pids(helper.mount_point), timeout=60, message="the daemon to exit")
    assert "exits with status 0" in helper.log_text()
