"""Samba in front of a real mount: Debian's smbd shares MOUNTPOINT/current as //127.0.0.1/team
(tests/servers.py's SmbServer, an smb.conf of its own, a free port) and the real smbclient
drives it as a Windows or macOS colleague's machine would reach the team's share: files
put over SMB come back byte-exact and reach the remote (folders, renames and deletions
too); DOS attributes and macOS streams, which smbd keeps in user.* extended attributes,
are kept on current/ of a mount with `xattr` and refused, with one line in GitFS's log,
without it; Office's save sequence, fast or slow, never leaves the remote
without the document; a copy over max_size never reaches the remote; two colleagues
saving all the time, so that the mount is never quiet, still reach the remote while they
work (max_sync_delay).

The shares use `map archive = no` as README's does: with Samba's default (`yes`, create
mask 0744) a file put over SMB gets its owner's x bit as the archive attribute, and git
would record it as executable."""

from __future__ import annotations

import os
import struct
import subprocess
import threading
import time

import pytest

from helpers import (
    commit_marker,
    commits_after,
    fetches,
    git,
    read_status,
    sync_cycles_pass,
    wait_for,
    wait_synced,
)
from servers import SmbServer

# README's share: the archive attribute is not mapped onto the x bit (git would commit it).
TEAM_SHARE = "   map archive = no\n"
# smb.conf lines of a share as macOS clients want it: Finder's streams in user.* attributes.
MACOS_SHARE = "   vfs objects = catia fruit streams_xattr\n"
# The 60-byte AFP_AfpInfo stream a Mac writes beside a file (Samba's MacExtensions.h):
# signature "AFP\0", version 0x00000100, reserved, backup time, then the 32-byte Finder
# info (type TEXT, creator ttxt), ProDOS info and padding.
AFP_INFO = b"AFP\0" + struct.pack(">III", 0x100, 0, 0x80000000) + b"TEXTttxt" + bytes(24) + bytes(12)


@pytest.fixture
def smb_share(mount_gitfs, tmp_path_factory):
    """Factory: smb_share(mount, extra_share_options="", extra_global_options="") -> SmbServer,
    started, sharing mount.current. Every server it started is stopped (its whole process
    group) in a finally, before mount_gitfs unmounts (this fixture depends on it, so it is
    torn down first: an smbd still holding files open would make the unmount busy). The
    mount needs no allow_other: smbd runs as root and acts as root (force user), the
    mount's user."""
    servers: list[SmbServer] = []

    def start(mount, **options) -> SmbServer:
        server = SmbServer(tmp_path_factory.mktemp("smb"), mount.current, **options)
        servers.append(server)
        server.start()
        return server

    try:
        yield start
    finally:
        for server in servers:
            server.stop()


def committed_mode(remote, path: str) -> str:
    """The git mode of `path` on the remote's main ("100644", "100755"...)."""
    return git("--git-dir", str(remote.bare), "ls-tree", remote.branch, path).split()[0]


def test_files_put_over_smb_come_back_and_reach_the_remote(remote, mount_gitfs, smb_share, tmp_path):
    """put, get, mkdir, rename, del through the share: the bytes are the same both ways and on
    the remote, the folder and the rename are committed, the deleted file leaves it."""
    mount = mount_gitfs(remote)
    smb = smb_share(mount, extra_share_options=TEAM_SHARE)
    data = bytes(range(256)) * 64 + b"line\r\nend\n"
    local = tmp_path / "local"
    local.mkdir()
    (local / "report.bin").write_bytes(data)
    (local / "scratch.txt").write_text("to be deleted\n")

    smb.client_ok("put report.bin report.bin", "put scratch.txt scratch.txt", "mkdir docs",
                  "get report.bin back.bin", cwd=local)
    assert (local / "back.bin").read_bytes() == data
    assert (mount.current / "report.bin").read_bytes() == data
    wait_for(lambda: {"report.bin", "scratch.txt"} <= set(remote.files()), timeout=30,
             message="the files put over SMB on the remote")
    assert remote.show("report.bin") == data

    smb.client_ok("rename report.bin docs\\report.bin", "del scratch.txt", cwd=local)
    wait_for(lambda: "docs/report.bin" in remote.files() and "scratch.txt" not in remote.files()
             and "report.bin" not in remote.files(), timeout=30, message="the rename and the deletion on the remote")
    assert remote.show("docs/report.bin") == data
    listing = smb.client_ok("ls docs\\*")
    assert "report.bin" in listing, listing


