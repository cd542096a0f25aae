"""Layer 3: the first clone of a remote with many objects shows its progress.

On a terminal (a real pty) stderr gets one updating line as `git clone` prints it;
when stderr is not a terminal nothing is printed; the log gets one info line per
tenth of the objects. The remote is reached through file://, which libgit2 serves
with its pack transport (a plain path is copied without any transfer to report).
"""

import os
import pty
import re
import select
import subprocess
import time
from types import SimpleNamespace

import pytest

from helpers import git, gitfs_command, gitfs_pids, unmount, wait_for

FILES = 2500


@pytest.fixture
def big_remote(tmp_path):
    work = tmp_path / "big-work"
    work.mkdir()
    git("init", "-q", "-b", "main", str(work))
    for number in range(FILES):
        folder = work / f"d{number % 25}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{number}.txt").write_text(f"file {number}\n" * (number % 40 + 1))
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", "many files", cwd=work)
    bare = tmp_path / "big.git"
    git("clone", "-q", "--bare", str(work), str(bare))
    objects = int(git("rev-list", "--objects", "--count", "main", cwd=bare))
    return SimpleNamespace(url=f"file://{bare}", bare=bare, objects=objects)


def progress_command(url, mount_point, repo_path, log):
    return gitfs_command(url, mount_point, {"repo_path": repo_path, "log": log, "log_level": "info",
                                            "sync_timeout": 0.5})


def stop_daemon(mount_point):
    unmount(mount_point)
    wait_for(lambda: not gitfs_pids(mount_point), timeout=60, message="the daemon to exit")


def test_clone_progress_is_logged_every_ten_per_cent(big_remote, mount_gitfs):
    mount = mount_gitfs(big_remote)
    assert len(list((mount.current / "d0").iterdir())) == FILES // 25
    assert mount.stop() == 0
    lines = [line for line in mount.log_text().splitlines() if "of the objects received" in line]
    assert all(" INFO " in line for line in lines), lines
    percents = [int(re.search(r": (\d+)% of the objects", line).group(1)) for line in lines]
    assert percents == list(range(10, 101, 10)), lines
    assert f"({big_remote.objects}/{big_remote.objects}, " in lines[-1]


def test_no_progress_when_stderr_is_not_a_terminal(big_remote, tmp_path):
    mount_point = tmp_path / "mnt"
    mount_point.mkdir()
    try:
        result = subprocess.run(progress_command(big_remote.url, mount_point, tmp_path / "clone", tmp_path / "log"),
                                capture_output=True, text=True, timeout=120)
        assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
        assert os.path.ismount(mount_point)
    finally:
        stop_daemon(mount_point)


def read_until_closed(fd, deadline_seconds=120) -> bytes:
    """Everything written to the pty until every writer closed it."""
    output, deadline = b"", time.monotonic() + deadline_seconds
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 1)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the last writer closed the terminal
            return output
        if not chunk:
            return output
        output += chunk
    raise AssertionError(f"the terminal was not closed; it got {output!r}")


def test_progress_line_on_a_terminal(big_remote, tmp_path):
    mount_point = tmp_path / "mnt"
    mount_point.mkdir()
    leader, follower = pty.openpty()
    try:
        process = subprocess.Popen(progress_command(big_remote.url, mount_point, tmp_path / "clone", tmp_path / "log"),
                                   stdin=follower, stdout=follower, stderr=follower)
        os.close(follower)
        output = read_until_closed(leader).decode()
        assert process.wait(timeout=60) == 0, output
        assert os.path.ismount(mount_point)  # the command returned once the mount answered
    finally:
        os.close(leader)
        stop_daemon(mount_point)
    total = big_remote.objects
    assert f"\rReceiving objects: 100% ({total}/{total}), " in output, output
    assert output.count("\rReceiving objects: ") > 2, output  # one line, redrawn as objects arrive
    assert output.endswith("\r\n"), output  # the line is ended (the pty turns \n into \r\n)
    assert "Traceback" not in output and "INFO" not in output
