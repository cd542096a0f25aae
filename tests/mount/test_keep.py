"""Layer 3: `.keep` through a real mount. An empty `.keep` is GitFS's placeholder for a
folder git would otherwise lose (not listed, removed with its folder); a `.keep` with
content is the user's file like any other (listed, and its folder is not empty).
"""

from __future__ import annotations

import errno
import os
import subprocess

import pytest

from helpers import wait_for


def listing(path) -> list[str]:
    """`ls -A`: every name but . and .."""
    result = subprocess.run(["ls", "-A", str(path)], capture_output=True, text=True, check=True)
    return result.stdout.split()


def rmdir(path) -> str:
    """rmdir(1)'s answer: "" or its error message."""
    result = subprocess.run(["rmdir", str(path)], capture_output=True, text=True)
    return "" if result.returncode == 0 else result.stderr


def test_a_keep_with_content_is_an_ordinary_file(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    folder = mount.current / "d"
    subprocess.run(["mkdir", str(folder)], check=True)
    assert listing(folder) == []
    subprocess.run(["sh", "-c", f"echo precious > {folder}/.keep"], check=True)
    assert listing(folder) == [".keep"]
    assert subprocess.run(["cat", str(folder / ".keep")], capture_output=True, text=True).stdout == "precious\n"
    assert "Directory not empty" in rmdir(folder)
    assert (folder / ".keep").read_text() == "precious\n"
    wait_for(lambda: "d/.keep" in remote.files() and remote.show("d/.keep") == b"precious\n",
             message="the user's .keep on the remote")


def test_the_placeholder_is_hidden_reachable_by_name_and_goes_with_rmdir(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    folder = mount.current / "e"
    subprocess.run(["mkdir", str(folder)], check=True)
    assert listing(folder) == []
    subprocess.run(["touch", str(folder / ".keep")], check=True)  # as project skeletons do: still empty
    assert subprocess.run(["stat", str(folder / ".keep")], capture_output=True).returncode == 0
    assert listing(folder) == []
    wait_for(lambda: "e/.keep" in remote.files(), message="the folder on the remote")
    assert rmdir(folder) == ""
    assert not folder.exists()
    wait_for(lambda: "e/.keep" not in remote.files(), message="the folder gone from the remote")


def test_keep_files_from_the_remote_follow_the_same_rule(remote, mount_gitfs):
    remote.commit({"log/.keep": "", "tmp/.keep": "kept by the project\n"}, "skeleton")
    mount = mount_gitfs(remote)
    assert listing(mount.current / "log") == []
    assert listing(mount.current / "tmp") == [".keep"]
    assert "Directory not empty" in rmdir(mount.current / "tmp")
    assert rmdir(mount.current / "log") == ""
    wait_for(lambda: "log/.keep" not in remote.files(), message="log/ gone from the remote")
    assert remote.show("tmp/.keep") == b"kept by the project\n"


def test_emptying_a_keep_makes_it_the_placeholder_again(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    folder = mount.current / "d"
    folder.mkdir()
    (folder / ".keep").write_text("x\n")
    assert listing(folder) == [".keep"]
    os.truncate(folder / ".keep", 0)
    assert listing(folder) == []
    assert rmdir(folder) == ""


def test_rename_over_a_folder_that_holds_only_a_keep(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    current = mount.current
    for name in ("src", "placeholder_only", "users_keep"):
        (current / name).mkdir()
    (current / "src/f").write_text("f\n")
    (current / "users_keep/.keep").write_text("mine\n")
    with pytest.raises(OSError) as raised:
        os.rename(current / "src", current / "users_keep")
    assert raised.value.errno in (errno.ENOTEMPTY, errno.EEXIST)
    assert (current / "users_keep/.keep").read_text() == "mine\n"
    assert listing(current / "placeholder_only") == [] and (mount.repo_path / "placeholder_only/.keep").exists()
    subprocess.run(["mv", "-T", str(current / "src"), str(current / "placeholder_only")], check=True)
    assert listing(current / "placeholder_only") == ["f"]
    wait_for(lambda: "placeholder_only/f" in remote.files(), message="the rename on the remote")
    assert not any(path.startswith("src/") for path in remote.files())
    assert remote.show("users_keep/.keep") == b"mine\n"
