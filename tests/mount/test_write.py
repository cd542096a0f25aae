"""Layer 3: every write operation through a real mount, and the exact commit it makes on the remote.

Each test changes current/ with plain os calls, then polls the bare remote until the
commit arrives (the remote is the observable outcome; the log is never read to know it).
The commit messages are the original GitFS's, word for word ("Update /testing",
"Rename /testing to /renamed", "Update 3 items. Removed 3 items.").
"""

import errno
import os
import stat
import subprocess

import pytest

from gitfs.views.allocation import FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE, fallocate
from helpers import git, wait_for

INITIAL = "Initial test commit"


def wait_for_subject(remote, subject, timeout=15.0):
    """Wait until the remote's newest commit has this subject; show the log on failure."""
    try:
        wait_for(lambda: remote.log()[0] == subject, timeout=timeout, message=repr(subject))
    except AssertionError:
        raise AssertionError(f"{subject!r} never reached the remote; its log: {remote.log()[:6]}") from None


def wait_for_commits(remote, count, timeout=15.0):
    wait_for(lambda: len(remote.log()) >= count, timeout=timeout, message=f"{count} commits on the remote")


def mode_on_remote(remote, path):
    line = git("--git-dir", str(remote.bare), "ls-tree", remote.branch, "--", path)
    assert line, f"{path} is not on the remote"
    return line.split()[0]


def expect_errno(codes, call, *args):
    with pytest.raises(OSError) as raised:
        call(*args)
    assert raised.value.errno in codes, f"{call.__name__}{args}: {os.strerror(raised.value.errno)}"


# -- files ---------------------------------------------------------------------

