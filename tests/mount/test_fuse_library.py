"""Layer 3: which libfuse GitFS runs on, with libfuse 2 installed beside libfuse 3.

mfusepy alone prefers libfuse 2 (`find_library("fuse")`) when both are installed,
and libfuse 2 refuses libfuse 3's mount options. GitFS always runs on libfuse 3,
found by any `libfuse3.so.N` the dynamic linker knows (libfuse 3.17 renamed it
libfuse3.so.4); FUSE_LIBRARY_PATH set by the user is obeyed, and a library GitFS
cannot use is one line on stderr. .ci/install-deps installs libfuse2 so that CI runs
all of this (and the whole suite) with both libraries present.
"""

import ctypes.util
import os
import subprocess
import sys

import pytest

from gitfs import fuselib
from gitfs.errors import FatalError
from helpers import assert_one_line_error, run_gitfs, wait_for


def libfuse2() -> str:
    """The libfuse 2 that mfusepy would pick by itself, or skip."""
    name = ctypes.util.find_library("fuse")
    if not name:
        pytest.skip("libfuse2 is not installed (.ci/install-deps installs it)")
    return name


def mount_refused(remote, tmp_path, *, env):
    mount_point = tmp_path / "mnt-refused"
    mount_point.mkdir(exist_ok=True)
    return run_gitfs(remote.url, mount_point, "-o", f"repo_path={tmp_path / 'clone-refused'},foreground", env=env)


def without_fuse_variables() -> dict:
    return {k: v for k, v in os.environ.items() if k not in ("FUSE_LIBRARY_PATH", "FUSE_LIBRARY_NAME")}


def test_mfusepy_alone_would_load_libfuse2():
    """The case is real on this machine: without GitFS's choice, mfusepy takes libfuse 2."""
    libfuse2()
    result = subprocess.run([sys.executable, "-c", "import mfusepy; print(mfusepy.fuse_version_major)"],
                            capture_output=True, text=True, env=without_fuse_variables())
    assert result.stdout.strip() == "2", result


def test_importing_the_command_line_loads_no_libfuse():
    """mfusepy settles on a library at import: nothing may import it before fuselib.choose()."""
    code = "import sys, gitfs.cli; print('mfusepy' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_mount_runs_on_libfuse3_and_says_so_in_the_debug_log(remote, mount_gitfs, monkeypatch):
    monkeypatch.delenv("FUSE_LIBRARY_PATH", raising=False)
    monkeypatch.delenv("FUSE_LIBRARY_NAME", raising=False)
    mount = mount_gitfs(remote, log_level="debug")
    assert (mount.current / "testing").read_text() == "just testing around here\n"
    (mount.current / "new").write_text("written on libfuse 3\n")
    wait_for(lambda: "new" in remote.files(), message="the commit on the remote")
    assert remote.show("new") == b"written on libfuse 3\n"
    assert mount.stop() == 0
    lines = [line for line in mount.log_text().splitlines() if "FUSE library:" in line]
    assert len(lines) == 1 and " DEBUG " in lines[0], lines
    assert "libfuse 3." in lines[0] and "libfuse3.so" in lines[0], lines[0]


def test_mount_with_libfuse2_installed(remote, mount_gitfs, monkeypatch):
    libfuse2()
    monkeypatch.delenv("FUSE_LIBRARY_PATH", raising=False)
    monkeypatch.delenv("FUSE_LIBRARY_NAME", raising=False)
    mount = mount_gitfs(remote, log_level="debug")
    (mount.current / "dir").mkdir()
    (mount.current / "dir" / "file").write_text("both libraries installed\n")
    wait_for(lambda: "dir/file" in remote.files(), message="the commit on the remote")
    assert mount.stop() == 0
    log = mount.log_text()
    assert "unknown option" not in log
    assert "FUSE library: libfuse 3." in log


def test_fuse_library_path_chosen_by_the_user_is_used(remote, mount_gitfs, monkeypatch):
    soname = fuselib.sonames()[0]  # libfuse3.so.3 up to libfuse 3.16, libfuse3.so.4 from 3.17
    monkeypatch.setenv("FUSE_LIBRARY_PATH", soname)
    mount = mount_gitfs(remote, log_level="debug")
    assert (mount.current / "testing").exists()
    assert mount.stop() == 0
    assert f"(FUSE_LIBRARY_PATH={soname})" in mount.log_text()


def next_soname_folder(folder):
    """A folder with the installed libfuse 3 under the soname after the newest one the
    system has (libfuse3.so.4 where libfuse 3.14 is installed): a rename GitFS has not
    seen yet, as libfuse 3.17's from libfuse3.so.3 to libfuse3.so.4 was."""
    installed = fuselib.choose({})  # loads nothing new: conftest loaded it already
    newest = fuselib.sonames()[0]
    renamed = f"libfuse3.so.{int(newest.rsplit('.', 1)[1]) + 1}"
    folder.mkdir()
    (folder / renamed).symlink_to(installed.path)
    return renamed


