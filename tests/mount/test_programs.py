"""Layer 3: real programs writing into current/ (cp, tar, unzip, sed, rsync, git, vim).

Each test runs the program on the mount, then compares the remote's tree with what
the same program produced, or would produce, on the native disk.
"""

import os
import shutil
import stat
import subprocess
import tarfile

import pytest

from helpers import Remote, git, wait_for


def run(*command, cwd=None):
    result = subprocess.run([str(part) for part in command], cwd=cwd, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, f"{command[0]} failed: {result.stderr}"
    return result.stdout


def remote_tree(remote, prefix=""):
    """{path: bytes} of every file under prefix on the remote's branch (links: their target),
    without the .keep that every mkdir commits."""
    return {path[len(prefix):]: remote.show(path) for path in remote.files()
            if path.startswith(prefix) and os.path.basename(path) != ".keep"}


def wait_for_tree(remote, prefix, expected, timeout=15.0):
    """Wait until the remote holds exactly `expected` under prefix; show the difference if not."""
    try:
        wait_for(lambda: remote_tree(remote, prefix) == expected, timeout=timeout, message=prefix)
    except AssertionError:
        assert remote_tree(remote, prefix) == expected


def native_tree(root, hidden=(".keep",)):
    files = {}
    for directory, dirs, names in os.walk(root):
        dirs.sort()
        for name in names + [d for d in dirs if os.path.islink(os.path.join(directory, d))]:
            if name in hidden:
                continue
            full = os.path.join(directory, name)
            relative = os.path.relpath(full, root)
            files[relative] = os.readlink(full).encode() if os.path.islink(full) else open(full, "rb").read()
    return files


def make_source_tree(root):
    """A small tree with nesting, an executable, a symlink, binary and empty files."""
    (root / "docs/deep/deeper").mkdir(parents=True)
    (root / "README").write_text("read me\n")
    (root / "docs/guide.txt").write_text("guide\n" * 100)
    (root / "docs/deep/deeper/bottom.bin").write_bytes(bytes(range(256)) * 4)
    (root / "empty").write_bytes(b"")
    (root / "run.sh").write_text("#!/bin/sh\necho run\n")
    os.chmod(root / "run.sh", 0o755)
    os.symlink("docs/guide.txt", root / "guide")
    return native_tree(root)


def commit_count(remote):
    return len(remote.log())


def test_cp_r(remote, mount_gitfs, tmp_path):
    expected = make_source_tree(tmp_path / "src")
    mount = mount_gitfs(remote)
    run("cp", "-r", tmp_path / "src", mount.current / "copy")
    wait_for_tree(remote, "copy/", expected)
    assert git("--git-dir", str(remote.bare), "ls-tree", remote.branch, "copy/run.sh").split()[0] == "100755"
    assert git("--git-dir", str(remote.bare), "ls-tree", remote.branch, "copy/guide").split()[0] == "120000"
    assert native_tree(mount.current / "copy") == expected


def test_tar_x_of_1000_files_is_a_few_commits(remote, mount_gitfs, tmp_path):
    source = tmp_path / "source"
    for number in range(1000):
        path = source / f"dir{number % 10}" / f"file{number:04}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"file number {number}\n")
    archive = tmp_path / "files.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(source, arcname="unpacked")
    expected = native_tree(source)
    mount = mount_gitfs(remote)
    before = commit_count(remote)
    run("tar", "xf", archive, "-C", mount.current)
    wait_for(lambda: len(remote.files()) >= 1002, timeout=60, message="1000 files on the remote")
    assert remote_tree(remote, "unpacked/") == expected
    assert commit_count(remote) - before <= 3, remote.log()[:5]
    assert git("--git-dir", str(remote.bare), "log", "--merges", "--format=%H", remote.branch) == ""


def test_unzip(remote, mount_gitfs, tmp_path):
    expected = make_source_tree(tmp_path / "src")
    run("zip", "-q", "-r", "-y", tmp_path / "archive.zip", ".", cwd=tmp_path / "src")
    mount = mount_gitfs(remote)
    (mount.current / "unzipped").mkdir()
    run("unzip", "-q", tmp_path / "archive.zip", "-d", mount.current / "unzipped")
    wait_for_tree(remote, "unzipped/", expected)
    assert git("--git-dir", str(remote.bare), "ls-tree", remote.branch, "unzipped/run.sh").split()[0] == "100755"


def test_sed_i(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    run("sed", "-i", "s/testing/TESTED/", mount.current / "testing")
    wait_for(lambda: remote.show("testing") == b"just TESTED around here\n", message="sed's edit")
    assert sorted(remote.files()) == ["me", "testing"]  # no sed temporary file
    assert sorted(os.listdir(mount.current)) == ["me", "testing"]


def test_rsync_a(remote, mount_gitfs, tmp_path):
    expected = make_source_tree(tmp_path / "src")
    mount = mount_gitfs(remote)
    run("rsync", "-a", f"{tmp_path / 'src'}/", f"{mount.current / 'synced'}/")
    wait_for_tree(remote, "synced/", expected)
    assert native_tree(mount.current / "synced") == expected
    # rsync -a keeps mtimes and modes.
    assert os.stat(mount.current / "synced/README").st_mtime == os.stat(tmp_path / "src/README").st_mtime
    assert stat.S_IMODE(os.stat(mount.current / "synced/run.sh").st_mode) == 0o755
    # A second run updates a changed file in place (rsync writes a temporary, then renames).
    (tmp_path / "src/README").write_text("changed, and longer\n")  # rsync compares size + mtime
    run("rsync", "-a", f"{tmp_path / 'src'}/", f"{mount.current / 'synced'}/")
    wait_for(lambda: remote.show("synced/README") == b"changed, and longer\n", message="rsync's update")
    assert not any(os.path.basename(p).startswith(".README") for p in remote.files())


def test_git_clone_into_current(remote, mount_gitfs, tmp_path):
    other = Remote(tmp_path / "another")
    other.commit({"lib.py": "print('lib')\n", "pkg/mod.py": "x = 1\n"}, "another project")
    mount = mount_gitfs(remote)
    run("git", "clone", "-q", other.url, mount.current / "vendor")
    assert (mount.current / "vendor/lib.py").read_text() == "print('lib')\n"
    # The clone works as a repository on the mount.
    assert run("git", "-C", mount.current / "vendor", "log", "--format=%s").strip() == "another project"
    wait_for(lambda: {"vendor/lib.py", "vendor/pkg/mod.py"} <= set(remote.files()), message="the cloned files")
    assert not any("/.git/" in f"/{path}" for path in remote.files()), "a .git was committed"
    assert remote.show("vendor/pkg/mod.py") == b"x = 1\n"
    assert run("git", "-C", mount.current / "vendor", "status", "--porcelain") == ""


@pytest.mark.skipif(shutil.which("vim") is None, reason="vim is not installed")
def test_vim_save(remote, mount_gitfs):
    remote.commit({".gitignore": "*.swp\n*~\n"}, "ignore editor files")
    mount = mount_gitfs(remote)
    path = mount.current / "testing"
    # Ex mode, no vimrc; a swap file and a backup file as vim makes them by default.
    run("vim", "-u", "NONE", "-i", "NONE", "-N", "-e", "-s", "-c", "set backup writebackup swapfile",
        "-c", "%s/testing/edited with vim/", "-c", "wq", path)
    wait_for(lambda: remote.show("testing") == b"just edited with vim around here\n", message="vim's save")
    assert path.read_bytes() == b"just edited with vim around here\n"
    assert sorted(remote.files()) == [".gitignore", "me", "testing"]


def test_editor_style_save_with_backup_and_swap(remote, mount_gitfs):
    """What editors do without vim: swap file, rename the original to a backup, write anew, fsync."""
    remote.commit({".gitignore": "*.swp\n"}, "ignore swap files")
    mount = mount_gitfs(remote)
    current = mount.current
    swap = current / ".testing.swp"
    swap.write_bytes(b"\0" * 4096)
    os.rename(current / "testing", current / "testing~")
    with open(current / "testing", "wb") as handle:
        handle.write(b"saved by the editor\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.chmod(current / "testing", 0o644)
    os.unlink(current / "testing~")
    os.unlink(swap)
    wait_for(lambda: remote.show("testing") == b"saved by the editor\n", message="the save")
    assert sorted(remote.files()) == [".gitignore", "me", "testing"]
