"""Extended attributes on a real mount with `xattr` (off by default): the user.* namespace
is kept with the file on this machine (the clone's file system holds it), survives renames
and remounts, is never committed and never makes a commit; the other namespaces are not
kept (as on a file system without them); history/ and .gitfs/ are read-only. `cp -a` and
`rsync -X` copy attributes in and out, as on a native disk (each compared with a plain
directory). Without `xattr`, every attribute is EOPNOTSUPP and the kernel stops asking."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess

import pytest

from helpers import commit_marker, commits_after, errno_of, git, wait_for, wait_synced


def user_attributes(path) -> dict[str, bytes]:
    return {name: os.getxattr(path, name) for name in os.listxattr(path) if name.startswith("user.")}


def test_user_attributes_are_kept_here_and_never_committed(remote, mount_gitfs):
    mount = mount_gitfs(remote, xattr=True)
    document = mount.current / "report.docx"
    document.write_bytes(b"the report")
    wait_synced(mount)

    os.setxattr(document, "user.DOSATTRIB", b"\x00\x00\x04\x00hidden")
    os.setxattr(mount.current, "user.folder-note", b"the root folder")
    os.mkdir(mount.current / "photos")
    os.setxattr(mount.current / "photos", "user.com.apple.FinderInfo", b"blue")
    assert user_attributes(document) == {"user.DOSATTRIB": b"\x00\x00\x04\x00hidden"}
    assert os.getxattr(mount.current, "user.folder-note") == b"the root folder"
    assert errno_of(os.setxattr, document, "user.DOSATTRIB", b"x", os.XATTR_CREATE) == errno.EEXIST
    assert errno_of(os.setxattr, document, "user.absent", b"x", os.XATTR_REPLACE) == errno.ENODATA
    assert errno_of(os.getxattr, document, "user.absent") == errno.ENODATA
    os.setxattr(document, "user.gone", b"soon")
    os.removexattr(document, "user.gone")
    assert errno_of(os.removexattr, document, "user.gone") == errno.ENODATA

    os.rename(document, mount.current / "final.docx")  # the attributes go with the file
    assert user_attributes(mount.current / "final.docx") == {"user.DOSATTRIB": b"\x00\x00\x04\x00hidden"}
    wait_synced(mount)
    assert "DOSATTRIB" not in git("--git-dir", str(remote.bare), "log", "-p", "--format=%B", "main")
    before = remote.head()
    os.setxattr(mount.current / "final.docx", "user.DOSATTRIB", b"\x00\x00\x04\x00archive")
    os.removexattr(mount.current, "user.folder-note")
    # The marker's commit is the one commit since: an attribute made none of its own, nor
    # put anything in the marker's.
    marker = commit_marker(mount, remote)
    assert commits_after(remote, before) == [marker]

    mount.stop()
    again = mount_gitfs(remote, repo_path=mount.repo_path, xattr=True)
    assert user_attributes(again.current / "final.docx") == {"user.DOSATTRIB": b"\x00\x00\x04\x00archive"}
    assert os.getxattr(again.current / "photos", "user.com.apple.FinderInfo") == b"blue"


def test_other_namespaces_are_not_kept_and_read_only_views_refuse(remote, mount_gitfs):
    mount = mount_gitfs(remote, xattr=True)
    file = mount.current / "testing"
    assert errno_of(os.setxattr, file, "trusted.x", b"1") == errno.EOPNOTSUPP  # root may: not kept
    assert errno_of(os.setxattr, file, "security.x", b"1") == errno.EOPNOTSUPP
    assert errno_of(os.getxattr, file, "security.capability") == errno.ENODATA
    # ACLs: the kernel answers for a FUSE mount that does not take them on (no FUSE_POSIX_ACL).
    assert errno_of(os.getxattr, file, "system.posix_acl_access") in (errno.ENODATA, errno.EOPNOTSUPP)
    os.symlink("testing", mount.current / "link")
    assert os.listxattr(mount.current / "link", follow_symlinks=False) == []
    assert errno_of(os.setxattr, mount.current / "link", "user.x", b"1", follow_symlinks=False) == errno.EPERM

    wait_synced(mount)
    day = next(mount.history.iterdir())
    commit = next(day.iterdir())
    assert os.listxattr(commit / "testing") == []
    assert errno_of(os.getxattr, commit / "testing", "user.x") == errno.ENODATA
    assert errno_of(os.setxattr, commit / "testing", "user.x", b"1") == errno.EROFS
    assert errno_of(os.removexattr, commit / "testing", "user.x") == errno.EROFS
    assert errno_of(os.setxattr, mount.path / ".gitfs" / "status", "user.x", b"1") == errno.EROFS


def test_a_colleagues_new_version_keeps_the_attributes_here(remote, mount_gitfs):
    mount = mount_gitfs(remote, xattr=True)
    os.setxattr(mount.current / "testing", "user.DOSATTRIB", b"archive")
    remote.commit({"testing": "their new version\n", "me": None}, "a colleague's change")
    wait_for(lambda: (mount.current / "testing").read_text() == "their new version\n", timeout=30,
             message="the colleague's change")
    assert user_attributes(mount.current / "testing") == {"user.DOSATTRIB": b"archive"}


@pytest.mark.parametrize("program", ["cp -a", "rsync -X"])
def test_programs_copy_attributes_in_and_out(program, remote, mount_gitfs, tmp_path):
    if shutil.which(program.split()[0]) is None:
        pytest.skip(f"{program.split()[0]} is not installed")
    mount = mount_gitfs(remote, xattr=True)
    source = tmp_path / "source"
    (source / "inner").mkdir(parents=True)
    (source / "inner" / "notes.txt").write_text("notes\n")
    os.setxattr(source / "inner" / "notes.txt", "user.mime_type", b"text/plain")
    os.setxattr(source / "inner", "user.colour", b"red")
    command = program.split() + (["-a"] if program.startswith("rsync") else [])
    subprocess.run(command + [f"{source}/", f"{mount.current}/copied/"], check=True, capture_output=True)
    assert os.getxattr(mount.current / "copied" / "inner" / "notes.txt", "user.mime_type") == b"text/plain"
    assert os.getxattr(mount.current / "copied" / "inner", "user.colour") == b"red"
    back = tmp_path / "back"
    subprocess.run(command + [f"{mount.current}/copied/", f"{back}/"], check=True, capture_output=True)
    assert user_attributes(back / "inner" / "notes.txt") == {"user.mime_type": b"text/plain"}
    wait_synced(mount)
    assert remote.show("copied/inner/notes.txt") == b"notes\n"


def test_by_default_none_are_kept_and_the_kernel_stops_asking(remote, mount_gitfs, tmp_path):
    """Without `xattr` the daemon answers no getxattr (ENOSYS), so the kernel asks nothing
    per `ls -l` entry and per write(2): every attribute is EOPNOTSUPP (`cp -a` copies the
    file without them), and a user.* one set is refused with one line in the log, however
    many programs try."""
    mount = mount_gitfs(remote)
    assert errno_of(os.setxattr, mount.current / "testing", "security.x", b"1") == errno.EOPNOTSUPP
    source = tmp_path / "tagged.txt"
    source.write_text("tagged\n")
    os.setxattr(source, "user.mime_type", b"text/plain")
    subprocess.run(["cp", "-a", str(source), str(mount.current)], check=True, capture_output=True)
    assert (mount.current / "tagged.txt").read_text() == "tagged\n"
    file = mount.current / "testing"
    assert errno_of(os.getxattr, file, "user.DOSATTRIB") == errno.EOPNOTSUPP
    assert errno_of(os.getxattr, file, "security.capability") == errno.EOPNOTSUPP
    assert errno_of(os.listxattr, file) == errno.EOPNOTSUPP
    assert errno_of(os.setxattr, file, "user.DOSATTRIB", b"x") == errno.EOPNOTSUPP
    assert errno_of(os.setxattr, mount.current, "user.colour", b"red") == errno.EOPNOTSUPP
    assert errno_of(os.removexattr, file, "user.DOSATTRIB") == errno.EOPNOTSUPP
    file.write_text("still written\n")
    wait_for(lambda: remote.show("testing") == b"still written\n", timeout=30, message="the write on the remote")
    told = [line for line in mount.log_text().splitlines() if "-o xattr" in line]
    assert len(told) == 1 and "user.mime_type" in told[0], mount.log_text()


def test_xattr_false_answers_none(remote, mount_gitfs):
    mount = mount_gitfs(remote, xattr=False)
    file = mount.current / "testing"
    assert errno_of(os.setxattr, file, "user.DOSATTRIB", b"x") == errno.EOPNOTSUPP
    assert errno_of(os.getxattr, file, "user.DOSATTRIB") == errno.EOPNOTSUPP
