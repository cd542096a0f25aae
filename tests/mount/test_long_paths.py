"""Layer 3: long paths below current/ work exactly as on the native disk.

GitFS names files relative to a directory fd of its clone, so the limit is the
kernel's own PATH_MAX for the path a program passes (counted from current/),
not that minus the clone's location on disk. Programs run with current/ (or the
native folder) as their working directory, so the paths they pass are relative.
(Committing such paths is the sync worker's business, not checked here.)
"""

from __future__ import annotations

import os
import subprocess

import pytest

from helpers import wait_for

COMPONENT = "d" * 200


def long_path(length: int) -> tuple[str, str]:
    """(folder, file) relative paths, the file's exactly `length` bytes long."""
    folder = COMPONENT
    while len(folder) + 1 + len(COMPONENT) + 1 + 1 <= length - 10:
        folder += "/" + COMPONENT
    return folder, folder + "/" + "f" * (length - len(folder) - 1)


def run(root, *command) -> tuple[int, str, str]:
    result = subprocess.run(list(command), cwd=root, capture_output=True, text=True)
    return result.returncode, result.stdout, result.stderr.replace(str(root), "ROOT")


def scenario(root, length: int) -> list:
    folder, file = long_path(length)
    return [
        run(root, "mkdir", "-p", folder),
        run(root, "sh", "-c", f"echo deep > {file}"),
        run(root, "cat", file),
        run(root, "stat", "-c", "%s %F", file),
        run(root, "touch", "-d", "2030-01-01", file),
        run(root, "stat", "-c", "%Y", file),
        run(root, "chmod", "700", file),
        run(root, "stat", "-c", "%a", file),
        run(root, "ln", "-s", "target", folder + "/link"),
        run(root, "readlink", folder + "/link"),
        run(root, "ls", folder),
        run(root, "mv", file, folder + "/moved"),
        run(root, "mv", folder + "/moved", file),
        run(root, "truncate", "-s", "2", file),
        run(root, "cat", file),
        run(root, "rm", file),
        run(root, "mkdir", file),
        run(root, "rmdir", file),
    ]


@pytest.mark.parametrize("length", [4094, 4095, 4096])
def test_long_relative_paths_behave_as_on_the_native_disk(remote, mount_gitfs, tmp_path, length):
    mount = mount_gitfs(remote)
    native = tmp_path / "native"
    native.mkdir()
    mine, expected = scenario(mount.current, length), scenario(native, length)
    assert mine == expected
    if length < 4096:  # PATH_MAX counts the NUL: 4095 bytes is the longest path the kernel takes
        assert all(code == 0 for code, _out, _err in expected)
        assert os.path.isdir(mount.repo_path / long_path(length)[0][:200])
        # And committed and pushed, although the clone's path makes it longer than PATH_MAX.
        link = long_path(length)[0] + "/link"
        wait_for(lambda: link in remote.files(), timeout=30, message="the deep link on the remote")
        assert "sync failed" not in mount.log_text()
    else:
        assert any("too long" in err for _code, _out, err in expected)


def test_relative_names_from_a_deep_folder_go_past_4095_bytes(remote, mount_gitfs, tmp_path):
    # A program working in a deep folder passes short names; the kernel counts the path
    # it is given, not the one from current/: on ext4 and through the mount alike, files
    # 4,120 and 4,321 bytes below current/ are made, read, committed and pushed (FUSE hands
    # GitFS a node's whole path, which libfuse builds whatever its length).
    depth = 19  # 19 components of 200 bytes and their slashes: 3,819 bytes
    # cd -P: the shell's own cd would chdir to the whole logical path, the test's folder included.
    steps = " && ".join([f"mkdir -p {COMPONENT} && cd -P {COMPONENT}"] * depth)
    short, far = "f" * 100, f"{'h' * 250}/{'g' * 50}"
    script = (f"{steps} && mkdir -p {'e' * 200}/{'h' * 250} && cd -P {'e' * 200} && "
              f"echo short > {short} && echo far > {far} && cat {short} {far} && stat -c %s {far}")
    mount = mount_gitfs(remote)
    native = tmp_path / "native"
    native.mkdir()
    assert run(mount.current, "sh", "-c", script) == run(native, "sh", "-c", script) == (0, "short\nfar\n4\n", "")
    folder = "/".join([COMPONENT] * depth + ["e" * 200])
    assert (len(f"{folder}/{short}"), len(f"{folder}/{far}")) == (4120, 4321)
    wait_for(lambda: {f"{folder}/{short}", f"{folder}/{far}"} <= set(remote.files()), timeout=30,
             message="the deep files on the remote")
    assert remote.show(f"{folder}/{far}") == b"far\n"
