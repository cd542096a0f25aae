"""Faults, each ending with "nothing lost": the remote goes away mid-push, refuses
pushes (a race, a hook), the clone's disk fills up, the daemon is killed at random
points of the sync cycle, the index is locked or corrupt, the branch is deleted or
force-pushed on the remote."""

from __future__ import annotations

import errno
import os
import random
import subprocess
import time
from pathlib import Path

import pytest

from helpers import Remote, git, read_status, remote_tree, wait_for, wait_synced
from servers import GitDaemon


def on_remote(remote, expected: dict[str, bytes]) -> bool:
    try:
        tree = remote_tree(remote.bare)
    except subprocess.CalledProcessError:  # no such branch (yet)
        return False
    return all(tree.get(path, (None, None))[1] == data for path, data in expected.items())


def wait_on_remote(remote, expected: dict[str, bytes], timeout=60.0):
    try:
        wait_for(lambda: on_remote(remote, expected), timeout=timeout, interval=0.2, message="the files on the remote")
    except AssertionError:
        tree = remote_tree(remote.bare)
        missing = {p: tree.get(p, (None, None))[1] for p, d in expected.items() if tree.get(p, (None, None))[1] != d}
        raise AssertionError(f"not on the remote (path: what it holds): {missing}") from None


@pytest.fixture
def served(tmp_path):
    """The `remote` fixture's bare repository served by `git daemon` (receive-pack on)."""
    remote = Remote(tmp_path)
    remote.commit({"testing": "just testing around here\n", "me": ""}, "Initial test commit")
    daemon = GitDaemon(tmp_path)
    daemon.start()
    remote.daemon = daemon
    remote.served_url = daemon.url("remote.git")
    yield remote
    daemon.stop()


class ServedRemote:
    """Stands in for Remote in mount_gitfs: same bare repo, git:// URL."""

    def __init__(self, remote):
        self.__dict__.update(remote.__dict__)
        self._remote = remote

    def __getattr__(self, name):
        return getattr(self._remote, name)

    @property
    def url(self):
        return self._remote.served_url


def hook(remote, name: str, script: str | None) -> None:
    path = remote.bare / "hooks" / name
    if script is None:
        path.unlink(missing_ok=True)
        return
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)


# -- the remote goes away and comes back ---------------------------------------------

def move_back(away: Path, home: Path) -> None:
    """Move the remote home again. A push it was moved under may have written at the old
    path (libgit2 makes the folders of a reference it writes) and takes that away at once."""
    deadline = time.monotonic() + 10
    while True:
        try:
            os.rename(away, home)
            return
        except OSError as error:
            if error.errno not in (errno.ENOTEMPTY, errno.EEXIST) or time.monotonic() > deadline:
                raise
        time.sleep(0.05)


def test_remote_disappears_mid_push_and_comes_back(remote, mount_gitfs):
    mount = mount_gitfs(remote, sync_timeout=0.2, fetch_timeout=0.5)
    away = remote.bare.with_name("remote-away.git")
    rng = random.Random(7)
    expected = {}
    for round_ in range(6):
        for index in range(3):
            data = os.urandom(rng.randrange(1, 200_000))  # pushes that take a while
            (mount.current / f"r{round_}-{index}").write_bytes(data)
            expected[f"r{round_}-{index}"] = data
        time.sleep(rng.uniform(0.1, 0.6))  # somewhere in commit, fetch or push
        os.rename(remote.bare, away)
        time.sleep(rng.uniform(0.1, 0.6))
        move_back(away, remote.bare)
    wait_on_remote(remote, expected, timeout=90)
    wait_synced(mount, timeout=90)
    assert mount.process.poll() is None


def test_git_daemon_stops_and_starts(served, mount_gitfs):
    mount = mount_gitfs(ServedRemote(served), sync_timeout=0.2, fetch_timeout=0.5, expect_errors=True)
    served.daemon.stop()
    (mount.current / "while-down").write_text("written while the server is down\n")
    wait_for(lambda: "while-down" in git("ls-tree", "--name-only", "HEAD", cwd=mount.repo_path),
             message="a local commit")
    wait_for(lambda: (read_status(mount).get("last_error") or {}).get("message"), message="last_error in the status")
    assert "while-down" not in served.files()
    served.daemon.start()
    wait_on_remote(served, {"while-down": b"written while the server is down\n"}, timeout=90)


# -- the remote refuses -------------------------------------------------------------