def test_a_libfuse3_soname_not_seen_before_is_found(tmp_path):
    """Found through LD_LIBRARY_PATH, as the dynamic linker would, and preferred to the
    older soname: in a fresh process, as gitfs starts."""
    renamed = next_soname_folder(tmp_path / "lib")
    code = "import os; from gitfs import fuselib; library = fuselib.choose(); import mfusepy; " \
           "fuselib.check_loaded(library); print(os.environ['FUSE_LIBRARY_PATH']); print(library.describe())"
    env = dict(without_fuse_variables(), LD_LIBRARY_PATH=str(tmp_path / "lib"))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    chosen, described = result.stdout.splitlines()
    assert chosen == renamed
    assert described.startswith("libfuse 3.") and f"({renamed}, found by the dynamic linker)" in described


def test_mount_on_a_libfuse3_soname_not_seen_before(remote, mount_gitfs, tmp_path, monkeypatch):
    renamed = next_soname_folder(tmp_path / "lib")
    monkeypatch.delenv("FUSE_LIBRARY_PATH", raising=False)
    monkeypatch.delenv("FUSE_LIBRARY_NAME", raising=False)
    monkeypatch.setenv("LD_LIBRARY_PATH", str(tmp_path / "lib"))
    mount = mount_gitfs(remote, log_level="debug")
    (mount.current / "renamed").write_text("written through the renamed libfuse\n")
    wait_for(lambda: "renamed" in remote.files(), message="the commit on the remote")
    assert mount.stop() == 0
    assert f"({renamed}, found by the dynamic linker)" in mount.log_text()


def test_sonames_are_ordered_by_number_newest_first(tmp_path):
    for name in ("libfuse3.so.3", "libfuse3.so.12", "libfuse3.so", "libfuse3.so.3.14.0", "libfuse.so.2",
                 "libfuse3.so.x"):
        (tmp_path / name).write_bytes(b"")
    names = fuselib.sonames({"LD_LIBRARY_PATH": f"{tmp_path / 'missing'}:{tmp_path}"})
    assert names[0] == "libfuse3.so.12"
    assert "libfuse3.so.3" in names
    assert all(name.startswith("libfuse3.so.") and name.rsplit(".", 1)[1].isdigit() for name in names), names


@pytest.mark.parametrize("version, expected", [
    ((2, 9), "is libfuse 2.9; GitFS needs libfuse 3"),
    ((3, 10), "is libfuse 3.10; GitFS needs libfuse 3.12 or later"),
])
def test_a_libfuse_gitfs_cannot_use_is_refused(version, expected):
    """The version check alone (no libfuse older than 3.12 is installed to load)."""
    library = fuselib.FuseLibrary("libfuse3.so.3", "/lib/libfuse3.so.3", version, "libfuse3.so.3, found")
    with pytest.raises(FatalError) as refused:
        fuselib.check_version(library)
    assert expected in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize("version", [fuselib.OLDEST, (3, 14), (3, 17), (3, 18)])
def test_a_supported_libfuse3_is_accepted(version):
    fuselib.check_version(fuselib.FuseLibrary("libfuse3.so.4", "/lib/libfuse3.so.4", version, "found"))


def test_fuse_library_path_at_libfuse2_is_one_line(remote, tmp_path):
    env = dict(without_fuse_variables(), FUSE_LIBRARY_PATH=libfuse2())
    result = mount_refused(remote, tmp_path, env=env)
    line = assert_one_line_error(result, "FUSE_LIBRARY_PATH", "libfuse 2.", "GitFS needs libfuse 3")
    assert "unknown option" not in line
    assert not (tmp_path / "clone-refused").exists()  # refused before cloning


def test_fuse_library_path_at_a_missing_file_is_one_line(remote, tmp_path):
    missing = tmp_path / "no" / "libfuse3.so.3"
    env = dict(without_fuse_variables(), FUSE_LIBRARY_PATH=str(missing))
    result = mount_refused(remote, tmp_path, env=env)
    assert_one_line_error(result, f"cannot load FUSE_LIBRARY_PATH={missing}", "No such file")


def test_fuse_library_name_not_found_is_one_line(remote, tmp_path):
    env = dict(without_fuse_variables(), FUSE_LIBRARY_NAME="no-such-fuse")
    result = mount_refused(remote, tmp_path, env=env)
    assert_one_line_error(result, "FUSE_LIBRARY_NAME=no-such-fuse")


def test_fuse_library_path_at_a_library_that_is_not_libfuse(remote, tmp_path):
    libc = ctypes.util.find_library("c")
    env = dict(without_fuse_variables(), FUSE_LIBRARY_PATH=libc)
    result = mount_refused(remote, tmp_path, env=env)
    assert_one_line_error(result, f"FUSE_LIBRARY_PATH={libc} is not libfuse")
