"""Remotes over smart HTTP(S) (nginx + fcgiwrap + git http-backend, basic auth) and git:// (git daemon).

Passwords come from password_file, $GITFS_PASSWORD or password=; HTTPS trusts a
test CA through ssl_ca_file. A secret never reaches the log, the status file, the
commit messages or (from a file or the environment) the command line.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from helpers import assert_one_line_error, at, remote_failing, start_gitfs, wait_for, write_and_wait_pushed
from servers import HTTP_PASSWORD, HTTP_USER

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/fuse"), reason="/dev/fuse is missing")


def assert_secret_nowhere(mount, remote, secret: str) -> None:
    assert secret not in open(f"/proc/{mount.process.pid}/cmdline").read()
    assert secret not in mount.log_text()
    with open(mount.path / ".gitfs" / "status", encoding="utf-8") as handle:
        status = json.load(handle)
    assert secret not in json.dumps(status) and status["remote"].startswith(("http://", "https://"))
    assert not any(secret in line for line in remote.log("%an %ae %s %b"))


def test_http_password_file_push_and_fetch(remote, http_server, mount_gitfs, tmp_path):
    password_file = tmp_path / "password"
    password_file.write_text(HTTP_PASSWORD + "\n")
    mount = mount_gitfs(at(http_server.http_url("remote.git")), username=HTTP_USER, password_file=password_file)
    write_and_wait_pushed(mount, remote, text="over http\n")
    remote.commit({"from-other.txt": "other\n"}, "other person")
    wait_for(lambda: (mount.current / "from-other.txt").exists(), timeout=30, message="the fetch over http")
    assert_secret_nowhere(mount, remote, HTTP_PASSWORD)


def test_https_password_from_environment_and_private_ca(remote, http_server, test_ca, mount_gitfs, monkeypatch):
    monkeypatch.setenv("GITFS_PASSWORD", HTTP_PASSWORD)
    mount = mount_gitfs(at(http_server.https_url("remote.git")), username=HTTP_USER, ssl_ca_file=test_ca.cert)
    write_and_wait_pushed(mount, remote, text="over https\n")
    remote.commit({"from-other.txt": "other\n"}, "other person")
    wait_for(lambda: (mount.current / "from-other.txt").exists(), timeout=30, message="the fetch over https")
    assert_secret_nowhere(mount, remote, HTTP_PASSWORD)


def test_password_option_and_credentials_in_the_url_stay_out_of_logs_and_status(remote, http_server,
                                                                                mount_gitfs):
    mount = mount_gitfs(at(http_server.http_url("remote.git")), username=HTTP_USER, password=HTTP_PASSWORD)
    write_and_wait_pushed(mount, remote, "a.txt")
    assert HTTP_PASSWORD not in mount.log_text()
    mount.stop()
    url = http_server.http_url("remote.git").replace("://", f"://{HTTP_USER}:{HTTP_PASSWORD}@")
    mount = mount_gitfs(at(url))
    write_and_wait_pushed(mount, remote, "b.txt")
    with open(mount.path / ".gitfs" / "status", encoding="utf-8") as handle:
        assert json.load(handle)["remote"] == http_server.http_url("remote.git")
    assert HTTP_PASSWORD not in mount.log_text()


def test_wrong_password_is_one_line_not_a_loop(remote, http_server, tmp_path):
    started = time.monotonic()
    result = start_gitfs(http_server.http_url("remote.git"), tmp_path, f"username={HTTP_USER}",
                         "password=wrong-one")
    line = assert_one_line_error(result, "refused", HTTP_USER)
    assert "wrong-one" not in line and time.monotonic() - started < 20


def test_no_credentials_given_is_one_line(remote, http_server, tmp_path, monkeypatch):
    monkeypatch.delenv("GITFS_PASSWORD", raising=False)
    result = start_gitfs(http_server.http_url("remote.git"), tmp_path)
    assert_one_line_error(result, "asks for a username and password", "password_file")


def test_missing_password_file_is_one_line(remote, http_server, tmp_path):
    result = start_gitfs(http_server.http_url("remote.git"), tmp_path, f"password_file={tmp_path / 'nope'}")
    assert_one_line_error(result, "password_file", "nope")


def test_https_certificate_is_verified(remote, http_server, test_ca, tmp_path):
    result = start_gitfs(http_server.https_url("remote.git"), tmp_path, f"username={HTTP_USER}",
                         f"password={HTTP_PASSWORD}")
    assert_one_line_error(result, "certificate", "not trusted", "ssl_ca_file")
    result = start_gitfs(http_server.https_url("remote.git"), tmp_path, f"username={HTTP_USER}",
                         f"password={HTTP_PASSWORD}", f"ssl_ca_file={test_ca.stranger_cert}")
    assert_one_line_error(result, "certificate", "not trusted")


def test_repository_not_found_and_server_down_over_http(remote, http_server, tmp_path):
    result = start_gitfs(http_server.http_url("nope.git"), tmp_path, f"username={HTTP_USER}",
                         f"password={HTTP_PASSWORD}")
    assert_one_line_error(result, "repository not found")
    http_server.stop()
    result = start_gitfs(http_server.http_url("remote.git"), tmp_path, f"username={HTTP_USER}",
                         f"password={HTTP_PASSWORD}")
    assert_one_line_error(result, "cannot reach")


def test_password_changed_while_mounted(remote, http_server, mount_gitfs, tmp_path):
    password_file = tmp_path / "password"
    password_file.write_text(HTTP_PASSWORD)
    mount = mount_gitfs(at(http_server.http_url("remote.git")), username=HTTP_USER, password_file=password_file,
                        expect_errors=True)
    write_and_wait_pushed(mount, remote, "before.txt")
    http_server.set_password("changed-on-the-server")
    (mount.current / "during.txt").write_text("kept locally\n")
    wait_for(lambda: remote_failing(mount, "refused the password"), timeout=20,
             message="the refusal in the status file")
    time.sleep(3)  # several retries
    assert "during.txt" not in remote.files()
    assert (mount.current / "during.txt").read_text() == "kept locally\n"
    refusals = [line for line in mount.log_text().splitlines() if "refused the password" in line]
    assert 1 <= len(refusals) <= 2, refusals  # once per worker and change of state
    http_server.set_password(HTTP_PASSWORD)
    wait_for(lambda: "during.txt" in remote.files(), timeout=60, message="the push once the password is back")


def test_git_daemon(remote, git_daemon, mount_gitfs, tmp_path):
    mount = mount_gitfs(at(git_daemon.url))
    write_and_wait_pushed(mount, remote, text="over git://\n")
    remote.commit({"from-other.txt": "other\n"}, "other person")
    wait_for(lambda: (mount.current / "from-other.txt").exists(), timeout=30, message="the fetch over git://")
    result = start_gitfs(git_daemon.url.replace("remote.git", "nope.git"), tmp_path)
    assert_one_line_error(result, "repository not found")
