"""Layer 3: reading a real mount: the root, current/ and history/,
driven by the os module and real programs (du, cp). Every test mounts a fresh
bare remote with the conftest `mount_gitfs` fixture.
"""

import errno
import grp
import hashlib
import os
import pwd
import shutil
import stat
import subprocess

import pytest

from helpers import Remote, commit_time, commit_with, errno_of, history_folder, wait_for

SUBMODULE_SHA = "1234567890abcdef1234567890abcdef12345678"
CHUNK = 128 * 1024


def read_in_chunks(path, chunk=CHUNK):
    digest, fd = hashlib.sha256(), os.open(path, os.O_RDONLY)
    try:
        while True:
            piece = os.read(fd, chunk)
            if not piece:
                return digest.hexdigest()
            assert len(piece) <= chunk
            digest.update(piece)
    finally:
        os.close(fd)


def make_tree(work, big):
    def write(name, content, mode=None):
        path = work / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        if mode is not None:
            os.chmod(path, mode)

    write("testing", b"just testing around here\n")
    write("a/file", b"a's file\n")
    write("b/file", b"b's file, which is longer\n")
    write("a/sub/file", b"deep in a\n")
    write("b/sub/file", b"deep in b, longer\n")
    write("src/util/x.py", b"x = 1\n")
    write("test/util/test_y.py", b"y = 2\n")
    write("run.sh", b"#!/bin/sh\necho run\n", 0o755)
    write("bin/tool", b"#!/bin/sh\necho tool\n", 0o755)
    write("empty/.keep", b"")
    write(".keep", b"")
    write("big.bin", big)
    write("medium.bin", b"m" * 300_000)
    os.symlink("testing", work / "link")
    os.symlink("../file", work / "b/sub/up")
    os.symlink("missing/target", work / "dangling")
    (work / "sub").mkdir()  # the submodule's (uninitialised) folder


@pytest.fixture
def rich(tmp_path, local_timezone):
    """Four commits over three local days at UTC-5, a tree with every kind of entry, a 5 MB blob."""
    local_timezone("XYZ+5")
    remote = Remote(tmp_path / "rich")
    remote.big = os.urandom(5 * 1024 * 1024 + 123)
    # 02:00 UTC on Jan 2 is 21:00 on Jan 1 at UTC-5: the folder is that local day.
    remote.c1 = commit_with(remote, lambda work: make_tree(work, remote.big), message="first",
                            date="2020-01-02T02:00:00+0000", gitlinks=[("sub", SUBMODULE_SHA)])
    remote.c2 = remote.commit({"a/file": "a's file, second version\n"}, "second", date="2020-01-02T14:00:00+0000")
    remote.c3 = remote.commit({"notes.txt": "notes\n"}, "third", date="2020-01-02T20:30:00+0000")
    remote.c4 = remote.commit({"late.txt": "late\n", "testing": None}, "fourth", date="2020-03-15T12:00:00+0000")
    return remote


def commit_dir(mount, remote, sha):
    day, name = history_folder(remote, sha)
    return mount.history / day / name


# -- the root ------------------------------------------------------------------------