def test_dos_attributes_are_kept_and_a_new_file_is_not_executable(remote, mount_gitfs, smb_share, tmp_path):
    """On a mount with `xattr`, as README's share has it, `setmode +h` is kept (smbd stores it
    in user.DOSATTRIB on current/) and allinfo shows it; with `map archive = no` a file made
    over SMB is committed as a plain file, 100644."""
    mount = mount_gitfs(remote, xattr=True)
    smb = smb_share(mount, extra_share_options=TEAM_SHARE)
    (tmp_path / "notes.txt").write_text("hidden notes\n")
    smb.client_ok("put notes.txt notes.txt", cwd=tmp_path)
    smb.client_ok("setmode notes.txt +h")
    info = smb.client_ok("allinfo notes.txt")
    attributes = next(line for line in info.splitlines() if line.startswith("attributes:"))
    assert "H" in attributes.split()[1], info
    assert "user.DOSATTRIB" in os.listxattr(mount.current / "notes.txt")
    wait_for(lambda: "notes.txt" in remote.files(), timeout=30, message="notes.txt on the remote")
    assert committed_mode(remote, "notes.txt") == "100644", smb.log_text()


def test_a_macos_finder_info_stream_is_kept_and_not_committed(remote, mount_gitfs, smb_share, tmp_path):
    """On a share set up for Macs (catia fruit streams_xattr) Finder's AFP_AfpInfo stream is
    written, listed and read back (on a mount with `xattr`); the file's committed content is
    its data only."""
    mount = mount_gitfs(remote, xattr=True)
    smb = smb_share(mount, extra_share_options=TEAM_SHARE + MACOS_SHARE)
    (tmp_path / "name.txt").write_text("mac text\n")
    (tmp_path / "afpinfo").write_bytes(AFP_INFO)
    smb.client_ok("put name.txt name.txt", "put afpinfo name.txt:AFP_AfpInfo", cwd=tmp_path)
    info = smb.client_ok("allinfo name.txt")
    assert "[:AFP_AfpInfo:$DATA], 60 bytes" in info, info
    smb.client_ok("get name.txt:AFP_AfpInfo back", cwd=tmp_path)
    assert (tmp_path / "back").read_bytes() == AFP_INFO
    wait_for(lambda: "name.txt" in remote.files(), timeout=30, message="name.txt on the remote")
    assert remote.show("name.txt") == b"mac text\n"


def test_without_xattr_dos_attributes_and_streams_are_refused_and_the_daemon_says_why(remote, mount_gitfs,
                                                                                     smb_share, tmp_path):
    """A mount with the default options keeps no attributes: smbd's `setmode +h` and a Mac's
    AFP_AfpInfo stream are refused (NT_STATUS_NOT_SUPPORTED), the file itself is written and
    committed as a plain file, and GitFS's log says once why, with the option to use."""
    mount = mount_gitfs(remote)
    smb = smb_share(mount, extra_share_options=TEAM_SHARE + MACOS_SHARE)
    (tmp_path / "notes.txt").write_text("notes\n")
    (tmp_path / "afpinfo").write_bytes(AFP_INFO)
    smb.client_ok("put notes.txt notes.txt", cwd=tmp_path)
    assert "NT_STATUS_NOT_SUPPORTED" in smb.client("setmode notes.txt +h")
    assert "NT_STATUS_NOT_SUPPORTED" in smb.client("put afpinfo notes.txt:AFP_AfpInfo", cwd=tmp_path)
    info = smb.client("allinfo notes.txt")
    attributes = next(line for line in info.splitlines() if line.startswith("attributes:"))
    assert "H" not in attributes.split()[1], info
    wait_for(lambda: "notes.txt" in remote.files(), timeout=30, message="notes.txt on the remote")
    assert remote.show("notes.txt") == b"notes\n"
    assert committed_mode(remote, "notes.txt") == "100644", smb.log_text()
    told = [line for line in mount.log_text().splitlines() if "-o xattr" in line]
    assert len(told) == 1 and "WARNING" in told[0] and "user.DOSATTRIB" in told[0], mount.log_text()


@pytest.mark.parametrize("slow", [False, True], ids=["fast", "slow"])
def test_office_saving_over_smb_never_leaves_the_remote_without_the_document(slow, remote, mount_gitfs, smb_share,
                                                                            tmp_path):
    """Word's save over SMB: owner file, new version written to ~WRL0001.tmp, the document
    renamed to ~WRL0002.tmp, the new version renamed into its place, both temporaries
    deleted; over a network the steps can be seconds apart (`slow`: the mount runs a sync
    cycle after each step, two while the document is missing). Every commit on the remote
    has the document; none has a temporary; the save is one commit, Update."""
    before = remote.commit({"report.docx": b"PK version 1"}, "the report")
    mount = mount_gitfs(remote, sync_timeout=1, fetch_timeout=600)  # long: the fetches counted are the cycles'
    smb = smb_share(mount, extra_share_options=TEAM_SHARE)
    wait_for(lambda: fetches(mount) >= 1, message="the mount's first sync")  # counted from here
    (tmp_path / "owner").write_bytes(b"owner")
    (tmp_path / "new").write_bytes(b"PK version 2")
    steps = [["put owner ~$report.docx", "put new ~WRL0001.tmp"], ["rename report.docx ~WRL0002.tmp"],
             ["rename ~WRL0001.tmp report.docx"], ["del ~WRL0002.tmp", "del ~$report.docx"]]
    for number, step in enumerate(steps):
        smb.client_ok(*step, cwd=tmp_path)
        if slow:
            sync_cycles_pass(mount, 2 if number == 1 else 1, unless=lambda: "report.docx" not in remote.files())
            assert "report.docx" in remote.files(), f"the save reached the remote as a deletion after {step}"
    wait_for(lambda: remote.show("report.docx") == b"PK version 2", timeout=60, message="the new version")
    marker = commit_marker(mount, remote)
    assert commits_after(remote, before) == [marker, ("Update /report.docx", ["report.docx"])]
    for commit in git("--git-dir", str(remote.bare), "rev-list", "main").split()[:-1]:
        names = git("--git-dir", str(remote.bare), "ls-tree", "--name-only", commit).split("\n")
        assert "report.docx" in names, f"commit {commit} lacks the document"
        assert not any(name.startswith("~") for name in names), names


