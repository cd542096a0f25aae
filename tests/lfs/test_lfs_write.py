"""Layer 3: LFS files in current/ through a real mount of a path remote, with git-lfs as
the other side: the working tree holds content, writes are committed as canonical
pointers whose objects reach the remote's store before the push, and nothing is ever
committed as changed or deleted because an object was missing.
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import time

import pytest

from gitfs.lfs import pointer
from helpers import (
    LFS_BIG,
    commit_marker,
    commits_after,
    git,
    git_lfs,
    git_status_with_lfs,
    lfs_clone,
    metric,
    push_without_git_lfs,
    read_status,
    wait_for,
    wait_synced,
)


def test_current_holds_content_and_nothing_is_committed(lfs_remote, mount_gitfs):
    head = lfs_remote.head()
    mount = mount_gitfs(lfs_remote)
    assert os.stat(mount.current / "big.bin").st_size == len(LFS_BIG)
    assert (mount.current / "big.bin").read_bytes() == LFS_BIG
    assert (mount.current / "small.bin").read_bytes() == b"tiny\n"
    marker = commit_marker(mount, lfs_remote)
    assert commits_after(lfs_remote, head) == [marker]  # content in the working tree is not a change
    # git trusts an index entry's stat data only if the file's time stamp is in an earlier
    # second than the index's ("racy git"): its status is asked once that second is past.
    newest = max(os.stat(mount.repo_path / name).st_mtime for name in ("big.bin", "small.bin"))
    wait_for(lambda: time.time() >= int(newest) + 1, message="a second past the files' time stamps")
    assert git_status_with_lfs(mount.repo_path) == ""
    assert git("status", "--porcelain", cwd=mount.repo_path) == ""  # the index's stat data match


def test_written_files_are_pushed_as_pointers(lfs_remote, mount_gitfs, tmp_path):
    mount = mount_gitfs(lfs_remote)
    content = os.urandom(3 * 1024 * 1024)
    (mount.current / "new.bin").write_bytes(content)
    (mount.current / "tool.bin").write_bytes(b"#!/bin/sh\necho tool\n")
    os.chmod(mount.current / "tool.bin", 0o755)
    (mount.current / "empty.bin").write_bytes(b"")
    (mount.current / "notes.txt").write_text("plain, changed\n")
    wait_for(lambda: {"new.bin", "tool.bin", "empty.bin"} <= set(lfs_remote.files()), timeout=60,
             message="the files on the remote")
    wait_synced(mount)

    text = lfs_remote.show("new.bin")
    made = pointer.parse(text)
    assert made is not None and made.size == len(content) and made.encode() == text
    (tmp_path / "pointer").write_bytes(text)
    git_lfs("pointer", "--check", "--strict", f"--file={tmp_path / 'pointer'}", cwd=tmp_path)
    assert lfs_remote.object_path(made.oid).read_bytes() == content
    assert lfs_remote.show("empty.bin") == b""  # an empty file is an empty blob, as git-lfs has it
    assert lfs_remote.show("notes.txt") == b"plain, changed\n"
    modes = {line.split("\t")[1]: line.split()[0]
             for line in git("--git-dir", str(lfs_remote.bare), "ls-tree", "main").splitlines()}
    assert modes["tool.bin"] == "100755" and modes["new.bin"] == "100644"

    assert metric(mount, 'gitfs_lfs_objects_total{direction="upload"}') == 2  # new.bin, tool.bin
    assert metric(mount, 'gitfs_lfs_bytes_total{direction="upload"}') == len(content) + 20

    fresh = lfs_clone(str(lfs_remote.bare), tmp_path / "fresh")
    assert (fresh / "new.bin").read_bytes() == content
    assert (fresh / "tool.bin").read_bytes() == b"#!/bin/sh\necho tool\n"
    assert os.access(fresh / "tool.bin", os.X_OK)
    assert git_status_with_lfs(mount.repo_path) == ""


def test_max_size_is_not_for_lfs_files(lfs_remote, mount_gitfs):
    mount = mount_gitfs(lfs_remote, max_size=1)
    big = os.urandom(2 * 1024 * 1024)
    (mount.current / "video.bin").write_bytes(big)
    with pytest.raises(OSError) as raised:
        (mount.current / "video.txt").write_bytes(big)
    assert raised.value.errno == errno.EFBIG
    wait_for(lambda: "video.bin" in lfs_remote.files(), timeout=60, message="video.bin on the remote")
    made = pointer.parse(lfs_remote.show("video.bin"))
    assert made is not None and lfs_remote.object_path(made.oid).read_bytes() == big


def test_remote_changes_arrive_as_content(lfs_remote, mount_gitfs):
    mount = mount_gitfs(lfs_remote)
    assert (mount.current / "big.bin").read_bytes() == LFS_BIG
    changed = b"changed by the other person\n" * 5000
    theirs = lfs_remote.commit({"big.bin": changed, "more/added.bin": b"added\n" * 100}, "other side")
    wait_for(lambda: (mount.current / "big.bin").read_bytes() == changed, timeout=60,
             message="the remote's big.bin in current/")
    assert (mount.current / "more" / "added.bin").read_bytes() == b"added\n" * 100
    marker = commit_marker(mount, lfs_remote)
    assert commits_after(lfs_remote, theirs) == [marker]  # what came in is not committed again
    assert git_status_with_lfs(mount.repo_path) == ""


def test_failed_upload_holds_the_push_back(lfs_remote, mount_gitfs):
    """The remote's store cannot take objects: the commit stays local, the status says why,
    and once the store works again the next cycle uploads and pushes."""
    head = lfs_remote.head()
    store = lfs_remote.bare / "lfs"
    shutil.rmtree(store / "objects")
    (store / "objects").write_text("not a folder\n")
    mount = mount_gitfs(lfs_remote, expect_errors=True)
    content = os.urandom(100_000)
    (mount.current / "held.bin").write_bytes(content)
    wait_for(lambda: "LFS upload" in ((read_status(mount).get("last_push") or {}).get("error") or ""),
             timeout=60, message="the failed upload in the status")
    assert lfs_remote.head() == head
    (store / "objects").unlink()
    wait_for(lambda: "held.bin" in lfs_remote.files(), timeout=60, message="held.bin pushed after all")
    made = pointer.parse(lfs_remote.show("held.bin"))
    assert made is not None and lfs_remote.object_path(made.oid).read_bytes() == content


def test_a_missing_object_is_never_committed_as_a_change(lfs_remote, mount_gitfs, tmp_path):
    """ghost.bin's object is missing at mount, later.bin's in the remote's change brought in
    afterwards: both are EIO in current/ with their objects' sizes, and never committed."""
    ghost, later = pointer.Pointer("ab" * 32, 4242), pointer.Pointer("ef" * 32, 123_456)
    push_without_git_lfs(lfs_remote, tmp_path, {"ghost.bin": ghost.encode()})
    mount = mount_gitfs(lfs_remote, expect_errors=True)
    with pytest.raises(OSError) as raised:
        (mount.current / "ghost.bin").read_bytes()  # never the pointer's text
    assert raised.value.errno == errno.EIO
    assert os.stat(mount.current / "ghost.bin").st_size == 4242
    push_without_git_lfs(lfs_remote, tmp_path / "later", {"later.bin": later.encode()})
    wait_for(lambda: (mount.current / "later.bin").exists(), timeout=60, message="later.bin in current/")
    assert os.stat(mount.current / "later.bin").st_size == 123_456
    with pytest.raises(OSError) as raised:
        (mount.current / "later.bin").read_bytes()
    assert raised.value.errno == errno.EIO
    (mount.current / "hello.txt").write_text("hello\n")
    wait_for(lambda: "hello.txt" in lfs_remote.files(), timeout=60, message="hello.txt on the remote")
    wait_synced(mount)
    assert lfs_remote.show("ghost.bin") == ghost.encode()
    assert lfs_remote.show("later.bin") == later.encode()
    assert lfs_remote.show("big.bin") == pointer.parse(lfs_remote.show("big.bin")).encode()
    assert sorted(entry["oid"] for entry in read_status(mount)["lfs_missing"]) == sorted([ghost.oid, later.oid])
    assert metric(mount, "gitfs_lfs_missing_objects_total") == 2
    assert metric(mount, 'gitfs_lfs_objects_total{direction="download"}') == 2  # big.bin, small.bin


