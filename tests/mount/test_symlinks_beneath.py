"""Layer 3: the daemon never follows a symlink inside the clone.

The kernel caches current/'s names for an hour: a folder of the clone that becomes
a link behind its back (here: replaced directly in the clone) is still a folder to
the kernel, which sends the daemon paths through it. Reads, writes, attributes,
listings and renames through such a path are errors (ELOOP, or ENOENT), never the
file the link points at; and the next mount commits the link as a link.
Run with openat2 and with the walk that replaces it on older kernels.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess

import pytest

from helpers import git, wait_for

REFUSED = (errno.ELOOP, errno.ENOENT)


def refused(call, *args) -> None:
    with pytest.raises(OSError) as raised:
        call(*args)
    assert raised.value.errno in REFUSED, raised.value


def test_a_folder_replaced_by_a_link_behind_the_kernels_back_is_never_followed(
        remote, mount_gitfs, tmp_path, resolver):
    remote.commit({"dir/f": "inside\n", "dir/sub/g": "inside too\n"}, "a folder")
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "f").write_text("outside\n")
    (outside / "sub" / "g").write_text("outside too\n")
    before = {path: path.read_bytes() for path in outside.rglob("*") if path.is_file()}
    mount = mount_gitfs(remote)
    folder = mount.current / "dir"
    # The kernel learns the folder and its files (cached for an hour).
    assert (folder / "f").read_text() == "inside\n"
    assert (folder / "sub" / "g").read_text() == "inside too\n"
    assert sorted(os.listdir(folder)) == ["f", "sub"]

    shutil.rmtree(mount.repo_path / "dir")
    os.symlink(outside, mount.repo_path / "dir")

    refused((folder / "f").read_bytes)
    refused((folder / "sub" / "g").read_bytes)
    refused((folder / "f").write_text, "written through\n")
    refused((folder / "new").write_text, "created through\n")
    # stat may be answered from the attributes the kernel keeps of the inside file (a
    # listing hands them over); whatever reaches the daemon is refused, and what shows is
    # never the outside file.
    try:
        shown = os.stat(folder / "f")
    except OSError as error:
        assert error.errno in REFUSED, error
    else:
        assert shown.st_size == len("inside\n")
    refused(os.stat, folder / "sub" / "never-seen")
    refused(os.listdir, folder / "sub")
    refused(os.chmod, folder / "f", 0o600)
    refused(os.rename, folder / "f", folder / "renamed")
    refused(os.unlink, folder / "sub" / "g")
    refused(os.mkdir, folder / "made")
    after = {path: path.read_bytes() for path in outside.rglob("*") if path.is_file()}
    assert after == before
    assert os.stat(outside / "f").st_mode & 0o777 != 0o600
    assert mount.stop() == 0

    again = mount_gitfs(remote, repo_path=mount.repo_path)  # commits what the clone holds
    wait_for(lambda: "dir" in remote.files(), timeout=30, message="the link on the remote")
    assert git("--git-dir", str(remote.bare), "ls-tree", remote.branch, "dir").split()[0] == "120000"
    assert remote.show("dir") == str(outside).encode()
    assert os.readlink(again.current / "dir") == str(outside)  # a link at the last name stays a link
    assert subprocess.run(["cat", str(again.current / "dir" / "f")], capture_output=True).stdout == b"outside\n"
