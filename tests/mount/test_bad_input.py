"""Bad input: options of the wrong type, empty or huge; remote URLs that are garbage,
point nowhere or want credentials; odd file names; huge offsets; a symlink loop;
history/ paths that are almost right. Each gets a clear error and the mount keeps working."""

from __future__ import annotations

import errno
import os
import subprocess

import pytest

from helpers import assert_one_line_error, git, run_gitfs, unmount, wait_for

NUMERIC = ["sync_timeout", "merge_timeout", "fetch_timeout", "idle_fetch_timeout", "min_idle_times", "max_size",
           "cache_size", "max_open_files"]
BOOLEAN = ["foreground", "allow_other", "allow_root", "debug", "ssh_strict_host_key_checking"]


@pytest.fixture
def place(tmp_path):
    mount_point = tmp_path / "mnt"
    mount_point.mkdir()
    yield mount_point, tmp_path / "clone"
    if os.path.ismount(mount_point):
        unmount(mount_point)
        pytest.fail("a failed start left a mount behind")


@pytest.mark.parametrize("option", NUMERIC)
@pytest.mark.parametrize("value", ["abc", "", "1,5"])
def test_numeric_option_of_the_wrong_type_or_empty(remote, place, option, value):
    mount_point, repo_path = place
    value = value.replace(",", "\\,")
    result = run_gitfs(remote.url, mount_point, "-o", f"repo_path={repo_path},{option}={value}")
    assert_one_line_error(result, option.replace("merge_timeout", "sync_timeout"))
    assert not repo_path.exists()


@pytest.mark.parametrize("option", BOOLEAN)
@pytest.mark.parametrize("value", ["perhaps", "2"])
def test_boolean_option_of_the_wrong_type(remote, place, option, value):
    mount_point, repo_path = place
    assert_one_line_error(run_gitfs(remote.url, mount_point, "-o", f"repo_path={repo_path},{option}={value}"), option)


@pytest.mark.parametrize("option", ["sync_timeout", "fetch_timeout", "idle_fetch_timeout", "min_idle_times",
                                    "max_size", "commiter_name", "history_path", "cache_size"])
def test_huge_values_mount_and_work_or_are_refused(remote, mount_gitfs, place, option):
    """A huge value is either refused in one line or gives a working mount (no crashed worker)."""
    mount_point, repo_path = place
    value = "9" * 30 if option != "commiter_name" else "x" * 100_000
    result = run_gitfs(remote.url, mount_point, "-o", f"repo_path={repo_path},log=-,{option}={value}", timeout=30)
    if result.returncode != 0:
        assert_one_line_error(result, option)
        return
    try:
        (mount_point / ("current" if option != "history_path" else "current") / "x").write_text("x\n")
        assert (mount_point / "current" / "testing").read_text() == "just testing around here\n"
    finally:
        subprocess.run(["fusermount3", "-u", str(mount_point)], capture_output=True)
    wait_for(lambda: not os.path.ismount(mount_point), message="the unmount")


def test_huge_max_open_files(remote, place):
    mount_point, repo_path = place
    assert_one_line_error(run_gitfs(remote.url, mount_point, "-o", f"repo_path={repo_path},max_open_files={'9' * 20}"),
                   "max_open_files")


def test_a_huge_fetch_timeout_does_not_kill_the_fetch_worker(remote, mount_gitfs):
    mount = mount_gitfs(remote, fetch_timeout="9" * 30, idle_fetch_timeout="9" * 30)
    (mount.current / "x").write_text("x\n")
    wait_for(lambda: "x" in remote.files(), message="the push")
    assert "crashed" not in mount.log_text()


@pytest.mark.parametrize("url, words", [
    ("::garbage::", []),
    ("", ["REMOTE_URL"]),
    ("/nonexistent/nowhere.git", ["nowhere"]),
    ("file:///nonexistent/nowhere.git", ["nowhere"]),
    ("git://127.0.0.1:1/nothing.git", ["127.0.0.1"]),
    ("http://127.0.0.1:1/repo.git", ["127.0.0.1"]),
    ("ssh://nobody@127.0.0.1:1/repo.git", ["127.0.0.1"]),
    ("https://user:secret@127.0.0.1:1/repo.git", ["127.0.0.1"]),
])
def test_bad_remote_urls(place, url, words):
    mount_point, repo_path = place
    result = run_gitfs(url, mount_point, "-o", f"repo_path={repo_path}")
    assert_one_line_error(result, *words)
    assert "secret" not in result.stderr


# -- file names ---------------------------------------------------------------------------

NAMES = ["with space", "new\nline", "ünïcødé-名前", "tab\there", "-dash", "#hash", "a" * 255, "emoji-\U0001F600"]


def remote_names(remote) -> list[str]:
    """ls-tree -z: odd names unquoted."""
    out = subprocess.run(["git", "--git-dir", str(remote.bare), "ls-tree", "-r", "-z", "--name-only", "main"],
                         capture_output=True).stdout
    return [os.fsdecode(name) for name in out.split(b"\0") if name]


