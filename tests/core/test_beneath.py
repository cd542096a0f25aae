"""Layer 1: paths beneath a folder's descriptor never follow a symlink (gitfs/repo/beneath.py).

Every test runs twice: with openat2 (where the kernel has it) and with the walk of one
folder at a time that replaces it elsewhere.
"""

from __future__ import annotations

import errno
import os
import stat

import pytest

from gitfs.repo import beneath


@pytest.fixture(params=["openat2", "walk"])
def resolver(request, monkeypatch):
    if request.param == "openat2" and not beneath.uses_openat2():
        pytest.skip("this kernel has no openat2")
    if request.param == "walk":
        monkeypatch.setattr(beneath, "_syscall_function", None)
    return request.param


@pytest.fixture
def tree(tmp_path):
    """root/ with d/f, a link to a folder outside (root/out -> outside/), d/link -> f."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "d").mkdir(parents=True)
    outside.mkdir()
    (root / "d" / "f").write_text("inside\n")
    (outside / "f").write_text("outside\n")
    (root / "out").symlink_to(outside)
    (root / "d" / "link").symlink_to("f")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    yield fd
    os.close(fd)


def read(fd: int) -> bytes:
    try:
        return os.read(fd, 100)
    finally:
        os.close(fd)


def test_files_and_folders_open_beneath_the_root(resolver, tree):
    assert read(beneath.open_beneath(tree, "d/f", os.O_RDONLY)) == b"inside\n"
    os.close(beneath.open_beneath(tree, ".", os.O_RDONLY | os.O_DIRECTORY))
    fd = beneath.open_beneath(tree, "d/new", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o640)
    os.close(fd)
    assert stat.S_IMODE(os.lstat("d/new", dir_fd=tree).st_mode) == 0o640 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.parametrize("path", ["out/f", "out/new", "out/../d/f"])
def test_a_link_in_a_folders_place_is_never_followed(resolver, tree, path):
    with pytest.raises(OSError) as raised:
        beneath.open_beneath(tree, path, os.O_RDWR | os.O_CREAT)
    assert raised.value.errno == errno.ELOOP


def test_a_link_at_the_last_name_is_the_link_itself(resolver, tree):
    assert stat.S_ISLNK(beneath.lstat(tree, "d/link").st_mode)
    assert stat.S_ISLNK(beneath.lstat(tree, "out").st_mode)
    assert beneath.readlink(tree, "d/link") == "f"
    for flags in (os.O_RDONLY, os.O_RDONLY | os.O_DIRECTORY):
        with pytest.raises(OSError) as raised:
            beneath.open_beneath(tree, "out", flags)
        assert raised.value.errno == errno.ELOOP
    with pytest.raises(OSError) as raised:
        beneath.open_beneath(tree, "d/link", os.O_RDONLY)
    assert raised.value.errno == errno.ELOOP


def test_dot_dot_never_climbs_out(resolver, tree):
    with pytest.raises(OSError) as raised:
        beneath.open_beneath(tree, "../outside/f", os.O_RDONLY)
    assert raised.value.errno == errno.EXDEV


def test_parent_and_its_names(resolver, tree):
    with beneath.parent(tree, "d/f") as (folder, name):
        assert name == "f" and os.lstat(name, dir_fd=folder).st_size == len("inside\n")
    with beneath.parent(tree, "top") as (folder, name):
        assert (folder, name) == (tree, "top")
    with pytest.raises(OSError) as raised, beneath.parent(tree, "out/f"):
        pass
    assert raised.value.errno == errno.ELOOP


def test_chmod_never_through_a_link(resolver, tree):
    beneath.chmod(tree, "d/f", 0o600)
    assert stat.S_IMODE(os.lstat("d/f", dir_fd=tree).st_mode) == 0o600
    with pytest.raises(OSError) as raised:
        beneath.chmod(tree, "d/link", 0o600)
    assert raised.value.errno == errno.EOPNOTSUPP
    with pytest.raises(OSError) as raised:
        beneath.chmod(tree, "out/f", 0o600)
    assert raised.value.errno == errno.ELOOP


def test_paths_longer_than_path_max(resolver, tree):
    names = [f"{i:02d}" + "x" * 198 for i in range(25)]  # 5,024 bytes with the slashes
    fd = os.dup(tree)
    for name in names:
        os.mkdir(name, dir_fd=fd)
        following = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = following
    os.close(fd)
    deep = "/".join(names) + "/file"
    os.close(beneath.open_beneath(tree, deep, os.O_WRONLY | os.O_CREAT, 0o644))
    assert stat.S_ISREG(beneath.lstat(tree, deep).st_mode)
    with beneath.parent(tree, deep) as (folder, name):
        os.symlink("file", "link", dir_fd=folder)
    assert beneath.readlink(tree, "/".join(names) + "/link") == "file"
    os.rename(names[3], "moved", src_dir_fd=_folder_of(tree, names[:3]), dst_dir_fd=tree)
    os.symlink("moved", names[3], dir_fd=_folder_of(tree, names[:3]))
    with pytest.raises(OSError) as raised:
        beneath.open_beneath(tree, deep, os.O_RDONLY)
    assert raised.value.errno == errno.ELOOP


def _folder_of(root: int, names: list[str]) -> int:
    return beneath.open_beneath(root, "/".join(names), os.O_RDONLY | os.O_DIRECTORY)