def test_create_and_write_is_one_update_commit(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    (mount.current / "new_file").write_bytes(b"hello\n")
    wait_for_subject(remote, "Update /new_file")
    assert remote.log() == ["Update /new_file", INITIAL]
    assert remote.show("new_file") == b"hello\n"


def test_empty_new_file_is_created(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    with open(mount.current / "empty", "a"):
        pass
    wait_for_subject(remote, "Created /empty")
    assert remote.show("empty") == b""
    assert remote.log() == ["Created /empty", INITIAL]


def test_touch_creates_an_empty_file(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    subprocess.run(["touch", str(mount.current / "touched")], check=True)
    wait_for_subject(remote, "Created /touched")
    assert remote.show("touched") == b""


def test_edit_of_an_existing_file(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    (mount.current / "testing").write_bytes(b"edited\n")
    wait_for_subject(remote, "Update /testing")
    assert remote.show("testing") == b"edited\n"
    assert remote.log() == ["Update /testing", INITIAL]


def test_append(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    with open(mount.current / "testing", "a") as handle:
        handle.write("one more line\n")
    wait_for_subject(remote, "Update /testing")
    assert remote.show("testing") == b"just testing around here\none more line\n"


def test_write_in_the_middle_keeps_the_rest(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    with open(mount.current / "testing", "r+b") as handle:
        handle.seek(5)
        handle.write(b"TESTING")
    wait_for_subject(remote, "Update /testing")
    assert remote.show("testing") == b"just TESTING around here\n"


def test_delete(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    (mount.current / "testing").unlink()
    wait_for_subject(remote, "Deleted /testing")
    assert "testing" not in remote.files()
    assert not (mount.current / "testing").exists()


def test_truncate_by_path_and_through_an_open_file(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    os.truncate(mount.current / "testing", 4)
    wait_for_subject(remote, "Update /testing")
    assert remote.show("testing") == b"just"
    with open(mount.current / "testing", "r+b") as handle:
        handle.truncate(2)
    wait_for(lambda: remote.show("testing") == b"ju", message="ftruncate on the remote")
    assert len(remote.log()) == 3
    assert (mount.current / "testing").read_bytes() == b"ju"


def test_truncate_to_grow_a_file(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    os.truncate(mount.current / "me", 3)
    wait_for_subject(remote, "Update /me")
    assert remote.show("me") == b"\0\0\0"


def test_fallocate_punches_holes_and_allocates_and_the_remote_gets_it(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    page = 4096
    fd = os.open(mount.current / "holes", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.write(fd, b"x" * 3 * page)
        os.fsync(fd)
        fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, page, page)
        # A hole on the clone's disk: the page's block went.
        assert os.stat(mount.repo_path / "holes").st_blocks * 512 == 2 * page
        fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 8 * page)
        assert os.fstat(fd).st_size == 3 * page
        fallocate(fd, 0, 0, 4 * page)
        assert os.fstat(fd).st_size == 4 * page
        expected = b"x" * page + bytes(page) + b"x" * page + bytes(page)
        assert os.pread(fd, 5 * page, 0) == expected
    finally:
        os.close(fd)
    wait_for_subject(remote, "Update /holes")
    assert remote.show("holes") == expected


def test_fsync_then_close_is_one_commit(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    with open(mount.current / "synced", "wb") as handle:
        handle.write(b"durable\n")
        handle.flush()
        os.fsync(handle.fileno())
    wait_for_subject(remote, "Update /synced")
    assert remote.show("synced") == b"durable\n"


def test_many_files_written_quickly_are_one_commit(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    for number in range(10):
        (mount.current / f"file{number}").write_text(f"{number}\n")
    wait_for(lambda: all(f"file{n}" in remote.files() for n in range(10)), message="10 files")
    assert remote.log() == ["Update 10 items. Added 10 items.", INITIAL]


# -- directories -------------------------------------------------------------------

def test_mkdir_commits_a_hidden_keep(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    (mount.current / "dir").mkdir()
    wait_for_subject(remote, "Create the /dir directory")
    assert "dir/.keep" in remote.files()
    assert os.listdir(mount.current / "dir") == []
    assert (mount.current / "dir").is_dir()


def test_mkdir_p_is_one_batch(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    subprocess.run(["mkdir", "-p", str(mount.current / "a/b/c")], check=True)
    wait_for_subject(remote, "Update 3 items. Added 3 items.")
    assert {"a/.keep", "a/b/.keep", "a/b/c/.keep"} <= set(remote.files())


def test_rmdir_of_an_empty_directory(remote, mount_gitfs):
    remote.commit({"empty/.keep": ""}, "an empty directory")
    mount = mount_gitfs(remote)
    assert os.listdir(mount.current / "empty") == []
    (mount.current / "empty").rmdir()
    wait_for_subject(remote, "Delete the /empty directory")
    assert not any(path.startswith("empty/") for path in remote.files())
    assert not (mount.current / "empty").exists()


def test_rmdir_of_a_directory_made_through_the_mount(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    (mount.current / "dir").mkdir()
    wait_for_subject(remote, "Create the /dir directory")
    (mount.current / "dir").rmdir()
    wait_for_subject(remote, "Delete the /dir directory")
    assert "dir/.keep" not in remote.files()


def test_rmdir_of_a_non_empty_directory_is_enotempty_and_deletes_nothing(remote, mount_gitfs):
    remote.commit({"full/a": "a\n", "full/sub/b": "b\n"}, "a full directory")
    mount = mount_gitfs(remote)
    expect_errno({errno.ENOTEMPTY}, os.rmdir, mount.current / "full")
    expect_errno({errno.ENOTEMPTY}, os.rmdir, mount.current / "full/sub")
    assert (mount.current / "full/a").read_text() == "a\n"
    assert (mount.current / "full/sub/b").read_text() == "b\n"
    # A later change is committed alone: the refused rmdir left nothing to commit.
    (mount.current / "marker").write_text("m\n")
    wait_for_subject(remote, "Update /marker")
    assert {"full/a", "full/sub/b"} <= set(remote.files())


def test_rm_rf_of_a_tree(remote, mount_gitfs):
    remote.commit({"tree/a": "a\n", "tree/sub/b": "b\n", "tree/sub/deeper/c": "c\n"}, "a tree")
    mount = mount_gitfs(remote)
    subprocess.run(["rm", "-rf", str(mount.current / "tree")], check=True)
    wait_for(lambda: not any(p.startswith("tree/") for p in remote.files()), message="tree/ gone")
    assert remote.log()[0] == "Update 3 items. Removed 3 items."


# -- renames ---------------------------------------------------------------------

def test_rename_top_level_file(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    os.rename(mount.current / "testing", mount.current / "renamed")
    wait_for_subject(remote, "Rename /testing to /renamed")
    assert remote.show("renamed") == b"just testing around here\n"
    assert "testing" not in remote.files()


def test_rename_inside_a_subdirectory(remote, mount_gitfs):
    # The original GitFS removed the basename from the index: renaming a/b/f removed the
    # top-level `f` instead.
    remote.commit({"a/b/f": "deep\n", "f": "top level f\n"}, "nested")
    mount = mount_gitfs(remote)
    os.rename(mount.current / "a/b/f", mount.current / "a/b/g")
    wait_for_subject(remote, "Rename /a/b/f to /a/b/g")
    files = remote.files()
    assert "a/b/g" in files and "a/b/f" not in files
    assert remote.show("f") == b"top level f\n"
    assert remote.show("a/b/g") == b"deep\n"


def test_rename_across_depths(remote, mount_gitfs):
    remote.commit({"a/b/f": "deep\n"}, "nested")
    mount = mount_gitfs(remote)
    (mount.current / "x/y").mkdir(parents=True)
    os.rename(mount.current / "a/b/f", mount.current / "x/y/f")
    os.rename(mount.current / "testing", mount.current / "x/testing")
    wait_for(lambda: "x/testing" in remote.files(), message="the renames on the remote")
    files = remote.files()
    assert "a/b/f" not in files and "testing" not in files
    assert remote.show("x/y/f") == b"deep\n"
    assert remote.show("x/testing") == b"just testing around here\n"


def test_rename_a_directory_with_subdirectories(remote, mount_gitfs):
    remote.commit({"src/a": "a\n", "src/sub/b": "b\n", "src/sub/deeper/c": "c\n", "src_keep": "k\n"},
                  "a tree")
    mount = mount_gitfs(remote)
    os.rename(mount.current / "src", mount.current / "dst")
    wait_for_subject(remote, "Rename /src to /dst")
    files = set(remote.files())
    assert {"dst/a", "dst/sub/b", "dst/sub/deeper/c", "src_keep"} <= files
    assert not any(path.startswith("src/") for path in files)
    assert remote.show("dst/sub/deeper/c") == b"c\n"


def test_rename_a_subdirectory_into_another_directory(remote, mount_gitfs):
    remote.commit({"one/two/three/f": "f\n", "other/g": "g\n"}, "a tree")
    mount = mount_gitfs(remote)
    os.rename(mount.current / "one/two", mount.current / "other/two")
    wait_for_subject(remote, "Rename /one/two to /other/two")
    files = set(remote.files())
    assert {"other/two/three/f", "other/g"} <= files
    assert not any(path.startswith("one/two/") for path in files)


def test_rename_a_directory_over_an_empty_one(remote, mount_gitfs):
    remote.commit({"src/f": "f\n", "empty/.keep": ""}, "two directories")
    mount = mount_gitfs(remote)
    os.rename(mount.current / "src", mount.current / "empty")
    wait_for_subject(remote, "Rename /src to /empty")
    files = set(remote.files())
    assert "empty/f" in files
    assert not any(path.startswith("src/") for path in files)


def test_rename_over_an_existing_file_like_an_editor_save(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    temporary = mount.current / ".testing.tmp"
    with open(temporary, "wb") as handle:
        handle.write(b"saved atomically\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.rename(temporary, mount.current / "testing")
    wait_for(lambda: remote.show("testing") == b"saved atomically\n", message="the save on the remote")
    assert ".testing.tmp" not in remote.files()
    assert remote.log()[1:] == [INITIAL]
    assert (mount.current / "testing").read_bytes() == b"saved atomically\n"


def test_rename_of_an_open_file_commits_it_under_the_new_name(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    with open(mount.current / "draft", "wb") as handle:
        handle.write(b"first part\n")
        os.rename(mount.current / "draft", mount.current / "final")
        handle.write(b"second part\n")
    wait_for(lambda: "final" in remote.files(), message="final on the remote")
    assert remote.show("final") == b"first part\nsecond part\n"
    assert "draft" not in remote.files()


# -- links ----------------------------------------------------------------------

def test_symlink_is_stored_as_a_link(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    os.symlink("testing", mount.current / "link")
    wait_for_subject(remote, "Create symlink to testing for /link")
    assert mode_on_remote(remote, "link") == "120000"
    assert remote.show("link") == b"testing"
    assert os.readlink(mount.current / "link") == "testing"


def test_symlinks_outside_to_a_directory_and_dangling_are_never_followed(remote, mount_gitfs, tmp_path):
    outside = tmp_path / "outside_dir"
    outside.mkdir()
    (outside / "secret").write_text("must not be committed\n")
    remote.commit({"dir/f": "f\n"}, "a directory")
    mount = mount_gitfs(remote)
    os.symlink(str(outside), mount.current / "out")
    os.symlink("dir", mount.current / "to_dir")
    os.symlink("nowhere/at/all", mount.current / "dangling")
    wait_for(lambda: "dangling" in remote.files(), message="the links on the remote")
    for name, target in (("out", str(outside)), ("to_dir", "dir"), ("dangling", "nowhere/at/all")):
        assert mode_on_remote(remote, name) == "120000"
        assert remote.show(name) == target.encode()
    assert not any(path.startswith(("out/", "to_dir/")) for path in remote.files())


def test_single_symlink_pointing_outside_message(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    os.symlink("/etc", mount.current / "etc")
    wait_for_subject(remote, "Create symlink to /etc for /etc")
    assert mode_on_remote(remote, "etc") == "120000"


def test_hard_link(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    os.link(mount.current / "testing", mount.current / "hard")
    wait_for_subject(remote, "Create link to /testing for /hard")
    assert remote.show("hard") == b"just testing around here\n"
    assert mode_on_remote(remote, "hard") == "100644"
    assert os.stat(mount.current / "hard").st_nlink == 2


# -- metadata ----------------------------------------------------------------------

def test_chmod_exec_bit(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    os.chmod(mount.current / "testing", 0o755)
    wait_for_subject(remote, "Chmod to 0755 on /testing")
    assert mode_on_remote(remote, "testing") == "100755"
    assert stat.S_IMODE(os.stat(mount.current / "testing").st_mode) == 0o755
    os.chmod(mount.current / "testing", 0o644)
    wait_for_subject(remote, "Chmod to 0644 on /testing")
    assert mode_on_remote(remote, "testing") == "100644"


def test_chmod_plus_x_with_the_program(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    subprocess.run(["chmod", "+x", str(mount.current / "testing")], check=True)
    wait_for_subject(remote, "Chmod to 0755 on /testing")
    assert mode_on_remote(remote, "testing") == "100755"


def test_chmod_0600_works_and_commits_nothing(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    os.chmod(mount.current / "testing", 0o600)  # the original said EINVAL
    assert stat.S_IMODE(os.stat(mount.current / "testing").st_mode) == 0o600
    os.chmod(mount.current / "me", 0o700)
    (mount.current / "marker").write_text("m\n")
    wait_for(lambda: "marker" in remote.files(), message="the marker on the remote")
    assert mode_on_remote(remote, "testing") == "100644"  # git records only the exec bit
    assert mode_on_remote(remote, "me") == "100755"


def test_chmod_of_a_directory_commits_nothing(remote, mount_gitfs):
    remote.commit({"dir/f": "f\n"}, "a directory")
    mount = mount_gitfs(remote)
    os.chmod(mount.current / "dir", 0o700)
    assert stat.S_IMODE(os.stat(mount.current / "dir").st_mode) == 0o700
    (mount.current / "marker").write_text("m\n")
    wait_for_subject(remote, "Update /marker")
    assert remote.log()[1] == "a directory"


def test_utime_is_applied_and_not_committed(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    os.utime(mount.current / "testing", (1_000_000_000, 1_000_000_000))
    assert os.stat(mount.current / "testing").st_mtime == 1_000_000_000
    subprocess.run(["touch", str(mount.current / "testing")], check=True)
    (mount.current / "marker").write_text("m\n")
    wait_for_subject(remote, "Update /marker")
    assert remote.log() == ["Update /marker", INITIAL]


def test_statfs_gives_real_figures(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    st = os.statvfs(mount.current)
    assert st.f_blocks > 0 and st.f_bsize > 0 and st.f_bavail > 0 and st.f_namemax > 0
    lines = subprocess.run(["df", "-P", "-k", str(mount.current)], capture_output=True, text=True,
                           check=True).stdout.splitlines()
    size, used, available = (int(x) for x in lines[-1].split()[1:4])
    assert size > 0 and available > 0 and used >= 0


# -- .git -------------------------------------------------------------------------

def test_the_clone_dot_git_is_not_reachable(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    dot_git = mount.current / ".git"
    config = (mount.repo_path / ".git/config").read_bytes()
    missing = {errno.ENOENT}
    assert not dot_git.exists() and not os.path.lexists(dot_git)
    assert ".git" not in os.listdir(mount.current)
    for program in (["cat", str(dot_git / "config")], ["ls", str(dot_git)], ["stat", str(dot_git)]):
        result = subprocess.run(program, capture_output=True, text=True)
        assert result.returncode != 0 and "No such file or directory" in result.stderr, program
    assert not os.access(dot_git / "config", os.R_OK)
    expect_errno(missing, open, dot_git / "config", "rb")
    expect_errno(missing, open, dot_git / "config", "ab")
    expect_errno(missing, open, dot_git / "new_file", "wb")
    expect_errno(missing, os.mkdir, dot_git / "new_dir")
    expect_errno(missing, os.truncate, dot_git / "config", 0)
    expect_errno(missing, os.chmod, dot_git / "config", 0o777)
    expect_errno(missing, os.utime, dot_git / "config", (0, 0))
    expect_errno(missing, os.readlink, dot_git / "HEAD")
    expect_errno(missing, os.unlink, dot_git / "HEAD")
    expect_errno(missing, os.rmdir, dot_git / "refs/tags")
    expect_errno(missing, os.rmdir, dot_git)
    expect_errno(missing, os.rename, dot_git, mount.current / "stolen")
    expect_errno(missing, os.rename, dot_git / "HEAD", mount.current / "HEAD")
    expect_errno(missing, os.rename, mount.current / "testing", dot_git / "testing")
    expect_errno(missing, os.symlink, "/etc/passwd", dot_git / "link")
    expect_errno(missing, os.link, mount.current / "testing", dot_git / "hard")
    expect_errno(missing, os.link, dot_git / "HEAD", mount.current / "hard")
    # The name is taken: making it is refused (a `git init` in current/ fails, not "missing").
    taken = {errno.EACCES}
    expect_errno(taken, os.mkdir, dot_git)
    expect_errno(taken, open, dot_git, "wb")
    expect_errno(taken, os.symlink, "x", dot_git)
    expect_errno(taken, os.rename, mount.current / "testing", dot_git)
    assert (mount.repo_path / ".git/config").read_bytes() == config
    assert not (mount.current / "stolen").exists() and not (mount.current / "HEAD").exists()
    assert (mount.current / "testing").exists()


def test_the_clone_dot_git_is_not_reachable_with_the_tree_at_the_root(remote, mount_gitfs):
    mount = mount_gitfs(remote, current_path="/")
    assert sorted(os.listdir(mount.path)) == ["history", "me", "testing"]
    for program in (["cat", str(mount.path / ".git/config")], ["ls", str(mount.path / ".git")]):
        result = subprocess.run(program, capture_output=True, text=True)
        assert result.returncode != 0 and "No such file or directory" in result.stderr, program
    expect_errno({errno.EACCES}, os.mkdir, mount.path / ".git")


def test_a_nested_repository_stays_usable_and_its_dot_git_is_never_committed(remote, mount_gitfs, tmp_path):
    other = tmp_path / "nested_source"
    git("init", "-q", "-b", "main", str(other))
    (other / "lib.txt").write_text("lib\n")
    git("add", "lib.txt", cwd=other)
    git("commit", "-q", "-m", "lib", cwd=other)
    mount = mount_gitfs(remote)
    subprocess.run(["git", "clone", "-q", str(other), str(mount.current / "vendor")], check=True)
    assert (mount.current / "vendor/.git/HEAD").is_file()
    assert ".git" in os.listdir(mount.current / "vendor")
    assert git("log", "--format=%s", cwd=mount.current / "vendor").strip() == "lib"
    wait_for(lambda: "vendor/lib.txt" in remote.files(), message="the nested files")
    assert not any("/.git/" in f or f.startswith(".git/") for f in remote.files())


# -- max_size ----------------------------------------------------------------------

def test_write_past_max_size_is_efbig(remote, mount_gitfs):
    mount = mount_gitfs(remote, max_size=1)
    limit = 1024 * 1024
    (mount.current / "fits").write_bytes(b"x" * limit)
    fd = os.open(mount.current / "too_big", os.O_WRONLY | os.O_CREAT)
    try:
        assert os.write(fd, b"y" * limit) == limit
        expect_errno({errno.EFBIG}, os.write, fd, b"y")
        expect_errno({errno.EFBIG}, os.pwrite, fd, b"z", 5 * limit)
    finally:
        os.close(fd)
    expect_errno({errno.EFBIG}, os.truncate, mount.current / "testing", limit + 1)
    with open(mount.current / "testing", "r+b") as handle:
        expect_errno({errno.EFBIG}, os.posix_fallocate, handle.fileno(), 0, limit + 1)
    wait_for(lambda: "fits" in remote.files(), message="the file that fits")
    assert len(remote.show("fits")) == limit


def test_max_size_zero_is_unlimited(remote, mount_gitfs):
    mount = mount_gitfs(remote, max_size=0)
    data = os.urandom(12 * 1024 * 1024)
    (mount.current / "big").write_bytes(data)
    wait_for_subject(remote, "Update /big", timeout=30)
    assert remote.show("big") == data


# -- ignored paths ---------------------------------------------------------------------

@pytest.fixture
def ignoring_remote(remote):
    remote.commit({".gitignore": "*.swp\n!keep.swp\n/build/\n", "sub/.gitignore": "*.tmp\n",
                   "sub/f": "f\n"}, "ignore rules")
    return remote


def test_ignored_paths_are_writable_but_never_pushed(ignoring_remote, mount_gitfs):
    remote = ignoring_remote
    mount = mount_gitfs(remote)
    current = mount.current
    (current / ".testing.swp").write_bytes(b"swap\n")
    (current / "sub/x.tmp").write_bytes(b"nested rule\n")
    (current / "build").mkdir()
    (current / "build/out.o").write_bytes(b"anchored dir\n")
    (current / "keep.swp").write_bytes(b"negated: committed\n")
    (current / "x.tmp").write_bytes(b"sub's rule does not apply here\n")
    (current / "sub/build").mkdir()
    (current / "sub/build/kept").write_bytes(b"/build/ is anchored at the root\n")
    wait_for(lambda: "sub/build/kept" in remote.files() and "x.tmp" in remote.files(),
             message="the files that are not ignored")
    # The ignored files work like any file.
    with open(current / ".testing.swp", "ab") as handle:
        handle.write(b"more\n")
    os.rename(current / "sub/x.tmp", current / "sub/y.tmp")
    assert (current / ".testing.swp").read_bytes() == b"swap\nmore\n"
    assert (current / "sub/y.tmp").read_bytes() == b"nested rule\n"
    (current / "marker").write_text("m\n")
    wait_for(lambda: "marker" in remote.files(), message="the marker")
    files = set(remote.files())
    assert {"keep.swp", "x.tmp", "sub/build/kept", "marker"} <= files
    assert not files & {".testing.swp", "sub/x.tmp", "sub/y.tmp", "build/out.o", "build/.keep"}


def test_ignored_only_changes_make_no_commit(ignoring_remote, mount_gitfs):
    remote = ignoring_remote
    mount = mount_gitfs(remote)
    before = remote.head()
    (mount.current / "a.swp").write_bytes(b"swap\n")
    os.unlink(mount.current / "a.swp")
    (mount.current / "b.swp").write_bytes(b"swap\n")
    (mount.current / "marker").write_text("m\n")
    wait_for(lambda: "marker" in remote.files(), message="the marker")
    assert remote.log()[0] == "Update /marker"  # the ignored files count in no batch either
    assert "b.swp" not in remote.files()
    assert git("--git-dir", str(remote.bare), "rev-list", "--count", f"{before}..{remote.branch}").strip() == "1"


def test_ignore_file_and_hard_ignore_options(remote, mount_gitfs, tmp_path):
    rules = tmp_path / "rules"
    rules.write_text("*.log\n!important.log\n")
    mount = mount_gitfs(remote, ignore_file=rules, hard_ignore="*.bak|cache/")
    current = mount.current
    (current / "debug.log").write_text("log\n")
    (current / "important.log").write_text("kept\n")
    (current / "old.bak").write_text("backup\n")
    (current / "cache").mkdir()
    (current / "cache/blob").write_text("cached\n")
    (current / "marker").write_text("m\n")
    wait_for(lambda: "marker" in remote.files(), message="the marker")
    files = set(remote.files())
    assert "important.log" in files
    assert not files & {"debug.log", "old.bak", "cache/blob", "cache/.keep"}
    assert (current / "debug.log").read_text() == "log\n"
    # The rules live in the clone's .git/info/exclude: nothing about them is committed.
    assert ".gitignore" not in files


def test_a_gitignore_written_through_the_mount_applies(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    (mount.current / ".gitignore").write_text("*.o\n")
    wait_for_subject(remote, "Update /.gitignore")
    (mount.current / "main.o").write_bytes(b"\x7fELF")
    (mount.current / "main.c").write_text("int main;\n")
    wait_for(lambda: "main.c" in remote.files(), message="main.c")
    assert "main.o" not in remote.files()


# -- commits ---------------------------------------------------------------------

def test_author_and_committer_come_from_the_options(remote, mount_gitfs):
    mount = mount_gitfs(remote, commiter_name="Jane Doe", commiter_email="jane@example.com")
    (mount.current / "signed").write_text("s\n")
    wait_for_subject(remote, "Update /signed")
    assert remote.log("%an|%ae|%cn|%ce")[0] == "Jane Doe|jane@example.com|Jane Doe|jane@example.com"


def test_local_commits_appear_in_history(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    (mount.current / "new_file").write_text("hello\n")
    wait_for_subject(remote, "Update /new_file")
    sha = remote.head()
    day = next(d for d in os.listdir(mount.history)
               if any(e.endswith(sha[:10]) for e in os.listdir(mount.history / d)))
    entry = next(e for e in os.listdir(mount.history / day) if e.endswith(sha[:10]))
    assert (mount.history / day / entry / "new_file").read_text() == "hello\n"


def test_a_file_unlinked_while_open_is_never_committed_under_a_hidden_name(remote, mount_gitfs):
    # libfuse keeps a file unlinked while open as .fuse_hiddenNNNN until its last close.
    mount = mount_gitfs(remote, sync_timeout=0.3)
    fd = os.open(mount.current / "scratch", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        os.write(fd, b"temporary\n")
        os.unlink(mount.current / "scratch")
        assert any(name.startswith(".fuse_hidden") for name in os.listdir(mount.repo_path))
        (mount.current / "marker").write_text("m\n")
        wait_for(lambda: "marker" in remote.files(), message="the marker")
        assert os.pread(fd, 100, 0) == b"temporary\n"  # still readable while open
    finally:
        os.close(fd)
    (mount.current / "second").write_text("s\n")
    wait_for(lambda: "second" in remote.files(), message="the second marker")
    ever_committed = git("--git-dir", str(remote.bare), "log", "--format=", "--name-only", remote.branch)
    assert ".fuse_hidden" not in ever_committed
    assert not [message for message in remote.log() if ".fuse_hidden" in message]
