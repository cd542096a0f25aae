"""Layer 3: the sync pipeline on real mounts: other people's pushes, accept-mine conflicts,
offline and back, unmount and kill -9 with pending changes, two mounts converging.

The "other person" is the Remote's plain git clone. Not tested here: a server-side hook
refusing the push: libgit2 pushes to a local path by writing the objects itself, so no
hook runs; tests/sync covers the rejected-push handling.
"""

import json
import os
import signal
import subprocess

from helpers import commit_with, fetches, fusermount, git, gitfs_pids, run_gitfs, wait_for


def merges(remote):
    return git("--git-dir", str(remote.bare), "log", "--merges", "--format=%H", remote.branch)


def assert_linear(remote):
    assert merges(remote) == "", "the remote's history has merge commits"
    for line in git("--git-dir", str(remote.bare), "rev-list", "--parents", remote.branch).splitlines():
        assert len(line.split()) <= 2, f"a merge commit: {line}"


def versions_of(remote, path):
    """Every content the file had in the remote's history."""
    shas = git("--git-dir", str(remote.bare), "log", "--format=%H", remote.branch, "--", path).split()
    contents = set()
    for sha in shas:
        try:
            contents.add(remote.show(path, sha))
        except Exception:  # noqa: BLE001 - the commit deleted it
            pass
    return contents


def committed_here(mount, path):
    """Whether the mount's clone has path in its last commit."""
    return path in git("ls-tree", "-r", "--name-only", "HEAD", cwd=mount.repo_path).split("\n")


def history_entries(mount):
    return {entry for day in os.listdir(mount.history) for entry in os.listdir(mount.history / day)}


