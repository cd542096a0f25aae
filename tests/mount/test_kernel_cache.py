"""Layer 3: the kernel caches names, attributes, pages and history/ listings for long
(an hour); what GitFS changes behind the kernel's back must still show at once.

Each test first makes the kernel cache what the remote then changes (reads, stats,
listings), so that a missing invalidation leaves the old state visible for the whole
cache timeout and the test fails. The mounts fetch every second (fetch_timeout=1):
once GitFS has written the remote's change into its clone, the mount must show it
within the second that follows (fetch_timeout + 1 s counted from the push).
"""

import errno
import os
import subprocess
import threading
import time

from helpers import errno_of, git, wait_for, wait_synced

FETCH_TIMEOUT = 1.0
SHOWN_WITHIN = FETCH_TIMEOUT + 1.0  # after GitFS applied the change to its clone


def applied(mount, sha: str) -> None:
    """Wait (as long as the sync needs on a busy machine) until the clone's branch is at sha."""
    wait_for(lambda: git("rev-parse", "main", cwd=mount.repo_path, check=False).strip() == sha,
             timeout=60, message=f"the clone at {sha[:10]}")


def test_a_remote_change_to_a_same_size_file_shows(remote, mount_gitfs):
    remote.commit({"same.txt": "version one\n"}, "one")
    mount = mount_gitfs(remote, fetch_timeout=FETCH_TIMEOUT)
    path = mount.current / "same.txt"
    for _ in range(3):  # pages, attributes and the name are all in the kernel's cache now
        assert path.read_bytes() == b"version one\n"
        before = os.stat(path)
    sha = remote.commit({"same.txt": "version two\n"}, "two")  # same size, other bytes
    applied(mount, sha)
    # stat first: nothing but the invalidation refreshes attributes the kernel holds for an hour
    wait_for(lambda: os.stat(path).st_mtime_ns != before.st_mtime_ns, timeout=SHOWN_WITHIN,
             message="the new modification time")
    assert os.stat(path).st_size == before.st_size
    wait_for(lambda: path.read_bytes() == b"version two\n", timeout=SHOWN_WITHIN, message="the new bytes")
    with open(path, "rb") as handle:  # a file opened now reads the new bytes too
        assert handle.read() == b"version two\n"


def test_a_remote_folder_rename_and_deletion_show(remote, mount_gitfs):
    remote.commit({"old/a.txt": "a\n", "old/deep/b.txt": "b\n", "gone.txt": "gone\n"}, "tree")
    mount = mount_gitfs(remote, fetch_timeout=FETCH_TIMEOUT)
    current = mount.current
    for _ in range(2):  # cache every name, attribute and page involved
        assert sorted(os.listdir(current / "old")) == ["a.txt", "deep"]
        assert (current / "old" / "a.txt").read_text() == "a\n"
        assert (current / "old" / "deep" / "b.txt").read_text() == "b\n"
        assert (current / "gone.txt").read_text() == "gone\n"
        os.stat(current / "old" / "deep")

    def rename(work):
        git("mv", "old", "new", cwd=work)
        git("rm", "-q", "gone.txt", cwd=work)

    git("pull", "-q", "--rebase", "origin", remote.branch, cwd=remote.work, check=False)
    rename(remote.work)
    sha = remote.commit_staged("rename old to new, delete gone.txt")
    applied(mount, sha)

    def shown():
        names = set(os.listdir(current))
        return ("new" in names and "old" not in names and "gone.txt" not in names
                and not os.path.exists(current / "old") and not os.path.exists(current / "gone.txt"))

    wait_for(shown, timeout=SHOWN_WITHIN, message="the rename and the deletion in current/")
    assert errno_of(os.stat, current / "old" / "a.txt") == errno.ENOENT
    assert errno_of(open, current / "old" / "deep" / "b.txt", "rb") == errno.ENOENT
    assert (current / "new" / "a.txt").read_text() == "a\n"
    assert (current / "new" / "deep" / "b.txt").read_text() == "b\n"
    # The names the kernel had cached are free again: creating them works as on a disk.
    (current / "gone.txt").write_text("back\n")
    assert (current / "gone.txt").read_text() == "back\n"
    (current / "old").mkdir()
    assert os.listdir(current / "old") == []


