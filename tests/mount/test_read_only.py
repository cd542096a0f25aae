"""Layer 3: a read-only mount (`-o ro`) on a real mount: it follows the remote, and never
commits or pushes, not even what a crash left in the clone; the next read-write mount does.
"""

import errno
import os

import pytest

from helpers import git, read_status, run_gitfs, wait_for


def test_a_read_only_mount_leaves_a_crash_s_changes_and_still_follows_the_remote(remote, mount_gitfs):
    mount = mount_gitfs(remote, sync_timeout=30)
    mount.stop()
    # Left in the clone while no daemon ran (a crash before the commit).
    (mount.repo_path / "left-by-a-crash.txt").write_text("not committed yet\n")
    (mount.repo_path / "testing").write_text("edited by the crash\n")
    before = remote.head()

    read_only = mount_gitfs(remote, repo_path=mount.repo_path, ro=True, sync_timeout=0.2, fetch_timeout=0.3)
    assert (read_only.current / "left-by-a-crash.txt").read_text() == "not committed yet\n"
    with pytest.raises(OSError) as raised:
        (read_only.current / "new.txt").write_text("refused\n")
    assert raised.value.errno == errno.EROFS

    # The remote's changes arrive, also in a file the crash left changed: the local bytes stay.
    sha = remote.commit({"theirs.txt": "from a colleague\n", "testing": "their edit\n"}, "their change")
    wait_for(lambda: (read_only.current / "theirs.txt").exists(), message="their file in the read-only mount")
    assert (read_only.current / "theirs.txt").read_text() == "from a colleague\n"
    assert (read_only.current / "testing").read_text() == "edited by the crash\n"
    wait_for(lambda: any(name.endswith(sha[:10]) for day in os.listdir(read_only.history)
                         for name in os.listdir(read_only.history / day)), message="their commit in history/")

    state = read_status(read_only)
    assert state["read_only"] is True
    assert state["pending"]["changes_not_committed"] == 2
    shown = run_gitfs("status", read_only.path, timeout=30)
    assert shown.returncode == 0 and "read-only" in shown.stdout, shown.stdout
    assert read_only.stop() == 0

    # Nothing was committed or pushed: the remote has only their commit, the clone the leftovers.
    assert remote.log() == ["their change", "Initial test commit"]
    assert git("rev-parse", "HEAD", cwd=mount.repo_path).strip() == sha
    assert git("rev-list", "--count", f"{before}..HEAD", cwd=mount.repo_path).strip() == "1"
    assert "left-by-a-crash.txt" in git("status", "--porcelain", cwd=mount.repo_path)

    # The next read-write mount commits them, as after any crash; the local edit wins.
    mount_gitfs(remote, repo_path=mount.repo_path)
    wait_for(lambda: "left-by-a-crash.txt" in remote.files(), message="the leftovers on the remote")
    assert remote.show("left-by-a-crash.txt") == b"not committed yet\n"
    wait_for(lambda: remote.show("testing") == b"edited by the crash\n", message="the crash's edit on the remote")
    assert remote.show("theirs.txt") == b"from a colleague\n"


def test_a_read_write_mount_says_so(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    assert read_status(mount)["read_only"] is False
    assert "read-only" not in run_gitfs("status", mount.path, timeout=30).stdout