def test_odd_file_names_round_trip(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    for name in NAMES:
        (mount.current / name).write_text(f"content of {name!r}\n")
    deep = mount.current.joinpath(*[f"d{n}" for n in range(40)])
    deep.mkdir(parents=True)
    (deep / "bottom").write_text("deep\n")
    wait_for(lambda: all(name in remote_names(remote) for name in NAMES), message="every odd name on the remote")
    for name in NAMES:
        assert remote.show(name) == f"content of {name!r}\n".encode()
        assert (mount.current / name).read_text() == f"content of {name!r}\n"
    wait_for(lambda: "/".join(f"d{n}" for n in range(40)) + "/bottom" in remote.files(), message="the deep file")
    assert sorted(os.listdir(mount.current)) == sorted(["testing", "me", "d0", *NAMES])


def test_invalid_utf8_names_are_refused_clearly(remote, mount_gitfs):
    """Git and pygit2 take UTF-8 paths: a name that is not UTF-8 could never be committed,
    so creating one is EILSEQ at once rather than a file that silently never reaches the remote."""
    mount = mount_gitfs(remote)
    name = b"bad-\xff\xfe-name"
    path = os.fsencode(mount.current) + b"/" + name
    for call in (lambda: open(path, "wb"), lambda: os.mkdir(path), lambda: os.symlink(b"testing", path),
                 lambda: os.rename(os.fsencode(mount.current / "testing"), path),
                 lambda: os.link(os.fsencode(mount.current / "testing"), path)):
        with pytest.raises(OSError) as raised:
            call()
        assert raised.value.errno == errno.EILSEQ
    assert name not in os.listdir(os.fsencode(mount.current))
    (mount.current / "after").write_text("still works\n")
    wait_for(lambda: "after" in remote.files(), message="a later write")
    assert (mount.current / "testing").read_text() == "just testing around here\n"


def test_name_too_long(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    with pytest.raises(OSError) as raised:
        (mount.current / ("a" * 256)).write_text("x")
    assert raised.value.errno == errno.ENAMETOOLONG
    assert (mount.current / "testing").exists()


# -- offsets ------------------------------------------------------------------------------------

def test_write_at_a_huge_offset_is_efbig(remote, mount_gitfs):
    mount = mount_gitfs(remote, max_size=1)
    fd = os.open(mount.current / "far", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for offset in (2 * 1024 * 1024, 2**40, 2**62):
            with pytest.raises(OSError) as raised:
                os.pwrite(fd, b"x", offset)
            assert raised.value.errno == errno.EFBIG, offset
        assert os.pwrite(fd, b"ok", 0) == 2
    finally:
        os.close(fd)
    with pytest.raises(OSError) as raised:
        os.truncate(mount.current / "far", 2**40)
    assert raised.value.errno == errno.EFBIG
    assert os.stat(mount.current / "far").st_size == 2


def test_sparse_write_with_max_size_zero(remote, mount_gitfs):
    mount = mount_gitfs(remote, max_size=0)
    fd = os.open(mount.current / "sparse", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, b"end", 64 * 1024 * 1024)
    finally:
        os.close(fd)
    assert os.stat(mount.current / "sparse").st_size == 64 * 1024 * 1024 + 3
    wait_for(lambda: "sparse" in remote.files(), timeout=60, message="the sparse file on the remote")
    size = git("--git-dir", str(remote.bare), "cat-file", "-s", "main:sparse").strip()
    assert size == str(64 * 1024 * 1024 + 3)


def test_symlink_loop(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    os.symlink("loop-b", mount.current / "loop-a")
    os.symlink("loop-a", mount.current / "loop-b")
    for call in (lambda: open(mount.current / "loop-a").read(), lambda: os.stat(mount.current / "loop-a"),
                 lambda: (mount.current / "loop-a" / "x").write_text("x")):
        with pytest.raises(OSError) as raised:
            call()
        assert raised.value.errno == errno.ELOOP
    wait_for(lambda: {"loop-a", "loop-b"} <= set(remote.files()), message="the links on the remote")
    assert remote.show("loop-a") == b"loop-b"
    (mount.current / "after").write_text("still works\n")
    wait_for(lambda: "after" in remote.files(), message="a later write")


# -- history paths ---------------------------------------------------------------------------------

def test_almost_right_history_paths(remote, mount_gitfs):
    other = git("--git-dir", str(remote.bare), "commit-tree", "-m", "elsewhere",
                git("--git-dir", str(remote.bare), "rev-parse", "main^{tree}").strip()).strip()
    git("--git-dir", str(remote.bare), "branch", "elsewhere", other)
    mount = mount_gitfs(remote)
    day = sorted(os.listdir(mount.history))[0]
    entry = sorted(os.listdir(mount.history / day))[0]
    time_part, sha = entry.rsplit("-", 1)
    wrong = [
        "2026-13-45", "2026-02-30", "not-a-day", "0000-00-00", "9" * 300,
        f"{day}/{time_part}-{sha[:6]}", f"{day}/{time_part}-{'0' * 10}", f"{day}/99-99-99-{sha}",
        f"{day}/{time_part}-{other[:10]}", f"{day}/{entry}x", f"{day}/{entry}/nothing-here",
    ]
    if sha.upper() != sha:  # ten digits and no letter: the upper-case name is the name itself
        wrong.append(f"{day}/{time_part}-{sha.upper()}")
    for path in wrong:
        try:
            os.stat(mount.history / path)
        except OSError as error:
            assert error.errno in (errno.ENOENT, errno.ENAMETOOLONG), (path, error)
        else:
            pytest.fail(f"history/{path} exists")
    with pytest.raises(OSError) as raised:
        (mount.history / day / entry / "testing").write_text("x")
    assert raised.value.errno == errno.EROFS
    assert (mount.history / day / entry / "testing").read_text() == "just testing around here\n"
    assert (mount.current / "testing").read_text() == "just testing around here\n"