def test_pre_receive_hook_refuses_then_allows(served, mount_gitfs):
    hook(served, "pre-receive", "echo 'no pushes today' >&2\nexit 1\n")
    mount = mount_gitfs(ServedRemote(served), sync_timeout=0.2, fetch_timeout=0.5)
    (mount.current / "refused").write_text("kept locally\n")
    wait_for(lambda: "refused" in ((read_status(mount).get("last_error") or {}).get("message") or "")
             or "declined" in ((read_status(mount).get("last_error") or {}).get("message") or ""),
             timeout=30, message="the refusal in the status")
    assert "refused" not in served.files()
    assert git("show", "HEAD:refused", cwd=mount.repo_path) == "kept locally\n"
    assert read_status(mount)["pending"]["commits_not_pushed"] >= 1
    (mount.current / "more").write_text("written after the refusal\n")
    hook(served, "pre-receive", None)
    wait_on_remote(served, {"refused": b"kept locally\n", "more": b"written after the refusal\n"}, timeout=90)
    wait_synced(mount, timeout=90)


RACE_HOOK = """\
# The first push loses a race: another commit lands on the branch while it is received.
[ -e "$GIT_DIR/raced" ] && exit 0
touch "$GIT_DIR/raced"
unset GIT_QUARANTINE_PATH GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES
blob=$(echo "pushed by the racer" | git hash-object -w --stdin)
tree=$( (git ls-tree main; printf '100644 blob %s\\tracer\\n' "$blob") | git mktree)
commit=$(echo racer | GIT_AUTHOR_NAME=r GIT_AUTHOR_EMAIL=r@x GIT_COMMITTER_NAME=r GIT_COMMITTER_EMAIL=r@x \\
         git commit-tree "$tree" -p main)
git update-ref refs/heads/main "$commit"
exit 0
"""


def test_non_fast_forward_race_with_another_pusher(served, mount_gitfs):
    hook(served, "pre-receive", RACE_HOOK)
    mount = mount_gitfs(ServedRemote(served), sync_timeout=0.2, fetch_timeout=0.5)
    (mount.current / "mine").write_text("mine\n")
    wait_on_remote(served, {"mine": b"mine\n", "racer": b"pushed by the racer\n"}, timeout=60)
    assert (served.bare / "raced").exists()
    wait_for(lambda: (mount.current / "racer").exists(), message="the racer's file in current/")
    assert len(git("--git-dir", str(served.bare), "rev-list", "--merges", "main").split()) == 0


# -- the clone's disk fills up --------------------------------------------------------------