COLLEAGUE_DELETIONS = 20


def test_a_file_saved_the_moment_a_colleague_s_deletion_shows_is_saved(remote, mount_gitfs):
    """A program saves a file as soon as it sees the remote deleted it, again and again
    while a colleague deletes one file after another. From the sync's freeze until the
    kernel is told to forget a removed name, current/ shows the name missing; the create
    that follows must make the file and answer success: libfuse answers it by looking the
    name up, and an ENOENT there failed the save of a file made on disk (a quarter of
    them, seen before the fix)."""
    names = [f"file-{number:02d}.txt" for number in range(COLLEAGUE_DELETIONS)]
    remote.commit(dict.fromkeys(names, "theirs\n"), "files")
    mount = mount_gitfs(remote, fetch_timeout=FETCH_TIMEOUT)
    for name in names:
        assert (mount.current / name).read_text() == "theirs\n"
    stop = threading.Event()

    def colleague() -> None:
        for name in names:
            while not stop.is_set():  # again from the remote's branch if the mount pushed in between
                git("fetch", "-q", "origin", cwd=remote.work)
                git("reset", "-q", "--hard", f"origin/{remote.branch}", cwd=remote.work)
                git("rm", "-q", "--ignore-unmatch", name, cwd=remote.work)
                git("commit", "-q", "-m", f"delete {name}", cwd=remote.work, check=False)
                if subprocess.run(["git", "push", "-q", "origin", remote.branch], cwd=remote.work,
                                  capture_output=True).returncode == 0:
                    break
            time.sleep(0.5)

    deleting = threading.Thread(target=colleague)
    deleting.start()
    failed = []
    try:
        for name in names:
            path = mount.current / name
            wait_for(lambda path=path: not os.path.exists(path), timeout=60, interval=0.001,
                     message=f"{name} deleted")
            try:
                path.write_text("mine\n")
            except OSError as error:
                failed.append(f"{name}: {os.strerror(error.errno)}")
    finally:
        stop.set()
        deleting.join()
    assert failed == []
    for name in names:
        assert (mount.current / name).read_text() == "mine\n"
    wait_synced(mount)
    assert all(remote.show(name) == b"mine\n" for name in names)


def test_a_name_the_kernel_still_holds_for_a_removed_file_is_created_anew(remote, mount_gitfs):
    """Between the sync's freeze and the moment the kernel is told to forget a removed name
    (which takes the folder's lock, so it waits until FUSE calls may run again), the
    kernel holds the name of a file that is gone. A program saving a file of that name
    then must get a new file, not ENOENT. Here the window is held open: the file goes
    from the working tree behind the kernel's back."""
    remote.commit({"gone.txt": "gone\n", "kept.txt": "kept\n"}, "two files")
    mount = mount_gitfs(remote, fetch_timeout=600)
    for _ in range(2):
        assert (mount.current / "gone.txt").read_text() == "gone\n"
        assert (mount.current / "kept.txt").read_text() == "kept\n"
    os.unlink(mount.repo_path / "gone.txt")
    os.unlink(mount.repo_path / "kept.txt")
    (mount.current / "gone.txt").write_text("back\n")  # open(O_WRONLY|O_CREAT|O_TRUNC)
    assert (mount.current / "gone.txt").read_text() == "back\n"
    assert (mount.repo_path / "gone.txt").read_text() == "back\n"
    # Opened to read, the name ends as a missing file does: ENOENT, after one look.
    assert errno_of(open, mount.current / "kept.txt", "rb") == errno.ENOENT


