"""Layer 3: the mode a new file or folder gets (the caller's umask, applied once) and the
times `touch` sets, through a real mount, compared with the same programs on the native disk.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

# Made by real programs under the umask given: mkdir, mkdir -p, mkdir -m, touch, a shell
# redirect, cp of a 0777 file, and mknod(2) of a regular file (umask applies to all of them).
MAKE = ("mkdir d && mkdir -p p/q && mkdir -m 1777 sticky && mkdir -m 555 closed && touch f"
        " && echo x > r && cp \"$SOURCE\" c"
        " && \"$PYTHON\" -c 'import os, stat; os.mknod(\"n\", stat.S_IFREG | 0o666)'"
        " && stat -c '%n %a %F' d p p/q sticky closed f r c n")


def in_both(script: str, mount, tmp_path) -> tuple[str, str]:
    """stdout of `sh -c script` run in a new folder of current/ and of the native disk."""
    source = tmp_path / "source"
    source.write_text("x\n")
    source.chmod(0o777)
    environment = dict(os.environ, SOURCE=str(source), PYTHON=sys.executable)
    outputs = []
    for root in (mount.current, tmp_path / "native"):
        folder = root / "case"
        folder.mkdir(parents=True)
        result = subprocess.run(["sh", "-c", script], cwd=folder, capture_output=True, text=True,
                                env=environment)
        assert result.returncode == 0, result.stderr
        outputs.append(result.stdout)
    return outputs[0], outputs[1]


@pytest.mark.parametrize("umask", ["002", "000", "022", "077", "027"])
def test_new_files_and_folders_get_the_callers_umask_once(remote, mount_gitfs, tmp_path, umask):
    mount = mount_gitfs(remote)
    mine, native = in_both(f"umask {umask} && {MAKE}", mount, tmp_path)
    assert mine == native
    if umask == "002":  # the case that gave 755/644 when the daemon's umask applied again
        assert "d 775 directory" in mine and "f 664 regular empty file" in mine and "c 775" in mine


def test_folder_made_through_the_mount_keeps_its_placeholder_whatever_its_mode(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    subprocess.run(["mkdir", "-m", "555", str(mount.current / "closed")], check=True)
    assert oct(os.stat(mount.current / "closed").st_mode & 0o7777) == "0o555"
    assert (mount.repo_path / "closed/.keep").is_file()


TOUCHES = [
    ["touch", "-m", "-d", "2030-01-01 00:00:00", "f"],  # mtime only: atime stays
    ["touch", "-a", "-d", "2031-06-01 12:00:00", "f"],  # atime only: mtime stays
    ["touch", "-d", "2032-01-01 00:00:00.5", "f"],
    ["touch", "-h", "-d", "2020-01-01 00:00:00", "link"],  # the link, not its target
    ["touch", "-m", "-r", "f", "g"],  # mtime from another file
]


def times_after(root, command) -> list[tuple[int, int]]:
    subprocess.run(command, cwd=root, check=True)
    return [(st.st_atime_ns, st.st_mtime_ns) for st in (os.lstat(root / "f"), os.lstat(root / "link"),
                                                       os.lstat(root / "g"))]


def prepare_times(root) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "f").write_text("x\n")
    (root / "g").write_text("y\n")
    os.symlink("f", root / "link")
    for name in ("f", "g"):
        os.utime(root / name, ns=(978_307_200 * 10**9, 1_009_843_200 * 10**9))  # 2001, 2002
    os.utime(root / "link", ns=(946_684_800 * 10**9, 946_684_800 * 10**9), follow_symlinks=False)


def test_touch_with_dates_omits_what_it_is_not_asked_to_set(remote, mount_gitfs, tmp_path):
    mount = mount_gitfs(remote)
    mine_root, native_root = mount.current / "t", tmp_path / "t"
    prepare_times(mine_root)
    prepare_times(native_root)
    for command in TOUCHES:
        assert times_after(mine_root, command) == times_after(native_root, command), command


def test_touch_sets_now_not_1970(remote, mount_gitfs):
    mount = mount_gitfs(remote)
    path = mount.current / "testing"
    os.utime(path, ns=(10**9, 10**9))
    subprocess.run(["touch", str(path)], check=True)
    st = os.stat(path)
    for when in (st.st_atime, st.st_mtime):
        assert abs(when - time.time()) < 3600, time.ctime(when)  # today, not 1970-01-01 00:00:01
    stat_line = subprocess.run(["stat", "-c", "%y", str(path)], capture_output=True, text=True).stdout
    assert not stat_line.startswith("1970")
    # Only the access time: the modification time stays.
    os.utime(path, ns=(10**9, 2 * 10**9))
    subprocess.run(["touch", "-a", str(path)], check=True)
    st = os.stat(path)
    assert st.st_mtime_ns == 2 * 10**9 and abs(st.st_atime - time.time()) < 3600