def test_root_lists_exactly_current_and_history_and_is_read_only(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    assert os.listdir(mount.path) == ["current", "history"]
    st = os.stat(mount.path)
    assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o555
    assert errno_of(os.mkdir, mount.path / "newdir") == errno.EROFS
    assert errno_of(open, mount.path / "newfile", "w") == errno.EROFS
    assert errno_of(os.symlink, "current", mount.path / "newlink") == errno.EROFS
    assert errno_of(os.rename, mount.path / "current", mount.path / "moved") == errno.EROFS
    assert errno_of(os.chmod, mount.path, 0o755) == errno.EROFS
    for name in ("nope", "currentX", "historyX", "current.bak", ".git"):
        assert errno_of(os.stat, mount.path / name) == errno.ENOENT, name
    assert errno_of(os.listdir, mount.path / "currentX") == errno.ENOENT
    assert os.listdir(mount.path) == ["current", "history"]


def test_current_path_and_history_path_rename_the_root_entries(remote, mount_gitfs):
    mount = mount_gitfs(remote, current_path="tree", history_path="past")
    assert os.listdir(mount.path) == ["tree", "past"]
    assert (mount.path / "tree" / "testing").read_text() == "just testing around here\n"
    assert len(os.listdir(mount.path / "past")) == 1
    for name in ("current", "history"):
        assert errno_of(os.stat, mount.path / name) == errno.ENOENT


def test_current_path_slash_puts_the_tree_at_the_root_with_history_in_it(remote, mount_gitfs):
    mount = mount_gitfs(remote, current_path="/")
    assert sorted(os.listdir(mount.path)) == ["history", "me", "testing"]
    assert (mount.path / "testing").read_text() == "just testing around here\n"
    (day,) = os.listdir(mount.path / "history")
    (name,) = os.listdir(mount.path / "history" / day)
    assert (mount.path / "history" / day / name / "testing").read_bytes() == b"just testing around here\n"


# -- current/ ----------------------------------------------------------------------------

def test_current_shows_the_branch_bytes_modes_and_links(rich, mount_gitfs):
    mount = mount_gitfs(rich)
    current = mount.current
    assert sorted(os.listdir(current)) == sorted(
        ["a", "b", "src", "test", "run.sh", "bin", "empty", "big.bin", "medium.bin", "link", "dangling", "sub",
         "notes.txt", "late.txt"])  # no .git, no .keep; `testing` was deleted by the last commit
    assert os.listdir(current / "empty") == []
    for path in rich.files():
        if path.endswith(".keep") or path == "sub":
            continue
        full = current / path
        if os.path.islink(full):
            assert os.readlink(full).encode() == rich.show(path), path
        else:
            assert full.read_bytes() == rich.show(path), path
            assert os.stat(full).st_size == len(rich.show(path)), path
    assert os.stat(current / "run.sh").st_mode & 0o111
    assert os.stat(current / "bin/tool").st_mode & 0o111
    assert not os.stat(current / "a/file").st_mode & 0o111
    assert os.readlink(current / "link") == "testing"
    assert os.readlink(current / "b/sub/up") == "../file"
    assert (current / "b/sub/up").read_bytes() == b"b's file, which is longer\n"
    assert os.readlink(current / "dangling") == "missing/target"
    assert read_in_chunks(current / "big.bin") == hashlib.sha256(rich.big).hexdigest()
    assert os.stat(current / "big.bin").st_blocks * 512 >= len(rich.big)  # du works here too


def test_current_uid_gid_follow_user_and_group(remote, mount_gitfs):
    uid, gid = pwd.getpwnam("nobody").pw_uid, grp.getgrnam("nogroup").gr_gid
    mount = mount_gitfs(remote, user="nobody", group="nogroup")
    day = os.listdir(mount.history)[0]
    name = os.listdir(mount.history / day)[0]
    for path in (mount.path, mount.current, mount.current / "testing", mount.history, mount.history / day,
                 mount.history / day / name, mount.history / day / name / "testing"):
        st = os.lstat(path)
        assert (st.st_uid, st.st_gid) == (uid, gid), path


def test_git_dir_is_hidden_from_current(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    assert ".git" not in os.listdir(mount.current)
    assert sorted(os.listdir(mount.current)) == ["me", "testing"]


def test_a_current_listing_hands_the_kernel_the_attributes_it_lacks(remote, mount_gitfs):
    # 1500 entries take several READDIRPLUS replies, each resuming at the offset asked.
    files = {f"many/f{number:04d}.txt": "x" * (number % 97) for number in range(1500)}
    remote.commit(files, "many files")
    mount = mount_gitfs(remote)
    many = mount.current / "many"
    for entry in os.scandir(many):
        st = entry.stat(follow_symlinks=False)
        assert stat.S_ISREG(st.st_mode) and st.st_size == len(files["many/" + entry.name]), entry.name
    # Seen from outside through a change made in the clone behind the kernel's back: the
    # kernel keeps attributes for an hour, and a listing hands them over again only once
    # the kernel asked GitFS about an entry of the folder (here, a name that is missing).
    first = many / "f0001.txt"
    size = os.stat(first).st_size
    with open(os.path.join(mount.repo_path, "many", "f0001.txt"), "a") as behind:
        behind.write("more\n")
    assert os.stat(first).st_size == size  # still the kernel's copy
    assert "f0001.txt" in os.listdir(many)  # the kernel holds every entry's: types only
    assert os.stat(first).st_size == size
    assert errno_of(os.stat, many / "missing.txt") == errno.ENOENT
    assert "f0001.txt" in os.listdir(many)
    assert os.stat(first).st_size == size + 5


# -- history/ -------------------------------------------------------------------------------

def test_history_days_newest_first_commits_oldest_first_in_local_time(rich, mount_gitfs):
    mount = mount_gitfs(rich)
    folders = [history_folder(rich, sha) for sha in (rich.c1, rich.c2, rich.c3, rich.c4)]
    assert folders[0] == ("2020-01-01", "21-00-00-" + rich.c1[:10])  # local, not UTC
    assert os.listdir(mount.history) == ["2020-03-15", "2020-01-02", "2020-01-01"]
    assert os.listdir(mount.history / "2020-01-01") == [folders[0][1]]
    assert os.listdir(mount.history / "2020-01-02") == [folders[1][1], folders[2][1]]
    assert os.listdir(mount.history / "2020-03-15") == [folders[3][1]]
    day = os.stat(mount.history / "2020-01-02")
    assert stat.S_ISDIR(day.st_mode) and stat.S_IMODE(day.st_mode) == 0o555
    assert day.st_mtime == commit_time(rich, rich.c3)
    assert day.st_ctime == commit_time(rich, rich.c2)


def test_commit_folder_holds_the_commits_tree_at_every_depth(rich, mount_gitfs):
    mount = mount_gitfs(rich)
    root = commit_dir(mount, rich, rich.c1)
    expected = set(rich.files(rich.c1))
    found = set()
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            found.add(os.path.relpath(os.path.join(dirpath, name), root))
    assert found == expected - {"sub"}
    for path in expected - {"sub"}:
        full = root / path
        if os.path.islink(full):
            assert os.readlink(full).encode() == rich.show(path, rich.c1), path
        else:
            assert full.read_bytes() == rich.show(path, rich.c1), path
    # The original served a/file for b/file: same names at the same depth keep their own bytes.
    assert (root / "a/file").read_bytes() == b"a's file\n"
    assert (root / "b/file").read_bytes() == b"b's file, which is longer\n"
    assert (root / "a/sub/file").read_bytes() == b"deep in a\n"
    assert (root / "b/sub/file").read_bytes() == b"deep in b, longer\n"
    assert os.listdir(root / "test/util") == ["test_y.py"]
    assert os.listdir(root / "src/util") == ["x.py"]
    assert ".keep" in os.listdir(root) and os.listdir(root / "empty") == [".keep"]
    # Each commit shows its own version.
    assert (commit_dir(mount, rich, rich.c2) / "a/file").read_bytes() == b"a's file, second version\n"
    assert (commit_dir(mount, rich, rich.c2) / "b/file").read_bytes() == b"b's file, which is longer\n"
    assert not (commit_dir(mount, rich, rich.c4) / "testing").exists()
    assert (commit_dir(mount, rich, rich.c3) / "testing").exists()


def test_commit_folder_modes_times_and_sizes(rich, mount_gitfs):
    mount = mount_gitfs(rich)
    root = commit_dir(mount, rich, rich.c1)
    when = commit_time(rich, rich.c1)
    for path in ("", "a", "a/sub", "b/sub", "empty", "sub"):
        st = os.lstat(root / path)
        assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o555, path
        assert st.st_mtime == when, path
    for path, mode in (("a/file", 0o444), ("testing", 0o444), ("run.sh", 0o555), ("bin/tool", 0o555)):
        st = os.lstat(root / path)
        assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == mode, path
        assert st.st_mtime == when and st.st_ctime == when, path
        assert st.st_size == len(rich.show(path, rich.c1)), path
    assert stat.S_ISLNK(os.lstat(root / "b/sub/up").st_mode)
    big = os.lstat(root / "big.bin")
    assert big.st_size == len(rich.big)
    assert big.st_blocks == (len(rich.big) + 511) // 512
    # du counts st_blocks: 300,000 bytes are 586 blocks of 512, 293 KiB.
    du = subprocess.run(["du", "-k", str(root / "medium.bin")], capture_output=True, text=True, check=True)
    assert du.stdout.split()[0] == "293"
    total = subprocess.run(["du", "-sk", str(root)], capture_output=True, text=True, check=True)
    assert int(total.stdout.split()[0]) >= (len(rich.big) + 300_000) // 1024


def test_nested_symlinks_and_submodule_in_history(rich, mount_gitfs):
    mount = mount_gitfs(rich)
    root = commit_dir(mount, rich, rich.c1)
    assert os.readlink(root / "link") == "testing"
    assert os.readlink(root / "b/sub/up") == "../file"
    assert (root / "b/sub/up").read_bytes() == b"b's file, which is longer\n"  # followed inside the commit
    assert os.readlink(root / "dangling") == "missing/target"
    assert os.path.isdir(root / "sub") and os.listdir(root / "sub") == []


def test_big_file_read_in_128k_chunks_from_history(rich, mount_gitfs):
    mount = mount_gitfs(rich)
    want = hashlib.sha256(rich.big).hexdigest()
    path = commit_dir(mount, rich, rich.c1) / "big.bin"
    assert read_in_chunks(path) == want
    assert read_in_chunks(path, chunk=4096 * 3 + 1) == want
    with open(path, "rb") as handle:  # random access
        handle.seek(3 * 1024 * 1024 + 5)
        assert handle.read(1000) == rich.big[3 * 1024 * 1024 + 5:3 * 1024 * 1024 + 1005]
    copy = mount.path.parent / "copy.bin"
    shutil.copyfile(path, copy)
    assert hashlib.sha256(copy.read_bytes()).hexdigest() == want


def test_unknown_dates_commits_and_paths_are_enoent(rich, mount_gitfs):
    mount = mount_gitfs(rich)
    day1, name1 = history_folder(rich, rich.c1)
    day2, name2 = history_folder(rich, rich.c2)
    wrong_sha = name1[:9] + "0123456789" if name1[9:] != "0123456789" else name1[:9] + "fedcba9876"
    missing = [
        "2020-01-03",  # a well-formed day without commits
        "1999-12-31",
        "2020-1-2",  # not padded
        "junk",
        f"{day1}/{wrong_sha}",  # a valid day, a wrong sha
        f"{day2}/{name1}",  # the right commit under the wrong day
        f"{day1}/00-00-00-{rich.c1[:10]}",  # the right sha with a wrong time
        f"{day1}/{name1[:-1]}",  # a sha one hex short
        f"{day1}/junk",
        f"{day1}/{name1}/nope",
        f"{day1}/{name1}/a/nope",
        f"{day1}/{name1}/a/sub/nope",
        f"{day1}/{name1}/notes.txt",  # only exists in a later commit
        f"{day1}/{name1}/sub/x",  # below a submodule, which shows as an empty folder
    ]
    for relative in missing:
        path = mount.history / relative
        assert errno_of(os.lstat, path) == errno.ENOENT, relative
        assert errno_of(os.listdir, path) == errno.ENOENT, relative
        assert errno_of(open, path, "rb") == errno.ENOENT, relative
    assert errno_of(os.lstat, mount.history / day1 / name1 / "a/file/x") == errno.ENOTDIR


def mutations(base, existing_file, existing_dir):
    """(description, call) for every mutating system call at `base`."""
    new = base / "brand-new"
    other = base / "other-new"
    return [
        ("open for write", lambda: open(existing_file, "r+b")),
        ("open for append", lambda: open(existing_file, "ab")),
        ("open with O_TRUNC", lambda: os.open(existing_file, os.O_WRONLY | os.O_TRUNC)),
        ("create", lambda: open(new, "wb")),
        ("create exclusive", lambda: os.open(new, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)),
        ("mkdir", lambda: os.mkdir(new)),
        ("unlink", lambda: os.unlink(existing_file)),
        ("rmdir", lambda: os.rmdir(existing_dir)),
        ("rename", lambda: os.rename(existing_file, other)),
        ("rename dir", lambda: os.rename(existing_dir, existing_dir.parent / "renamed-dir")),
        ("chmod", lambda: os.chmod(existing_file, 0o644)),
        ("chmod dir", lambda: os.chmod(existing_dir, 0o755)),
        ("chown", lambda: os.chown(existing_file, 0, 0)),
        ("truncate", lambda: os.truncate(existing_file, 0)),
        ("symlink", lambda: os.symlink("target", new)),
        ("link", lambda: os.link(existing_file, new)),
        ("utime", lambda: os.utime(existing_file)),
        ("utime dir", lambda: os.utime(existing_dir, (1, 1))),
        ("mknod", lambda: os.mknod(new, stat.S_IFREG | 0o644)),
    ]


def test_every_mutation_under_history_is_erofs(rich, mount_gitfs):
    mount = mount_gitfs(rich)
    day, name = history_folder(rich, rich.c1)
    commit = mount.history / day / name
    levels = [
        (mount.history, mount.history / day, mount.history / day),  # history/ itself
        (mount.history / day, commit, commit),  # a day
        (commit, commit / "testing", commit / "a"),  # a commit folder
        (commit / "a/sub", commit / "a/sub/file", commit / "a/sub"),  # deep inside
    ]
    for base, existing_file, existing_dir in levels:
        for description, call in mutations(base, existing_file, existing_dir):
            if existing_file.is_dir() and description in ("open for write", "open for append", "open with O_TRUNC",
                                                          "unlink", "truncate", "link"):
                continue  # EISDIR/EPERM come first for a directory; the commit-level rows cover these
            code = errno_of(call)
            assert code == errno.EROFS, f"{description} in {base}: {os.strerror(code)}"
    # Across the boundary: history -> current and back.
    assert errno_of(os.rename, commit / "testing", mount.current / "from-history") == errno.EROFS
    assert errno_of(os.rename, mount.current / "late.txt", commit / "late.txt") == errno.EROFS
    assert errno_of(os.link, mount.current / "late.txt", commit / "late.txt") == errno.EROFS
    # Nothing changed.
    assert (commit / "testing").read_bytes() == rich.show("testing", rich.c1)
    assert rich.head() == rich.c4
    assert (mount.current / "late.txt").read_text() == "late\n"


def test_history_follows_new_commits_on_the_remote(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    (old_day,) = os.listdir(mount.history)
    assert len(os.listdir(mount.history / old_day)) == 1
    sha = remote.commit({"fresh": "new\n"}, "fresh")
    day, name = history_folder(remote, sha)

    def listed():
        return day in os.listdir(mount.history) and name in os.listdir(mount.history / day)

    wait_for(listed, timeout=20, message="the new commit in history/")
    assert (mount.history / day / name / "fresh").read_text() == "new\n"
    assert (mount.current / "fresh").read_text() == "new\n"


def test_big_history_folder_lists_every_entry_with_its_attributes(remote, mount_gitfs):
    # 1500 entries take several READDIRPLUS replies: each resumes at the offset the kernel asks.
    files = {f"many/f{number:04d}.txt": "x" * (number % 97) for number in range(1500)}
    sha = remote.commit(files, "many files")
    mount = mount_gitfs(remote)
    day, name = history_folder(remote, sha)
    many = mount.history / day / name / "many"
    for _ in range(2):  # the second listing comes from the same kernel inodes
        listed = sorted(os.listdir(many))
        assert listed == sorted(os.path.basename(path) for path in files)
        for entry in os.scandir(many):
            st = entry.stat(follow_symlinks=False)
            assert stat.S_ISREG(st.st_mode) and st.st_size == len(files["many/" + entry.name]), entry.name
            assert st.st_mtime == commit_time(remote, sha)
    days = os.listdir(mount.history)
    assert day in days and name in os.listdir(mount.history / day)


def test_history_file_read_twice_is_right_both_times(rich, mount_gitfs):
    mount = mount_gitfs(rich)
    path = commit_dir(mount, rich, rich.c1) / "big.bin"
    want = hashlib.sha256(rich.big).hexdigest()
    assert read_in_chunks(path) == want
    assert read_in_chunks(path) == want  # from the kernel's page cache (kept across opens)
    other = commit_dir(mount, rich, rich.c1) / "testing"
    assert other.read_bytes() == rich.show("testing", rich.c1)
    assert other.read_bytes() == rich.show("testing", rich.c1)


def test_an_idle_mount_gives_libgit2_s_caches_back_and_reads_on(rich, mount_gitfs):
    # Idle 1 s after the last call (2 x sync_timeout); the fetch worker's next round
    # (fetch_timeout 1 s) drops every handle on the clone and the parsed trees.
    mount = mount_gitfs(rich, log_level="debug", min_idle_times=2)
    folder = commit_dir(mount, rich, rich.c1)
    want = hashlib.sha256(rich.big).hexdigest()
    assert read_in_chunks(folder / "big.bin") == want
    wait_for(lambda: "libgit2's caches given back" in mount.log_text(), message="the idle release")
    # New handles answer: a folder never looked at, a file read again, a write pushed.
    assert (commit_dir(mount, rich, rich.c2) / "testing").read_bytes() == rich.show("testing", rich.c2)
    assert read_in_chunks(folder / "big.bin") == want
    (mount.current / "after-idle.txt").write_text("written after the release\n")
    wait_for(lambda: "after-idle.txt" in rich.files(), message="the write on the remote")
    assert rich.show("after-idle.txt") == b"written after the release\n"