def test_a_conflict_keeps_mine_and_shows_their_content(lfs_remote, mount_gitfs):
    """Both sides change big.bin: accept mine keeps the local content (pushed as a pointer),
    and .gitfs/conflicts/ shows the remote's real bytes, with their size."""
    mount = mount_gitfs(lfs_remote, sync_timeout=60, fetch_timeout=60)
    mine, theirs = os.urandom(200_000), os.urandom(150_000)
    (mount.current / "big.bin").write_bytes(mine)
    wait_for(lambda: read_status(mount)["pending"]["changes_not_committed"] == 1, message="the local change")
    their_commit = lfs_remote.commit({"big.bin": theirs}, "their change")
    os.kill(mount.process.pid, signal.SIGUSR1)
    wait_for(lambda: lfs_remote.head() != their_commit, timeout=60, message="the push after accept-mine")

    made = pointer.parse(lfs_remote.show("big.bin"))
    assert made is not None and lfs_remote.object_path(made.oid).read_bytes() == mine
    assert (mount.current / "big.bin").read_bytes() == mine
    (folder,) = os.listdir(mount.path / ".gitfs" / "conflicts")
    lost = mount.path / ".gitfs" / "conflicts" / folder / "big.bin"
    assert os.stat(lost).st_size == len(theirs)
    assert lost.read_bytes() == theirs


def test_a_pointer_with_extensions_reads_as_eio(lfs_remote, mount_gitfs, tmp_path):
    """Its object is the output of a program GitFS cannot run: even with that object on the
    remote, the file is EIO everywhere, reported, and committed only as it was."""
    stored = os.urandom(1000)
    (tmp_path / "stored").write_bytes(stored)
    made = pointer.parse(git_lfs("pointer", f"--file={tmp_path / 'stored'}", cwd=tmp_path).stdout)
    lfs_remote.object_path(made.oid).parent.mkdir(parents=True, exist_ok=True)
    lfs_remote.object_path(made.oid).write_bytes(stored)
    text = (f"version {pointer.VERSION}\next-0-foo sha256:{'5' * 64}\noid sha256:{made.oid}\n"
            f"size {made.size}\n").encode()
    sha = push_without_git_lfs(lfs_remote, tmp_path, {"ext.bin": text})
    mount = mount_gitfs(lfs_remote, expect_errors=True)
    for path in (mount.current / "ext.bin", mount.history / sha[:7] / "ext.bin"):
        with pytest.raises(OSError) as raised:
            path.read_bytes()
        assert raised.value.errno == errno.EIO, path
    (entry,) = read_status(mount)["lfs_missing"]
    assert entry["path"] == "ext.bin" and "ext-0-foo" in entry["error"]
    (mount.current / "other.txt").write_text("other\n")
    wait_for(lambda: "other.txt" in lfs_remote.files(), timeout=60, message="other.txt on the remote")
    assert lfs_remote.show("ext.bin") == text