def test_a_remote_file_replaced_by_a_folder_shows(remote, mount_gitfs):
    remote.commit({"thing": "a file\n"}, "file")
    mount = mount_gitfs(remote, fetch_timeout=FETCH_TIMEOUT)
    thing = mount.current / "thing"
    assert thing.read_text() == "a file\n"
    os.stat(thing)
    git("pull", "-q", "--rebase", "origin", remote.branch, cwd=remote.work, check=False)
    git("rm", "-q", "thing", cwd=remote.work)
    sha = remote.commit({"thing/inside": "now a folder\n"}, "folder")
    applied(mount, sha)
    wait_for(lambda: thing.is_dir(), timeout=SHOWN_WITHIN, message="thing as a folder")
    assert (thing / "inside").read_text() == "now a folder\n"


def day_of(mount, sha: str) -> tuple[str, str]:
    """(day folder, commit folder) of a commit, as GitFS names them (local time)."""
    stamp = int(git("--git-dir", str(mount.remote.bare), "log", "-1", "--format=%ct", sha).strip())
    local = time.localtime(stamp)
    return time.strftime("%Y-%m-%d", local), time.strftime("%H-%M-%S-", local) + sha[:10]


def test_a_new_commit_shows_in_history_and_in_its_day(remote, mount_gitfs):
    first = remote.commit({"a.txt": "1\n"}, "today")
    mount = mount_gitfs(remote, fetch_timeout=FETCH_TIMEOUT)
    today, first_name = day_of(mount, first)
    for _ in range(3):  # the kernel keeps these listings (and their attributes) now
        days = os.listdir(mount.history)
        commits = os.listdir(mount.history / today)
        os.stat(mount.history / today)
    assert today in days and first_name in commits

    # A remote commit on a day that has commits already, then one on a new day.
    second = remote.commit({"a.txt": "2\n"}, "same day", date=time.strftime("%Y-%m-%dT23:59:59"))
    applied(mount, second)
    _, second_name = day_of(mount, second)
    second_time = int(git("--git-dir", str(remote.bare), "log", "-1", "--format=%ct", second).strip())
    # A folder's modification time is its newest commit's: attributes the kernel holds for an hour.
    wait_for(lambda: os.stat(mount.history / today).st_mtime == second_time, timeout=SHOWN_WITHIN,
             message="the day's new modification time")
    wait_for(lambda: second_name in os.listdir(mount.history / today), timeout=SHOWN_WITHIN,
             message="the commit in its day's listing")
    third = remote.commit({"a.txt": "3\n"}, "new day", date="2031-01-02T12:00:00")
    applied(mount, third)
    new_day, third_name = day_of(mount, third)
    third_time = int(git("--git-dir", str(remote.bare), "log", "-1", "--format=%ct", third).strip())
    wait_for(lambda: os.stat(mount.history).st_mtime == third_time, timeout=SHOWN_WITHIN,
             message="history/'s new modification time")
    wait_for(lambda: new_day in os.listdir(mount.history), timeout=SHOWN_WITHIN, message="the new day in history/")
    assert os.listdir(mount.history / new_day) == [third_name]
    assert (mount.history / new_day / third_name / "a.txt").read_text() == "3\n"

    # A local commit (a write through current/) shows the same way.
    (mount.current / "local.txt").write_text("mine\n")
    wait_for(lambda: "local.txt" in mount.remote.files(), timeout=60, message="the local commit pushed")
    local = mount.remote.head()
    local_day, local_name = day_of(mount, local)
    wait_for(lambda: local_day in os.listdir(mount.history)
             and local_name in os.listdir(mount.history / local_day), timeout=SHOWN_WITHIN,
             message="the local commit in history/")


# -- hard links: each name is cached apart ----------------------------------------------------

HARD_LINK_SCRIPT = """
set -e
stat_all() { for name in h1 h2 h3 d/h4; do [ -e "$name" ] && stat -c "$1 $name %h %a %s" "$name"; done; true; }
echo one > h1
mkdir -p d
stat_all start
ln h1 h2
stat_all ln
chmod 600 h2
stat_all chmod
printf 'longer content\\n' >> h2
stat_all append
truncate -s 3 h1
stat_all truncate
ln h2 h3
ln h2 d/h4
stat_all ln-twice
echo new > h0
mv h0 h3
stat_all rename-over
rm h2
stat_all rm
chmod 640 d/h4
stat_all chmod-other-folder
cat h1
"""