def test_a_push_by_someone_else_appears_without_a_local_write(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    sha = remote.commit({"theirs": "from the other person\n", "testing": "changed remotely\n"}, "their change")
    wait_for(lambda: (mount.current / "theirs").exists(), message="their file in current/")
    assert (mount.current / "theirs").read_bytes() == b"from the other person\n"
    wait_for(lambda: (mount.current / "testing").read_bytes() == b"changed remotely\n", message="their edit")
    wait_for(lambda: any(entry.endswith(sha[:10]) for entry in history_entries(mount)),
             message="their commit in history/")
    # Their deletion too.
    remote.commit({"theirs": None}, "their deletion")
    wait_for(lambda: not (mount.current / "theirs").exists(), message="their deletion in current/")
    assert remote.log() == ["their deletion", "their change", "Initial test commit"]


def test_a_remote_exec_bit_and_symlink_appear(remote, mount_gitfs):
    mount = mount_gitfs(remote)

    def prepare(work):
        os.chmod(work / "testing", 0o755)
        os.symlink("testing", work / "link")

    commit_with(remote, prepare, message="exec and link")
    wait_for(lambda: os.path.islink(mount.current / "link"), message="their link")
    assert os.readlink(mount.current / "link") == "testing"
    wait_for(lambda: os.access(mount.current / "testing", os.X_OK), message="their exec bit")


def wait_for_first_fetch(mount):
    """The sync at start fetches once; with a long fetch_timeout nothing fetches after it
    until the mount syncs its own change: their commit then meets ours in a real conflict."""
    wait_for(lambda: json.loads((mount.path / ".gitfs" / "status").read_text())["last_fetch"],
             message="the first fetch")


def test_same_file_edited_on_both_sides_local_bytes_win(remote, mount_gitfs):
    mount = mount_gitfs(remote, fetch_timeout=600)
    wait_for_first_fetch(mount)
    remote.commit({"testing": "their version\n", "theirs": "their other file\n"}, "their edit")
    mine = b"my version \x00\xff with bytes\n"
    (mount.current / "testing").write_bytes(mine)
    wait_for(lambda: "Update /testing" in remote.log(), message="my commit on the remote")
    assert remote.show("testing") == mine
    assert remote.show("theirs") == b"their other file\n"
    assert remote.log() == ["Update /testing", "their edit", "Initial test commit"]
    assert_linear(remote)
    assert (mount.current / "testing").read_bytes() == mine
    wait_for(lambda: (mount.current / "theirs").exists(), message="their file in current/")


def test_different_files_on_both_sides_are_both_kept(remote, mount_gitfs):
    remote.commit({"shared": "line 1\nline 2\nline 3\nline 4\nline 5\n"}, "a shared file")
    mount = mount_gitfs(remote, fetch_timeout=600)
    wait_for_first_fetch(mount)
    remote.commit({"theirs": "theirs\n", "shared": "line 1 (theirs)\nline 2\nline 3\nline 4\nline 5\n"},
                  "their change")
    (mount.current / "mine").write_text("mine\n")
    with open(mount.current / "shared", "r+") as handle:  # another part of the same file
        handle.seek(len("line 1\nline 2\nline 3\nline 4\n"))
        handle.write("line 5 (mine)\n")
    wait_for(lambda: "mine" in remote.files(), message="my commit on the remote")
    assert remote.show("theirs") == b"theirs\n"
    assert remote.show("mine") == b"mine\n"
    assert remote.show("shared") == b"line 1 (theirs)\nline 2\nline 3\nline 4\nline 5 (mine)\n"
    assert_linear(remote)
    wait_for(lambda: (mount.current / "theirs").exists(), message="their file in current/")
    assert (mount.current / "shared").read_bytes() == remote.show("shared")


def test_local_delete_against_a_remote_edit(remote, mount_gitfs):
    mount = mount_gitfs(remote, fetch_timeout=600)
    wait_for_first_fetch(mount)
    remote.commit({"testing": "their edit\n"}, "their edit")
    (mount.current / "testing").unlink()
    wait_for(lambda: "Deleted /testing" in remote.log(), message="my deletion on the remote")
    assert "testing" not in remote.files()
    assert_linear(remote)
    assert not (mount.current / "testing").exists()


def test_offline_writes_succeed_and_reach_the_remote_when_it_is_back(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    away = remote.bare.with_name("remote-away.git")
    os.rename(remote.bare, away)
    try:
        (mount.current / "offline1").write_text("written offline\n")
        (mount.current / "testing").write_text("edited offline\n")
        # The commit is made locally while the remote is gone.
        wait_for(lambda: committed_here(mount, "offline1"), message="a local commit")
        (mount.current / "dir").mkdir()
        (mount.current / "dir/offline2").write_text("also offline\n")
        os.unlink(mount.current / "me")
        wait_for(lambda: committed_here(mount, "dir/offline2") and not committed_here(mount, "me"),
                 message="the second local commit")
        failed = fetches(mount, "failed")
        wait_for(lambda: fetches(mount, "failed") >= failed + 2, message="two more attempts failing meanwhile")
        assert (mount.current / "dir/offline2").read_text() == "also offline\n"
    finally:
        os.rename(away, remote.bare)
    wait_for(lambda: "dir/offline2" in remote.files(), timeout=30, message="the offline work on the remote")
    assert remote.show("offline1") == b"written offline\n"
    assert remote.show("testing") == b"edited offline\n"
    assert "me" not in remote.files()
    assert_linear(remote)


def test_unmount_with_pending_changes_pushes_them(remote, mount_gitfs):
    mount = mount_gitfs(remote, sync_timeout=30)
    (mount.current / "pending").write_text("written just before unmount\n")
    (mount.current / "testing").unlink()
    assert mount.stop() == 0
    assert remote.show("pending") == b"written just before unmount\n"
    assert "testing" not in remote.files()
    assert (mount.repo_path / ".git").is_dir()  # the clone is kept
    assert git("status", "--porcelain", cwd=mount.repo_path) == ""


def test_next_mount_pushes_what_an_offline_unmount_left(remote, mount_gitfs):
    mount = mount_gitfs(remote, sync_timeout=30)
    away = remote.bare.with_name("remote-away.git")
    os.rename(remote.bare, away)
    try:
        (mount.current / "unpushed").write_text("left in the clone\n")
        assert mount.stop() == 0
    finally:
        os.rename(away, remote.bare)
    assert "unpushed" not in remote.files()
    mount_gitfs(remote, repo_path=mount.repo_path)
    wait_for(lambda: "unpushed" in remote.files(), message="the left-over commit on the remote")
    assert remote.show("unpushed") == b"left in the clone\n"


def test_kill_9_with_uncommitted_changes_then_remount(remote, mount_gitfs):
    mount = mount_gitfs(remote, sync_timeout=30)
    (mount.current / "unsaved").write_text("on disk, not committed\n")
    (mount.current / "testing").write_text("edited, not committed\n")
    os.unlink(mount.current / "me")
    mount.kill()
    assert remote.log() == ["Initial test commit"]
    again = mount_gitfs(remote, repo_path=mount.repo_path)
    wait_for(lambda: "unsaved" in remote.files(), message="the recovered changes on the remote")
    assert remote.show("unsaved") == b"on disk, not committed\n"
    assert remote.show("testing") == b"edited, not committed\n"
    assert "me" not in remote.files()
    assert (again.current / "unsaved").read_text() == "on disk, not committed\n"


def test_a_crash_leaves_every_threads_stack_in_the_log(remote, mount_gitfs):
    """A segmentation fault (in libgit2, libfuse or Python itself) ends the daemon before
    any handler of its own runs: what each thread was doing must still reach the log."""
    mount = mount_gitfs(remote)
    (mount.current / "testing").write_text("before the crash\n")
    mount.crashed_on_purpose = True
    mount.process.send_signal(signal.SIGSEGV)
    assert mount.process.wait(timeout=30) == -signal.SIGSEGV
    subprocess.run([fusermount(), "-u", "-z", str(mount.path)], capture_output=True)
    assert_stacks(mount.log_text())


def test_a_crash_after_logrotate_leaves_the_stacks_in_the_new_log(remote, mount_gitfs):
    """logrotate moves the log file away and the daemon reopens it by name at its next line:
    a crash's stacks must land there too, not in the file logrotate compresses and deletes."""
    mount = mount_gitfs(remote)
    rotated = mount.log.with_name(mount.log.name + ".1")
    os.rename(mount.log, rotated)
    (mount.current / "testing").write_text("after the rotation\n")
    wait_for(lambda: mount.log.exists() and "testing" in mount.log.read_text(), timeout=60,
             message="a line in the new log")
    mount.crashed_on_purpose = True
    mount.process.send_signal(signal.SIGSEGV)
    assert mount.process.wait(timeout=30) == -signal.SIGSEGV
    subprocess.run([fusermount(), "-u", "-z", str(mount.path)], capture_output=True)
    assert_stacks(mount.log_text())
    assert "Fatal Python error" not in rotated.read_text()


def test_a_crash_of_a_daemon_logging_to_syslog_leaves_the_stacks_in_the_clone(remote, tmp_path):
    """Mounted in the background (an fstab line) with the log in syslog, which takes no
    writes from a signal handler, and stderr on /dev/null: the stacks go to the clone."""
    mount_point, clone = tmp_path / "mnt", tmp_path / "clone"
    mount_point.mkdir()
    result = run_gitfs(remote.url, mount_point, "-o", f"repo_path={clone},log=syslog")
    assert result.returncode == 0, result.stderr
    try:
        (mount_point / "current" / "testing").write_text("before the crash\n")
        [pid] = gitfs_pids(mount_point)
        os.kill(pid, signal.SIGSEGV)
        wait_for(lambda: not gitfs_pids(mount_point), timeout=30, message="the daemon's end")
    finally:
        subprocess.run([fusermount(), "-u", "-z", str(mount_point)], capture_output=True)
    assert_stacks((clone / ".git" / "gitfs" / "crash.log").read_text())


def assert_stacks(log: str) -> None:
    assert "Fatal Python error: Segmentation fault" in log
    crash = log[log.index("Fatal Python error"):]
    # Several threads' stacks, in GitFS's code. faulthandler writes them from the signal
    # handler as it finds them, and stops at a thread whose frames are being changed at that
    # instant ("File ???"): which threads come before that one is chance, so none is named.
    assert crash.count("(most recent call first)") >= 2, crash
    assert "/gitfs/" in crash, crash


def test_kill_9_leaving_a_stale_index_lock(remote, mount_gitfs):
    mount = mount_gitfs(remote, sync_timeout=30)
    (mount.current / "unsaved").write_text("x\n")
    mount.kill()
    (mount.repo_path / ".git/index.lock").write_bytes(b"")
    mount_gitfs(remote, repo_path=mount.repo_path)
    wait_for(lambda: "unsaved" in remote.files(), message="the recovered change on the remote")


def test_kill_9_of_a_git_gc_leaving_ref_and_reflog_locks(remote, mount_gitfs):
    """git gc locks each ref it packs and each reflog it expires: killed then, it leaves
    the locks, and every later fetch and push would fail on them."""
    mount = mount_gitfs(remote, sync_timeout=30)
    (mount.current / "unsaved").write_text("x\n")
    mount.kill()
    git_dir = mount.repo_path / ".git"
    locks = [git_dir / "refs/remotes/origin/main.lock", git_dir / "refs/heads/main.lock",
             git_dir / "logs/refs/heads/main.lock", git_dir / "packed-refs.lock"]
    for lock in locks:
        lock.parent.mkdir(parents=True, exist_ok=True)
        lock.write_bytes(b"")
    remote.commit({"theirs.txt": "theirs\n"}, "theirs")
    again = mount_gitfs(remote, repo_path=mount.repo_path)
    wait_for(lambda: "unsaved" in remote.files(), message="the recovered change on the remote")
    assert (again.current / "theirs.txt").read_text() == "theirs\n"
    assert not [lock for lock in locks if lock.exists()]


def test_two_mounts_converge(remote, mount_gitfs):
    first = mount_gitfs(remote)
    second = mount_gitfs(remote)
    # Different files, then the same file, at the same time.
    (first.current / "from_first").write_text("first\n")
    (second.current / "from_second").write_text("second\n")
    (first.current / "shared").write_bytes(b"first's version\n")
    (second.current / "shared").write_bytes(b"second's version\n")
    (first.current / "testing").write_text("first edits testing\n")
    (second.current / "testing").write_text("second edits testing\n")

    def converged():
        files = remote.files()
        if not {"from_first", "from_second", "shared"} <= set(files):
            return False
        expected = {path: remote.show(path) for path in files}
        for mount in (first, second):
            names = sorted(str(p.relative_to(mount.current)) for p in mount.current.rglob("*"))
            if names != sorted(files):
                return False
            if any((mount.current / path).read_bytes() != data for path, data in expected.items()):
                return False
        return True

    wait_for(converged, timeout=30, message="both mounts showing the remote's tree")
    assert_linear(remote)
    # Every commit's content is in the history; accept-mine decided the tie.
    assert versions_of(remote, "shared") == {b"first's version\n", b"second's version\n"}
    assert {b"first edits testing\n", b"second edits testing\n"} <= versions_of(remote, "testing")
    assert remote.show("shared") in {b"first's version\n", b"second's version\n"}
    # Then both keep working on the converged tree.
    (second.current / "after").write_text("later\n")
    wait_for(lambda: (first.current / "after").exists(), message="second's later file on first")


def test_a_remote_change_waits_until_the_open_file_is_closed(remote, mount_gitfs):
    """The kernel caches pages per path: replacing a file under an open handle would
    mix both versions, so the remote's change is applied once the file is closed."""
    old = b"old content " * 1000
    new = b"new content " * 2000
    remote.commit({"big": old}, "a file")
    mount = mount_gitfs(remote)
    with open(mount.current / "big", "rb") as reader:
        assert reader.read(12) == b"old content "
        remote.commit({"big": new, "other": "o\n"}, "their rewrite")
        # Fetched, and put off by one cycle after another while the file is open (or, were it
        # not put off, in the clone under the reader).
        wait_for(lambda: mount.log_text().count("open files or documents being saved (big)") >= 2
                 or (mount.repo_path / "big").read_bytes() == new, message="two cycles putting their rewrite off")
        assert reader.read() == old[12:]  # the open file keeps its old, whole content
        assert (mount.repo_path / "big").read_bytes() == old
    wait_for(lambda: (mount.current / "big").read_bytes() == new, message="their rewrite once closed")
    assert (mount.current / "other").read_bytes() == b"o\n"
    assert_linear(remote)


def test_a_file_open_for_writing_is_kept_while_remote_changes_arrive(remote, mount_gitfs):
    mount = mount_gitfs(remote, max_sync_delay=600)  # the open file is never overdue here
    with open(mount.current / "mine", "wb") as writer:
        writer.write(b"part one\n")
        writer.flush()
        remote.commit({"testing": "their edit\n", "theirs": "t\n"}, "their edit")
        # Their change touches no open file: it comes in while mine is being written.
        wait_for(lambda: (mount.current / "theirs").exists(), message="their file in current/ while mine is open")
        writer.write(b"part two\n")
    wait_for(lambda: "mine" in remote.files(), message="my file on the remote")
    assert remote.show("mine") == b"part one\npart two\n"
    assert (mount.current / "mine").read_bytes() == b"part one\npart two\n"
    assert (mount.current / "testing").read_bytes() == b"their edit\n"
    assert remote.show("testing") == b"their edit\n"
    assert_linear(remote)


def test_a_file_held_open_too_long_is_committed_with_what_it_holds(remote, mount_gitfs):
    mount = mount_gitfs(remote, sync_timeout=0.3)  # the bound is 10 x sync_timeout = 3 s
    wait_for_first_fetch(mount)  # the sync at start is over: nothing else is owed but the open file
    with open(mount.current / "journal", "wb") as writer:
        writer.write(b"first entry\n")
        writer.flush()
        wait_for(lambda: "journal" in remote.files(), timeout=20, message="the open file on the remote")
        assert remote.show("journal") == b"first entry\n"
        writer.write(b"second entry\n")
    wait_for(lambda: remote.show("journal") == b"first entry\nsecond entry\n",
             message="the rest once it is closed")


def test_first_access_after_an_idle_spell_fetches_at_once(remote, mount_gitfs):
    # Idle after 2 quiet periods of 0.5 s (1 s without a call to the mount); the fetch worker,
    # fetching every 0.5 s until then, says so in the log (at debug), then fetches every 600 s.
    mount = mount_gitfs(remote, min_idle_times=2, fetch_timeout=0.5, idle_fetch_timeout=600, log_level="debug")
    wait_for(lambda: "idle: the versions of" in mount.log_text(), message="the idle spell")
    remote.commit({"news": "fresh\n"}, "while the mount was idle")
    os.listdir(mount.current)  # activity: wakes the fetch worker
    wait_for(lambda: (mount.current / "news").exists(), timeout=10, message="the push after the wake-up")


# -- two people, one text file: both keep what they wrote ------------------------------


def test_appends_on_both_sides_are_both_kept(remote, mount_gitfs):
    remote.commit({"log.txt": "first entry\n"}, "a log")
    mount = mount_gitfs(remote, fetch_timeout=600)
    wait_for_first_fetch(mount)
    remote.commit({"log.txt": "first entry\nentry from the colleague\n"}, "their entry")
    with open(mount.current / "log.txt", "a") as handle:
        handle.write("entry written through the mount\n")
    wait_for(lambda: "Update /log.txt" in remote.log(), message="my commit on the remote")
    merged = b"first entry\nentry from the colleague\nentry written through the mount\n"
    assert remote.show("log.txt") == merged
    assert_linear(remote)
    wait_for(lambda: (mount.current / "log.txt").read_bytes() == merged, message="the merged file in current/")
    assert "conflicts resolved" not in mount.log_text()


def test_a_conflicting_line_costs_only_that_line_and_the_commit_says_so(remote, mount_gitfs):
    lines = [f"line {n}\n" for n in range(1, 51)]
    remote.commit({"notes.txt": "".join(lines)}, "fifty lines")
    mount = mount_gitfs(remote, fetch_timeout=600)
    wait_for_first_fetch(mount)
    theirs = lines.copy()
    theirs[9], theirs[44] = "line 10 (theirs)\n", "line 45 (theirs)\n"
    their_commit = remote.commit({"notes.txt": "".join(theirs)}, "their edit")
    mine = lines.copy()
    mine[9] = "line 10 (mine)\n"
    (mount.current / "notes.txt").write_text("".join(mine))
    wait_for(lambda: "Update /notes.txt" in remote.log(), message="my commit on the remote")
    mine[44] = "line 45 (theirs)\n"
    assert remote.show("notes.txt") == "".join(mine).encode()
    body = git("--git-dir", str(remote.bare), "log", "-1", "--format=%b", remote.branch)
    assert f"notes.txt (the lines both changed) against {their_commit[:10]} by Other Person" in body
    # The colleague's whole version is kept for the user.
    conflicts = mount.path / ".gitfs" / "conflicts"
    kept = wait_for(lambda: [folder / "notes.txt" for folder in conflicts.iterdir()], message="the kept version")
    assert kept[0].read_text() == "".join(theirs)
    wait_for(lambda: (mount.current / "notes.txt").read_text() == "".join(mine), message="the merge in current/")


def test_a_path_marked_minus_merge_keeps_the_local_file_whole(remote, mount_gitfs):
    remote.commit({".gitattributes": "*.log -merge\n", "app.log": "one\n"}, "attributes")
    mount = mount_gitfs(remote, fetch_timeout=600)
    wait_for_first_fetch(mount)
    remote.commit({"app.log": "one\ntheirs\n"}, "their line")
    with open(mount.current / "app.log", "a") as handle:
        handle.write("mine\n")
    wait_for(lambda: "Update /app.log" in remote.log(), message="my commit on the remote")
    assert remote.show("app.log") == b"one\nmine\n"


def test_a_pushed_commit_the_remote_lost_is_pushed_again(remote, mount_gitfs):
    """Another pusher overwrote the branch (a forced push, or two pushes to a remote that is
    a local path at the same moment: libgit2 writes that remote's ref without comparing it
    with the value it saw): the commit GitFS had pushed is no longer on the remote. The
    next fetch shows it missing, and the sync replays it on top: nothing is lost."""
    mount = mount_gitfs(remote, fetch_timeout=1)
    (mount.current / "mine.txt").write_text("mine\n")
    wait_for(lambda: "mine.txt" in remote.files(), timeout=30, message="mine.txt on the remote")
    lost = remote.head()
    git("fetch", "-q", "origin", cwd=remote.work)
    git("reset", "-q", "--hard", f"{lost}~1", cwd=remote.work)  # the tip before GitFS's commit
    (remote.work / "theirs.txt").write_text("theirs\n")
    git("add", "theirs.txt", cwd=remote.work)
    git("commit", "-q", "-m", "theirs, over GitFS's commit", cwd=remote.work)
    git("push", "-q", "--force", "origin", remote.branch, cwd=remote.work)
    assert "mine.txt" not in remote.files()
    wait_for(lambda: {"mine.txt", "theirs.txt"} <= set(remote.files()), timeout=30,
             message="GitFS's lost commit pushed again, on top of theirs")
    assert remote.show("mine.txt") == b"mine\n" and remote.show("theirs.txt") == b"theirs\n"
    wait_for(lambda: (mount.current / "theirs.txt").exists(), message="theirs in current/")
    assert_linear(remote)
