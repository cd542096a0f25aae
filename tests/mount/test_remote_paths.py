"""Layer 3: whatever paths a colleague pushes, the sync goes on.

Git has no limit on a path's length: a path longer than one system call takes
once the clone's location is put before it appears in current/ and stays
writable; a path that cannot exist on this disk at all (a name over 255 bytes)
is logged once as an ERROR, left out of current/, and kept in every later commit.
The colleague's commits are written straight into the bare remote with pygit2
(git's own command line cannot check such paths out either).
"""

from __future__ import annotations

import os
import subprocess

import pygit2

from helpers import wait_for

DEEP = "/".join(f"d{i:02d}_" + "x" * 196 for i in range(20)) + "/deep.txt"  # 4,028 bytes
LONG_NAME = "folder/" + "n" * 300


def colleague_push(remote, files: dict[str, bytes], message: str) -> None:
    """A commit of `files` on the remote's branch, as a colleague's push."""
    bare = pygit2.Repository(str(remote.bare))
    ref = f"refs/heads/{remote.branch}"
    head = bare.references[ref].target
    tree = bare[head].tree
    for path, data in files.items():
        tree = bare[_insert(bare, tree, path.split("/"), bare.create_blob(data))]
    signature = pygit2.Signature("Colleague", "colleague@example.org")
    bare.create_commit(ref, signature, signature, message, tree.id, [head])


def _insert(bare, tree, names, blob):
    builder = bare.TreeBuilder(tree) if tree is not None else bare.TreeBuilder()
    if len(names) == 1:
        builder.insert(names[0], blob, pygit2.GIT_FILEMODE_BLOB)
    else:
        below = bare[tree[names[0]].id] if tree is not None and names[0] in tree else None
        builder.insert(names[0], _insert(bare, below, names[1:], blob), pygit2.GIT_FILEMODE_TREE)
    return builder.write()


def read_below(folder, relative: str) -> bytes:
    """The bytes of a path relative to `folder` (too long after the folder's own path)."""
    root = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fd = os.open(relative, os.O_RDONLY, dir_fd=root)
    finally:
        os.close(root)
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def wait_pushed(mount, remote, name: str, data: bytes) -> None:
    (mount.current / name).write_bytes(data)
    wait_for(lambda: name in remote.files() and remote.show(name) == data, timeout=30,
             message=f"{name} on the remote")


def test_a_deep_path_from_a_colleague_appears_and_the_sync_goes_on(remote, mount_gitfs, tmp_path, resolver):
    mount = mount_gitfs(remote, repo_path=tmp_path / ("clone-" + "p" * 60))  # the clone's path adds to it
    colleague_push(remote, {DEEP: b"deep\n"}, "a deep path")

    def shown():
        try:
            return read_below(mount.current, DEEP) == b"deep\n"
        except FileNotFoundError:
            return False

    wait_for(shown, timeout=30, message="the deep file in current/")
    wait_pushed(mount, remote, "after.txt", b"written after\n")
    result = subprocess.run(["sh", "-c", f"echo changed > {DEEP}"], cwd=mount.current, capture_output=True)
    assert result.returncode == 0, result.stderr
    wait_for(lambda: remote.show(DEEP) == b"changed\n", timeout=30, message="the deep file changed on the remote")
    assert "sync failed" not in mount.log_text()
    # A new clone of it checks the deep path out too.
    fresh = mount_gitfs(remote, repo_path=tmp_path / ("fresh-" + "p" * 60))
    assert read_below(fresh.current, DEEP) == b"changed\n"


def test_a_name_this_disk_cannot_hold_is_skipped_logged_once_and_kept(remote, mount_gitfs, tmp_path, resolver):
    mount = mount_gitfs(remote, expect_errors=True)
    colleague_push(remote, {LONG_NAME: b"long\n", "folder/short.txt": b"short\n"}, "a name too long")
    wait_for(lambda: (mount.current / "folder" / "short.txt").exists(), timeout=30, message="the colleague's files")
    assert os.listdir(mount.current / "folder") == ["short.txt"]
    wait_pushed(mount, remote, "folder/mine.txt", b"mine\n")  # a local commit in the same folder
    (mount.current / "folder" / "short.txt").unlink()
    wait_for(lambda: "folder/short.txt" not in remote.files(), timeout=30, message="the deletion on the remote")
    assert LONG_NAME in remote.files() and remote.show(LONG_NAME) == b"long\n"
    errors = [line for line in mount.log_text().splitlines() if " ERROR " in line]
    assert len(errors) == 1 and LONG_NAME in errors[0], errors
    assert "sync failed" not in mount.log_text()
    assert mount.stop() == 0

    # The next mount of the clone commits what the disk holds: the missing file is no deletion.
    again = mount_gitfs(remote, repo_path=mount.repo_path, expect_errors=True)
    wait_pushed(again, remote, "again.txt", b"again\n")
    assert LONG_NAME in remote.files()
    assert " ERROR " not in again.log_text()  # said once, when it was skipped

    # A new clone skips it the same way, once, and keeps it too.
    fresh = mount_gitfs(remote, repo_path=tmp_path / "fresh", expect_errors=True)
    wait_pushed(fresh, remote, "folder/fresh.txt", b"fresh\n")
    assert LONG_NAME in remote.files()
    assert sorted(os.listdir(fresh.current / "folder")) == ["fresh.txt", "mine.txt"]
    assert len([line for line in fresh.log_text().splitlines() if " ERROR " in line]) == 1
