"""Mounting over SSH against a real OpenSSH server on 127.0.0.1 (fixture `sshd`).

Keys: a key file, a key with a passphrase (file or option), the agent, the default
~/.ssh/id_* keys; refusals: wrong key, wrong passphrase, unknown and changed host
keys (and the explicit opt-out); the server going away while mounted.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import (
    assert_one_line_error,
    at,
    fetches,
    remote_failing,
    start_gitfs,
    wait_for,
    write_and_wait_pushed,
)
from servers import SshServer, port_open, sshd_server

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/fuse"), reason="/dev/fuse is missing")


def test_key_file_clone_push_and_fetch(remote, sshd, ssh_keys, mount_gitfs):
    mount = mount_gitfs(at(sshd.url(remote.bare)), ssh_key=ssh_keys.plain.private)
    assert (mount.current / "testing").read_text() == "just testing around here\n"
    write_and_wait_pushed(mount, remote)
    assert remote.log()[0].endswith("/hello.txt")
    remote.commit({"from-other.txt": "other\n"}, "other person")
    wait_for(lambda: (mount.current / "from-other.txt").exists(), timeout=30, message="the fetch over ssh")


def test_key_without_public_file_and_ssh_user_and_key_alias(remote, sshd, ssh_keys, mount_gitfs, tmp_path):
    lone = tmp_path / "lone_key"
    shutil.copy(ssh_keys.plain.private, lone)  # no lone_key.pub: libssh2 derives the public key
    os.chmod(lone, 0o600)
    url = f"ssh://{sshd.host}:{sshd.port}{remote.bare}"  # no user in the URL: ssh_user says who
    mount = mount_gitfs(at(url), key=lone, ssh_user="root")
    write_and_wait_pushed(mount, remote)


def test_ssh_user_differing_from_the_url_is_one_line(remote, sshd, ssh_keys, tmp_path):
    result = start_gitfs(sshd.url(remote.bare, user="git"), tmp_path, f"ssh_key={ssh_keys.plain.private}",
                         "ssh_user=root")
    assert_one_line_error(result, "ssh_user", "git")


def test_key_with_passphrase_from_file_and_from_option(remote, sshd, ssh_keys, mount_gitfs, tmp_path):
    phrase_file = tmp_path / "phrase"
    phrase_file.write_text(ssh_keys.protected.passphrase + "\n")
    phrase_file.chmod(0o600)
    mount = mount_gitfs(at(sshd.url(remote.bare)), ssh_key=ssh_keys.protected.private,
                        ssh_key_passphrase_file=phrase_file)
    write_and_wait_pushed(mount, remote, "a.txt")
    assert ssh_keys.protected.passphrase not in open(f"/proc/{mount.process.pid}/cmdline").read()
    mount.stop()
    mount = mount_gitfs(at(sshd.url(remote.bare)), ssh_key=ssh_keys.protected.private,
                        ssh_key_passphrase=ssh_keys.protected.passphrase)
    write_and_wait_pushed(mount, remote, "b.txt")
    assert ssh_keys.protected.passphrase not in mount.log_text()


def test_wrong_or_missing_passphrase_is_one_line(remote, sshd, ssh_keys, tmp_path):
    result = start_gitfs(sshd.url(remote.bare), tmp_path, f"ssh_key={ssh_keys.protected.private}")
    assert_one_line_error(result, "passphrase", str(ssh_keys.protected.private))
    result = start_gitfs(sshd.url(remote.bare), tmp_path, f"ssh_key={ssh_keys.protected.private}",
                         "ssh_key_passphrase=not-it")
    line = assert_one_line_error(result, "passphrase")
    assert "not-it" not in line


def test_agent(remote, sshd, ssh_keys, ssh_agent, mount_gitfs):
    ssh_agent.add(ssh_keys.plain)
    mount = mount_gitfs(at(sshd.url(remote.bare)))  # no ssh_key, no ~/.ssh/id_*: the agent
    write_and_wait_pushed(mount, remote)


def test_default_keys_after_an_agent_that_has_the_wrong_key(remote, sshd, ssh_keys, ssh_agent, mount_gitfs):
    ssh_agent.add(ssh_keys.other)  # offered first, refused by the server
    ssh_dir = Path(os.environ["HOME"]) / ".ssh"
    shutil.copy(ssh_keys.rsa.private, ssh_dir / "id_rsa")
    os.chmod(ssh_dir / "id_rsa", 0o600)
    mount = mount_gitfs(at(sshd.url(remote.bare)))
    write_and_wait_pushed(mount, remote)


def test_wrong_key_fails_in_one_line(remote, sshd, ssh_keys, tmp_path):
    result = start_gitfs(sshd.url(remote.bare), tmp_path, f"ssh_key={ssh_keys.other.private}")
    assert_one_line_error(result, "refused", "root", str(sshd.port))
    assert not (tmp_path / "clone-fail").exists()


def test_no_key_at_all_fails_in_one_line(remote, sshd, tmp_path, monkeypatch):
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    result = start_gitfs(sshd.url(remote.bare), tmp_path)
    assert_one_line_error(result, "no SSH key", "ssh_key=")


def test_missing_key_file_fails_in_one_line(remote, sshd, tmp_path):
    result = start_gitfs(sshd.url(remote.bare), tmp_path, f"ssh_key={tmp_path / 'nope'}")
    assert_one_line_error(result, "ssh_key", "does not exist")


def test_unknown_host_key_is_refused(remote, sshd, ssh_keys, tmp_path, mount_gitfs):
    known = Path(os.environ["HOME"]) / ".ssh" / "known_hosts"
    known.unlink()
    result = start_gitfs(sshd.url(remote.bare), tmp_path, f"ssh_key={ssh_keys.plain.private}")
    assert_one_line_error(result, "host key", "unknown", f"[127.0.0.1]:{sshd.port}", "ssh_strict_host_key_checking")
    # The explicit opt-out mounts, and says so in the log.
    mount = mount_gitfs(at(sshd.url(remote.bare)), ssh_key=ssh_keys.plain.private,
                        ssh_strict_host_key_checking="no")
    write_and_wait_pushed(mount, remote)
    assert "not checked" in mount.log_text()


def test_changed_host_key_is_refused(remote, sshd, ssh_keys, tmp_path, tmp_path_factory):
    impostor = SshServer(tmp_path_factory.mktemp("impostor"), [ssh_keys.plain])  # another host key
    known = Path(os.environ["HOME"]) / ".ssh" / "known_hosts"
    known.write_text(impostor.known_hosts_line().replace(f"]:{impostor.port} ", f"]:{sshd.port} "))
    result = start_gitfs(sshd.url(remote.bare), tmp_path, f"ssh_key={ssh_keys.plain.private}")
    assert_one_line_error(result, "host key", "CHANGED", "ssh-keygen -R")


def test_hashed_known_hosts_file_given_by_option(remote, sshd, ssh_keys, tmp_path, tmp_path_factory, mount_gitfs):
    known = Path(os.environ["HOME"]) / ".ssh" / "known_hosts"
    elsewhere = tmp_path / "trusted_hosts"
    elsewhere.write_text(known.read_text())
    subprocess.run(["ssh-keygen", "-q", "-H", "-f", str(elsewhere)], check=True, capture_output=True)
    assert "127.0.0.1" not in elsewhere.read_text()  # hashed names
    known.write_text("")
    mount = mount_gitfs(at(sshd.url(remote.bare)), ssh_key=ssh_keys.plain.private, ssh_known_hosts=elsewhere,
                        repo_path=tmp_path / "clone-hashed")
    write_and_wait_pushed(mount, remote)
    mount.stop()
    # A hashed entry for the host with another key: "changed", not "unknown".
    impostor = SshServer(tmp_path_factory.mktemp("impostor"), [ssh_keys.plain])
    other = tmp_path / "other_hosts"
    other.write_text(impostor.known_hosts_line().replace(f"]:{impostor.port} ", f"]:{sshd.port} "))
    subprocess.run(["ssh-keygen", "-q", "-H", "-f", str(other)], check=True, capture_output=True)
    result = start_gitfs(sshd.url(remote.bare), tmp_path, f"ssh_key={ssh_keys.plain.private}",
                         f"ssh_known_hosts={other}")
    assert_one_line_error(result, "CHANGED", str(other))


def test_repository_not_found_and_server_down_are_one_line(remote, sshd, ssh_keys, tmp_path):
    result = start_gitfs(sshd.url(str(remote.bare) + "-nope"), tmp_path, f"ssh_key={ssh_keys.plain.private}")
    assert_one_line_error(result, "repository not found")
    sshd.stop()
    result = start_gitfs(sshd.url(remote.bare), tmp_path, f"ssh_key={ssh_keys.plain.private}")
    assert_one_line_error(result, "cannot reach", "127.0.0.1")


def test_missing_branch_over_ssh(remote, sshd, ssh_keys, tmp_path):
    result = start_gitfs(sshd.url(remote.bare), tmp_path, f"ssh_key={ssh_keys.plain.private}", "branch=nope")
    assert_one_line_error(result, "nope", "does not exist")


def test_server_stopped_while_mounted_then_back(remote, sshd, ssh_keys, mount_gitfs):
    mount = mount_gitfs(at(sshd.url(remote.bare)), ssh_key=ssh_keys.plain.private, expect_errors=True)
    write_and_wait_pushed(mount, remote, "before.txt")
    sshd.stop()
    (mount.current / "during.txt").write_text("written while the server is down\n")
    (mount.current / "before.txt").write_text("changed while down\n")
    assert (mount.current / "during.txt").read_text() == "written while the server is down\n"
    wait_for(lambda: remote_failing(mount, "cannot reach"), timeout=20, message="the failure in the status file")
    wait_for(lambda: "during.txt" in subprocess.run(
        ["git", "-C", str(mount.repo_path), "ls-tree", "-r", "--name-only", "HEAD"],
        capture_output=True, text=True).stdout, timeout=20, message="the local commit")
    assert "during.txt" not in remote.files()
    # Attempts go on failing while the server stays down: the fetch worker's, and each sync's
    # (a sync fetches first, so it fails there and pushes nothing).
    failed = fetches(mount, "failed")
    wait_for(lambda: fetches(mount, "failed") >= failed + 3, timeout=20, message="three more attempts failing")
    assert "during.txt" not in remote.files()
    sshd.start()
    wait_for(lambda: "during.txt" in remote.files(), timeout=60, message="the push once sshd is back")
    wait_for(lambda: remote.show("before.txt") == b"changed while down\n", timeout=30, message="the update")
    failures = [line for line in mount.log_text().splitlines() if "cannot reach" in line]
    # Once per change of state and per worker (sync, fetch), not once per retry.
    assert 1 <= len(failures) <= 2, failures


def test_scp_like_url(remote, ssh_keys, tmp_path_factory, mount_gitfs):
    # scp-like URLs have no port: an address of the loopback network where nothing listens on
    # port 22, chosen at random so that test runs side by side each have their own.
    chooser = random.Random()
    tried = [f"127.{chooser.randrange(1, 255)}.{chooser.randrange(256)}.{chooser.randrange(1, 255)}" for _ in range(20)]
    host = next((address for address in tried if not port_open(address, 22)), None)
    if host is None:
        pytest.skip("something listens on port 22 of every loopback address tried (scp-like URLs have no port)")
    server = sshd_server(tmp_path_factory.mktemp("sshd"), ssh_keys, host=host, port=22)
    known = Path(os.environ["HOME"]) / ".ssh"
    known.mkdir(mode=0o700, exist_ok=True)
    (known / "known_hosts").write_text(server.known_hosts_line())
    try:
        server.start()
    except AssertionError as error:
        server.stop()
        pytest.skip(f"cannot run sshd on {host}:22: {error}")
    try:
        mount = mount_gitfs(at(f"root@{host}:{remote.bare}"), ssh_key=ssh_keys.plain.private)
        write_and_wait_pushed(mount, remote)
        mount.stop()
    finally:
        server.stop()
