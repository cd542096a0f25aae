"""Layer 3: LFS files read through a real mount of a path remote that git-lfs pushed to.

history/, .gitfs/versions/ and .gitfs/conflicts/ show an LFS file's content and size,
never its pointer; the object comes from the remote's store into the clone's on first
open. An object nobody has reads as EIO, once logged and in the status.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess

import pytest

from gitfs.lfs import pointer
from helpers import LFS_BIG, gitfs_argv, push_without_git_lfs, wait_for


def test_history_shows_lfs_content_and_size(lfs_remote, mount_gitfs):
    sha = lfs_remote.head()
    big = pointer.parse(lfs_remote.show("big.bin"))
    mount = mount_gitfs(lfs_remote)
    folder = mount.history / sha[:7]
    clone_object = mount.repo_path / ".git" / "lfs" / "objects" / big.oid[:2] / big.oid[2:4] / big.oid
    assert os.stat(folder / "big.bin").st_size == len(LFS_BIG)
    assert {name: os.stat(folder / name).st_size for name in os.listdir(folder)} == {
        ".gitattributes": len(lfs_remote.show(".gitattributes")), "big.bin": len(LFS_BIG), "small.bin": 5,
        "notes.txt": 6}
    assert (folder / "big.bin").read_bytes() == LFS_BIG
    assert (folder / "small.bin").read_bytes() == b"tiny\n"
    assert (folder / "notes.txt").read_bytes() == b"plain\n"
    assert clone_object.read_bytes() == LFS_BIG  # in git-lfs's layout
    # Reads at an offset come from the object, as `dd` would do them.
    with open(folder / "big.bin", "rb") as handle:
        handle.seek(1_000_000)
        assert handle.read(300) == LFS_BIG[1_000_000:1_000_300]


def test_versions_show_each_lfs_version(lfs_remote, mount_gitfs):
    """The tip's objects come at mount; an older version's object on first open."""
    first = pointer.parse(lfs_remote.show("big.bin"))
    lfs_remote.commit({"big.bin": b"second version\n" * 100}, "second")
    mount = mount_gitfs(lfs_remote)
    clone_object = mount.repo_path / ".git" / "lfs" / "objects" / first.oid[:2] / first.oid[2:4] / first.oid
    versions = mount.path / ".gitfs" / "versions" / "big.bin"
    sizes = {os.stat(versions / name).st_size: name for name in os.listdir(versions)}  # made in one second
    assert sorted(sizes) == [1500, len(LFS_BIG)]
    assert not clone_object.exists()
    assert (versions / sizes[len(LFS_BIG)]).read_bytes() == LFS_BIG
    assert clone_object.read_bytes() == LFS_BIG
    assert (versions / sizes[1500]).read_bytes() == b"second version\n" * 100


def test_a_missing_object_reads_as_eio_and_is_reported(lfs_remote, mount_gitfs, tmp_path):
    """A pointer pushed without its object: EIO (never the pointer text), one log line with
    the path and object id, an entry in the status file and in `gitfs status`."""
    ghost = pointer.Pointer("ab" * 32, 4242)
    sha = push_without_git_lfs(lfs_remote, tmp_path, {"ghost.bin": ghost.encode()})

    mount = mount_gitfs(lfs_remote, expect_errors=True)
    path = mount.history / sha[:7] / "ghost.bin"
    assert os.stat(path).st_size == 4242
    for _attempt in range(2):
        with pytest.raises(OSError) as raised:
            path.read_bytes()
        assert raised.value.errno == errno.EIO
    assert (mount.history / sha[:7] / "big.bin").read_bytes() == LFS_BIG

    lines = [line for line in mount.log_text().splitlines() if ghost.oid in line]
    assert len(lines) == 1 and "ghost.bin" in lines[0] and " ERROR " in lines[0], lines
    status = mount.path / ".gitfs" / "status"
    entries = wait_for(lambda: json.loads(status.read_text())["lfs_missing"])
    assert [(entry["path"], entry["oid"]) for entry in entries] == [("ghost.bin", ghost.oid)]
    shown = subprocess.run(gitfs_argv("status", mount.path), capture_output=True, text=True, check=True).stdout
    assert f"LFS missing: ghost.bin (object {ghost.oid})" in shown


def test_no_lfs_rule_no_change(remote, mount_gitfs):
    """A repository without a filter=lfs rule shows a committed pointer text as it is."""
    text = pointer.Pointer("cd" * 32, 10).encode()
    remote.commit({"looks-like-a-pointer.bin": text}, "pointer text")
    mount = mount_gitfs(remote)
    assert (mount.history / remote.head()[:7] / "looks-like-a-pointer.bin").read_bytes() == text


def test_pointer_outside_lfs_paths_is_plain_content(lfs_remote, mount_gitfs, tmp_path):
    """In an LFS repository, a pointer's text under a path no filter=lfs rule covers is content."""
    text = pointer.Pointer("cd" * 32, 10).encode()
    sha = push_without_git_lfs(lfs_remote, tmp_path, {"docs/example-pointer.txt": text})
    mount = mount_gitfs(lfs_remote)
    folder = mount.history / sha[:7] / "docs"
    assert os.stat(folder / "example-pointer.txt").st_size == len(text)
    assert (folder / "example-pointer.txt").read_bytes() == text
