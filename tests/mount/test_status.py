"""Layer 3: the sync status a user sees without reading logs: MOUNTPOINT/.gitfs/status,
`gitfs status MOUNTPOINT`, and SIGUSR1 ("sync now") to the daemon.
"""

import errno
import json
import os
import signal
import time

import pytest

from helpers import git, read_status, run_gitfs, stage_files, wait_for
from servers import GitDaemon


def gitfs_status(mount_point):
    return run_gitfs("status", mount_point, timeout=30)


def assert_timed_result(entry, result):
    assert entry["result"] == result, entry
    assert time.strptime(entry["time"], "%Y-%m-%dT%H:%M:%S%z")


@pytest.fixture
def git_daemon(remote):
    """The remote served by `git daemon`, so that its URL can carry a user and password."""
    daemon = GitDaemon(remote.root)
    try:
        daemon.start()
        yield daemon.url("remote.git", userinfo="alice:s3cret@")
    finally:
        daemon.stop()


# -- the file -----------------------------------------------------------------------------

def test_status_file_is_not_listed_but_opens_by_name_and_is_read_only(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    assert ".gitfs" not in os.listdir(mount.path)
    assert sorted(os.listdir(mount.path)) == ["current", "history"]
    assert ".gitfs" not in os.listdir(mount.current)  # not part of the repository either
    status = mount.path / ".gitfs" / "status"
    assert status.is_file() and os.stat(status).st_mode & 0o777 == 0o444
    assert sorted(os.listdir(mount.path / ".gitfs")) == ["conflicts", "metrics", "status", "versions"]
    json.loads(status.read_text())

    with pytest.raises(OSError) as raised:
        open(status, "w")
    assert raised.value.errno == errno.EROFS
    for attempt in (lambda: os.unlink(status), lambda: os.chmod(status, 0o666),
                    lambda: os.rename(status, mount.path / ".gitfs" / "other"),
                    lambda: os.mkdir(mount.path / ".gitfs" / "dir"),
                    lambda: open(mount.path / ".gitfs" / "new", "w")):
        with pytest.raises(OSError) as raised:
            attempt()
        assert raised.value.errno in (errno.EROFS, errno.EACCES, errno.EPERM), raised.value
    assert status.is_file()
    # Nothing of it reaches the repository.
    assert remote.files() == ["me", "testing"]


def test_status_fields_after_a_sync_and_the_remote_without_credentials(remote, git_daemon, mount_gitfs):
    # mount_gitfs mounts remote.url: give it the same bare repository, served by git daemon.
    mount = mount_gitfs(type("OverGitDaemon", (), {"url": git_daemon})())
    (mount.current / "new.txt").write_text("hello\n")
    wait_for(lambda: "new.txt" in remote.files(), message="the push")
    state = wait_for(lambda: (lambda s: s if s["last_push"] and s["last_fetch"] else None)(read_status(mount)),
                     message="a fetch and a push in the status")

    assert state["remote"] == git_daemon.replace("alice:s3cret@", "")
    assert "s3cret" not in json.dumps(state) and "alice" not in json.dumps(state)
    assert state["branch"] == "main"
    assert_timed_result(state["last_fetch"], "ok")
    assert_timed_result(state["last_push"], "ok")
    assert state["pending"] == {"commits_not_pushed": 0, "changes_not_committed": 0}
    assert state["last_error"] is None
    assert state["conflicts"] == []

    result = gitfs_status(mount.path)
    assert (result.returncode, result.stderr) == (0, "")
    assert "127.0.0.1" in result.stdout and "main" in result.stdout
    assert "s3cret" not in result.stdout
    assert not result.stdout.lstrip().startswith("{")  # for humans, not JSON


def test_pending_and_last_error_while_the_remote_is_unreachable(remote, mount_gitfs):
    mount = mount_gitfs(remote, sync_timeout=60, fetch_timeout=60, expect_errors=True)
    (mount.current / "one").write_text("1\n")
    (mount.current / "two").write_text("2\n")
    state = wait_for(lambda: (lambda s: s if s["pending"]["changes_not_committed"] == 2 else None)(read_status(mount)),
                     message="two changes not committed")
    assert state["pending"]["commits_not_pushed"] == 0

    away = remote.bare.with_name("remote-away.git")
    remote.bare.rename(away)
    try:
        os.kill(mount.process.pid, signal.SIGUSR1)
        state = wait_for(lambda: (lambda s: s if s["last_push"] and s["last_push"]["result"] == "failed"
                                  or s["last_fetch"] and s["last_fetch"]["result"] == "failed" else None)(
            read_status(mount)), message="a failed sync in the status")
        state = wait_for(lambda: (lambda s: s if s["pending"]["commits_not_pushed"] >= 1 else None)(read_status(mount)),
                         message="the local commit counted as not pushed")
        assert state["pending"]["changes_not_committed"] == 0
        error = state["last_error"]
        assert error and time.strptime(error["time"], "%Y-%m-%dT%H:%M:%S%z")
        words = error["message"]
        assert len(words.split()) >= 3 and "Traceback" not in words and "\n" not in words, words
        assert "remote.git" in words or "not" in words.lower() or "fail" in words.lower(), words

        result = gitfs_status(mount.path)
        assert result.returncode == 0
        assert words in result.stdout
        assert "1 commit not pushed" in result.stdout
    finally:
        away.rename(remote.bare)

    os.kill(mount.process.pid, signal.SIGUSR1)
    wait_for(lambda: {"one", "two"} <= set(remote.files()), timeout=30, message="the push once the remote is back")

    def pushed_ok():  # the files can reach the remote a moment before the worker records the push
        state = read_status(mount)
        return state if (state["last_push"] or {}).get("result") == "ok" else None

    state = wait_for(pushed_ok, message="a successful push in the status")
    assert state["pending"] == {"commits_not_pushed": 0, "changes_not_committed": 0}
    assert state["last_error"]  # the last error stays visible, with its time


def test_conflicts_resolved_by_accept_mine_name_the_remote_commit_that_lost(remote, mount_gitfs):
    mount = mount_gitfs(remote, sync_timeout=60, fetch_timeout=60)
    (mount.current / "testing").write_text("mine\n")
    wait_for(lambda: read_status(mount)["pending"]["changes_not_committed"] == 1, message="the local change")
    theirs = remote.commit({"testing": "theirs\n"}, "their change")

    os.kill(mount.process.pid, signal.SIGUSR1)
    wait_for(lambda: remote.head() != theirs, timeout=30, message="the push after accept-mine")
    assert remote.show("testing") == b"mine\n"
    state = read_status(mount)
    conflicts = [c for c in state["conflicts"] if c["path"].lstrip("/") == "testing"]
    assert len(conflicts) == 1, state["conflicts"]
    assert conflicts[0]["remote_commit"] == theirs
    assert time.strptime(conflicts[0]["time"], "%Y-%m-%dT%H:%M:%S%z")
    assert git("--git-dir", str(remote.bare), "show", f"{theirs}:testing") == "theirs\n"  # it lost, not lost

    result = gitfs_status(mount.path)
    assert result.returncode == 0
    assert "testing" in result.stdout and theirs[:10] in result.stdout


def test_a_rewritten_remote_branch_is_reported_as_a_rescue(remote, mount_gitfs):
    mount = mount_gitfs(remote, sync_timeout=0.2, fetch_timeout=0.3)
    dropped = remote.commit({"dropped.txt": "soon rewritten away\n"}, "a commit the force-push drops")
    wait_for(lambda: (mount.current / "dropped.txt").exists(), message="their commit in the mount")
    # The other person rewrites the branch: their commit is dropped, another pushed with force.
    git("reset", "-q", "--hard", "HEAD~1", cwd=remote.work)
    stage_files(remote.work, {"rewritten.txt": "the new history\n"})
    git("commit", "-q", "-m", "rewritten", cwd=remote.work)
    git("push", "-q", "--force", "origin", remote.branch, cwd=remote.work)

    state = wait_for(lambda: (lambda s: s if s["rescues"] else None)(read_status(mount)),
                     message="the rescue in the status")
    assert len(state["rescues"]) == 1, state["rescues"]
    rescue = state["rescues"][0]
    assert rescue["saved_commit"] == dropped
    assert rescue["branch"].startswith("gitfs-rescue-")
    assert time.strptime(rescue["time"], "%Y-%m-%dT%H:%M:%S%z")
    assert git("rev-parse", rescue["branch"], cwd=mount.repo_path).strip() == dropped
    assert state["repo_path"] == str(mount.repo_path)
    assert state["conflicts"] == []  # a rescue is no conflict

    result = gitfs_status(mount.path)
    assert result.returncode == 0
    lines = [line for line in result.stdout.splitlines() if line.startswith("rescue:")]
    assert len(lines) == 1, result.stdout
    assert rescue["branch"] in lines[0] and dropped[:10] in lines[0] and str(mount.repo_path) in lines[0]
    assert "conflict" not in result.stdout
    # The local work (here: their dropped commit, which the mount had) is replayed and pushed.
    wait_for(lambda: {"dropped.txt", "rewritten.txt"} <= set(remote.files()), message="the replayed commit")
    assert mount.stop() == 0

    # The next mount still lists it: the branch in the clone is the record.
    again = mount_gitfs(remote, repo_path=mount.repo_path)
    assert [(r["branch"], r["saved_commit"]) for r in read_status(again)["rescues"]] == [(rescue["branch"], dropped)]


# -- gitfs status ----------------------------------------------------------------------------

def test_gitfs_status_of_something_that_is_not_a_mount(tmp_path):
    result = gitfs_status(tmp_path)
    assert result.returncode != 0
    assert len(result.stderr.splitlines()) == 1 and "not a GitFS mount" in result.stderr
    assert "Traceback" not in result.stderr


# -- SIGUSR1 --------------------------------------------------------------------------------

def test_sigusr1_syncs_now(remote, mount_gitfs):
    mount = mount_gitfs(remote, sync_timeout=60, fetch_timeout=60)
    (mount.current / "now.txt").write_text("now\n")
    # The change is queued at FUSE release, which arrives just after close() returned.
    wait_for(lambda: read_status(mount)["pending"]["changes_not_committed"] == 1, message="the change queued")
    assert "now.txt" not in remote.files()  # sync_timeout=60: nothing would happen for a minute
    started = time.monotonic()
    os.kill(mount.process.pid, signal.SIGUSR1)
    wait_for(lambda: "now.txt" in remote.files(), timeout=10, message="the commit after SIGUSR1")
    assert time.monotonic() - started < 10
    assert remote.show("now.txt") == b"now\n"
    # The daemon is still serving, and a second signal with nothing to do is harmless.
    os.kill(mount.process.pid, signal.SIGUSR1)
    (mount.current / "later.txt").write_text("later\n")
    # The signal may be taken while later.txt is being written: then it syncs that too.
    wait_for(lambda: read_status(mount)["pending"]["changes_not_committed"] == 1 or "later.txt" in remote.files(),
             message="the change queued")
    os.kill(mount.process.pid, signal.SIGUSR1)
    wait_for(lambda: "later.txt" in remote.files(), timeout=10, message="the second commit")
    assert mount.process.poll() is None


def test_sigusr1_right_after_a_save_syncs_that_save(remote, mount_gitfs):
    # close(2) returns before the kernel sends RELEASE: the signal often comes while the
    # file still counts as open for writing and its change is not queued yet.
    mount = mount_gitfs(remote, sync_timeout=30, fetch_timeout=60)
    for serial in range(16):
        name = f"saved{serial}.txt"
        (mount.current / name).write_text(f"save {serial}\n")
        os.kill(mount.process.pid, signal.SIGUSR1)
        # sync_timeout=30 and a write every round: without the signal nothing is ever quiet enough.
        wait_for(lambda name=name: name in remote.files(), timeout=10, message=f"{name} on the remote after SIGUSR1")
        assert remote.show(name) == f"save {serial}\n".encode()


def test_sigusr1_commits_what_was_saved_while_another_file_stays_open(remote, mount_gitfs):
    mount = mount_gitfs(remote, sync_timeout=30, fetch_timeout=60)
    with open(mount.current / "held-open.log", "w") as held:
        held.write("half of it\n")
        held.flush()
        (mount.current / "saved.txt").write_text("saved\n")
        os.kill(mount.process.pid, signal.SIGUSR1)
        wait_for(lambda: "saved.txt" in remote.files(), timeout=20, message="the saved file after SIGUSR1")
        assert "held-open.log" not in remote.files()  # still being written: it waits
        held.write("the rest\n")
    os.kill(mount.process.pid, signal.SIGUSR1)
    wait_for(lambda: "held-open.log" in remote.files(), timeout=20, message="the file once closed")
    assert remote.show("held-open.log") == b"half of it\nthe rest\n"