@pytest.fixture
def small_disk(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    disk = tmp_path / "small"
    disk.mkdir()
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)], capture_output=True)
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {result.stderr.decode().strip()}")
    yield disk
    if subprocess.run(["umount", str(disk)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


def test_disk_full_in_the_clone(small_disk, remote, mount_gitfs):
    mount = mount_gitfs(remote, repo_path=small_disk / "clone", sync_timeout=0.2, expect_errors=True)
    (mount.current / "before").write_text("committed before the disk filled\n")
    wait_on_remote(remote, {"before": b"committed before the disk filled\n"})
    chunk = os.urandom(256 * 1024)
    with pytest.raises(OSError) as raised:
        with open(mount.current / "filler", "wb") as handle:
            for _ in range(64):
                handle.write(chunk)
                handle.flush()
    assert raised.value.errno in (errno.ENOSPC, errno.EDQUOT), raised.value
    for number in range(5):  # small writes meanwhile: ENOSPC or success, never anything else
        try:
            (mount.current / f"small{number}").write_text(f"small {number}\n")
        except OSError as error:
            assert error.errno == errno.ENOSPC, error
    time.sleep(1.5)  # a few commit attempts on the full disk
    assert mount.process.poll() is None, "the daemon died on a full disk"
    assert (mount.current / "before").read_text() == "committed before the disk filled\n"
    os.unlink(mount.current / "filler")
    (mount.current / "after").write_text("written once there was room again\n")
    wait_on_remote(remote, {"before": b"committed before the disk filled\n",
                            "after": b"written once there was room again\n"}, timeout=90)
    assert "filler" not in remote.files()
    assert mount.stop() == 0


# -- kill -9 at random points ----------------------------------------------------------------

def kill_loop(remote, mount_gitfs, rounds: int, seed: int):
    rng = random.Random(seed)
    repo_path = None
    expected: dict[str, bytes] = {}
    for round_ in range(rounds):
        mount = mount_gitfs(remote, repo_path=repo_path, sync_timeout=0.2, fetch_timeout=0.3, expect_errors=True)
        repo_path = mount.repo_path
        for index in range(rng.randrange(1, 6)):
            name = f"k{rng.randrange(8)}"
            data = f"round {round_} write {index}\n".encode() * rng.randrange(1, 3000)
            (mount.current / name).write_bytes(data)
            expected[name] = data
        if rng.random() < 0.3 and expected:
            victim = rng.choice(sorted(expected))
            os.unlink(mount.current / victim)
            del expected[victim]
        time.sleep(rng.uniform(0.0, 1.2))  # before, during or after commit, fetch, push
        mount.kill()
    final = mount_gitfs(remote, repo_path=repo_path, sync_timeout=0.2)
    for name, data in expected.items():
        assert (final.current / name).read_bytes() == data, name
    wait_on_remote(remote, expected, timeout=90)
    wait_synced(final, timeout=90)
    tree = remote_tree(remote.bare)
    extra = sorted(p for p in tree if p.startswith("k") and p not in expected)
    assert not extra, f"deleted files came back: {extra}"


def test_kill_9_at_random_points_quick(remote, mount_gitfs):
    kill_loop(remote, mount_gitfs, rounds=3, seed=1)


@pytest.mark.stress
def test_kill_9_at_random_points(remote, mount_gitfs):
    kill_loop(remote, mount_gitfs, rounds=15, seed=2)


# -- the index -----------------------------------------------------------------------------------

def test_index_lock_left_behind_while_mounted(remote, mount_gitfs):
    mount = mount_gitfs(remote, sync_timeout=0.2, expect_errors=True)
    lock = mount.repo_path / ".git" / "index.lock"
    lock.write_bytes(b"")
    (mount.current / "locked").write_text("written while the index is locked\n")
    time.sleep(2)  # commits fail meanwhile; the worker must survive them
    assert mount.process.poll() is None
    assert "locked" not in remote.files()
    lock.unlink()
    (mount.current / "later").write_text("later\n")
    wait_on_remote(remote, {"locked": b"written while the index is locked\n", "later": b"later\n"}, timeout=90)


def test_garbage_in_the_index_while_mounted_and_at_start(remote, mount_gitfs):
    mount = mount_gitfs(remote, sync_timeout=0.2)
    (mount.current / "one").write_text("one\n")
    wait_on_remote(remote, {"one": b"one\n"})
    (mount.repo_path / ".git" / "index").write_bytes(b"this is no index\n" * 10)
    (mount.current / "two").write_text("two\n")
    wait_on_remote(remote, {"one": b"one\n", "two": b"two\n"}, timeout=60)
    mount.kill()
    (mount.repo_path / ".git" / "index").write_bytes(b"garbage again")
    (mount.repo_path / "three").write_text("three\n")  # left uncommitted by the crash
    mount_gitfs(remote, repo_path=mount.repo_path, sync_timeout=0.2)
    wait_on_remote(remote, {"one": b"one\n", "two": b"two\n", "three": b"three\n"}, timeout=60)


# -- the branch rewritten on the remote ---------------------------------------------------------------

def test_branch_deleted_on_the_remote(remote, mount_gitfs):
    mount = mount_gitfs(remote, sync_timeout=0.2, fetch_timeout=0.3)
    (mount.current / "mine").write_text("mine\n")
    wait_on_remote(remote, {"mine": b"mine\n"})
    git("--git-dir", str(remote.bare), "symbolic-ref", "HEAD", "refs/heads/other")
    git("--git-dir", str(remote.bare), "branch", "-m", "main", "other")
    time.sleep(1)
    (mount.current / "after-delete").write_text("written after the branch was deleted\n")
    # The branch comes back with all the local work on it.
    wait_on_remote(remote, {"mine": b"mine\n", "after-delete": b"written after the branch was deleted\n",
                            "testing": b"just testing around here\n"}, timeout=60)


def test_branch_force_pushed_on_the_remote(remote, mount_gitfs):
    mount = mount_gitfs(remote, sync_timeout=0.2, fetch_timeout=0.3)
    (mount.current / "mine").write_text("mine\n")
    wait_on_remote(remote, {"mine": b"mine\n"})
    # Someone rewrites the branch: an unrelated history, force-pushed.
    other = remote.root / "rewriter"
    git("init", "-q", "-b", "main", str(other))
    (other / "theirs").write_text("a new history\n")
    (other / "testing").write_text("rewritten\n")
    git("add", "-A", cwd=other)
    git("commit", "-q", "-m", "rewrite", cwd=other)
    git("push", "-q", "--force", str(remote.bare), "main", cwd=other)
    (mount.current / "local-after").write_text("local after the rewrite\n")
    wait_on_remote(remote, {"mine": b"mine\n", "local-after": b"local after the rewrite\n",
                            "theirs": b"a new history\n"}, timeout=60)
    rescue = git("branch", "--list", "gitfs-rescue-*", cwd=mount.repo_path).split()
    assert rescue, "no rescue branch"
    assert git("show", f"{rescue[-1]}:mine", cwd=mount.repo_path) == "mine\n"
    wait_for(lambda: rescue[-1] in [r["branch"] for r in read_status(mount)["rescues"]],
             message="the rescue branch in the status")
    assert "rewritten" in mount.log_text()