def test_a_change_through_one_hard_link_shows_through_the_others_as_on_a_disk(remote, mount_gitfs, tmp_path):
    mount = mount_gitfs(remote)
    native = tmp_path / "native"
    native.mkdir()
    results = {}
    for where in (native, mount.current):
        done = subprocess.run(["sh", "-c", HARD_LINK_SCRIPT], cwd=where, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        results[where] = done.stdout.splitlines()
    mine = results[mount.current]
    # Names in another folder than the one changed through are not looked for (README):
    # d/h4 after a change in the top folder, h1 after `chmod 640 d/h4`, may show the old
    # attributes until the kernel asks again. The names in the changed folder never do.
    def comparable(lines):
        return [line for line in lines if " d/h4 " not in line and not line.startswith("chmod-other-folder h1 ")]

    assert comparable(mine) == comparable(results[native])
    assert "ln h1 2 644 4" in mine and "chmod h1 2 600 4" in mine
    assert "chmod-other-folder d/h4 2 640 3" in mine


def test_an_idle_mount_has_the_kernel_forget_history_but_working_directories(remote, mount_gitfs, local_timezone):
    """libfuse keeps a node for each name the kernel holds, and the kernel lets names go only
    under memory pressure: once idle, the mount asks it to forget the names below history/.
    A name forgotten is looked up afresh and gets a new node, so a new inode number. The
    folders programs work in stay: their getcwd() and /proc/PID/cwd still name them."""
    local_timezone("UTC")
    dates = ["2021-03-01T10:00:00+0000", "2021-03-01T11:00:00+0000", "2021-03-02T10:00:00+0000",
             "2021-03-03T10:00:00+0000", "2021-03-03T11:00:00+0000"]
    for number, date in enumerate(dates):
        remote.commit({"a.txt": f"{number}\n", "sub/b.txt": "b\n"}, f"commit {number}", date=date)
    mount = mount_gitfs(remote, sync_timeout=0.5, min_idle_times=2, fetch_timeout=1)
    days = sorted(os.listdir(mount.history))
    numbers = {}
    for top, folders, files in os.walk(mount.history):  # ls -R: every name known to the kernel
        for name in folders + files:
            numbers[os.path.join(top, name)] = os.lstat(os.path.join(top, name)).st_ino
    busy_day = mount.history / "2021-03-03"
    first, second = sorted(os.listdir(busy_day))
    busy_commit = mount.history / "2021-03-01" / sorted(os.listdir(mount.history / "2021-03-01"))[0]
    # Programs sitting in a day folder and in a commit folder of another day.
    sitting = [subprocess.Popen(["sleep", "120"], cwd=folder) for folder in (busy_day, busy_commit)]
    try:
        other_file = str(mount.history / "2021-03-02" / os.listdir(mount.history / "2021-03-02")[0] / "sub" / "b.txt")

        def forgotten():
            return os.lstat(other_file).st_ino != numbers[other_file]
        # Idle 1 s after the last call, told at the fetch worker's next round (1 s).
        wait_for(forgotten, timeout=15, interval=0.5, message="history/'s names forgotten once idle")
        for program, folder in zip(sitting, (busy_day, busy_commit)):
            assert os.readlink(f"/proc/{program.pid}/cwd") == str(folder)  # not "... (deleted)"
            assert sorted(os.listdir(f"/proc/{program.pid}/cwd")) == sorted(os.listdir(folder))
        # The working directories keep their names (and nodes); the names around them do not.
        assert os.lstat(busy_day).st_ino == numbers[str(busy_day)]
        assert os.lstat(busy_commit).st_ino == numbers[str(busy_commit)]
        assert os.lstat(busy_day / second).st_ino != numbers[str(busy_day / second)]
        assert os.lstat(busy_day / first / "a.txt").st_ino != numbers[str(busy_day / first / "a.txt")]
    finally:
        for program in sitting:
            program.kill()
            program.wait()
    assert sorted(os.listdir(mount.history)) == days
    assert (busy_day / second / "a.txt").read_text() == "4\n"