def test_a_copy_over_max_size_fails_over_smb_and_never_reaches_the_remote(remote, mount_gitfs, smb_share, tmp_path):
    mount = mount_gitfs(remote, max_size=1)
    smb = smb_share(mount, extra_share_options=TEAM_SHARE)
    (tmp_path / "scan.pdf").write_bytes(os.urandom(3 << 20))
    (tmp_path / "notes.txt").write_text("notes\n")
    said = smb.client("put scan.pdf scan.pdf", cwd=tmp_path)
    assert "NT_STATUS_DISK_FULL" in said, said  # EFBIG, as Windows hears it
    smb.client_ok("put notes.txt notes.txt", cwd=tmp_path)
    wait_for(lambda: "notes.txt" in remote.files(), timeout=30, message="the other file on the remote")
    wait_synced(mount)
    assert "scan.pdf" not in remote.files()
    assert [entry["path"] for entry in read_status(mount)["failed_writes"]] == ["scan.pdf"]


class Colleague(threading.Thread):
    """A colleague saving one file again and again over SMB: each round an smbclient
    session puts the next of `versions` (a local file each) as `name`, then waits `pace` s."""

    def __init__(self, smb: SmbServer, local, name: str, versions: list[bytes], pace: float):
        super().__init__(name=f"smbclient {name}", daemon=True)
        self.smb, self.local, self.file, self.versions, self.pace = smb, local, name, versions, pace
        self.saved = 0  # versions put so far
        self.failures: list[str] = []
        for n, data in enumerate(versions):
            (local / f"v{n}").write_bytes(data)

    def run(self) -> None:
        for n in range(len(self.versions)):
            if n:
                time.sleep(self.pace)  # the colleague's pace: shorter than sync_timeout, never quiet
            said = self.smb.client(f"put v{n} {self.file}", cwd=self.local)
            if "NT_STATUS_" in said:
                self.failures.append(said)
                return
            self.saved = n + 1

    def end(self) -> None:
        self.join(60)
        assert not self.is_alive() and not self.failures, self.failures
        assert self.saved == len(self.versions)


def test_two_sessions_saving_all_the_time_reach_the_remote_while_they_save(remote, mount_gitfs, smb_share,
                                                                             tmp_path):
    """A busy office: two colleagues at once, each putting a growing file of their own over
    SMB every 0.5 s for 15 s (one smbclient session a put, from a thread each), so that the
    mount is never quiet for sync_timeout=1. Within max_sync_delay=3 both files reach the
    remote, whole (one of the versions their colleague put), while both are still saving;
    at the end each is its colleague's last version. Without max_sync_delay nothing would be
    committed until both stopped."""
    mount = mount_gitfs(remote, sync_timeout=1, max_sync_delay=3, xattr=True)
    smb = smb_share(mount, extra_share_options=TEAM_SHARE)
    colleagues = []
    for name in ("alice.txt", "bob.txt"):
        local = tmp_path / name.removesuffix(".txt")
        local.mkdir()
        # Each version names itself first: a torn one (a prefix of a version) is none of them.
        versions = [f"{name} version {n}\n".encode() + b"".join(f"line {i}\n".encode() for i in range(n + 1))
                    for n in range(30)]
        colleagues.append(Colleague(smb, local, name, versions, pace=0.5))

    def on_remote(name: str) -> bytes | None:
        try:
            return remote.show(name)
        except subprocess.CalledProcessError:  # not on the remote yet
            return None

    def reached_while_saving() -> bool:
        seen = [on_remote(colleague.file) for colleague in colleagues]
        if not all(colleague.is_alive() for colleague in colleagues):  # looked at after the remote
            raise AssertionError(f"the colleagues stopped saving before their files reached the remote: {seen}")
        return all(data in colleague.versions for data, colleague in zip(seen, colleagues))

    for colleague in colleagues:
        colleague.start()
    try:
        wait_for(reached_while_saving, timeout=60, interval=0.2,
                 message="both colleagues' files on the remote while they save")
    finally:
        for colleague in colleagues:
            colleague.end()
    for colleague in colleagues:
        assert (mount.current / colleague.file).read_bytes() == colleague.versions[-1]
        wait_for(lambda colleague=colleague: on_remote(colleague.file) == colleague.versions[-1], timeout=60,
                 message=f"{colleague.file}'s last version on the remote")
